"""Hostile frames: each gets an error message and a close with the code of
PROTOCOL.md, never a crash, and the controller keeps serving a real agent
connected at the same time. The agent, facing a hand-driven controller,
refuses a binary message the same way and redials."""

import json
import socket
import unittest

from harness import (EVERY_ROUND, ClassScope, Cluster, FakeController,
                     agent_and_fake_controller, hello, main, wait_for, welcome)


class HostileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster(ClassScope(), nodes=["good", "evil"])
        cls.c.start_controller()
        cls.c.start_agent("good", extra=["--interval", "1"] + EVERY_ROUND)
        wait_for("the good agent connected", lambda: (cls.c.node("good") or {})
                 .get("status", {}).get("sync", {}).get("connected"))

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def session(self, after_hello=True):
        ws = self.c.ws(*self.c.node_cert("evil"))
        if after_hello:
            ws.send_json(hello("evil"))
            kind, msg = ws.recv()
            self.assertEqual(msg["type"], "welcome")
            while True:  # the desired sync that follows the welcome
                kind, msg = ws.recv()
                if msg["type"] == "desired" and not msg.get("more"):
                    break
        return ws

    def expect_error(self, ws, code, close):
        msgs, got_close = ws.recv_until_close()
        ws.close()
        errors = [m for m in msgs if m.get("type") == "error"]
        self.assertTrue(errors, f"no error message, got {msgs}")
        self.assertEqual(errors[-1]["code"], code, errors)
        self.assertTrue(errors[-1]["message"])
        self.assertEqual(got_close, close)

    def tearDown(self):
        # After every hostile frame: the controller is alive and the good
        # agent's reports still arrive.
        self.assertTrue(self.c.controller.alive(), self.c.logs())
        before = self.c.node("good")["status"]["sync"]["ackedSeq"]
        wait_for("the good agent still reporting", lambda:
                 self.c.node("good")["status"]["sync"]["ackedSeq"] > before,
                 timeout=15)

    def test_not_json(self):
        ws = self.session()
        ws.send_frame("this is not json")
        self.expect_error(ws, "MalformedMessage", 1007)

    def test_truncated_json(self):
        ws = self.session()
        ws.send_frame('{"type":"report","seq":1,"body":{')
        self.expect_error(ws, "MalformedMessage", 1007)

    def test_deep_nesting(self):
        ws = self.session()
        ws.send_frame("[" * 10000 + "]" * 10000)
        self.expect_error(ws, "MalformedMessage", 1007)

    def test_ten_mebibyte_frame(self):
        ws = self.session()
        big = json.dumps({"type": "ping", "time": "x" * (10 * 1024 * 1024)})
        try:
            ws.send_frame(big)
        except OSError:
            pass  # the controller may close while we are still sending
        self.expect_error(ws, "MessageTooBig", 1009)

    def test_fragmented_oversize(self):
        ws = self.session()
        chunk = "x" * (512 * 1024)
        try:
            ws.send_frame('{"type":"ping","time":"' + chunk, fin=False)
            for _ in range(4):
                ws.send_frame(chunk, opcode=0, fin=False)
        except OSError:
            pass
        self.expect_error(ws, "MessageTooBig", 1009)

    def test_binary_message(self):
        ws = self.session()
        ws.send_frame(json.dumps({"type": "ping", "time": "2026-11-30T00:00:00Z"}),
                      opcode=2)
        self.expect_error(ws, "MalformedMessage", 1007)

    def test_unknown_type(self):
        ws = self.session()
        ws.send_json({"type": "teleport"})
        self.expect_error(ws, "UnknownMessageType", 4002)

    def test_wrong_field_types(self):
        ws = self.session()
        ws.send_json({"type": "report", "seq": "one", "time": 5,
                      "reportType": "snapshot", "body": []})
        self.expect_error(ws, "InvalidMessage", 1008)

    def test_nul_inside_string(self):
        ws = self.session()
        ws.send_frame('{"type":"ping","time":"2026-11-30T00:00:00Z\\u0000evil"}')
        self.expect_error(ws, "MalformedMessage", 1007)

    def test_report_before_hello(self):
        ws = self.session(after_hello=False)
        ws.send_json({"type": "ping", "time": "2026-11-30T00:00:00Z"})
        self.expect_error(ws, "ProtocolViolation", 1002)

    def test_unsupported_version(self):
        ws = self.session(after_hello=False)
        h = hello("evil")
        h["protocolVersion"] = 3
        ws.send_json(h)
        self.expect_error(ws, "UnsupportedVersion", 4001)


class AgentHostileTest(unittest.TestCase):
    """A controller that sends the agent a binary message (PROTOCOL.md
    "Transport": one JSON text message per WebSocket message)."""

    def test_binary_message(self):
        c, fake, ws, msg = agent_and_fake_controller(self)
        self.assertEqual(msg["type"], "hello")
        ws.send_json(welcome("target"))
        # A ping the agent answers as text, refused as binary: a
        # fragmented binary message, then the same as one frame.
        ping = json.dumps({"type": "ping", "time": "2026-11-30T00:00:00Z"})
        ws.send_json({"type": "ping", "time": "2026-11-30T00:00:01Z"})
        ws.send_frame(ping[:10], opcode=2, fin=False)
        ws.send_frame(ping[10:], opcode=0, fin=True)
        msgs, close = ws.recv_until_close()
        ws.close()
        pongs = [m for m in msgs if m.get("type") == "pong"]
        self.assertEqual([p["time"] for p in pongs], ["2026-11-30T00:00:01Z"],
                         msgs)
        errors = [m for m in msgs if m.get("type") == "error"]
        self.assertTrue(errors, f"no error message, got {msgs}")
        self.assertEqual(errors[-1]["code"], "MalformedMessage", errors)
        self.assertIn("binary", errors[-1]["message"])
        self.assertEqual(close, 1007)
        # The agent stays up, says why, and dials again.
        st = c.agent_state("target")["sync"]
        self.assertIn("binary message", st["lastError"], st)
        ws = fake.accept()
        kind, msg = ws.recv()
        self.assertEqual(msg["type"], "hello")
        ws.send_json(welcome("target"))
        ws.send_frame(ping, opcode=2)
        msgs, close = ws.recv_until_close()
        ws.close()
        self.assertFalse([m for m in msgs if m.get("type") == "pong"], msgs)
        self.assertEqual([m["code"] for m in msgs if m.get("type") == "error"],
                         ["MalformedMessage"], msgs)
        self.assertEqual(close, 1007)
        self.assertTrue(c.agents["target"].alive(), c.logs())

    def test_redirect_not_followed(self):
        """A controller URL that answers its upgrade with a redirect: the
        agent refuses it and dials the configured URL again; it never
        dials the place the redirect names."""
        c = Cluster(self, nodes=["target"])
        c.start_controller()
        c.stop_controller()
        fake = FakeController(c)
        elsewhere = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(elsewhere.close)
        elsewhere.settimeout(0.5)
        c.start_agent("target")
        fake.accept_answer(
            ("HTTP/1.1 302 Found\r\nLocation: https://127.0.0.1:%d/v1/sync\r\n"
             "Content-Length: 0\r\n\r\n" % elsewhere.getsockname()[1]).encode())
        ws = fake.accept()
        kind, msg = ws.recv()
        self.assertEqual(msg["type"], "hello")
        ws.close()
        with self.assertRaises(socket.timeout):
            elsewhere.accept()
        self.assertTrue(c.agents["target"].alive(), c.logs())


if __name__ == "__main__":
    main()
