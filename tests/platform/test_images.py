#!/usr/bin/env python3
"""The container images, built and run by podman as an operator would:
packaging/container/Containerfile on a local Debian 12 base (a minbase root
made once by mmdebstrap into <build>/platform/ and imported as
debian:12 and debian:12-slim: no registry is reached), then

- the agent image says its version, and its `check`, run with the settings
  agent-daemonset.yaml gives the container (capabilities BPF, PERFMON,
  NET_ADMIN, SYS_ADMIN, DAC_READ_SEARCH and no others, read-only root, the
  host's network and PID namespace, bpffs, BTF, tracefs, the cgroup
  hierarchy, its ConfigMap and Secret), finds every kernel collector on eBPF;
- the controller image, run with controller-deployment.yaml's settings
  (user 65532, no capabilities, read-only root), serves an agent of this
  host on loopback: the node is connected and Ready, and the controller
  stops cleanly (exit 0).

`podman kube play` itself cannot play these manifests here (README,
"Tests of the packaging"): the flags come from the manifests instead
(plattest.kube_run_args).

The images stay in podman's storage as localhost/edgesync-{agent,controller}:
<version>, the names the Kubernetes manifests use."""

import os
import re
import signal
import tempfile
import unittest

import plattest as plat
from harness import Proc

KERNEL_COLLECTORS = ("process", "tcp", "cgroup-network", "oom", "blockio")
DAEMONSET_CAPS = "BPF,PERFMON,NET_ADMIN,SYS_ADMIN,DAC_READ_SEARCH"


def host_cgroup2():
    """The host's cgroup v2 hierarchy as the DaemonSet's /host/sys/fs/cgroup
    mount shows it: .../unified on hybrid hosts."""
    if os.path.ismount("/sys/fs/cgroup/unified"):
        return "/host/sys/fs/cgroup/unified"
    return "/host/sys/fs/cgroup"


class _ClassCleanup:
    """addCleanup for what setUpClass starts (Podman registers removals)."""

    def __init__(self, cls):
        self.addCleanup = cls.addClassCleanup


