"""The eBPF collectors on a kernel without BTF (setting btf-path): the
agent runs in a mount namespace of its own (unshare -m) in which an empty
tmpfs hides /sys/kernel/btf, so it sees a kernel that ships no BTF. Without
btf-path its kernel collectors fall back to procfs and say why; with
btf-path naming a copy of this kernel's BTF (a file, or a directory of
<release>.btf files as BTFHub lays them out) they run on eBPF; a file that
is not BTF is named. Needs root, unshare(1) and /sys/kernel/btf/vmlinux to
copy; exits 77 otherwise."""

import os
import shutil
import subprocess
import unittest

from harness import BIN_DIR, ClassScope, Cluster, Proc, free_port, main, wait_for
from bpfnet_util import require_root

VMLINUX = "/sys/kernel/btf/vmlinux"
KERNEL_COLLECTORS = ("process", "tcp", "oom", "blockio")
# In the namespace: the kernel's BTF hidden, then the command.
HIDE = 'mount -t tmpfs -o size=1m edgesync-no-btf /sys/kernel/btf && exec "$@"'


def needs():
    require_root()
    unshare = shutil.which("unshare")
    if not unshare:
        raise unittest.SkipTest("needs unshare(1) (util-linux)")
    if not os.access(VMLINUX, os.R_OK):
        raise unittest.SkipTest(f"needs {VMLINUX} to copy as the BTF file")
    return unshare


def hidden(unshare, argv):
    """argv run with the kernel's BTF hidden."""
    return [unshare, "-m", "--propagation", "private", "sh", "-c", HIDE, "sh"] + argv


def rows(text):
    """check's table as {check: (result, detail)}."""
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[1] in ("ok", "missing", "failed", "warn"):
            out[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    return out


class BtfPathTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.unshare = needs()
        cls.c = Cluster(ClassScope())
        cls.btf_file = os.path.join(cls.c.dir, "vmlinux.btf")
        shutil.copyfile(VMLINUX, cls.btf_file)
        cls.btf_dir = os.path.join(cls.c.dir, "btfhub")
        os.mkdir(cls.btf_dir)
        cls.release = os.uname().release
        shutil.copyfile(VMLINUX, os.path.join(cls.btf_dir, cls.release + ".btf"))
        cls.not_btf = os.path.join(cls.c.dir, "not.btf")
        with open(cls.not_btf, "w") as f:
            f.write("this is not BTF\n")

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def check(self, *extra):
        argv = [os.path.join(BIN_DIR, "edgesync-agent"), "check",
                "--state-dir", os.path.join(self.c.dir, "check")] + list(extra)
        r = subprocess.run(hidden(self.unshare, argv), capture_output=True,
                           text=True, timeout=120)
        return rows(r.stdout), r.stdout

    def test_without_btf_path_the_collectors_fall_back_and_say_why(self):
        t, out = self.check()
        self.assertEqual(t["btf"][0], "missing", out)
        self.assertEqual(t["ebpf"][0], "missing", out)
        self.assertIn("btf-path", t["ebpf"][1], out)
        for name in KERNEL_COLLECTORS:
            self.assertTrue(t[f"collector/{name}"][1].startswith("procfs: no kernel BTF"),
                            out)

    def test_a_btf_file_puts_the_collectors_on_ebpf(self):
        t, out = self.check("--btf-path", self.btf_file)
        self.assertEqual(t["btf"], ("ok", f"{self.btf_file} (btf-path; the kernel has none)"),
                         out)
        self.assertEqual(t["ebpf"][0], "ok", out)
        for name in KERNEL_COLLECTORS:
            self.assertEqual(t[f"collector/{name}"], ("ok", "ebpf"), out)

    def test_a_directory_is_looked_up_by_kernel_release(self):
        t, out = self.check("--btf-path", self.btf_dir)
        want = os.path.join(self.btf_dir, self.release + ".btf")
        self.assertEqual(t["btf"][0], "ok", out)
        self.assertTrue(t["btf"][1].startswith(want), out)
        self.assertEqual(t["collector/process"], ("ok", "ebpf"), out)

    def test_a_directory_without_this_release_is_named(self):
        empty = os.path.join(self.c.dir, "empty-btfhub")
        os.makedirs(empty, exist_ok=True)
        t, out = self.check("--btf-path", empty)
        self.assertEqual(t["ebpf"][0], "missing", out)
        self.assertIn(os.path.join(empty, self.release + ".btf"), t["ebpf"][1], out)
        self.assertIn("no BTF file for this kernel release", t["ebpf"][1], out)

    def test_a_file_that_is_not_btf_is_named(self):
        t, out = self.check("--btf-path", self.not_btf)
        self.assertEqual(t["ebpf"][0], "missing", out)
        self.assertIn(f"btf-path {self.not_btf}: not BTF", t["ebpf"][1], out)
        self.assertTrue(t["collector/process"][1].startswith("procfs: btf-path"), out)

    def test_check_names_a_bad_btf_path_where_the_kernel_has_btf(self):
        """A fleet's btf-path is checked on hosts that do not need it too."""
        base = [os.path.join(BIN_DIR, "edgesync-agent"), "check",
                "--state-dir", os.path.join(self.c.dir, "check-btf")]
        for path, result, text in ((self.not_btf, "missing", "not BTF"),
                                   ("/nonexistent/btf", "missing", "No such file"),
                                   (self.btf_dir, "ok", "parses as BTF")):
            with self.subTest(btf_path=path):
                r = subprocess.run(base + ["--btf-path", path], capture_output=True,
                                   text=True, timeout=120)
                t = rows(r.stdout)
                self.assertEqual(t["btf"][0], "ok", r.stdout)
                self.assertEqual(t["btf-path"][0], result, r.stdout)
                self.assertIn(text, t["btf-path"][1], r.stdout)
                self.assertIn("unused here", t["btf-path"][1], r.stdout)

    def test_run_reports_the_collectors_on_ebpf_with_the_file(self):
        for btf, backend in ((self.btf_file, "ebpf"), (None, "procfs")):
            with self.subTest(btf_path=btf):
                port = free_port()
                argv = [os.path.join(BIN_DIR, "edgesync-agent"), "run",
                        "--node-name", "btf-test", "--interval", "1",
                        "--state-dir", os.path.join(self.c.dir, f"run-{backend}"),
                        "--http-listen", f"127.0.0.1:{port}"]
                if btf:
                    argv += ["--btf-path", btf]
                p = Proc(f"agent-{backend}", hidden(self.unshare, argv),
                         os.path.join(self.c.dir, f"agent-{backend}.log"))
                self.c.procs.append(p)
                self.c.agent_ports["btf-test"] = port

                def backends():
                    try:
                        cs = self.c.agent_state("btf-test")["node"]["status"].get(
                            "collectors", [])
                    except (OSError, ValueError, KeyError):
                        return None
                    got = {c.get("name"): c.get("backend") for c in cs}
                    return got if all(n in got for n in KERNEL_COLLECTORS) else None

                got = wait_for("the kernel collectors in /v1/state", backends,
                               timeout=60)
                for name in KERNEL_COLLECTORS:
                    self.assertEqual(got[name], backend, (name, got, p.output()[-3000:]))
                self.assertEqual(p.stop(), 0, p.output()[-3000:])


if __name__ == "__main__":
    main()
