"""The admin view of nodes on the etcd store (docs/ARCHITECTURE.md, "The
store"): three controllers with store = etcd on one etcd of the test's own
(loopback, mutual TLS; skipped when etcd is not installed), agents on
different controllers.

- Every controller's `get nodes` names the same serving controller per
  node (status.sync.controller, the controller's id in the session key;
  the CONTROLLER column of `-o wide`),
  Ready=True from the serving controller's record also where a controller
  never served the node, and `edgesyncctl describe node` on another
  controller prints the Controller and Status From lines.
- SIGKILL of a controller: once its lease expired, its nodes show
  Ready=Unknown (reason NodeStatusUnknown, "no controller holds a
  session", no controller) on both survivors; a node whose agent knows
  only the dead controller stays so until its agent comes back on
  another one; one whose agent lists a survivor next moves there; then
  Ready=True with the new controller everywhere.
- A node GET that waits for a node's desiredAck, at a controller that
  does not serve the node: 409 NodeNotConnected at once.
- etcd stopped: a node GET, the list and describe answer 503
  ServiceUnavailable naming the etcd store's error.
"""

import time
import unittest

from etcd_util import Etcd
from ha_util import Controllers, served_by
from harness import main, wait_for

NODES = ["node-0", "node-1", "node-2", "node-3"]
# node -> the controllers its agent lists, in order
ORDER = {"node-0": [0, 1], "node-1": [1, 2], "node-2": [2, 0], "node-3": [0]}


def ready(node):
    """node's Ready condition ({} when none)."""
    return next((c for c in (node.get("status") or {}).get("conditions") or []
                 if c.get("type") == "Ready"), {})


class EtcdNodesTest(unittest.TestCase):
    def setUp(self):
        self.etcd = Etcd(self)
        self.etcd.start()
        self.h = Controllers(self, self.etcd, n=3, nodes=NODES)
        self.h.start()

    def nodes_at(self, i):
        """{name: Node} of controller i's `get nodes`."""
        st, body = self.h.api(i, "GET", "/nodes")
        if st != 200:
            raise AssertionError(f"get nodes at controller {i}: HTTP {st}: {body}")
        return {n["metadata"]["name"]: n for n in body["items"]}

    def ids(self):
        """Each controller's id: stateController of any node it shows (its
        own file's), the same for every node."""
        out = []
        for i in range(self.h.n):
            seen = {n["status"]["sync"].get("stateController")
                    for n in self.nodes_at(i).values()} - {None}
            self.assertEqual(len(seen), 1, f"controller {i}: stateController {seen}")
            out.append(seen.pop())
        self.assertEqual(len(set(out)), self.h.n, out)
        return out

    def agree(self, want, alive, what, timeout=60):
        """Waits until every controller of alive shows each node of want
        ({node: (controller id or None, Ready status)})."""
        def now():
            return {i: {n: (served_by(v), ready(v).get("status"))
                        for n, v in self.nodes_at(i).items() if n in want}
                    for i in alive}
        try:
            wait_for(what, lambda: all(v == want for v in now().values()),
                     timeout=timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}: want {want}, have {now()}\n"
                                 f"{self.h.c.logs()}") from e

    def test_nodes_across_controllers(self):
        for node in NODES:
            self.h.start_agent(node, ORDER[node], ["--interval", "2"])
        for node in NODES:
            first = ORDER[node][0]
            wait_for(f"{node} served by controller {first}",
                     lambda node=node, first=first:
                     self.h.sync(first, node).get("connected"), timeout=60)
        ids = self.ids()
        self.agree({n: (ids[ORDER[n][0]], "True") for n in NODES}, range(3),
                   "every controller names each node's serving controller")
        wide = self.h.ctl(2, "get", "nodes", "-o", "wide").stdout.splitlines()
        self.assertTrue(wide[0].rstrip().endswith("CONTROLLER"), wide[0])
        for n in NODES:
            line = next(x for x in wide if x.startswith(n + " "))
            self.assertTrue(line.rstrip().endswith(ids[ORDER[n][0]]), line)
        # A wait for node-0's acknowledgement at a controller that does not
        # serve it is refused at once (README, "apply --wait").
        st, body = self.h.api(1, "GET", "/nodes/node-0?waitForDesiredResourceVersion=1"
                              "&timeoutSeconds=20")
        self.assertEqual((st, body.get("reason")), (409, "NodeNotConnected"), body)
        self.assertIn("another controller may serve it", body["message"])
        # Controller 1 never served node-2 (or node-3): it shows them from
        # the serving controller's etcd record.
        n2 = self.nodes_at(1)["node-2"]
        self.assertNotIn("stateController", n2["status"]["sync"])
        self.assertEqual(n2["status"]["sync"]["recordController"], ids[2])
        self.assertGreater(n2["status"]["sync"]["ackedSeq"], 0)
        out = self.h.ctl(1, "describe", "node", "node-0").stdout
        self.assertRegex(out, rf"\n  Controller: +{ids[0]}\n")
        self.assertRegex(out, r"\n  Status From: +<none>\n")
        self.assertRegex(out, rf"\n  Conditions From: +{ids[0]}\n")
        out = self.h.ctl(1, "describe", "node", "node-1").stdout
        self.assertRegex(out, rf"\n  Controller: +{ids[1]}\n")
        self.assertRegex(out, rf"\n  Status From: +{ids[1]}\n")

        killed = time.monotonic()
        self.h.kill(0)
        # node-3 knows only controller 0: no session once the lease expired.
        self.agree({"node-3": (None, "Unknown")}, [1, 2],
                   "node-3 Ready=Unknown on the survivors", timeout=60)
        self.assertGreater(time.monotonic() - killed, 5,
                           "Unknown before the dead controller's lease could expire")
        for i in (1, 2):
            r = ready(self.nodes_at(i)["node-3"])
            self.assertEqual(r["reason"], "NodeStatusUnknown")
            self.assertIn("no controller holds a session", r["message"])
            self.assertIn("last reported Ready=True", r["message"])
        out = self.h.ctl(2, "describe", "node", "node-3").stdout
        self.assertRegex(out, r"\n  Controller: +<none>\n")
        self.assertIn("NodeStatusUnknown",
                      self.h.ctl(1, "get", "node", "node-3", "-o", "json").stdout)
        # node-0 lists controller 1 next: it moves there.
        self.agree({"node-0": (ids[1], "True"), "node-1": (ids[1], "True"),
                    "node-2": (ids[2], "True"), "node-3": (None, "Unknown")}, [1, 2],
                   "node-0 served by controller 1 on the survivors", timeout=90)
        # node-3's agent comes back on controller 2.
        self.h.c.agents["node-3"].stop()
        self.h.start_agent("node-3", [2], ["--interval", "2"])
        self.agree({"node-3": (ids[2], "True")}, [1, 2],
                   "node-3 back, served by controller 2", timeout=60)

        self.etcd.stop()
        for path in ("/nodes/node-0", "/nodes", "/nodes/node-0/describe"):
            st, body = self.h.api(1, "GET", path)
            self.assertEqual(st, 503, f"{path}: {body}")
            self.assertEqual(body["reason"], "ServiceUnavailable")
            self.assertIn("the etcd store is unavailable", body["message"])
        r = self.h.ctl(1, "get", "node", "node-0", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("etcd store is unavailable", r.stderr)


if __name__ == "__main__":
    main()
