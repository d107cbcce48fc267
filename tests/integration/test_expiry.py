"""Certificates over time, against a real controller with a short
cert-lifetime: a certificate that expires while the controller is away
leaves the agent enforcing its cached policy and reporting
CertificateValid=False (Expired); the controller back, the agent renews it
with the same key at the join listener (within renewal-grace) and
reconnects with a new serial; with renewal-grace 0 the renewal is refused
(GraceExpired) and the agent says it needs a new token, or joins again with
the token it has. `delete node` closes the session within a second, and
the certificate is refused from then on, at the agents' listener and for
renewal. `run` with a token and no controller stays up and joins once the
controller is there."""

import json
import os
import re
import sqlite3
import ssl
import subprocess
import time
import unittest

from harness import (BIN_DIR, Cluster, Proc, cert_serial, free_port, hello, https_json, main,
                     read_text, wait_for)

LIFETIME = 12  # seconds: cert-lifetime of these controllers
DIAL = re.compile(r'msg="?dialling\b')

CC = """apiVersion: edgesync.io/v1alpha1
kind: CollectorConfig
metadata: {name: cached}
spec: {intervalSeconds: 2, collectors: [cpu, memory]}
"""


class Base(unittest.TestCase):
    """A controller with a join listener and a short cert-lifetime, and an
    agent that joined with a token."""

    controller_flags = ()

    def setUp(self):
        self.c = Cluster(self, nodes=["seed"])
        self.start_controller()

    def start_controller(self, *extra):
        self.c.start_controller(["--cert-lifetime", str(LIFETIME)]
                                + list(self.controller_flags) + list(extra))
        wait_for("join listener", lambda: self.c._listening(self.c.join_port))

    def token(self, usages=1):
        out = self.c.ctl("create", "token", "--usages", str(usages)).stdout.splitlines()
        return out[0], out[1].split("--ca-hash ")[1].strip()

    def state_dir(self, node):
        return os.path.join(self.c.dir, f"agent-{node}")

    def pki(self, node, leaf):
        return os.path.join(self.state_dir(node), "pki", leaf)

    def base_args(self, node):
        return ["--controller-url", f"wss://localhost:{self.c.port}",
                "--join-url", f"https://localhost:{self.c.join_port}",
                "--node-name", node, "--state-dir", self.state_dir(node)]

    def run_agent(self, node, join=()):
        """edgesync-agent run with no config file; join: the token flags."""
        port = free_port()
        argv = [os.path.join(BIN_DIR, "edgesync-agent"), "run",
                "--http-listen", f"127.0.0.1:{port}", "--log-level", "debug",
                "--interval", "1"] + self.base_args(node) + list(join)
        p = Proc(f"agent-{node}", argv, os.path.join(self.c.dir, f"agent-{node}.log"))
        self.c.procs.append(p)
        self.c.agents[node] = p
        self.c.agent_ports[node] = port
        wait_for(f"agent {node} local endpoint",
                 lambda: self.c._alive_or_fail(p) and self.c._listening(port))
        return p

    def join_cmd(self, node, tok, ca_hash):
        r = subprocess.run([os.path.join(BIN_DIR, "edgesync-agent"), "join"]
                           + self.base_args(node) + ["--token", tok, "--ca-hash", ca_hash],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)

    def cond(self, node, typ="CertificateValid"):
        st = self.c.agent_state(node)
        for x in st["node"]["status"].get("conditions", []):
            if x["type"] == typ:
                return x
        return None

    def connected(self, node):
        return self.c.agent_state(node)["sync"]["connected"] is True

    def ctl_log(self):
        with open(os.path.join(self.c.dir, "controller.log")) as f:
            return f.read()

    def expire_offline(self, node):
        """Applies a CollectorConfig, stops the controller, waits for the
        certificate to expire; asserts the cached policy still rules and
        CertificateValid says Expired. Returns the old serial."""
        self.c.ctl("apply", "-f", "-", stdin=CC)
        wait_for("the CollectorConfig enforced", lambda: self.c.agent_state(node)
                 ["node"]["status"]["agent"]["intervalSeconds"] == 2)
        valid = self.cond(node)
        self.assertEqual(valid["status"], "True", valid)
        self.assertEqual(valid["reason"], "Valid")
        old = cert_serial(self.pki(node, "node.crt"))
        self.c.stop_controller()
        x = wait_for("CertificateValid=False Expired", lambda: (
            lambda c: c if c and c["status"] == "False" and c["reason"] == "Expired"
            else None)(self.cond(node)), timeout=LIFETIME + 20)
        self.assertRegex(x["message"], r"expired at \d{4}-\d\d-\d\dT")
        self.assertIn(old, x["message"])
        st = self.c.agent_state(node)
        self.assertFalse(st["sync"]["connected"])
        # Offline, the cached desired state is still what is enforced.
        self.assertEqual(st["node"]["status"]["agent"]["intervalSeconds"], 2)
        self.assertTrue(any(d["metadata"]["name"] == "cached" for d in st["desired"]))
        self.assertTrue(self.c.agents[node].alive())
        return old


