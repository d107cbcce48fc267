#!/usr/bin/env python3
"""Smoke test of a cross-built agent (label cross): runs the target's
edgesync-agent through its emulator (qemu-user-static) on this host's
/proc, offline, with the procfs collectors forced:

- `check` exits 0, names every procfs collector ok and says the eBPF
  collectors are off because they were forced off;
- the .deb packages of the tree carry the target's Architecture, its
  libraries' Depends and the target's agent;
- `run` collects for a few rounds: /v1/state answers with new CPU figures
  each round, every collector on procfs and healthy, and the target's
  architecture (uname's machine as the emulator gives it, in Kubernetes'
  GOARCH names).

With ES_NATIVE_BIN (the native tree's bin/, which scripts/cross-build.sh
passes), the target's agent also syncs with the native controller (--dev)
over mutual TLS, dialling it by host name (wss://localhost:PORT: the C
library's resolver, /etc/hosts), and the controller stores its Node with
the target's architecture.

In a static tree (ES_STATIC=1, a musl toolchain) the agent is also
checked to be static (no program interpreter, no dynamic section) and,
instead of the .deb, each .ipk of the tree (one per OpenWrt architecture
name in ES_IPK_ARCHS) to carry its Architecture, no Depends and the
target's static agent. The x86_64 static agent runs without an emulator.

With ES_EBPF=1 (test static_ebpf, label bpf: the x86_64 static tree,
as root) only the eBPF comparison runs: the static agent's `check` picks
the same backend for every kernel collector as the native tree's dynamic
agent on this kernel, and `run` reports them healthy on those backends.

Environment: ES_AGENT (the target's edgesync-agent), ES_EMULATOR (the
emulator command, ';'-separated as CMake lists it; empty for the build
machine's own architecture in a static tree), ES_GOARCH (the
architecture the Node must report: amd64, arm64, arm). Exits 77 (CTest:
Not Run) when the emulator is missing. What emulation cannot show (bpf():
qemu-user has no such system call) is out of scope: see the README.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ctest_main  # noqa: E402

AGENT = os.environ.get("ES_AGENT", "")
EMULATOR = [a for a in os.environ.get("ES_EMULATOR", "").split(";") if a]
GOARCH = os.environ.get("ES_GOARCH", "")
DEB_ARCH = os.environ.get("ES_DEB_ARCH", "")
PKG_DIR = os.environ.get("ES_PKG_DIR", "")
VERSION = os.environ.get("ES_VERSION", "")
STATIC = os.environ.get("ES_STATIC", "") == "1"
IPK_ARCHS = [a for a in os.environ.get("ES_IPK_ARCHS", "").split(",") if a]
NATIVE_BIN = os.environ.get("ES_NATIVE_BIN", "")
EBPF = os.environ.get("ES_EBPF", "") == "1"
KERNEL_COLLECTORS = ("process", "tcp", "cgroup-network", "oom", "blockio")
# ELF e_machine of each Debian architecture (the ELF gABI's EM_* numbers).
EM = {"arm64": 183, "armhf": 40, "amd64": 62}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_state(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/state", timeout=10) as r:
        return json.load(r)


@unittest.skipIf(EBPF, "the eBPF comparison only")
class CrossSmoke(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if STATIC and not EMULATOR:
            pass  # the build machine's own architecture: runs as it is
        elif not EMULATOR or shutil.which(EMULATOR[0]) is None:
            raise unittest.SkipTest(f"no emulator ({EMULATOR or 'ES_EMULATOR unset'}): "
                                    "install qemu-user-static (scripts/install-deps.sh)")
        if not os.access(AGENT, os.X_OK):
            raise unittest.SkipTest(f"no agent at {AGENT!r}")

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="es-cross-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.port = free_port()
        self.flags = ["--state-dir", self.dir, "--collector-backend", "procfs",
                      "--http-listen", f"127.0.0.1:{self.port}", "--interval", "1",
                      "--controller-url", ""]

    def test_check(self):
        p = subprocess.run(EMULATOR + [AGENT, "check"] + self.flags, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rows = {line.split()[0]: line.split(None, 2)[1:] for line in p.stdout.splitlines()[1:]
                if line.strip()}
        for c in ("procfs", "collector/cpu", "collector/memory", "collector/filesystem",
                  "collector/network", "collector/processes", "collector/process",
                  "collector/tcp"):
            self.assertIn(c, rows, p.stdout)
            self.assertEqual(rows[c][0], "ok", f"{c}: {rows[c]}")
        self.assertEqual(rows["ebpf"][0], "missing", p.stdout)
        self.assertIn("forced by collector-backend=procfs", rows["ebpf"][1])

    def test_run_rounds(self):
        log = open(os.path.join(self.dir, "agent.log"), "w+")
        self.addCleanup(log.close)
        proc = subprocess.Popen(EMULATOR + [AGENT, "run"] + self.flags, stdout=log,
                                stderr=subprocess.STDOUT)

        def stop():
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.addCleanup(stop)

        def logtext():
            log.flush()
            log.seek(0)
            return log.read()

        # Each round reads /proc/stat anew: the host's CPU seconds (idle
        # included) move on between rounds, so distinct totals count rounds.
        totals = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            self.assertIsNone(proc.poll(), "agent exited:\n" + logtext())
            try:
                st = get_state(self.port)
            except OSError:
                time.sleep(0.5)
                continue
            total = sum(st["node"]["status"]["usage"]["cpu"]["secondsTotal"].values())
            if not totals or total != totals[-1]:
                totals.append(total)
            if len(totals) >= 4:
                break
            time.sleep(0.5)
        else:
            self.fail(f"fewer than 3 new rounds in 90 s (CPU totals {totals}):\n" + logtext())
        for c in st["node"]["status"]["collectors"]:
            if c["name"] == "cgroup-network":  # has no procfs fallback
                continue
            self.assertEqual((c["name"], c["backend"], c["healthy"]),
                             (c["name"], "procfs", True), c)
        info = st["node"]["status"]["nodeInfo"]
        self.assertEqual(info["architecture"], GOARCH, info)
        self.assertEqual(info["operatingSystem"], "linux")
        self.assertGreater(st["node"]["status"]["capacity"]["cpu"], 0)
        self.assertGreater(st["node"]["status"]["usage"]["memory"]["MemTotal"], 0)
        self.assertEqual(st["sync"]["state"], "disabled")
        stop()
        self.assertEqual(proc.returncode, 0, logtext())


@unittest.skipIf(EBPF, "the eBPF comparison only")
class CrossSync(unittest.TestCase):
    """The target's agent against the native controller, by host name."""

    def test_sync_by_host_name(self):
        if not NATIVE_BIN or not os.access(os.path.join(NATIVE_BIN, "edgesync-controller"),
                                           os.X_OK):
            self.skipTest(f"no native controller (ES_NATIVE_BIN={NATIVE_BIN!r})")
        if EMULATOR and shutil.which(EMULATOR[0]) is None:
            self.skipTest(f"no emulator {EMULATOR[0]}")
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "..", "integration"))
        import harness
        harness.BIN_DIR = harness.TOOLS_DIR = NATIVE_BIN
        node = "cross-" + (GOARCH or "node")
        c = harness.Cluster(self, nodes=[node])
        c.start_controller(extra=["--log-level", "info"])
        c.start_agent(node, binary=EMULATOR + [AGENT],
                      extra=["--controller-url", f"wss://localhost:{c.port}",
                             "--collector-backend", "procfs", "--interval", "1",
                             "--log-level", "info"])
        doc = harness.wait_for(f"node {node}'s status stored by the controller",
                               lambda: (c.node(node) or {}).get("status", {}).get("nodeInfo")
                               and c.node(node), timeout=90)
        self.assertEqual(doc["status"]["nodeInfo"]["architecture"], GOARCH, doc["status"])
        self.assertTrue(doc["status"]["usage"]["cpu"]["secondsTotal"], doc["status"])


