"""Mutual TLS and node identity: the controller refuses every connection
whose certificate does not prove the node it speaks for, logging each as
refused with its reason (only a session past its hello is "connected"),
and the agent refuses a controller whose certificate does not name the
host it dialled in a DNS or IP subjectAltName. A certificate from the
future says to check the clock, on both sides."""

import os
import unittest

from harness import API, Cluster, WSRefused, hello, main, wait_for

TD = "edgesync.local"


class IdentityTest(unittest.TestCase):
    def setUp(self):
        self.c = Cluster(self, nodes=["node-a", "node-b"])
        self.c.start_controller()

    def assert_refused(self, cert, key, node="node-a"):
        """The connection never gets a welcome: the TLS handshake or the
        upgrade fails, or the server closes before answering hello."""
        try:
            ws = self.c.ws(cert, key)
        except WSRefused:
            return
        try:
            ws.send_json(hello(node))
            msgs, _ = ws.recv_until_close()
        except OSError:
            return
        finally:
            ws.close()
        self.assertNotIn("welcome", [m.get("type") for m in msgs], msgs)

    def test_valid_node_is_welcomed(self):
        ws = self.c.ws(*self.c.node_cert("node-a"))
        ws.send_json(hello("node-a"))
        kind, msg = ws.recv()
        self.assertEqual(kind, "text")
        self.assertEqual(msg["type"], "welcome")
        self.assertEqual(msg["node"], "node-a")
        ws.close()

    def test_hello_as_another_node_refused(self):
        ws = self.c.ws(*self.c.node_cert("node-a"))
        ws.send_json(hello("node-b"))
        msgs, code = ws.recv_until_close()
        ws.close()
        self.assertEqual([m["type"] for m in msgs], ["error"])
        self.assertEqual(msgs[0]["code"], "IdentityMismatch")
        self.assertEqual(code, 1008)
        self.assertIsNone(self.c.node("node-b"))

    def test_no_client_certificate_refused(self):
        self.assert_refused(None, None)

    def test_certificate_from_another_ca_refused(self):
        ca_cert, ca_key = self.c.mkcert("other-ca", "Other CA", ca=False,
                                        is_ca=True, client=False)
        cert, key = self.c.mkcert("foreign", "node-a",
                                  uri=f"spiffe://{TD}/node/node-a",
                                  ca_cert=ca_cert, ca_key=ca_key)
        self.assert_refused(cert, key)

    def test_expired_certificate_refused(self):
        cert, key = self.c.mkcert("expired", "node-a",
                                  uri=f"spiffe://{TD}/node/node-a",
                                  not_before="2020-01-01T00:00:00Z",
                                  not_after="2021-01-01T00:00:00Z")
        self.assert_refused(cert, key)

    def test_certificate_without_spiffe_id_refused(self):
        cert, key = self.c.mkcert("nouri", "node-a")
        self.assert_refused(cert, key)

    def test_admin_certificate_cannot_be_an_agent(self):
        self.assert_refused(os.path.join(self.c.dev, "admin.crt"),
                            os.path.join(self.c.dev, "admin.key"))

    def test_node_certificate_cannot_use_admin_api(self):
        ctx = self.c.admin_ssl(*self.c.node_cert("node-a"))
        try:
            st, _ = self.c.admin("GET", f"{API}/nodes", ctx=ctx)
        except OSError:
            return
        self.assertEqual(st, 403)

    def test_agent_refuses_controller_with_wrong_name(self):
        # A controller certificate from the right CA, but for another name.
        cert, key = self.c.mkcert("wrong-name", "elsewhere.example",
                                  dns=["elsewhere.example"], client=False,
                                  server=True)
        self.c.stop_controller()
        self.c.start_controller(extra=["--cert", cert, "--key", key])
        self.c.start_agent("node-a")
        try:
            st = wait_for("the agent's refusal", lambda: (
                lambda s: s if "does not name" in s["sync"].get("lastError") else None)(
                    self.c.agent_state()), timeout=30)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e
        self.assertFalse(st["sync"]["connected"])
        self.assertIn("controller certificate does not name localhost",
                      st["sync"]["lastError"])
        # Library messages end in a newline: never logged as a literal \n.
        self.assertNotIn('\\n"', self.c.agents["node-a"].output())
        # Ask the controller (whose certificate names elsewhere.example: the
        # chain is still verified, the name deliberately not).
        ctx = self.c.admin_ssl()
        ctx.check_hostname = False
        st, _ = self.c.admin("GET", f"{API}/nodes/node-a", ctx=ctx)
        self.assertEqual(st, 404)

    def test_agent_refuses_controller_without_san(self):
        # From the right CA, its only host name the subject CN "localhost":
        # mbedTLS alone would accept it for wss://localhost.
        cert, key = self.c.mkcert("no-san", "localhost", client=False, server=True)
        self.c.stop_controller()
        ctl = self.c.start_controller(extra=["--cert", cert, "--key", key])
        agent = self.c.start_agent("node-a")
        try:
            st = wait_for("the agent's refusal", lambda: (
                lambda s: s if "no DNS or IP subjectAltName" in s["sync"]["lastError"]
                else None)(self.c.agent_state()), timeout=30)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e
        self.assertFalse(st["sync"]["connected"])
        self.assertIn("controller certificate refused: the certificate has no DNS or IP "
                      "subjectAltName", st["sync"]["lastError"])
        self.assertIn('level=error component=sync msg="controller certificate refused"',
                      agent.output())
        # The controller never got a hello: no node, and the session is
        # logged as ended before it.
        ctx = self.c.admin_ssl()
        ctx.check_hostname = False
        code, _ = self.c.admin("GET", f"{API}/nodes/node-a", ctx=ctx)
        self.assertEqual(code, 404)
        wait_for("the controller's log of the session", lambda:
                 'msg="agent session ended before hello" node=node-a' in ctl.output())
        self.assertNotIn('msg="agent connected"', ctl.output())

    def test_refused_sessions_are_logged_as_refused(self):
        node_a = self.c.node_cert("node-a")
        # A wrong subprotocol (lws would drop it without a word).
        with self.assertRaises(WSRefused):
            self.c.ws(*node_a, protocol="other.v9")
        # A certificate without a SPIFFE ID.
        cert, key = self.c.mkcert("nouri", "node-a")
        with self.assertRaises(WSRefused):
            self.c.ws(cert, key)
        # A session that never says hello, and one refused at its hello.
        self.c.ws(*node_a).close()
        ws = self.c.ws(*node_a)
        ws.send_json(hello("node-b"))
        ws.recv_until_close()
        ws.close()
        # A real one.
        ws = self.c.ws(*node_a)
        ws.send_json(hello("node-a"))
        self.assertEqual(ws.recv()[1]["type"], "welcome")
        ws.close()
        log = wait_for("the real session's end", lambda: (
            lambda t: t if 'msg="agent disconnected"' in t else None)(
                self.c.controller.output()))
        lines = log.splitlines()
        refused = [ln for ln in lines if 'msg="agent connection refused"' in ln]
        self.assertTrue(any('reason="subprotocol \\"other.v9\\" offered; edgesync.v1 '
                            'required"' in ln for ln in refused), refused)
        self.assertTrue(any("0 URI subjectAltNames" in ln for ln in refused), refused)
        self.assertTrue(any("node=node-a reason=IdentityMismatch" in ln
                            for ln in refused), refused)
        wait_for("the session without hello logged", lambda: any(
            'msg="agent session ended before hello" node=node-a' in ln
            for ln in self.c.controller.output().splitlines()))
        # Connected and disconnected: only the session past its hello.
        self.assertEqual(sum('msg="agent connected"' in ln for ln in lines), 1, log)
        self.assertEqual(sum('msg="agent disconnected"' in ln for ln in lines), 1, log)

    def test_client_certificate_from_the_future_names_the_clock(self):
        cert, key = self.c.mkcert("future", "node-a", uri=f"spiffe://{TD}/node/node-a",
                                  not_before="2040-01-01T00:00:00Z")
        # Dialled by IP address (no SNI), the handshake hands the unverified
        # certificate to the controller's own check, which says why.
        with self.assertRaises(WSRefused):
            self.c.ws(cert, key, server_hostname="127.0.0.1")
        line = wait_for("the refusal logged", lambda: next(
            (ln for ln in self.c.controller.output().splitlines()
             if 'msg="agent connection refused"' in ln), None))
        self.assertIn("client certificate not valid before 2040-01-01T00:00:00Z; "
                      "the host clock says ", line)
        self.assertIn(": check the clock", line)

    def test_agent_says_controller_certificate_is_from_the_future(self):
        cert, key = self.c.mkcert("future-ctl", "localhost", dns=["localhost"],
                                  client=False, server=True,
                                  not_before="2040-01-01T00:00:00Z")
        self.c.stop_controller()
        self.c.start_controller(extra=["--cert", cert, "--key", key])
        self.c.start_agent("node-a")
        st = wait_for("the agent's refusal", lambda: (
            lambda s: s if "not valid yet" in s["sync"]["lastError"] else None)(
                self.c.agent_state()), timeout=30)
        self.assertIn("controller certificate not valid yet", st["sync"]["lastError"])
        self.assertIn("check the clock", st["sync"]["lastError"])


