"""Joining shared by two controllers on one etcd (store = etcd; a one-member
etcd of the test's own on loopback, skipped when etcd is not installed),
both signing with the same CA: a token made on A joins an agent at B and
is listed and deleted on either; a single-use token presented at both at
once joins exactly one node; a node joined at A renews its certificate
over its session at B and at B's /v1/join/renew; `delete node` on A closes
the node's session on B within a second and B refuses the reconnect with
CertificateRevoked."""

import os
import ssl
import subprocess
import threading
import time
import unittest

from etcd_util import Etcd
from harness import (API, BIN_DIR, Cluster, Proc, cert_serial, free_port, hello, https_json,
                     main, read_text, wait_for)

LIFETIME = 10  # seconds: cert-lifetime of both controllers


class EtcdEnrollTest(unittest.TestCase):
    def setUp(self):
        self.etcd = Etcd(self)
        self.etcd.start()
        self.c = Cluster(self, nodes=["seed"])
        self.c.start_controller(self.etcd_flags() + ["--cert-lifetime", str(LIFETIME)])
        wait_for("A's join listener", lambda: self.c._listening(self.c.join_port))
        self.b_port, self.b_admin, self.b_join = free_port(), free_port(), free_port()
        dev = self.c.dev
        self.b = self.c.start_peer_controller(
            "controller-b", self.b_port, self.b_admin, self.etcd_flags() + [
                "--ca-cert", os.path.join(dev, "ca.crt"),
                "--ca-key", os.path.join(dev, "ca.key"),
                "--join-listen", f"127.0.0.1:{self.b_join}",
                "--cert-lifetime", str(LIFETIME)])
        wait_for("B's join listener", lambda: self.c._listening(self.b_join))
        self.ca = os.path.join(dev, "ca.crt")

    def etcd_flags(self):
        return ["--store", "etcd", "--etcd-endpoints", self.etcd.endpoint(),
                "--etcd-cert", self.etcd.cert, "--etcd-key", self.etcd.key,
                "--etcd-ca", self.etcd.ca, "--etcd-prefix", "/it/"]

    # -- helpers -----------------------------------------------------------

    def ctl(self, admin_port, *args, check=True):
        return self.c.ctl("--server", f"https://localhost:{admin_port}", *args,
                          check=check)

    def token(self, admin_port, usages=1):
        out = self.ctl(admin_port, "create", "token", "--usages",
                       str(usages)).stdout.splitlines()
        return out[0], out[1].split("--ca-hash ")[1].strip()

    def tokens(self, admin_port):
        st, body = https_json("localhost", admin_port, self.c.admin_ssl(), "GET",
                              f"{API}/bootstraptokens")
        self.assertEqual(st, 200, body)
        return {t["id"]: t for t in body["items"]}

    def state_dir(self, node):
        return os.path.join(self.c.dir, f"agent-{node}")

    def pki(self, node, leaf):
        return os.path.join(self.state_dir(node), "pki", leaf)

    def join_cmd(self, node, tok, ca_hash, join_port, ctl_port):
        return subprocess.run([os.path.join(BIN_DIR, "edgesync-agent"), "join",
                               "--controller-url", f"wss://localhost:{ctl_port}",
                               "--join-url", f"https://localhost:{join_port}",
                               "--node-name", node, "--state-dir", self.state_dir(node),
                               "--token", tok, "--ca-hash", ca_hash],
                              capture_output=True, text=True, timeout=60)

    def run_agent(self, node, ctl_port, join_port):
        port = free_port()
        argv = [os.path.join(BIN_DIR, "edgesync-agent"), "run",
                "--http-listen", f"127.0.0.1:{port}", "--log-level", "debug",
                "--interval", "1", "--controller-url", f"wss://localhost:{ctl_port}",
                "--join-url", f"https://localhost:{join_port}",
                "--node-name", node, "--state-dir", self.state_dir(node)]
        p = Proc(f"agent-{node}", argv, os.path.join(self.c.dir, f"agent-{node}.log"))
        self.c.procs.append(p)
        self.c.agents[node] = p
        self.c.agent_ports[node] = port
        wait_for(f"agent {node} local endpoint",
                 lambda: self.c._alive_or_fail(p) and self.c._listening(port))
        return p

    def connected(self, node):
        try:
            return self.c.agent_state(node)["sync"]["connected"] is True
        except OSError:
            return False

    def csr(self, key=None):
        """A PEM certificate request: for key (a file), or a new EC key."""
        argv = ["openssl", "req", "-new", "-subj", "/CN=x"]
        argv += ["-key", key] if key else ["-newkey", "ec", "-pkeyopt",
                                           "ec_paramgen_curve:P-256", "-nodes",
                                           "-keyout", "/dev/null"]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def join_ctx(self):
        return ssl.create_default_context(cafile=self.ca)

    def b_log(self):
        return read_text(os.path.join(self.c.dir, "controller-b.log"))

    # -- tests -------------------------------------------------------------

    def test_token_made_on_a_joins_at_b(self):
        tok, ca_hash = self.token(self.c.admin_port, usages=2)
        tid = tok.split(".")[0]
        wait_for("the token listed on B", lambda: tid in self.tokens(self.b_admin))
        r = self.join_cmd("edge-1", tok, ca_hash, self.b_join, self.b_port)
        self.assertEqual(r.returncode, 0, r.stderr + self.c.logs())
        self.assertTrue(os.path.exists(self.pki("edge-1", "node.crt")))
        self.assertEqual(self.tokens(self.b_admin)[tid]["used"], 1)
        wait_for("the use counted on A",
                 lambda: self.tokens(self.c.admin_port)[tid]["used"] == 1)
        self.run_agent("edge-1", self.c.port, self.c.join_port)
        wait_for("edge-1 connected to A", lambda: self.connected("edge-1"))
        # A second key for the enrolled name is NameTaken at A too.
        st, body = https_json("localhost", self.c.join_port, self.join_ctx(), "POST",
                              "/v1/join", {"token": tok, "nodeName": "edge-1",
                                           "csr": self.csr()})
        self.assertEqual(st, 403, body)
        self.assertEqual(body["reason"], "NameTaken")
        # Deleted on B: TokenInvalid at A.
        self.ctl(self.b_admin, "delete", "token", tid)
        wait_for("the delete on A", lambda: tid not in self.tokens(self.c.admin_port))
        st, body = https_json("localhost", self.c.join_port, self.join_ctx(), "POST",
                              "/v1/join", {"token": tok, "nodeName": "edge-2",
                                           "csr": self.csr()})
        self.assertEqual(st, 403, body)
        self.assertEqual(body["reason"], "TokenInvalid")

    def test_single_use_token_raced_joins_exactly_one(self):
        csrs = [self.csr(), self.csr()]
        for round_ in range(4):
            tok, _ = self.token(self.c.admin_port, usages=1)
            tid = tok.split(".")[0]
            wait_for("the token listed on B", lambda: tid in self.tokens(self.b_admin))
            results = [None, None]
            go = threading.Barrier(2)

            def post(i, port):
                go.wait()
                results[i] = https_json("localhost", port, self.join_ctx(), "POST",
                                        "/v1/join", {"token": tok,
                                                     "nodeName": f"race-{round_}-{i}",
                                                     "csr": csrs[i]})
            ts = [threading.Thread(target=post, args=(0, self.c.join_port)),
                  threading.Thread(target=post, args=(1, self.b_join))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            codes = sorted(st for st, _ in results)
            self.assertEqual(codes, [200, 403], results)
            refused = [b for st, b in results if st == 403][0]
            self.assertEqual(refused["reason"], "TokenUsedUp", refused)
            self.assertEqual(self.tokens(self.c.admin_port)[tid]["used"], 1)

    def test_joined_on_a_renews_at_b(self):
        tok, ca_hash = self.token(self.c.admin_port)
        r = self.join_cmd("edge-r", tok, ca_hash, self.c.join_port, self.c.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        first = cert_serial(self.pki("edge-r", "node.crt"))
        # /v1/join/renew at B with A's certificate and the same key.
        st, body = https_json("localhost", self.b_join, self.join_ctx(), "POST",
                              "/v1/join/renew",
                              {"certificate": read_text(self.pki("edge-r", "node.crt")),
                               "csr": self.csr(self.pki("edge-r", "node.key"))})
        self.assertEqual(st, 200, body)
        self.assertNotEqual(body["serial"], first)
        # Over the session at B: the agent renews and reconnects with it.
        self.run_agent("edge-r", self.b_port, self.b_join)
        wait_for("edge-r connected to B", lambda: self.connected("edge-r"))
        wait_for("renewed over the session at B",
                 lambda: 'msg="certificate renewed"' in self.b_log()
                 and cert_serial(self.pki("edge-r", "node.crt")) != first,
                 timeout=LIFETIME * 3)
        self.assertIn(first, self.b_log().split('msg="certificate renewed"')[1][:400])
        wait_for("edge-r connected with the new certificate",
                 lambda: self.connected("edge-r"), timeout=30)

    def test_delete_node_on_a_closes_on_b_and_b_refuses(self):
        tok, ca_hash = self.token(self.c.admin_port)
        r = self.join_cmd("edge-d", tok, ca_hash, self.c.join_port, self.c.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.run_agent("edge-d", self.b_port, self.b_join)
        wait_for("edge-d connected to B", lambda: self.connected("edge-d"))
        t0 = time.monotonic()
        self.ctl(self.c.admin_port, "delete", "node", "edge-d")
        wait_for("session on B closed", lambda: not self.connected("edge-d"),
                 timeout=5, interval=0.02)
        closed = time.monotonic() - t0
        print(f"session on B closed {closed:.3f} s after delete node on A returned")
        self.assertLess(closed, 1.0)
        cert, key = self.pki("edge-d", "node.crt"), self.pki("edge-d", "node.key")
        from harness import WSClient
        ws = WSClient("127.0.0.1", self.b_port, self.ca, cert, key)
        ws.send_json(hello("edge-d"))
        _, m = ws.recv()
        self.assertEqual(m["type"], "error", m)
        self.assertEqual(m["code"], "IdentityMismatch")
        self.assertEqual(m.get("reason"), "CertificateRevoked")
        ws.close()
        st, body = https_json("localhost", self.b_join, self.join_ctx(), "POST",
                              "/v1/join/renew",
                              {"certificate": read_text(cert), "csr": self.csr(key)})
        self.assertEqual(st, 403, body)
        self.assertEqual(body["reason"], "CertificateRevoked")


if __name__ == "__main__":
    main()
