"""State that must not be lost or shared. Offline operation: with the controller gone, a restarted agent applies
its cached desired state and queues reports; when the controller returns,
every queued report arrives once, with contiguous sequence numbers."""

import json
import socket
import subprocess
import threading
import time
import unittest

from harness import Cluster, free_port, hello, main, wait_for

CC = """apiVersion: edgesync.io/v1alpha1
kind: CollectorConfig
metadata: {name: offline}
spec: {intervalSeconds: 1, collectors: [cpu, memory]}
"""


def event_report(seq, node, reason="Fake"):
    t = "2026-01-01T00:00:00Z"
    return {"type": "report", "seq": seq, "time": t, "reportType": "event",
            "body": {"type": "Normal", "reason": reason, "message": "m",
                     "time": t, "involvedObject": {"kind": "Node", "name": node}}}


def session(c, node, stream=None, next_seq=1):
    """A raw agent connection that said hello (with streamId when given) and
    read the desired sync; returns (ws, welcome.ackedSeq)."""
    ws = c.ws(*c.node_cert(node))
    h = hello(node, next_seq=next_seq)
    if stream:
        h["streamId"] = stream
    ws.send_json(h)
    _, w = ws.recv()
    assert w["type"] == "welcome", w
    while True:
        _, m = ws.recv()
        if m["type"] == "desired" and not m.get("more"):
            return ws, w["ackedSeq"]


def send_events(ws, node, seqs, reason="Fake"):
    """Sends event reports; returns the last ack's seq."""
    for s in seqs:
        ws.send_json(event_report(s, node, reason))
    last = None
    while last != seqs[-1]:
        _, m = ws.recv()
        if m["type"] == "ack":
            last = m["seq"]
    return last


def obj_status(state, name):
    for d in state.get("desired", []):
        if d["metadata"]["name"] == name:
            return d
    return None


