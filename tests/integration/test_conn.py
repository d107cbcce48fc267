"""Connections under load (PROTOCOL.md "Errors", `Overloaded`; README
"Connections"): a controller past max-sessions tells an agent to come back
later and the agent does, after the stated time, with no report lost; a
connection that does not finish TLS, the upgrade and its hello within
handshake-timeout is cut (slowloris); a reconnect after a controller
restart resumes its TLS session from a ticket whose key survived in the
state directory (edgesync_controller_tls_handshakes_total{resumed="true"})."""

import os
import re
import signal
import socket
import ssl
import time
import unittest

from harness import Cluster, main, wait_for


def metric(c, name, labels):
    """One sample of the controller's /metrics, 0 when absent."""
    return c.metric(f"{name}{{{labels}}}") or 0.0


def connected(c, node):
    n = c.node(node)
    return bool(n and n["status"]["sync"]["connected"])


class OverloadTest(unittest.TestCase):
    def test_come_back_later_then_no_report_lost(self):
        c = Cluster(self, nodes=["n1", "n2"])
        c.start_controller(extra=["--max-sessions", "1",
                                  "--overload-retry-seconds", "3"])
        a1 = c.start_agent("n1", extra=["--interval", "1"])
        try:
            wait_for("n1 connected", lambda: connected(c, "n1"))
            a2 = c.start_agent("n2", extra=["--interval", "1"])
            wait_for("n2 told to come back later", lambda: metric(
                c, "edgesync_controller_connections_refused_total",
                'reason="Overloaded"') >= 2, timeout=30)
            log = a2.output()
            self.assertIn("controller overloaded, coming back later", log)
            # Each refusal is followed by a wait in [R, 2R], R = 3 s.
            delays = [int(d) for d in re.findall(
                r"disconnected, redialling.*?delay_ms[=\":\s]+(\d+)", log)]
            self.assertTrue(delays, log[-3000:])
            for d in delays:
                self.assertGreaterEqual(d, 3000, log[-3000:])
                self.assertLessEqual(d, 6000, log[-3000:])
            self.assertFalse(connected(c, "n2"))
            st = c.agent_state("n2")
            self.assertIn("overloaded", st["sync"]["lastError"].lower())
            # n1 leaves: n2 gets its session and every report it queued.
            a1.stop()
            wait_for("n2 connected", lambda: connected(c, "n2"), timeout=30)
            next_seq = c.agent_state("n2")["sync"]["nextSeq"]
            wait_for("n2's queued reports acknowledged", lambda: c.agent_state("n2")
                     ["sync"]["ackedSeq"] >= next_seq - 1, timeout=30)
            seqs = [r["seq"] for r in c.reports("n2")]
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e
        self.assertEqual(len(seqs), len(set(seqs)), "a report stored twice")
        self.assertEqual(sorted(seqs), list(range(1, len(seqs) + 1)),
                         "a report lost")
        self.assertGreaterEqual(len(seqs), next_seq - 1)


class SlowHandshakeTest(unittest.TestCase):
    def test_slowloris_cut(self):
        c = Cluster(self, nodes=["n1"])
        c.start_controller(extra=["--handshake-timeout", "2"])
        try:
            # A TCP connection that never starts TLS, and one that finishes
            # TLS with a node certificate and then sends nothing.
            raw = socket.create_connection(("127.0.0.1", c.port), timeout=20)
            ctx = ssl.create_default_context(cafile=os.path.join(c.dev, "ca.crt"))
            ctx.load_cert_chain(*c.node_cert("n1"))
            tls = ctx.wrap_socket(socket.create_connection(("127.0.0.1", c.port),
                                                           timeout=20),
                                  server_hostname="localhost")
            t0 = time.monotonic()
            for s in (raw, tls):
                try:
                    self.assertEqual(s.recv(1), b"")
                except (ConnectionResetError, ssl.SSLError):
                    pass
            took = time.monotonic() - t0
            self.assertLess(took, 8, "slow connections were not cut")
            self.assertGreaterEqual(metric(
                c, "edgesync_controller_connections_refused_total",
                'reason="HandshakeTimeout"'), 2)
            raw.close()
            tls.close()
            # An agent that does its hello in time is not affected.
            c.start_agent("n1")
            wait_for("n1 connected", lambda: connected(c, "n1"))
            time.sleep(3)
            self.assertTrue(connected(c, "n1"))
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


    def test_handshakes_bounded(self):
        """With max-handshakes 1, a connection stuck before its TLS
        ClientHello holds the only slot: an agent's connection waits in the
        listen backlog, not refused, and is served only once the stuck one
        was cut (handshake-timeout 8 s, longer than the agent takes to
        start)."""
        c = Cluster(self, nodes=["n1"])
        c.start_controller(extra=["--handshake-timeout", "8",
                                  "--max-handshakes", "1"])
        try:
            stuck = socket.create_connection(("127.0.0.1", c.port), timeout=20)
            t0 = time.monotonic()
            c.start_agent("n1")
            self.assertLess(time.monotonic() - t0, 7, "the agent took too long "
                            "to start for this test to tell anything")
            wait_for("n1 connected after the stuck handshake was cut",
                     lambda: connected(c, "n1"), timeout=30)
            self.assertGreaterEqual(time.monotonic() - t0, 7.5)
            # By then the stuck connection is closed: the agent waited.
            stuck.settimeout(0.5)
            try:
                self.assertEqual(stuck.recv(1), b"")
            except ConnectionResetError:
                pass
            stuck.close()
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


class ResumeTest(unittest.TestCase):
    def test_reconnect_after_restart_is_abbreviated(self):
        c = Cluster(self, nodes=["n1"])
        c.start_controller()
        try:
            key = os.path.join(c.state, "tls-ticket.key")
            self.assertEqual(os.stat(key).st_mode & 0o777, 0o600)
            with open(key) as f:
                self.assertRegex(f.read(), r"^[0-9a-f]{72}\n$")
            c.start_agent("n1", extra=["--interval", "1"])
            wait_for("n1 connected", lambda: connected(c, "n1"))
            self.assertEqual(metric(c, "edgesync_controller_tls_handshakes_total",
                                    'resumed="false"'), 1)
            acked = wait_for("a report acknowledged", lambda: c.agent_state("n1")
                             ["sync"]["ackedSeq"])
            c.controller.stop(signal.SIGKILL)
            c.start_controller()
            wait_for("n1 back", lambda: connected(c, "n1"), timeout=30)
            wait_for("n1 reporting again", lambda: c.agent_state("n1")
                     ["sync"]["ackedSeq"] > acked, timeout=30)
            self.assertGreaterEqual(metric(
                c, "edgesync_controller_tls_handshakes_total", 'resumed="true"'), 1)
            self.assertEqual(metric(c, "edgesync_controller_tls_handshakes_total",
                                    'resumed="false"'), 0)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


if __name__ == "__main__":
    main()
