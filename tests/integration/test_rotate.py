"""Certificate rotation (PROTOCOL.md "Renewal"; README "Certificate
rotation"):

- renewal over the session: a joined agent whose controller signs
  certificates of 20 s renews at half their lifetime, several times, under
  steady reports (one a second); every report is stored exactly once, the
  CollectorConfig stays applied throughout, the controller records each new
  serial and the node's new key, and the session uses the newest
  certificate;
- the serving CA's overlap window: a controller restarted with a
  trust-bundle of old and new CA hands it to the agent in the welcome, and
  the agent writes it to its CA file and reconnects with it; a bundle
  without the CA of the controller it talks to is refused and the file
  kept;
- files replaced on disk, as a Kubernetes Secret or CSI volume does (a
  `..data` symbolic link swapped to a new directory): the agent reconnects
  with the new certificate; a new set whose key does not match is logged
  and the loaded one kept, the session staying up.
"""

import os
import re
import sqlite3
import ssl
import subprocess
import time
import unittest

from harness import BIN_DIR, Cluster, Proc, free_port, hello, main, read_text, wait_for

CC = """apiVersion: edgesync.io/v1alpha1
kind: CollectorConfig
metadata: {name: rotate}
spec: {intervalSeconds: 1, collectors: [cpu, memory]}
"""
LIFETIME = 20
TD = "edgesync.local"


def file_serial(path):
    """The serial of the certificate file, lower-case hex without leading
    zeros."""
    return ssl._ssl._test_decode_cert(path)["serialNumber"].lower().lstrip("0")


def log_text(c, name):
    return read_text(os.path.join(c.dir, name))


def session_serials(c, node):
    """The certificate serial of each session the controller accepted for
    node, in order (its "agent connected" log lines)."""
    out = []
    for line in log_text(c, "controller.log").splitlines():
        if 'msg="agent connected"' in line and f"node={node} " in line:
            m = re.search(r"serial=([0-9a-f]+)", line)
            if m:
                out.append(m.group(1).lstrip("0"))
    return out


def applied(st, name):
    """1 when the agent's /v1/state shows the desired object name with its
    condition Applied True."""
    for d in st.get("desired", []):
        if d["metadata"]["name"] == name:
            return any(x["type"] == "Applied" and x["status"] == "True"
                       for x in d.get("status", {}).get("conditions", []))
    return False


def assert_exactly_once(test, c, node):
    st = c.agent_state(node)
    nxt = st["sync"]["nextSeq"]
    wait_for("every report acknowledged", lambda: c.agent_state(node)
             ["sync"]["ackedSeq"] >= nxt - 1, timeout=40)
    seqs = [r["seq"] for r in c.reports(node)]
    test.assertEqual(len(seqs), len(set(seqs)), "a report stored twice")
    test.assertEqual(sorted(seqs), list(range(1, len(seqs) + 1)),
                     "a report sequence number is missing")
    test.assertGreaterEqual(len(seqs), nxt - 1)


class RenewTest(unittest.TestCase):
    def test_renewal_under_steady_reports(self):
        c = Cluster(self, nodes=["seed"])
        c.start_controller(["--cert-lifetime", str(LIFETIME)])
        node = "edge-r"
        try:
            state = join_and_run(c, node)
            c.ctl("apply", "-f", "-", stdin=CC)
            wait_for("CollectorConfig applied", lambda: applied(c.agent_state(node),
                                                               "rotate"))
            crt = os.path.join(state, "pki", "node.crt")
            key = os.path.join(state, "pki", "node.key")
            first = file_serial(crt)
            first_key = read_text(key)

            # Two renewals at least: each at 50..60 % of 20 s. The policy
            # stays applied at every look meanwhile.
            deadline = time.time() + 6 * LIFETIME
            looks = 0
            while time.time() < deadline:
                self.assertTrue(applied(c.agent_state(node), "rotate"),
                                "the CollectorConfig was not applied at a look")
                looks += 1
                if log_text(c, "controller.log").count('msg="certificate renewed"') >= 2 \
                        and len(set(session_serials(c, node))) >= 3:
                    break
                time.sleep(0.5)
            renewed = log_text(c, "controller.log").count('msg="certificate renewed"')
            self.assertGreaterEqual(renewed, 2, "fewer than two renewals")
            self.assertGreater(looks, 10)

            # The session uses the newest certificate: its serial is the
            # file's, and the store recorded it with the node's new key.
            now = wait_for("the session on the newest certificate", lambda: (
                lambda s, f: f if s and s[-1] == f else None)(
                    session_serials(c, node), file_serial(crt)), timeout=30)
            self.assertNotEqual(now, first)
            self.assertNotEqual(read_text(key), first_key, "the key was not renewed")
            self.assertEqual(os.stat(key).st_mode & 0o777, 0o600)
            self.assertFalse(os.path.exists(key + ".next"))
            db = sqlite3.connect(os.path.join(c.state, "controller.db"), timeout=5)
            try:
                serials = [r[0].lstrip("0") for r in db.execute(
                    "SELECT serial FROM certificates WHERE node = ? AND revoked = 0",
                    (node,))]
                (pin,) = db.execute("SELECT key_pin FROM enrollments WHERE node = ?",
                                    (node,)).fetchone()
                (last_pin,) = db.execute(
                    "SELECT key_pin FROM certificates WHERE node = ? ORDER BY issued "
                    "DESC, rowid DESC LIMIT 1", (node,)).fetchone()
            finally:
                db.close()
            self.assertIn(now, serials)
            self.assertIn(first, serials)
            self.assertGreaterEqual(len(serials), 3)
            self.assertEqual(pin, last_pin, "the enrollment does not hold the new key")
            self.assertTrue(applied(c.agent_state(node), "rotate"))
            self.assertEqual(c.agent_state(node)["node"]["status"]["agent"]
                             ["intervalSeconds"], 1)
            assert_exactly_once(self, c, node)
            self.assertIn("certificate renewed; reconnecting with it",
                          log_text(c, f"agent-{node}.log"))
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


