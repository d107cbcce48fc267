"""The newer session of a node wins (store = etcd; ha_util: a one-member
etcd of the test's own on loopback, two controllers on it; skipped when
etcd is not installed):

- a node streaming reports to controller A opens a session on B while A
  is alive: B takes the session over at once, A closes its session with
  4000 "replaced", A acknowledged nothing past the cursor B took over,
  and once the node sent the rest to B every seq is stored exactly once
  across A's and B's histories (A kept every row it had committed to
  etcd, even those whose cursor write was in flight when its session was
  released, and dropped the rest);
- a real agent on A whose node gets a newer session on B: A closes it,
  the agent warns that another agent may run with its identity and
  waits 30 to 60 s before it dials again (it does not take the node
  back at once), its reports contiguous and each stored exactly once;
- two agents with one node's identity, each its own report stream, take
  the node from each other on two controllers, again and again: each
  welcome's ackedSeq is its stream's last acknowledged report, and no
  acknowledged report of either stream is dropped from any controller's
  history (each stream's rows contiguous, each stored once), also when a
  stream comes back at the controller that did not serve it before;
- SIGTERM of a controller: it revokes its etcd lease and closes its
  agents with 1001, and they are served by the other controller within
  a few seconds (far below the 10 s lease), the session keys naming it.
"""

import json
import os
import re
import signal
import time
import unittest

from ha_util import Controllers, EtcdCluster, snapshot
from harness import EVERY_ROUND, WSClient, hello, main, wait_for

REPLACED = 'msg="connection replaced by a newer session on another controller"'
IDENTITY = "another agent may be running with this node's identity"