class RenewTest(Base):
    def test_expired_offline_then_renewed_within_grace(self):
        tok, ca_hash = self.token()
        self.run_agent("edge-1", ["--token", tok, "--ca-hash", ca_hash])
        wait_for("edge-1 connected", lambda: self.connected("edge-1"))
        old = self.expire_offline("edge-1")
        key_before = read_text(self.pki("edge-1", "node.key"))
        self.start_controller()
        wait_for("renewed and reconnected", lambda: self.connected("edge-1")
                 and cert_serial(self.pki("edge-1", "node.crt")) != old, timeout=120)
        self.assertEqual(read_text(self.pki("edge-1", "node.key")), key_before,
                         "renewal changed the key")
        new = cert_serial(self.pki("edge-1", "node.crt"))
        self.assertIn("node renewed an expired certificate", self.ctl_log())
        self.assertRegex(self.ctl_log(), rf"old={old}\b.*serial={new}\b")
        # The token is not spent again: renewal is not a join.
        db = sqlite3.connect(os.path.join(self.c.state, "controller.db"), timeout=5)
        try:
            used = db.execute("SELECT used FROM bootstrap_tokens WHERE id = ?",
                              (tok[:6],)).fetchone()[0]
        finally:
            db.close()
        self.assertEqual(used, 1)


class GraceOffTest(Base):
    controller_flags = ("--renewal-grace", "0")

    def test_past_grace_refused_without_token(self):
        tok, ca_hash = self.token()
        self.join_cmd("edge-2", tok, ca_hash)
        self.run_agent("edge-2")  # no token: it cannot join again
        wait_for("edge-2 connected", lambda: self.connected("edge-2"))
        old = self.expire_offline("edge-2")
        self.start_controller()
        x = wait_for("CertificateValid=False GraceExpired", lambda: (
            lambda c: c if c and c["reason"] == "GraceExpired" else None)(
                self.cond("edge-2")), timeout=120)
        self.assertEqual(x["status"], "False")
        self.assertIn("new bootstrap token", x["message"])
        self.assertIn("renewal-grace 0", x["message"])
        self.assertEqual(cert_serial(self.pki("edge-2", "node.crt")), old)
        self.assertFalse(self.connected("edge-2"))
        self.assertIn("reason=GraceExpired", self.ctl_log())

    def test_past_grace_joins_again_with_its_token(self):
        tok, ca_hash = self.token(usages=2)
        self.run_agent("edge-3", ["--token", tok, "--ca-hash", ca_hash])
        wait_for("edge-3 connected", lambda: self.connected("edge-3"))
        old = self.expire_offline("edge-3")
        self.start_controller()
        wait_for("joined again and reconnected", lambda: self.connected("edge-3")
                 and cert_serial(self.pki("edge-3", "node.crt")) != old, timeout=120)
        self.assertIn("reason=GraceExpired", self.ctl_log())
        # One log for both controllers: the first join, and the one after
        # the refusal, with the same key.
        self.assertEqual(len(re.findall(r"node joined.*node=edge-3", self.ctl_log())), 2)


