#!/usr/bin/env python3
"""systemd notifications of the real programs (lib/es_notify.h).

A datagram socket stands in for systemd's $NOTIFY_SOCKET. The controller
and the agent must send READY=1 only once they serve (listeners bound;
the agent's /readyz answers 200), WATCHDOG=1 about every half of
$WATCHDOG_USEC while their loop runs, none while it is stopped (SIGSTOP),
and STOPPING=1 on SIGTERM. The programs do not link libsystemd: they load
it at run time only when $NOTIFY_SOCKET is set (footprint elsewhere).
"""

import http.client
import os
import signal
import socket
import subprocess
import time
import unittest

import harness

WATCHDOG_USEC = 400000  # pings every 200 ms


def links_libsystemd(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    return "libsystemd.so" in out


class NotifySocket:
    def __init__(self, test, directory, name):
        self.path = os.path.join(directory, name)
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.bind(self.path)
        test.addCleanup(self.s.close)

    def recv(self, timeout):
        """The next datagram as text, or None after timeout seconds."""
        self.s.settimeout(timeout)
        try:
            return self.s.recv(4096).decode()
        except socket.timeout:
            return None

    def drain(self):
        msgs = []
        while True:
            m = self.recv(0.01)
            if m is None:
                return msgs
            msgs.append(m)

    def env(self):
        return {"NOTIFY_SOCKET": self.path, "WATCHDOG_USEC": str(WATCHDOG_USEC)}


def readyz(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/readyz")
        return conn.getresponse().status
    finally:
        conn.close()


class TestNotify(unittest.TestCase):
    def test_not_linked(self):
        for prog in ("edgesync-agent", "edgesync-controller"):
            self.assertFalse(links_libsystemd(os.path.join(harness.BIN_DIR, prog)),
                             f"{prog} links libsystemd")

    def check_lifecycle(self, proc, sock, after_ready):
        m = sock.recv(30)
        self.assertIsNotNone(m, "no notification within 30 s:\n" + proc.output()[-3000:])
        # The first keep-alive may come just before READY=1.
        while m == "WATCHDOG=1":
            m = sock.recv(30)
        self.assertTrue(m.startswith("READY=1\n"), m)
        self.assertIn("STATUS=serving", m)
        after_ready()

        sock.drain()
        time.sleep(1.0)
        pings = sock.drain()
        self.assertTrue(all(p == "WATCHDOG=1" for p in pings), pings)
        self.assertGreaterEqual(len(pings), 3, pings)
        self.assertLessEqual(len(pings), 7, pings)

        # A loop that does not run sends nothing.
        proc.p.send_signal(signal.SIGSTOP)
        try:
            sock.drain()
            time.sleep(1.0)
            self.assertEqual(sock.drain(), [])
        finally:
            proc.p.send_signal(signal.SIGCONT)
        self.assertIsNotNone(sock.recv(2), "no keep-alive after SIGCONT")

        proc.stop()
        rest = sock.drain()
        self.assertIn("STOPPING=1", rest)
        self.assertEqual(rest[-1], "STOPPING=1", rest)

    def test_controller_and_agent(self):
        c = harness.Cluster(self)
        csock = NotifySocket(self, c.dir, "controller.sock")
        saved = dict(os.environ)
        os.environ.update(csock.env())
        try:
            c.start_controller()
        finally:
            os.environ.clear()
            os.environ.update(saved)

        def controller_serves():
            self.assertTrue(c._listening(c.admin_port))
            self.assertTrue(c._listening(c.port))

        asock = NotifySocket(self, c.dir, "agent.sock")
        agent = c.start_agent(env=asock.env())
        port = c.agent_ports[c.nodes[0]]
        self.check_lifecycle(agent, asock,
                             lambda: self.assertEqual(readyz(port), 200))
        self.check_lifecycle(c.controller, csock, controller_serves)

    def test_watchdog_for_another_process(self):
        """$WATCHDOG_PID naming another process: no keep-alives."""
        c = harness.Cluster(self)
        c.start_controller()
        sock = NotifySocket(self, c.dir, "agent.sock")
        env = sock.env()
        env["WATCHDOG_PID"] = "1"
        agent = c.start_agent(env=env)
        m = sock.recv(30)
        self.assertIsNotNone(m, agent.output()[-3000:])
        self.assertTrue(m.startswith("READY=1\n"), m)
        time.sleep(1.0)
        self.assertEqual(sock.drain(), [])
        agent.stop()
        self.assertEqual(sock.drain(), ["STOPPING=1"])


if __name__ == "__main__":
    harness.main()
