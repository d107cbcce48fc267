"""Resuming desired state after a reconnect: the changes since the agent's
resourceVersion while the controller still holds every deletion since then,
and a full list once that version is older than the oldest deletion record
the controller keeps (PROTOCOL.md, "Desired state")."""

import unittest

from harness import Cluster, FakeController, hello, main, wait_for, welcome


def cc(name):
    return (f"apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
            f"metadata: {{name: {name}}}\nspec: {{intervalSeconds: 5}}\n")


class ResyncTest(unittest.TestCase):
    def test_changes_then_full_list(self):
        c = Cluster(self)
        # Keep one deletion record only, so two deletions while the agent is
        # away move the compaction point past its resourceVersion.
        c.start_controller(extra=["--tombstones-kept", "1"])
        agent = c.start_agent()

        def cached():
            return sorted(d["metadata"]["name"] for d in c.agent_state()["desired"])

        def syncs():
            log = c.controller.output()
            return (log.count("desired sync: changes"),
                    log.count("desired sync: full list"))

        try:
            c.ctl("apply", "-f", "-", stdin="---\n".join(cc(n) for n in "abc"))
            wait_for("a, b, c cached", lambda: cached() == ["a", "b", "c"])
            self.assertEqual(syncs(), (0, 1))  # first connection: full list

            # One deletion while away: the reconnect brings just the change.
            agent.stop()
            c.ctl("delete", "collectorconfig", "a")
            agent = c.start_agent()
            wait_for("a forgotten", lambda: cached() == ["b", "c"])
            self.assertEqual(syncs(), (1, 1))

            # Two deletions while away: the first one's record is discarded,
            # so the agent's version is too old and it gets a full list.
            agent.stop()
            c.ctl("delete", "collectorconfig", "b")
            c.ctl("delete", "collectorconfig", "c")
            c.ctl("apply", "-f", "-", stdin=cc("d"))
            agent = c.start_agent()
            wait_for("only d cached", lambda: cached() == ["d"])
            self.assertEqual(syncs(), (1, 2))
            rv = c.ctl_json("get", "collectorconfig", "d")["metadata"]["resourceVersion"]
            wait_for("the agent at the controller's version", lambda:
                     c.node()["status"]["sync"]["desiredResourceVersion"] == rv)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


HR = """apiVersion: edgesync.io/v1alpha1
kind: HealthRule
metadata: {{name: x}}
spec: {{metric: load.load1, operator: Ge, threshold: 0, conditionType: LoadKnown{sel}}}
"""


class NameReusedOfflineTest(unittest.TestCase):
    """A deletion is not lost when the name is reused while the agent is
    away: the object the agent holds goes, also when the new object of that
    name does not target the node (PROTOCOL.md, "desired")."""

    def test_deleted_then_recreated_elsewhere(self):
        c = Cluster(self)
        c.start_controller()
        agent = c.start_agent()

        def held():
            return [(d["kind"], d["metadata"]["name"], d["metadata"]["uid"])
                    for d in c.agent_state()["desired"]]

        try:
            c.ctl("apply", "-f", "-", stdin=HR.format(sel=""))
            u1 = c.ctl_json("get", "healthrule", "x")["metadata"]["uid"]
            wait_for("x held", lambda: held() == [("HealthRule", "x", u1)])
            agent.stop()
            c.ctl("delete", "healthrule", "x")
            c.ctl("apply", "-f", "-", stdin=HR.format(
                sel=", nodeSelector: {matchLabels: {site: elsewhere}}"))
            x2 = c.ctl_json("get", "healthrule", "x")["metadata"]
            self.assertNotEqual(x2["uid"], u1)
            agent = c.start_agent()
            wait_for("the agent at the controller's version", lambda:
                     c.node()["status"]["sync"]["desiredResourceVersion"]
                     == x2["resourceVersion"])
            self.assertEqual(held(), [])
            # And so after a restart, and in what the controller shows.
            agent.stop()
            agent = c.start_agent()
            wait_for("the agent reporting again", lambda: c.agent_state()
                     ["sync"]["connected"])
            self.assertEqual(held(), [])
            wait_for("no object in the node's status", lambda: not [
                o for o in c.node()["status"].get("objects", [])
                if o["name"] == "x"])
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


def desired_msg(full, rv, gen):
    obj = {"apiVersion": "edgesync.io/v1alpha1", "kind": "CollectorConfig",
           "metadata": {"name": "a", "uid": "u-a", "generation": gen,
                        "resourceVersion": rv},
           "spec": {"intervalSeconds": 5 + gen}}
    return {"type": "desired", "full": full, "resourceVersion": rv,
            "objects": [obj], "deleted": []}


