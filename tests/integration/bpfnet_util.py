"""Helpers of the bpf-labelled network and block I/O tests (test_bpf_tcp,
test_bpf_cgnet, test_bpf_blockio): cgroup v2 children, workloads run in
them, and reading status.activity from the agent's /v1/state."""

import inspect
import os
import subprocess
import sys
import tempfile
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
    if os.geteuid() != 0:
        raise unittest.SkipTest("kernel collectors need root (label bpf)")


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


class Cgroup2Child:
    """A new cgroup v2 child directory (a private cgroup2 mount in a
    temporary directory when the host has none), removed at cleanup."""

    def __init__(self, test):
        self.mount = cgroup2_mount()
        self.private = None
        if self.mount is None:
            self.private = tempfile.mkdtemp(prefix="es-cg2-")
            subprocess.run(["mount", "-t", "cgroup2", "none", self.private], check=True)
            self.mount = self.private
        self.path = tempfile.mkdtemp(prefix="es-bpfnet-", dir=self.mount)
        self.rel = "/" + os.path.relpath(self.path, self.mount)
        self.id = os.stat(self.path).st_ino  # the cgroup v2 id (kernfs node id)
        test.addCleanup(self.close)

    def run(self, script, *args, timeout=120):
        """Runs python3 -c script in this cgroup; returns its stdout lines."""
        procs = os.path.join(self.path, "cgroup.procs")

        def enter():
            with open(procs, "w") as f:
                f.write("0")
        r = subprocess.run([sys.executable, "-c", script] + [str(a) for a in args],
                           preexec_fn=enter, capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise AssertionError(f"workload exited {r.returncode}:\n{r.stderr}")
        return r.stdout.splitlines()

    def close(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass
        if self.private:
            subprocess.run(["umount", self.private], check=False)
            os.rmdir(self.private)


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
