"""EgressPolicy enforced in the kernel by the cgroup BPF backend, as root.

One policy denies TCP to 127.0.0.2:PORT for one cgroup v2 child. Workers in
two children of the host's cgroup v2 hierarchy connect on command, so the
test sees what the kernel decides for each cgroup:
- the targeted cgroup gets EPERM, the other connects;
- an invalid policy is refused by `edgesyncctl apply`, naming the field;
- the reported status carries the rules read back from the kernel, and
  `describe node` shows desired, reported and actual in sync;
- an update from one port to another switches atomically: a loop connecting
  to both ports throughout sees a single switch, never both or neither
  denied;
- the denial holds while the agent is killed with SIGKILL, and after the
  restart there is exactly one attachment per hook;
- a removed pin and an edited map are repaired and reported (Drifted,
  EnforcementRepaired);
- after `edgesyncctl delete` both connect and nothing is left attached.
"""

import json
import os
import shutil
import signal
import subprocess
import time

from egress_util import ADDR, EgressCase, cgroup2_root, es_time, policy, stale
from harness import API, EVERY_ROUND, main, wait_for


def bpf_usable():
    if os.geteuid() != 0:
        return "needs root"
    if not cgroup2_root():
        return "no cgroup v2 mount"
    if not shutil.which("bpftool"):
        return "needs bpftool"
    return None


def bpftool_json(*args):
    out = subprocess.run(["bpftool", "-j"] + list(args), capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out or "null")


def attached_using(root, map_id):
    """Names of the programs attached at the cgroup root that use the map
    map_id (this test's pinned eg_active: other agents on the host, with
    their own pin directories, are not counted)."""
    names = []
    for p in bpftool_json("cgroup", "show", root) or []:
        try:
            info = bpftool_json("prog", "show", "id", str(p["id"]))
        except subprocess.CalledProcessError:
            # Gone since the listing: another test's agent detached it
            # (this test's programs are pinned and stay).
            continue
        if map_id in info.get("map_ids", []):
            names.append(p.get("name", ""))
    return names


