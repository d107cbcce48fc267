"""The main job: this host's real state reaches the controller, a
CollectorConfig applied with edgesyncctl is applied and reported by the
agent, and changes the reporting interval."""

import os
import random
import signal
import socket
import statistics
import string
import time
import unittest

from harness import (API, Cluster, agent_and_fake_controller, host_node_name, main,
                     meminfo_total_bytes, wait_for, welcome)

CC = """apiVersion: edgesync.io/v1alpha1
kind: CollectorConfig
metadata:
  name: fast
spec:
  intervalSeconds: {interval}
  collectors: [cpu, memory, filesystem, network, processes]
"""


def applied(obj_status):
    for c in obj_status.get("conditions", []):
        if c["type"] == "Applied":
            return c
    return None


def state_report_times(cluster, after_seq=0):
    """receivedTime-independent spacing: the agent's own report times."""
    items = cluster.reports()
    return [(r["seq"], r["time"]) for r in items
            if r["reportType"] in ("snapshot", "patch", "delta") and r["seq"] > after_seq]


class SyncTest(unittest.TestCase):
    def setUp(self):
        self.c = Cluster(self)
        self.c.start_controller()
        self.node = self.c.nodes[0]
        # A 5 s interval before any CollectorConfig; the config makes it 1 s.
        # Usage figures on every round, so that every round reports.
        self.c.start_agent(extra=["--interval", "5", "--usage-report-interval", "1",
                                  "--usage-min-change", "0"])

    def fail_with_logs(self, e):
        raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def test_real_state_reaches_controller(self):
        try:
            node = wait_for("the node's status at the controller",
                            lambda: (self.c.node() or {}).get("status", {}).get("nodeInfo")
                            and self.c.node())
        except AssertionError as e:
            self.fail_with_logs(e)
        st = node["status"]
        self.assertEqual(st["nodeInfo"]["hostname"], socket.gethostname())
        self.assertEqual(st["nodeInfo"]["kernelVersion"], os.uname().release)
        self.assertEqual(st["capacity"]["memoryBytes"], meminfo_total_bytes())
        self.assertEqual(st["capacity"]["cpu"], os.cpu_count())
        self.assertEqual(st["usage"]["memory"]["MemTotal"], meminfo_total_bytes())
        self.assertTrue(st["usage"]["filesystems"], "no filesystem reported")
        self.assertIn("lo", [n["interface"] for n in st["usage"]["network"]])
        self.assertGreater(st["usage"]["processes"]["count"], 1)
        types = {c["type"]: c["status"] for c in st["conditions"]}
        self.assertEqual(types.get("Ready"), "True", st["conditions"])
        self.assertTrue(node["status"]["sync"]["connected"])

        self.assertRegex(node["metadata"]["creationTimestamp"],
                         r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

        # edgesyncctl shows the same node.
        out = self.c.ctl("get", "nodes").stdout
        self.assertIn(self.node, out)
        self.assertIn("Ready", out)
        self.assertNotIn("<unknown>", out)
        got = self.c.ctl_json("get", "node", self.node)
        self.assertEqual(got["status"]["capacity"]["memoryBytes"], meminfo_total_bytes())
        desc = self.c.ctl("describe", "node", self.node).stdout
        self.assertIn("Conditions", desc)
        self.assertIn(os.uname().release, desc)

    def test_collector_config_applied_and_changes_interval(self):
        try:
            wait_for("first report", lambda: self.c.node())
            # Baseline spacing at 5 s: wait for three state reports.
            wait_for("three state reports at 5 s",
                     lambda: len(state_report_times(self.c)) >= 3, timeout=40)
            r = self.c.ctl("apply", "-f", "-", stdin=CC.format(interval=1))
            self.assertIn("collectorconfig/fast created", r.stdout)
            obj = self.c.ctl_json("get", "collectorconfig", "fast")
            gen = obj["metadata"]["generation"]
            self.assertEqual(gen, 1)

            def reported():
                n = self.c.node()
                for o in n["status"].get("objects", []):
                    if o["name"] == "fast" and o.get("observedGeneration") == gen:
                        return o
                return None
            o = wait_for("CollectorConfig reported with observedGeneration", reported)
        except AssertionError as e:
            self.fail_with_logs(e)
        cond = applied(o)
        self.assertIsNotNone(cond, o)
        self.assertEqual(cond["status"], "True")
        self.assertEqual(cond["reason"], "Applied")
        self.assertEqual(cond["observedGeneration"], gen)

        # The interval changed: state reports now arrive about every second.
        last = max(s for s, _ in state_report_times(self.c))
        wait_for("six state reports at 1 s",
                 lambda: len(state_report_times(self.c, last)) >= 6, timeout=30)
        times = [t for _, t in state_report_times(self.c, last)]
        stamps = [time.mktime(time.strptime(t, "%Y-%m-%dT%H:%M:%SZ")) for t in times]
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        # One-second reports, time stamps at one-second resolution.
        self.assertLessEqual(statistics.median(gaps), 2, gaps)
        self.assertEqual(self.c.node()["status"]["agent"]["intervalSeconds"], 1)

        # A spec change bumps the generation and is applied again.
        self.c.ctl("apply", "-f", "-", stdin=CC.format(interval=2))
        obj = self.c.ctl_json("get", "collectorconfig", "fast")
        self.assertEqual(obj["metadata"]["generation"], 2)
        wait_for("generation 2 observed", lambda: any(
            o["name"] == "fast" and o.get("observedGeneration") == 2
            for o in self.c.node()["status"].get("objects", [])))
        desc = self.c.ctl("describe", "node", self.node).stdout
        self.assertIn("collectorconfig/fast", desc.lower())

        # The agent's local endpoint agrees.
        st = self.c.agent_state()
        self.assertEqual([d["metadata"]["name"] for d in st["desired"]], ["fast"])

    def test_describe_marks_what_differs(self):
        self.c.ctl("apply", "-f", "-", stdin=CC.format(interval=5))

        def in_sync():
            return "InSync" in self.c.ctl("describe", "node", self.node).stdout
        try:
            wait_for("describe shows the object in sync", in_sync)
            # Freeze the agent: the controller's spec moves on without it.
            agent = self.c.agents[self.node]
            os.kill(agent.p.pid, signal.SIGSTOP)
            try:
                self.c.ctl("apply", "-f", "-", stdin=CC.format(interval=7))
                out = self.c.ctl("describe", "node", self.node).stdout
            finally:
                os.kill(agent.p.pid, signal.SIGCONT)
            self.assertIn("DIFFERS", out)
            self.assertIn("observedGeneration 1 != generation 2", out)
            wait_for("back in sync after the agent resumes", in_sync)
            self.assertNotIn("DIFFERS", self.c.ctl("describe", "node", self.node).stdout)
        except AssertionError as e:
            self.fail_with_logs(e)

    def test_health_rule_gets_applied_condition(self):
        body = {"apiVersion": "edgesync.io/v1alpha1", "kind": "HealthRule",
                "metadata": {"name": "later"},
                "spec": {"metric": "load.load1", "operator": "Ge", "threshold": 0,
                         "conditionType": "LoadKnown"}}
        st, _ = self.c.admin("PUT", f"{API}/healthrules/later", body)
        self.assertIn(st, (200, 201))
        try:
            o = wait_for("HealthRule reported", lambda: next(
                (o for o in self.c.node()["status"].get("objects", [])
                 if o["name"] == "later" and applied(o)), None))
        except AssertionError as e:
            self.fail_with_logs(e)
        cond = applied(o)
        self.assertEqual(cond["status"], "True")
        self.assertEqual(cond["reason"], "Applied")
        self.assertIn("LoadKnown", cond["message"])
        # An invalid spec never reaches the agents.
        body["spec"] = {}
        st, err = self.c.admin("PUT", f"{API}/healthrules/later", body)
        self.assertEqual(st, 422, err)
        self.assertIn("spec.metric", str(err))

    def test_invalid_object_refused_naming_field(self):
        r = self.c.ctl("apply", "-f", "-", check=False,
                       stdin=CC.format(interval=0))
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("spec.intervalSeconds", r.stdout + r.stderr)


class LargeMessageTest(unittest.TestCase):
    """Large messages arrive intact both ways. With permessage-deflate,
    libwebsockets read the rest of a message from the sender's buffer on
    later writable events (lib/es_ws.h): a sender that freed its buffer
    after lws_write sent garbage. Controller to agent: the full desired list of 100 objects with
    about 150 KiB of random labels, to a new agent. Agent to controller: that
    agent's state with the status of the 100 objects."""

    def test_large_messages_both_ways(self):
        c = Cluster(self)
        c.start_controller()
        rnd = random.Random(7)
        alnum = string.ascii_letters + string.digits
        want, docs = {}, []
        for i in range(100):
            name = f"big-{i:03d}"
            labels = {f"k{j:02d}": "".join(rnd.choice(alnum) for _ in range(63))
                      for j in range(24)}
            want[name] = labels
            docs.append("apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
                        f"metadata:\n  name: {name}\n  labels:\n"
                        + "".join(f"    {k}: {v}\n" for k, v in labels.items())
                        + "spec:\n  intervalSeconds: 1\n")
        c.ctl("apply", "-f", "-", stdin="---\n".join(docs))
        c.start_agent(extra=["--interval", "1"])
        try:
            wait_for("the 100 objects' status at the controller",
                     lambda: len((c.node() or {}).get("status", {})
                                 .get("objects", [])) == 100, timeout=60)
            st = c.agent_state()
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e
        got = {o["metadata"]["name"]: o["metadata"].get("labels")
               for o in st["desired"]}
        self.assertEqual(got, want)
        # One connection throughout: nothing was refused as malformed.
        self.assertEqual(st["sync"]["reconnects"], 0, st["sync"])
        self.assertEqual(st["sync"]["lastError"], "", st["sync"])
        for obj in c.node()["status"]["objects"]:
            self.assertIn(obj["name"], want)

    def test_object_over_the_message_limit_refused(self):
        """An object that cannot fit in one desired message (1 MiB) is
        refused by the admin API, not stored and then never delivered."""
        c = Cluster(self)
        c.start_controller()
        labels = "".join(f"    k{j:05d}: {'v' * 63}\n" for j in range(15000))
        doc = ("apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
               f"metadata:\n  name: huge\n  labels:\n{labels}"
               "spec:\n  intervalSeconds: 10\n")
        r = c.ctl("apply", "-f", "-", stdin=doc, check=False)
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("at most 1040384 bytes", r.stdout + r.stderr)
        st, _ = c.admin("GET", f"{API}/collectorconfigs/huge")
        self.assertEqual(st, 404)

    def test_object_too_deep_for_a_message_refused(self):
        """A desired message holds an object two levels down: an object
        nested 63 deep would break the 64-level limit on the wire, so the
        admin API refuses it, and takes one nested 62 deep."""
        c = Cluster(self)
        c.start_controller()
        for levels, want in ((60, 0), (61, 1)):
            extra = "{\"a\":" * levels + "1" + "}" * levels
            doc = ('{"apiVersion":"edgesync.io/v1alpha1","kind":"CollectorConfig",'
                   f'"metadata":{{"name":"deep-{levels}","extra":{extra}}},'
                   '"spec":{"intervalSeconds":10}}')
            r = c.ctl("apply", "-f", "-", stdin=doc, check=False)
            self.assertEqual(r.returncode, want, (levels, r))
        self.assertIn("nesting deeper than 62", r.stdout + r.stderr)


class ConcurrentBurstTest(unittest.TestCase):
    """Three agents report bursts at the same moment (deleting the
    CollectorConfig in effect rewrites the status of every other object on
    each of them): every message is decoded on its own connection, none is
    refused as malformed and no agent is disconnected."""

    def test_three_agents_burst_at_once(self):
        nodes = ["burst-a", "burst-b", "burst-c"]
        c = Cluster(self, nodes=nodes)
        c.start_controller()
        docs = ["apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
                f"metadata: {{name: cc-{i:03d}}}\nspec: {{intervalSeconds: 1}}\n"
                for i in range(200)]
        c.ctl("apply", "-f", "-", stdin="---\n".join(docs))
        for n in nodes:
            c.start_agent(node=n, extra=["--interval", "1"])
        try:
            for n in nodes:
                wait_for(f"{n}: 200 objects reported", lambda n=n: len(
                    (c.node(n) or {}).get("status", {}).get("objects", [])) == 200,
                    timeout=60)
            for i in range(3):
                c.ctl("delete", "collectorconfig", f"cc-{i:03d}")
                for n in nodes:
                    wait_for(f"{n}: the delete reported", lambda n=n, i=i: len(
                        (c.node(n) or {}).get("status", {}).get("objects", []))
                        == 199 - i, timeout=60)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e
        out = c.controller.output()
        errors = [line for line in out.splitlines()
                  if "protocol error" in line or "inflate" in line or "zlib" in line]
        self.assertEqual(errors, [])
        # The bursts went compressed (protocol version 2, deflate).
        for n in nodes:
            self.assertRegex(out, rf"msg=\"?agent connected\"? node={n} protocolVersion=2 "
                             r"compression=deflate")
        for n in nodes:
            st = c.agent_state(n)["sync"]
            self.assertEqual((st["reconnects"], st["lastError"]), (0, ""), (n, st))


HR = {"apiVersion": "edgesync.io/v1alpha1", "kind": "HealthRule",
      "metadata": {"name": "load-known"},
      "spec": {"metric": "load.load1", "operator": "Ge", "threshold": 0,
               "conditionType": "LoadKnown"}}


class ProtocolVersionTest(unittest.TestCase):
    """The controller of this release serves agents of both protocol
    versions (a fleet upgrades the controller first): an agent speaking
    version 1 (protocol-version = 1, as an agent of the previous release)
    syncs with merge patches, a version 2 agent with keyed changes over
    compressed messages. Both reach the same state at the controller: an
    object's status, a node condition, a changed usage figure."""

    def sync(self, version):
        c = Cluster(self)
        c.start_controller()
        c.start_agent(extra=["--interval", "1", "--usage-report-interval", "1",
                             "--usage-min-change", "0",
                             "--protocol-version", str(version)])
        try:
            wait_for("the first report", lambda: c.node())
            st, _ = c.admin("PUT", f"{API}/healthrules/load-known", HR)
            self.assertIn(st, (200, 201))
            wait_for("the HealthRule's status at the controller", lambda: next(
                (o for o in c.node()["status"].get("objects", [])
                 if o["name"] == "load-known" and applied(o)
                 and applied(o)["status"] == "True"), None))
            wait_for("the LoadKnown condition at the controller", lambda: any(
                x["type"] == "LoadKnown" and x["status"] == "True"
                for x in c.node()["status"]["conditions"]))
            first = c.node()["status"]["usage"]["cpu"]["secondsTotal"]
            wait_for("a usage figure changed at the controller", lambda:
                     c.node()["status"]["usage"]["cpu"]["secondsTotal"] != first)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e
        # The controller's state is the agent's, item for item.
        local = c.agent_state()["node"]["status"]
        stored = c.node()["status"]
        self.assertEqual(sorted((o["kind"], o["name"]) for o in stored["objects"]),
                         sorted((o["kind"], o["name"]) for o in local["objects"]))
        self.assertEqual(sorted(x["type"] for x in stored["conditions"]),
                         sorted(x["type"] for x in local["conditions"]))
        self.assertEqual([n["interface"] for n in stored["usage"]["network"]],
                         [n["interface"] for n in local["usage"]["network"]])
        st = c.agent_state()["sync"]
        self.assertEqual((st["reconnects"], st["lastError"]), (0, ""), st)
        types = {r["reportType"] for r in c.reports()}
        return c, types, stored

    def test_version_1_agent_syncs(self):
        c, types, _ = self.sync(1)
        self.assertIn("patch", types)
        self.assertNotIn("delta", types)
        self.assertRegex(c.controller.output(),
                         r"agent connected\"? node=\S+ protocolVersion=1 compression=none")

    def test_version_2_agent_syncs(self):
        c, types, stored = self.sync(2)
        self.assertIn("delta", types)
        self.assertNotIn("patch", types)
        self.assertRegex(c.controller.output(),
                         r"agent connected\"? node=\S+ protocolVersion=2 compression=deflate")
        # Recent execs and exits travel as events, not state.
        self.assertNotIn("recentExecs", stored.get("activity", {}).get("processes", {}))

    def test_usage_waits_conditions_go_at_once(self):
        """With usage-report-interval 3600 the usage figures at the
        controller stay those of the first report, while an object's
        status and a condition it sets arrive in the round that sees them."""
        c = Cluster(self)
        c.start_controller()
        c.start_agent(extra=["--interval", "1", "--usage-report-interval", "3600"])
        try:
            wait_for("the first report", lambda: c.node())
            first = c.node()["status"]["usage"]["cpu"]["secondsTotal"]
            local0 = c.agent_state()["node"]["status"]["usage"]["cpu"]["secondsTotal"]
            st, _ = c.admin("PUT", f"{API}/healthrules/load-known", HR)
            self.assertIn(st, (200, 201))
            wait_for("the LoadKnown condition at the controller", lambda: any(
                x["type"] == "LoadKnown" and x["status"] == "True"
                for x in c.node()["status"]["conditions"]), timeout=20)
            wait_for("the agent's own figures moving", lambda: c.agent_state()
                     ["node"]["status"]["usage"]["cpu"]["secondsTotal"] != local0)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e
        self.assertEqual(c.node()["status"]["usage"]["cpu"]["secondsTotal"], first)
        self.assertIn("delta", {r["reportType"] for r in c.reports()})

    def test_version_2_agent_in_front_of_a_version_1_controller(self):
        """Refused with UnsupportedVersion, as a controller of the previous
        release refuses a version 2 hello, the agent offers version 1 on
        its next connection and then speaks it: text, a snapshot."""
        _, fake, ws, msg = agent_and_fake_controller(self)
        self.assertEqual((msg["type"], msg["protocolVersion"]), ("hello", 2), msg)
        self.assertIn("deflate", msg["capabilities"])
        ws.send_json({"type": "error", "code": "UnsupportedVersion",
                      "message": "hello.protocolVersion: 2 is not supported "
                                 "(this side speaks 1)"})
        ws.close()
        ws = fake.accept()
        _, msg = ws.recv()
        self.assertEqual((msg["type"], msg["protocolVersion"]), ("hello", 1), msg)
        self.assertNotIn("deflate", msg["capabilities"])
        self.assertNotIn("keyed-patch", msg["capabilities"])
        ws.send_json(welcome("target"))
        for _ in range(20):
            _, msg = ws.recv()
            if msg["type"] == "report" and msg["reportType"] != "event":
                break
        self.assertEqual(msg["reportType"], "snapshot", msg)
        ws.close()


if __name__ == "__main__":
    main()
