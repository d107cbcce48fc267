"""The multi-controller tier when etcd or a controller goes away
(ha_util: a one-member etcd of the test's own on loopback, controllers
with store = etcd on it, real agents; skipped when etcd is not installed):

- etcd stopped entirely: the controllers keep their agent sessions,
  answer an apply, a delete or a node GET with 503 naming etcd, hold and
  push nothing they could not store, never acknowledge a report they do
  not hold; once etcd is back, writes work again and reach the agents,
  reports are acknowledged again, the agents' outboxes drain and a node
  is still served by one controller only; every session key is moved
  under its controller's new lease before the old one, which the
  restarted etcd brought back, expires;
- one node (one certificate) dialling two controllers at once ends with
  exactly one session, the newer one (the older is closed with 4000
  "replaced"): raw hellos at the same moment, then two agent processes of
  that node, each on another controller;
- an agent offline across the SIGKILL of the controller it used, a
  delete and recreate of one of its objects (a new uid), the delete of
  another and an etcd compaction to the current revision converges, on
  the other controller, to exactly the current set; then across a second
  failover to the first controller, which had to list etcd again."""

import base64
import json
import os
import re
import threading
import time
import unittest

from ha_util import Controllers, EtcdCluster, cc, stored_seq
from harness import EVERY_ROUND, Proc, free_port, main, wait_for

DISCONNECTED = 'msg="disconnected, redialling"'
REPLACED = 'msg="connection replaced by a newer session on another controller"'


