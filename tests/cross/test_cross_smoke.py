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

Environment: ES_AGENT (the target's edgesync-agent), ES_EMULATOR (the
emulator command, ';'-separated as CMake lists it), ES_GOARCH (the
architecture the Node must report: arm64, arm). Exits 77 (CTest: Not Run)
when the emulator is missing. What emulation cannot show (bpf(): qemu-user
has no such system call) is out of scope: see the README.
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
# ELF e_machine of each Debian architecture (the ELF gABI's EM_* numbers).
EM = {"arm64": 183, "armhf": 40, "amd64": 62}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_state(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/state", timeout=10) as r:
        return json.load(r)


class CrossSmoke(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not EMULATOR or shutil.which(EMULATOR[0]) is None:
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
