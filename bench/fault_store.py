#!/usr/bin/env python3
"""Prints what the agent does when its state directory fails under it
(figures, never pass/fail).

Runs the real binaries on loopback (tests/integration/harness.py): a
development controller and one agent at a 1 s interval, holding a
HealthRule on `processes.threads` whose condition this script flips by
starting and ending --flip-threads idle threads of its own (held --hold
seconds each way), so that the agent has events to write while its store
fails. One fresh controller and agent per case:

- busy: another process holds the write lock of agent.db (`BEGIN
  EXCLUSIVE` through Python's sqlite3) for --fault-seconds;
- full: the state directory is a 16 MiB tmpfs (root only; skipped with a
  message otherwise), filled to the last byte for --fault-seconds, then
  freed;
- corrupt-truncate, corrupt-garbage, corrupt-page: the controller is
  stopped, the agent queues events offline, is stopped, and agent.db is
  cut to half its size / overwritten with random bytes / has the root page
  of its outbox table overwritten with random bytes; then the agent and
  the controller are started again.

Per case: the worst time the agent's /healthz took to answer during the
fault (polled every 100 ms) and how long it refused connections; the
flips made and the transitions the agent logged (its events produced);
those events stored by the controller; the events the agent counted as
dropped (`reportsDropped`); lost uncounted (produced - stored - dropped);
exits and restarts (a supervisor restarts an agent that exits, as
systemd's Restart=on-failure would, at most --max-restarts times); the
conditions of the Node that changed; the agent's error and warning lines;
`PRAGMA integrity_check` of agent.db at the end.

Bounded: every case has a fixed fault time and every wait a timeout; every
process, mount and temporary directory (unless --keep) is removed.

Usage: bench/fault_store.py [--build DIR] [--cases busy,full,corrupt]
       [--fault-seconds S] [--hold S] [--flip-threads N] [--keep]
"""

import collections
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

from benchlib import (Owner, db_ro, fault_args, fault_parser, harness, http_get,
                      integrity, parse_metrics, respawn, stop_quietly, unmount_under)

FLIP_TYPE = "StoreFaultFlip"
RULE = "store-fault-flip"
NODE = "fault-0"
TMPFS_SIZE = "16m"
CORRUPTIONS = ("corrupt-truncate", "corrupt-garbage", "corrupt-page")

LOCKER = r"""
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
con.execute("ROLLBACK")
"""


class Threads:
    """Raises the host's thread count (processes.threads) by n while up."""

    def __init__(self, n):
        self.n, self.ev, self.ts = n, None, []

    def up(self):
        if self.ts:
            return
        self.ev = threading.Event()
        old = threading.stack_size(64 * 1024)
        try:
            for _ in range(self.n):
                t = threading.Thread(target=self.ev.wait, daemon=True)
                t.start()
                self.ts.append(t)
        finally:
            threading.stack_size(old)

    def down(self):
        if not self.ts:
            return
        self.ev.set()
        for t in self.ts:
            t.join()
        self.ts = []


class Flipper(threading.Thread):
    """While active, flips the threads up and down every hold seconds."""

    def __init__(self, threads, hold):
        super().__init__(daemon=True)
        self.th, self.hold = threads, hold
        self.active, self.halt = threading.Event(), threading.Event()
        self.flips = 0

    def run(self):
        while not self.halt.is_set():
            if not self.active.wait(0.1):
                continue
            if self.th.ts:
                self.th.down()
            else:
                self.th.up()
            self.flips += 1
            self.halt.wait(self.hold)


