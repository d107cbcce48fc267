#!/usr/bin/env python3
"""The packages made by the `packages` target (CTest fixture pkg_build):
each .deb and the .ipk unpacked into a scratch root (dpkg -x / dpkg -I;
ar x and tar), their control fields, conffiles, maintainer scripts and
file lists checked, and the unpacked binaries run with --version."""

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import unittest

import pkgtest

PKG_DIR = os.path.join(pkgtest.BUILD_DIR, "packages")


def version():
    out = pkgtest.run([os.path.join(pkgtest.BIN_DIR, "edgesync-agent"), "--version"]).stdout
    return out.split()[1]


def control_fields(text):
    fields, key = {}, None
    for line in text.splitlines():
        if line.startswith((" ", "\t")) and key:
            fields[key] += "\n" + line
        elif ":" in line:
            key, _, v = line.partition(":")
            fields[key] = v.strip()
    return fields


def controller_libuv():
    """Whether this build tree's controller has the libuv event loop
    (ES_CONTROLLER_LIBUV, cmake/EsThirdParty.cmake)."""
    with open(os.path.join(pkgtest.BUILD_DIR, "CMakeCache.txt")) as f:
        return "ES_CONTROLLER_LIBUV:BOOL=ON" in f.read().splitlines()


def files_in(root):
    out = set()
    for d, _, fs in os.walk(root):
        for f in fs:
            out.add("/" + os.path.relpath(os.path.join(d, f), root))
    return out


