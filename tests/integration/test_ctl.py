"""edgesyncctl against a real controller, as an operator's shell meets it:
its own variables (EDGESYNCCTL_*, never the agent's EDGESYNC_CERT and
friends), a refused certificate explained (which file, which identity,
what the admin API expects), `delete token` printed as kubectl does, bad
`--labels` named before anything is sent, and the age of the usage
figures in `describe node`."""

import os
import re
import subprocess
import time
import unittest

from harness import BIN_DIR, Cluster, main, wait_for

TD = "edgesync.local"
DAEMON_VARS = ("EDGESYNC_SERVER", "EDGESYNC_CERT", "EDGESYNC_KEY", "EDGESYNC_CA")
CTL_VARS = tuple(v.replace("EDGESYNC_", "EDGESYNCCTL_") for v in DAEMON_VARS)


class CtlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from harness import ClassScope
        cls.c = Cluster(ClassScope(), nodes=["ctl-node"])
        cls.c.start_controller()
        cls.node_crt = os.path.join(cls.c.dev, "nodes", "ctl-node.crt")
        cls.node_key = os.path.join(cls.c.dev, "nodes", "ctl-node.key")

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def ctl(self, *args, env=None, config=True):
        """edgesyncctl ARGS with the dev config file (config=True) and only
        the variables in env of both families set."""
        full = {k: v for k, v in os.environ.items()
                if k not in DAEMON_VARS + CTL_VARS + ("EDGESYNCCTL_CONFIG",)}
        full.update(env or {})
        argv = [os.path.join(BIN_DIR, "edgesyncctl")]
        if config:
            argv += ["--config", os.path.join(self.c.dev, "edgesyncctl.conf")]
        return subprocess.run(argv + list(args), capture_output=True, text=True,
                              env=full, timeout=60)

    def test_agent_variables_are_not_read(self):
        """A shell that exported the agent's variables still reaches the
        admin API with the config file's admin certificate."""
        r = self.ctl("get", "nodes", env={
            "EDGESYNC_CERT": self.node_crt, "EDGESYNC_KEY": self.node_key,
            "EDGESYNC_SERVER": "https://127.0.0.1:1"})
        self.assertEqual(r.returncode, 0, r)
        self.assertNotIn("Forbidden", r.stderr)

    def test_own_variables_win_over_the_file(self):
        r = self.ctl("get", "nodes", env={"EDGESYNCCTL_SERVER": "https://127.0.0.1:1"})
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("127.0.0.1:1", r.stderr)

    def test_forbidden_names_certificate_and_expected_identity(self):
        """A node's certificate given to edgesyncctl: the error names the
        file, its SPIFFE ID, and the identity the admin API accepts."""
        r = self.ctl("get", "nodes", env={
            "EDGESYNCCTL_CERT": self.node_crt, "EDGESYNCCTL_KEY": self.node_key,
            "EDGESYNC_CERT": self.node_crt})
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("Error from server (Forbidden)", r.stderr)
        self.assertIn(f"The certificate sent: {self.node_crt} ", r.stderr)
        self.assertIn(f"SPIFFE ID spiffe://{TD}/node/ctl-node", r.stderr)
        self.assertIn(f"spiffe://{TD}/admin/<name>", r.stderr)
        self.assertIn("EDGESYNCCTL_CERT", r.stderr)
        self.assertIn("Note: EDGESYNC_CERT is set", r.stderr)

    def test_no_certificate_is_explained(self):
        r = self.ctl("get", "nodes", config=False, env={
            "EDGESYNCCTL_SERVER": f"https://localhost:{self.c.admin_port}",
            "EDGESYNCCTL_CA": os.path.join(self.c.dev, "ca.crt")})
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("No client certificate was sent", r.stderr)

    def test_delete_token_prints_like_kubectl(self):
        tok = self.ctl("create", "token").stdout.splitlines()[0]
        r = self.ctl("delete", "token", tok[:6])
        self.assertEqual(r.returncode, 0, r)
        self.assertEqual(r.stdout, f'token "{tok[:6]}" deleted\n')
        self.assertNotIn(tok[:6], self.ctl("get", "tokens").stdout)

    def test_labels_given_twice(self):
        before = self.ctl("get", "tokens").stdout
        r = self.ctl("create", "token", "--labels", "a=b,a=c")
        self.assertEqual(r.returncode, 2, r)
        self.assertIn('--labels: label key "a" given twice (a=b, a=c)', r.stderr)
        self.assertEqual(self.ctl("get", "tokens").stdout, before,
                         "a refused create token made a token")


class UsageAgeTest(unittest.TestCase):
    """status.usage.timestamp moves at usage reports only, and describe
    node shows it."""

    def test_usage_timestamp(self):
        c = Cluster(self)
        c.start_controller()
        c.start_agent(extra=["--interval", "1", "--usage-report-interval", "3600"])
        node = c.nodes[0]
        try:
            wait_for("the first report", lambda: c.node())
            t0 = c.node()["status"]["usage"]["timestamp"]
            self.assertRegex(t0, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
            time.sleep(3)
            # Rounds ran (interval 1), no usage report was due.
            self.assertEqual(c.node()["status"]["usage"]["timestamp"], t0)
            out = c.ctl("describe", "node", node).stdout
            self.assertRegex(out, r"\nUsage \(as of \d+s ago, " + re.escape(t0) + r"\):\n")
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e

    def test_usage_timestamp_moves_with_usage_reports(self):
        c = Cluster(self)
        c.start_controller()
        c.start_agent(extra=["--interval", "1", "--usage-report-interval", "1"])
        try:
            wait_for("the first report", lambda: c.node())
            t0 = c.node()["status"]["usage"]["timestamp"]
            wait_for("a later usage report", lambda:
                     c.node()["status"]["usage"]["timestamp"] > t0, timeout=15)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


if __name__ == "__main__":
    main()
