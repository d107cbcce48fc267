"""Group commit of reports (docs/ARCHITECTURE.md, "Durability"): a batch the
controller committed but never acknowledged, because it died right after
the commit (the debug setting EDGESYNC_DEBUG_EXIT_AFTER_COMMIT, which makes
it exit there as a SIGKILL would), loses nothing that was acknowledged and
stores nothing twice once the agents send their reports again."""

import os
import unittest

from harness import EVERY_ROUND, Cluster, hello, main, wait_for

EXIT_ENV = "EDGESYNC_DEBUG_EXIT_AFTER_COMMIT"
EXIT_CODE = 86


def event(n):
    return {"type": "Normal", "reason": "Test", "message": f"e{n}",
            "involvedObject": {"kind": "CollectorConfig", "name": "a", "uid": "u"},
            "time": "2026-01-01T00:00:00Z"}


def reports(node):
    """seq 1 a snapshot, 2..4 patches on it, 5 an event."""
    out = [{"type": "report", "seq": 1, "time": "2026-01-01T00:00:00Z",
            "reportType": "snapshot",
            "body": {"kind": "Node", "metadata": {"name": node},
                     "status": {"usage": {"n": 1}}}}]
    for s in (2, 3, 4):
        out.append({"type": "report", "seq": s, "time": "2026-01-01T00:00:00Z",
                    "reportType": "patch", "baseSeq": s - 1,
                    "body": {"status": {"usage": {"n": s}}}})
    out.append({"type": "report", "seq": 5, "time": "2026-01-01T00:00:00Z",
                "reportType": "event", "body": event(5)})
    return out


def start_with_exit(c, after):
    os.environ[EXIT_ENV] = str(after)
    try:
        return c.start_controller(extra=["--log-level", "info"])
    finally:
        del os.environ[EXIT_ENV]


def session(c, node):
    ws = c.ws(*c.node_cert(node))
    ws.send_json(hello(node) | {"streamId": f"stream-{node}"})
    while True:
        m = ws.recv()
        if m[0] == "text" and m[1]["type"] == "welcome":
            return ws, m[1]["ackedSeq"]


class KilledBetweenCommitAndAckTest(unittest.TestCase):
    def test_fake_agents_resend(self):
        nodes = ["b1", "b2", "b3"]
        c = Cluster(self, nodes=nodes)
        start_with_exit(c, 1)
        socks = [session(c, n)[0] for n in nodes]
        # Three sessions send at once; the first batch that commits ends the
        # controller before any ack goes out (a batch on an idle store
        # commits at the next turn of its loop, so the later sends may find
        # it gone).
        for ws, n in zip(socks, nodes):
            try:
                for r in reports(n):
                    ws.send_json(r)
            except OSError:
                pass
        for ws in socks:
            msgs, _ = ws.recv_until_close()
            self.assertNotIn("ack", [m["type"] for m in msgs])
            ws.close()
        wait_for("controller exit", lambda: not c.controller.alive(), timeout=20)
        self.assertEqual(c.controller.p.returncode, EXIT_CODE)
        self.assertIn("exiting after a commit", c.controller.output())
        c.controller.log.close()  # it exited: nothing to stop

        # Restarted: every agent sends again all it holds unacknowledged.
        c.start_controller()
        committed = 0
        for n in nodes:
            ws, acked = session(c, n)
            committed += acked
            for r in reports(n):
                ws.send_json(r)
            last = 0
            while last < 5:
                m = ws.recv()
                self.assertEqual(m[0], "text", m)
                if m[1]["type"] == "ack":
                    last = m[1]["seq"]
                self.assertNotEqual(m[1]["type"], "resync")
            ws.close()
        # The killed batch was stored: the resent copies were duplicates.
        self.assertGreater(committed, 0)
        for n in nodes:
            seqs = [r["seq"] for r in c.reports(n)]
            self.assertEqual(seqs, [1, 2, 3, 4, 5], n)
            node = c.node(n)
            self.assertEqual(node["status"]["usage"]["n"], 4, n)
            self.assertEqual(node["status"]["sync"]["ackedSeq"], 5)
        st, text = c.admin("GET", "/metrics")
        dup = [ln for ln in text.splitlines()
               if ln.startswith("edgesync_controller_reports_duplicate_total")]
        self.assertEqual(dup and float(dup[0].split()[-1]), committed, dup)

    def test_real_agent_resends(self):
        c = Cluster(self)
        # The first batches hold the hello's snapshot; die on the third.
        start_with_exit(c, 3)
        agent = c.start_agent(extra=["--interval", "1"] + EVERY_ROUND)
        wait_for("controller exit", lambda: not c.controller.alive(), timeout=60)
        self.assertEqual(c.controller.p.returncode, EXIT_CODE)
        c.controller.log.close()  # it exited: nothing to stop
        c.start_controller()
        wait_for("agent reconnected, reports acknowledged past the kill",
                 lambda: (c.agent_state(c.nodes[0])["sync"]["lastAckedSeq"] or 0) >= 6,
                 timeout=90)
        agent.stop()
        items = c.reports(c.nodes[0])
        seqs = [r["seq"] for r in items]
        self.assertEqual(len(seqs), len(set(seqs)), seqs)
        self.assertEqual(seqs, sorted(seqs))
        acked = c.node()["status"]["sync"]["ackedSeq"]
        self.assertEqual(max(seqs), acked)
        # Nothing the agent made is missing: its sequence has no gap (it
        # dropped no event here).
        self.assertEqual(seqs, list(range(seqs[0], acked + 1)))


if __name__ == "__main__":
    main()
