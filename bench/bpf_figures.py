#!/usr/bin/env python3
"""Prints the process collector's figures (never pass/fail). Needs root.

Runs the real agent (offline: no controller), every kernel collector on:
- events handled per second: a storm of execs of /bin/true from four
  tight loops; events the process collector handled (and lost) divided by
  the storm's wall time;
- the agent's CPU share during a sustained storm of --rate execs per
  second for --seconds seconds (budget 5% of one core), from its
  /proc/<pid>/stat utime + stime;
- its resident memory (VmRSS, VmHWM) with every collector on, after the
  storms.

Usage: bench/bpf_figures.py [--build DIR] [--rate N] [--seconds N] [--storm N]
"""

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

import harness  # noqa: E402


def state(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/v1/state")
        return json.loads(conn.getresponse().read().decode())
    finally:
        conn.close()


def collector(port, name):
    node = state(port)["node"] or {}
    for e in node.get("status", {}).get("collectors", []):
        if e["name"] == name:
            return e
    return None


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def mem(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def paced_execs(rate, seconds):
    """Spawns /bin/true at `rate` per second for `seconds`; returns the
    number spawned."""
    n = 0
    t0 = time.monotonic()
    pending = []
    while True:
        now = time.monotonic() - t0
        if now >= seconds:
            break
        due = int(now * rate)
        while n < due:
            pending.append(os.posix_spawn("/bin/true", ["/bin/true"], os.environ))
            n += 1
        while pending:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            pending.remove(pid)
        time.sleep(0.001)
    for p in pending:
        os.waitpid(p, 0)
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--storm", type=int, default=20000)
    a = ap.parse_args()
    binary = os.path.join(os.path.abspath(a.build), "bin", "edgesync-agent")
    tmp = tempfile.mkdtemp(prefix="es-bpf-bench-")
    port = harness.free_port()
    log = open(os.path.join(tmp, "agent.log"), "w")
    agent = subprocess.Popen([binary, "run", "--state-dir", os.path.join(tmp, "s"),
                              "--http-listen", f"127.0.0.1:{port}",
                              "--interval", "1"], stdout=log, stderr=log)
    try:
        harness.wait_for("the agent's first report",
                         lambda: collector(port, "process"))
        node = state(port)["node"]["status"]
        backends = {e["name"]: e["backend"] for e in node["collectors"]
                    if "events" in e}
        print("kernel collectors:", ", ".join(f"{k}={v}" for k, v in backends.items()))

        before = collector(port, "process")
        per = a.storm // 4
        t0 = time.monotonic()
        subprocess.run(["/bin/sh", "-c",
                        f"for k in 1 2 3 4; do (i=0; while [ $i -lt {per} ]; do "
                        f"/bin/true; i=$((i+1)); done) & done; wait"], check=True)
        wall = time.monotonic() - t0
        time.sleep(1.5)
        after = collector(port, "process")
        handled = after["events"] - before["events"]
        lost = after["eventsLost"] - before["eventsLost"]
        print(f"storm: {per * 4} execs in {wall:.2f} s ({per * 4 / wall:.0f} execs/s); "
              f"process collector handled {handled} events ({handled / wall:.0f} events/s), "
              f"lost {lost}")

        hz = os.sysconf("SC_CLK_TCK")
        c0 = cpu_ticks(agent.pid)
        t0 = time.monotonic()
        n = paced_execs(a.rate, a.seconds)
        wall = time.monotonic() - t0
        c1 = cpu_ticks(agent.pid)
        share = (c1 - c0) / hz / wall
        print(f"sustained: {n} execs in {wall:.1f} s ({n / wall:.0f} execs/s); "
              f"agent CPU {share * 100:.2f}% of one core (budget 5%)")
        time.sleep(2)
        m = mem(agent.pid)
        print(f"agent memory, every kernel collector on: VmRSS {m['VmRSS']} KiB "
              f"({m['VmRSS'] / 1024:.1f} MiB), VmHWM {m['VmHWM']} KiB")
    finally:
        agent.terminate()
        agent.wait(20)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