class OutageTest(unittest.TestCase):
    def setUp(self):
        self.etcd = EtcdCluster(self, members=1)
        self.etcd.start()

    def controllers(self, n, nodes):
        self.h = Controllers(self, self.etcd, n=n, nodes=nodes)
        self.h.start()
        return self.h

    def obj(self, i, name):
        return self.h.get(i, "collectorconfigs", name)

    def want_of(self, i, *names):
        """{name: (uid, rv)} of names as controller i holds them."""
        out = {}
        for n in names:
            o = self.obj(i, n)
            self.assertIsNotNone(o, f"{n} at controller {i}")
            out[n] = (o["metadata"]["uid"], o["metadata"]["resourceVersion"])
        return out

    def put(self, i, name, interval):
        body = {"apiVersion": "edgesync.io/v1alpha1", "kind": "CollectorConfig",
                "metadata": {"name": name},
                "spec": {"intervalSeconds": interval, "collectors": ["cpu", "memory"]}}
        return self.h.api(i, "PUT", f"/collectorconfigs/{name}", body)

    # -- etcd stopped entirely ---------------------------------------------

    def test_etcd_stopped_then_back(self):
        h = self.controllers(2, ["node-0", "node-1"])
        nodes = ["node-0", "node-1"]
        for i, node in enumerate(nodes):
            h.start_agent(node, [i], ["--interval", "1"] + EVERY_ROUND)
        h.ctl(0, "apply", "-f", "-", stdin=cc("before", 5))
        want = self.want_of(0, "before")
        for node in nodes:
            h.wait_held(node, want, f"the first object at {node}")

        self.etcd.stop()
        down_at = time.monotonic()
        # Writes: 503 naming etcd, nothing stored anywhere.
        st, body = self.put(0, "during", 7)
        self.assertEqual(st, 503, body)
        self.assertEqual(body.get("reason"), "ServiceUnavailable", body)
        self.assertIn("etcd", body.get("message", ""), body)
        st, body = h.api(1, "DELETE", "/collectorconfigs/before")
        self.assertEqual(st, 503, body)
        self.assertIn("etcd", body.get("message", ""), body)
        r = h.ctl(1, "apply", "-f", "-", stdin=cc("during", 7), check=False)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("etcd", r.stderr)
        for i in range(2):
            self.assertIsNone(self.obj(i, "during"), f"controller {i}")
            self.assertIsNotNone(self.obj(i, "before"), f"controller {i}")

        # Past the session lease (10 s): sessions stay, reports are never
        # acknowledged beyond what the controller holds.
        while time.monotonic() < down_at + 15:
            for i, node in enumerate(nodes):
                ag = h.c.agent_state(node)
                self.assertTrue(ag["sync"]["connected"], (node, ag["sync"]))
                # The node view needs etcd (who serves the node): 503
                # naming it; the session and the history are the
                # controller's own.
                st, body = h.api(i, "GET", f"/nodes/{node}")
                self.assertEqual((st, body.get("reason")), (503, "ServiceUnavailable"), body)
                self.assertIn("etcd", body.get("message", ""), body)
                self.assertEqual(h.metrics(i).get("edgesync_controller_connected_agents"), 1,
                                 f"controller {i}")
                self.assertLessEqual(ag["sync"]["ackedSeq"], stored_seq(h, i, node), node)
                self.assertEqual(h.held(node), want, node)
            time.sleep(1)

        # etcd is back. Restarted from its data, it brings the controllers'
        # lost leases back with a fresh TTL (etcd extends every lease when a
        # leader is elected); a session key left on one would vanish when it
        # expires, about 10 s from now. Each key moves under its
        # controller's new lease first.
        self.etcd.start()
        back_at = time.monotonic()
        wait_for("every session key under its controller's new lease",
                 lambda: self.session_leases() == {node: self.latest_lease(i)
                                                   for i, node in enumerate(nodes)},
                 timeout=max(0.5, back_at + 8 - time.monotonic()), interval=0.3)
        # Writes work again and reach the agents.
        back = {node: h.c.agent_state(node)["sync"]["nextSeq"] for node in nodes}
        wait_for("a write at controller 1 once etcd is back",
                 lambda: self.put(1, "after", 9)[0] in (200, 201), timeout=60, interval=1)
        h.ctl(0, "delete", "collectorconfig", "before")
        want = self.want_of(1, "after")
        for node in nodes:
            h.wait_held(node, want, f"the writes after etcd came back at {node}")
        for i in range(2):
            wait_for(f"controller {i}'s mirror", lambda i=i: self.obj(i, "before") is None
                     and self.obj(i, "after") is not None)
        # Reports: acknowledged past the return, the outbox drained.
        for i, node in enumerate(nodes):
            wait_for(f"{node}'s reports acknowledged after etcd came back",
                     lambda node=node: h.c.agent_state(node)["sync"]["ackedSeq"]
                     >= back[node], timeout=60)
            wait_for(f"{node}'s outbox drained",
                     lambda node=node: h.c.agent_state(node)["sync"]["outboxDepth"] <= 1,
                     timeout=60)
            self.assertLessEqual(h.c.agent_state(node)["sync"]["ackedSeq"],
                                 h.sync(i, node)["ackedSeq"])
            self.assertNotIn(DISCONNECTED, h.c.agents[node].output(), node)
        # Still one controller per node, and one session key for each.
        for i, node in enumerate(nodes):
            self.assertEqual(self.served(node), ([i], 2), node)
        keys = self.etcd.etcdctl("get", "--prefix", "/ha/sessions/", "--keys-only")
        self.assertEqual(sorted(k for k in keys.split() if k),
                         ["/ha/sessions/node-0", "/ha/sessions/node-1"])

    def session_leases(self):
        """{node: lease ID} of the session keys on etcd."""
        out = json.loads(self.etcd.etcdctl("get", "--prefix", "/ha/sessions/", "-w", "json"))
        return {base64.b64decode(kv["key"]).decode().rsplit("/", 1)[1]: int(kv.get("lease", 0))
                for kv in out.get("kvs") or []}

    def latest_lease(self, i):
        """The lease ID controller i logged last for its node sessions (None
        before the first)."""
        lease = None
        for line in self.h.procs[i].output().splitlines():
            if "etcd lease for node sessions" in line:
                lease = int(re.search(r'lease=("?)([0-9a-f]+)\1', line).group(2), 16)
        return lease

    # -- one node, two controllers -----------------------------------------

    def served(self, node):
        """[controller indices that say node is connected], and the sum of
        their connected_agents gauges."""
        at = [i for i in range(self.h.n) if self.h.sync(i, node).get("connected")]
        gauge = sum(self.h.metrics(i).get("edgesync_controller_connected_agents", 0)
                    for i in range(self.h.n))
        return at, gauge

    def test_one_node_two_controllers_at_once(self):
        h = self.controllers(2, ["node-0"])
        got = [None, None]
        go = threading.Barrier(2)

        def dial(i):
            go.wait(10)
            got[i] = h.hello_at(i, "node-0", keep=True)

        threads = [threading.Thread(target=dial, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertTrue(all(got), got)
        try:
            # Both are welcomed (each take succeeds in turn); the older one
            # is closed once the newer took the session over.
            self.assertEqual([m["type"] for m, _ in got], ["welcome", "welcome"],
                             [m for m, _ in got])
            closed = {}

            def one_closed():
                for i, (_, ws) in enumerate(got):
                    ws.s.settimeout(0.2)
                    try:
                        m = ws.recv()
                    except (TimeoutError, OSError, EOFError):
                        continue
                    if m[0] == "close":
                        closed[i] = m[1:]
                return closed
            wait_for("the older session closed", one_closed, timeout=20, interval=0.2)
            self.assertEqual(len(closed), 1, closed)
            lose = list(closed)[0]
            win = 1 - lose
            self.assertEqual(closed[lose], (4000, "replaced"))
            wait_for("one session, the newer", lambda: self.served("node-0")
                     == ([win], 1))
            sess = self.etcd.etcdctl("get", "/ha/sessions/node-0", "--print-value-only")
            self.assertIn(sess.strip(), h.procs[win].output())
            self.assertIn("node session taken over from another controller",
                          h.procs[win].output())
            st, lst = h.api(lose, "GET", "/nodes")
            self.assertEqual(st, 200, lst)
            self.assertFalse([n for n in lst["items"]
                              if n["status"]["sync"].get("connected")], lst)
        finally:
            for _, ws in got:
                ws.close()
        wait_for("no session", lambda: self.served("node-0") == ([], 0))

        # Two agent processes of node-0 (one certificate), one per
        # controller: the newer session wins, so the second one started
        # replaces the first on the other controller, which warns and
        # waits 30 to 60 s; once the second goes and the first is started
        # again, it is served again, by one controller.
        a = h.start_agent("node-0", [0])
        wait_for("node-0 served at controller 0",
                 lambda: self.served("node-0") == ([0], 1), timeout=60)
        mark = len(h.procs[0].output())
        argv = self.replace_flags(a.argv, {
            "--state-dir": os.path.join(h.c.dir, "agent-node-0-copy"),
            "--http-listen": f"127.0.0.1:{free_port()}",
            "--controller-url": h.url(1)})
        b = Proc("agent-node-0-copy", argv, os.path.join(h.c.dir, "agent-node-0-copy.log"))
        h.c.procs.append(b)
        wait_for("controller 0 to close the older session",
                 lambda: REPLACED in h.procs[0].output()[mark:], timeout=60)
        wait_for("the replaced agent's warning",
                 lambda: "another agent may be running with this node's identity"
                 in a.output(), timeout=20)
        b.stop()
        a.stop()
        a = h.start_agent("node-0", [0])
        try:
            wait_for("node-0 served by controller 0 again",
                     lambda: self.served("node-0") == ([0], 1), timeout=90, interval=0.5)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{h.c.logs()}") from e
        time.sleep(2)
        self.assertEqual(self.served("node-0"), ([0], 1))

    @staticmethod
    def replace_flags(argv, repl):
        """argv with the value after each flag of repl replaced."""
        out = list(argv)
        for flag, value in repl.items():
            out[out.index(flag) + 1] = value
        return out

    # -- offline across failover, compaction, recreate -----------------------

    def test_offline_agent_converges_after_failover_and_compaction(self):
        h = self.controllers(2, ["node-0"])
        node = "node-0"
        h.start_agent(node, [0, 1])
        wait_for("node-0 at controller 0", lambda: h.sync(0, node).get("connected"),
                 timeout=60)
        h.ctl(0, "apply", "-f", "-", stdin=cc("keep", 5) + "---\n" + cc("again", 6)
              + "---\n" + cc("gone", 7))
        old = self.want_of(0, "keep", "again", "gone")
        h.wait_held(node, old, "the three objects at the agent")

        h.c.agents[node].stop()
        h.kill(0)
        h.ctl(1, "delete", "collectorconfig", "again")
        h.ctl(1, "delete", "collectorconfig", "gone")
        h.ctl(1, "apply", "-f", "-", stdin=cc("again", 6))
        now = self.want_of(1, "keep", "again")
        self.assertNotEqual(now["again"][0], old["again"][0])
        self.assertIsNone(self.obj(1, "gone"))
        self.etcd.etcdctl("compact", str(self.etcd.revision()))

        # Back, at controller 1 (0 is dead): exactly the current set.
        h.start_agent(node, [0, 1])
        h.wait_held(node, now, "the agent after it was away")
        self.assertTrue(h.sync(1, node).get("connected"))
        self.assertEqual(h.c.agent_state(node)["sync"]["url"], h.url(1))
        self.assertNotIn("ignored", h.c.agents[node].output())

        # Controller 0 back (it lists etcd at its start; its mirror is
        # older than the compaction); controller 1 dies; the agent moves to 0 and
        # still holds exactly the current set, which 0 serves too.
        mark = len(h.procs[0].output())
        h.start(0)
        since = lambda: h.procs[0].output()[mark:]  # noqa: E731 - this run's log
        listed = 'msg="mirror listed from etcd"'
        wait_for("controller 0 to list etcd again", lambda: listed in since())
        self.assertEqual(self.want_of(0, "keep", "again"), now)
        self.assertIsNone(self.obj(0, "gone"))
        h.kill(1)
        try:
            wait_for("the agent at controller 0", lambda: h.sync(0, node).get("connected"),
                     timeout=90, interval=0.5)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{h.c.logs()}") from e
        h.ctl(0, "delete", "collectorconfig", "keep")
        h.wait_held(node, {"again": now["again"]}, "a delete after the second failover")
        st, lst = h.api(0, "GET", "/collectorconfigs")
        self.assertEqual(sorted(i["metadata"]["name"] for i in lst["items"]), ["again"])


if __name__ == "__main__":
    main()
