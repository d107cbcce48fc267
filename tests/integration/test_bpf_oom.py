"""OOM collector (issue 3): a process killed by the OOM killer in a small
memory cgroup is reported with its pid and command, on the eBPF backend
(oom:mark_victim), and the procfs fallback's kills counter moves too."""

import os
import subprocess
import sys
import tempfile
import time
import unittest

from harness import Cluster, main, wait_for
from bpfnet_util import activity, require_root, wait_backend

LIMIT = 64 << 20
HOG = "b = []\nwhile True:\n    b.append(bytearray(16 << 20))\n"


def memory_cgroup():
    """A new memory-limited cgroup (v1 memory controller, or a cgroup v2
    mount with the memory controller); its tasks file and a cleanup."""
    v1 = "/sys/fs/cgroup/memory"
    if os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
        d = tempfile.mkdtemp(prefix="es-oom-", dir=v1)
        with open(os.path.join(d, "memory.limit_in_bytes"), "w") as f:
            f.write(str(LIMIT))
        return os.path.join(d, "cgroup.procs"), d
    raise unittest.SkipTest("no cgroup v1 memory controller to make a small memory cgroup")


def remove_cgroup(d):
    """rmdir, retried while the killed task's memory is still uncharged."""
    for _ in range(50):
        try:
            os.rmdir(d)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


class OomTest(unittest.TestCase):
    def setUp(self):
        require_root()
        self.c = Cluster(self)
        self.c.start_controller()

    def oom_kill(self):
        procs, d = memory_cgroup()
        self.addCleanup(remove_cgroup, d)

        def enter():
            with open(procs, "w") as f:
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
