"""Bad credential files do not stop the agent: with a missing, empty,
unreadable or non-PEM file, an expired or not-yet-valid certificate, a key
that does not match it, or a CA file that holds no CA, the agent keeps
collecting, enforcing its cached desired state and serving its local
endpoint, offline; it says which file and what is wrong (an error line,
the node condition CredentialsValid=False with a reason naming the file,
lastError), reads the files again every few seconds and connects once they
are fixed, without a restart. `edgesync-agent check` shows each file's
state and exits 1 while the agent could not connect. Configuration syntax
errors still stop it with exit status 2."""

import os
import shutil
import subprocess
import unittest

from harness import BIN_DIR, ClassScope, Cluster, main, wait_for

CC = """apiVersion: edgesync.io/v1alpha1
kind: CollectorConfig
metadata: {name: cached}
spec: {intervalSeconds: 2, collectors: [cpu, memory]}
"""
AGENT_FLAGS = ["--collector-backend", "procfs"]


def condition(state, ctype):
    node = state.get("node") or {}
    for c in node.get("status", {}).get("conditions", []):
        if c["type"] == ctype:
            return c
    return None


class CredentialsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # One controller for the class; each test starts its own agents.
        cls.c = Cluster(ClassScope(), nodes=["node-a", "node-b"])
        cls.c.start_controller()
        cls.c.ctl("apply", "-f", "-", stdin=CC)
        # A first, good run caches the CollectorConfig in the agent's store.
        cls.state_dir = os.path.join(cls.c.dir, "agent-state")
        a = cls.c.start_agent("node-a", extra=AGENT_FLAGS, state_dir=cls.state_dir)
        wait_for("the CollectorConfig applied", lambda: (
            cls.c.agent_state()["node"] or {}).get("status", {}).get(
                "agent", {}).get("intervalSeconds") == 2)
        a.stop()
        cls.cert, cls.key = cls.c.node_cert("node-a")
        cls.ca = os.path.join(cls.c.dev, "ca.crt")

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def path(self, name, text=None):
        p = os.path.join(self.c.dir, name)
        if text is not None:
            with open(p, "w") as f:
                f.write(text)
        return p

    def run_bad(self, flags, reason, want, setting, path):
        """Starts the agent with flags (cert, key or ca replaced), checks
        that it runs offline saying why, and that check agrees."""
        agent = self.c.start_agent("node-a", extra=AGENT_FLAGS + flags,
                                   state_dir=self.state_dir)
        try:
            st = wait_for(f"CredentialsValid=False ({reason})", lambda: (
                lambda s: s if (condition(s, "CredentialsValid") or {}).get(
                    "status") == "False" else None)(self.c.agent_state()))
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e
        cond = condition(st, "CredentialsValid")
        self.assertEqual(cond["reason"], reason, cond)
        self.assertIn(f"{setting} {path}: ", cond["message"])
        self.assertIn(want, cond["message"])
        self.assertIn(want, st["sync"]["lastError"])
        self.assertFalse(st["sync"]["connected"])
        # Still collecting, at the cached CollectorConfig's interval.
        self.assertTrue(agent.alive())
        self.assertEqual(st["node"]["status"]["agent"]["intervalSeconds"], 2)
        first = st["node"]["status"]["usage"]
        wait_for("another collection round", lambda: (
            self.c.agent_state()["node"]["status"]["usage"] != first), timeout=10)
        ready = condition(st, "Ready")
        self.assertEqual(ready["status"], "True", ready)
        # One error line names the file.
        log = agent.output()
        errors = [ln for ln in log.splitlines()
                  if "level=error" in ln and "component=sync" in ln]
        self.assertTrue(any(path in ln and reason in ln for ln in errors), log)
        # check reports the same file and exits 1.
        r = subprocess.run([os.path.join(BIN_DIR, "edgesync-agent"), "check",
                            "--config", self.c.agent_conf("node-a")]
                           + AGENT_FLAGS + flags,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rows = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.strip()}
        row = rows[f"credentials/{setting}"]
        self.assertEqual(row.split()[1], "missing" if reason.endswith("Missing")
                         else "invalid", row)
        self.assertIn(want, row)
        self.assertIn("controller", rows)
        self.assertEqual(rows["controller"].split()[1], "fail")
        agent.stop()
        return agent

    def test_missing_files(self):
        for setting, reason in (("ca", "CAFileMissing"), ("cert", "CertFileMissing"),
                                ("key", "KeyFileMissing")):
            with self.subTest(setting=setting):
                p = self.path(f"missing-{setting}.pem")
                self.run_bad([f"--{setting}", p], reason, "no such file", setting, p)

    def test_empty_and_not_pem(self):
        cases = [("ca", "", "CAFileInvalid", "empty file"),
                 ("ca", "hello\n", "CAFileInvalid", "not a PEM certificate"),
                 ("cert", "\n\n", "CertFileInvalid", "empty file"),
                 ("key", "garbage", "KeyFileInvalid", "not a PEM private key")]
        for i, (setting, text, reason, want) in enumerate(cases):
            with self.subTest(setting=setting, text=text):
                p = self.path(f"bad-{i}.pem", text)
                self.run_bad([f"--{setting}", p], reason, want, setting, p)

    def test_unreadable(self):
        # A directory cannot be read as a file, also by root.
        p = self.path("a-directory")
        os.makedirs(p, exist_ok=True)
        self.run_bad(["--cert", p], "CertFileInvalid", "not a regular file", "cert", p)

    def test_validity(self):
        cert, key = self.c.mkcert("expired", "node-a", uri="spiffe://edgesync.local/node/node-a",
                                  not_before="2020-01-01T00:00:00Z",
                                  not_after="2021-01-01T00:00:00Z")
        self.run_bad(["--cert", cert, "--key", key], "CertFileInvalid",
                     "certificate expired at 2021-01-01T00:00:00Z (the host clock says ",
                     "cert", cert)
        cert, key = self.c.mkcert("future", "node-a", uri="spiffe://edgesync.local/node/node-a",
                                  not_before="2040-01-01T00:00:00Z")
        agent = self.run_bad(["--cert", cert, "--key", key], "CertFileInvalid",
                             "certificate not valid before 2040-01-01T00:00:00Z; "
                             "the host clock says ", "cert", cert)
        self.assertIn("check the clock", agent.output())

    def test_key_mismatch_and_ca_not_a_ca(self):
        _, other_key = self.c.mkcert("other", "node-a",
                                     uri="spiffe://edgesync.local/node/node-a")
        self.run_bad(["--key", other_key], "KeyFileInvalid",
                     f"does not match the certificate in {self.cert}", "key", other_key)
        # The node's own (leaf) certificate given as the CA.
        self.run_bad(["--ca", self.cert], "CAFileInvalid", "is not a CA", "ca", self.cert)

    def test_fixing_the_file_reconnects_without_restart(self):
        ca = self.path("ca-later.crt", "")
        # Another node: no condition seeded from the runs before, and all
        # of its reports are new to the controller.
        agent = self.c.start_agent("node-b", extra=AGENT_FLAGS + ["--ca", ca])
        wait_for("CredentialsValid=False", lambda: (condition(
            self.c.agent_state("node-b"), "CredentialsValid") or {}).get("status") == "False")
        shutil.copyfile(self.ca, ca)
        try:
            st = wait_for("connected after the fix", lambda: (
                lambda s: s if s["sync"]["connected"] else None)(self.c.agent_state("node-b")),
                timeout=30)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e
        self.assertTrue(agent.alive())
        self.assertIn("credentials loaded", agent.output())
        # The controller gets CredentialsValid=True in the first report
        # after the fix, and the False spell as events.
        node = wait_for("CredentialsValid=True at the controller", lambda: (
            lambda n: n if (condition({"node": n}, "CredentialsValid") or {}).get(
                "status") == "True" else None)(self.c.node("node-b")))
        self.assertEqual(condition({"node": node}, "CredentialsValid")["reason"],
                         "CredentialsLoaded")
        changes = wait_for("the CredentialsValid events", lambda: (
            lambda m: m if len(m) >= 2 else None)([
                (r.get("event") or {}).get("message", "")
                for r in self.c.reports("node-b") if r["reportType"] == "event"
                and (r.get("event") or {}).get("message", "").startswith(
                    "CredentialsValid is now ")]))
        self.assertTrue(any("is now False (CAFileInvalid)" in m for m in changes), changes)
        self.assertTrue(any("is now True (CredentialsLoaded)" in m for m in changes), changes)
        self.assertEqual(st["sync"]["lastError"], "")
        agent.stop()

    def test_check_all_ok(self):
        r = subprocess.run([os.path.join(BIN_DIR, "edgesync-agent"), "check",
                            "--config", self.c.agent_conf("node-a")] + AGENT_FLAGS,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = {ln.split()[0]: ln.split(None, 2) for ln in r.stdout.splitlines()
                if ln.strip()}
        for f, p in (("cert", self.cert), ("key", self.key), ("ca", self.ca)):
            self.assertEqual(rows[f"credentials/{f}"][1], "ok")
            self.assertTrue(rows[f"credentials/{f}"][2].startswith(p))
        self.assertIn("valid until", rows["credentials/cert"][2])

    def test_config_errors_still_exit_2(self):
        agent = os.path.join(BIN_DIR, "edgesync-agent")
        r = subprocess.run([agent, "run", "--config", self.c.agent_conf("node-a"),
                            "--no-such-flag"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        conf = self.path("bad.conf", "controller-url = wss://localhost:1\nbogus-key = 1\n")
        r = subprocess.run([agent, "run", "--config", conf], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("bogus-key", r.stderr)
        r = subprocess.run([agent, "run", "--config", self.c.agent_conf("node-a"),
                            "--interval", "0"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)


if __name__ == "__main__":
    main()
