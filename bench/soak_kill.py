#!/usr/bin/env python3
"""Prints what SIGKILLs of agents and of the controller do to report
delivery (figures, never pass/fail).

Runs the real binaries on loopback (tests/integration/harness.py): a
development controller and --agents agents, each its own node (--dev-node),
at a 1 s collection interval, with a workload that makes events (a
HealthRule whose threshold flips between always-true and never-true, and
which is now and then deleted and re-created: Applied and
ConditionChanged events on every node). Each of --cycles cycles SIGKILLs
one agent or the controller (alternating, or at random with --seed),
waits a random short time and starts it again. At the end it lets the
agents catch up, stops everything with SIGTERM and reads the databases
read-only:

- per node (and per report stream, when the controller's schema has a
  stream column): reports the agent made (its next_seq - 1), the highest
  seq it holds as acknowledged, rows still in its outbox, reports the
  controller stored, sequence numbers missing from the stored range below
  the agent's acknowledged seq (lost, beside the events the agent counted
  as dropped), sequence numbers stored twice, events stored twice under
  two sequence numbers (the same body, time to the second included, as
  the previous event of that reason and object), AgentStarted events
  against agent starts, reconnects and the longest redial delay;
- `PRAGMA integrity_check` of every database.

Bounded: --cycles cycles, every wait has a timeout; every process, and the
temporary directory (unless --keep), is removed at the end.

Usage: bench/soak_kill.py [--build DIR] [--agents N] [--cycles C]
       [--mode alternate|random] [--seed S] [--keep]
"""

import collections
import json
import os
import random
import re
import signal
import sqlite3
import sys
import threading
import time

from benchlib import (Owner, db_ro, fault_args, fault_parser, harness, http_get,
                      integrity, parse_metrics, respawn, stop_quietly, stream_column,
                      table_columns)

RULE = "soak-flip"
REPORTS_KEPT = 10000  # the controller keeps this many reports per node (ES_DB_REPORTS_KEPT)


def rule(threshold):
    return {"apiVersion": "edgesync.io/v1alpha1", "kind": "HealthRule",
            "metadata": {"name": RULE},
            "spec": {"metric": "processes.count", "operator": "Gt",
                     "threshold": threshold, "conditionType": "SoakFlip",
                     "severity": "Warning"}}


class Workload(threading.Thread):
    """Every period seconds: flips the rule's threshold (0: True on every
    node, 1e9: False), every tenth step deletes the rule (the next step
    creates it again). Admin requests that fail (controller down) are
    counted, not retried."""

    def __init__(self, cluster, period):
        super().__init__(daemon=True)
        self.c, self.period = cluster, period
        self.halt = threading.Event()
        self.counts = collections.Counter()

    def run(self):
        path = f"{harness.API}/healthrules/{RULE}"
        step = 0
        while not self.halt.wait(self.period):
            step += 1
            try:
                if step % 10 == 0:
                    st, _ = self.c.admin("DELETE", path)
                    self.counts["delete_ok" if st == 200 else f"delete_http_{st}"] += 1
                else:
                    st, _ = self.c.admin("PUT", path, rule(0 if step % 2 else 1e9))
                    self.counts["put_ok" if st in (200, 201) else f"put_http_{st}"] += 1
            except OSError:
                self.counts["controller_unreachable"] += 1


def last_line(c, who):
    """The last line of the log of the controller or of node who's agent."""
    p = c.controller if who == "controller" else c.agents[who]
    lines = p.output().strip().splitlines()
    return lines[-1][:300] if lines else ""


def redials(c, node):
    """(reconnects, longest redial delay in s) from the agent's log: the
    backoff grows over connections shorter than 60 s (PROTOCOL.md,
    "Errors")."""
    with open(os.path.join(c.dir, f"agent-{node}.log"), errors="replace") as f:
        delays = [int(d) for d in re.findall(r'msg="disconnected, redialling".* delay_ms=(\d+)',
                                              f.read())]
    return len(delays), max(delays, default=0) / 1000


def agent_sync(c, node):
    """The agent's /v1/state "sync" member, or None."""
    try:
        st, body = http_get(c.agent_ports[node], "/v1/state", timeout=5)
        return json.loads(body).get("sync") if st == 200 else None
    except (OSError, ValueError):
        return None


