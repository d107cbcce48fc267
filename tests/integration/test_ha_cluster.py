"""The multi-controller tier on a three-member etcd (ha_util: a cluster of
the test's own on loopback, three controllers with store = etcd, each
trying another member first; skipped when etcd is not installed), with
real agents on different controllers:

- an apply on controller 0 reaches the agents of controllers 1 and 2 with
  the same uid and resourceVersion everywhere: each agent's cached
  object, each controller's `get`, each node's desiredResourceVersion
  (its desiredAck) at its controller;
- SIGKILL of the etcd member that leads, while agents report every second
  and an apply goes to the controller that tries that member first: the
  apply succeeds, every agent gets it, reports go on being acknowledged
  and no agent loses its session; the member, restarted, catches up and
  a write through it reaches everyone too."""

import unittest

from ha_util import Controllers, EtcdCluster, cc
from harness import EVERY_ROUND, main, wait_for

NODES = ["node-0", "node-1", "node-2"]
DISCONNECTED = 'msg="disconnected, redialling"'


class HAClusterTest(unittest.TestCase):
    def setUp(self):
        self.etcd = EtcdCluster(self, members=3)
        self.etcd.start()
        self.h = Controllers(self, self.etcd, n=3, nodes=NODES)
        self.h.start()

    def start_agents(self, extra=()):
        """node-i's agent on controller i only."""
        for i, node in enumerate(NODES):
            self.h.start_agent(node, [i], extra)
        for i, node in enumerate(NODES):
            wait_for(f"{node} served by controller {i}",
                     lambda i=i, node=node: self.h.sync(i, node).get("connected"),
                     timeout=60)

    def apply_everywhere(self, at, name, interval):
        """Applies name on controller at; waits until every agent holds it
        and every controller's get and desiredAck agree. Returns (uid, rv)."""
        self.h.ctl(at, "apply", "-f", "-", stdin=cc(name, interval))
        obj = self.h.get(at, "collectorconfigs", name)
        self.assertIsNotNone(obj, f"{name} at controller {at} after its apply")
        uid, rv = obj["metadata"]["uid"], obj["metadata"]["resourceVersion"]
        self.assertGreater(rv, 0)
        for i in range(self.h.n):
            wait_for(f"{name} in the mirror of controller {i}",
                     lambda i=i: self.h.get(i, "collectorconfigs", name) == obj,
                     timeout=30)
        for i, node in enumerate(NODES):
            held = lambda node=node: (self.h.held(node) or {}).get(name)  # noqa: E731
            try:
                wait_for(f"{name} at {node}", lambda held=held: held() == (uid, rv),
                         timeout=60)
            except AssertionError as e:
                raise AssertionError(f"{e}: held {held()}, want {(uid, rv)}\n"
                                     f"{self.h.c.logs()}") from e
            wait_for(f"the desiredAck of {node} at controller {i}",
                     lambda i=i, node=node:
                     self.h.sync(i, node).get("desiredResourceVersion") == rv,
                     timeout=60)
        return uid, rv

    def test_apply_reaches_agents_of_every_controller(self):
        self.start_agents()
        uid, rv = self.apply_everywhere(0, "web", 5)
        # The same resourceVersion is etcd's revision of the key.
        out = self.etcd.etcdctl("get", "/ha/objects/CollectorConfig/web", "-w", "json")
        self.assertIn(f'"mod_revision":{rv}', out.replace(" ", ""))
        # A change on controller 2 reaches controller 0's agent, same uid.
        uid2, rv2 = self.apply_everywhere(2, "web", 6)
        self.assertEqual(uid2, uid)
        self.assertGreater(rv2, rv)
        for node in NODES:
            self.assertNotIn(DISCONNECTED, self.h.c.agents[node].output(), node)

    def acked(self):
        """{node: ackedSeq at its controller}."""
        return {node: self.h.sync(i, node).get("ackedSeq", 0)
                for i, node in enumerate(NODES)}

    def test_etcd_member_killed_under_reports_and_apply(self):
        self.start_agents(["--interval", "1"] + EVERY_ROUND)
        self.apply_everywhere(0, "before", 5)
        wait_for("reports acknowledged at every controller",
                 lambda: all(v > 0 for v in self.acked().values()), timeout=60)

        dead = self.etcd.leader()
        self.etcd.kill(dead)
        before = self.acked()
        # Controller `dead` tries the dead member first.
        uid, rv = self.apply_everywhere(dead, "during", 7)
        try:
            wait_for("reports acknowledged past the kill at every controller",
                     lambda: all(v > before[n] + 3 for n, v in self.acked().items()),
                     timeout=60)
        except AssertionError as e:
            raise AssertionError(f"{e}: before {before}, now {self.acked()}\n"
                                 f"{self.h.c.logs()}") from e
        # The agents' own view: acknowledged up to what they sent, nothing
        # piling up in the outbox.
        for node in NODES:
            wait_for(f"{node}'s outbox drained",
                     lambda node=node: self.h.c.agent_state(node)["sync"]["outboxDepth"]
                     <= 1, timeout=30)
            self.assertNotIn(DISCONNECTED, self.h.c.agents[node].output(), node)
        for i in range(self.h.n):
            self.assertTrue(self.h.procs[i].alive(), f"controller {i}")

        # Back: the member catches up; a write through it reaches everyone.
        self.etcd.restart(dead)
        wait_for("the restarted member at the cluster's revision",
                 lambda: self.etcd.revision(dead) >= rv, timeout=60)
        self.apply_everywhere(dead, "after", 9)
        for node in NODES:
            self.assertEqual(sorted(self.h.held(node)), ["after", "before", "during"])


if __name__ == "__main__":
    main()
