"""The controller's event loops (setting event-loop): under each loop the
program has, an agent syncs, the admin and join listeners answer, an idle
connection is cut by the handshake timeout (an lws_sul timer), and SIGTERM
and SIGINT stop it cleanly. A controller built without libuv refuses
event-loop = libuv with exit status 2."""

import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from harness import BIN_DIR, Cluster, main, wait_for

CONTROLLER = os.path.join(BIN_DIR, "edgesync-controller")


def loops_built_in():
    """The loops `edgesync-controller --help` says it has."""
    out = subprocess.run([CONTROLLER, "--help"], capture_output=True, text=True,
                         timeout=30).stdout
    m = re.search(r"^Event loops built in: (.*)$", out, re.M)
    if not m:
        raise AssertionError(f"--help names no event loop:\n{out}")
    return {"libuv", "poll"} if m.group(1).startswith("libuv") else {"poll"}


def connected(c, node):
    n = c.node(node)
    return bool(n and n["status"]["sync"]["connected"])


class EventLoopTest(unittest.TestCase):
    def check_loop(self, loop, stop_sig):
        c = Cluster(self, nodes=["n1"])
        p = c.start_controller(extra=["--event-loop", loop, "--handshake-timeout", "1"])
        wait_for("serving line", lambda: re.search(r'msg="?serving"? ', p.output()))
        self.assertRegex(p.output(), rf'msg="?serving"? .*event-loop={loop}\b')
        try:
            c.start_agent()
            wait_for("n1 connected", lambda: connected(c, "n1"))
            self.assertIn("n1", c.ctl("get", "nodes").stdout)
            # The join listener (dev mode signs joins) takes a connection.
            with socket.create_connection(("127.0.0.1", c.join_port), timeout=5):
                pass
            # A connection that never starts TLS is cut after the handshake
            # timeout (1 s) by the sweep timer: the controller closes it.
            with socket.create_connection(("127.0.0.1", c.port), timeout=10) as s:
                t0 = time.monotonic()
                try:
                    self.assertEqual(s.recv(1), b"", "expected the controller to close")
                except ConnectionResetError:
                    pass
                self.assertLess(time.monotonic() - t0, 8.0)
            # The agent's session survived all that.
            self.assertTrue(connected(c, "n1"))
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e
        c.agents["n1"].stop()
        p.p.send_signal(stop_sig)
        p.p.wait(20)
        self.assertEqual(p.p.returncode, 0, p.output()[-4000:])
        self.assertRegex(p.output(), r'msg="?stopping"?')
        p.stop()  # closes the log (already exited)

    def test_poll(self):
        self.check_loop("poll", signal.SIGTERM)

    def test_libuv(self):
        if "libuv" not in loops_built_in():
            with tempfile.TemporaryDirectory() as d:
                r = subprocess.run([CONTROLLER, "run", "--dev", "--state-dir", d,
                                    "--event-loop", "libuv"],
                                   capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("event-loop", r.stderr)
            self.skipTest("this controller has no libuv (ES_CONTROLLER_LIBUV=OFF)")
        self.check_loop("libuv", signal.SIGTERM)

    def test_libuv_sigint(self):
        if "libuv" not in loops_built_in():
            self.skipTest("this controller has no libuv (ES_CONTROLLER_LIBUV=OFF)")
        self.check_loop("libuv", signal.SIGINT)


if __name__ == "__main__":
    main()