def check_rows(argv):
    """{row: (result, detail)} of `edgesync-agent check` run as argv."""
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    rows = {}
    for line in p.stdout.splitlines()[1:]:
        parts = line.split(None, 2)
        if len(parts) >= 2 and not line.startswith("time="):
            rows[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    return p, rows


@unittest.skipUnless(EBPF, "ES_EBPF=1 only (test static_ebpf)")
class StaticEbpf(unittest.TestCase):
    """The static agent's eBPF collectors on this kernel, beside the
    dynamic agent's."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root (bpf(), tracefs)")
        native = os.path.join(NATIVE_BIN, "edgesync-agent")
        if not os.access(native, os.X_OK):
            self.skipTest(f"no native agent ({native!r}) to compare with")
        self.native = native
        self.dir = tempfile.mkdtemp(prefix="es-static-bpf-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.port = free_port()
        self.flags = ["--state-dir", self.dir, "--http-listen", f"127.0.0.1:{self.port}",
                      "--interval", "1", "--controller-url", ""]

    def test_same_backends_as_dynamic(self):
        _, dyn = check_rows([self.native, "check"] + self.flags)
        p, sta = check_rows([AGENT, "check"] + self.flags)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        if dyn.get("ebpf", ("",))[0] != "ok":
            self.skipTest(f"eBPF not usable on this kernel: {dyn.get('ebpf')}")
        for c in KERNEL_COLLECTORS:
            row = f"collector/{c}"
            self.assertEqual(sta[row][:1], dyn[row][:1], f"{row}: static {sta[row]}, "
                             f"dynamic {dyn[row]}")
            self.assertEqual(sta[row][1].split(":")[0], dyn[row][1].split(":")[0], row)
        self.assertEqual(sta["ebpf"][0], "ok", p.stdout)
        backends = {c: sta[f"collector/{c}"][1].split(":")[0] for c in KERNEL_COLLECTORS}

        log = open(os.path.join(self.dir, "agent.log"), "w+")
        self.addCleanup(log.close)
        proc = subprocess.Popen([AGENT, "run"] + self.flags, stdout=log,
                                stderr=subprocess.STDOUT)
        self.addCleanup(lambda: proc.poll() is None and (proc.terminate(), proc.wait(20)))
        deadline = time.monotonic() + 60
        st = None
        while time.monotonic() < deadline:
            self.assertIsNone(proc.poll(), "agent exited")
            try:
                st = get_state(self.port)
                if st["node"]["status"].get("collectors"):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        self.assertIsNotNone(st, "no /v1/state in 60 s")
        got = {c["name"]: (c["backend"], c["healthy"]) for c in st["node"]["status"]["collectors"]}
        for c, backend in backends.items():
            self.assertEqual(got.get(c), (backend, True), c)
        proc.terminate()
        self.assertEqual(proc.wait(20), 0)


def elf_kind(data):
    """(e_machine, has PT_INTERP, has PT_DYNAMIC) of an ELF image (the ELF
    gABI: program header types 3 and 2)."""
    assert data[:4] == b"\x7fELF", data[:4]
    wide = data[4] == 2
    order = "little" if data[5] == 1 else "big"
    num = lambda off, n: int.from_bytes(data[off:off + n], order)
    machine = num(18, 2)
    phoff, phentsize, phnum = ((num(32, 8), num(54, 2), num(56, 2)) if wide
                               else (num(28, 4), num(42, 2), num(44, 2)))
    types = {num(phoff + i * phentsize, 4) for i in range(phnum)}
    return machine, 3 in types, 2 in types


@unittest.skipUnless(STATIC and not EBPF, "a static (musl) tree only")
class CrossStatic(unittest.TestCase):
    """The static agent and its .ipk packages (`--target packages`, which
    scripts/cross-build.sh --packages builds before the tests)."""

    def test_agent_is_static(self):
        with open(AGENT, "rb") as f:
            machine, interp, dynamic = elf_kind(f.read())
        self.assertEqual(machine, EM[DEB_ARCH])
        self.assertFalse(interp, "the agent names a program interpreter")
        self.assertFalse(dynamic, "the agent has a dynamic section")

    def test_ipk_per_openwrt_arch(self):
        self.assertTrue(IPK_ARCHS, "ES_IPK_ARCHS is empty")
        for arch in IPK_ARCHS:
            ipk = os.path.join(PKG_DIR, f"edgesync-agent_{VERSION}_{arch}.ipk")
            if not os.path.exists(ipk):
                self.skipTest(f"{ipk} not built (cmake --build BUILD --target packages)")
            with self.subTest(arch=arch), tempfile.TemporaryDirectory() as tmp:
                subprocess.run(["ar", "x", ipk], cwd=tmp, check=True)
                with open(os.path.join(tmp, "debian-binary")) as f:
                    self.assertEqual(f.read(), "2.0\n")
                ctl, data = os.path.join(tmp, "ctl"), os.path.join(tmp, "data")
                os.mkdir(ctl)
                os.mkdir(data)
                subprocess.run(["tar", "xzf", "control.tar.gz", "-C", ctl], cwd=tmp, check=True)
                subprocess.run(["tar", "xzf", "data.tar.gz", "-C", data], cwd=tmp, check=True)
                with open(os.path.join(ctl, "control")) as f:
                    fields = dict(line.split(": ", 1) for line in f.read().splitlines()
                                  if ": " in line and not line.startswith(" "))
                self.assertEqual(fields["Package"], "edgesync-agent")
                self.assertEqual(fields["Architecture"], arch)
                self.assertEqual(fields["Version"], VERSION)
                self.assertNotIn("Depends", fields)
                for path in ("usr/bin/edgesync-agent", "etc/edgesync/agent.conf",
                             "etc/init.d/edgesync-agent"):
                    self.assertTrue(os.path.isfile(os.path.join(data, path)), path)
                with open(os.path.join(data, "usr/bin/edgesync-agent"), "rb") as f:
                    machine, interp, dynamic = elf_kind(f.read())
                self.assertEqual((machine, interp, dynamic), (EM[DEB_ARCH], False, False))


@unittest.skipIf(STATIC or EBPF, "a static tree makes .ipk packages only")
class CrossDeb(unittest.TestCase):
    """The tree's .deb packages (`--target packages`, which
    scripts/cross-build.sh --packages builds before the tests): the target's
    Architecture, Depends from the target's libraries, the target's agent."""

    def test_agent_deb(self):
        deb = os.path.join(PKG_DIR, f"edgesync-agent_{VERSION}_{DEB_ARCH}.deb")
        if not os.path.exists(deb):
            self.skipTest(f"{deb} not built (cmake --build BUILD --target packages)")
        field = lambda f: subprocess.run(["dpkg-deb", "-f", deb, f], capture_output=True,
                                         text=True, check=True).stdout.strip()
        self.assertEqual(field("Architecture"), DEB_ARCH)
        deps = field("Depends")
        for lib in ("libc6", "libbpf1", "libcjson1", "libsqlite3-0"):
            self.assertIn(lib, deps)
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["dpkg-deb", "-x", deb, tmp], check=True)
            with open(os.path.join(tmp, "usr/bin/edgesync-agent"), "rb") as f:
                head = f.read(20)
        self.assertEqual(head[:4], b"\x7fELF")
        self.assertEqual(int.from_bytes(head[18:20], "little"), EM[DEB_ARCH])


if __name__ == "__main__":
    ctest_main.main()
