#!/usr/bin/env python3
"""The Containerfile (packaging/container/): no container engine runs
here, so this replays its build stage's install steps against this build
tree and checks that every file a runtime stage copies from the build
stage is produced: the stripped binaries (`cmake --install --component
... --strip`) and the runtime package lists (packaging/runtime-deps.sh),
which must cover every library the binary links."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import pkgtest

CONTAINERFILE = os.path.join(pkgtest.PACKAGING, "container", "Containerfile")


def instructions(text):
    """[(INSTRUCTION, args)] with continuation lines joined."""
    out, cur = [], ""
    for line in text.splitlines():
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        cur += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


class TestContainerfile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(CONTAINERFILE) as f:
            cls.ins = instructions(f.read())
        cls.stages = {}
        cur = None
        for word, rest in cls.ins:
            if word == "FROM":
                m = re.match(r"(\S+)\s+AS\s+(\S+)", rest, re.I)
                cur = m.group(2)
                cls.stages[cur] = {"base": m.group(1), "ins": []}
            else:
                cls.stages[cur]["ins"].append((word, rest))

    def test_stages(self):
        self.assertEqual(self.stages["build"]["base"], "debian:12")
        for s in ("agent", "controller"):
            self.assertEqual(self.stages[s]["base"], "debian:12-slim")
        # The last stage is the default target: the agent.
        self.assertEqual(list(self.stages)[-1], "agent")
        ep = [r for w, r in self.stages["agent"]["ins"] if w == "ENTRYPOINT"]
        self.assertEqual(ep, ['["/usr/bin/edgesync-agent"]'])
        cmd = [r for w, r in self.stages["agent"]["ins"] if w == "CMD"]
        self.assertEqual(cmd, ['["run"]'])

    def test_copied_files_are_built(self):
        stage = tempfile.mkdtemp(prefix="es-stage-")
        self.addCleanup(shutil.rmtree, stage, True)
        run = " ".join(r for w, r in self.stages["build"]["ins"] if w == "RUN")
        installs = re.findall(r"DESTDIR=/stage/(\S+) cmake --install /build "
                              r"--component (\S+) --prefix (\S+) --strip", run)
        self.assertEqual({c for _, c, _ in installs}, {"agent", "controller"})
        for sub, comp, prefix in installs:
            env = dict(os.environ, DESTDIR=os.path.join(stage, sub))
            pkgtest.run(["cmake", "--install", pkgtest.BUILD_DIR, "--component", comp,
                         "--prefix", prefix, "--strip"], env=env)
        deps = re.findall(r"packaging/runtime-deps.sh ((?:/stage/\S+ )+)>/stage/(\S+)", run)
        self.assertEqual(len(deps), 2)
        for binaries, out in deps:
            r = pkgtest.run([os.path.join(pkgtest.PACKAGING, "runtime-deps.sh")] +
                            [os.path.join(stage, b[len("/stage/"):]) for b in binaries.split()])
            with open(os.path.join(stage, out), "w") as f:
                f.write(r.stdout)

        copied = 0
        for name in ("agent", "controller"):
            for w, rest in self.stages[name]["ins"]:
                if w != "COPY":
                    continue
                self.assertTrue(rest.startswith("--from=build "), rest)
                srcs = rest.split()[1:-1]
                for src in srcs:
                    self.assertTrue(src.startswith("/stage/"), src)
                    path = os.path.join(stage, src[len("/stage/"):])
                    self.assertTrue(os.path.isfile(path), f"{name}: COPY {src}: not built")
                    copied += 1
                    if "/usr/bin/" in src:
                        out = subprocess.run(["file", path], capture_output=True, text=True).stdout
                        self.assertIn("stripped", out)
                        self.assertNotIn("not stripped", out)
                        v = pkgtest.run([path, "--version"]).stdout
                        self.assertRegex(v, r"^edgesync\S* \d+\.\d+\.\d+")
        self.assertGreaterEqual(copied, 5)

        # Each image's package list covers every library each binary it
        # copies links (edgesyncctl beside the controller): each DT_NEEDED
        # soname is in a file of one of the listed packages.
        for name in ("agent", "controller"):
            with open(os.path.join(stage, name, "runtime-packages")) as f:
                pkgs = f.read().split()
            self.assertIn("libc6", pkgs)
            # This machine's architecture: with foreign ones added (the
            # cross builds' multiarch libraries) a bare name is ambiguous.
            arch = pkgtest.run(["dpkg", "--print-architecture"]).stdout.strip()
            files = pkgtest.run(["dpkg-query", "-L"] + [
                p if ":" in p else f"{p}:{arch}" for p in pkgs]).stdout.split()
            names = {os.path.basename(p) for p in files}
            bins = [r.split()[-2] for w, r in self.stages[name]["ins"]
                    if w == "COPY" and "/usr/bin/" in r]
            self.assertTrue(bins, name)
            for b in bins:
                needed = re.findall(r"\(NEEDED\).*\[(.+)\]", pkgtest.run(
                    ["readelf", "-d", os.path.join(stage, b[len("/stage/"):])]).stdout)
                self.assertTrue(needed, b)
                for soname in needed:
                    self.assertIn(soname, names, f"{name}: {b} needs {soname}, in none of {pkgs}")

    def test_runtime_stages_install_only_the_list(self):
        for name in ("agent", "controller"):
            runs = [r for w, r in self.stages[name]["ins"] if w == "RUN"]
            self.assertEqual(len(runs), 1, name)
            self.assertIn("xargs -a /tmp/runtime-packages apt-get install -y "
                          "--no-install-recommends", runs[0])
            self.assertIn("rm -rf /var/lib/apt/lists/*", runs[0])


if __name__ == "__main__":
    pkgtest.main()