class OfflineTest(unittest.TestCase):
    def test_offline_restart_then_catch_up(self):
        c = Cluster(self)
        c.start_controller()
        agent = c.start_agent(extra=["--interval", "5"])
        try:
            c.ctl("apply", "-f", "-", stdin=CC)
            wait_for("the object applied and reported", lambda: any(
                o["name"] == "offline" and o.get("observedGeneration") == 1
                for o in (c.node() or {}).get("status", {}).get("objects", [])))
            acked_before = c.node()["status"]["sync"]["ackedSeq"]

            # The agent goes away: the controller can no longer vouch for
            # its conditions (the Kubernetes node lifecycle convention).
            agent.stop()
            ready = wait_for("Ready=Unknown at the controller", lambda: next(
                (x for x in c.node()["status"]["conditions"]
                 if x["type"] == "Ready" and x["status"] == "Unknown"), None))
            self.assertEqual(ready["reason"], "NodeStatusUnknown")
            self.assertIn("last reported Ready=True", ready["message"])
            self.assertIn("Unknown", c.ctl("get", "nodes").stdout)
            agent = c.start_agent(extra=["--interval", "5"])
            wait_for("Ready again", lambda: any(
                x["type"] == "Ready" and x["status"] == "True"
                for x in c.node()["status"]["conditions"]))

            # Controller down, then the agent restarts with no controller.
            c.stop_controller()
            agent.stop()
            c.start_agent()
            st = wait_for("agent state after restart", lambda: c.agent_state())
            self.assertFalse(st["sync"]["connected"])
            d = obj_status(st, "offline")
            self.assertIsNotNone(d, st)
            self.assertEqual(d["status"]["observedGeneration"], 1)
            applied = [x for x in d["status"]["conditions"] if x["type"] == "Applied"]
            self.assertEqual(applied[0]["status"], "True")
            # The cached CollectorConfig still rules: 1 s interval, two collectors.
            self.assertEqual(st["node"]["status"]["agent"]["intervalSeconds"], 1)

            # Reports queue up: the restart event and the (coalesced) state.
            queued = wait_for("reports queued offline", lambda: (
                lambda s: s if s["sync"]["outboxDepth"] >= 2 else None)(c.agent_state()),
                timeout=20)
            # Collection goes on at the cached 1 s interval while the state
            # report waiting in the outbox is replaced, not added to.
            t0 = queued["node"]["status"]["agent"]
            depth0 = queued["sync"]["outboxDepth"]
            time.sleep(3.5)
            later = c.agent_state()
            self.assertNotEqual(later["node"], queued["node"], "collection stopped")
            self.assertEqual(later["sync"]["outboxDepth"], depth0,
                             "state reports not coalesced while offline")
            self.assertEqual(t0["intervalSeconds"], 1)
            queued = later
            next_seq = queued["sync"]["nextSeq"]
            self.assertGreater(next_seq - 1, acked_before)

            # The controller returns: everything queued arrives exactly once.
            c.start_controller()
            wait_for("the queued reports acknowledged", lambda: c.agent_state()
                     ["sync"]["ackedSeq"] >= next_seq - 1, timeout=40)
            seqs = [r["seq"] for r in c.reports()]
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e
        self.assertEqual(len(seqs), len(set(seqs)), "a report stored twice")
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))),
                         "sequence numbers not contiguous")
        self.assertEqual(seqs[0], 1)
        for s in range(acked_before + 1, next_seq):
            self.assertIn(s, seqs)
        # The node's state was rebuilt from the snapshot sent after connect.
        self.assertTrue(c.node()["status"]["sync"]["connected"])


    def test_fresh_database_reports_arrive(self):
        """A new agent database starts a new report stream: the controller
        acknowledges none of it in advance (welcome ackedSeq 0), so the
        first reports of the new database (AgentStarted) are stored, and
        the old stream's reports stay in the history."""
        c = Cluster(self, nodes=["n1"])
        c.start_controller()
        ws, acked = session(c, "n1")
        self.assertEqual(acked, 0)
        self.assertEqual(send_events(ws, "n1", list(range(1, 36))), 35)
        ws.close()
        c.start_agent("n1")
        try:
            started = wait_for("AgentStarted stored", lambda: [
                r for r in c.reports("n1") if r["reportType"] == "event"
                and r["event"]["reason"] == "AgentStarted"])
            self.assertEqual(started[0]["seq"], 1)
            reasons = [r["event"]["reason"] for r in c.reports("n1")
                       if r["reportType"] == "event"]
            self.assertEqual(reasons.count("Fake"), 35)
            sync = c.node("n1")["status"]["sync"]
            self.assertTrue(sync["streamId"])
            self.assertLess(sync["ackedSeq"], 35)
            self.assertIn("new report stream", c.controller.output())
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e

    def test_previous_version_agent_still_syncs(self):
        """An agent without streamId keeps the one cursor per node; one that
        first names a stream adopts it with the cursor; another stream
        starts a new cursor, and duplicates are dropped per stream."""
        c = Cluster(self, nodes=["n1"])
        c.start_controller()
        ws, acked = session(c, "n1")
        self.assertEqual(acked, 0)
        send_events(ws, "n1", [1, 2, 3])
        ws.close()
        ws, acked = session(c, "n1", next_seq=4)
        self.assertEqual(acked, 3)
        send_events(ws, "n1", [3, 4])  # 3 again: a duplicate
        ws.close()
        self.assertEqual([r["seq"] for r in c.reports("n1")], [1, 2, 3, 4])
        self.assertIsNone(c.node("n1")["status"]["sync"]["streamId"])
        # The agent upgraded: its first stream id takes over the cursor.
        ws, acked = session(c, "n1", stream="s-one", next_seq=5)
        self.assertEqual(acked, 4)
        send_events(ws, "n1", [5])
        ws.close()
        # Its database made anew: another stream, a cursor from 0.
        ws, acked = session(c, "n1", stream="s-two", next_seq=1)
        self.assertEqual(acked, 0)
        send_events(ws, "n1", [1, 2])
        send_events(ws, "n1", [2])  # a duplicate within the new stream
        ws.close()
        self.assertEqual([r["seq"] for r in c.reports("n1")], [1, 2, 3, 4, 5, 1, 2])
        sync = c.node("n1")["status"]["sync"]
        self.assertEqual((sync["streamId"], sync["ackedSeq"]), ("s-two", 2))
        # An old agent again (no streamId): the node's current cursor.
        ws, acked = session(c, "n1", next_seq=3)
        self.assertEqual(acked, 2)
        ws.close()

    def test_one_agent_per_state_directory(self):
        c = Cluster(self)
        c.start_controller()
        first = c.start_agent()
        state_dir = first.argv[first.argv.index("--state-dir") + 1]
        argv = list(first.argv)
        argv[argv.index("--http-listen") + 1] = f"127.0.0.1:{free_port()}"
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"{state_dir}/agent.lock", r.stderr)
        self.assertIn(f"pid {first.p.pid}", r.stderr)
        self.assertTrue(first.alive())
        # The controller's state directory is guarded the same way.
        r = subprocess.run(list(c.controller.argv), capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("controller.lock", r.stderr)

    def test_status_command(self):
        """`edgesync-agent status` reads the local endpoint; a server that
        answers 500 on a kept-alive connection gets its status named at
        once, not a read timeout."""
        c = Cluster(self, nodes=["n1"])
        c.start_controller()
        agent = c.start_agent(node="n1")
        status = [agent.argv[0], "status", "--http-listen"]
        r = subprocess.run(status + [f"127.0.0.1:{c.agent_ports['n1']}"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^NODE +n1\n")
        r = subprocess.run(status + [f"127.0.0.1:{c.agent_ports['n1']}", "-o", "json"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["node"]["metadata"]["name"], "n1")
        self.assertIn("SYNC         ready (connected)", subprocess.run(
            status + [f"127.0.0.1:{c.agent_ports['n1']}"], capture_output=True,
            text=True, timeout=30).stdout)
        self.assertNotIn("nextDialInMs", c.agent_state("n1")["sync"])

        # The controller gone, the agent waits to dial again: state idle,
        # and both the JSON and the table say it is not connected and when
        # the next dial is due.
        c.stop_controller()
        st = wait_for("the agent waiting to redial",
                      lambda: (lambda s: s if "nextDialInMs" in s["sync"] else None)(
                          c.agent_state("n1")), timeout=30)
        self.assertEqual(st["sync"]["state"], "idle")
        self.assertGreaterEqual(st["sync"]["nextDialInMs"], 0)
        self.assertLessEqual(st["sync"]["nextDialInMs"], 60000)
        out = ""
        for _ in range(50):  # between two dials (a dial is a few ms)
            out = subprocess.run(status + [f"127.0.0.1:{c.agent_ports['n1']}"],
                                 capture_output=True, text=True, timeout=30).stdout
            if "next dial in" in out:
                break
            time.sleep(0.1)
        self.assertRegex(out, r"SYNC +idle \(not connected: next dial in \d+\.\d s\)")

        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        self.addCleanup(srv.close)
        conns = []

        def answer_500():
            conn, _ = srv.accept()
            conns.append(conn)
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\n"
                         b"Content-Length: 5\r\n\r\noops\n")
        t = threading.Thread(target=answer_500, daemon=True)
        t.start()
        began = time.monotonic()
        r = subprocess.run(status + [f"127.0.0.1:{srv.getsockname()[1]}"],
                           capture_output=True, text=True, timeout=30)
        t.join(10)
        for conn in conns:
            conn.close()
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("the agent answered HTTP 500", r.stderr)
        self.assertLess(time.monotonic() - began, 4.0)
        r = subprocess.run(status + ["localhost:9477"], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("http-listen", r.stderr)


if __name__ == "__main__":
    main()