class TestImages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        plat.need_root()
        plat.need_tools("podman", "runc", "mmdebstrap")
        plat.need_file(os.path.join(plat.BIN_DIR, "es-mkcert"), "the build's es-mkcert")
        cls.ver = plat.version()
        cls.agent_image = f"localhost/edgesync-agent:{cls.ver}"
        cls.controller_image = f"localhost/edgesync-controller:{cls.ver}"
        cls.podman = plat.Podman(_ClassCleanup(cls))
        cls.podman.sweep()
        cls.podman.base_images("debian12")
        # The build stage tagged too, so that its layers (the cache of the
        # next build) are kept and the previous one's removed.
        cls.podman.build("build", "localhost/edgesync-build:platform")
        cls.podman.build("controller", cls.controller_image)
        cls.podman.build("agent", cls.agent_image)

    def name(self, what):
        return f"es-plat-{what}-{os.getpid()}"

    def test_versions(self):
        with plat.step("images: --version"):
            out = self.podman.run_container(self.name("ver"), ["--network=none"],
                                            self.agent_image, ["--version"]).stdout
            self.assertEqual(out.split()[:2], ["edgesync-agent", self.ver])
            out = self.podman.run_container(self.name("cver"), ["--network=none"],
                                            self.controller_image, ["--version"]).stdout
            self.assertEqual(out.split()[:2], ["edgesync-controller", self.ver])
            out = self.podman.run_container(self.name("ctlver"),
                                            ["--network=none", "--entrypoint",
                                             "/usr/bin/edgesyncctl"],
                                            self.controller_image, ["--version"]).stdout
            self.assertEqual(out.split()[1], self.ver)
        # The runtime images run as the Containerfile says.
        user = self.podman("image", "inspect", "--format", "{{.Config.User}}",
                           self.controller_image).stdout.strip()
        self.assertEqual(user, "65532:65532")

    def test_agent_check_with_daemonset_settings(self):
        """`check` in the agent image with what agent-daemonset.yaml gives
        its container (plattest.kube_run_args): its capabilities, user,
        read-only root, host network and PID namespace, environment and
        mounts; the ConfigMap as the file the manifests lay out, the join
        Secret's token and CA hash as the environment it gives, and the
        state directory (a temporary one instead of the host's) holding
        what a joined node keeps there."""
        for p in ("/sys/fs/bpf", "/sys/kernel/btf", "/sys/kernel/tracing"):
            plat.need_file(p, "the kernel's " + p)
        d = tempfile.mkdtemp(prefix="es-plat-check-")
        self.addCleanup(plat.shutil.rmtree, d, True)
        node = "es-plat-image-node"
        pki = plat.make_pki(os.path.join(d, "pki"), [node])
        state = os.path.join(d, "state")
        os.mkdir(state, 0o700)
        # A node that joined: its key, certificate and CA bundle in
        # <state-dir>/pki/ on the node's hostPath (README "Joining"); the
        # join token and CA hash come from the edgesync-join-token Secret.
        joined = os.path.join(state, "pki")
        os.mkdir(joined, 0o700)
        for src, key in ((pki["ca"][0], "ca.crt"), (pki["node-" + node][0], "node.crt"),
                         (pki["node-" + node][1], "node.key")):
            plat.shutil.copyfile(src, os.path.join(joined, key))
            os.chmod(os.path.join(joined, key), 0o600)
        config = os.path.join(d, "config")
        os.mkdir(config)
        cm = plat.kube_workload("agent-configmap.yaml", "ConfigMap")
        with open(os.path.join(config, "agent.conf"), "w") as f:
            f.write(cm["data"]["agent.conf"])
        ds = plat.kube_workload("agent-daemonset.yaml", "DaemonSet")
        # The Secret's token as the file the DaemonSet mounts (token-file).
        join = os.path.join(d, "join")
        os.mkdir(join)
        with open(os.path.join(join, "token"), "w") as f:
            f.write("abcdef.0123456789abcdef\n")
        os.chmod(os.path.join(join, "token"), 0o444)
        args = plat.kube_run_args(ds, "agent", {"config": config, "state": state,
                                                "join-token": join},
                                  env={"EDGESYNC_NODE_NAME": node,
                                       "EDGESYNC_CA_HASH": "sha256:" + "0" * 64,
                                       "EDGESYNC_CGROUP_ROOT": host_cgroup2()})
        self.assertIn(f"--cap-add={DAEMONSET_CAPS}", args)
        with plat.step("images: agent check (DaemonSet settings)"):
            r = self.podman.run_container(self.name("check"), args, self.agent_image,
                                          ["check"], check=False)
        rows = {m.group(1): (m.group(2), m.group(3)) for m in
                re.finditer(r"^(\S+)\s+(ok|missing|fail)\s+(.*)$", r.stdout, re.M)}
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for c in KERNEL_COLLECTORS:
            self.assertEqual(rows.get(f"collector/{c}"), ("ok", "ebpf"),
                             f"collector {c}:\n{r.stdout}{r.stderr}")
        self.assertEqual(rows["ebpf"][0], "ok", r.stdout)

    def test_controller_serves_host_agent(self):
        """The controller image with what controller-deployment.yaml gives
        its container (its user 65532, no capabilities, read-only root,
        /tmp in memory, the ConfigMap's settings and the Secret's files),
        on the host's network with its listeners moved to free loopback
        ports (EDGESYNC_LISTEN, EDGESYNC_ADMIN_LISTEN win over the file),
        serves an agent of this host."""
        d = tempfile.mkdtemp(prefix="es-plat-images-")
        self.addCleanup(plat.shutil.rmtree, d, True)
        os.chmod(d, 0o755)
        node = "es-plat-image-node"
        pki = plat.make_pki(os.path.join(d, "pki"), [node])
        # The Secret edgesync-controller-tls: group-readable (defaultMode
        # 0440) by the pod's fsGroup 65532.
        tls = os.path.join(d, "tls")
        os.mkdir(tls, 0o755)
        for src, key in ((pki["controller"][0], "tls.crt"), (pki["controller"][1], "tls.key"),
                         (pki["ca"][0], "ca.crt"), (pki["ca"][1], "ca.key"),
                         (pki["ca"][0], "admin-ca.crt")):
            plat.shutil.copyfile(src, os.path.join(tls, key))
            os.chown(os.path.join(tls, key), 0, 65532)
            os.chmod(os.path.join(tls, key), 0o440)
        config = os.path.join(d, "config")
        os.mkdir(config, 0o755)
        cm = plat.kube_workload("controller-configmap.yaml", "ConfigMap")
        with open(os.path.join(config, "controller.conf"), "w") as f:
            f.write(cm["data"]["controller.conf"])
        os.chmod(os.path.join(config, "controller.conf"), 0o644)
        state = os.path.join(d, "state")
        os.mkdir(state, 0o700)
        os.chown(state, 65532, 65532)
        port, admin, join = plat.free_port(), plat.free_port(), plat.free_port()
        dep = plat.kube_workload("controller-deployment.yaml", "Deployment")
        args = plat.kube_run_args(dep, "controller",
                                  {"config": config, "tls": tls, "state": state},
                                  env={"EDGESYNC_LISTEN": f"127.0.0.1:{port}",
                                       "EDGESYNC_ADMIN_LISTEN": f"127.0.0.1:{admin}",
                                       "EDGESYNC_JOIN_LISTEN": f"127.0.0.1:{join}"},
                                  network="host")
        self.assertIn("--user=65532:65532", args)
        self.assertIn("--read-only", args)
        cmd = next(c for c in dep["spec"]["template"]["spec"]["containers"]
                   if c["name"] == "controller")["args"]
        name = self.name("controller")
        with plat.step("images: controller container up"):
            self.podman.start_container(name, args, self.controller_image, cmd)
            try:
                plat.wait_for("the controller container's listeners",
                              lambda: plat.listening(admin) and plat.listening(port), timeout=30)
            except AssertionError as e:
                raise AssertionError(f"{e}\n{self.podman.logs(name)}") from e
        agent = Proc("agent", [
            os.path.join(plat.BIN_DIR, "edgesync-agent"), "run", "--node-name", node,
            "--controller-url", f"wss://localhost:{port}",
            "--cert", pki["node-" + node][0], "--key", pki["node-" + node][1],
            "--ca", pki["ca"][0], "--state-dir", os.path.join(d, "agent"),
            "--http-listen", f"127.0.0.1:{plat.free_port()}",
            "--collector-backend", "procfs", "--interval", "2"],
            os.path.join(d, "agent.log"))
        self.addCleanup(lambda: agent.alive() and agent.stop(signal.SIGKILL))
        with plat.step("images: host agent connected and Ready"):
            try:
                node_obj = plat.wait_for("the node Ready at the controller", lambda: (
                    lambda st_b: st_b[1] if st_b[0] == 200
                    and st_b[1]["status"].get("sync", {}).get("connected")
                    and plat.conditions(st_b[1]).get("Ready") == "True" else None)(
                        plat.admin_get(admin, pki, f"{plat.API}/nodes/{node}")), timeout=60)
            except AssertionError as e:
                raise AssertionError(f"{e}\nagent:\n{agent.output()[-3000:]}\n"
                                     f"controller:\n{self.podman.logs(name)[-3000:]}") from e
        self.assertEqual(node_obj["status"]["nodeInfo"]["hostname"], os.uname().nodename)
        self.assertEqual(agent.stop(), 0)
        with plat.step("images: controller container stop"):
            self.podman("stop", "-t", "20", name)
            code = self.podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
        self.assertEqual(code, "0", self.podman.logs(name)[-3000:])


if __name__ == "__main__":
    plat.main()