def read_agent_db(path):
    """{next_seq, acked_seq, reports_dropped, stream_id, outbox: [seq]}
    from an agent database, or {"error": ...}."""
    try:
        con = db_ro(path)
    except Exception as e:  # noqa: BLE001 - shown as the figure
        return {"error": str(e)}
    try:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        outbox = [r[0] for r in con.execute("SELECT seq FROM outbox ORDER BY seq")]
    except Exception as e:  # noqa: BLE001
        return {"error": str(e)}
    finally:
        con.close()
    stream = next((meta[k] for k in ("stream_id", "stream", "report_stream") if k in meta), None)
    return {"next_seq": int(meta.get("next_seq", 1)),
            "acked_seq": int(meta.get("acked_seq", 0)),
            "reports_dropped": int(meta.get("reports_dropped", 0)),
            "stream_id": stream, "outbox": outbox}


def read_controller_db(path):
    """{(node, stream or None): [(seq, report_type, body, received)]}, the schema's
    stream column (None when reports have none) and {node: acked_seq},
    from controller.db. Reports name their node, or only their stream,
    which a streams table maps to a node."""
    con = db_ro(path)
    try:
        cols = table_columns(con, "reports")
        scol = stream_column(cols)
        src, node, stream = "reports r", "r.node", f"r.{scol}" if scol else "NULL"
        if "node" not in cols:
            for t in ("streams", "report_streams"):
                tcols = table_columns(con, t)
                key = next((k for k in ("id", "stream_id", "stream") if k in tcols), None)
                if scol and "node" in tcols and key:
                    src = f"reports r JOIN {t} s ON s.{key} = r.{scol}"
                    node = "s.node"
                    break
            else:
                raise SystemExit(f"{path}: reports name no node ({cols})")
        recv = "r.received" if "received" in cols else "0"
        rows = con.execute(f"SELECT {node}, {stream}, r.seq, r.report_type, r.body, {recv}"
                           f" FROM {src} ORDER BY 1, 3").fetchall()
        try:
            acked = dict(con.execute("SELECT name, acked_seq FROM nodes").fetchall())
        except sqlite3.Error:
            acked = {}
    finally:
        con.close()
    out = collections.defaultdict(list)
    for node, stream, seq, typ, body, received in rows:
        out[(node, stream)].append((seq, typ, body, received))
    return out, scol, acked


def check_stream(rows, agent):
    """Figures of one node's (or stream's) stored reports against what its
    agent says. rows: [(seq, type, body, received)]; agent: read_agent_db()
    or None."""
    seqs = [r[0] for r in rows]
    count = collections.Counter(seqs)
    f = {"stored": len(seqs), "dup_seq": sum(n - 1 for n in count.values() if n > 1)}
    uniq = sorted(count)
    f["range"] = f"{uniq[0]}..{uniq[-1]}" if uniq else "-"
    f["gaps_inside"] = (uniq[-1] - uniq[0] + 1 - len(uniq)) if uniq else 0
    # An event stored twice: the same body (same message, same second) as
    # the previous event of its reason and object. Two events alike with
    # another of theirs between are two real transitions within a second.
    last, dups, reasons = {}, [], collections.Counter()
    for seq, t, b, _ in sorted(rows):
        if t != "event" or not b:
            continue
        try:
            ev = json.loads(b)
        except ValueError:
            reasons["unparsable"] += 1
            continue
        reasons[ev.get("reason", "?")] += 1
        key = (ev.get("reason"), json.dumps(ev.get("involvedObject"), sort_keys=True))
        if key in last and last[key][1] == b:
            dups.append((last[key][0], seq, b))
        last[key] = (seq, b)
    f["dup_events"] = len(dups)
    f["dup_examples"] = dups[:3]
    f["reasons"] = reasons
    if agent and "error" not in agent:
        acked = agent["acked_seq"]
        lo = max(1, acked - REPORTS_KEPT + 1)
        have = set(uniq)
        f["missing_acked"] = sum(1 for s in range(lo, acked + 1) if s not in have)
        f["stored_ahead"] = sum(1 for s in uniq if s >= agent["next_seq"])
        f["lost"] = max(0, f["missing_acked"] - agent["reports_dropped"])
    return f


