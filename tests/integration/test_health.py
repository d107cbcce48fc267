"""HealthRules: a rule on the process count flips its node condition when
300 sleeping processes start and back when they end, with
lastTransitionTime changing exactly twice; an invalid rule is refused by
`edgesyncctl apply` naming the field; a rule overriding MemoryPressure
flips it and Ready, and deleting it restores the built-in default."""

import calendar
import os
import signal
import subprocess
import time
import unittest

from harness import Cluster, main, wait_for

MANY = """apiVersion: edgesync.io/v1alpha1
kind: HealthRule
metadata:
  name: many-processes
spec:
  metric: processes.count
  operator: Gt
  threshold: {threshold}
  for: 2s
  conditionType: ManyProcesses
"""

MEMORY = """apiVersion: edgesync.io/v1alpha1
kind: HealthRule
metadata:
  name: memory-absurd
spec:
  metric: memory.availableBytes
  operator: Lt
  threshold: 1e18
  conditionType: MemoryPressure
"""

INVALID = """apiVersion: edgesync.io/v1alpha1
kind: HealthRule
metadata:
  name: broken
spec:
  metric: processes.count
  operator: Gt
  threshold: 1
  for: {for_}
  conditionType: Broken
"""


def rfc3339(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


class HealthTest(unittest.TestCase):
    def setUp(self):
        self.c = Cluster(self)
        self.c.start_controller()
        # The test reads usage figures at the controller: every round's.
        self.c.start_agent(extra=["--interval", "1", "--usage-report-interval", "1",
                                  "--usage-min-change", "0"])
        self.sleepers = []
        self.addCleanup(self.stop_sleepers)

    def stop_sleepers(self):
        for p in self.sleepers:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
        for p in self.sleepers:
            p.wait()
        self.sleepers = []

    def fail_with_logs(self, e):
        raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def conditions(self):
        node = self.c.node() or {}
        return {c["type"]: c for c in node.get("status", {}).get("conditions", [])}

    def cond(self, ctype, status=None, reason=None):
        """The node condition ctype at the controller, when it has that
        status (and reason)."""
        c = self.conditions().get(ctype)
        if c and (status is None or c["status"] == status) and \
                (reason is None or c["reason"] == reason):
            return c
        return None

    def process_count(self):
        node = self.c.node() or {}
        return int(node.get("status", {}).get("usage", {})
                   .get("processes", {}).get("count", 0))

    def object_status(self, name):
        node = self.c.node() or {}
        for o in node.get("status", {}).get("objects", []):
            if o["kind"] == "HealthRule" and o["name"] == name:
                return o
        return None

    def applied(self, name):
        o = self.object_status(name)
        for c in (o or {}).get("conditions", []):
            if c["type"] == "Applied":
                return c
        return None

    def condition_events(self, ctype):
        out = []
        for r in self.c.reports():
            b = r.get("event") or {}
            if r["reportType"] == "event" and b.get("reason") == "ConditionChanged" \
                    and b.get("message", "").startswith(ctype + " is now "):
                out.append(b["message"])
        return out

    def test_process_count_rule_flips_twice(self):
        try:
            wait_for("the process count at the controller", self.process_count)
            # The highest count over two seconds: the host's own churn.
            base = 0
            for _ in range(8):
                base = max(base, self.process_count())
                time.sleep(0.25)
            threshold = base + 150
            r = self.c.ctl("apply", "-f", "-", stdin=MANY.format(threshold=threshold))
            self.assertIn("healthrule/many-processes created", r.stdout)
            ap = wait_for("the rule Applied", lambda: self.applied("many-processes"))
            self.assertEqual(ap["status"], "True", ap)
            self.assertEqual(ap["reason"], "Applied")
            first = wait_for("ManyProcesses False",
                             lambda: self.cond("ManyProcesses", "False"))
            seen = {first["lastTransitionTime"]}

            def watch(status):
                def pred():
                    c = self.cond("ManyProcesses")
                    if c:
                        seen.add(c["lastTransitionTime"])
                    return c if c and c["status"] == status else None
                return pred

            started = time.time()
            for _ in range(300):
                self.sleepers.append(subprocess.Popen(
                    ["sleep", "60"], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            true = wait_for("ManyProcesses True", watch("True"), timeout=30,
                            interval=0.1)
            self.assertEqual(true["reason"], "ThresholdMet", true)
            self.assertIn("processes.count is ", true["message"])
            self.assertIn(f"Gt {threshold} for ", true["message"])
            # Not before the comparison held for 2 s.
            self.assertGreaterEqual(rfc3339(true["lastTransitionTime"]),
                                    int(started) + 2, (started, true))

            self.stop_sleepers()
            false = wait_for("ManyProcesses False again", watch("False"),
                             timeout=30, interval=0.1)
            self.assertEqual(false["reason"], "ThresholdNotMet", false)
            self.assertIn(f"not Gt {threshold}", false["message"])
            # Stays False.
            for _ in range(10):
                watch("False")()
                time.sleep(0.2)
        except AssertionError as e:
            self.fail_with_logs(e)
        self.assertEqual(len(seen), 3, sorted(seen))
        self.assertLess(rfc3339(first["lastTransitionTime"]),
                        rfc3339(true["lastTransitionTime"]))
        self.assertLessEqual(rfc3339(true["lastTransitionTime"]),
                             rfc3339(false["lastTransitionTime"]))
        # Exactly two transitions, each reported as one event.
        events = wait_for("two ConditionChanged events",
                          lambda: (lambda ev: ev if len(ev) >= 2 else None)(
                              self.condition_events("ManyProcesses")))
        self.assertEqual(len(events), 2, events)
        self.assertTrue(events[0].startswith("ManyProcesses is now True"), events)
        self.assertTrue(events[1].startswith("ManyProcesses is now False"), events)

        # Deleting the rule removes its condition.
        self.c.ctl("delete", "healthrule", "many-processes")
        try:
            wait_for("ManyProcesses removed",
                     lambda: self.c.node() and "ManyProcesses" not in self.conditions())
        except AssertionError as e:
            self.fail_with_logs(e)

    def test_invalid_rule_refused_naming_field(self):
        r = self.c.ctl("apply", "-f", "-", check=False,
                       stdin=INVALID.format(for_="-5s"))
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("spec.for: negative duration", r.stdout + r.stderr)
        r = self.c.ctl("apply", "-f", "-", check=False,
                       stdin=INVALID.format(for_="5s").replace(
                           "processes.count", "processes.bogus"))
        self.assertEqual(r.returncode, 1, r)
        self.assertIn('spec.metric: unknown metric "processes.bogus"',
                      r.stdout + r.stderr)
        r = self.c.ctl("apply", "-f", "-", check=False,
                       stdin=INVALID.format(for_="5s").replace("Gt", "'>'"))
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("spec.operator", r.stdout + r.stderr)
        r = self.c.ctl("get", "healthrules", check=False)
        self.assertNotIn("broken", r.stdout)
        # The shipped example is valid.
        r = self.c.ctl("apply", "-f", os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..", "packaging",
            "examples", "healthrule.yaml"))
        self.assertIn("healthrule/many-processes created", r.stdout)
        self.assertIn("healthrule/memory-pressure created", r.stdout)

    def test_memory_pressure_override_flips_ready(self):
        try:
            wait_for("MemoryPressure False (built-in)",
                     lambda: self.cond("MemoryPressure", "False"))
            wait_for("Ready True", lambda: self.cond("Ready", "True"))
            self.c.ctl("apply", "-f", "-", stdin=MEMORY)
            mp = wait_for("MemoryPressure True by the rule",
                          lambda: self.cond("MemoryPressure", "True", "ThresholdMet"))
            self.assertIn("memory.availableBytes is ", mp["message"])
            self.assertIn("Lt 1e+18", mp["message"])
            ready = wait_for("Ready False", lambda: self.cond("Ready", "False"))
            self.assertEqual(ready["reason"], "UnhealthyConditions", ready)
            self.assertIn("MemoryPressure", ready["message"])
            self.assertEqual(self.applied("memory-absurd")["status"], "True")

            self.c.ctl("delete", "healthrule", "memory-absurd")
            mp = wait_for("MemoryPressure back to the built-in default",
                          lambda: self.cond("MemoryPressure", "False"))
            self.assertNotEqual(mp["reason"], "ThresholdNotMet", mp)
            wait_for("Ready True again", lambda: self.cond("Ready", "True"))
        except AssertionError as e:
            self.fail_with_logs(e)


if __name__ == "__main__":
    main()
