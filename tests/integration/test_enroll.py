"""Joining with bootstrap tokens against a real controller: a good token
gives the node a certificate for a key made on the node (mode 0600) and the
node syncs with it; a wrong CA hash sends nothing; an expired, used-up or
deleted token, a name outside the token's prefix and a second key for an
enrolled name are each refused with exit status 2 and nothing written."""

import json
import os
import shutil
import sqlite3
import ssl
import subprocess
import tempfile
import time
import unittest

from harness import BIN_DIR, Cluster, Proc, free_port, hello, main, wait_for

TD = "edgesync.local"


class Base(unittest.TestCase):
    """A controller with a join listener, and the helpers of both tests."""

    def setUp(self):
        self.c = Cluster(self, nodes=["seed"])
        self.join_port = free_port()
        self.c.start_controller(["--join-listen", f"127.0.0.1:{self.join_port}"])
        wait_for("join listener", lambda: self.c._listening(self.join_port))

    # -- helpers -----------------------------------------------------------

    def token(self, *flags):
        """create token: (token, ca-hash) from the two lines it prints."""
        out = self.c.ctl("create", "token", *flags).stdout.splitlines()
        self.assertEqual(len(out), 2, out)
        tok = out[0]
        self.assertRegex(tok, r"^[a-z0-9]{6}\.[a-z0-9]{16}$")
        self.assertIn(f"--token {tok}", out[1])
        return tok, out[1].split("--ca-hash ")[1].strip()

    def join_args(self, node, tok, ca_hash, state):
        return ["--controller-url", f"wss://localhost:{self.c.port}",
                "--join-url", f"https://localhost:{self.join_port}",
                "--node-name", node, "--state-dir", state,
                "--token", tok, "--ca-hash", ca_hash]

    def join(self, node, tok, ca_hash, state=None):
        state = state or os.path.join(self.c.dir, f"agent-{node}")
        r = subprocess.run([os.path.join(BIN_DIR, "edgesync-agent"), "join"]
                           + self.join_args(node, tok, ca_hash, state),
                           capture_output=True, text=True, timeout=60)
        return r, state

    def run_agent(self, node, tok, ca_hash, state):
        """edgesync-agent run with the join settings and no config file."""
        port = free_port()
        argv = [os.path.join(BIN_DIR, "edgesync-agent"), "run",
                "--http-listen", f"127.0.0.1:{port}", "--log-level", "debug",
                "--interval", "1"] + self.join_args(node, tok, ca_hash, state)
        p = Proc(f"agent-{node}", argv, os.path.join(self.c.dir, f"agent-{node}.log"))
        self.c.procs.append(p)
        self.c.agents[node] = p
        self.c.agent_ports[node] = port
        wait_for(f"agent {node} local endpoint",
                 lambda: self.c._alive_or_fail(p) and self.c._listening(port))
        return p

    def connected(self, node):
        n = self.c.node(node) or {}
        return n.get("status", {}).get("sync", {}).get("connected") is True

    def token_row(self, tid):
        db = sqlite3.connect(os.path.join(self.c.state, "controller.db"), timeout=5)
        try:
            return db.execute("SELECT used, usages FROM bootstrap_tokens WHERE id = ?",
                              (tid,)).fetchone()
        finally:
            db.close()

    def assert_refused(self, r, state, reason):
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(reason, r.stderr)
        pki = os.path.join(state, "pki")
        self.assertFalse(os.path.exists(os.path.join(pki, "node.crt")),
                         "a refused join wrote a certificate")
        self.assertFalse(os.path.exists(os.path.join(pki, "ca.crt")),
                         "a refused join wrote a CA bundle")



