"""Helpers of the bpf-labelled kernel collector tests (test_bpf_tcp,
test_bpf_cgnet, test_bpf_blockio, test_bpf_oom, test_bpf_process): the
root check, cgroup v2 children, workloads run in them, and reading
status.activity from the agent's /v1/state."""

import inspect
import os
import subprocess
import sys
import tempfile
import time
import unittest

from harness import wait_for


def read_to_eof(sock):
    """Reads sock until the peer shuts its side down; returns the number of
    bytes read."""
    total = 0
    while True:
        b = sock.recv(65536)
        if not b:
            return total
        total += len(b)


def workload(script):
    """script (Python source for Cgroup2Child.run, which runs it in another
    process) with read_to_eof defined before it."""
    return inspect.getsource(read_to_eof) + script


def require_root():
    """Skips the calling test unless it runs as root, which the kernel
    collectors need (BPF programs, tracefs, cgroups)."""
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root")


def cgroup2_mount():
    """The first cgroup v2 mount of this host, or None. Every cgroup v2
    mount shows the same single hierarchy, so a child made under any of
    them is in the hierarchy the agent attached to."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split(" ", 1)[0] == "cgroup2":
                return left.split()[4]
    return None


def remove_cgroup(path):
    """rmdir of a cgroup directory, retried for 5 s while the kernel still
    holds it (a killed task's memory not yet uncharged); a missing one is
    fine."""
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


class ControllerUnavailable(Exception):
    """A cgroup v2 controller cannot be enabled for a child cgroup."""


class Cgroup2Child:
    """A new cgroup v2 child directory (a private cgroup2 mount in a
    temporary directory when the host has none), removed at cleanup.

    controllers: names of cgroup v2 controllers (e.g. "memory") the child
    must have; those not yet on are enabled in the parent's
    cgroup.subtree_control, and turned off again at cleanup. Raises
    ControllerUnavailable, with the reason and having undone the mount,
    when one is not in the parent's cgroup.controllers (on a hybrid host a
    controller bound to a cgroup v1 hierarchy is missing from cgroup v2) or
    cannot be enabled."""

    def __init__(self, test, controllers=()):
        self.mount = cgroup2_mount()
        self.private = None
        self.path = None
        self.enabled = []
        if self.mount is None:
            self.private = tempfile.mkdtemp(prefix="es-cg2-")
            subprocess.run(["mount", "-t", "cgroup2", "none", self.private], check=True)
            self.mount = self.private
        try:
            self._enable(controllers)
        except ControllerUnavailable:
            self.close()
            raise
        test.addCleanup(self.close)
        self.path = tempfile.mkdtemp(prefix="es-bpfnet-", dir=self.mount)
        self.rel = "/" + os.path.relpath(self.path, self.mount)
        self.id = os.stat(self.path).st_ino  # the cgroup v2 id (kernfs node id)

    def _enable(self, controllers):
        with open(os.path.join(self.mount, "cgroup.controllers")) as f:
            available = f.read().split()
        with open(os.path.join(self.mount, "cgroup.subtree_control")) as f:
            on = f.read().split()
        for c in controllers:
            if c not in available:
                raise ControllerUnavailable(
                    f"the {c} controller is not in cgroup v2 ({self.mount}/cgroup.controllers: "
                    f"{' '.join(available) or 'none'}): bound to a cgroup v1 hierarchy or disabled")
            if c in on:
                continue
            try:
                with open(os.path.join(self.mount, "cgroup.subtree_control"), "w") as f:
                    f.write(f"+{c}")
            except OSError as e:
                raise ControllerUnavailable(
                    f"cannot enable the {c} controller in {self.mount}/cgroup.subtree_control: "
                    f"{e}") from e
            self.enabled.append(c)

    def enter(self):
        """Moves the calling process into this cgroup (a preexec_fn)."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write("0")

    def run(self, script, *args, timeout=120):
        """Runs python3 -c script in this cgroup; returns its stdout lines."""
        r = subprocess.run([sys.executable, "-c", script] + [str(a) for a in args],
                           preexec_fn=self.enter, capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise AssertionError(f"workload exited {r.returncode}:\n{r.stderr}")
        return r.stdout.splitlines()

    def close(self):
        if self.path:
            remove_cgroup(self.path)
            self.path = None
        for c in reversed(self.enabled):
            try:
                with open(os.path.join(self.mount, "cgroup.subtree_control"), "w") as f:
                    f.write(f"-{c}")
            except OSError:
                pass  # still used by a cgroup made meanwhile: left on
        self.enabled = []
        if self.private:
            subprocess.run(["umount", self.private], check=False)
            os.rmdir(self.private)
            self.private = None


def activity(cluster):
    st = cluster.agent_state()
    return st["node"]["status"].get("activity", {})


def collector(cluster, name):
    for c in cluster.agent_state()["node"]["status"].get("collectors", []):
        if c.get("name") == name:
            return c
    return None


def wait_backend(cluster, name, backend, timeout=30):
    """Waits until status.collectors says collector name runs on backend."""
    return wait_for(f"collector {name} on {backend}",
                    lambda: (lambda c: c if c and c.get("backend") == backend else None)(
                        collector(cluster, name)), timeout=timeout)


def wait_named(cg, find, row=lambda m: m, timeout=15):
    """Waits until find() returns a match whose row (row(match)) carries the
    name of the cgroup v2 child cg ("cgroup"), and returns the match. Names
    of new cgroups are found by a rate-limited rescan (cgroupname.h,
    ES_CGNAME_RESCAN_S)."""
    return wait_for(f"the name {cg.rel} of the workload's cgroup",
                    lambda: (lambda m: m if m and row(m).get("cgroup") else None)(find()),
                    timeout=timeout)
