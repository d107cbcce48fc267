#!/usr/bin/env python3
"""Captures the report fixture of the fleet simulator from a real agent.

Starts a development controller and one real `edgesync-agent` for this
host (tests/integration/harness.py) with the agent's default settings, lets
it report for --rounds collection rounds, stops both, and copies the
agent's state reports from the controller's database (read-only): the
first snapshot to DATA/snapshot.json and the patches that follow it, in
order, one per line, to DATA/patches.jsonl. Event reports are left out
(the simulator replays state only). Run it again to refresh the fixture.

Usage: bench/fleetsim/capture.py [--build DIR] [--rounds N] [--interval S]
"""

import argparse
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
    a = ap.parse_args()
    use_build(a.build)
    owner = Owner()
    try:
        c = harness.Cluster(owner)
        c.start_controller()
        c.start_agent(extra=["--interval", str(a.interval)])
        node = c.nodes[0]
        harness.wait_for("reports", lambda: len(c.reports(node)) >= a.rounds + 1,
                         timeout=a.rounds * a.interval + 60, interval=1)
        c.agents[node].stop()
        c.stop_controller()
        con = db_ro(os.path.join(c.state, "controller.db"))
        rows = con.execute("SELECT seq, report_type, base_seq, body FROM reports"
                           " WHERE node = ? ORDER BY id", (node,)).fetchall()
        con.close()
    finally:
        owner.run_cleanups()
    snap = None
    patches = []
    for seq, rtype, base, body in rows:
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


if __name__ == "__main__":
    main()