class TakeoverTest(unittest.TestCase):
    def setUp(self):
        self.etcd = EtcdCluster(self, members=1)
        self.etcd.start()
        self.h = Controllers(self, self.etcd, n=2, nodes=["node-0", "node-1"])
        self.h.start()

    def session(self, i, node, stream):
        """A raw session of node at controller i: (ws, welcome.ackedSeq)."""
        ws = WSClient("127.0.0.1", self.h.ports[i], os.path.join(self.h.c.dev, "ca.crt"),
                      *self.h.c.node_cert(node))
        ws.send_json(hello(node) | {"streamId": stream})
        while True:
            t, m = ws.recv()[:2]
            self.assertEqual(t, "text", m)
            if m["type"] == "welcome":
                return ws, m["ackedSeq"]
            self.assertNotEqual(m["type"], "error", m)

    @staticmethod
    def until_close(ws, timeout=20):
        """Reads until the close: ([acked seqs], close code, reason)."""
        ws.s.settimeout(timeout)
        acks = []
        try:
            while True:
                m = ws.recv()
                if m[0] == "close":
                    return acks, m[1], m[2]
                if m[1].get("type") == "ack":
                    acks.append(m[1]["seq"])
        except (EOFError, OSError):
            return acks, None, None

    @staticmethod
    def acked(ws, seq, timeout=30):
        ws.s.settimeout(timeout)
        while True:
            m = ws.recv()
            if m[0] == "close":
                return False
            if m[1].get("type") == "ack" and m[1]["seq"] >= seq:
                return True

    def rows(self, i, node):
        """[(streamId, seq)] of node's reports stored at controller i."""
        st, body = self.h.api(i, "GET", f"/nodes/{node}/reports?limit=10000")
        if st == 404:
            return []
        self.assertEqual(st, 200, body)
        items = body["items"] if isinstance(body, dict) else body
        return [(r.get("streamId"), r["seq"]) for r in items]

    def sessions(self):
        """{node: controller id} of the session keys on etcd."""
        out = json.loads(self.etcd.etcdctl("get", "--prefix", "/ha/sessions/", "-w",
                                           "json"))
        import base64
        return {base64.b64decode(kv["key"]).decode().rsplit("/", 1)[1]:
                base64.b64decode(kv["value"]).decode() for kv in out.get("kvs") or []}

    def ctl_id(self, i):
        """Controller i's id on etcd (its log of the lease)."""
        for line in self.h.procs[i].output().splitlines():
            if "etcd lease for node sessions" in line:
                return re.search(r'controller=("?)([^" ]+)\1', line).group(2)
        raise AssertionError(f"controller {i} logged no lease")

    def test_newer_session_elsewhere_under_reports(self):
        node, total = "node-0", 800
        ws_a, acked = self.session(0, node, "s0")
        self.assertEqual(acked, 0)
        for seq in range(1, 51):
            ws_a.send_json(snapshot(node, seq))
        self.assertTrue(self.acked(ws_a, 50))
        # Reports in flight at A (batches committing, cursor writes on
        # etcd) when the node's newer session opens on B.
        for seq in range(51, total + 1):
            ws_a.send_json(snapshot(node, seq))
        ws_b, took = self.session(1, node, "s0")
        acks_a, code, reason = self.until_close(ws_a)
        ws_a.close()
        self.assertEqual((code, reason), (4000, "replaced"))
        top_a = max([50] + acks_a)
        self.assertGreaterEqual(took, 50)
        self.assertLessEqual(top_a, took,
                             f"A acknowledged {top_a}, B took the node over at {took}")
        for seq in range(took + 1, total + 1):
            ws_b.send_json(snapshot(node, seq))
        if took < total:
            self.assertTrue(self.acked(ws_b, total))
        self.assertEqual(self.sessions().get(node), self.ctl_id(1))
        wait_for("A to drop its rows above the take-over",
                 lambda: all(s <= took for _, s in self.rows(0, node)), timeout=20)
        a, b = self.rows(0, node), self.rows(1, node)
        both = sorted(s for _, s in a + b)
        self.assertEqual(both, list(range(1, total + 1)),
                         f"A {sorted(s for _, s in a)[-5:]} B {sorted(s for _, s in b)[:5]}")
        self.assertEqual({st for st, _ in a + b}, {"s0"})
        self.assertEqual(max(s for _, s in a), took, "A lost rows it had committed")
        self.assertIn(REPLACED, self.h.procs[0].output())
        halves = "the key first" in self.h.procs[1].output()
        print(f"{node}: A acknowledged up to {top_a}, B took over at {took}"
              f"{' in two halves' if halves else ''}; stored A {len(a)} B {len(b)}")
        ws_b.close()

    def test_agent_replaced_by_newer_session(self):
        node = "node-1"
        agent = self.h.start_agent(node, [0, 1], ["--interval", "1"] + EVERY_ROUND)
        wait_for(f"{node} reporting at controller 0",
                 lambda: len(self.rows(0, node)) >= 4, timeout=60)
        m, raw = self.h.hello_at(1, node, keep=True)
        try:
            self.assertEqual(m["type"], "welcome", m)
            wait_for("A to close the agent's session",
                     lambda: REPLACED in self.h.procs[0].output(), timeout=20)
            # This agent holds one session, so a newer one is another
            # agent's with its identity: it says so and waits 30 to 60 s
            # instead of taking the node back at once.
            wait_for("the agent's warning", lambda: IDENTITY in agent.output(),
                     timeout=20)
            delay = [int(d) for d in re.findall(
                r'msg="disconnected, redialling".* delay_ms=(\d+)', agent.output())]
            self.assertTrue(delay and 30000 <= delay[-1] <= 60000, delay)
            end = time.monotonic() + 8
            while time.monotonic() < end:
                raw.s.settimeout(max(0.1, end - time.monotonic()))
                try:
                    got = raw.recv()
                except TimeoutError:
                    break
                self.assertNotEqual(got[0], "close", f"the agent took the node back: {got}")
            self.assertFalse(self.h.c.agent_state(node)["sync"]["connected"])
        finally:
            raw.close()
        agent.stop()
        a, b = self.rows(0, node), self.rows(1, node)
        streams = {st for st, _ in a + b}
        self.assertEqual(len(streams), 1, streams)
        nums = sorted(s for _, s in a + b)
        self.assertEqual(len(nums), len(set(nums)),
                         f"a seq stored twice: A {sorted(s for _, s in a)}"
                         f" B {sorted(s for _, s in b)}")
        self.assertEqual(nums, list(range(nums[0], nums[-1] + 1)),
                         f"a gap: A {sorted(s for _, s in a)} B {sorted(s for _, s in b)}")
        print(f"{node}: replaced by a newer session of its identity; the agent waits"
              f" {delay[-1] / 1000:.1f} s; {len(nums)} reports (A {len(a)}, B {len(b)})")

    def test_two_streams_one_identity(self):
        node = "node-0"
        top = {"sA": 0, "sB": 0}
        # (controller, stream): the two agents switch the node back and
        # forth, then stream sA turns up at B, which never served it.
        flips = [(0, "sA"), (1, "sB"), (0, "sA"), (1, "sB"), (0, "sA"), (1, "sA"),
                 (0, "sB")]
        prev = None
        for i, stream in flips:
            ws, acked = self.session(i, node, stream)
            self.assertEqual(acked, top[stream],
                             f"{stream} at controller {i}: welcome.ackedSeq {acked},"
                             f" its last acknowledged report {top[stream]}")
            if prev is not None:
                _, code, reason = self.until_close(prev)
                prev.close()
                self.assertEqual((code, reason), (4000, "replaced"))
            for seq in range(top[stream] + 1, top[stream] + 21):
                ws.send_json(snapshot(node, seq))
            self.assertTrue(self.acked(ws, top[stream] + 20))
            top[stream] += 20
            prev = ws
        prev.close()
        rows = self.rows(0, node) + self.rows(1, node)
        for stream, n in top.items():
            got = sorted(s for st, s in rows if st == stream)
            self.assertEqual(got, list(range(1, n + 1)),
                             f"stream {stream}: rows {got} across both controllers")
        self.assertEqual({st for st, _ in rows}, set(top))
        print(f"{node}: {len(flips)} take-overs between two streams; every"
              f" acknowledged report kept ({top})")

    def test_sigterm_moves_agents_at_once(self):
        nodes = ["node-0", "node-1"]
        for node in nodes:
            self.h.start_agent(node, [0, 1], ["--interval", "1"] + EVERY_ROUND)
        for node in nodes:
            wait_for(f"{node} at controller 0",
                     lambda node=node: self.h.sync(0, node).get("ackedSeq", 0) > 0,
                     timeout=60)
        t0 = time.monotonic()
        self.h.procs[0].p.send_signal(signal.SIGTERM)
        wait_for("both nodes at controller 1",
                 lambda: all(self.h.sync(1, n).get("connected") for n in nodes),
                 timeout=30, interval=0.1)
        moved = time.monotonic() - t0
        self.assertEqual(self.h.procs[0].p.wait(20), 0, self.h.procs[0].output()[-3000:])
        out = self.h.procs[0].output()
        self.assertIn("etcd lease revoked", out)
        self.assertIn('leaseRevoked=true', out)
        self.assertLess(moved, 5, f"the agents moved after {moved:.1f} s")
        ids = self.sessions()
        self.assertEqual(sorted(ids), nodes, ids)
        self.assertEqual(set(ids.values()), {self.ctl_id(1)}, ids)
        for node in nodes:
            before = self.h.sync(1, node).get("ackedSeq", 0)
            wait_for(f"{node}'s reports acknowledged at controller 1",
                     lambda node=node, before=before:
                     self.h.sync(1, node).get("ackedSeq", 0) > before, timeout=30)
        print(f"SIGTERM of controller 0: its agents served by controller 1 after"
              f" {moved:.2f} s (lease TTL 10 s)")


if __name__ == "__main__":
    main()
