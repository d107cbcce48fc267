"""Two controllers on one etcd (store = etcd; a one-member etcd of the
test's own on loopback with mutual TLS, skipped when etcd is not
installed), an agent on each: an apply on controller A reaches the agent
on controller B with the resourceVersion A gave it (etcd's revision);
a POST of a name that exists is refused on the other controller too; a
delete then recreate of one name (a new uid, now for other nodes only) and
a delete of another on B while A's agent is offline leave that agent with
exactly the current set for it when it is back: the deletion record of the
old uid is not lost because the name was reused."""

import os
import signal
import subprocess
import time
import unittest

from etcd_util import Etcd
from harness import (API, Cluster, WSClient, free_port, hello, https_json, main,
                     wait_for)

NODES = ["node-a", "node-b"]


def cc(name, interval, role=None):
    sel = f", nodeSelector: {{matchLabels: {{role: {role}}}}}" if role else ""
    return f"""apiVersion: edgesync.io/v1alpha1
kind: CollectorConfig
metadata: {{name: {name}}}
spec: {{intervalSeconds: {interval}, collectors: [cpu, memory]{sel}}}
"""


class EtcdStoreTest(unittest.TestCase):
    def setUp(self):
        self.etcd = Etcd(self)
        self.etcd.start()
        self.c = Cluster(self, nodes=NODES)
        self.c.start_controller(extra=self.etcd_flags())
        self.b_port, self.b_admin = free_port(), free_port()
        self.start_b()

    def etcd_flags(self):
        return ["--store", "etcd", "--etcd-endpoints", self.etcd.endpoint(),
                "--etcd-cert", self.etcd.cert, "--etcd-key", self.etcd.key,
                "--etcd-ca", self.etcd.ca, "--etcd-prefix", "/it/"]

    def start_b(self):
        """Controller B: its own state directory (its mirror) and ports, A's
        dev certificates, the same etcd."""
        self.b = self.c.start_peer_controller("controller-b", self.b_port, self.b_admin,
                                              self.etcd_flags())

    def ctl(self, admin_port, *args, stdin=None, check=True):
        return self.c.ctl("--server", f"https://localhost:{admin_port}", *args,
                          stdin=stdin, check=check)

    def get(self, admin_port, name):
        st, body = https_json("localhost", admin_port, self.c.admin_ssl(), "GET",
                              f"{API}/collectorconfigs/{name}")
        return body if st == 200 else None

    def etcdctl(self, *args):
        return subprocess.run(["etcdctl", "--endpoints", self.etcd.endpoint(),
                               "--cacert", self.etcd.ca, "--cert", self.etcd.cert,
                               "--key", self.etcd.key] + list(args),
                              capture_output=True, text=True, timeout=30, check=True,
                              env=dict(os.environ, ETCDCTL_API="3")).stdout

    def held(self, node):
        return self.c.held(node)

    def wait_held(self, node, want, what):
        self.c.wait_held(node, want, what)

    def test_two_controllers_one_etcd(self):
        self.c.start_agent("node-a")
        self.c.start_agent("node-b", extra=["--controller-url",
                                            f"wss://127.0.0.1:{self.b_port}",
                                            "--labels", "role=b"])

        # An apply on A reaches B's agent with A's resourceVersion.
        self.ctl(self.c.admin_port, "apply", "-f", "-", stdin=cc("web", 5) + "---\n"
                 + cc("gone", 7))
        web, gone = self.get(self.c.admin_port, "web"), self.get(self.c.admin_port, "gone")
        self.assertIsNotNone(web)
        self.assertIsNotNone(gone)
        rv = web["metadata"]["resourceVersion"]
        self.assertGreater(rv, 0)
        want = {"web": (web["metadata"]["uid"], rv),
                "gone": (gone["metadata"]["uid"], gone["metadata"]["resourceVersion"])}
        self.wait_held("node-b", want, "the apply on A at the agent on B")
        self.wait_held("node-a", want, "the apply on A at the agent on A")
        wait_for("B's mirror", lambda: self.get(self.b_admin, "web") == web)

        # Applying the same again changes nothing anywhere; a new spec on B
        # moves generation by one and keeps the uid.
        self.ctl(self.b_admin, "apply", "-f", "-", stdin=cc("web", 5))
        self.assertEqual(self.get(self.b_admin, "web"), web)
        self.ctl(self.b_admin, "apply", "-f", "-", stdin=cc("web", 6))
        web2 = self.get(self.b_admin, "web")
        self.assertEqual(web2["metadata"]["uid"], web["metadata"]["uid"])
        self.assertEqual(web2["metadata"]["generation"], web["metadata"]["generation"] + 1)
        self.assertGreater(web2["metadata"]["resourceVersion"], rv)
        want["web"] = (web["metadata"]["uid"], web2["metadata"]["resourceVersion"])
        self.wait_held("node-a", want, "the apply on B at the agent on A")

        # A create (POST) of a name that exists is refused on either.
        st, body = https_json("localhost", self.c.admin_port, self.c.admin_ssl(), "POST",
                              f"{API}/collectorconfigs",
                              {"apiVersion": "edgesync.io/v1alpha1",
                               "kind": "CollectorConfig", "metadata": {"name": "web"},
                               "spec": {"intervalSeconds": 9, "collectors": ["cpu"]}})
        self.assertEqual(st, 409, body)

        # A's agent goes offline; on B: web deleted and made again (a new
        # uid) for role=b only (so not for A's agent: only the deletion
        # record of the old uid tells it), gone deleted.
        self.c.agents["node-a"].stop()
        self.ctl(self.b_admin, "delete", "collectorconfig", "web")
        self.ctl(self.b_admin, "delete", "collectorconfig", "gone")
        self.ctl(self.b_admin, "apply", "-f", "-", stdin=cc("web", 5, role="b"))
        web3 = self.get(self.b_admin, "web")
        self.assertNotEqual(web3["metadata"]["uid"], web["metadata"]["uid"])
        self.assertEqual(web3["metadata"]["generation"], 1)
        self.assertIsNone(self.get(self.b_admin, "gone"))
        wait_for("A's mirror", lambda: self.get(self.c.admin_port, "web") == web3)
        want = {"web": (web3["metadata"]["uid"], web3["metadata"]["resourceVersion"])}
        self.wait_held("node-b", want, "the recreate at the agent on B")

        # Back: A's agent holds exactly the current set for it: nothing.
        self.c.start_agent("node-a")
        self.wait_held("node-a", {}, "the agent on A after it was away")
        log = self.c.agents["node-a"].output()
        self.assertNotIn("ignored", log)
        lst = self.c.ctl_json("--server", f"https://localhost:{self.b_admin}", "get",
                              "collectorconfigs")
        names = sorted(i["metadata"]["name"] for i in lst["items"])
        self.assertEqual(names, ["web"])

    def test_compacted_past_a_stopped_controller(self):
        """B is away while etcd's history since its file's revision is
        compacted: at its start it lists etcd (a controller lists at every
        start, so that it knows at once that it is current), and its agent,
        older than that list, gets the full list: exactly the current set."""
        self.c.start_agent("node-b", extra=["--controller-url",
                                            f"wss://127.0.0.1:{self.b_port}"])
        self.ctl(self.c.admin_port, "apply", "-f", "-", stdin=cc("one", 5))
        one = self.get(self.c.admin_port, "one")
        self.wait_held("node-b", {"one": (one["metadata"]["uid"],
                                          one["metadata"]["resourceVersion"])},
                       "the first object at the agent on B")
        self.b.stop()
        self.ctl(self.c.admin_port, "delete", "collectorconfig", "one")
        self.ctl(self.c.admin_port, "apply", "-f", "-", stdin=cc("two", 5))
        two = self.get(self.c.admin_port, "two")
        self.etcdctl("compact", str(two["metadata"]["resourceVersion"]))
        self.c.agents["node-b"].stop()
        self.start_b()
        listed = 'msg="mirror listed from etcd"'
        wait_for("B to list etcd again", lambda: listed in self.b.output())
        # The agent's version is older than the list: a full list.
        self.c.start_agent("node-b", extra=["--controller-url",
                                            f"wss://127.0.0.1:{self.b_port}"])
        self.wait_held("node-b", {"two": (two["metadata"]["uid"],
                                          two["metadata"]["resourceVersion"])},
                       "the agent on B after B listed etcd again")
        self.assertIn('msg="desired sync: full list" node=node-b',
                      self.b.output().split(listed)[-1])

    def hello_at(self, port, node):
        """A raw session of node to the controller on port: the first
        message after its hello."""
        ws = WSClient("127.0.0.1", port, os.path.join(self.c.dev, "ca.crt"),
                      *self.c.node_cert(node))
        try:
            ws.send_json(hello(node))
            _, m = ws.recv()
            return m
        finally:
            ws.close()

    def test_one_controller_per_node(self):
        """The newer session of a node wins: a hello at B of a node served
        by A takes the session over and A closes its session (4000,
        replaced); the agent, started again (closed with 4000 it waits 30
        to 60 s: another agent has its identity) and dialling A, takes it
        back and B closes its own. B SIGKILLed while it serves the node: a
        hello at A is served at once, not after B's lease (10 s)."""
        self.c.start_agent("node-a")
        wait_for("node-a at A", lambda: (self.c.node("node-a") or {}).get(
            "status", {}).get("sync", {}).get("connected"))
        ws = WSClient("127.0.0.1", self.b_port, os.path.join(self.c.dev, "ca.crt"),
                      *self.c.node_cert("node-a"))
        ws.send_json(hello("node-a"))
        self.assertEqual(ws.recv()[1]["type"], "welcome")
        wait_for("A to close the agent's session", lambda: 'msg="connection replaced by a'
                 ' newer session on another controller"' in self.c.controller.output())
        # The agent knows A only: started again, it dials A, which takes
        # the session back from B.
        self.c.agents["node-a"].stop()
        self.c.start_agent("node-a")
        ws.s.settimeout(30)
        while True:
            m = ws.recv()
            if m[0] == "close":
                break
        ws.close()
        self.assertEqual(m[1:], (4000, "replaced"))
        self.assertIn('msg="connection replaced by a newer session on another controller"',
                      self.c.controller.output())
        wait_for("node-a at A again", lambda: (self.c.node("node-a") or {}).get(
            "status", {}).get("sync", {}).get("connected"))
        self.c.agents["node-a"].stop()
        # B holds it while a session is open there; then B dies.
        ws = WSClient("127.0.0.1", self.b_port, os.path.join(self.c.dev, "ca.crt"),
                      *self.c.node_cert("node-a"))
        ws.send_json(hello("node-a"))
        self.assertEqual(ws.recv()[1]["type"], "welcome")
        self.b.stop(signal.SIGKILL)
        ws.close()
        t0 = time.monotonic()
        self.assertEqual(self.hello_at(self.c.port, "node-a")["type"], "welcome")
        self.assertLess(time.monotonic() - t0, 5)


if __name__ == "__main__":
    main()
