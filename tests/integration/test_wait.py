"""Waiting for a node's acknowledgement (README, "edgesyncctl"): the admin
API's `GET .../nodes/NAME?waitForDesiredResourceVersion=N&timeoutSeconds=T`
answers a Status Success once the node's agent holds every write up to N
that targets it, also when the node had no session or its session closed
and the node connected during the wait; 404 for a node the controller does
not know, 504 Timeout after T seconds (at once for T = 0), 400 for a bad,
missing or repeated value (409 NodeNotConnected, for store = etcd only:
it_etcd_nodes); `edgesyncctl apply --wait` waits so for each connected node the
objects select, asking again when its timeout is longer than one wait."""

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
                                f"&timeoutSeconds={timeout}{extra}", timeout=timeout + 15)
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

    def test_not_connected_unknown_and_reconnected_while_waiting(self):
        # Never connected: not known here.
        st, body, _ = self.wait("w3", 1)
        self.assertEqual(st, 404, body)
        self.assertIn('nodes "w3" not found', body["message"])
        self.assertIn("details", body)
        a = FakeAgent(self.c, "w3")
        a.ws.close()
        wait_for("w3 disconnected", lambda: not self.c.node("w3")["status"]["sync"]
                 ["connected"])
        # Known, not connected: waited for until it connects and acknowledges.
        rv = self.put(cc("wait-c0"))
        st, body, took = self.wait("w3", rv, timeout=1)
        self.assertEqual(st, 504, body)
        self.assertIn("has no session on this controller", body["message"])
        out = {}
        t = threading.Thread(target=lambda: out.update(r=self.wait("w3", rv, timeout=20)))
        t.start()
        time.sleep(0.5)
        a = FakeAgent(self.c, "w3")
        self.assertGreaterEqual(a.rv, rv)
        a.ack(a.rv)
        t.join(10)
        self.assertEqual(out["r"][0], 200, out["r"][1])
        rv = self.put(cc("wait-c"))
        a.next_desired()
        out = {}
        t = threading.Thread(target=lambda: out.update(r=self.wait("w3", rv, timeout=20)))
        t.start()
        time.sleep(0.5)
        # The session closes: the wait goes on, and the node's next session
        # acknowledges the sync after its hello.
        a.ws.close()
        time.sleep(1)
        self.assertTrue(t.is_alive(), "the wait ended when the session closed")
        b = FakeAgent(self.c, "w3")
        self.assertGreaterEqual(b.rv, rv)
        b.ack(b.rv)
        t.join(10)
        st, body, took = out["r"]
        self.assertEqual(st, 200, body)
        self.assertIn(f"resourceVersion {rv}", body["message"])
        acked = b.rv
        # Lost and not back: the timeout says the session closed.
        rv = self.put(cc("wait-c", interval=11))
        self.assertEqual(b.next_desired(), rv)
        t = threading.Thread(target=lambda: out.update(r=self.wait("w3", rv, timeout=2)))
        t.start()
        time.sleep(0.5)
        b.ws.close()
        t.join(10)
        st, body, took = out["r"]
        self.assertEqual(st, 504, body)
        self.assertIn("has no session on this controller", body["message"])
        self.assertIn(f"last desiredAck: {acked}", body["message"])
        # What its last session acknowledged it still holds: in sync as of
        # that, without a session.
        st, body, took = self.wait("w3", acked, timeout=0)
        self.assertEqual(st, 200, body)

    def test_timeout_zero_answers_at_once(self):
        a = FakeAgent(self.c, "w2", labels={"role": "db"})
        rv = self.put(cc("wait-zero"))
        self.assertEqual(a.next_desired(), rv)
        st, body, took = self.wait("w2", rv, timeout=0)
        self.assertEqual(st, 504, body)
        self.assertEqual(body["reason"], "Timeout")
        self.assertIn(f"has not acknowledged the desired state of resourceVersion {rv}",
                      body["message"])
        self.assertLess(took, 1)
        a.ack(rv)
        wait_for("in sync", lambda: self.wait("w2", rv, timeout=0)[0] == 200)
        a.ws.close()

    def test_wait_longer_than_the_http_timeout(self):
        # libwebsockets ends a request left unanswered after 20 s unless
        # the wait extends it.
        a = FakeAgent(self.c, "w1")
        rv = self.put(cc("wait-long"))
        self.assertEqual(a.next_desired(), rv)
        out = {}
        t = threading.Thread(target=lambda: out.update(r=self.wait("w1", rv, timeout=40)))
        t.start()
        time.sleep(23)
        self.assertTrue(t.is_alive(), out)
        a.ack(rv)
        t.join(10)
        st, body, took = out["r"]
        self.assertEqual(st, 200, body)
        self.assertGreater(took, 22)
        a.ws.close()

    def test_bad_parameters(self):
        for q, word in ((f"{WAIT}=x", WAIT), (f"{WAIT}=0", WAIT), (WAIT, WAIT),
                        (f"&{WAIT}=x", WAIT), ("pad=" + "x" * 1200 + f"&{WAIT}=x", WAIT),
                        (f"{WAIT}=9007199254740992", "9007199254740991"),
                        (f"{WAIT}=3&timeoutSeconds=-1", "timeoutSeconds"),
                        (f"{WAIT}=3&timeoutSeconds=601", "timeoutSeconds"),
                        ("timeoutSeconds=5", "applies only with"),
                        (f"{WAIT}=2%26timeoutSeconds=0", "2%26timeoutSeconds=0"),
                        (f"{WAIT}=1&{WAIT}=2", "more than once"),
                        (f"{WAIT}=1&timeoutSeconds=1&timeoutSeconds=2", "more than once")):
            st, body = self.c.admin("GET", f"{API}/nodes/w1?{q}")
            self.assertEqual(st, 400, (q, body))
            self.assertIn(word, body["message"])
        for path in (f"{API}/nodes", "/metrics", "/healthz"):
            st, body = self.c.admin("GET", f"{path}?{WAIT}=3")
            self.assertEqual(st, 400, (path, body))
            self.assertIn("nodes/NAME only", body["message"])
        # The controller still answers.
        self.assertEqual(self.c.admin("GET", "/healthz")[0], 200)


