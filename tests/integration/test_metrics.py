"""Both /metrics endpoints: their output passes `promtool check metrics`
(Debian's prometheus package) and carries this host's real values, and a
real Prometheus server on loopback scrapes the agent over plain HTTP and
the controller over HTTPS with an admin client certificate, and answers
queries with the same values."""

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.parse

from harness import Cluster, Proc, free_port, main, meminfo_total_bytes, wait_for

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"

# promtool's lint problems that are accepted, as (metric name pattern,
# problem text). node_exporter names memory metrics after the kernel's
# /proc/meminfo fields (node_memory_MemTotal_bytes); we keep those names so
# its dashboards and alerts work, and promtool reports them as camelCase.
ACCEPTED_LINT = [
    (re.compile(r"^node_memory_\w+$"),
     "metric names should be written in 'snake_case' not 'camelCase'"),
]


def need(path, what):
    if not os.access(path, os.X_OK):
        raise AssertionError(f"{what} not found at {path}: install the Debian "
                             "package prometheus (scripts/install-deps.sh)")


def samples(text):
    """{'name{labels}': value} of every sample line of a text exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        out[key] = float(value)
    return out


def promtool_problems(text):
    """Runs `promtool check metrics` on text; returns its problems that are
    not accepted, as lines. A parse error is always a problem."""
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=30)
    lines = [ln.strip() for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    problems = []
    for line in lines:
        name, _, problem = line.partition(" ")
        if not any(p.match(name) and problem == msg for p, msg in ACCEPTED_LINT):
            problems.append(line)
    # Exit 0: clean; 3: lint problems, each one listed in its output.
    if r.returncode not in (0, 3) or (r.returncode == 3 and not lines):
        problems.append(f"promtool exited {r.returncode}")
    return problems


class MetricsTest(unittest.TestCase):
    def setUp(self):
        need(PROMTOOL, "promtool")
        self.c = Cluster(self)
        self.c.start_controller()
        self.node = self.c.nodes[0]
        self.c.start_agent()
        try:
            wait_for("the agent connected and its first round done",
                     lambda: self.c.agent_state()["sync"]["connected"]
                     and self.c.agent_state()["node"], timeout=30)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def agent_metrics(self):
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.c.agent_ports[self.node], timeout=10)
        try:
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            body = r.read().decode()
            self.assertEqual(r.status, 200, body)
            self.assertEqual(r.getheader("Content-Type"),
                             "text/plain; version=0.0.4; charset=utf-8")
            return body
        finally:
            conn.close()

    def controller_metrics(self):
        conn = http.client.HTTPSConnection("localhost", self.c.admin_port,
                                           context=self.c.admin_ssl(), timeout=10)
        try:
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            body = r.read().decode()
            self.assertEqual(r.status, 200, body)
            self.assertTrue(r.getheader("Content-Type").startswith(
                "text/plain; version=0.0.4"))
            return body
        finally:
            conn.close()

    def test_promtool_and_values(self):
        agent = self.agent_metrics()
        ctrl = self.controller_metrics()
        self.assertEqual(promtool_problems(agent), [], agent)
        self.assertEqual(promtool_problems(ctrl), [], ctrl)
        # The filter accepts only what it names: a real problem is caught.
        self.assertNotEqual(promtool_problems(
            "# HELP bad_count A counter without _total.\n"
            "# TYPE bad_count counter\nbad_count 1\n"), [])

        a = samples(agent)
        self.assertEqual(a["node_memory_MemTotal_bytes"], meminfo_total_bytes())
        self.assertGreater(a["node_memory_MemAvailable_bytes"], 0)
        self.assertEqual(a["edgesync_agent_connected"], 1)
        self.assertEqual(a['edgesync_agent_sync_state{state="ready"}'], 1)
        self.assertGreaterEqual(a["edgesync_agent_reports_sent_total"], 1)
        self.assertGreater(a["edgesync_agent_last_sync_timestamp_seconds"],
                           time.time() - 120)
        self.assertGreaterEqual(
            a["edgesync_agent_policy_apply_duration_seconds_count"], 1)
        self.assertIn('node_network_receive_bytes_total{device="lo"}', a)
        self.assertTrue(any(k.startswith("node_filesystem_avail_bytes{") for k in a))
        cpus = {m.group(1) for k in a
                for m in [re.match(r'node_cpu_seconds_total\{cpu="(\d+)",mode="idle"\}', k)]
                if m}
        self.assertEqual(len(cpus), os.cpu_count())
        self.assertTrue(any(k.startswith("edgesync_agent_collector_info{") for k in a))
        self.assertIn("edgesync_agent_build_info", agent)

        c = samples(ctrl)
        self.assertEqual(c["edgesync_controller_connected_agents"], 1)
        self.assertGreaterEqual(
            c['edgesync_controller_messages_received_total{type="hello"}'], 1)
        self.assertGreater(c["edgesync_controller_store_size_bytes"], 0)
        self.assertIn("edgesync_controller_build_info", ctrl)

    def test_ack_latency_and_acknowledged_reports(self):
        """A write pushed to the connected agent shows in the latency
        histogram once the agent acknowledges it; reports the controller
        acknowledged show at the agent."""
        before = samples(self.controller_metrics()).get(
            "edgesync_controller_desired_ack_latency_seconds_count", 0)
        self.c.ctl("apply", "-f", "-", stdin=(
            "apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
            "metadata:\n  name: metrics-latency\n"
            "spec:\n  intervalSeconds: 5\n"))
        wait_for("the desiredAck observed",
                 lambda: samples(self.controller_metrics()).get(
                     "edgesync_controller_desired_ack_latency_seconds_count", 0)
                 >= before + 1, timeout=20)
        c = samples(self.controller_metrics())
        self.assertLess(c["edgesync_controller_desired_ack_latency_seconds_sum"], 20)
        a = wait_for("an acknowledged report",
                     lambda: (lambda s: s if s.get(
                         "edgesync_agent_reports_acknowledged_total", 0) >= 1 else None)(
                         samples(self.agent_metrics())), timeout=20)
        self.assertLessEqual(a["edgesync_agent_reports_acknowledged_total"],
                             a["edgesync_agent_reports_sent_total"])


class PrometheusScrapeTest(unittest.TestCase):
    """A real Prometheus 2.x on loopback, bounded to well under 60 s."""

    def setUp(self):
        need(PROMETHEUS, "prometheus")
        self.deadline = time.monotonic() + 55
        self.c = Cluster(self)
        self.c.start_controller()
        self.node = self.c.nodes[0]
        self.c.start_agent()
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="es-prom-", dir=self.c.dir)
        dev = self.c.dev
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                       "evaluation_interval": "1s"},
            "scrape_configs": [
                {"job_name": "agent",
                 "static_configs": [{"targets": [
                     f"127.0.0.1:{self.c.agent_ports[self.node]}"]}]},
                {"job_name": "controller", "scheme": "https",
                 "tls_config": {"ca_file": os.path.join(dev, "ca.crt"),
                                "cert_file": os.path.join(dev, "admin.crt"),
                                "key_file": os.path.join(dev, "admin.key"),
                                "server_name": "localhost"},
                 "static_configs": [{"targets": [f"127.0.0.1:{self.c.admin_port}"]}]},
            ],
        }
        cfg_path = os.path.join(self.dir, "prometheus.yml")
        with open(cfg_path, "w") as f:
            json.dump(config, f)  # JSON is YAML
        self.prom = Proc("prometheus", [
            PROMETHEUS, f"--config.file={cfg_path}",
            f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--storage.tsdb.retention.time=1h", "--log.level=warn",
        ], os.path.join(self.c.dir, "prometheus.log"))
        # Stopped before the cluster (cleanups run last-in first-out).
        self.addCleanup(self.stop_prometheus)

    def stop_prometheus(self):
        if self.prom.alive():
            self.prom.p.send_signal(signal.SIGTERM)
            try:
                self.prom.p.wait(15)
            except subprocess.TimeoutExpired:
                self.prom.p.kill()
                self.prom.p.wait()
        self.prom.log.close()

    def left(self):
        return max(1.0, self.deadline - time.monotonic())

    def api(self, path, **params):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            q = ("?" + urllib.parse.urlencode(params)) if params else ""
            conn.request("GET", path + q)
            r = conn.getresponse()
            body = json.loads(r.read().decode())
            if r.status != 200 or body.get("status") != "success":
                raise AssertionError(f"{path}: HTTP {r.status}: {body}")
            return body["data"]
        finally:
            conn.close()

    def query(self, expr):
        """The value of a query that must return exactly one sample, or
        None while it returns none."""
        res = self.api("/api/v1/query", query=expr)["result"]
        if not res:
            return None
        self.assertEqual(len(res), 1, res)
        return float(res[0]["value"][1])

    def fail_with_logs(self, e):
        raise AssertionError(f"{e}\n==== prometheus\n{self.prom.output()[-4000:]}\n"
                             f"{self.c.logs()}") from e

    def test_prometheus_scrapes_both(self):
        try:
            wait_for("prometheus ready", lambda: self.prom.alive()
                     and self.api("/api/v1/status/buildinfo"),
                     timeout=min(20, self.left()))

            def targets_up():
                active = self.api("/api/v1/targets")["activeTargets"]
                health = {t["labels"]["job"]: (t["health"], t.get("lastError"))
                          for t in active}
                self.last_health = health
                return (health.get("agent", ("",))[0] == "up"
                        and health.get("controller", ("",))[0] == "up")

            self.last_health = {}
            try:
                wait_for("both targets up", targets_up, timeout=min(30, self.left()))
            except AssertionError as e:
                raise AssertionError(f"{e}; targets: {self.last_health}") from e
            mem = wait_for("node_memory_MemTotal_bytes in Prometheus",
                           lambda: self.query("node_memory_MemTotal_bytes"),
                           timeout=min(15, self.left()))
            agents = wait_for("edgesync_controller_connected_agents == 1",
                              lambda: self.query(
                                  "edgesync_controller_connected_agents") == 1
                              and 1, timeout=min(15, self.left()))
        except AssertionError as e:
            self.fail_with_logs(e)
        self.assertEqual(mem, meminfo_total_bytes())
        self.assertEqual(agents, 1)
        self.assertEqual(self.query('up{job="controller"}'), 1)
        self.assertEqual(self.query('up{job="agent"}'), 1)
        self.assertLess(time.monotonic(), self.deadline, "over the 55 s budget")


if __name__ == "__main__":
    main()