class TestPackages(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="es-pkg-")
        self.addCleanup(shutil.rmtree, self.root, True)
        self.ver = version()

    def check_common(self, f, name):
        self.assertEqual(f["Package"], name)
        self.assertEqual(f["Version"], self.ver)
        self.assertTrue(f["Maintainer"])
        self.assertTrue(f["Description"].strip())
        deps = [d.strip().split()[0] for d in f["Depends"].split(",")]
        for lib in ("libc6", "libcjson1", "libsqlite3-0"):
            self.assertIn(lib, deps, f"{name}: Depends {f['Depends']}")

    def check_binary(self, path):
        out = subprocess.run(["file", path], capture_output=True, text=True).stdout
        self.assertIn("stripped", out)
        self.assertNotIn("not stripped", out)
        v = pkgtest.run([path, "--version"]).stdout
        self.assertEqual(v.split()[1], self.ver)

    def check_deb(self, name, binaries, state_dir):
        arch = pkgtest.run(["dpkg", "--print-architecture"]).stdout.strip()
        deb = os.path.join(PKG_DIR, f"{name}_{self.ver}_{arch}.deb")
        self.assertTrue(os.path.isfile(deb), deb)
        f = control_fields(pkgtest.run(["dpkg-deb", "-f", deb]).stdout)
        self.check_common(f, name)
        self.assertEqual(f["Architecture"], arch)
        # dpkg-shlibdeps versions: "libc6 (>= 2.34)".
        self.assertRegex(f["Depends"], r"libc6 \(>= [\d.]+\)")
        # libsystemd is loaded at run time only under systemd (es_notify.c).
        self.assertNotIn("libsystemd0", f["Depends"])
        # libuv is the controller's event loop only: the agent links the
        # libwebsockets build without it.
        deps = [d.strip().split()[0] for d in f["Depends"].split(",")]
        if name == "edgesync-controller" and controller_libuv():
            self.assertIn("libuv1", deps, f"Depends {f['Depends']}")
        else:
            self.assertNotIn("libuv1", deps, f"{name}: Depends {f['Depends']}")
        self.assertIn("libsystemd0", f.get("Recommends", ""))
        self.assertTrue(int(f["Installed-Size"]) > 0)

        ctrl = os.path.join(self.root, name + "-control")
        pkgtest.run(["dpkg-deb", "-e", deb, ctrl])
        conf = name.replace("edgesync-", "")
        with open(os.path.join(ctrl, "conffiles")) as c:
            self.assertEqual(c.read().split(), [f"/etc/edgesync/{conf}.conf"])
        with open(os.path.join(ctrl, "postinst")) as c:
            post = c.read()
        if name == "edgesync-controller":
            # StateDirectory= makes it for the dynamic user (under
            # /var/lib/private); a directory made here would be migrated.
            code = "\n".join(l for l in post.splitlines() if not l.lstrip().startswith("#"))
            self.assertNotIn(state_dir, code)
            self.assertIn("install -d -m 0700 /etc/edgesync/controller\n", post)
        else:
            self.assertRegex(post, rf"install -d -m 0700 {state_dir}\n")
        self.assertIn("if [ -d /run/systemd/system ]; then\n        systemctl daemon-reload", post)
        for s in ("postinst", "prerm", "postrm"):
            self.assertTrue(os.access(os.path.join(ctrl, s), os.X_OK), s)
            pkgtest.run(["sh", "-n", os.path.join(ctrl, s)])
        if name == "edgesync-agent":
            # Removal takes away the enforcement pinned in the kernel.
            with open(os.path.join(ctrl, "prerm")) as c:
                pre = c.read()
            self.assertIn("rm -rf /sys/fs/bpf/edgesync", pre)
            self.assertIn("nft delete table inet edgesync_egress", pre)

        data = os.path.join(self.root, name)
        pkgtest.run(["dpkg", "-x", deb, data])
        want = {f"/etc/edgesync/{conf}.conf", f"/lib/systemd/system/{name}.service",
                f"/usr/share/doc/{name}/README.md"} | {f"/usr/bin/{b}" for b in binaries}
        if name == "edgesync-controller":
            want.add("/lib/systemd/system/edgesync-controller@.service")
        self.assertEqual(files_in(data), want)
        for unit in (p for p in want if p.startswith("/lib/systemd/system/")):
            with open(data + unit) as u, \
                    open(os.path.join(pkgtest.PACKAGING, "systemd",
                                      os.path.basename(unit))) as s:
                self.assertEqual(u.read(), s.read(), unit)
        for b in binaries:
            self.check_binary(os.path.join(data, "usr/bin", b))
        # dpkg's own listing agrees with what was unpacked.
        listed = pkgtest.run(["dpkg-deb", "-c", deb]).stdout
        for p in want:
            self.assertIn("." + p, listed)

    def test_agent_deb(self):
        self.check_deb("edgesync-agent", ["edgesync-agent"], "/var/lib/edgesync")

    def test_controller_deb(self):
        self.check_deb("edgesync-controller", ["edgesync-controller", "edgesyncctl"],
                       "/var/lib/edgesync-controller")

    def test_agent_ipk(self):
        ipks = [p for p in os.listdir(PKG_DIR) if p.endswith(".ipk")]
        self.assertEqual(len(ipks), 1, ipks)
        m = re.fullmatch(r"edgesync-agent_([^_]+)_(.+)\.ipk", ipks[0])
        self.assertEqual(m.group(1), self.ver)
        arch = m.group(2)
        self.assertEqual(arch, os.uname().machine)
        work = os.path.join(self.root, "ipk")
        os.mkdir(work)
        pkgtest.run(["ar", "x", os.path.join(PKG_DIR, ipks[0])], cwd=work)
        members = pkgtest.run(["ar", "t", os.path.join(PKG_DIR, ipks[0])]).stdout.split()
        self.assertEqual(members, ["debian-binary", "control.tar.gz", "data.tar.gz"])
        with open(os.path.join(work, "debian-binary")) as f:
            self.assertEqual(f.read(), "2.0\n")

        ctrl = os.path.join(work, "control")
        with tarfile.open(os.path.join(work, "control.tar.gz")) as t:
            names = {n.lstrip("./") for n in t.getnames()} - {""}
            self.assertEqual(names, {"control", "conffiles", "postinst", "prerm"})
            t.extractall(ctrl)
        with open(os.path.join(ctrl, "control")) as f:
            fields = control_fields(f.read())
        self.check_common(fields, "edgesync-agent")
        self.assertEqual(fields["Architecture"], arch)
        with open(os.path.join(ctrl, "conffiles")) as f:
            self.assertEqual(f.read().split(), ["/etc/edgesync/agent.conf"])

        data = os.path.join(work, "data")
        with tarfile.open(os.path.join(work, "data.tar.gz")) as t:
            for member in t.getmembers():
                self.assertEqual((member.uid, member.gid), (0, 0), member.name)
                self.assertTrue(member.name == "." or member.name.startswith("./"), member.name)
            t.extractall(data)
        want = {"/usr/bin/edgesync-agent", "/etc/edgesync/agent.conf",
                "/etc/init.d/edgesync-agent"}
        self.assertEqual(files_in(data), want)
        self.assertEqual(int(fields["Installed-Size"]),
                         sum(os.path.getsize(data + p) for p in want))
        self.check_binary(os.path.join(data, "usr/bin/edgesync-agent"))
        init = os.path.join(data, "etc/init.d/edgesync-agent")
        self.assertTrue(os.access(init, os.X_OK))
        with open(init) as f:
            text = f.read()
        self.assertTrue(text.startswith("#!/bin/sh /etc/rc.common\n"))
        self.assertIn("USE_PROCD=1", text)
        self.assertRegex(text, r'procd_set_param command "\$PROG" run --config "\$CONF"')
        self.assertIn("PROG=/usr/bin/edgesync-agent", text)
        self.assertIn("CONF=/etc/edgesync/agent.conf", text)
        self.assertRegex(text, r"procd_set_param respawn")


if __name__ == "__main__":
    pkgtest.main()
