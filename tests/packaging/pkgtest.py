"""Shared helpers of the packaging tests: where the build and source trees
are (ES_BUILD_DIR, ES_SOURCE_DIR, set by CTest), running commands, and the
entry point main()."""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# main(): the entry point of every test file (tests/ctest_main.py): exit 0
# when its tests passed (some may have skipped), 77 when every one skipped
# (CTest: Not Run), 1 on a failure.
from ctest_main import main  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("ES_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))
BUILD_DIR = os.environ.get("ES_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
BIN_DIR = os.environ.get("ES_BIN_DIR", os.path.join(BUILD_DIR, "bin"))
PACKAGING = os.path.join(SOURCE_DIR, "packaging")


def run(argv, **kw):
    """Runs argv; returns the CompletedProcess (text). Fails with its
    output when the exit status is not 0."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {r.returncode}:\n"
                             f"{r.stdout}\n{r.stderr}")
    return r


def settings(program):
    """{setting key: environment variable} parsed from `program --help`."""
    out = run([os.path.join(BIN_DIR, program), "--help"]).stdout
    found = {}
    for m in re.finditer(r"^\s+--([a-z0-9-]+)\s.*\[env: (EDGESYNC_[A-Z0-9_]+)\]", out, re.M):
        found[m.group(1)] = m.group(2)
    if not found:
        raise AssertionError(f"no settings found in {program} --help:\n{out}")
    return found


def parse_conf(text):
    """{key: value} of a `key = value` settings file (# comments)."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise AssertionError(f"line {n}: not key = value: {line!r}")
        k, v = line.split("=", 1)
        out[k.strip()] = v.strip()
    return out