class Poller(threading.Thread):
    """Polls path on the agent's endpoint every period seconds; keeps
    (time, seconds taken, outcome, body) per request."""

    def __init__(self, port, path, period, keep_body=False):
        super().__init__(daemon=True)
        self.port, self.path, self.period, self.keep_body = port, path, period, keep_body
        self.halt = threading.Event()
        self.samples = []

    def run(self):
        while not self.halt.is_set():
            t0 = time.monotonic()
            body = None
            try:
                st, text = http_get(self.port, self.path, timeout=30)
                outcome = "ok" if st == 200 else f"http_{st}"
                body = text if self.keep_body and st == 200 else None
            except ConnectionRefusedError:
                outcome = "refused"
            except OSError as e:
                outcome = "timeout" if "timed out" in str(e) else "error"
            self.samples.append((t0, time.monotonic() - t0, outcome, body))
            self.halt.wait(max(0.0, self.period - (time.monotonic() - t0)))


class Supervisor(threading.Thread):
    """Restarts the agent when it exits unasked (at most max_restarts
    times, 1 s after the exit); records every such exit."""

    def __init__(self, c, max_restarts):
        super().__init__(daemon=True)
        self.c, self.max = c, max_restarts
        self.lock = threading.Lock()
        self.halt = threading.Event()
        self.planned = False
        self.exits, self.restarts, self.gave_up = [], 0, False

    def run(self):
        while not self.halt.wait(0.2):
            with self.lock:
                p = self.c.agents[NODE]
                if self.planned or self.gave_up or p.alive():
                    continue
                if not p.log.closed:
                    p.log.close()
                    self.exits.append((time.monotonic(), p.p.returncode))
                if self.restarts >= self.max:
                    self.gave_up = True
                    continue
                time.sleep(1)
                self.restarts += 1
                respawn(self.c, NODE)  # exited at once: recorded next round

    def stop_agent(self):
        with self.lock:
            self.planned = True
            return stop_quietly(self.c.agents[NODE])

    def start_agent(self):
        with self.lock:
            self.planned = False
            return respawn(self.c, NODE)


def agent_state(c):
    try:
        st, body = http_get(c.agent_ports[NODE], "/v1/state", timeout=10)
        return json.loads(body) if st == 200 else None
    except (OSError, ValueError):
        return None


def stored_flips(c):
    """The flip condition's ConditionChanged events the controller holds."""
    n = 0
    for r in c.reports(NODE):
        ev = r.get("event") or {}
        if ev.get("reason") == "ConditionChanged" and \
                ev.get("message", "").startswith(f"{FLIP_TYPE} is now"):
            n += 1
    return n


def log_since(c, offset):
    with open(os.path.join(c.dir, f"agent-{NODE}.log"), "rb") as f:
        f.seek(offset)
        return f.read().decode("utf-8", "replace")


def log_size(c):
    return os.path.getsize(os.path.join(c.dir, f"agent-{NODE}.log"))


def conditions_of(state_text):
    try:
        node = json.loads(state_text).get("node") or {}
    except ValueError:
        return None
    return {x["type"]: (x.get("status"), x.get("reason"))
            for x in node.get("status", {}).get("conditions", [])}


def condition_changes(samples, t_ref):
    """[(seconds after t_ref, type, old, new)] over the /v1/state samples,
    the flip condition left out."""
    out, last = [], None
    for t, _, outcome, body in samples:
        if outcome != "ok" or body is None:
            continue
        conds = conditions_of(body)
        if conds is None:
            continue
        conds.pop(FLIP_TYPE, None)
        if last is not None:
            for typ in sorted(set(last) | set(conds)):
                if last.get(typ) != conds.get(typ):
                    out.append((t - t_ref, typ, last.get(typ), conds.get(typ)))
        last = conds
    return out


def fill(path):
    """Writes path until the filesystem is full; returns the bytes written."""
    n = 0
    with open(path, "wb", buffering=0) as f:
        for chunk in (1 << 20, 4096, 512, 1):
            buf = b"\0" * chunk
            while True:
                try:
                    f.write(buf)
                    n += chunk
                except OSError:
                    break
    return n


