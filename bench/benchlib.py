"""Helpers shared by the bench/ scripts: the loopback harness of the
integration tests (tests/integration/harness.py, re-exported as
`benchlib.harness`), pointed at a build tree, a cleanup owner for its
Cluster outside unittest, and /proc readings. Figures only: nothing here
passes or fails.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

import harness  # noqa: E402,F401


class Owner:
    """Stands in for the unittest.TestCase that harness.Cluster expects:
    collects cleanups and runs them, last added first, at run_cleanups()."""

    def __init__(self):
        self.cleanups = []

    def addCleanup(self, fn, *a):
        self.cleanups.append((fn, a))

    def run_cleanups(self):
        for fn, a in reversed(self.cleanups):
            fn(*a)


def use_build(build):
    """Points the harness at the binaries of the build tree build (a path,
    made absolute) and returns that absolute path."""
    build = os.path.abspath(build)
    harness.BIN_DIR = os.path.join(build, "bin")
    harness.TOOLS_DIR = harness.BIN_DIR
    return build


def proc_status(pid, key):
    """The value of key (e.g. "VmRSS") in /proc/<pid>/status, in kB, or None
    when the line is missing."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # kB
    return None
