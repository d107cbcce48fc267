#!/usr/bin/env python3
"""Prints edgesync's footprint and latency figures (never pass/fail).

Runs the real binaries on loopback, from a build tree (default: build):
- agent resident memory (VmRSS, VmHWM) at steady state holding 100 cached
  desired objects (budget 8 MiB, aim 5 MiB);
- agent CPU share at a 10 s collection interval on this host, over a
  measurement window (budget 1% of one core);
- time from an apply (admin API PUT, what `edgesyncctl apply` sends) to the agent's acknowledgement of that
  object (desiredAck) as the controller records it, median and 99th
  percentile over 100 applies.

Usage: bench/figures.py [--build DIR] [--cpu-seconds N] [--applies N]
"""

import argparse
import os
import statistics
import time

from benchlib import HERE, Owner, harness, proc_status, use_build


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def cc(name, interval):
    return (f"apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
            f"metadata: {{name: {name}}}\nspec: {{intervalSeconds: {interval}}}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--cpu-seconds", type=int, default=60)
    ap.add_argument("--applies", type=int, default=100)
    args = ap.parse_args()
    use_build(args.build)

    owner = Owner()
    try:
        c = harness.Cluster(owner)
        c.start_controller(extra=["--log-level", "warn"])
        agent = c.start_agent(extra=["--interval", "10", "--log-level", "warn"])
        harness.wait_for("first report", lambda: c.node(), timeout=60)

        # 100 cached objects: the CollectorConfig that applies (10 s), 49 that
        # it supersedes, and 50 HealthRules that never fire.
        docs = [cc("a-interval", 10)] + [cc(f"b-{i:03d}", 10) for i in range(49)]
        for i in range(50):
            docs.append(f"apiVersion: edgesync.io/v1alpha1\nkind: HealthRule\n"
                        f"metadata: {{name: rule-{i:03d}}}\n"
                        f"spec: {{metric: processes.count, operator: Gt, "
                        f"threshold: 1000000, for: 60s, conditionType: Rule{i:03d}}}\n")
        c.ctl("apply", "-f", "-", stdin="---\n".join(docs))
        harness.wait_for("100 objects reported", lambda: len(
            c.node()["status"].get("objects", [])) >= 100, timeout=120)
        time.sleep(25)  # a few collection rounds at steady state
        rss = proc_status(agent.p.pid, "VmRSS")
        hwm = proc_status(agent.p.pid, "VmHWM")
        print(f"agent_rss_steady_100_objects_kib {rss}  ({rss / 1024:.2f} MiB; budget 8 MiB, aim 5 MiB)")
        print(f"agent_rss_peak_kib {hwm}  ({hwm / 1024:.2f} MiB)")

        hz = os.sysconf("SC_CLK_TCK")
        t0, c0 = time.monotonic(), cpu_ticks(agent.p.pid)
        time.sleep(args.cpu_seconds)
        t1, c1 = time.monotonic(), cpu_ticks(agent.p.pid)
        share = (c1 - c0) / hz / (t1 - t0) * 100
        print(f"agent_cpu_percent_of_one_core_at_10s_interval {share:.3f}  "
              f"(over {t1 - t0:.0f} s; budget 1%)")

        lat = []
        path = f"{harness.API}/collectorconfigs/a-interval"
        for i in range(args.applies):
            body = {"apiVersion": "edgesync.io/v1alpha1", "kind": "CollectorConfig",
                    "metadata": {"name": "a-interval"},
                    "spec": {"intervalSeconds": 10 + (i % 2)}}
            t_start = time.monotonic()
            st, obj = c.admin("PUT", path, body)
            if st not in (200, 201):
                raise SystemExit(f"apply failed: HTTP {st}: {obj}")
            rv = obj["metadata"]["resourceVersion"]
            harness.wait_for("desiredAck", lambda: c.node()["status"]["sync"]
                             ["desiredResourceVersion"] >= rv, timeout=30, interval=0.001)
            lat.append((time.monotonic() - t_start) * 1000)
        lat.sort()
        p99 = lat[min(len(lat) - 1, int(round(0.99 * len(lat))) - 1)]
        print(f"apply_to_agent_ack_ms median {statistics.median(lat):.1f} p99 {p99:.1f} "
              f"(n={len(lat)}; admin API PUT to desiredAck, polled over HTTPS)")
    finally:
        owner.run_cleanups()


if __name__ == "__main__":
    main()