def active_set(pinned):
    """The value of the one-element eg_active map."""
    out = subprocess.run(["bpftool", "-j", "map", "lookup", "pinned", pinned,
                          "key", "0", "0", "0", "0"],
                         capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    if "formatted" in doc:
        return int(doc["formatted"]["value"])
    return int(doc["value"][0], 16)


class EgressTest(EgressCase):
    HOOKS = ["es_eg_connect4", "es_eg_connect6", "es_eg_sendmsg4", "es_eg_sendmsg6"]

    def setUp(self):
        why = bpf_usable()
        if why:
            self.skipTest(why)
        # Pins a killed earlier run left (unpinning detaches its programs).
        for top in stale("/sys/fs/bpf", self.TAG):
            shutil.rmtree(top, ignore_errors=True)
        self.setup_egress()
        self.pin_dir = f"/sys/fs/bpf/{self.tag}/egress"
        self.addCleanup(shutil.rmtree, f"/sys/fs/bpf/{self.tag}", ignore_errors=True)
        self.start_agent()

    def start_agent(self):
        # Every round reports: the steps read the state the controller
        # holds, and a condition whose message alone changed ("rule maps
        # edited") otherwise waits for the usage report (PROTOCOL.md, v2).
        self.agent = self.c.start_agent(
            extra=EVERY_ROUND + ["--interval", "2", "--egress-pin-dir", self.pin_dir,
                   "--egress-check-interval", "2"],
            state_dir=os.path.join(self.c.dir, "agent-state"))

    def test_egress_policy_lifecycle(self):
        self.check(self.lifecycle)

    def lifecycle(self):
        self.t0 = time.monotonic()
        a, b = self.w["a"], self.w["b"]
        self.assertEqual(a.connect(self.p1), "OK")
        self.assertEqual(b.connect(self.p1), "OK")

        # An invalid policy is refused at apply time, naming the field.
        bad = policy("bad", self.p1, self.cg["a"][0])
        bad["spec"]["rules"][0]["cidr"] = "127.0.0.1/8"
        r = self.c.ctl("apply", "-f", "-", stdin=json.dumps(bad), check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("spec.rules[0].cidr", r.stdout + r.stderr)
        bad = policy("bad", self.p1, self.cg["a"][0])
        bad["spec"]["rules"][0]["ports"] = [{"from": 90, "to": 80}]
        r = self.c.ctl("apply", "-f", "-", stdin=json.dumps(bad), check=False)
        self.assertIn("spec.rules[0].ports[0]", r.stdout + r.stderr)

        # Deny TCP to 127.0.0.2:p1 for cgroup a only.
        self.step("deny applied")
        self.apply(policy("deny-one", self.p1, self.cg["a"][0]))
        self.wait_denied(self.p1, "cgroup a refused on p1")
        self.assertEqual(b.connect(self.p1), "OK")
        self.assertEqual(a.connect(self.p2), "OK")

        # Reported: Enforced, and the rules read back from the kernel.
        self.step("reported")
        def enforced():
            o = self.reported("deny-one")
            c = self.cond(o, "Enforced")
            return o if c and c["status"] == "True" and o.get("actual", {}).get("loaded") else None
        o = wait_for("Enforced=True with the actual state", enforced)
        act = o["actual"]
        self.assertEqual(act["backend"], "ebpf")
        self.assertEqual(act["rules"], [{"cidr": f"{ADDR}/32", "protocol": "TCP",
                                         "ports": [{"from": self.p1, "to": self.p1}]}])
        self.assertEqual(act["attachments"], {"connect4": 1, "connect6": 1,
                                              "sendmsg4": 1, "sendmsg6": 1})
        self.assertEqual(act["targetCgroups"], 1)
        wait_for("violations counted", lambda: (self.reported("deny-one") or {})
                 .get("actual", {}).get("violations", 0) >= 1)

        ev = wait_for("EgressDenied event", lambda: self.events("EgressDenied"))[0]
        self.assertEqual(ev["involvedObject"]["name"], "deny-one")
        self.assertIn("refused by EgressPolicy deny-one", ev["message"])

        # describe: desired, reported and actual side by side, in sync.
        self.step("describe")
        st, desc = self.c.admin("GET", f"{API}/nodes/{self.node}/describe")
        self.assertEqual(st, 200)
        e = next(x for x in desc["objects"] if x["name"] == "deny-one")
        self.assertEqual(e["actual"]["rules"], act["rules"])
        out = self.c.ctl("describe", "node", self.node).stdout
        self.assertIn("egresspolicy/deny-one", out)
        self.assertIn(f"TCP {ADDR}/32 {self.p1}-{self.p1}", out)

        # With the agent frozen, a new spec differs from the kernel's rules,
        # and describe says which rules.
        os.kill(self.agent.p.pid, signal.SIGSTOP)
        try:
            self.apply(policy("deny-one", self.p2, self.cg["a"][0]))
            out = self.c.ctl("describe", "node", self.node).stdout
        finally:
            os.kill(self.agent.p.pid, signal.SIGCONT)
        self.assertIn("DIFFERS", out)
        self.assertIn(f"rule in spec but not in kernel: TCP {ADDR}/32 {self.p2}-{self.p2}", out)
        self.assertIn(f"rule in kernel but not in spec: TCP {ADDR}/32 {self.p1}-{self.p1}", out)
        self.apply(policy("deny-one", self.p1, self.cg["a"][0]))
        wait_for("describe back in sync", lambda: "DIFFERS" not in
                 self.c.ctl("describe", "node", self.node).stdout and
                 (self.reported("deny-one") or {}).get("observedGeneration") == 3 and
                 (self.reported("deny-one") or {}).get("actual", {}).get("generation") == 3)
        self.assertEqual(a.connect(self.p1), "EPERM")

        # Atomic update p1 -> p2: one switch, never both or neither denied.
        self.step("update")
        self.atomic_update("deny-one", "EPERM")
        self.assertEqual(b.connect(self.p2), "OK")

        # SIGKILL: the denial holds without the agent.
        self.step("sigkill")
        self.agent.p.kill()
        self.agent.stop(signal.SIGKILL)
        self.assertEqual(a.connect(self.p2), "EPERM")
        self.assertEqual(a.connect(self.p1), "OK")
        self.assertEqual(b.connect(self.p2), "OK")

        # Restart: the pinned links are reused, one attachment per hook.
        self.step("restart")
        self.start_agent()
        wait_for("agent reconciled after restart",
                 lambda: "reusing pinned enforcement" in self.agent.output())
        time.sleep(1)
        active_id = bpftool_json("map", "show", "pinned",
                                 os.path.join(self.pin_dir, "eg_active"))["id"]
        names = attached_using(self.root, active_id)
        for h in self.HOOKS:
            self.assertEqual(names.count(h), 1, f"{h} attached {names.count(h)} times: {names}")
        self.assertEqual(a.connect(self.p2), "EPERM")

        # Drift: a pin removed behind the agent's back.
        self.step("drift pin")
        before = self.cond(self.reported("deny-one"), "Drifted")
        os.unlink(os.path.join(self.pin_dir, "link_connect4"))
        os.unlink(os.path.join(self.pin_dir, "eg_lpm"))

        def repaired(since):
            o = self.reported("deny-one")
            c = self.cond(o, "Drifted")
            if not c or c["reason"] != "Repaired" or c == since:
                return None
            return c
        c = wait_for("Drifted repaired after the pins were removed",
                     lambda: repaired(before))
        self.assertIn("pin link_connect4 missing", c["message"])
        self.assertIn("pin eg_lpm missing", c["message"])
        self.assertEqual(c["status"], "False")
        self.assertTrue(os.path.exists(os.path.join(self.pin_dir, "link_connect4")))
        self.assertTrue(os.path.exists(os.path.join(self.pin_dir, "eg_lpm")))
        evs = wait_for("EnforcementRepaired event", lambda: self.events("EnforcementRepaired"))
        self.assertEqual(evs[-1]["involvedObject"]["name"], "deny-one")
        self.assertEqual(a.connect(self.p2), "EPERM")

        # Drift: the active-set index flipped to the stale set (p1 rules).
        self.step("drift map")
        active = os.path.join(self.pin_dir, "eg_active")
        cur = active_set(active)
        subprocess.run(["bpftool", "map", "update", "pinned", active,
                        "key", "0", "0", "0", "0", "value", str(cur ^ 1), "0", "0", "0"],
                       check=True, capture_output=True)
        c2 = wait_for("map edit repaired", lambda: (
            lambda c: c if c and "rule maps edited" in c["message"] else None)(
                self.cond(self.reported("deny-one"), "Drifted")))
        self.assertEqual(c2["reason"], "Repaired")
        self.assertEqual(a.connect(self.p2), "EPERM")
        self.assertEqual(a.connect(self.p1), "OK")

        # Refusal events are rate-limited: at most one per 10 s per policy.
        self.step("events")
        # Refusals went on after the first event (update, restart, drift
        # checks), so a second one is due once 10 s have passed; it reaches
        # the controller with the next report.
        times = wait_for("the refusals after the update reported", lambda: (
            lambda ts: ts if len(ts) >= 2 else None)(
                [es_time(e["time"]) for e in self.events("EgressDenied")]),
            timeout=30)
        for t0, t1 in zip(times, times[1:]):
            self.assertGreaterEqual(t1 - t0, 10, f"EgressDenied events too close: {times}")

        # Delete: both connect, nothing left attached or pinned.
        self.step("delete")
        self.c.ctl("delete", "egresspolicy", "deny-one")
        wait_for("cgroup a connects after delete",
                 lambda: a.connect(self.p2) == "OK")
        self.assertEqual(b.connect(self.p2), "OK")
        wait_for("pins removed", lambda: not os.path.exists(self.pin_dir))
        self.assertEqual(attached_using(self.root, active_id), [])


if __name__ == "__main__":
    main()
