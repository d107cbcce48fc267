#!/usr/bin/env python3
"""Captures the report fixture of the fleet simulator from a real agent.

Starts a development controller and one real `edgesync-agent` for this
host (tests/integration/harness.py) with the agent's default settings, lets
it report for --rounds collection rounds, stops both, and copies the
agent's state reports from the controller's database (read-only): the
first snapshot to DATA/snapshot.json and the patches that follow it, in
order, one per line, to DATA/patches.jsonl. Event reports are left out
(the simulator replays state only). Run it again to refresh the fixture.

With --protocol 2 the agent speaks protocol version 2 (its default) for
--seconds: the first snapshot goes to DATA/v2/snapshot.json and every
report after it, `delta` and `event` alike, in order, one per line to
DATA/v2/reports.jsonl as {"afterSeconds": seconds since the report
before it (the agent's report times), "reportType", "body"}; the
simulator replays them at those gaps.

Usage: bench/fleetsim/capture.py [--build DIR] [--rounds N] [--interval S]
       [--protocol 1|2] [--seconds S]
"""

import argparse
import datetime
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchlib import Owner, db_ro, harness, use_build  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--interval", type=int, default=10,
                    help="agent collection interval, s (10: the default)")
    ap.add_argument("--out", default=os.path.join(HERE, "data"))
    ap.add_argument("--protocol", type=int, choices=(1, 2), default=1,
                    help="protocol version the agent speaks [1: DATA/; 2: DATA/v2/]")
    ap.add_argument("--seconds", type=int, default=360,
                    help="--protocol 2: seconds of reports captured")
    a = ap.parse_args()
    use_build(a.build)
    owner = Owner()
    try:
        c = harness.Cluster(owner)
        c.start_controller()
        c.start_agent(extra=["--interval", str(a.interval),
                             "--protocol-version", str(a.protocol)])
        node = c.nodes[0]
        if a.protocol == 2:
            time.sleep(a.seconds)
        else:
            harness.wait_for("reports", lambda: len(c.reports(node)) >= a.rounds + 1,
                             timeout=a.rounds * a.interval + 60, interval=1)
        c.agents[node].stop()
        c.stop_controller()
        con = db_ro(os.path.join(c.state, "controller.db"))
        rows = con.execute("SELECT seq, report_type, base_seq, body, time FROM reports"
                           " WHERE node = ? ORDER BY id", (node,)).fetchall()
        con.close()
    finally:
        owner.run_cleanups()
    if a.protocol == 2:
        write_v2(rows, os.path.join(a.out, "v2"), node)
        return
    snap = None
    patches = []
    for seq, rtype, base, body, _ in rows:
        if rtype == "snapshot" and snap is None:
            snap = json.loads(body)
        elif rtype == "patch" and snap is not None:
            patches.append(json.loads(body))
    if snap is None or not patches:
        sys.exit("capture: the agent stored no snapshot followed by patches")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "snapshot.json"), "w") as f:
        json.dump(snap, f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(a.out, "patches.jsonl"), "w") as f:
        for p in patches:
            json.dump(p, f, separators=(",", ":"))
            f.write("\n")
    sizes = [len(json.dumps(p, separators=(",", ":"))) for p in patches]
    print(f"captured from node {node} at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}:"
          f" snapshot {len(json.dumps(snap, separators=(',', ':')))} B,"
          f" {len(patches)} patches, mean {sum(sizes) // len(sizes)} B")


def parse_time(t):
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def write_v2(rows, out, node):
    """Writes the version 2 fixture: the first snapshot, then every report
    after it with the seconds since the one before."""
    snap, last, reports = None, None, []
    for seq, rtype, base, body, t in rows:
        if snap is None:
            if rtype == "snapshot":
                snap, last = json.loads(body), parse_time(t)
            continue
        if rtype not in ("delta", "event"):
            continue
        now = parse_time(t)
        reports.append({"afterSeconds": round(max(0.0, now - last), 3),
                        "reportType": rtype, "body": json.loads(body)})
        last = now
    if snap is None or not any(r["reportType"] == "delta" for r in reports):
        sys.exit("capture: the agent stored no snapshot followed by deltas")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "snapshot.json"), "w") as f:
        json.dump(snap, f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(out, "reports.jsonl"), "w") as f:
        for r in reports:
            json.dump(r, f, separators=(",", ":"))
            f.write("\n")
    kinds = {}
    for r in reports:
        kinds[r["reportType"]] = kinds.get(r["reportType"], 0) + 1
    print(f"captured from node {node} at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}:"
          f" snapshot {len(json.dumps(snap, separators=(',', ':')))} B, then {kinds}"
          f" over {sum(r['afterSeconds'] for r in reports):.0f} s")


if __name__ == "__main__":
    main()
