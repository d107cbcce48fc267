"""A simulated fleet against a real controller (bench/fleetsim/): a few
hundred nodes, each its own mutual-TLS session and certificate, speaking
protocol v1 with a real agent's captured reports. Every node shows as
connected with its reported conditions, and the controller stores every
report of every node exactly once, in order, also across a SIGKILL of the
controller in the middle of the run (the nodes redial with the agent's
backoff, resume their TLS sessions and resend what was not acknowledged).
And 100 nodes speaking protocol version 2 with a version 2 agent's
captured deltas and events, compressed: every session is of version 2
with deflate, the controller stores the deltas and events exactly once
and applies every delta (no resync)."""

import json
import os
import signal
import subprocess
import time
import unittest

from harness import API, BIN_DIR, Cluster, main, wait_for

SIM = os.path.join(BIN_DIR, "edgesync-fleetsim")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "bench", "fleetsim", "data")
NODES = 200
NODES_V2 = 100


def fixture_ready_status():
    with open(os.path.join(DATA, "snapshot.json")) as f:
        snap = json.load(f)
    for c in snap["status"]["conditions"]:
        if c["type"] == "Ready":
            return c["status"]
    raise AssertionError("the fixture's snapshot has no Ready condition")


class FleetSimTest(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(SIM):
            self.skipTest(f"{SIM} is not built")
        self.c = Cluster(self)
        self.c.start_controller(extra=["--log-level", "info"])
        self.out = os.path.join(self.c.dir, "fleetsim-nodes.jsonl")
        self.log = open(os.path.join(self.c.dir, "fleetsim.log"), "ab")
        self.addCleanup(self.log.close)

    def start_sim(self, duration, nodes=NODES, protocol=(
            "--protocol", "1", "--interval", "1")):
        argv = [SIM, "--port", str(self.c.port),
                "--ca-cert", os.path.join(self.c.dev, "ca.crt"),
                "--ca-key", os.path.join(self.c.dev, "ca.key"),
                "--cert-dir", os.path.join(self.c.dir, "certs"),
                "--nodes", str(nodes), "--ramp", "400",
                "--duration", str(duration), "--nodes-out", self.out] + list(protocol)
        self.summary_path = os.path.join(self.c.dir, "fleetsim-summary.jsonl")
        summary = open(self.summary_path, "wb")
        self.addCleanup(summary.close)
        p = subprocess.Popen(argv, stdout=summary, stderr=self.log,
                             stdin=subprocess.DEVNULL)

        def stop():
            if p.poll() is None:
                p.kill()
                p.wait()
        self.addCleanup(stop)
        return p

    def fleet(self):
        st, body = self.c.admin("GET", f"{API}/nodes")
        self.assertEqual(st, 200, body)
        return {n["metadata"]["name"]: n for n in body["items"]
                if n["metadata"]["name"].startswith("sim-")}

    def all_connected(self, count=NODES):
        nodes = self.fleet()
        return len(nodes) == count and all(n["status"]["sync"]["connected"]
                                           for n in nodes.values()) and nodes

    def finish(self, p):
        self.assertEqual(p.wait(120), 0, "the simulator failed")
        with open(self.out) as f:
            return {j["node"]: j for j in map(json.loads, f)}

    def assert_exactly_once(self, sim_nodes, count=NODES):
        """Each node's stored reports are seq 1..k, each once and in order,
        with every report the node had acknowledged among them and none it
        never made. Returns the stored reports' types."""
        self.assertEqual(len(sim_nodes), count)
        types = {}
        for name, s in sim_nodes.items():
            reports = self.c.reports(name)
            for r in reports:
                types[r.get("reportType")] = types.get(r.get("reportType"), 0) + 1
            seqs = [r["seq"] for r in reports]
            self.assertEqual(seqs, list(range(1, len(seqs) + 1)),
                             f"{name}: stored seqs are not 1..k once each")
            self.assertGreaterEqual(len(seqs), s["ackedSeq"],
                                    f"{name}: an acknowledged report is missing")
            self.assertLess(len(seqs), s["nextSeq"],
                            f"{name}: a report the node never made is stored")
            self.assertGreater(s["ackedSeq"], 1, f"{name}: reported almost nothing")
        return types

    def test_fleet_connects_and_reports_are_stored_once(self):
        p = self.start_sim(duration=10)
        wait_for("every simulated node connected", self.all_connected,
                 timeout=60, interval=1)
        # A node is connected from its hello; its snapshot is stored with
        # the batch that follows (a few ms, longer under load).
        # Under the sanitizers both processes are several times slower.
        nodes = wait_for("every node's snapshot stored", lambda: (
            lambda ns: ns if len(ns) == NODES and all(
                any(c["type"] == "Ready" for c in n["status"].get("conditions", []))
                for n in ns.values()) else None)(self.fleet()),
            timeout=120, interval=1)
        want = fixture_ready_status()
        for name, n in nodes.items():
            ready = [c for c in n["status"].get("conditions", []) if c["type"] == "Ready"]
            self.assertEqual([c["status"] for c in ready], [want],
                             f"{name}: Ready as the node reported it")
        self.assert_exactly_once(self.finish(p))

    def test_reports_stored_exactly_once_across_controller_sigkill(self):
        p = self.start_sim(duration=40)
        wait_for("every simulated node connected", self.all_connected,
                 timeout=60, interval=1)
        time.sleep(3)  # reports in flight when the controller dies
        self.c.controller.p.send_signal(signal.SIGKILL)
        self.c.controller.p.wait()
        self.c.controller.log.close()  # no clean stop expected of it
        self.c.start_controller(extra=["--log-level", "info"])
        wait_for("every simulated node back", self.all_connected,
                 timeout=35, interval=1)
        # like the agent, the nodes offer their TLS session's ticket, which
        # the restarted controller (same ticket key) resumes
        resumed = self.c.metric('edgesync_controller_tls_handshakes_total{resumed="true"}')
        self.assertGreater(resumed or 0, NODES / 2,
                           "the nodes did not resume their TLS sessions")
        sim_nodes = self.finish(p)
        self.assertTrue(any(s["welcomes"] > 1 for s in sim_nodes.values()),
                        "no node reconnected: the kill did not happen mid-run")
        self.assert_exactly_once(sim_nodes)

    def test_protocol_v2_deltas_events_compressed(self):
        # the captured gaps 20 times faster: a minute's deltas and events
        # every 3 s
        p = self.start_sim(duration=15, nodes=NODES_V2,
                           protocol=("--protocol", "2", "--speedup", "20"))
        wait_for("every simulated node connected",
                 lambda: self.all_connected(NODES_V2), timeout=60, interval=1)
        sim_nodes = self.finish(p)
        with open(self.summary_path) as f:
            end = [j for j in map(json.loads, f) if j.get("type") == "summary"][-1]
        self.assertEqual(end["sessionsV2"], end["welcomes"], "a session was not of version 2")
        self.assertEqual(end["sessionsDeflate"], end["welcomes"],
                         "a session did not agree on compressed messages")
        self.assertEqual(end["resyncs"], 0, "the controller could not apply a delta")
        self.assertEqual(end["errorsReceived"], 0, "the controller sent an error")
        types = self.assert_exactly_once(sim_nodes, NODES_V2)
        self.assertGreater(types.get("delta", 0), 0, f"no delta stored: {types}")
        self.assertGreater(types.get("event", 0), 0, f"no event stored: {types}")
        for name, n in self.fleet().items():
            self.assertTrue(any(c["type"] == "Ready" for c in n["status"].get("conditions", [])),
                            f"{name}: no Ready condition stored")


class FleetSimOverloadTest(unittest.TestCase):
    """The simulator honours a come-back-later as the agent does."""

    start_sim = FleetSimTest.start_sim
    finish = FleetSimTest.finish

    def setUp(self):
        if not os.path.exists(SIM):
            self.skipTest(f"{SIM} is not built")
        self.c = Cluster(self)
        self.c.start_controller(extra=["--log-level", "info", "--max-sessions", "5",
                                       "--overload-retry-seconds", "3"])
        self.out = os.path.join(self.c.dir, "fleetsim-nodes.jsonl")
        self.log = open(os.path.join(self.c.dir, "fleetsim.log"), "ab")
        self.addCleanup(self.log.close)

    def test_overloaded_nodes_come_back_after_retry_after(self):
        # 10 nodes, 5 sessions allowed: 5 are told to come back after 3 s,
        # and each comes back after 3 to 6 s (PROTOCOL.md "Errors"), so in
        # 7 s it is refused at most 3 times (at t, t + 3, t + 6).
        p = self.start_sim(duration=7, nodes=10)
        self.finish(p)
        with open(self.summary_path) as f:
            end = [j for j in map(json.loads, f) if j.get("type") == "summary"][-1]
        self.assertEqual(end["ready"], 5, end)
        self.assertGreaterEqual(end["overloadedReceived"], 5, end)
        self.assertLessEqual(end["overloadedReceived"], 15,
                             f"a refused node came back before retryAfterSeconds: {end}")
        self.assertLessEqual(end["dials"], 10 + 2 * 5, end)


if __name__ == "__main__":
    main()
