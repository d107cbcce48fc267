#!/usr/bin/env python3
"""Both .deb packages (the `packages` target) in a clean booted Debian 12
under systemd-nspawn, as an operator installs and runs them: the root is
made once by mmdebstrap (systemd, and the packages' Depends, so that dpkg
needs no network) into <build>/platform/ and overlaid for each run.

The machine gets what eBPF needs (CAP_BPF, CAP_PERFMON, the bpf and
perf_event_open system calls, the host's bpffs) and the host's tracefs as
a bind mount, which nspawn's own sysfs mount over /sys/kernel then hides:
a mount-table entry whose tracepoints cannot be seen. The units stay as
shipped (no drop-in); only the credentials and settings an operator
provides are added. Checked:

- dpkg -i runs the scripts under systemd; the controller's state directory
  is left to StateDirectory= (no "pre-existing public" migration);
- without its certificate, key and CA the controller does not start and
  the journal names the missing files (its ExecCondition=);
- both units reach active (running) through READY=1, with their hardening
  (capability bounding set, no new privileges, the dynamic user);
- the agent, with no /etc/hosts, says it cannot resolve localhost; with
  one, it connects and its node is Ready (edgesyncctl in the machine);
  every kernel collector is on eBPF (tracefs mounted by the agent, since
  the listed one shows no tracepoints);
- a SIGSTOPped main process of each is killed by the watchdog and
  restarted;
- after the controller stops, the agent reports refused connections, never
  an untrusted CA; `systemctl stop` ends each with exit status 0;
- the README's trial drop-in (--dev) works as written, the agent keeping
  its state in its own directory;
- dpkg --purge removes both (the controller's private state directory too).
"""

import json
import os
import re
import tempfile
import unittest

import plattest as plat

KERNEL_COLLECTORS = ("process", "tcp", "cgroup-network", "oom", "blockio")
# CAP_DAC_READ_SEARCH 2, CAP_NET_ADMIN 12, CAP_SYS_ADMIN 21, CAP_PERFMON 38,
# CAP_BPF 39 (linux/capability.h).
AGENT_CAPS = (1 << 2) | (1 << 12) | (1 << 21) | (1 << 38) | (1 << 39)
UNITS = ("edgesync-controller.service", "edgesync-agent.service")


def deb_depends(deb):
    """The package names in deb's Depends (first of each alternative)."""
    f = plat.run(["dpkg-deb", "-f", deb, "Depends"]).stdout
    return [d.split("|")[0].split()[0] for d in f.split(",") if d.strip()]


def readme_trial():
    """The shell block of README "systemd" that sets up a trial."""
    with open(os.path.join(plat.SOURCE_DIR, "README.md")) as f:
        text = f.read()
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        if "trial.conf" in block:
            return block
    raise AssertionError("README: no trial drop-in block")


def proc_status(text):
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


