"""Shared helpers of the platform tests (label `platform`): the packaging
run the way an operator runs it, in containers and a booted Debian.

- step(): times one step, prints "platform: <step>: N.N s" and appends it
  to <build>/platform/timings.txt (scripts/test.sh prints that file).
- cached_root(): a Debian 12 root made once by mmdebstrap into
  <build>/platform/ (a tar for `podman import`, a directory for
  systemd-nspawn) and reused while its recipe is unchanged.
- Podman: podman with this build's containers.conf (runc; rlimits below
  the host's hard limits) and images and containers that are always
  removed.
- Machine: a booted systemd-nspawn container over an overlay of a cached
  root (the root stays clean), in cgroups of its own with memory and pid
  limits, always stopped and cleaned up.

Everything needs root and its tools; a test skips (exit 77 when all of a
file's tests skipped) naming what is missing.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
# main(): the entry point of every test file (tests/ctest_main.py): exit 0
# when its tests passed (some may have skipped), 77 when every one skipped
# (CTest: Not Run), 1 on a failure.
from ctest_main import main  # noqa: E402,F401
from harness import free_port, https_json, wait_for  # noqa: E402,F401

SOURCE_DIR = os.environ.get("ES_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))
BUILD_DIR = os.environ.get("ES_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
BIN_DIR = os.environ.get("ES_BIN_DIR", os.path.join(BUILD_DIR, "bin"))
PLATFORM_DIR = os.path.join(BUILD_DIR, "platform")
# Where the Debian roots are kept: the build tree unless ES_PLATFORM_ROOTS
# names another directory (scripts/test.sh does in CI, whose build tree is
# new every run).
ROOTS_DIR = os.environ.get("ES_PLATFORM_ROOTS") or PLATFORM_DIR
PKG_DIR = os.path.join(BUILD_DIR, "packages")
TIMINGS = os.path.join(PLATFORM_DIR, "timings.txt")

# Debian 12 as its images and installs have it: the release, its updates
# and its security archive (the mirror is the only network these tests use).
SUITE = "bookworm"
MIRRORS = [
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
]
# Bump when the way roots are made changes: their cache keys change.
ROOT_RECIPE = 1

# Debian packages of the tools, for the skip messages.
TOOL_PACKAGES = {"podman": "podman", "runc": "runc", "mmdebstrap": "mmdebstrap",
                 "systemd-nspawn": "systemd-container", "nsenter": "util-linux"}

TRUST_DOMAIN = "edgesync.local"


def _terminated(signum, frame):
    raise AssertionError(f"terminated by signal {signum}")


# A test stopped with SIGTERM (a timeout, ^C of a wrapper) still runs its
# cleanups: machines stopped, containers removed. What a SIGKILL leaves is
# swept by the next run (Machine.sweep, Podman.sweep).
signal.signal(signal.SIGTERM, _terminated)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def version():
    """This build's version, as its agent says it (`--version`)."""
    out = subprocess.run([os.path.join(BIN_DIR, "edgesync-agent"), "--version"],
                         capture_output=True, text=True, timeout=30).stdout
    return out.split()[1]


def _record(line):
    print(line, file=sys.stderr, flush=True)
    os.makedirs(PLATFORM_DIR, exist_ok=True)
    with open(TIMINGS, "a") as f:
        f.write(time.strftime("%Y-%m-%dT%H:%M:%S ") + line + "\n")


@contextlib.contextmanager
def step(what):
    """Times the block: prints and records "platform: <what>: N.N s" (with
    "FAILED" when the block raised)."""
    t0 = time.monotonic()
    ok = False
    try:
        yield
        ok = True
    finally:
        _record(f"platform: {what}: {time.monotonic() - t0:.1f} s"
                + ("" if ok else " (FAILED)"))


def need_root():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root")


def need_tools(*tools):
    """Skips unless every tool is on PATH (naming its Debian package)."""
    for t in tools:
        if not shutil.which(t):
            raise unittest.SkipTest(f"needs {t} (Debian package {TOOL_PACKAGES.get(t, t)}; "
                                    "scripts/install-deps.sh installs it)")


def need_file(path, what):
    if not os.path.exists(path):
        raise unittest.SkipTest(f"needs {what} ({path})")


