"""EgressPolicy enforced with nftables (the fallback where cgroup BPF
hooks are missing), as root, with `--egress-backend nftables`.

One policy denies TCP to 127.0.0.2:PORT for one cgroup v2 child; workers
in two children connect on command:
- the targeted cgroup's connect is refused (EHOSTUNREACH: the SYN is
  rejected with icmpx admin-prohibited), the other connects;
- the status says Enforced with backend nftables, and `actual` holds the
  rules read back from the table;
- an update from one port to another switches atomically (one nft
  transaction): a loop connecting to both sees a single switch;
- the table holds while the agent is killed with SIGKILL, and after the
  restart there is exactly one table with the policy's chain and rules;
- `nft delete table inet edgesync_egress` and a flushed chain behind the
  agent's back are repaired and reported (Drifted, EnforcementRepaired);
- after `edgesyncctl delete` both connect and the table is gone.

A second test switches backends on one state directory: restarted with
egress-backend auto where cgroup BPF works, the agent enforces with ebpf
and deletes the table it wrote; back on nftables, it removes the pins.
"""

import json
import os
import shutil
import signal
import subprocess
import time

from egress_util import ADDR, EgressCase, cgroup2_root, policy
from harness import API, EVERY_ROUND, main, wait_for

TABLE = "edgesync_egress"
REFUSED = "EHOSTUNREACH"


def nft(*args, check=True):
    return subprocess.run(["nft"] + list(args), capture_output=True, text=True,
                          check=check)


def nft_usable():
    if os.geteuid() != 0:
        return "needs root"
    if not cgroup2_root():
        return "no cgroup v2 mount"
    if not shutil.which("nft"):
        return "needs nft (Debian package nftables)"
    if nft("list", "tables", check=False).returncode != 0:
        return "nftables cannot talk to the kernel"
    return None


def tables():
    """The names of the inet tables."""
    doc = json.loads(nft("-j", "list", "tables", "inet").stdout)
    return [x["table"]["name"] for x in doc["nftables"] if "table" in x]


def listing():
    """(chains, rules by chain) of our table, from `nft -j list table`."""
    doc = json.loads(nft("-j", "list", "table", "inet", TABLE).stdout)
    chains, rules = [], {}
    for x in doc["nftables"]:
        if "chain" in x:
            chains.append(x["chain"]["name"])
        if "rule" in x:
            rules.setdefault(x["rule"]["chain"], []).append(x["rule"])
    return chains, rules


def dport(rule):
    for e in rule["expr"]:
        m = e.get("match", {})
        if m.get("left", {}).get("payload", {}).get("field") == "dport":
            return m["right"]
    return None


class NftCase(EgressCase):
    """An EgressCase on the nftables backend: skipped where nft cannot run;
    the agent's table removed before (a table a killed earlier run left
    would be taken for drift) and after; a BPF pin directory of its own."""

    def setup_nft(self):
        why = nft_usable()
        if why:
            self.skipTest(why)
        if TABLE in tables():
            nft("delete", "table", "inet", TABLE)
        self.setup_egress()
        self.addCleanup(lambda: TABLE in tables() and nft("delete", "table", "inet", TABLE))
        self.pin_dir = f"/sys/fs/bpf/{self.tag}/egress"
        self.addCleanup(shutil.rmtree, f"/sys/fs/bpf/{self.tag}", ignore_errors=True)