class TestNspawn(unittest.TestCase):
    def setUp(self):
        plat.need_root()
        plat.need_tools("mmdebstrap", "systemd-nspawn", "nsenter")
        for p in ("/sys/fs/bpf", "/sys/kernel/tracing", os.path.join(plat.BIN_DIR, "es-mkcert")):
            plat.need_file(p, p)
        ver = plat.version()
        arch = plat.run(["dpkg", "--print-architecture"]).stdout.strip()
        self.debs = [os.path.join(plat.PKG_DIR, f"edgesync-{p}_{ver}_{arch}.deb")
                     for p in ("agent", "controller")]
        for d in self.debs:
            plat.need_file(d, "the packages (cmake --build build --target packages)")
        self.tmp = tempfile.mkdtemp(prefix="es-plat-nspawn-")
        self.addCleanup(plat.shutil.rmtree, self.tmp, True)

    # -- helpers -------------------------------------------------------------

    def show(self, unit, *props):
        out = self.m.sh(f"systemctl show {unit} -p {','.join(props)}").stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def journal(self, unit):
        return self.m.sh(f"journalctl -u {unit} -o cat --no-pager", check=False).stdout

    def node(self):
        r = self.m.sh(f"edgesyncctl --config /root/edgesyncctl.conf get node {self.name} -o json",
                      check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def ready(self):
        n = self.node()
        return n if n and n["status"].get("sync", {}).get("connected") \
            and plat.conditions(n).get("Ready") == "True" else None

    def fail_with(self, e):
        logs = "\n".join(f"==== {u}\n{self.journal(u)[-4000:]}" for u in UNITS)
        raise AssertionError(f"{e}\n{logs}\n==== console\n{self.m.console_tail(3000)}") from e

    def supply_credentials(self):
        """What an operator provides: the controller's certificate, key and
        agent CA (root-only), the agent's own and its settings, an admin's
        for edgesyncctl."""
        pki = plat.make_pki(os.path.join(self.tmp, "pki"), [self.name])
        m = self.m
        m.copy_in(pki["controller"][0], "/etc/edgesync/controller/controller.crt", 0o600)
        m.copy_in(pki["controller"][1], "/etc/edgesync/controller/controller.key", 0o600)
        m.copy_in(pki["ca"][0], "/etc/edgesync/controller/ca.crt", 0o600)
        m.copy_in(pki["node-" + self.name][0], "/etc/edgesync/agent/node.crt", 0o600)
        m.copy_in(pki["node-" + self.name][1], "/etc/edgesync/agent/node.key", 0o600)
        m.copy_in(pki["ca"][0], "/etc/edgesync/agent/ca.crt", 0o644)
        m.copy_in(pki["admin"][0], "/root/admin.crt", 0o600)
        m.copy_in(pki["admin"][1], "/root/admin.key", 0o600)
        m.copy_in(pki["ca"][0], "/root/ca.crt", 0o644)
        m.write("/root/edgesyncctl.conf", "server = https://127.0.0.1:7444\n"
                "cert = /root/admin.crt\nkey = /root/admin.key\nca = /root/ca.crt\n")
        m.sh("chmod 0700 /etc/edgesync/agent && cat >>/etc/edgesync/agent.conf <<'EOF'\n"
             "controller-url = wss://localhost:7443\n"
             "cert = /etc/edgesync/agent/node.crt\n"
             "key = /etc/edgesync/agent/node.key\n"
             "ca = /etc/edgesync/agent/ca.crt\n"
             "interval = 2\n"
             "EOF")

    # -- the test ----------------------------------------------------------------

    def test_packages_under_systemd(self):
        includes = ["systemd", "systemd-sysv", "libsystemd0"]
        for d in self.debs:
            includes += [p for p in deb_depends(d) if p not in includes]
        # No /etc/hostname: the machine's name is its host name.
        lower = plat.cached_root("nspawn", "directory", includes,
                                 hooks=['rm -f "$1/etc/hostname"'])
        self.name = plat.machine_name()
        pins_before = os.path.exists("/sys/fs/bpf/edgesync")
        if not pins_before:
            self.addCleanup(lambda: os.path.isdir("/sys/fs/bpf/edgesync")
                            and plat.run(["rm", "-rf", "/sys/fs/bpf/edgesync"], check=False))
        self.m = m = plat.Machine(self, lower, self.name, [
            "--capability=CAP_BPF,CAP_PERFMON",
            "--system-call-filter=bpf perf_event_open",
            "--bind=/sys/fs/bpf", "--bind=/sys/kernel/tracing"])
        m.mount()
        for d in self.debs:
            m.copy_in(d, "/root/" + os.path.basename(d))
        with plat.step("nspawn: boot"):
            m.boot()
        try:
            self.run_steps()
        except AssertionError as e:
            self.fail_with(e)

    def run_steps(self):
        m = self.m
        with plat.step("nspawn: dpkg -i"):
            m.sh("dpkg -i " + " ".join("/root/" + os.path.basename(d) for d in self.debs),
                 timeout=120)
        # The units as shipped, not enabled; no state directory made for the
        # dynamic user by the package.
        for u in UNITS:
            with open(os.path.join(plat.SOURCE_DIR, "packaging", "systemd", u)) as f:
                shipped = f.read()
            with open(os.path.join(m.root, "lib/systemd/system", u)) as f:
                self.assertEqual(f.read(), shipped, u)
            self.assertEqual(m.sh(f"systemctl is-enabled {u}", check=False).stdout.strip(),
                             "disabled")
        self.assertFalse(os.path.lexists(os.path.join(m.root, "var/lib/edgesync-controller")))

        # Without credentials: the start fails, and the journal names the
        # missing files (not an opaque 243/CREDENTIALS).
        r = m.sh("systemctl start edgesync-controller.service", check=False)
        self.assertNotEqual(r.returncode, 0)
        j = self.journal("edgesync-controller")
        self.assertIn("edgesync-controller: missing /etc/edgesync/controller/controller.crt "
                      "/etc/edgesync/controller/controller.key /etc/edgesync/controller/ca.crt", j)
        self.assertNotIn("CREDENTIALS", j)

        self.supply_credentials()
        with plat.step("nspawn: controller active (READY=1)"):
            # Started by hand, or by its own retry (Restart=) meanwhile.
            m.sh("systemctl start edgesync-controller.service")
        p = self.show("edgesync-controller", "ActiveState", "SubState", "Type", "StatusText")
        self.assertEqual((p["Type"], p["ActiveState"], p["SubState"]), ("notify", "active", "running"))
        self.assertNotIn("pre-existing public", self.journal("edgesync-controller"))
        self.assertEqual(os.readlink(os.path.join(m.root, "var/lib/edgesync-controller")),
                         "private/edgesync-controller")

        # The agent with no /etc/hosts (as mmdebstrap leaves a root): it
        # runs, and says what it cannot do.
        self.assertFalse(os.path.lexists(os.path.join(m.root, "etc/hosts")))
        with plat.step("nspawn: agent active (READY=1)"):
            m.sh("systemctl start edgesync-agent.service")
        p = self.show("edgesync-agent", "ActiveState", "SubState", "StatusText")
        self.assertEqual((p["ActiveState"], p["SubState"]), ("active", "running"))
        with plat.step("nspawn: agent says localhost does not resolve"):
            plat.wait_for("the agent's resolution error", lambda: "cannot resolve localhost"
                          in self.journal("edgesync-agent"), timeout=40)
        m.write("/etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
        with plat.step("nspawn: agent connected, node Ready"):
            m.sh("systemctl restart edgesync-agent.service")
            node = plat.wait_for("the node Ready (edgesyncctl)", self.ready, timeout=60)
        self.assertEqual(node["status"]["nodeInfo"]["hostname"], self.name)

        # eBPF: the listed tracefs shows no tracepoints here; the agent
        # mounts its own, and every kernel collector runs on eBPF.
        j = self.journal("edgesync-agent")
        self.assertIn("mounted tracefs (the one listed shows no tracepoints)", j)
        for c in KERNEL_COLLECTORS:
            self.assertRegex(j, rf'msg="collector started" collector={c} backend=ebpf', c)
        self.assertNotIn("backend=procfs", j)

        # Hardening as shipped: no drop-in; what the processes run with.
        for u in UNITS:
            self.assertEqual(self.show(u, "DropInPaths")["DropInPaths"], "", u)
        a_pid = self.show("edgesync-agent", "MainPID")["MainPID"]
        c_pid = self.show("edgesync-controller", "MainPID")["MainPID"]
        a = proc_status(m.sh(f"cat /proc/{a_pid}/status").stdout)
        c = proc_status(m.sh(f"cat /proc/{c_pid}/status").stdout)
        self.assertEqual(int(a["CapBnd"], 16), AGENT_CAPS)
        self.assertEqual(a["NoNewPrivs"].strip(), "1")
        self.assertEqual(a["Uid"].split()[0], "0")
        self.assertEqual(int(c["CapBnd"], 16), 0)
        self.assertEqual(c["NoNewPrivs"].strip(), "1")
        self.assertNotEqual(c["Uid"].split()[0], "0")

        # The watchdog: both main processes stopped at once; each is killed
        # (WatchdogSec=30s) and restarted (RestartSec=5s).
        restarts = {u: int(self.show(u, "NRestarts")["NRestarts"]) for u in UNITS}
        with plat.step("nspawn: watchdog restarts both stopped main processes"):
            m.sh(f"kill -STOP {a_pid} {c_pid}")

            def restarted():
                out = {}
                for u, old in (("edgesync-agent.service", a_pid),
                               ("edgesync-controller.service", c_pid)):
                    p = self.show(u, "NRestarts", "MainPID", "ActiveState", "SubState")
                    if int(p["NRestarts"]) <= restarts[u] or p["MainPID"] in ("0", old) \
                            or p["SubState"] != "running":
                        return None
                    out[u] = p
                return out

            plat.wait_for("both units restarted by the watchdog", restarted, timeout=90,
                          interval=1)
            plat.wait_for("the node Ready again", self.ready, timeout=60)
        for u in UNITS:
            self.assertIn("Watchdog timeout", self.journal(u), u)

        # The controller stops: exit 0, and the agent reports what happens to
        # its connection attempts (refused), not a certificate problem.
        before = {u: len(self.journal(u)) for u in UNITS}
        with plat.step("nspawn: systemctl stop"):
            m.sh("systemctl stop edgesync-controller.service")
            plat.wait_for("the agent's refused redial", lambda: "Connection refused"
                          in self.journal("edgesync-agent.service")[
                              before["edgesync-agent.service"]:], timeout=30)
            m.sh("systemctl stop edgesync-agent.service")
        after = {u: self.journal(u)[before[u]:] for u in UNITS}
        self.assertNotIn("not trusted", after["edgesync-agent.service"])
        self.assertNotIn("didn't look good", after["edgesync-agent.service"])
        for u in UNITS:
            # The main process exited with status 0 (systemd says
            # "Deactivated successfully" for that alone, and "Main process
            # exited, code=..." for any other end). An inactive unit is
            # unloaded at once, so `systemctl show` no longer has its status.
            self.assertEqual(self.show(u, "ActiveState")["ActiveState"], "inactive", u)
            self.assertIn(f"{u}: Deactivated successfully.", after[u], u)
            self.assertNotIn("Main process exited", after[u], u)

        # The README's trial: its drop-in (--dev, no credentials) and the
        # agent on the config --dev wrote for it, exactly as written there.
        m.sh("rm -f /etc/edgesync/controller/*")
        with plat.step("nspawn: the README's trial drop-in"):
            m.sh(readme_trial(), timeout=120)
            dev = "/var/lib/edgesync-controller/dev"
            self.assertNotRegex(m.sh(f"cat {dev}/agent-{self.name}.conf").stdout,
                                r"(?m)^state-dir")
            plat.wait_for("the node Ready (trial)", lambda: (lambda r: r.returncode == 0 and
                          plat.conditions(json.loads(r.stdout)).get("Ready") == "True")(
                m.sh(f"edgesyncctl --config {dev}/edgesyncctl.conf get node {self.name} -o json",
                     check=False)), timeout=60)
            # Its state where the agent's unit may write.
            self.assertTrue(os.path.exists(os.path.join(m.root, "var/lib/edgesync/agent.db")))
            m.sh("systemctl stop edgesync-agent edgesync-controller && "
                 "rm -r /etc/systemd/system/edgesync-controller.service.d && systemctl daemon-reload")

        with plat.step("nspawn: dpkg --purge"):
            m.sh("dpkg --purge edgesync-agent edgesync-controller", timeout=120)
        for p in ("var/lib/edgesync", "var/lib/private/edgesync-controller",
                  "var/lib/edgesync-controller", "lib/systemd/system/edgesync-agent.service"):
            self.assertFalse(os.path.lexists(os.path.join(m.root, p)), p)
        self.assertFalse(re.search(r"edgesync", m.sh("systemctl list-units --all --no-legend")
                                   .stdout), "units left after purge")


if __name__ == "__main__":
    plat.main()