def corrupt(db, how, rng):
    """Damages the stopped agent's database; returns what was done."""
    size = os.path.getsize(db)
    side = [s for s in ("-wal", "-shm") if os.path.exists(db + s)]
    if how == "corrupt-truncate":
        os.truncate(db, size // 2)
        what = f"cut from {size} to {size // 2} bytes"
    elif how == "corrupt-garbage":
        with open(db, "r+b") as f:
            f.write(rng.randbytes(size))
        what = f"{size} bytes overwritten with random bytes"
    else:
        con = db_ro(db)
        try:
            psize = con.execute("PRAGMA page_size").fetchone()[0]
            root = con.execute("SELECT rootpage FROM sqlite_master WHERE"
                               " type = 'table' AND name = 'outbox'").fetchone()[0]
            rows = con.execute("SELECT count(*) FROM outbox").fetchone()[0]
        finally:
            con.close()
        with open(db, "r+b") as f:
            f.seek((root - 1) * psize)
            f.write(rng.randbytes(psize))
        what = (f"page {root} (root of table outbox, {rows} rows) of {size // psize} "
                f"overwritten with {psize} random bytes")
    return what + (f"; beside it: {', '.join(side)}" if side else "")


def metric(c, name):
    try:
        return parse_metrics(http_get(c.agent_ports[NODE], "/metrics", timeout=10)[1]).get(name)
    except OSError:
        return None


def run_case(case, args, rng):
    """Runs one case and prints its figures."""
    owner = Owner()
    c = sup = flipper = hz = sp = locker = None
    threads = Threads(args.flip_threads)
    mounted = None
    extra = ["--interval", "1", "--log-level", "info",
             "--collector-backend", args.backend]
    try:
        c = harness.Cluster(owner, nodes=[NODE])
        state_dir = os.path.join(c.dir, f"agent-{NODE}")
        if case == "full":
            os.makedirs(state_dir, mode=0o700)
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700",
                                "tmpfs", state_dir], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"case {case}: skipped: mount tmpfs: {r.stderr.strip()}")
                return
            mounted = state_dir
        db = os.path.join(state_dir, "agent.db")
        c.start_controller(extra=["--log-level", "info"])
        c.start_agent(NODE, extra=extra)
        harness.wait_for("first report", lambda: c.node(NODE), timeout=60)
        base = int(c.node(NODE)["status"]["usage"]["processes"]["threads"])
        threshold = base + args.flip_threads // 2
        c.ctl("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "edgesync.io/v1alpha1", "kind": "HealthRule",
            "metadata": {"name": RULE},
            "spec": {"metric": "processes.threads", "operator": "Gt",
                     "threshold": threshold, "conditionType": FLIP_TYPE,
                     "severity": "Warning"}}))
        harness.wait_for("the flip condition", lambda: FLIP_TYPE in (conditions_of(
            json.dumps(agent_state(c) or {})) or {}), timeout=60)
        sup = Supervisor(c, args.max_restarts)
        sup.start()
        flipper = Flipper(threads, args.hold)
        flipper.start()
        port = c.agent_ports[NODE]
        hz = Poller(port, "/healthz", 0.1)
        sp = Poller(port, "/v1/state", 1.0, keep_body=True)
        hz.start()
        sp.start()
        time.sleep(3)
        st0 = agent_state(c) or {}
        drop0 = (st0.get("sync") or {}).get("reportsDropped")
        stored0 = stored_flips(c)
        log0 = log_size(c)
        t_start = time.monotonic()
        note = ""

        if case == "busy":
            locker = subprocess.Popen([sys.executable, "-c", LOCKER, db,
                                       str(args.fault_seconds)],
                                      stdout=subprocess.PIPE, text=True)
            got = locker.stdout.readline().strip()
            t_start = time.monotonic()
            note = "write lock held" if got == "locked" else f"locker said {got!r}"
            flipper.active.set()
            locker.wait(args.fault_seconds + 40)
            flipper.active.clear()
        elif case == "full":
            filler = os.path.join(state_dir, "filler")
            t_start = time.monotonic()
            n = fill(filler)
            vfs = os.statvfs(state_dir)
            note = (f"{n} bytes written to fill it, {vfs.f_bavail * vfs.f_frsize} "
                    f"bytes left")
            flipper.active.set()
            time.sleep(args.fault_seconds)
            flipper.active.clear()
            os.remove(filler)
        else:
            stop_quietly(c.controller)
            flipper.active.set()
            time.sleep(args.fault_seconds / 2)
            flipper.active.clear()
            time.sleep(1.5)  # a round to queue the last flip
            rc, err = sup.stop_agent()
            note = corrupt(db, case, rng)
            started = sup.start_agent()
            note += "; agent " + ("started again" if started else "did not start again")
            if not respawn(c, "controller"):
                note += "; the controller did not start again"
        t_end = time.monotonic()

        time.sleep(args.recover_seconds)
        st1 = agent_state(c)
        if st1:
            target = (st1.get("sync") or {}).get("nextSeq", 1) - 1
            try:
                harness.wait_for("agent caught up", lambda: ((agent_state(c) or {})
                                 .get("sync") or {}).get("ackedSeq", -1) >= target,
                                 timeout=60)
                caught = True
            except AssertionError:
                caught = False
        else:
            caught = False
        st2 = agent_state(c) or {}
        drop1 = (st2.get("sync") or {}).get("reportsDropped")
        dropped_metric = metric(c, "edgesync_agent_reports_dropped_total")
        try:
            stored1 = stored_flips(c)
        except (AssertionError, OSError):
            stored1 = None
        try:
            cm = parse_metrics(c.admin("GET", "/metrics")[1])
            ctl_dup = cm.get("edgesync_controller_reports_duplicate_total")
        except (OSError, TypeError):
            ctl_dup = None
        ctl_node = c.node(NODE) or {}
        for t in (hz, sp):
            t.halt.set()
        flipper.halt.set()
        for t in (hz, sp, flipper):
            t.join(40)
        threads.down()
        sup.halt.set()
        sup.join(10)
        text = log_since(c, log0)

        # -- figures ---------------------------------------------------------
        produced = len(re.findall(rf'msg="condition changed" type={FLIP_TYPE}\b', text))
        queue_failed = text.count('msg="cannot queue an event"')
        stored = None if stored1 is None else stored1 - stored0
        if drop0 is not None and drop1 is not None and drop1 >= drop0:
            dropped, dnote = drop1 - drop0, ""
        else:
            dropped, dnote = 0, f" (counter went {drop0} -> {drop1})"
        lost = None if stored is None else produced - stored - dropped
        win = [s for s in hz.samples if t_start <= s[0] <= t_end + 1]
        answered = [s for s in win if s[2] not in ("refused", "error")]
        worst = max((s[1] for s in answered), default=None)
        refused = sum(1 for s in win if s[2] == "refused")
        slow = sum(1 for s in answered if s[1] > 1.0)
        worst_all = max((s[1] for s in hz.samples if s[2] not in ("refused", "error")),
                        default=None)
        outcomes = collections.Counter(s[2] for s in win)
        print(f"case {case}: {note}")
        print(f"  healthz_worst_s {worst if worst is None else round(worst, 3)} during the "
              f"fault ({t_end - t_start:.1f} s; {len(win)} polls, {slow} over 1 s, "
              f"{refused} refused, outcomes {dict(outcomes)}); worst over the case "
              f"{worst_all if worst_all is None else round(worst_all, 3)}")
        st_out = collections.Counter(s[2] for s in sp.samples
                                     if t_start <= s[0] <= t_end + 1)
        print(f"  v1_state_outcomes_during_fault {dict(st_out)}")
        print(f"  flips {flipper.flips} (threads up/down), transitions_logged {produced} "
              f"(the agent's events produced), stored {stored} (by the controller), "
              f"dropped {dropped}{dnote} (reportsDropped; metric now {dropped_metric}), "
              f"lost_uncounted {lost}, queue_failed_logged {queue_failed}")
        print(f"  agent: exits {[rc for _, rc in sup.exits]}, restarts {sup.restarts}"
              f"{' (gave up)' if sup.gave_up else ''}, running at the end "
              f"{c.agents[NODE].alive()}, caught_up {caught}; "
              f"controller reports_duplicate_total {ctl_dup}")
        ch = condition_changes(sp.samples, t_start)
        print(f"  conditions_changed (agent /v1/state): "
              + ("none" if not ch else "; ".join(
                  f"+{t:.1f}s {typ} {o[0] if o else '-'}/{o[1] if o else '-'}"
                  f" -> {n[0] if n else '-'}/{n[1] if n else '-'}" for t, typ, o, n in ch)))
        conds = [f"{x['type']}={x.get('status')}/{x.get('reason')}"
                 for x in ctl_node.get("status", {}).get("conditions", [])
                 if x["type"] != FLIP_TYPE]
        print(f"  conditions_at_controller_after {', '.join(conds) or 'none'}")
        msgs = collections.Counter(
            m.group(1) + ": " + m.group(2) for m in re.finditer(
                r'level=(error|warn) component=\S+ msg="((?:[^"\\]|\\.)*)"', text))
        print(f"  agent_errors_and_warnings {sum(msgs.values())}" + "".join(
            f"\n    {n} x {m}" for m, n in msgs.most_common(6)))
        fatal = collections.Counter(re.findall(r"^edgesync-agent: (.*)$", text, re.M))
        if fatal:
            print("  agent_exit_messages" + "".join(f"\n    {n} x {m}" for m, n in
                                                      fatal.most_common(3)))
        rc_a, err_a = stop_quietly(c.agents[NODE]) if not c.agents[NODE].log.closed \
            else (c.agents[NODE].p.returncode, None)
        rc_c, err_c = stop_quietly(c.controller)
        print(f"  clean_stop agent exit {rc_a}{f' ({err_a})' if err_a else ''}, "
              f"controller exit {rc_c}{f' ({err_c})' if err_c else ''}")
        print(f"  integrity_check agent.db: {integrity(db)}; controller.db: "
              f"{integrity(os.path.join(c.state, 'controller.db'))}")
        if args.keep:
            print(f"  # logs and databases: {c.dir}")
    finally:
        for t in (hz, sp, flipper, sup):
            if t:
                t.halt.set()
        if flipper:
            flipper.join(40)
        threads.down()
        if locker and locker.poll() is None:
            locker.kill()
            locker.wait()
        if sup:
            sup.join(10)
        for p in (c.procs if c else []):
            if not p.log.closed:
                stop_quietly(p)
        if mounted:
            left = unmount_under(mounted)
            if left:
                print(f"  # could not unmount {left}")
        owner.run_cleanups()


def main():
    ap = fault_parser(__doc__)
    ap.add_argument("--cases", default="busy,full,corrupt",
                    help="comma-separated: busy, full, corrupt (all three), "
                         + ", ".join(CORRUPTIONS))
    ap.add_argument("--fault-seconds", type=float, default=20)
    ap.add_argument("--recover-seconds", type=float, default=10)
    ap.add_argument("--hold", type=float, default=3, help="seconds per flip")
    ap.add_argument("--flip-threads", type=int, default=800)
    ap.add_argument("--max-restarts", type=int, default=5)
    args = fault_args(ap)
    rng = random.Random(args.seed)
    cases = []
    for name in args.cases.split(","):
        name = name.strip()
        cases += list(CORRUPTIONS) if name == "corrupt" else [name]
    for case in cases:
        if case not in ("busy", "full") + CORRUPTIONS:
            raise SystemExit(f"unknown case {case!r}")
        if case == "full" and os.geteuid() != 0:
            print("case full: skipped: needs root (mounts a tmpfs)")
            continue
        run_case(case, args, rng)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