class EgressNftTest(NftCase):
    TAG = "es-egress-nft-"

    def setUp(self):
        self.setup_nft()
        self.state_dir = os.path.join(self.c.dir, "agent-state")
        self.start_agent()

    def start_agent(self, backend="nftables"):
        # Every round reports: the steps read the state the controller
        # holds, and a condition whose message alone changed ("rule maps
        # edited") otherwise waits for the usage report (PROTOCOL.md, v2).
        self.agent = self.c.start_agent(
            extra=EVERY_ROUND + ["--interval", "2", "--egress-backend", backend,
                   "--egress-pin-dir", self.pin_dir,
                   "--egress-check-interval", "2"],
            state_dir=self.state_dir)

    def test_egress_policy_nftables(self):
        self.check(self.lifecycle)

    def test_backend_switch(self):
        self.check(self.switch)

    def assert_one_table(self, port):
        """Exactly one table of ours: chain output jumps to p_deny-one for
        one cgroup, and p_deny-one refuses TCP SYNs to ADDR:port."""
        self.assertEqual(tables().count(TABLE), 1)
        chains, rules = listing()
        self.assertEqual(sorted(chains), ["output", "p_deny-one"])
        self.assertEqual(len(rules.get("output", [])), 1, rules)
        jump = rules["output"][0]["expr"]
        self.assertEqual(jump[0]["match"]["left"], {"socket": {"key": "cgroupv2"}})
        self.assertEqual(jump[-1], {"jump": {"target": "p_deny-one"}})
        self.assertEqual(len(rules["p_deny-one"]), 1, rules)
        self.assertEqual(dport(rules["p_deny-one"][0]), port)

    def lifecycle(self):
        self.t0 = time.monotonic()
        a, b = self.w["a"], self.w["b"]
        self.assertEqual(a.connect(self.p1), "OK")
        self.assertEqual(b.connect(self.p1), "OK")

        self.step("deny applied")
        self.apply(policy("deny-one", self.p1, self.cg["a"][0]))
        self.wait_denied(self.p1, "cgroup a refused on p1", refused=REFUSED)
        self.assertEqual(b.connect(self.p1), "OK")
        self.assertEqual(a.connect(self.p2), "OK")
        self.assert_one_table(self.p1)

        self.step("reported")
        def enforced():
            o = self.reported("deny-one")
            c = self.cond(o, "Enforced")
            return o if c and c["status"] == "True" and o.get("actual", {}).get("loaded") else None
        o = wait_for("Enforced=True with the actual state", enforced)
        self.assertIn("nftables", self.cond(o, "Enforced")["message"])
        act = o["actual"]
        self.assertEqual(act["backend"], "nftables")
        self.assertEqual(act["table"], f"inet {TABLE}")
        self.assertEqual(act["action"], "Deny")
        self.assertEqual(act["rules"], [{"cidr": f"{ADDR}/32", "protocol": "TCP",
                                         "ports": [{"from": self.p1, "to": self.p1}]}])
        self.assertEqual(act["targetCgroups"], 1)
        self.assertFalse(act["nodeWide"])
        wait_for("violations counted", lambda: (self.reported("deny-one") or {})
                 .get("actual", {}).get("violations", 0) >= 1)
        ev = wait_for("EgressDenied event", lambda: self.events("EgressDenied"))[0]
        self.assertEqual(ev["involvedObject"]["name"], "deny-one")
        st, desc = self.c.admin("GET", f"{API}/nodes/{self.node}/describe")
        self.assertEqual(st, 200)
        self.assertNotIn("DIFFERS", self.c.ctl("describe", "node", self.node).stdout)

        self.step("update")
        self.atomic_update("deny-one", REFUSED)
        self.assertEqual(b.connect(self.p2), "OK")
        wait_for("the table holds the p2 rule", lambda: self.assert_one_table(self.p2) is None)

        # SIGKILL: the table holds without the agent.
        self.step("sigkill")
        self.agent.p.kill()
        self.agent.stop(signal.SIGKILL)
        self.assertEqual(a.connect(self.p2), REFUSED)
        self.assertEqual(a.connect(self.p1), "OK")
        self.assertEqual(b.connect(self.p2), "OK")
        self.assert_one_table(self.p2)

        # Restart: the table is reconciled, not duplicated.
        self.step("restart")
        seen = self.agent.output().count("enforcing with nftables")
        self.start_agent()
        wait_for("agent enforcing after restart",
                 lambda: self.agent.output().count("enforcing with nftables") > seen)
        wait_for("agent reconciled after restart", lambda: (
            (self.reported("deny-one") or {}).get("actual", {}).get("generation") == 2))
        time.sleep(3)
        self.assert_one_table(self.p2)
        self.assertEqual(a.connect(self.p2), REFUSED)
        self.assertEqual(a.connect(self.p1), "OK")

        # Drift: the table deleted behind the agent's back.
        self.step("drift: table deleted")
        before = self.cond(self.reported("deny-one"), "Drifted")
        nft("delete", "table", "inet", TABLE)

        def repaired(since, what):
            c = self.cond(self.reported("deny-one"), "Drifted")
            if not c or c["reason"] != "Repaired" or c == since or what not in c["message"]:
                return None
            return c
        c = wait_for("Drifted repaired after the table was deleted",
                     lambda: repaired(before, "missing"))
        self.assertEqual(c["status"], "False")
        self.assertIn(f"nftables table inet {TABLE} missing", c["message"])
        evs = wait_for("EnforcementRepaired event", lambda: self.events("EnforcementRepaired"))
        self.assertEqual(evs[-1]["involvedObject"]["name"], "deny-one")
        self.assert_one_table(self.p2)
        self.assertEqual(a.connect(self.p2), REFUSED)

        # Drift: the policy's chain flushed (the rules edited).
        self.step("drift: chain flushed")
        nft("flush", "chain", "inet", TABLE, "p_deny-one")
        self.assertEqual(a.connect(self.p2), "OK")
        wait_for("Drifted repaired after the chain was flushed",
                 lambda: repaired(c, "edited"))
        self.assert_one_table(self.p2)
        self.assertEqual(a.connect(self.p2), REFUSED)

        # Delete: both connect, the table is gone.
        self.step("delete")
        self.c.ctl("delete", "egresspolicy", "deny-one")
        wait_for("cgroup a connects after delete", lambda: a.connect(self.p2) == "OK")
        self.assertEqual(b.connect(self.p2), "OK")
        wait_for("table removed", lambda: TABLE not in tables())
        self.assertFalse(os.path.exists(os.path.join(self.state_dir, "egress-nftables")))

    def enforced_by(self, backend):
        """The policy's Enforced condition once it is True with backend."""
        c = self.cond(self.reported("deny-one"), "Enforced")
        if c and c["status"] == "True" and c["message"].startswith(backend + ":"):
            return c
        return None

    def switch(self):
        self.t0 = time.monotonic()
        a, b = self.w["a"], self.w["b"]
        marker = os.path.join(self.state_dir, "egress-nftables")

        self.step("deny applied with nftables")
        self.apply(policy("deny-one", self.p1, self.cg["a"][0]))
        self.wait_denied(self.p1, "cgroup a refused on p1", refused=REFUSED)
        wait_for("Enforced by nftables", lambda: self.enforced_by("nftables"))
        self.assert_one_table(self.p1)
        self.assertTrue(os.path.exists(marker))

        # auto: cgroup BPF first; the table of the earlier run goes.
        self.step("restart with auto")
        self.agent.stop()
        seen = self.agent.output().count("enforcing with nftables")
        self.start_agent("auto")

        def settled():
            if self.agent.output().count("enforcing with nftables") > seen:
                return "nftables"
            return self.enforced_by("ebpf") and "ebpf"
        if wait_for("Enforced by ebpf", settled) == "nftables":
            self.skipTest("cgroup BPF does not work here: auto stays on nftables")
        self.assertIn("hooks connect4", self.enforced_by("ebpf")["message"])
        wait_for("table removed", lambda: TABLE not in tables())
        self.assertFalse(os.path.exists(marker))
        self.assertTrue(os.path.exists(os.path.join(self.pin_dir, "eg_active")))
        wait_for("cgroup a refused on p1 by cgroup BPF",
                 lambda: a.connect(self.p1) == "EPERM")
        self.assertEqual(b.connect(self.p1), "OK")
        self.assertEqual(self.reported("deny-one")["actual"]["backend"], "ebpf")

        # nftables again: the pins of the cgroup BPF run go.
        self.step("restart with nftables")
        self.agent.stop()
        self.start_agent("nftables")
        wait_for("Enforced by nftables again", lambda: self.enforced_by("nftables"))
        wait_for("pins removed", lambda: not os.path.exists(self.pin_dir))
        self.assert_one_table(self.p1)
        self.assertTrue(os.path.exists(marker))
        wait_for("cgroup a refused on p1 by nftables",
                 lambda: a.connect(self.p1) == REFUSED)
        self.assertEqual(b.connect(self.p1), "OK")
        self.assertEqual(self.reported("deny-one")["actual"]["backend"], "nftables")

        self.step("delete")
        self.c.ctl("delete", "egresspolicy", "deny-one")
        wait_for("table removed after delete", lambda: TABLE not in tables())
        wait_for("cgroup a connects after delete", lambda: a.connect(self.p1) == "OK")

if __name__ == "__main__":
    main()