def main():
    ap = fault_parser(__doc__)
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--mode", choices=("alternate", "random"), default="alternate")
    ap.add_argument("--interval", type=int, default=1, help="agent collection interval, s")
    ap.add_argument("--workload-period", type=float, default=0.5)
    args = fault_args(ap)
    rng = random.Random(args.seed)
    nodes = [f"soak-{i}" for i in range(args.agents)]
    agent_extra = ["--interval", str(args.interval), "--log-level", "info",
                   "--collector-backend", args.backend]

    owner = Owner()
    wl = None
    try:
        c = harness.Cluster(owner, nodes=nodes)
        c.start_controller(extra=["--log-level", "info"])
        for n in nodes:
            c.start_agent(n, extra=agent_extra)
        for n in nodes:
            harness.wait_for(f"first report of {n}", lambda n=n: c.node(n), timeout=60)
        starts = collections.Counter({n: 1 for n in nodes})
        kills = collections.Counter()
        restart_s = collections.defaultdict(list)
        crashes = []  # (cycle, process, exit status): exits nobody asked for
        restart_failures = []
        wl = Workload(c, args.workload_period)
        wl.start()
        t_soak = time.monotonic()
        cycles = 0
        next_agent = 0
        for cycle in range(args.cycles):
            if args.mode == "alternate":
                victim = "controller" if cycle % 2 else nodes[next_agent % len(nodes)]
                next_agent += 0 if cycle % 2 else 1
            else:
                victim = "controller" if rng.random() < 0.5 else rng.choice(nodes)
            for who in ["controller"] + nodes:
                p = c.controller if who == "controller" else c.agents[who]
                if not p.log.closed and not p.alive():
                    crashes.append((cycle, p.name, p.p.returncode))
                    p.log.close()
                    if respawn(c, who):
                        starts[who] += who != "controller"
                    else:
                        restart_failures.append((cycle, who, last_line(c, who)))
                        stop_quietly(c.controller if who == "controller" else c.agents[who],
                                     signal.SIGKILL)
            proc = c.controller if victim == "controller" else c.agents[victim]
            stop_quietly(proc, signal.SIGKILL)
            kills["controller" if victim == "controller" else "agent"] += 1
            time.sleep(rng.uniform(0.1, 2.0))
            t0 = time.monotonic()
            for attempt in range(3):
                if respawn(c, victim):
                    starts[victim] += victim != "controller"
                    break
                restart_failures.append((cycle, victim, last_line(c, victim)))
                stop_quietly(c.controller if victim == "controller" else c.agents[victim],
                             signal.SIGKILL)
                time.sleep(1)
            else:
                print(f"# {victim} did not start again in cycle {cycle}: stopping the soak")
                break
            restart_s[victim if victim == "controller" else "agent"].append(
                time.monotonic() - t0)
            cycles += 1
            time.sleep(rng.uniform(1.0, 3.0))
        soak_s = time.monotonic() - t_soak
        wl.halt.set()
        wl.join(30)

        # Catch up: every agent connected and its acknowledged seq at least
        # the last seq it had made when the workload stopped.
        target = {n: ((agent_sync(c, n) or {}).get("nextSeq", 1) - 1) for n in nodes}
        caught = {}
        for n in nodes:
            try:
                harness.wait_for(f"{n} acknowledged", lambda n=n: (agent_sync(c, n) or {})
                                 .get("ackedSeq", -1) >= target[n], timeout=60)
                caught[n] = True
            except AssertionError:
                caught[n] = False
        sent_metric = {}
        for n in nodes:
            try:
                m = parse_metrics(http_get(c.agent_ports[n], "/metrics")[1])
                sent_metric[n] = int(m.get("edgesync_agent_reports_sent_total", -1))
            except OSError:
                sent_metric[n] = None
        try:
            st, text = c.admin("GET", "/metrics")
            cm = parse_metrics(text if isinstance(text, str) else "")
            ctl_dups = int(cm.get("edgesync_controller_reports_duplicate_total", -1))
        except OSError:
            ctl_dups = None

        stops = {}
        for n in nodes:
            stops[c.agents[n].name] = stop_quietly(c.agents[n])
        stops["controller"] = stop_quietly(c.controller)

        # -- figures ---------------------------------------------------------
        print(f"soak_cycles {cycles}  (of {args.cycles}; mode {args.mode}, seed {args.seed}, "
              f"{soak_s:.0f} s; kills: agent {kills['agent']}, controller {kills['controller']})")
        for who, ts in sorted(restart_s.items()):
            print(f"restart_to_listening_s{{process=\"{who}\"}} max {max(ts):.2f} "
                  f"mean {sum(ts) / len(ts):.2f} (n={len(ts)})")
        print(f"workload {dict(wl.counts)}")
        print(f"unexpected_exits {len(crashes)}" + "".join(
            f"\n  cycle {cy}: {name} exited {rc}" for cy, name, rc in crashes))
        print(f"restart_failures {len(restart_failures)}" + "".join(
            f"\n  cycle {cy}: {v}: {msg}" for cy, v, msg in restart_failures))
        print("clean_stop " + ", ".join(
            f"{k}: exit {rc}" + (f" ({err})" if err else "") for k, (rc, err) in stops.items()))
        print(f"controller_reports_duplicate_total {ctl_dups}  (last controller process only)")

        cdb = os.path.join(c.state, "controller.db")
        stored, scol, ctl_acked = read_controller_db(cdb)
        print(f"controller_schema_stream_column {scol or 'none'}")
        tot = collections.Counter()
        for n in nodes:
            agent = read_agent_db(os.path.join(c.dir, f"agent-{n}", "agent.db"))
            keys = sorted((k for k in stored if k[0] == n), key=lambda k: str(k[1]))
            if agent.get("error"):
                print(f"node {n}: agent.db unreadable: {agent['error']}")
                agent = None
            # The agent's rows: its stream when both sides name one, else the
            # stream received last (today's schema: one stream per node).
            mine = [k for k in keys if agent and agent["stream_id"] is not None
                    and str(k[1]) == str(agent["stream_id"])]
            if not mine and keys:
                mine = [max(keys, key=lambda k: max(r[3] or 0 for r in stored[k]))]
            rows = [r for k in mine for r in stored[k]]
            f = check_stream(rows, agent)
            made = agent["next_seq"] - 1 if agent else None
            line = (f"node {n}: made {made} (next_seq-1), "
                    f"sent_by_last_process {sent_metric.get(n)}, "
                    f"acked {agent['acked_seq'] if agent else None} (agent), "
                    f"{ctl_acked.get(n)} (controller), "
                    f"outbox_left {len(agent['outbox']) if agent else None}, "
                    f"stored {f['stored']} (seq {f['range']}, gaps {f['gaps_inside']}), "
                    f"missing_acked {f.get('missing_acked')}, "
                    f"dropped {agent['reports_dropped'] if agent else None}, "
                    f"lost {f.get('lost')}, dup_seq {f['dup_seq']}, "
                    f"dup_events {f['dup_events']}, "
                    f"stored_ahead {f.get('stored_ahead')}, caught_up {caught[n]}")
            print(line)
            for a, b, body in f["dup_examples"]:
                print(f"  same event at seq {a} and {b}: {body[:240]}")
            nred, maxdelay = redials(c, n)
            print(f"  redials {nred}, longest redial delay {maxdelay:.1f} s")
            print(f"  events stored by reason {dict(sorted(f['reasons'].items()))}; "
                  f"agent starts {starts[n]}, AgentStarted stored {f['reasons'].get('AgentStarted', 0)}")
            if scol:
                for k in keys:
                    g = check_stream(stored[k], None)
                    print(f"  stream {k[1]}: stored {g['stored']} (seq {g['range']}, "
                          f"gaps {g['gaps_inside']}), dup_seq {g['dup_seq']}, "
                          f"dup_events {g['dup_events']}"
                          + ("  <- the agent's" if k in mine and len(mine) < len(keys) else ""))
            for k in ("stored", "dup_seq", "dup_events", "missing_acked", "lost"):
                tot[k] += f.get(k) or 0
            tot["made"] += made or 0
            tot["dropped"] += agent["reports_dropped"] if agent else 0
        print(f"total made {tot['made']} stored {tot['stored']} missing_acked "
              f"{tot['missing_acked']} dropped {tot['dropped']} lost {tot['lost']} "
              f"dup_seq {tot['dup_seq']} dup_events {tot['dup_events']}")
        print(f"integrity_check controller.db: {integrity(cdb)}")
        for n in nodes:
            print(f"integrity_check agent-{n}/agent.db: "
                  f"{integrity(os.path.join(c.dir, f'agent-{n}', 'agent.db'))}")
        if args.keep:
            print(f"# logs and databases: {c.dir}")
    finally:
        if wl:
            wl.halt.set()
        owner.run_cleanups()


if __name__ == "__main__":
    sys.exit(main())