class RevokeTest(Base):
    def test_delete_node_closes_within_a_second_and_refuses(self):
        tok, ca_hash = self.token()
        self.join_cmd("edge-4", tok, ca_hash)
        self.run_agent("edge-4", ["--token-file", self.token_file(tok),
                                  "--ca-hash", ca_hash])
        wait_for("edge-4 connected", lambda: self.connected("edge-4"))
        t0 = time.monotonic()
        self.c.ctl("delete", "node", "edge-4")
        wait_for("session closed", lambda: not self.connected("edge-4"),
                 timeout=5, interval=0.02)
        closed = time.monotonic() - t0
        print(f"session closed {closed:.3f} s after delete node returned")
        self.assertLess(closed, 1.0)
        agent = self.c.agents["edge-4"]
        dials = len(DIAL.findall(agent.output()))
        x = wait_for("CertificateValid=False Revoked", lambda: (
            lambda c: c if c and c["reason"] == "Revoked" else None)(
                self.cond("edge-4")), timeout=10)
        self.assertEqual(x["status"], "False")
        self.assertIn("revoked", x["message"])
        self.assertIn("new bootstrap token", x["message"])

        cert, key = self.pki("edge-4", "node.crt"), self.pki("edge-4", "node.key")
        # The reconnect is refused before welcome.
        ws = self.c.ws(cert, key)
        ws.send_json(hello("edge-4"))
        _, m = ws.recv()
        self.assertEqual(m["type"], "error", m)
        self.assertEqual(m["code"], "IdentityMismatch")
        self.assertEqual(m.get("reason"), "CertificateRevoked")
        ws.close()
        # So is a renewal with it.
        csr = subprocess.run(["openssl", "req", "-new", "-key", key, "-subj", "/CN=edge-4"],
                             capture_output=True, text=True, check=True).stdout
        ctx = ssl.create_default_context(cafile=self.pki("edge-4", "ca.crt"))
        st, body = https_json("localhost", self.c.join_port, ctx, "POST",
                              "/v1/join/renew",
                              {"certificate": read_text(cert), "csr": csr})
        self.assertEqual(st, 403, body)
        self.assertEqual(body["reason"], "CertificateRevoked")
        # The agent does not hammer: its next dial waits 30 to 60 s.
        time.sleep(3)
        self.assertTrue(agent.alive())
        self.assertFalse(self.connected("edge-4"))
        self.assertEqual(len(DIAL.findall(agent.output())), dials,
                         "the agent redialled within seconds of the refusal")

    def token_file(self, tok):
        path = os.path.join(self.c.dir, "token")
        with open(path, "w") as f:
            f.write(tok + "\n")
        os.chmod(path, 0o600)
        return path


class JoinLaterTest(Base):
    def test_run_with_a_token_and_no_controller_stays_up_and_joins(self):
        tok, ca_hash = self.token()
        self.c.stop_controller()
        p = self.run_agent("edge-5", ["--token", tok, "--ca-hash", ca_hash])
        wait_for("two failed join attempts logged", lambda: p.output().count(
            "failed, retrying") >= 2, timeout=30)
        self.assertTrue(p.alive(), p.output()[-3000:])
        x = self.cond("edge-5")
        self.assertEqual((x["status"], x["reason"]), ("False", "NotJoined"), x)
        self.start_controller()
        wait_for("joined and connected", lambda: self.connected("edge-5"), timeout=90)
        self.assertEqual(self.cond("edge-5")["status"], "True")

    def test_a_definite_refusal_still_exits_2(self):
        tok, _ = self.token()
        wrong = "sha256:" + "0" * 64
        r = subprocess.run([os.path.join(BIN_DIR, "edgesync-agent"), "run",
                            "--http-listen", ""] + self.base_args("edge-6")
                           + ["--token", tok, "--ca-hash", wrong],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("ca-hash", r.stdout + r.stderr)


if __name__ == "__main__":
    main()