def join_and_run(c, node, extra=("--interval", "1")):
    """A token, then `edgesync-agent run` joining with it (and the flags
    extra); returns the agent's state directory once it is connected."""
    out = c.ctl("create", "token").stdout.splitlines()
    tok, ca_hash = out[0], out[1].split("--ca-hash ")[1].strip()
    state = os.path.join(c.dir, f"agent-{node}")
    port = free_port()
    argv = [os.path.join(BIN_DIR, "edgesync-agent"), "run",
            "--http-listen", f"127.0.0.1:{port}", "--log-level", "debug",
            "--collector-backend", "procfs",
            "--controller-url", f"wss://localhost:{c.port}",
            "--join-url", f"https://localhost:{c.join_port}",
            "--node-name", node, "--state-dir", state,
            "--token", tok, "--ca-hash", ca_hash] + list(extra)
    p = Proc(f"agent-{node}", argv, os.path.join(c.dir, f"agent-{node}.log"))
    c.procs.append(p)
    c.agents[node] = p
    c.agent_ports[node] = port
    wait_for("agent connected", lambda: c._alive_or_fail(p) and connected(c, node))
    return state


def connected(c, node):
    return (c.node(node) or {}).get("status", {}).get("sync", {}).get("connected") is True


def recv_type(ws, want, limit=50):
    """The next message of type want on the raw session ws."""
    for _ in range(limit):
        m = ws.recv()
        if m[0] == "close":
            raise AssertionError(f"session closed ({m[1]} {m[2]}) waiting for {want}")
        if m[1].get("type") == want:
            return m[1]
    raise AssertionError(f"no {want} in {limit} messages")


class OncePerSessionTest(unittest.TestCase):
    def test_second_request_refused(self):
        """A session gets one certificate: a second certificateRequest on it
        is refused (AlreadyRenewed, with retryAfterSeconds) and stores
        nothing, and the session stays up."""
        c = Cluster(self, nodes=["seed"])
        c.start_controller()
        node = "edge-o"
        try:
            state = join_and_run(c, node)
            c.agents[node].stop()
            crt = os.path.join(state, "pki", "node.crt")
            key = os.path.join(state, "pki", "node.key")
            csr = subprocess.run(["openssl", "req", "-new", "-key", key, "-subj",
                                  f"/CN={node}"], check=True, capture_output=True,
                                 text=True, timeout=30).stdout
            ws = c.ws(crt, key)
            try:
                ws.send_json(hello(node))
                w = recv_type(ws, "welcome")
                self.assertIn("certificate-renewal", w.get("capabilities", []))
                ws.send_json({"type": "certificateRequest", "csr": csr})
                first = recv_type(ws, "certificate")
                ws.send_json({"type": "certificateRequest", "csr": csr})
                again = recv_type(ws, "certificateRefused")
                self.assertEqual(again["reason"], "AlreadyRenewed")
                self.assertGreaterEqual(again.get("retryAfterSeconds", 0), 1)
            finally:
                ws.close()
            with sqlite3.connect(os.path.join(c.state, "controller.db"), timeout=5) as db:
                n = db.execute("SELECT count(*) FROM certificates WHERE node = ?",
                               (node,)).fetchone()[0]
            self.assertEqual(n, 2, "the join's certificate and one renewal")
            self.assertIn(first["serial"], log_text(c, "controller.log"))
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