def apply_wait(c, name, timeout):
    """`edgesyncctl apply --wait --timeout timeout` of a CollectorConfig
    name: (the completed process, seconds it took)."""
    manifest = ("apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
                f"metadata:\n  name: {name}\nspec:\n  intervalSeconds: 9\n")
    t0 = time.monotonic()
    r = c.ctl("apply", "-f", "-", "--wait", "--timeout", timeout, stdin=manifest,
              check=False)
    return r, time.monotonic() - t0


def has(test, text, *parts):
    """Asserts that text holds each of parts."""
    for part in parts:
        test.assertIn(part, text)


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
        self.assertIn("no node has labels that the objects select", r.stdout)
        self.assertIn("0 node(s) acknowledged", r.stdout)

    def test_apply_wait_longer_than_the_client_timeout(self):
        # edgesyncctl waits for an answer 10 s by default; a waiting GET
        # may take the whole --timeout, and is not sent twice.
        c = Cluster(self, nodes=["aw6"])
        c.start_controller()
        a = FakeAgent(c, "aw6")
        a.ack(a.rv)
        acked = {}

        def ack_late():
            rv = a.next_desired()
            time.sleep(12)
            a.ack(rv)
            acked["rv"] = rv
        t = threading.Thread(target=ack_late)
        t.start()
        r, took = apply_wait(c, "late", "40s")
        t.join(30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"node/aw6 acknowledged resourceVersion {acked['rv']}", r.stdout)
        self.assertGreater(took, 11)
        a.ws.close()

    def second_closes_while_first_waited(self, nodes, name, timeout, second_acks):
        """Two fake agents of nodes; after the apply's push the second one
        acknowledges it (second_acks) or not, and a second later, once
        edgesyncctl has listed both as connected (ample even under ASan),
        its session closes; a second after that the first acknowledges.
        Returns apply_wait's (process, seconds)."""
        c = Cluster(self, nodes=nodes)
        c.start_controller()
        first, second = FakeAgent(c, nodes[0]), FakeAgent(c, nodes[1])
        first.ack(first.rv)
        second.ack(second.rv)

        def later():
            rv = first.next_desired()
            rv2 = second.next_desired()
            if second_acks:
                second.ack(rv2)
            time.sleep(1)
            second.ws.close()
            time.sleep(1)
            first.ack(rv)
        t = threading.Thread(target=later)
        t.start()
        out = apply_wait(c, name, timeout)
        t.join(10)
        first.ws.close()
        return out

    def test_apply_wait_session_closed_meanwhile(self):
        # aw8's session closes, unacknowledged, while aw7 is waited for: aw8
        # is then still waited for (until it comes back or the time is up),
        # not skipped.
        r, took = self.second_closes_while_first_waited(["aw7", "aw8"], "gone", "4s",
                                                        second_acks=False)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        has(self, r.stdout, "node/aw7 acknowledged",
            "1 node(s) acknowledged, 0 not connected here, 1 not acknowledged")
        has(self, r.stderr, "node/aw8 did not acknowledge resourceVersion",
            "within --timeout (4 s)", "has no session on this controller")
        self.assertGreaterEqual(took, 3.5)

    def test_apply_wait_acked_then_closed_before_its_turn(self):
        # ax2 acknowledges and its session closes while ax1 is waited for:
        # it acknowledged, so the command succeeds.
        r, took = self.second_closes_while_first_waited(["ax1", "ax2"], "acked", "10s",
                                                        second_acks=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("2 node(s) acknowledged, 0 not connected here, 0 not acknowledged",
                      r.stdout)

    def test_apply_wait_timeout_and_offline(self):
        c = Cluster(self, nodes=["aw2", "aw3", "aw5"])
        c.start_controller()
        a = FakeAgent(c, "aw2")
        a.ack(a.rv)
        a5 = FakeAgent(c, "aw5")
        a5.ack(a5.rv)
        # aw3 connected once, then went away: listed, not waited for.
        b = FakeAgent(c, "aw3")
        b.ws.close()
        wait_for("aw3 disconnected", lambda: not c.node("aw3")["status"]["sync"]["connected"])
        r, took = apply_wait(c, "slow", "2s")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        # The timeout is for both unacknowledging nodes together.
        self.assertGreaterEqual(took, 1.5)
        self.assertLess(took, 2.9)  # not 2 s for one node, then 1 s for the next
        has(self, r.stdout, "node/aw3 not connected",
            "0 node(s) acknowledged, 1 not connected here, 2 not acknowledged")
        has(self, r.stderr, "node/aw2 did not acknowledge", "node/aw5 did not acknowledge")
        a.ws.close()
        a5.ws.close()

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
