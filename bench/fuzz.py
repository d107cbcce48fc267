#!/usr/bin/env python3
"""Runs edgesync's libFuzzer targets (tests/fuzz/) for longer than CTest
does and prints, per target: executions run, executions per second, the
corpus it ended with (files, bytes) and the crashes it found (the paths of
the inputs libFuzzer kept: crash-*, timeout-*, leak-*, oom-*, slow-unit-*).
Figures only, like every bench/ script: it exits 0 whatever was found
(1 only when it cannot run at all).

The targets and their exact command lines come from the fuzz build tree's
CTest registration (`ctest -L fuzz --show-only=json-v1`), with
-max_total_time replaced by SECONDS; each target's corpus is the one CTest
grows (DIR/tests/fuzz/corpus/<target>/), seeded first by fuzz_seed. Targets
run in parallel, at most --jobs at a time (default: nproc).

Build the tree first:
    cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DES_FUZZ=ON
    cmake --build build-fuzz --target fuzz

Usage: bench/fuzz.py [--build DIR] [--jobs N] SECONDS [TARGET...]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ARTIFACT = re.compile(r"^(crash|timeout|leak|oom|slow-unit)-")


def ctest_tests(build):
    """The fuzz-labelled tests of build: {name: (command, environment)}."""
    out = subprocess.run(
        ["ctest", "--test-dir", build, "-L", "fuzz", "--show-only=json-v1"],
        check=True, capture_output=True, text=True).stdout
    tests = {}
    for t in json.loads(out)["tests"]:
        env = {}
        for p in t.get("properties", []):
            if p["name"] == "ENVIRONMENT":
                env = dict(v.split("=", 1) for v in p["value"])
        tests[t["name"]] = (t.get("command") or [], env)
    return tests


def prefix_of(cmd):
    for a in cmd:
        if a.startswith("-artifact_prefix="):
            return a.split("=", 1)[1]
    return None


def artifacts(prefix):
    if not prefix or not os.path.isdir(prefix):
        return set()
    return {os.path.join(prefix, f) for f in os.listdir(prefix) if ARTIFACT.match(f)}


def corpus_size(path):
    files = [os.path.join(path, f) for f in os.listdir(path)] if os.path.isdir(path) else []
    return len(files), sum(os.path.getsize(f) for f in files if os.path.isfile(f))


def run_target(name, cmd, env, seconds, logdir):
    cmd = [a for a in cmd if not a.startswith("-max_total_time=")]
    cmd.insert(1, f"-max_total_time={seconds}")
    corpus = next(a for a in cmd[1:] if not a.startswith("-"))
    prefix = prefix_of(cmd)
    before = artifacts(prefix)
    log = os.path.join(logdir, f"{name}.log")
    t0 = time.monotonic()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT,
                            env={**os.environ, **env}).returncode
    wall = time.monotonic() - t0
    with open(log, errors="replace") as f:
        text = f.read()
    stat = dict(re.findall(r"^stat::(\w+):\s+(\d+)", text, re.M))
    runs = int(stat.get("number_of_executed_units", 0))
    return {
        "name": name, "rc": rc, "wall": wall, "log": log, "runs": runs,
        "exec_s": int(stat.get("average_exec_per_sec", 0)),
        "corpus": corpus_size(corpus),
        "found": sorted(artifacts(prefix) - before),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build-fuzz", help="fuzz build tree (default build-fuzz)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="targets run at once (default: nproc)")
    ap.add_argument("seconds", type=int, help="seconds each target runs")
    ap.add_argument("targets", nargs="*", help="targets to run (default: all)")
    a = ap.parse_args()

    tests = ctest_tests(a.build)
    fuzzers = {n: t for n, t in tests.items()
               if any(x.startswith("-max_total_time=") for x in t[0])}
    if not fuzzers:
        sys.exit(f"fuzz.py: no runnable fuzz targets in {a.build} (configure it with "
                 "-DCMAKE_C_COMPILER=clang -DES_FUZZ=ON and build --target fuzz)")
    names = a.targets or sorted(fuzzers)
    unknown = [n for n in names if n not in fuzzers]
    if unknown:
        sys.exit(f"fuzz.py: unknown target(s) {', '.join(unknown)}; known: {', '.join(sorted(fuzzers))}")
    missing = [n for n in names if not os.path.exists(fuzzers[n][0][0])]
    if missing:
        sys.exit(f"fuzz.py: not built: {', '.join(missing)} (cmake --build {a.build} --target fuzz)")
    if "fuzz_seed" in tests:
        subprocess.run(tests["fuzz_seed"][0], check=True)
    logdir = os.path.join(a.build, "tests", "fuzz", "bench-logs")
    os.makedirs(logdir, exist_ok=True)

    print(f"{len(names)} target(s), {a.seconds} s each, {min(a.jobs, len(names))} at a time")
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = list(pool.map(lambda n: run_target(n, *fuzzers[n], a.seconds, logdir), names))

    print(f"{'target':<14} {'executions':>12} {'exec/s':>8} {'corpus':>7} {'KiB':>7}  crashes")
    for r in results:
        files, size = r["corpus"]
        found = ", ".join(r["found"]) if r["found"] else (
            "none" if r["rc"] == 0 else f"none kept, exit {r['rc']} (see {r['log']})")
        print(f"{r['name']:<14} {r['runs']:>12} {r['exec_s']:>8} {files:>7} {size // 1024:>7}  {found}")
    print(f"logs: {logdir}/")


if __name__ == "__main__":
    main()