class EnrollTest(Base):
    def test_good_token_joins_and_syncs(self):
        tok, ca_hash = self.token("--usages", "2", "--labels", "site=berlin",
                                  "--name-prefix", "edge-")
        r, state = self.join("edge-1", tok, ca_hash)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        key = os.path.join(state, "pki", "node.key")
        crt = os.path.join(state, "pki", "node.crt")
        self.assertEqual(os.stat(key).st_mode & 0o777, 0o600)
        # The certificate: one URI SAN with the node's SPIFFE ID, not a CA.
        info = ssl._ssl._test_decode_cert(crt)
        self.assertEqual(info["subjectAltName"],
                         (("URI", f"spiffe://{TD}/node/edge-1"),))
        text = subprocess.run(["openssl", "x509", "-in", crt, "-noout", "-text"],
                              capture_output=True, text=True).stdout
        if text:
            self.assertIn("CA:FALSE", text)
        # The store recorded it; the key never left the node: the store
        # holds the hash of its public key only.
        db = sqlite3.connect(os.path.join(self.c.state, "controller.db"), timeout=5)
        rows = db.execute("SELECT node, key_pin, not_after FROM certificates").fetchall()
        db.close()
        self.assertEqual([x[0] for x in rows], ["edge-1"])
        with open(key) as f:
            key_text = f.read()
        with open(os.path.join(self.c.dir, "controller.log")) as f:
            self.assertNotIn(key_text.splitlines()[1], f.read())
        self.assertEqual(self.token_row(tok[:6]), (1, 2))
        # `run` with the same settings uses the certificate: no second join.
        p = self.run_agent("edge-1", tok, ca_hash, state)
        wait_for("edge-1 connected", lambda: self.connected("edge-1"))
        # The token's labels are the node's.
        self.assertEqual(self.c.node("edge-1")["metadata"]["labels"].get("site"),
                         "berlin")
        self.assertEqual(self.token_row(tok[:6]), (1, 2))
        self.assertTrue(p.alive())

    def test_check_with_a_token_before_the_join(self):
        """`check` on a node that has not joined yet: `run` would join
        first, so the missing certificate is not a failure."""
        tok, ca_hash = self.token()
        state = os.path.join(self.c.dir, "agent-edge-c")
        r = subprocess.run([os.path.join(BIN_DIR, "edgesync-agent"), "check",
                            "--collector-backend", "procfs"]
                           + self.join_args("edge-c", tok, ca_hash, state),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("run joins first with the token", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(state, "pki", "node.crt")))

    def test_run_without_the_token_after_join(self):
        """`join`, then `run` with only controller-url: the node's files in
        <state-dir>/pki/ are the credentials."""
        tok, ca_hash = self.token()
        r, state = self.join("edge-2", tok, ca_hash)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        port = free_port()
        p = Proc("agent-edge-2", [
            os.path.join(BIN_DIR, "edgesync-agent"), "run", "--node-name", "edge-2",
            "--controller-url", f"wss://localhost:{self.c.port}", "--state-dir", state,
            "--http-listen", f"127.0.0.1:{port}", "--interval", "1"],
            os.path.join(self.c.dir, "agent-edge-2.log"))
        self.c.procs.append(p)
        wait_for("edge-2 connected without its token", lambda: self.c._alive_or_fail(p)
                 and self.connected("edge-2"))

    def test_run_joins_when_it_has_no_certificate(self):
        tok, ca_hash = self.token()
        state = os.path.join(self.c.dir, "agent-edge-2")
        self.run_agent("edge-2", tok, ca_hash, state)
        wait_for("edge-2 connected", lambda: self.connected("edge-2"))
        self.assertTrue(os.path.exists(os.path.join(state, "pki", "node.crt")))

    def test_wrong_ca_hash_sends_nothing(self):
        tok, _ = self.token()
        r, state = self.join("edge-1", tok, "sha256:" + "ab" * 32)
        self.assert_refused(r, state, "does not match ca-hash")
        self.assertFalse(os.path.exists(os.path.join(state, "pki")))
        self.assertEqual(self.token_row(tok[:6]), (0, 1))
        with open(os.path.join(self.c.dir, "controller.log")) as f:
            log = f.read()
        self.assertNotIn("join refused", log)
        self.assertNotIn("node joined", log)

    def test_bad_settings_are_usage_errors(self):
        tok, ca_hash = self.token()
        r, _ = self.join("edge-1", tok, "sha256:1234")
        self.assertEqual(r.returncode, 2)
        self.assertIn("ca-hash", r.stderr)
        r, _ = self.join("edge-1", "abc.def", ca_hash)
        self.assertEqual(r.returncode, 2)
        self.assertIn("token", r.stderr)
        self.assertNotIn("def", r.stderr.replace("<id>", ""))

    def test_expired_token(self):
        tok, ca_hash = self.token()
        db = sqlite3.connect(os.path.join(self.c.state, "controller.db"), timeout=5)
        db.execute("UPDATE bootstrap_tokens SET expires = ? WHERE id = ?",
                   (int(time.time()) - 1, tok[:6]))
        db.commit()
        db.close()
        r, state = self.join("edge-1", tok, ca_hash)
        self.assert_refused(r, state, "TokenExpired")

    def test_used_up_token(self):
        tok, ca_hash = self.token("--usages", "1")
        r, _ = self.join("edge-1", tok, ca_hash)
        self.assertEqual(r.returncode, 0, r.stderr)
        r, state = self.join("edge-2", tok, ca_hash)
        self.assert_refused(r, state, "TokenUsedUp")
        self.assertFalse(os.path.exists(os.path.join(state, "pki", "node.key")))

    def test_deleted_token(self):
        tok, ca_hash = self.token()
        self.c.ctl("delete", "token", tok[:6])
        self.assertNotIn(tok[:6], self.c.ctl("get", "tokens").stdout)
        r, state = self.join("edge-1", tok, ca_hash)
        self.assert_refused(r, state, "TokenInvalid")

    def test_name_outside_prefix(self):
        tok, ca_hash = self.token("--name-prefix", "edge-")
        r, state = self.join("db-1", tok, ca_hash)
        self.assert_refused(r, state, "NameOutsidePrefix")
        self.assertEqual(self.token_row(tok[:6]), (0, 1))

    def test_second_key_for_an_enrolled_name(self):
        tok, ca_hash = self.token("--usages", "5")
        r, _ = self.join("edge-1", tok, ca_hash)
        self.assertEqual(r.returncode, 0, r.stderr)
        other = os.path.join(self.c.dir, "impostor")
        r, state = self.join("edge-1", tok, ca_hash, state=other)
        self.assert_refused(r, state, "NameTaken")
        # The same key may join again (its certificate was lost).
        first = os.path.join(self.c.dir, "agent-edge-1")
        os.unlink(os.path.join(first, "pki", "node.crt"))
        r, _ = self.join("edge-1", tok, ca_hash, state=first)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_key_others_can_read_is_refused(self):
        tok, ca_hash = self.token("--usages", "5")
        r, state = self.join("edge-k", tok, ca_hash)
        self.assertEqual(r.returncode, 0, r.stderr)
        key = os.path.join(state, "pki", "node.key")
        self.assertEqual(os.stat(key).st_mode & 0o777, 0o600)
        os.unlink(os.path.join(state, "pki", "node.crt"))
        os.chmod(key, 0o644)
        r, _ = self.join("edge-k", tok, ca_hash, state=state)
        self.assertEqual(r.returncode, 2, r)
        self.assertIn("mode 0644 lets group or others at it", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(state, "pki", "node.crt")))


