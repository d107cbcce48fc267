#!/usr/bin/env python3
"""The systemd units (packaging/systemd/) pass `systemd-analyze verify`
with no message at all, with ExecStart pointed at this build's binaries;
and they keep the properties the README and docs/ARCHITECTURE.md
("Security") promise."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import pkgtest

UNITS = ["edgesync-agent.service", "edgesync-controller.service"]
# Several controllers on one host: instance NAME reads controller-NAME.conf.
TEMPLATE = "edgesync-controller@.service"
# What the template may set otherwise than edgesync-controller.service.
PER_INSTANCE = {"ExecCondition", "ExecStart", "StateDirectory"}


def unit_text(name):
    with open(os.path.join(pkgtest.PACKAGING, "systemd", name)) as f:
        return f.read()


def directives(text, want="[Service]"):
    """[(key, value)] of the section want."""
    out, section = [], None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == want:
            k, v = line.split("=", 1)
            out.append((k, v))
    return out


def values(text, key):
    return [v for k, v in directives(text) if k == key]


class TestUnits(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="es-units-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def verify(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text.replace("/usr/bin/", pkgtest.BIN_DIR + "/"))
        return subprocess.run(["systemd-analyze", "verify", path],
                              capture_output=True, text=True, timeout=60)

    def test_verify_clean(self):
        for name in UNITS + [TEMPLATE]:
            r = self.verify(name, unit_text(name))
            self.assertEqual(r.returncode, 0, f"{name}: {r.stdout}{r.stderr}")
            self.assertEqual(r.stdout + r.stderr, "", f"{name}: verify said something")

    def test_verify_catches_a_bad_unit(self):
        """The check above can fail: an unknown key and a missing binary."""
        text = unit_text(UNITS[0]).replace("NoNewPrivileges=yes", "NoNewPrivilege=yes")
        r = self.verify(UNITS[0], text)
        self.assertIn("NoNewPrivilege", r.stdout + r.stderr)
        text = unit_text(UNITS[0]).replace("/usr/bin/edgesync-agent", "/usr/bin/edgesync-nope")
        r = self.verify(UNITS[0], text)
        self.assertNotEqual(r.stdout + r.stderr, "")

    def test_service_properties(self):
        for name in UNITS:
            t = unit_text(name)
            prog = name.replace(".service", "")
            conf = prog.replace("edgesync-", "")
            self.assertEqual(values(t, "Type"), ["notify"], name)
            self.assertEqual(len(values(t, "WatchdogSec")), 1, name)
            self.assertEqual(values(t, "Restart"), ["on-failure"], name)
            self.assertEqual(values(t, "NoNewPrivileges"), ["yes"], name)
            self.assertEqual(values(t, "ProtectSystem"), ["strict"], name)
            self.assertTrue(values(t, "ProtectHome"), name)
            self.assertEqual(len(values(t, "CapabilityBoundingSet")), 1, name)
            start = values(t, "ExecStart")[0].split()
            self.assertEqual(start[:2], [f"/usr/bin/{prog}", "run"], name)
            self.assertIn(f"/etc/edgesync/{conf}.conf", start, name)
            # Every flag in ExecStart is a setting of the program.
            known = pkgtest.settings(prog)
            for arg in start[2:]:
                if arg.startswith("--") and arg != "--config":
                    self.assertIn(arg[2:], known, f"{name}: {arg}")

        agent = unit_text(UNITS[0])
        self.assertEqual(values(agent, "StateDirectory"), ["edgesync"])
        caps = set(values(agent, "CapabilityBoundingSet")[0].split())
        self.assertEqual(caps, {"CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN",
                                "CAP_SYS_ADMIN", "CAP_DAC_READ_SEARCH"})
        rw = values(agent, "ReadWritePaths")[0].split()
        self.assertIn("-/sys/fs/bpf", rw)
        # Each capability is explained beside the bounding set.
        for c in caps:
            self.assertRegex(agent, rf"#\s+{c}\s+\S")
        # The agent's default state-dir is the StateDirectory.
        self.assertIn("/var/lib/edgesync]", subprocess.run(
            [os.path.join(pkgtest.BIN_DIR, "edgesync-agent"), "--help"],
            capture_output=True, text=True).stdout)

        ctl = unit_text(UNITS[1])
        self.assertEqual(values(ctl, "StateDirectory"), ["edgesync-controller"])
        self.assertEqual(values(ctl, "CapabilityBoundingSet"), [""])
        self.assertEqual(values(ctl, "DynamicUser"), ["yes"])
        creds = {v.split(":", 1)[0] for v in values(ctl, "LoadCredential")}
        used = set(re.findall(r"%d/([\w.-]+)", values(ctl, "ExecStart")[0]))
        self.assertEqual(creds, used)
        # A missing credential file fails the start with a message naming
        # it, from a check that runs before credentials are set up (an
        # ExecCondition exiting 255: a failure, not a skip), not with an
        # opaque credential error.
        cond = values(ctl, "ExecCondition")
        self.assertEqual(len(cond), 1)
        self.assertTrue(cond[0].startswith("+/bin/sh -c "), cond)
        self.assertIn("exit 255", cond[0])
        for v in values(ctl, "LoadCredential"):
            path = v.split(":", 1)[1]
            self.assertIn(os.path.basename(path), cond[0])
            self.assertIn(os.path.dirname(path) + "/$$f", cond[0])

    def test_controller_units_order_after_a_local_etcd(self):
        """store = etcd on a host with etcd: both controller units start
        after etcd.service (ordering only, no Wants=: a remote etcd is
        not pulled in)."""
        for name in (UNITS[1], TEMPLATE):
            unit = directives(unit_text(name), "[Unit]")
            after = " ".join(v for k, v in unit if k == "After").split()
            wants = " ".join(v for k, v in unit if k == "Wants").split()
            self.assertIn("etcd.service", after, name)
            self.assertNotIn("etcd.service", wants, name)

    def test_template_mirrors_the_controller_unit(self):
        """edgesync-controller@.service runs one controller per instance
        with its own config file and state directory, and is otherwise the
        controller unit: the same hardening, credentials and restarts."""
        one, tpl = unit_text(UNITS[1]), unit_text(TEMPLATE)
        strip = lambda t: [(k, v) for k, v in directives(t) if k not in PER_INSTANCE]
        self.assertEqual(strip(tpl), strip(one))
        self.assertEqual(values(tpl, "StateDirectory"), ["edgesync-controller-%i"])
        start = values(tpl, "ExecStart")[0].split()
        self.assertEqual(start[:2], ["/usr/bin/edgesync-controller", "run"])
        self.assertEqual(start[start.index("--config") + 1],
                         "/etc/edgesync/controller-%i.conf")
        self.assertEqual(start[start.index("--state-dir") + 1],
                         "/var/lib/edgesync-controller-%i")
        known = pkgtest.settings("edgesync-controller")
        for arg in start[2:]:
            if arg.startswith("--") and arg != "--config":
                self.assertIn(arg[2:], known, arg)
        self.assertEqual(set(re.findall(r"%d/([\w.-]+)", values(tpl, "ExecStart")[0])),
                         {v.split(":", 1)[0] for v in values(tpl, "LoadCredential")})

    def test_template_condition_names_what_is_missing(self):
        """The instance's ExecCondition, run as systemd would (%i expanded,
        $$ as $; /etc/edgesync moved to a scratch directory): fails with
        255 naming the missing config file and credentials, passes once
        they are there."""
        cond = values(unit_text(TEMPLATE), "ExecCondition")
        self.assertEqual(len(cond), 1)
        self.assertTrue(cond[0].startswith("+/bin/sh -c '"), cond)
        etc = os.path.join(self.dir, "etc")
        script = (cond[0][len("+/bin/sh -c '"):-1].replace("%i", "b")
                  .replace("$$", "$").replace("/etc/edgesync", etc))
        run = lambda: subprocess.run(["/bin/sh", "-c", script], capture_output=True,
                                     text=True, timeout=30)
        r = run()
        self.assertEqual(r.returncode, 255, r.stderr)
        for f in ("controller/controller.crt", "controller/controller.key",
                  "controller/ca.crt", "controller-b.conf"):
            self.assertIn(f"{etc}/{f}", r.stderr)
        self.assertIn("edgesync-controller@b:", r.stderr)
        os.makedirs(os.path.join(etc, "controller"))
        for f in ("controller/controller.crt", "controller/controller.key",
                  "controller/ca.crt"):
            with open(os.path.join(etc, f), "w") as fh:
                fh.write("x\n")
        r = run()
        self.assertEqual(r.returncode, 255)
        self.assertIn("controller-b.conf", r.stderr)
        self.assertNotIn(f"{etc}/controller/controller.crt", r.stderr)
        with open(os.path.join(etc, "controller-b.conf"), "w") as fh:
            fh.write("listen = 0.0.0.0:7453\n")
        r = run()
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_conffiles_parse(self):
        """The shipped config files hold only settings of their program."""
        for prog, conf in (("edgesync-agent", "agent.conf"),
                           ("edgesync-controller", "controller.conf")):
            with open(os.path.join(pkgtest.PACKAGING, "etc", conf)) as f:
                kv = pkgtest.parse_conf(f.read())
            known = pkgtest.settings(prog)
            for k in kv:
                self.assertIn(k, known, f"{conf}: {k}")


if __name__ == "__main__":
    pkgtest.main()
