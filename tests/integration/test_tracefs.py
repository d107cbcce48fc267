"""The agent unmounts at exit the tracefs it mounted: with tracefs not
mounted, the agent mounts it at /sys/kernel/tracing for its tracepoints,
says so, and unmounts it when it stops (as it does with the cgroup2 it
mounts in its state directory). The agent runs in a mount namespace of its
own (unshare -m), in which tracefs is unmounted first, so the host keeps
its mounts. Needs root and unshare(1); exits 77 otherwise."""

import os
import shutil
import signal
import unittest

from harness import BIN_DIR, Cluster, Proc, free_port, main, wait_for
from bpfnet_util import require_root

TRACEFS = "/sys/kernel/tracing"
# In the namespace: tracefs off, then the agent; when it has exited, the
# namespace's tracefs mounts (the shell keeps the namespace alive).
SCRIPT = """umount -l /sys/kernel/tracing 2>/dev/null
umount -l /sys/kernel/debug/tracing 2>/dev/null
"$@" &
pid=$!
echo "agent-pid=$pid"
wait $pid
echo "agent-rc=$?"
echo "after-exit:"
cat /proc/self/mountinfo
echo "end"
"""


def tracefs_points(mountinfo_text):
    """The mount points of the tracefs mounts in a mountinfo text."""
    out = []
    for line in mountinfo_text.splitlines():
        left, sep, right = line.partition(" - ")
        if sep and right.split()[:1] == ["tracefs"] and len(left.split()) > 4:
            out.append(left.split()[4])
    return out


class TracefsMountTest(unittest.TestCase):
    def test_agent_unmounts_the_tracefs_it_mounted(self):
        require_root()
        unshare = shutil.which("unshare")
        if not unshare:
            self.skipTest("needs unshare(1) (util-linux)")
        with open("/proc/self/mountinfo") as f:
            host_before = tracefs_points(f.read())
        c = Cluster(self)
        port = free_port()
        argv = [unshare, "-m", "--propagation", "private", "sh", "-c", SCRIPT, "sh",
                os.path.join(BIN_DIR, "edgesync-agent"), "run",
                "--node-name", "tracefs-test",
                "--state-dir", os.path.join(c.dir, "agent"),
                "--http-listen", f"127.0.0.1:{port}", "--log-level", "debug"]
        p = Proc("agent-in-namespace", argv, os.path.join(c.dir, "agent.log"))
        c.procs.append(p)
        pid = int(wait_for("the agent's pid", lambda: next(
            (ln.split("=", 1)[1] for ln in p.output().splitlines()
             if ln.startswith("agent-pid=")), None)))
        wait_for("the agent's local endpoint", lambda: c._alive_or_fail(p)
                 and c._listening(port))
        with open(f"/proc/{pid}/mountinfo") as f:
            inside = tracefs_points(f.read())
        self.assertIn(TRACEFS, inside, p.output())
        self.assertIn('msg="mounted tracefs (it was not mounted)"', p.output())

        os.kill(pid, signal.SIGTERM)
        p.p.wait(timeout=30)
        out = p.output()
        self.assertIn("agent-rc=0", out, out[-4000:])
        after = out.split("after-exit:", 1)[1].split("\nend", 1)[0]
        self.assertNotIn(TRACEFS, tracefs_points(after), after)
        self.assertIn('msg="unmounted tracefs (the agent had mounted it)"', out)
        # The host's own mounts are as they were.
        with open("/proc/self/mountinfo") as f:
            self.assertEqual(tracefs_points(f.read()), host_before)


if __name__ == "__main__":
    main()