def run(argv, timeout=120, check=True, **kw):
    """Runs argv (text output captured); fails with its output's tail when
    check and the exit status is not 0."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{' '.join(argv)}: no end within {timeout} s:\n"
                             f"{(e.stdout or b'')[-3000:]!r}\n{(e.stderr or b'')[-3000:]!r}") from e
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {r.returncode}:\n"
                             f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    return r


@contextlib.contextmanager
def _locked(name):
    """An exclusive flock on ROOTS_DIR/<name>: one maker of a cached root at
    a time."""
    os.makedirs(ROOTS_DIR, exist_ok=True)
    with open(os.path.join(ROOTS_DIR, name), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def root_path(name, fmt, includes=(), hooks=()):
    """Where cached_root keeps the root of this recipe:
    ROOTS_DIR/rootfs-<name>-<key>[.tar], key a hash of the recipe."""
    recipe = json.dumps([ROOT_RECIPE, SUITE, "minbase", sorted(includes), list(hooks),
                         MIRRORS, fmt])
    key = hashlib.sha256(recipe.encode()).hexdigest()[:12]
    return os.path.join(ROOTS_DIR, f"rootfs-{name}-{key}" + (".tar" if fmt == "tar" else ""))


def cached_root(name, fmt, includes=(), hooks=()):
    """A Debian 12 (minbase) root with the packages includes, made once by
    mmdebstrap and kept at root_path() (fmt "tar" or "directory"). hooks
    are mmdebstrap --customize-hook commands ("$1" is the root). Older roots
    of the same name are deleted. Returns the path."""
    path = root_path(name, fmt, includes, hooks)
    with _locked(".rootfs.lock"):
        if os.path.exists(path):
            _record(f"platform: root {name}: cached ({os.path.basename(path)})")
            return path
        for old in os.listdir(ROOTS_DIR):
            if old.startswith(f"rootfs-{name}-") and old != os.path.basename(path):
                p = os.path.join(ROOTS_DIR, old)
                shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
        tmp = path + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True) if os.path.isdir(tmp) else None
        if os.path.exists(tmp):
            os.unlink(tmp)
        argv = ["mmdebstrap", "--variant=minbase", f"--format={fmt}", "--quiet"]
        if includes:
            argv.append("--include=" + ",".join(includes))
        for h in hooks:
            argv.append("--customize-hook=" + h)
        argv += [SUITE, tmp] + MIRRORS
        with step(f"root {name}: mmdebstrap (cold cache)"):
            run(argv, timeout=900)
        os.rename(tmp, path)
    return path


# -- podman -----------------------------------------------------------------

class Podman:
    """podman as root, with <build>/platform/containers.conf: runc (crun
    refuses hybrid cgroup v1 hosts), and default rlimits within this
    host's hard limits (podman's defaults, 1048576 open files, are above
    them here, and runc fails to set them). Containers it starts are
    removed by the test's cleanup, whatever happens."""

    def __init__(self, test):
        self.test = test
        os.makedirs(PLATFORM_DIR, exist_ok=True)
        self.conf = os.path.join(PLATFORM_DIR, "containers.conf")
        # Without CAP_SYS_RESOURCE (this host's root lacks it) no hard limit
        # can be raised: at most this process's, and for processes at most
        # the 32768 podman gives conmon, whose child runc sets them.
        limits = []
        for name, res, cap in (("nofile", resource.RLIMIT_NOFILE, 65536),
                               ("nproc", resource.RLIMIT_NPROC, 32768)):
            hard = resource.getrlimit(res)[1]
            v = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
            limits.append(f'"{name}={v}:{v}"')
        text = ("# Written by tests/platform/plattest.py for the platform tests.\n"
                "[containers]\n"
                f"default_ulimits = [{', '.join(limits)}]\n"
                "[engine]\n"
                'runtime = "runc"\n')
        with open(self.conf, "w") as f:
            f.write(text)
        self.env = dict(os.environ, CONTAINERS_CONF=self.conf)

    def __call__(self, *args, timeout=300, check=True):
        return run(["podman"] + list(args), timeout=timeout, check=check, env=self.env)

    def sweep(self):
        """Removes the containers of platform tests whose process is gone
        (named es-plat-<what>-<pid>)."""
        r = self("ps", "-a", "--filter", "name=^es-plat-", "--format", "{{.Names}}",
                 check=False)
        for name in r.stdout.split():
            pid = name.rsplit("-", 1)[-1]
            if pid.isdigit() and not _pid_alive(int(pid)):
                self.remove(name)

    def image_id(self, ref):
        r = self("image", "inspect", "--format", "{{.Id}}", ref, check=False)
        return r.stdout.strip() if r.returncode == 0 else None

    # What Debian's images set that an imported root lacks.
    BASE_CHANGES = ["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    'CMD ["bash"]']

    def base_images(self, name):
        """docker.io/library/debian:12 and :12-slim (what the Containerfile
        names) from the minbase root tar cached_root(name, "tar") makes,
        imported when missing or made from another recipe (the import's
        message holds the tar's name and a hash of BASE_CHANGES). The tar is
        made only when an import is needed."""
        tar = None
        changes = hashlib.sha256("\n".join(self.BASE_CHANGES).encode()).hexdigest()[:8]
        want = f"{os.path.basename(root_path(name, 'tar'))} {changes}"
        replaced = set()
        for tag in ("12", "12-slim"):
            ref = f"docker.io/library/debian:{tag}"
            r = self("image", "inspect", "--format", "{{.Comment}}", ref, check=False)
            if r.returncode == 0 and r.stdout.strip() == want:
                _record(f"platform: {ref}: imported before")
                continue
            if r.returncode == 0:
                replaced.add(self.image_id(ref))
            tar = tar or cached_root(name, "tar")
            argv = ["import", "--message", want]
            for c in self.BASE_CHANGES:
                argv += ["--change", c]
            with step(f"podman import {ref}"):
                self(*argv, tar, ref, timeout=300)
        # The bases replaced, unless images built on them still hold them
        # (those go when their tags are rebuilt).
        for old in replaced:
            self("rmi", old, check=False)

    def build(self, target, tag):
        """Builds the Containerfile's target as tag (no pull, the host's
        network for apt; the layer cache is podman's). The image tag had
        before is removed when it is no longer used, so that rebuilds do not
        pile up. Returns the image id."""
        old = self.image_id(tag)
        with step(f"podman build --target {target}"):
            self("build", "--pull=never", "--network=host", "--layers",
                 "-f", os.path.join(SOURCE_DIR, "packaging", "container", "Containerfile"),
                 "--target", target, "-t", tag, SOURCE_DIR, timeout=1500)
        new = self.image_id(tag)
        if old and old != new:
            self("rmi", old, check=False)
        return new

    def run_container(self, name, args, image, cmd=(), check=True, timeout=120):
        """`podman run --rm` in the foreground; returns the CompletedProcess."""
        self.test.addCleanup(self.remove, name)
        return self("run", "--rm", "--name", name, *args, image, *cmd, check=check,
                    timeout=timeout)

    def start_container(self, name, args, image, cmd=()):
        """`podman run -d`: removed (with its volumes) by the test's cleanup."""
        self.test.addCleanup(self.remove, name)
        self("run", "-d", "--name", name, *args, image, *cmd)
        return name

    def remove(self, name):
        self("rm", "-f", "-t", "5", name, check=False, timeout=60)

    def logs(self, name):
        r = self("logs", name, check=False)
        return r.stdout + r.stderr


# -- certificates -------------------------------------------------------------

def mkcert(out_dir, name, cn, ca=None, extra=()):
    """es-mkcert: <out_dir>/<name>.crt and .key, signed by ca (a (crt, key)
    pair) or self-signed. Returns (crt, key)."""
    crt, key = os.path.join(out_dir, name + ".crt"), os.path.join(out_dir, name + ".key")
    argv = [os.path.join(BIN_DIR, "es-mkcert"), "--out-cert", crt, "--out-key", key,
            "--cn", cn] + list(extra)
    if ca:
        argv += ["--ca-cert", ca[0], "--ca-key", ca[1]]
    run(argv, timeout=60)
    return crt, key


def make_pki(out_dir, nodes):
    """A CA and, signed by it, the controller's certificate (localhost,
    127.0.0.1, ::1), an admin's and one per node. Returns {name: (crt, key)}
    with names "ca", "controller", "admin", "node-<n>"."""
    os.makedirs(out_dir, exist_ok=True)
    ca = mkcert(out_dir, "ca", "edgesync platform-test CA", extra=["--ca"])
    out = {"ca": ca}
    out["controller"] = mkcert(out_dir, "controller", "edgesync-controller", ca,
                               ["--server", "--dns", "localhost", "--ip", "127.0.0.1",
                                "--ip", "::1"])
    out["admin"] = mkcert(out_dir, "admin", "admin", ca,
                          ["--client", "--uri", f"spiffe://{TRUST_DOMAIN}/admin/admin"])
    for n in nodes:
        out["node-" + n] = mkcert(out_dir, "node-" + n, n, ca,
                                  ["--client", "--uri", f"spiffe://{TRUST_DOMAIN}/node/{n}"])
    return out


# -- systemd-nspawn -------------------------------------------------------------

def _cgroup_dirs(name):
    """The cgroup directories a machine runs in, one per hierarchy this host
    has and lets us write: name=systemd and cgroup v2 (where nspawn and the
    container's systemd make their subtree), pids and memory (the limits),
    each below this process's own cgroup of that hierarchy."""
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrl, path = line.rstrip("\n").split(":", 2)
            own[ctrl] = path
    out = []
    for ctrl, mnt in (("name=systemd", "systemd"), ("", "unified"), ("pids", "pids"),
                      ("memory", "memory")):
        base = "/sys/fs/cgroup/" + mnt
        if ctrl == "" and not os.path.ismount(base):
            base = "/sys/fs/cgroup"  # a pure cgroup v2 host
            if mnt == "unified" and not os.path.exists(os.path.join(base, "cgroup.controllers")):
                continue
        if ctrl not in own or not os.path.isdir(base):
            continue
        out.append((mnt, os.path.join(base, own[ctrl].lstrip("/"), name)))
    return out


def _rmdir_tree(path):
    """Removes an empty cgroup tree, children first."""
    if not os.path.isdir(path):
        return
    for d, subs, _ in os.walk(path, topdown=False):
        for s in subs:
            try:
                os.rmdir(os.path.join(d, s))
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


MACHINE_PREFIX = "esplat"


def machine_name():
    """A machine (and host) name of this process: esplat<pid>."""
    return f"{MACHINE_PREFIX}{os.getpid()}"


class Machine:
    """A booted systemd-nspawn container: an overlay (in a temporary
    directory) over the cached root lower, so that lower stays clean;
    --keep-unit --register=no (PID 1 of this host need not be systemd),
    --network-veth; cgroups of its own with limits (memory, pids). Stopped
    (SIGTERM, then SIGKILL) and cleaned up by the test's cleanup."""

    MEMORY_LIMIT = 2 << 30
    PIDS_LIMIT = 2048

    def __init__(self, test, lower, name, nspawn_args=()):
        self.sweep()
        self.test = test
        self.lower = lower
        self.name = name
        self.args = list(nspawn_args)
        self.dir = tempfile.mkdtemp(prefix=f"es-{name}-")
        self.root = os.path.join(self.dir, "root")
        self.upper = os.path.join(self.dir, "upper")
        self.console = os.path.join(self.dir, "console.log")
        self.proc = None
        self.mounted = False
        self.cgroups = _cgroup_dirs(name)
        test.addCleanup(self.close)

    @staticmethod
    def sweep():
        """Cleans up what a killed run left (its process gone): the overlay
        and directory of machines esplat<pid> in the temporary directory,
        and their cgroups."""
        def stale(name):
            pid = name[len(MACHINE_PREFIX):].split("-", 1)[0]
            return name.startswith(MACHINE_PREFIX) and pid.isdigit() \
                and not _pid_alive(int(pid))

        tmp = tempfile.gettempdir()
        for d in os.listdir(tmp):
            if d.startswith("es-" + MACHINE_PREFIX) and stale(d[3:]):
                root = os.path.join(tmp, d, "root")
                if os.path.ismount(root):
                    run(["umount", "-l", root], check=False)
                shutil.rmtree(os.path.join(tmp, d), ignore_errors=True)
        for _, d in _cgroup_dirs(MACHINE_PREFIX):
            parent = os.path.dirname(d)
            for c in os.listdir(parent) if os.path.isdir(parent) else ():
                if stale(c) and os.path.isdir(os.path.join(parent, c)):
                    _rmdir_tree(os.path.join(parent, c))

    def write(self, path, text, mode=0o644):
        """Writes a file into the root before or while it runs (through the
        overlay, so the cached root is untouched)."""
        full = os.path.join(self.root, path.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
        os.chmod(full, mode)

    def copy_in(self, src, dest, mode=0o644):
        full = os.path.join(self.root, dest.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        shutil.copyfile(src, full)
        os.chmod(full, mode)

    def mount(self):
        work = os.path.join(self.dir, "work")
        for d in (self.root, self.upper, work):
            os.makedirs(d, exist_ok=True)
        run(["mount", "-t", "overlay", "overlay", "-o",
             f"lowerdir={self.lower},upperdir={self.upper},workdir={work}", self.root])
        self.mounted = True

    def boot(self, timeout=90):
        """Boots the root (mount() first) and waits until systemd says the
        system is running (or degraded)."""
        for _, d in self.cgroups:
            os.makedirs(d, exist_ok=True)
            # cgroup v1 memory, v2 memory (when the controller is enabled
            # there) and pids: whichever this directory has.
            for knob, v in (("memory.limit_in_bytes", self.MEMORY_LIMIT),
                            ("memory.max", self.MEMORY_LIMIT), ("pids.max", self.PIDS_LIMIT)):
                if os.path.exists(os.path.join(d, knob)):
                    with open(os.path.join(d, knob), "w") as f:
                        f.write(str(v))
        procs = [os.path.join(d, "cgroup.procs") for _, d in self.cgroups]

        def enter_cgroups():
            for p in procs:
                with open(p, "w") as f:
                    f.write("0")
            os.setsid()

        # No name server: nothing outside the machine is ever asked.
        self.write("/etc/resolv.conf", "# platform test machine: no name server\n")
        argv = ["systemd-nspawn", "--boot", f"--directory={self.root}",
                f"--machine={self.name}", "--keep-unit", "--register=no",
                "--network-veth", "--resolv-conf=off", "--console=read-only"] + self.args
        self.log = open(self.console, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, preexec_fn=enter_cgroups)
        wait_for(f"machine {self.name} booted", lambda: self._alive() and self.state()
                 in ("running", "degraded"), timeout=timeout, interval=0.3)

    def _alive(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"systemd-nspawn exited {self.proc.returncode}:\n"
                                 + self.console_tail())
        return True

    def leader(self):
        """The container's PID 1, as a PID of this host."""
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            kids = f.read().split()
        if not kids:
            raise AssertionError("no container process yet")
        return int(kids[0])

    def state(self):
        return self.sh("systemctl is-system-running", check=False).stdout.strip()

    def sh(self, cmd, check=True, timeout=60):
        """Runs cmd with /bin/sh inside the container (every namespace of its
        PID 1, its root) as root; returns the CompletedProcess."""
        argv = ["nsenter", "-t", str(self.leader()), "-a", "-r", "-w",
                "/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                "LANG=C.UTF-8", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0",
                "/bin/sh", "-c", cmd]
        return run(argv, timeout=timeout, check=check)

    def nsenter_net(self, argv, timeout=60, check=True):
        """Runs argv (a program of this host) in the container's network
        namespace only: to reach its loopback from here."""
        return run(["nsenter", "-t", str(self.leader()), "-n"] + list(argv),
                   timeout=timeout, check=check)

    def console_tail(self, n=6000):
        try:
            with open(self.console, "rb") as f:
                return f.read().decode("utf-8", "replace")[-n:]
        except OSError:
            return ""

    def close(self):
        """Stops the machine (SIGTERM: nspawn asks its systemd to halt;
        SIGKILL after 30 s), unmounts the overlay, removes its cgroups and
        the temporary directory."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if self.proc:
            self.log.close()
        if self.mounted:
            run(["umount", self.root], check=False)
            self.mounted = False
        for _, d in reversed(self.cgroups):
            _rmdir_tree(d)
        if os.environ.get("ES_KEEP_TMP"):
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


# -- clients ----------------------------------------------------------------

API = "/apis/edgesync.io/v1alpha1"


def admin_get(port, pki, path, host="127.0.0.1"):
    """GET path from the controller's admin API on host:port with the admin
    certificate of pki (make_pki). Returns (status, parsed JSON or text)."""
    import ssl

    ctx = ssl.create_default_context(cafile=pki["ca"][0])
    ctx.load_cert_chain(*pki["admin"])
    return https_json(host, port, ctx, "GET", path, timeout=10)


def conditions(node):
    """{type: status} of a Node object's status.conditions."""
    return {c["type"]: c["status"] for c in (node or {}).get("status", {}).get("conditions", [])}


def listening(port, host="127.0.0.1"):
    import socket

    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


# -- the Kubernetes manifests as podman run flags -------------------------------

KUBE_DIR = os.path.join(SOURCE_DIR, "packaging", "kubernetes")


def kube_docs(name):
    """The documents of packaging/kubernetes/<name>."""
    import yaml

    with open(os.path.join(KUBE_DIR, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def kube_workload(name, kind):
    return next(d for d in kube_docs(name) if d["kind"] == kind)


def kube_run_args(workload, container, volumes, env=None, network=None):
    """`podman run` flags that give container (by name) of workload (a
    DaemonSet or Deployment document) the settings its pod template says:
    host network and PID namespace, user, read-only root, no privilege
    escalation, the capabilities dropped and added, the environment (value
    entries, $(VAR) expanded; env adds or overrides, e.g. for fieldRef
    ones) and the mounts. volumes maps a volume name to a host path for
    every configMap, secret, persistentVolumeClaim and hostPath volume
    (hostPath ones default to their path); emptyDir volumes are tmpfs.
    network overrides hostNetwork ("host", "none", ...)."""
    spec = workload["spec"]["template"]["spec"]
    c = next(x for x in spec["containers"] if x["name"] == container)
    sc = c.get("securityContext", {})
    psc = spec.get("securityContext", {})
    args = [f"--network={network or ('host' if spec.get('hostNetwork') else 'none')}"]
    if spec.get("hostPID"):
        args.append("--pid=host")
    uid = sc.get("runAsUser", psc.get("runAsUser"))
    gid = sc.get("runAsGroup", psc.get("runAsGroup"))
    if uid is not None:
        args.append(f"--user={uid}" + (f":{gid}" if gid is not None else ""))
    if sc.get("readOnlyRootFilesystem"):
        args.append("--read-only")
    if sc.get("allowPrivilegeEscalation") is False:
        args.append("--security-opt=no-new-privileges")
    if sc.get("privileged"):
        args.append("--privileged")
    caps = sc.get("capabilities", {})
    for d in caps.get("drop", []):
        args.append(f"--cap-drop={d.lower()}")
    if caps.get("add"):
        args.append("--cap-add=" + ",".join(caps["add"]))
    values = {}
    for e in c.get("env", []):
        if "value" in e:
            v = e["value"]
            for ref in set(re.findall(r"\$\((\w+)\)", v)):
                v = v.replace(f"$({ref})", values.get(ref, (env or {}).get(ref, "")))
            values[e["name"]] = v
    values.update(env or {})
    for k, v in values.items():
        args += ["-e", f"{k}={v}"]
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        vol = vols[m["name"]]
        opts = (["ro"] if m.get("readOnly") else []) + \
            (["rslave"] if m.get("mountPropagation") == "HostToContainer" else [])
        ro = ":" + ",".join(opts) if opts else ""
        if "emptyDir" in vol:
            args += ["--tmpfs", m["mountPath"]]
            continue
        src = volumes.get(m["name"]) or vol.get("hostPath", {}).get("path")
        if not src:
            raise AssertionError(f"volume {m['name']}: no host path given")
        if "subPath" in m:
            src = os.path.join(src, m["subPath"])
        args += ["-v", f"{src}:{m['mountPath']}{ro}"]
    return args
