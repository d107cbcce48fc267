"""OOM collector: a process killed by the OOM killer in a small memory
cgroup is reported with its pid and command, on the eBPF backend
(oom:mark_victim), and the procfs fallback's kills counter moves too.

The memory cgroup is a cgroup v2 child with memory.max (the host's cgroup2
mount, or a private one) when the memory controller is available in
cgroup v2; on a hybrid host whose memory controller is bound to the
cgroup v1 hierarchy, a v1 memory cgroup with memory.limit_in_bytes. With
neither the tests skip, saying why.
"""

import os
import subprocess
import sys
import tempfile
import unittest

from harness import Cluster, main, wait_for
from bpfnet_util import (Cgroup2Child, ControllerUnavailable, activity, remove_cgroup,
                         require_root, wait_backend)

LIMIT = 64 << 20
HOG = "b = []\nwhile True:\n    b.append(bytearray(16 << 20))\n"


def cgroup1_memory_mount():
    """Where the cgroup v1 memory hierarchy is mounted, or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fs = right.split()
            if len(fs) >= 3 and fs[0] == "cgroup" and "memory" in fs[2].split(","):
                return left.split()[4]
    return None


def memory_cgroup(test):
    """A new cgroup limited to LIMIT bytes (without swap where the kernel
    lets us say so), removed at cleanup; returns (its cgroup.procs path,
    what it is). Skips the test when no memory cgroup can be made."""
    try:
        cg = Cgroup2Child(test, controllers=("memory",))
    except ControllerUnavailable as e:
        v2 = str(e)
    else:
        with open(os.path.join(cg.path, "memory.max"), "w") as f:
            f.write(str(LIMIT))
        swap = os.path.join(cg.path, "memory.swap.max")
        if os.path.exists(swap):
            with open(swap, "w") as f:
                f.write("0")
        return os.path.join(cg.path, "cgroup.procs"), f"cgroup v2 {cg.path}"
    v1 = cgroup1_memory_mount()
    if v1 and os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
        d = tempfile.mkdtemp(prefix="es-oom-", dir=v1)
        test.addCleanup(remove_cgroup, d)
        with open(os.path.join(d, "memory.limit_in_bytes"), "w") as f:
            f.write(str(LIMIT))
        return os.path.join(d, "cgroup.procs"), f"cgroup v1 {d} ({v2})"
    raise unittest.SkipTest(f"no memory cgroup to make: {v2}; and no cgroup v1 "
                            "memory hierarchy is mounted")


class OomTest(unittest.TestCase):
    def setUp(self):
        require_root()
        self.procs, what = memory_cgroup(self)
        print(f"memory cgroup: {what}", file=sys.stderr, flush=True)
        self.c = Cluster(self)
        self.c.start_controller()

    def oom_kill(self):
        def enter():
            with open(self.procs, "w") as f:
                f.write("0")
        p = subprocess.Popen([sys.executable, "-c", HOG], preexec_fn=enter)
        rc = p.wait(60)
        self.assertEqual(rc, -9, "the hog was not OOM-killed")
        return p.pid

    def test_ebpf_victim(self):
        try:
            self.c.start_agent(extra=["--interval", "1"])
            wait_backend(self.c, "oom", "ebpf")
            before = wait_for("oom activity", lambda: activity(self.c).get("oom"))
            pid = self.oom_kill()

            def seen():
                o = activity(self.c).get("oom") or {}
                for v in o.get("recent", []):
                    if v["pid"] == pid:
                        return o, v
                return None
            oom, v = wait_for(f"victim {pid} in oom.recent", seen, timeout=20)
            self.assertGreaterEqual(oom["kills"] - before["kills"], 1)
            self.assertTrue(v["comm"].startswith("python"), v)
            self.assertIn("time", v)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def test_procfs_kills(self):
        try:
            self.c.start_agent(extra=["--interval", "1", "--collector-backend", "procfs"])
            wait_backend(self.c, "oom", "procfs")
            before = wait_for("oom activity", lambda: activity(self.c).get("oom"))
            self.oom_kill()
            wait_for("procfs oom kills to move",
                     lambda: (activity(self.c).get("oom") or {}).get("kills", 0)
                     > before["kills"], timeout=20)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e


if __name__ == "__main__":
    main()
