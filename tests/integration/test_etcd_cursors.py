"""Report cursors on etcd (store = etcd; docs/ARCHITECTURE.md, "The
store"): two controllers on one etcd of the test's own (loopback, mutual
TLS, skipped when etcd is not installed).

- A node's reports stored on A, then A killed (SIGKILL) while the agent
  reports every second: the agent moves to B once A's lease expired, and
  every seq is stored exactly once across A's and B's histories (A,
  restarted, drops its provisional rows), contiguous, and etcd's record of
  the node never moved its cursor backwards (its whole history, read with
  a watch from revision 1). The etcd txns per stored report are printed.
- Two controllers store the same seq of one node (A's lease revoked, the
  node's session taken on B): exactly one of them acknowledges and keeps
  it.
- A stopped (SIGTERM) while a node sends reports as fast as it can: every
  seq A acknowledged is in etcd's cursor of the node (A waits for its
  last batch's cursor or does not acknowledge it), and once the node moved
  to B (sending again what A did not acknowledge) and A came back, every
  acknowledged seq is stored exactly once across A and B.
- A's lease revoked: A puts its sessions back under a new lease; the one
  B took meanwhile is closed on A (4000, replaced), the other one goes on.
"""

import json
import os
import signal
import subprocess
import time
import unittest

from etcd_util import Etcd
from ha_util import snapshot
from harness import (EVERY_ROUND, Cluster, WSClient, free_port, hello, main,
                     wait_for)

PREFIX = "/it/"


def cc(name, interval):
    return f"""apiVersion: edgesync.io/v1alpha1
kind: CollectorConfig
metadata: {{name: {name}}}
spec: {{intervalSeconds: {interval}, collectors: [cpu, memory]}}
"""


