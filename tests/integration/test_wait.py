"""Waiting for a node's acknowledgement (README, "edgesyncctl"): the admin
API's `GET .../nodes/NAME?waitForDesiredResourceVersion=N&timeoutSeconds=T`
answers a Status Success once the node's agent holds every write up to N
that targets it,
409 NodeNotConnected when no session of the node is here (also when it
closes during the wait), 504 Timeout after T seconds, 400 for a bad value;
`edgesyncctl apply --wait` waits so for each connected node the objects
select."""

import threading
import time
import unittest

from harness import API, Cluster, hello, main, wait_for

WAIT = "waitForDesiredResourceVersion"


def cc(name, interval=10, selector=None):
    spec = {"intervalSeconds": interval}
    if selector:
        spec["nodeSelector"] = {"matchLabels": selector}
    return {"apiVersion": "edgesync.io/v1alpha1", "kind": "CollectorConfig",
            "metadata": {"name": name}, "spec": spec}


class FakeAgent:
    """A raw protocol session of node that acknowledges only when told."""

    def __init__(self, c, node, labels=None):
        self.ws = c.ws(*c.node_cert(node))
        self.ws.send_json(hello(node, labels=labels) | {"streamId": f"wait-{node}"})
        self.rv = 0
        while True:
            m = self.ws.recv()
            if m[0] == "text" and m[1]["type"] == "desired":
                self.rv = m[1]["resourceVersion"]
                if not m[1].get("more"):
                    break

    def next_desired(self):
        while True:
            m = self.ws.recv()
            if m[0] == "text" and m[1]["type"] == "desired":
                return m[1]["resourceVersion"]

    def ack(self, rv):
        self.ws.send_json({"type": "desiredAck", "resourceVersion": rv})


class WaitApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from harness import ClassScope
        cls.c = Cluster(ClassScope(), nodes=["w1", "w2", "w3"])
        cls.c.start_controller()

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def put(self, obj):
        st, body = self.c.admin("PUT", f"{API}/collectorconfigs/{obj['metadata']['name']}", obj)
        self.assertIn(st, (200, 201), body)
        return body["metadata"]["resourceVersion"]

    def wait(self, node, rv, timeout=5, extra=""):
        t0 = time.monotonic()
        st, body = self.c.admin("GET", f"{API}/nodes/{node}?{WAIT}={rv}"
                                f"&timeoutSeconds={timeout}{extra}")
        return st, body, time.monotonic() - t0

    def test_answered_at_the_ack_and_timeout_names_the_ack(self):
        a = FakeAgent(self.c, "w1")
        a.ack(a.rv)
        rv = self.put(cc("wait-a"))
        self.assertEqual(a.next_desired(), rv)
        # Not acknowledged: 504 after the timeout, naming what it holds.
        st, body, took = self.wait("w1", rv, timeout=1)
        self.assertEqual(st, 504, body)
        self.assertEqual(body["reason"], "Timeout")
        self.assertIn(f"resourceVersion {rv}", body["message"])
        self.assertIn(f"last desiredAck: {a.rv}", body["message"])
        self.assertGreaterEqual(took, 0.9)
        # A wait in progress is answered with the node when the ack comes.
        out = {}
        t = threading.Thread(target=lambda: out.update(r=self.wait("w1", rv, timeout=20)))
        t.start()
        time.sleep(0.5)
        self.assertTrue(t.is_alive(), "answered before the desiredAck")
        a.ack(rv)
        t.join(10)
        st, body, took = out["r"]
        self.assertEqual(st, 200, body)
        self.assertEqual((body["kind"], body["status"]), ("Status", "Success"))
        self.assertEqual(body["code"], 200)
        self.assertIn(f"holds the desired state of resourceVersion {rv}", body["message"])
        self.assertGreaterEqual(self.c.node("w1")["status"]["sync"]
                                ["desiredResourceVersion"], rv)
        self.assertLess(took, 5)
        # Already in sync: answered at once.
        st, body, took = self.wait("w1", rv)
        self.assertEqual(st, 200, body)
        self.assertLess(took, 2)
        a.ws.close()

    def test_write_not_targeting_the_node_needs_no_ack(self):
        a = FakeAgent(self.c, "w2", labels={"role": "db"})
        a.ack(a.rv)
        wait_for("ack stored", lambda: self.c.node("w2")["status"]["sync"]
                 ["desiredResourceVersion"] == a.rv)
        rv = self.put(cc("wait-other", selector={"role": "web"}))
        st, body, took = self.wait("w2", rv)
        self.assertEqual(st, 200, body)
        self.assertLess(took, 2)
        a.ws.close()

    def test_not_connected_and_closed_while_waiting(self):
        st, body, took = self.wait("w3", 1)
        self.assertEqual(st, 409, body)
        self.assertEqual(body["reason"], "NodeNotConnected")
        self.assertIn("w3", body["message"])
        self.assertLess(took, 2)
        a = FakeAgent(self.c, "w3")
        rv = self.put(cc("wait-c"))
        a.next_desired()
        out = {}
        t = threading.Thread(target=lambda: out.update(r=self.wait("w3", rv, timeout=20)))
        t.start()
        time.sleep(0.5)
        a.ws.close()
        t.join(10)
        st, body, took = out["r"]
        self.assertEqual(st, 409, body)
        self.assertEqual(body["reason"], "NodeNotConnected")
        self.assertLess(took, 8)

    def test_bad_parameters(self):
        for q, word in ((f"{WAIT}=x", WAIT), (f"{WAIT}=0", WAIT),
                        (f"{WAIT}=3&timeoutSeconds=0", "timeoutSeconds"),
                        (f"{WAIT}=3&timeoutSeconds=601", "timeoutSeconds")):
            st, body = self.c.admin("GET", f"{API}/nodes/w1?{q}")
            self.assertEqual(st, 400, (q, body))
            self.assertIn(word, body["message"])
        st, body = self.c.admin("GET", f"{API}/nodes?{WAIT}=3")
        self.assertEqual(st, 400, body)
        self.assertIn("nodes/NAME only", body["message"])
        # The controller still answers.
        self.assertEqual(self.c.admin("GET", "/healthz")[0], 200)