class DesiredOrderTest(unittest.TestCase):
    """Desired state never goes back (PROTOCOL.md, "Desired state"): a hand-
    driven controller sends an older change set after a full list; the
    agent keeps the newer object and its version, acknowledges the version
    it holds and says so in its log. A full list at a lower version is
    followed, with a warning."""

    def acked(self, ws):
        while True:
            kind, msg = ws.recv()
            if msg["type"] == "desiredAck":
                return msg["resourceVersion"]

    def test_older_change_set_ignored(self):
        c = Cluster(self, nodes=["n1"])
        c.start_controller()
        c.stop_controller()
        fake = FakeController(c)
        agent = c.start_agent("n1")

        def held():
            st = c.agent_state("n1")
            return ([(d["metadata"]["name"], d["metadata"]["generation"])
                     for d in st["desired"]],
                    st["node"]["status"]["agent"]["desiredResourceVersion"]
                    if st["node"] else None)

        try:
            ws = fake.accept()
            self.assertEqual(ws.recv()[1]["type"], "hello")
            ws.send_json(welcome("n1"))
            ws.send_json(desired_msg(True, 10, 2))
            self.assertEqual(self.acked(ws), 10)
            ws.send_json(desired_msg(False, 5, 1))
            self.assertEqual(self.acked(ws), 10)
            # A duplicate of the version held: acknowledged, not logged.
            ws.send_json(desired_msg(False, 10, 1))
            self.assertEqual(self.acked(ws), 10)
            wait_for("the agent's report of version 10",
                     lambda: held() == ([("a", 2)], 10))
            log = agent.output()
            self.assertIn("desired change set older than the state held", log)
            line = [x for x in log.splitlines() if "older than the state held" in x]
            self.assertEqual(len(line), 1, line)
            self.assertIn("level=warn", line[0])
            self.assertIn("resourceVersion=5", line[0])
            self.assertIn("heldResourceVersion=10", line[0])
            # A controller restored from an older backup: followed, said.
            ws.send_json(desired_msg(True, 4, 1))
            self.assertEqual(self.acked(ws), 4)
            wait_for("the agent at version 4", lambda: held() == ([("a", 1)], 4))
            self.assertIn("full desired list older than the state held",
                          agent.output())
            ws.close()
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e


class LabelChangeTest(unittest.TestCase):
    """New labels select objects older than the agent's resourceVersion, so
    the controller owes the node a full list; a connection lost before that
    list is acknowledged must not lose it (PROTOCOL.md "Desired state": the
    next connection starts the sync again)."""

    def desired(self, ws):
        """The objects of one sync after a welcome: (full, names, rv)."""
        names, full, rv = [], None, 0
        while True:
            _, msg = ws.recv()
            if msg["type"] != "desired":
                continue
            full = msg["full"] if full is None else full
            names += [o["metadata"]["name"] for o in msg.get("objects", [])]
            rv = msg["resourceVersion"]
            if not msg.get("more"):
                return full, sorted(names), rv

    def session(self, c, rv=0, labels=None):
        """A raw connection as n1 that said hello and got its welcome."""
        ws = c.ws(*c.node_cert("n1"))
        ws.send_json(hello("n1", rv=rv, labels=labels))
        self.assertEqual(ws.recv()[1]["type"], "welcome")
        return ws

    def ack(self, c, ws, rv):
        ws.send_json({"type": "desiredAck", "resourceVersion": rv})
        wait_for("the ack stored", lambda: c.node("n1")["status"]["sync"]
                 ["desiredResourceVersion"] == rv)
        ws.close()

    def test_full_list_owed_until_acknowledged(self):
        c = Cluster(self, nodes=["n1"])
        c.start_controller()
        c.ctl("apply", "-f", "-", stdin=cc("base") + "---\n" + (
            "apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
            "metadata: {name: lbl-x}\nspec: {intervalSeconds: 5,"
            " nodeSelector: {matchLabels: {extra: 'yes'}}}\n"))
        extra = {"extra": "yes"}

        ws = self.session(c)
        full, names, rv = self.desired(ws)
        self.assertEqual((full, names), (True, ["base"]))
        self.ack(c, ws, rv)

        # New labels; the connection drops before the full list is taken.
        self.session(c, rv, extra).close()

        ws = self.session(c, rv, extra)
        full, names, rv2 = self.desired(ws)
        self.assertEqual((full, names), (True, ["base", "lbl-x"]))
        self.ack(c, ws, rv2)

        # Acknowledged: the next connection gets changes only.
        ws = self.session(c, rv2, extra)
        self.assertEqual(self.desired(ws), (False, [], rv2))
        ws.close()

if __name__ == "__main__":
    main()