class EtcdCursorsTest(unittest.TestCase):
    def setUp(self):
        self.etcd = Etcd(self)
        self.etcd.start()
        self.c = Cluster(self, nodes=["node-a", "r1", "r2"])
        self.c.start_controller(extra=self.etcd_flags())
        self.b_port, self.b_admin = free_port(), free_port()
        self.b = self.c.start_peer_controller("controller-b", self.b_port, self.b_admin,
                                              self.etcd_flags())

    def etcd_flags(self):
        return ["--store", "etcd", "--etcd-endpoints", self.etcd.endpoint(),
                "--etcd-cert", self.etcd.cert, "--etcd-key", self.etcd.key,
                "--etcd-ca", self.etcd.ca, "--etcd-prefix", PREFIX]

    def etcdctl(self, *args, timeout=30, check=True):
        r = subprocess.run(["etcdctl", "--endpoints", self.etcd.endpoint(),
                            "--cacert", self.etcd.ca, "--cert", self.etcd.cert,
                            "--key", self.etcd.key] + list(args),
                           capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, ETCDCTL_API="3"))
        if check and r.returncode != 0:
            raise AssertionError(f"etcdctl {args}: {r.stderr}")
        return r.stdout

    def revision(self):
        st = json.loads(self.etcdctl("endpoint", "status", "-w", "json"))
        return st[0]["Status"]["header"]["revision"]

    def record(self, node):
        out = json.loads(self.etcdctl("get", PREFIX + "nodes/" + node, "-w", "json"))
        kvs = out.get("kvs") or []
        if not kvs:
            return None
        import base64
        return json.loads(base64.b64decode(kvs[0]["value"]))

    def history(self, node):
        """Every value the node's record had, oldest first, with its
        mod_revision: a watch from revision 1, stopped after a while."""
        p = subprocess.Popen(["etcdctl", "--endpoints", self.etcd.endpoint(),
                              "--cacert", self.etcd.ca, "--cert", self.etcd.cert,
                              "--key", self.etcd.key, "watch", "--rev", "1",
                              "-w", "json", PREFIX + "nodes/" + node],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, ETCDCTL_API="3"))
        time.sleep(3)
        p.terminate()
        out, _ = p.communicate(timeout=10)
        import base64
        vals = []
        dec = json.JSONDecoder()
        i = 0
        out = out.strip()
        while i < len(out):
            while i < len(out) and out[i].isspace():
                i += 1
            if i >= len(out):
                break
            obj, i = dec.raw_decode(out, i)
            for ev in obj.get("Events") or []:
                kv = ev["kv"]
                if ev.get("type", "PUT") == "PUT" and kv.get("value"):
                    vals.append((kv["mod_revision"],
                                 json.loads(base64.b64decode(kv["value"]))))
        return vals

    def reports(self, admin_port, node):
        from harness import API, https_json
        st, body = https_json("localhost", admin_port, self.c.admin_ssl(), "GET",
                              f"{API}/nodes/{node}/reports?limit=10000")
        if st == 404:
            return []
        self.assertEqual(st, 200, body)
        return body["items"] if isinstance(body, dict) else body

    def session(self, port, node, stream):
        ws = WSClient("127.0.0.1", port, os.path.join(self.c.dev, "ca.crt"),
                      *self.c.node_cert(node))
        ws.send_json(hello(node) | {"streamId": stream})
        while True:
            t, m = ws.recv()
            self.assertEqual(t, "text", m)
            if m["type"] == "welcome":
                return ws, m["ackedSeq"]
            self.assertNotEqual(m["type"], "error", m)

    def acked(self, ws, seq, timeout=15):
        """Reads until the ack of seq (True) or a close/error (False)."""
        ws.s.settimeout(timeout)
        try:
            while True:
                t, m = ws.recv()[:2]
                if t == "close":
                    return False
                if m["type"] == "ack" and m["seq"] >= seq:
                    return True
                if m["type"] == "error":
                    return False
        except (EOFError, OSError):
            return False

    def test_node_moves_after_sigkill(self):
        self.c.ctl("apply", "-f", "-", stdin=cc("fast", 1))
        self.c.start_agent("node-a", extra=[
            "--controller-url", f"wss://127.0.0.1:{self.c.port}",
            "--controller-url", f"wss://127.0.0.1:{self.b_port}",
            "--interval", "1"] + EVERY_ROUND)
        wait_for("node-a's reports on A",
                 lambda: len(self.reports(self.c.admin_port, "node-a")) >= 8, timeout=60)
        rev0, n0 = self.revision(), len(self.reports(self.c.admin_port, "node-a"))
        time.sleep(4)
        rev1, n1 = self.revision(), len(self.reports(self.c.admin_port, "node-a"))
        print(f"steady on A: {n1 - n0} reports stored, {rev1 - rev0} etcd write txns"
              f" ({(rev1 - rev0) / max(1, n1 - n0):.2f} per report)")
        self.c.controller.stop(signal.SIGKILL)
        wait_for("node-a's reports on B",
                 lambda: len(self.reports(self.b_admin, "node-a")) >= 5, timeout=60,
                 interval=1)
        rec = self.record("node-a")
        self.assertEqual(rec["controller"].split("/")[0] != "", True)
        # A comes back (without the node): it drops what it stored past
        # its last commit to etcd.
        self.c.start_controller(extra=self.etcd_flags())
        wait_for("A to read etcd's node records", lambda: "etcd lease for node sessions"
                 in self.c.controller.output(), timeout=30)
        time.sleep(2)
        self.c.agents["node-a"].stop()
        a = self.reports(self.c.admin_port, "node-a")
        b = self.reports(self.b_admin, "node-a")
        seqs = sorted([(r.get("streamId"), r["seq"]) for r in a + b])
        self.assertEqual(len(seqs), len(set(seqs)),
                         f"a seq stored twice: A {[r['seq'] for r in a]}"
                         f" B {[r['seq'] for r in b]}")
        self.assertEqual(len({s for s, _ in seqs}), 1, seqs)
        nums = [n for _, n in seqs]
        self.assertEqual(nums, list(range(nums[0], nums[-1] + 1)),
                         f"a gap: A {[r['seq'] for r in a]} B {[r['seq'] for r in b]}")
        self.assertTrue(a and b)
        self.assertLess(max(r["seq"] for r in a), min(r["seq"] for r in b))
        hist = self.history("node-a")
        cursor = [v["seq"] for _, v in hist]
        self.assertGreater(len(cursor), 5)
        self.assertEqual(cursor, sorted(cursor), "the cursor moved backwards")
        self.assertEqual(cursor[-1], nums[-1])
        owners = [v["controller"] for _, v in hist]
        self.assertEqual(len([i for i in range(1, len(owners))
                              if owners[i] != owners[i - 1]]), 1, owners)
        print(f"node-a: {len(nums)} reports stored (A {len(a)}, B {len(b)}),"
              f" {len(hist)} cursor writes on etcd")

    def test_one_seq_two_controllers(self):
        """r1 served by A; A's lease revoked, so its session key is gone and
        B takes r1 too: both get seq 2, one of them keeps it."""
        ws_a, acked = self.session(self.c.port, "r1", "s-r1")
        self.assertEqual(acked, 0)
        ws_a.send_json(snapshot("r1", 1))
        self.assertTrue(self.acked(ws_a, 1))
        held = json.loads(self.etcdctl("get", PREFIX + "sessions/r1", "-w", "json"))
        self.etcdctl("lease", "revoke", format(held["kvs"][0]["lease"], "x"))
        ws_b, acked_b = self.session(self.b_port, "r1", "s-r1")
        self.assertEqual(acked_b, 1)
        ws_b.send_json(snapshot("r1", 2))
        ws_a.send_json(snapshot("r1", 2))
        got_b, got_a = self.acked(ws_b, 2), self.acked(ws_a, 2)
        # Exactly one wins the compare-and-swap (either may be first).
        self.assertEqual(sorted((got_a, got_b)), [False, True])
        win, lose = ((self.c.admin_port, self.b_admin) if got_a else
                     (self.b_admin, self.c.admin_port))
        rows = lambda port: [r["seq"] for r in self.reports(port, "r1")]
        wait_for("the loser to drop its provisional row", lambda: 2 not in rows(lose))
        self.assertIn(2, rows(win))
        self.assertEqual(self.record("r1")["seq"], 2)
        print(f"seq 2 of r1: stored by {'A' if got_a else 'B'} only")
        ws_a.close()
        ws_b.close()

    def test_sigterm_acks_only_what_etcd_committed(self):
        ws, acked = self.session(self.c.port, "r1", "s-r1")
        self.assertEqual(acked, 0)
        total, sent = 600, 50
        for seq in range(1, sent + 1):
            ws.send_json(snapshot("r1", seq))
        self.assertTrue(self.acked(ws, sent))
        for seq in range(sent + 1, total + 1):
            if seq == total // 3:
                self.c.controller.p.send_signal(signal.SIGTERM)
            try:
                ws.send_json(snapshot("r1", seq))
                sent = seq
            except OSError:
                break
        ws.s.settimeout(20)
        msgs, _ = ws.recv_until_close(limit=10 * total)
        acks = list(range(1, 51)) + [m["seq"] for m in msgs if m.get("type") == "ack"]
        ws.close()
        self.assertEqual(self.c.controller.p.wait(20), 0,
                         self.c.controller.output()[-3000:])
        self.c.controller.stop()
        top = max(acks)
        rec = self.record("r1")
        self.assertIsNotNone(rec)
        self.assertGreaterEqual(rec["seq"], top,
                                f"A acknowledged seq {top}, etcd's cursor is {rec['seq']}")
        # The node moves to B once A's session lease expired, sending what
        # A did not acknowledge.
        got = {}

        def on_b():
            try:
                got["ws"], got["acked"] = self.session(self.b_port, "r1", "s-r1")
                return True
            except (AssertionError, EOFError, OSError):
                return False
        wait_for("r1's session on B", on_b, timeout=40, interval=1)
        ws_b = got["ws"]
        self.assertGreaterEqual(got["acked"], top)
        for seq in range(top + 1, sent + 1):
            ws_b.send_json(snapshot("r1", seq))
        if sent > top:
            self.assertTrue(self.acked(ws_b, sent, timeout=30))
        ws_b.close()
        self.c.start_controller(extra=self.etcd_flags())
        wait_for("A to read etcd's node records", lambda: "etcd lease for node sessions"
                 in self.c.controller.output(), timeout=30)
        time.sleep(2)
        a = [r["seq"] for r in self.reports(self.c.admin_port, "r1")]
        b = [r["seq"] for r in self.reports(self.b_admin, "r1")]
        both = sorted(a + b)
        for seq in set(acks):
            self.assertEqual(both.count(seq), 1,
                             f"acknowledged seq {seq}: A {sorted(a)[-5:]} B {sorted(b)[:5]}")
        print(f"r1: {sent} sent, A acknowledged up to {top} (cursor {rec['seq']}),"
              f" stored A {len(a)} B {len(b)}")

    def test_lost_lease_puts_sessions_back(self):
        ws1, _ = self.session(self.c.port, "r1", "s-r1")
        ws2, _ = self.session(self.c.port, "r2", "s-r2")
        ws1.send_json(snapshot("r1", 1))
        ws2.send_json(snapshot("r2", 1))
        self.assertTrue(self.acked(ws1, 1))
        self.assertTrue(self.acked(ws2, 1))
        held = self.etcdctl("get", PREFIX + "sessions/r2", "-w", "json")
        old_lease = json.loads(held)["kvs"][0]["lease"]
        self.etcdctl("lease", "revoke", format(old_lease, "x"))
        ws_b, _ = self.session(self.b_port, "r1", "s-r1")
        # A notices at its next keepalive, takes a new lease and puts r2's
        # session back; r1's is B's now (the newer session): closed on A,
        # replaced.
        msgs, code = ws1.recv_until_close()
        self.assertEqual(code, 4000, msgs)

        def r2_back():
            out = json.loads(self.etcdctl("get", PREFIX + "sessions/r2", "-w", "json"))
            kvs = out.get("kvs") or []
            return kvs and kvs[0]["lease"] != old_lease
        wait_for("r2's session under A's new lease", r2_back, timeout=30)
        self.assertIn("the controller's etcd lease is lost", self.c.controller.output())
        ws2.send_json(snapshot("r2", 2))
        self.assertTrue(self.acked(ws2, 2))
        ws2.close()
        ws_b.close()


if __name__ == "__main__":
    main()