class CaInitTest(unittest.TestCase):
    def test_one_file_for_certificate_and_key_is_refused(self):
        """`ca init` with ca-cert and ca-key naming one file would leave
        only the certificate there: it is refused, and nothing written."""
        d = tempfile.mkdtemp(prefix="es-it-ca-")
        self.addCleanup(shutil.rmtree, d, True)
        same = os.path.join(d, "ca.pem")
        r = subprocess.run([os.path.join(BIN_DIR, "edgesync-controller"), "ca", "init",
                            "--state-dir", d, "--ca-cert", same, "--ca-key", same],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r)
        self.assertIn("is also ca-cert", r.stderr)
        self.assertFalse(os.path.exists(same))


class RevokeTest(Base):
    """edgesyncctl delete node: the session closes, the certificate is
    refused from then on, and the name may join again with a new key."""

    def log(self):
        with open(os.path.join(self.c.dir, "controller.log")) as f:
            return f.read()

    def assert_refused_session(self, cert, key, node):
        ws = self.c.ws(cert, key)
        try:
            ws.send_json(hello(node))
            _, m = ws.recv()
        finally:
            ws.close()
        self.assertEqual((m["type"], m["code"]), ("error", "IdentityMismatch"), m)
        self.assertIn("revoked certificate refused", self.log())

    def test_delete_node_closes_and_refuses(self):
        tok, ca_hash = self.token("--usages", "3")
        state = os.path.join(self.c.dir, "agent-edge-1")
        self.run_agent("edge-1", tok, ca_hash, state)
        wait_for("edge-1 connected", lambda: self.connected("edge-1"))
        t0 = time.monotonic()
        self.c.ctl("delete", "node", "edge-1")
        wait_for("edge-1 disconnected", lambda: not self.connected("edge-1"),
                 timeout=5)
        print(f"session closed {time.monotonic() - t0:.3f} s after delete node")
        # The agent redials only after 30 to 60 s; a connection with its
        # certificate now is refused.
        self.assert_refused_session(os.path.join(state, "pki", "node.crt"),
                                    os.path.join(state, "pki", "node.key"), "edge-1")
        self.assertFalse(self.connected("edge-1"))
        # The name is free for another key.
        r, _ = self.join("edge-1", tok, ca_hash,
                         state=os.path.join(self.c.dir, "new-edge-1"))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_delete_node_with_a_certificate_of_another_issuer(self):
        """A node whose certificate the signing CA did not issue (here the
        development one): its session's serial is recorded revoked."""
        self.c.start_agent("seed")
        wait_for("seed connected", lambda: self.connected("seed"))
        self.c.ctl("delete", "node", "seed")
        wait_for("seed disconnected", lambda: not self.connected("seed"), timeout=5)
        self.assert_refused_session(*self.c.node_cert("seed"), "seed")
        r = self.c.ctl("delete", "node", "nonexistent", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("NotFound", r.stderr)


if __name__ == "__main__":
    main()