class TrustBundleTest(unittest.TestCase):
    def test_overlap_window(self):
        c = Cluster(self, nodes=["seed"])
        c.start_controller()
        node = "edge-t"
        try:
            state = join_and_run(c, node)
            ca_file = os.path.join(state, "pki", "ca.crt")
            old_ca = read_text(os.path.join(c.dev, "ca.crt"))
            self.assertEqual(read_text(ca_file), old_ca)
            new_ca, _ = c.mkcert("next-ca", "next CA", ca=False, client=False,
                                 is_ca=True)
            both = os.path.join(c.dir, "both.pem")
            with open(both, "w") as f:
                f.write(old_ca + read_text(new_ca))

            # Step 1 of the rotation: old and new in trust-bundle.
            c.stop_controller()
            n = len(session_serials(c, node))
            c.start_controller(["--trust-bundle", both])
            wait_for("the bundle written", lambda: read_text(ca_file) == read_text(both),
                     timeout=40)
            wait_for("a session after the bundle changed", lambda:
                     len(session_serials(c, node)) >= n + 2 and connected(c, node),
                     timeout=40)
            self.assertIn("trust bundle updated from the controller",
                          log_text(c, f"agent-{node}.log"))

            # A bundle that would refuse this controller: not taken.
            c.stop_controller()
            c.start_controller(["--trust-bundle", new_ca])
            wait_for("the bundle refused", lambda: "trust bundle from the "
                     "controller refused" in log_text(c, f"agent-{node}.log"),
                     timeout=40)
            self.assertEqual(read_text(ca_file), read_text(both))
            wait_for("still connected", lambda: connected(c, node), timeout=30)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


class FileReloadTest(unittest.TestCase):
    """The agent's files in the layout of a Kubernetes Secret volume:
    DIR/..data -> ..v1, DIR/tls.crt -> ..data/tls.crt (and key, ca)."""

    def volume(self, c):
        d = os.path.join(c.dir, "secret")
        os.makedirs(d)
        for name in ("tls.crt", "tls.key", "ca.crt"):
            os.symlink(os.path.join("..data", name), os.path.join(d, name))
        return d

    def publish(self, d, version, cert, key, ca):
        """Writes the files into ..<version> and swaps ..data to it at once,
        as kubelet's atomic writer does."""
        vd = os.path.join(d, ".." + version)
        os.makedirs(vd)
        for src, name in ((cert, "tls.crt"), (key, "tls.key"), (ca, "ca.crt")):
            with open(src, "rb") as f, open(os.path.join(vd, name), "wb") as o:
                o.write(f.read())
        os.chmod(os.path.join(vd, "tls.key"), 0o600)
        tmp = os.path.join(d, "..data_tmp")
        os.symlink(".." + version, tmp)
        os.rename(tmp, os.path.join(d, "..data"))

    def test_replaced_files_are_taken(self):
        node = "node-f"
        c = Cluster(self, nodes=[node])
        c.start_controller()
        try:
            ca = os.path.join(c.dev, "ca.crt")
            d = self.volume(c)
            crt0, key0 = c.node_cert(node)
            self.publish(d, "v1", crt0, key0, ca)
            c.start_agent(node, extra=["--cert", os.path.join(d, "tls.crt"),
                                       "--key", os.path.join(d, "tls.key"),
                                       "--ca", os.path.join(d, "ca.crt"),
                                       "--interval", "1",
                                       "--collector-backend", "procfs"])
            wait_for("first session", lambda: session_serials(c, node))
            self.assertEqual(session_serials(c, node)[-1], file_serial(crt0))

            # A second certificate from the same CA, swapped in.
            crt1, key1 = c.mkcert("node-f-2", node, uri=f"spiffe://{TD}/node/{node}")
            self.publish(d, "v2", crt1, key1, ca)
            want = file_serial(crt1)
            wait_for("a session with the new certificate", lambda:
                     session_serials(c, node)[-1] == want, timeout=30)
            self.assertIn("credential files changed on disk; reconnecting",
                          log_text(c, f"agent-{node}.log"))

            # A bad set (the key of another certificate): logged, the
            # loaded one kept, no reconnect.
            n = len(session_serials(c, node))
            _, other_key = c.mkcert("node-f-3", node, uri=f"spiffe://{TD}/node/{node}")
            self.publish(d, "v3", crt0, other_key, ca)
            wait_for("the bad set logged", lambda: "unusable; keeping the loaded ones"
                     in log_text(c, f"agent-{node}.log"), timeout=20)
            time.sleep(3)
            self.assertEqual(len(session_serials(c, node)), n, "reconnected on a bad set")
            self.assertTrue(c.agent_state(node)["sync"]["connected"])
            assert_exactly_once(self, c, node)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


if __name__ == "__main__":
    main()