T = "2026-01-01T00:00:00Z"


def node_doc(name, objects=()):
    return {"apiVersion": "edgesync.io/v1alpha1", "kind": "Node",
            "metadata": {"name": name}, "status": {"objects": list(objects)}}


class ReportIdentityTest(unittest.TestCase):
    """A connection reports for its own node only (PROTOCOL.md, "Reports"):
    node-a's certificate cannot send node-b's state or events, and status
    entries for objects that only target node-b are not stored."""

    def setUp(self):
        self.c = Cluster(self, nodes=["node-a", "node-b"])
        self.c.start_controller()

    def session(self):
        ws = self.c.ws(*self.c.node_cert("node-a"))
        ws.send_json(hello("node-a", labels={"site": "a"}))
        self.assertEqual(ws.recv()[1]["type"], "welcome")
        while True:
            _, m = ws.recv()
            if m["type"] == "desired" and not m.get("more"):
                return ws

    def refused(self, report, named):
        ws = self.session()
        ws.send_json(report)
        msgs, code = ws.recv_until_close()
        ws.close()
        self.assertEqual([m["type"] for m in msgs], ["error"], msgs)
        self.assertEqual(msgs[0]["code"], "IdentityMismatch")
        self.assertIn(named, msgs[0]["message"])
        self.assertEqual(code, 1008)
        self.assertEqual(self.c.reports("node-a"), [])
        self.assertIsNone(self.c.node("node-b"))
        line = [x for x in self.c.controller.output().splitlines()
                if "report for another node refused" in x
                and f"seq={report['seq']}" in x]
        self.assertEqual(len(line), 1, line)
        self.assertIn("level=warn", line[0])
        self.assertIn("node=node-a", line[0])
        self.assertIn(f"named={named}", line[0])

    def test_snapshot_for_another_node_refused(self):
        self.refused({"type": "report", "seq": 1, "time": T,
                      "reportType": "snapshot", "body": node_doc("node-b")},
                     "node-b")

    def test_patch_for_another_node_refused(self):
        self.refused({"type": "report", "seq": 2, "time": T, "reportType": "patch",
                      "baseSeq": 1, "body": {"metadata": {"name": "node-b"}}},
                     "node-b")

    def test_event_for_another_node_refused(self):
        self.refused({"type": "report", "seq": 3, "time": T, "reportType": "event",
                      "body": {"type": "Warning", "reason": "Fake", "message": "m",
                               "time": T, "involvedObject": {"kind": "Node",
                                                             "name": "node-b"}}},
                     "node-b")

    def test_status_of_another_nodes_object_dropped(self):
        c = self.c
        c.ctl("apply", "-f", "-", stdin=(
            "apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
            "metadata: {name: only-b}\nspec: {nodeSelector: {matchLabels: "
            "{site: b}}}\n---\napiVersion: edgesync.io/v1alpha1\n"
            "kind: CollectorConfig\nmetadata: {name: all}\nspec: {}\n"))
        uids = {n: c.ctl_json("get", "collectorconfig", n)["metadata"]["uid"]
                for n in ("only-b", "all")}

        def entry(name, uid):
            return {"kind": "CollectorConfig", "name": name, "uid": uid,
                    "generation": 1, "observedGeneration": 1, "conditions": []}
        ws = self.session()
        ws.send_json({"type": "report", "seq": 1, "time": T, "reportType": "snapshot",
                      "body": node_doc("node-a", [
                          entry("only-b", uids["only-b"]), entry("all", uids["all"]),
                          entry("gone", "0d9c8b7a-0000-4000-8000-000000000000")])})
        _, m = ws.recv()
        self.assertEqual(m, {"type": "ack", "seq": 1})
        # The session goes on: a patch with the same entry is acknowledged.
        ws.send_json({"type": "report", "seq": 2, "time": T, "reportType": "patch",
                      "baseSeq": 1, "body": {"status": {"objects": [
                          entry("all", uids["all"]), entry("only-b", uids["only-b"])]}}})
        _, m = ws.recv()
        self.assertEqual(m, {"type": "ack", "seq": 2})
        ws.close()
        names = [o["name"] for o in c.node("node-a")["status"]["objects"]]
        self.assertEqual(names, ["all"])
        self.assertEqual(len([r for r in c.reports("node-a")]), 2)
        lines = [x for x in c.controller.output().splitlines()
                 if "does not target this node" in x]
        self.assertEqual(len(lines), 2, lines)
        for x in lines:
            self.assertIn("level=warn", x)
            self.assertIn("node=node-a", x)
            self.assertIn("name=only-b", x)


if __name__ == "__main__":
    main()