class ApplyWaitTest(unittest.TestCase):
    def test_apply_wait_with_a_real_agent(self):
        c = Cluster(self, nodes=["aw1"])
        c.start_controller()
        c.start_agent(extra=["--interval", "10"])
        wait_for("first report", lambda: c.node(), timeout=60)
        manifest = ("apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
                    "metadata:\n  name: waited\nspec:\n  intervalSeconds: 7\n")
        r = c.ctl("apply", "-f", "-", "--wait", "--timeout", "20s", stdin=manifest)
        self.assertIn("collectorconfig/waited created", r.stdout)
        obj = c.ctl_json("get", "cc", "waited")
        rv = obj["metadata"]["resourceVersion"]
        self.assertIn(f"node/aw1 acknowledged resourceVersion {rv}", r.stdout)
        self.assertIn("1 node(s) acknowledged, 0 not connected here, 0 not acknowledged",
                      r.stdout)
        # What --wait said holds: the agent has it.
        self.assertEqual(c.held("aw1")["waited"][1], rv)
        # An object selecting no node waits for none.
        r = c.ctl("apply", "-f", "-", "--wait", stdin=manifest.replace(
            "intervalSeconds: 7", "intervalSeconds: 8\n  nodeSelector:\n"
            "    matchLabels:\n      role: none"))
        self.assertIn("0 node(s) acknowledged", r.stdout)

    def test_apply_wait_timeout_and_offline(self):
        c = Cluster(self, nodes=["aw2", "aw3"])
        c.start_controller()
        a = FakeAgent(c, "aw2")
        a.ack(a.rv)
        # aw3 connected once, then went away: listed, not waited for.
        b = FakeAgent(c, "aw3")
        b.ws.close()
        wait_for("aw3 disconnected", lambda: not c.node("aw3")["status"]["sync"]["connected"])
        manifest = ("apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
                    "metadata:\n  name: slow\nspec:\n  intervalSeconds: 9\n")
        t0 = time.monotonic()
        r = c.ctl("apply", "-f", "-", "--wait", "--timeout", "2s", stdin=manifest,
                  check=False)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertGreaterEqual(time.monotonic() - t0, 1.5)
        self.assertIn("node/aw3 not connected", r.stdout)
        self.assertIn("aw2", r.stderr)
        self.assertIn("did not acknowledge", r.stderr)
        self.assertIn("0 node(s) acknowledged, 1 not connected here, 1 not acknowledged",
                      r.stdout)
        a.ws.close()

    def test_flags_refused(self):
        c = Cluster(self, nodes=["aw4"])
        c.start_controller()  # writes the dev config file
        for args, word in ((["get", "nodes", "--wait"], "apply only"),
                           (["apply", "-f", "-", "--timeout", "5s"], "needs --wait"),
                           (["apply", "-f", "-", "--wait", "--timeout", "soon"], "--timeout"),
                           (["apply", "-f", "-", "--wait", "--timeout", "2h"], "1s to 1h")):
            r = c.ctl(*args, check=False, stdin="")
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(word, r.stderr)


if __name__ == "__main__":
    main()
