"""Startup errors: once a program's settings are loaded, `run` says
everything as logfmt events, its failure to start included (exit 1 or 2
as before); a usage or configuration error found while reading the
settings stays one plain "prog: message" line for the person at the
terminal (exit 2)."""

import os
import re
import select
import socket
import subprocess
import tempfile
import time
import unittest

from harness import BIN_DIR, free_port, main

LOGFMT = re.compile(r'^time=\S+Z level=(error|warn|info|debug) component=\S+ msg="')
AGENT = os.path.join(BIN_DIR, "edgesync-agent")
CONTROLLER = os.path.join(BIN_DIR, "edgesync-controller")


def run(argv, timeout=60):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


class StartupErrorsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="es-it-startup-")
        self.addCleanup(self.tmp.cleanup)

    def assert_logfmt(self, r):
        lines = [ln for ln in r.stderr.splitlines() if ln]
        self.assertTrue(lines, r)
        for ln in lines:
            self.assertRegex(ln, LOGFMT)
        return lines

    def test_agent_start_failure_is_logfmt(self):
        # A state directory that cannot be made: a file is in the way.
        blocker = os.path.join(self.tmp.name, "file")
        with open(blocker, "w") as f:
            f.write("x")
        r = run([AGENT, "run", "--state-dir", os.path.join(blocker, "state"),
                 "--http-listen", f"127.0.0.1:{free_port()}",
                 "--collector-backend", "procfs"])
        self.assertEqual(r.returncode, 1, r)
        lines = self.assert_logfmt(r)
        self.assertTrue(any('level=error component=agent msg="cannot start"' in ln
                            and "state-dir" in ln for ln in lines), lines)

    def test_agent_fails_before_kernel_collectors(self):
        # What stops `run` (here its local endpoint's port, taken) is found
        # before the kernel collectors and egress load anything.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            r = run([AGENT, "run", "--state-dir", os.path.join(self.tmp.name, "a"),
                     "--http-listen", f"127.0.0.1:{port}", "--log-level", "debug"])
        self.assertEqual(r.returncode, 1, r)
        lines = self.assert_logfmt(r)
        self.assertTrue(any('msg="cannot start"' in ln and f"127.0.0.1:{port}: in use" in ln
                            for ln in lines), lines)
        late = [ln for ln in lines if re.search(r"component=(kcollect|egress) ", ln)]
        self.assertEqual(late, [], "started before the failure")

    def test_agent_credentials_said_before_kernel_collectors(self):
        # Missing credential files do not stop the agent (it runs offline,
        # CredentialsValid=False), but they are said before the kernel
        # collectors and egress start loading eBPF programs.
        missing = os.path.join(self.tmp.name, "no-such.crt")
        p = subprocess.Popen(
            [AGENT, "run", "--state-dir", os.path.join(self.tmp.name, "a"),
             "--http-listen", f"127.0.0.1:{free_port()}", "--log-level", "debug",
             "--controller-url", f"wss://127.0.0.1:{free_port()}",
             "--cert", missing, "--key", missing, "--ca", missing],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        lines = []
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if not select.select([p.stderr], [], [], 1)[0]:
                    continue
                ln = p.stderr.readline()
                if not ln:
                    break
                lines.append(ln.rstrip("\n"))
                if "credentials unusable" in ln:
                    break
        finally:
            p.terminate()
            p.communicate(timeout=30)  # drains stderr so that it can exit
        said = [i for i, ln in enumerate(lines) if "credentials unusable" in ln]
        self.assertTrue(said, lines)
        self.assertIn(missing, lines[said[0]])
        early = [ln for ln in lines[:said[0]]
                 if re.search(r"component=(kcollect|egress) ", ln)]
        self.assertEqual(early, [], "kernel collectors started first")

    def assert_plain_usage_error(self, prog):
        r = run([prog, "run", "--no-such-flag"])
        self.assertEqual(r.returncode, 2, r)
        lines = [ln for ln in r.stderr.splitlines() if ln]
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith(os.path.basename(prog) + ": "), lines)
        self.assertIn("--no-such-flag", lines[0])

    def test_agent_usage_error_is_plain(self):
        self.assert_plain_usage_error(AGENT)

    def test_controller_credential_error_is_logfmt(self):
        state = os.path.join(self.tmp.name, "ctl")
        missing = os.path.join(self.tmp.name, "no-such.crt")
        r = run([CONTROLLER, "run", "--state-dir", state,
                 "--listen", f"127.0.0.1:{free_port()}",
                 "--admin-listen", f"127.0.0.1:{free_port()}",
                 "--cert", missing, "--key", missing, "--client-ca", missing,
                 "--admin-ca", missing])
        self.assertEqual(r.returncode, 2, r)
        lines = self.assert_logfmt(r)
        self.assertTrue(any("level=error" in ln and "setting=cert" in ln
                            and missing in ln for ln in lines), lines)

    def test_controller_refuses_a_key_of_another_certificate(self):
        """A key that is not the serving certificate's is bad input (exit
        2, naming the key), not a controller whose every handshake fails."""
        d = self.tmp.name
        crt, key, other = (os.path.join(d, n) for n in ("s.crt", "s.key", "o.key"))
        for k in (key, other):
            subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                            "ec_paramgen_curve:P-256", "-out", k], check=True,
                           capture_output=True, timeout=30)
        subprocess.run(["openssl", "req", "-x509", "-new", "-key", key, "-subj",
                        "/CN=localhost", "-days", "2", "-out", crt], check=True,
                       capture_output=True, timeout=30)
        r = run([CONTROLLER, "run", "--state-dir", os.path.join(d, "ctl"),
                 "--listen", f"127.0.0.1:{free_port()}",
                 "--admin-listen", f"127.0.0.1:{free_port()}",
                 "--cert", crt, "--key", other, "--client-ca", crt,
                 "--admin-ca", crt])
        self.assertEqual(r.returncode, 2, r)
        lines = self.assert_logfmt(r)
        self.assertTrue(any("level=error" in ln and "setting=key" in ln
                            and other in ln and "does not match" in ln
                            for ln in lines), lines)

    def test_controller_usage_error_is_plain(self):
        self.assert_plain_usage_error(CONTROLLER)

    def test_controller_listen_takes_ip_literals(self):
        # libwebsockets binds an IP literal (or an interface); it never
        # looks a host name up and retries a bind it cannot make: a host
        # name or a zoned IPv6 address is a configuration error at start,
        # not a controller without that listener.
        state = os.path.join(self.tmp.name, "ctl")
        for flag, other in (("--listen", "--admin-listen"),
                            ("--admin-listen", "--listen")):
            for host in ("localhost", "[fe80::1%lo]", "[::1%lo]"):
                value = f"{host}:{free_port()}"
                with self.subTest(flag=flag, value=value):
                    try:
                        r = run([CONTROLLER, "run", "--dev", "--state-dir", state,
                                 flag, value, other, f"127.0.0.1:{free_port()}"],
                                timeout=20)
                    except subprocess.TimeoutExpired:
                        self.fail(f"{flag} {value}: the controller started")
                    self.assertEqual(r.returncode, 2, r)
                    lines = [ln for ln in r.stderr.splitlines() if ln]
                    self.assertEqual(len(lines), 1, lines)
                    self.assertTrue(lines[0].startswith(
                        f'edgesync-controller: {flag[2:]}: "{value}": '), lines)
                    self.assertFalse(os.path.exists(state), "state-dir was made")


if __name__ == "__main__":
    main()
