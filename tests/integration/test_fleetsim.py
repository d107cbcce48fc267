"""A simulated fleet against a real controller (bench/fleetsim/): a few
hundred nodes, each its own mutual-TLS session and certificate, speaking
protocol v1 with a real agent's captured reports. Every node shows as
connected with its reported conditions, and the controller stores every
report of every node exactly once, in order, also across a SIGKILL of the
controller in the middle of the run (the nodes redial with the agent's
backoff and resend what was not acknowledged)."""

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

    def start_sim(self, duration):
        argv = [SIM, "--port", str(self.c.port),
                "--ca-cert", os.path.join(self.c.dev, "ca.crt"),
                "--ca-key", os.path.join(self.c.dev, "ca.key"),
                "--cert-dir", os.path.join(self.c.dir, "certs"),
                "--nodes", str(NODES), "--interval", "1", "--ramp", "400",
                "--duration", str(duration), "--nodes-out", self.out]
        p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
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

    def all_connected(self):
        nodes = self.fleet()
        return len(nodes) == NODES and all(n["status"]["sync"]["connected"]
                                           for n in nodes.values()) and nodes

    def finish(self, p):
        self.assertEqual(p.wait(120), 0, "the simulator failed")
        with open(self.out) as f:
            return {j["node"]: j for j in map(json.loads, f)}

    def assert_exactly_once(self, sim_nodes):
        """Each node's stored reports are seq 1..k, each once and in order,
        with every report the node had acknowledged among them and none it
        never made."""
        self.assertEqual(len(sim_nodes), NODES)
        for name, s in sim_nodes.items():
            seqs = [r["seq"] for r in self.c.reports(name)]
            self.assertEqual(seqs, list(range(1, len(seqs) + 1)),
                             f"{name}: stored seqs are not 1..k once each")
            self.assertGreaterEqual(len(seqs), s["ackedSeq"],
                                    f"{name}: an acknowledged report is missing")
            self.assertLess(len(seqs), s["nextSeq"],
                            f"{name}: a report the node never made is stored")
            self.assertGreater(s["ackedSeq"], 1, f"{name}: reported almost nothing")

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
        sim_nodes = self.finish(p)
        self.assertTrue(any(s["welcomes"] > 1 for s in sim_nodes.values()),
                        "no node reconnected: the kill did not happen mid-run")
        self.assert_exactly_once(sim_nodes)


if __name__ == "__main__":
    main()
