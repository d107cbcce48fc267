#!/usr/bin/env python3
"""Fleet benchmark: one controller and thousands of simulated agents on this
machine (figures, never pass/fail).

For each N of --nodes (default 1000,10000,30000) it starts a development
controller (tests/integration/harness.py: state in a temporary directory,
--dev PKI, whose CA is cached in --cache so node certificates are issued
once) and edgesync-fleetsim (bench/fleetsim/) with N nodes, each its own
mutual-TLS connection and certificate, speaking protocol version 2 (or 1
with --protocol 1): a real agent's captured snapshot, then its deltas and
events at the captured gaps, compressed (bench/fleetsim/data/v2/; version
1: merge patches every --interval seconds, bench/fleetsim/data/), and
prints:

- time to connect all N (first dial to the last welcome, at --ramp dials/s);
- at steady state, over --window seconds: the controller's RSS, memory per
  connection (RSS with the fleet minus RSS before it, over N), its CPU
  share (/proc/PID/stat utime+stime, in % of one core), reports stored per
  second (acknowledged: the controller acknowledges a report once it is
  stored), report->ack p50/p99 (the simulator's clock, from the write of a
  report to its ack);
- fan-out of one `edgesyncctl apply` (a HealthRule that targets every
  node): from the start of the apply to each node receiving the change,
  p50/p99/max (the simulator answers desiredAck at once), and the time
  until every desiredAck is stored (the controller's database, read-only,
  the column behind the Node's status.sync.desiredResourceVersion: listing
  30 000 nodes through the admin API would take seconds itself);
- after the controller is SIGKILLed and restarted: the time from the kill
  until all N have their session again, and arrivals (welcomes) per second
  between the first and the last; the simulated agents redial with the
  agent's backoff (full jitter, base 1 s, cap 60 s);
- the restarted controller's RSS when it listens, with the fleet back and
  5 s after the simulator stopped and every session closed: what it keeps
  of the fleet's memory;
- bytes per node per second on the wire at steady state, up and down,
  counted at the socket (the kernel's TCP_INFO bytes_acked and
  bytes_received of each connection: TLS records with WebSocket frames,
  without TCP/IP headers).

With --controllers C (above 1) it measures several controllers sharing
etcd instead: it starts an etcd cluster of --etcd-members members on
loopback (a static cluster, plain http, temporary data directories,
periodic auto-compaction every 5 minutes), C controllers with store =
etcd (the first in --dev mode, the others with its certificates, one
CA; each given every etcd member, starting at a different one), and the
fleet with every controller's URL (each node in its own rendezvous order
of them, as the agent's controller-order = node; --controller-order
listed: node i starting at controller i mod C; as the agent, each redial
goes to the next in the node's order), and prints: time to
connect all and the sessions per controller; reports stored per second
and report->ack; etcd's work per stored report over the window (the
growth of etcd_server_proposals_committed_total and of the
etcd_debugging_mvcc_* counters at the member where they grew most,
divided by the reports acknowledged); the fan-out of one apply made on
the first controller to every node and the time until every desiredAck
is stored (in the controllers' databases together); after a SIGKILL of
the last controller, the time until as many sessions as it held got
their welcome again from the others, and then, three intervals later,
every report the simulator saw acknowledged on the session that wrote it
looked up in the controllers' databases (read-only; report-bytes-kept =
0 so none is pruned): how many are in none (lost) and how many are
stored by two controllers (node, stream and seq in two databases).

The simulated nodes are split over several simulator processes (--procs;
by default enough that each holds at most 2 500), their figures merged:
counters summed, percentiles over the union of their samples.

The simulator and the controller share this machine (its cores and the
load average at the start of each N are printed): the figures are for
both together. Run it alone, inside
`flock /tmp/es-systest.lock`. It raises its open-file limit itself.
Bounded: every phase has a timeout, and every process it started is
stopped at the end.

Usage: bench/fleet.py [--build DIR] [--nodes 1000,10000] [--procs K] [--protocol 1|2]
       [--interval S] [--ramp R] [--window S] [--connect-timeout S]
       [--controllers C [--etcd-members M] [--controller-order node|listed]] [--controller-arg ARG]...
       [--json FILE] [--keep]
"""

import argparse
import http.client
import json
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time

from benchlib import (EtcdCluster, Owner, db_ro, harness, parse_metrics, proc_status,
                      respawn, stop_quietly, use_build)

HERE = os.path.dirname(os.path.abspath(__file__))
CLK_TCK = os.sysconf("SC_CLK_TCK")
PER_PROC = 2500  # simulated nodes per simulator process by default
DISCONNECT_SETTLE_S = 5  # seconds after the last session closed before the RSS is read


def raise_nofile(need):
    """Raises this process's open-file limit (inherited by the controller and
    the simulator) to at least need, the hard limit too when root."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, need))
            return need
        except (ValueError, OSError):
            pass
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def cpu_seconds(pid):
    """utime + stime of pid, in seconds (/proc/PID/stat fields 14, 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Sim:
    """edgesync-fleetsim, its JSON lines read by a thread."""

    def __init__(self, argv, log_path):
        self.log = open(log_path, "ab")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log,
                                  stdin=subprocess.DEVNULL)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.p.stdout:
            try:
                self.lines.put(json.loads(raw))
            except ValueError:
                pass

    def summary(self, timeout=60.0):
        """Asks for a summary (SIGUSR1) and returns it."""
        self.ask()
        return self.collect(timeout)

    def ask(self):
        """Asks for a summary (SIGUSR1); collect() returns it."""
        while not self.lines.empty():
            self.lines.get_nowait()
        self.p.send_signal(signal.SIGUSR1)

    def collect(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                m = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.p.poll() is not None:
                    raise RuntimeError(f"the simulator exited {self.p.returncode}")
                continue
            if m.get("type") == "summary":
                return m
        raise RuntimeError("the simulator printed no summary")

    def first(self, mtype, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.p.poll() is not None and self.lines.empty():
                raise RuntimeError(f"the simulator exited {self.p.returncode}")
            try:
                m = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if m.get("type") == mtype:
                return m
        raise RuntimeError(f"no {mtype} line from the simulator in {timeout}s")

    def mark(self):
        self.p.send_signal(signal.SIGUSR2)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


def dist(samples):
    """{n, p50, p99, max} of a list of milliseconds (nearest rank, as the
    simulator prints them)."""
    v = sorted(samples)
    if not v:
        return {"n": 0}

    def rank(p):
        i = (len(v) * p + 99) // 100
        return v[i - 1 if i else 0]
    return {"n": len(v), "p50": rank(50), "p99": rank(99), "max": v[-1]}


SUMMED = ("nodes", "ready", "dials", "dialFailures", "welcomes", "reconnects",
          "disconnects", "reportsSent", "snapshotsSent", "reportsAcked", "resyncs",
          "desiredReceived", "desiredAcks", "errorsReceived", "overloadedReceived",
          "eventsSent", "sessionsV2", "sessionsDeflate")


def merge(parts):
    """One summary of the fleet from the summaries of its simulator
    processes (run with --samples): counters and bytes summed,
    percentiles over the union of their samples, the last node connected
    and the arrivals after the marker over all of them."""
    m = {"type": "summary", "procs": len(parts), "t": max(p["t"] for p in parts)}
    for k in SUMMED:
        m[k] = sum(p.get(k, 0) for p in parts)
    alls = [p["connectAllSeconds"] for p in parts]
    m["connectAllSeconds"] = None if None in alls else max(alls)
    m["bytes"] = {k: sum(p["bytes"][k] for p in parts) for k in parts[0]["bytes"]}
    samples = {k: [x for p in parts for x in p["samples"][k]]
               for k in ("connectMs", "ackMs", "fanoutMs")}
    m["connectMs"] = dist(samples["connectMs"])
    m["window"] = {"seconds": max(p["window"]["seconds"] for p in parts),
                   "reportsAcked": sum(p["window"]["reportsAcked"] for p in parts),
                   "ackMs": dist(samples["ackMs"])}
    marks = [p["marker"] for p in parts]
    if None in marks:
        m["marker"] = None
    else:
        firsts = [k["firstWelcomeSeconds"] for k in marks if k["welcomes"]]
        lasts = [k["lastWelcomeSeconds"] for k in marks if k["welcomes"]]
        m["marker"] = {"secondsAgo": max(k["secondsAgo"] for k in marks),
                       "fanoutMs": dist(samples["fanoutMs"]),
                       "welcomes": sum(k["welcomes"] for k in marks),
                       "firstWelcomeSeconds": min(firsts) if firsts else None,
                       "lastWelcomeSeconds": max(lasts) if lasts else None}
    return m


class Fleet:
    """N simulated nodes split over K edgesync-fleetsim processes (nodes
    [i*N/K, (i+1)*N/K) in process i, each with --first and its share of the
    ramp): libwebsockets keeps the pending timeouts of a process in one
    sorted list, so one process of 10 000 connections dialling at once
    spends its time walking it, where real agents have one each. Same
    interface as Sim; summary() merges the processes' summaries."""

    def __init__(self, argv, n, procs, ramp, log_dir, nodes_out):
        self.sims = []
        self.outs = []
        for i in range(procs):
            lo, hi = n * i // procs, n * (i + 1) // procs
            out = f"{nodes_out}.{i}"
            self.outs.append(out)
            self.sims.append(Sim(argv + ["--first", str(lo), "--nodes", str(hi - lo),
                                         "--ramp", str(ramp / procs), "--samples",
                                         "--nodes-out", out],
                                 os.path.join(log_dir, f"fleetsim-{i}.log")))

    def first(self, mtype, timeout):
        return [s.first(mtype, timeout) for s in self.sims]

    def summary(self, timeout=60.0):
        for s in self.sims:
            s.ask()
        return merge([s.collect(timeout) for s in self.sims])

    def mark(self):
        for s in self.sims:
            s.mark()

    def stop(self):
        for s in self.sims:
            s.stop()

    def nodes(self):
        """The per-node lines of every process (--nodes-out), after stop()."""
        out = []
        for path in self.outs:
            try:
                with open(path) as f:
                    out += [json.loads(line) for line in f if line.strip()]
            except OSError:
                pass
        return out


def wait_until(what, pred, timeout, interval=1.0):
    """Polls pred() until true (returned) or timeout s (returns None)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    print(f"  ({what}: not within {timeout:.0f} s)", flush=True)
    return None


def seed_ca(cache, dev):
    """Copies the cached dev CA into the controller's dev directory, so the
    controller issues its own certificates from it and the simulator's node
    certificates stay valid across runs. Returns True when one was cached."""
    ca = os.path.join(cache, "ca")
    if not os.path.exists(os.path.join(ca, "ca.crt")):
        return False
    os.makedirs(dev, mode=0o700, exist_ok=True)
    for f in ("ca.crt", "ca.key"):
        shutil.copy2(os.path.join(ca, f), os.path.join(dev, f))
    return True


def make_ca(a, nodes):
    """Makes the cached CA (once, with es-mkcert) and the certificates of
    nodes simulated nodes under it (once each, edgesync-fleetsim
    --certs-only), before any controller runs."""
    ca = os.path.join(a.cache, "ca")
    if not os.path.exists(os.path.join(ca, "ca.crt")):
        os.makedirs(ca, mode=0o700, exist_ok=True)
        subprocess.run([os.path.join(a.build, "bin", "es-mkcert"), "--ca",
                        "--cn", "edgesync fleet bench CA",
                        "--not-after", time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                     time.gmtime(time.time() + 10 * 365 * 86400)),
                        "--out-cert", os.path.join(ca, "ca.crt"),
                        "--out-key", os.path.join(ca, "ca.key")], check=True)
    t = time.monotonic()
    r = subprocess.run([os.path.join(a.build, "bin", "edgesync-fleetsim"), "--certs-only",
                        "--ca-cert", os.path.join(ca, "ca.crt"),
                        "--ca-key", os.path.join(ca, "ca.key"),
                        "--cert-dir", os.path.join(a.cache, "nodes"),
                        "--nodes", str(nodes)], capture_output=True, text=True, check=True)
    print(f"node certificates: {r.stdout.strip()} ({time.monotonic() - t:.1f} s)", flush=True)


def acked_count(db, rv):
    con = db_ro(db)
    try:
        return con.execute("SELECT count(*) FROM nodes WHERE desired_ack_rv >= ?",
                           (rv,)).fetchone()[0]
    finally:
        con.close()


def rule(name):
    return {"apiVersion": "edgesync.io/v1alpha1", "kind": "HealthRule",
            "metadata": {"name": name},
            "spec": {"metric": "processes.count", "operator": "Gt",
                     "threshold": 1000000, "conditionType": "FleetBench",
                     "severity": "Warning"}}


def run_one(a, n):
    """Runs the benchmark for n nodes; returns its figures (a dict)."""
    owner = Owner()
    fig = {"nodes": n, "protocol": a.protocol, "loadavg": list(os.getloadavg())}
    try:
        c = harness.Cluster(owner)
        seed_ca(a.cache, c.dev)
        c.start_controller(extra=["--log-level", "warn"] + a.controller_arg)
        ctl_pid = c.controller.p.pid
        time.sleep(1)
        rss0 = proc_status(ctl_pid, "VmRSS")
        sim = start_fleet(a, c, n, ["--port", str(c.port)], fig, owner)
        t_connect = a.connect_timeout or n / a.ramp * 3 + 120
        s = wait_until("all connected", lambda: (lambda m: m if m["ready"] == n else None)(
            sim.summary()), t_connect, 2)
        if not s:
            s = sim.summary()
            fig["connected"] = s["ready"]
            fig["connectAllSeconds"] = None
        else:
            fig["connectAllSeconds"] = s["connectAllSeconds"]
        fig["connectMs"] = s["connectMs"]
        fig["welcomes"] = s["welcomes"]
        if s["ready"] < n:
            # the later phases would measure a partial (or empty) fleet
            fig["failed"] = (f"only {s['ready']} of {n} connected after {t_connect:.0f} s"
                             f" ({s['welcomes']} welcomes, {s['disconnects']} sessions ended,"
                             f" {s['dialFailures']} failed dials,"
                             f" controller {'alive' if c.controller.alive() else 'dead'})")
            return fig
        fig["sessionsV2"] = s["sessionsV2"]
        fig["sessionsDeflate"] = s["sessionsDeflate"]
        # steady state: one interval to settle, then the window
        time.sleep(a.interval * 1.5)
        fig["loadavgSteady"] = list(os.getloadavg())
        sim.summary()
        cpu0, t0 = cpu_seconds(ctl_pid), time.monotonic()
        b0 = sim.summary()["bytes"]
        time.sleep(a.window)
        w = sim.summary()
        cpu1, t1 = cpu_seconds(ctl_pid), time.monotonic()
        rss = proc_status(ctl_pid, "VmRSS")
        ready = w["ready"]
        fig["steady"] = {
            "ready": ready,
            "rssKiB": rss, "rssBeforeKiB": rss0,
            "perConnKiB": round((rss - rss0) / max(1, ready), 1),
            "cpuPercentOfOneCore": round(100 * (cpu1 - cpu0) / (t1 - t0), 1),
            "reportsStoredPerSecond": round(w["window"]["reportsAcked"] / w["window"]["seconds"], 1),
            "ackMs": w["window"]["ackMs"],
            "upBytesPerNodePerSecond": round((w["bytes"]["tcpTxOpen"] - b0["tcpTxOpen"])
                                             / (t1 - t0) / max(1, ready), 1),
            "downBytesPerNodePerSecond": round((w["bytes"]["tcpRxOpen"] - b0["tcpRxOpen"])
                                               / (t1 - t0) / max(1, ready), 1),
        }
        # fan-out of one apply
        name = f"fleet-bench-{int(time.time())}"
        sim.mark()
        tm = time.monotonic()
        r = c.ctl("apply", "-f", "-", stdin=json.dumps(rule(name)))
        fig["applySeconds"] = round(time.monotonic() - tm, 3)
        rv = c.ctl_json("get", "healthrule", name)["metadata"]["resourceVersion"]
        db = os.path.join(c.state, "controller.db")
        got = wait_until("every desiredAck stored", lambda: acked_count(db, rv) >= ready,
                         a.fanout_timeout, 0.05)
        fig["allDesiredAcksStoredSeconds"] = round(time.monotonic() - tm, 2) if got else None
        f = wait_until("fan-out at every node", lambda: (lambda m: m if m["marker"]["fanoutMs"]["n"] >= ready else None)(
            sim.summary()), a.fanout_timeout, 0.5) or sim.summary()
        fig["fanoutMs"] = f["marker"]["fanoutMs"]
        fig["fanoutNodes"] = f["marker"]["fanoutMs"]["n"]
        del r
        # SIGKILL and restart
        sim.summary()
        sim.mark()
        tk = time.monotonic()
        c.controller.p.kill()
        c.controller.p.wait()
        c.controller.log.close()  # killed on purpose: no clean stop to check
        if not respawn(c, "controller", timeout=120):
            raise RuntimeError("the controller did not start again")
        fig["restartListeningSeconds"] = round(time.monotonic() - tk, 2)
        rss_restart = proc_status(c.controller.p.pid, "VmRSS")
        k = wait_until("all back", lambda: (lambda m: m if m["ready"] >= ready and
                                            m["marker"]["welcomes"] >= ready else None)(
            sim.summary()), a.storm_timeout, 1) or sim.summary()
        mk = k["marker"]
        back = {"ready": k["ready"], "welcomes": mk["welcomes"]}
        if mk["welcomes"]:
            back["allBackSeconds"] = mk["lastWelcomeSeconds"] if k["ready"] >= ready else None
            span = mk["lastWelcomeSeconds"] - mk["firstWelcomeSeconds"]
            back["arrivalsPerSecond"] = round(mk["welcomes"] / span, 1) if span > 0 else None
        back["loadavg"] = list(os.getloadavg())
        fig["restart"] = back
        try:
            fig["restartHandshakes"] = {
                r: c.metric(f'edgesync_controller_tls_handshakes_total{{resumed="{r}"}}')
                for r in ("true", "false")}
        except OSError:
            pass
        end = sim.summary()
        fig["errorsReceived"] = end["errorsReceived"]
        fig["dialFailures"] = end["dialFailures"]
        # the memory the restarted controller gives back once all leave
        fig["disconnect"] = disconnect_memory(c, sim, rss_restart, k["ready"])
    finally:
        finish(a, owner)
    return fig


def disconnect_memory(c, sim, rss_start, ready):
    """Stops the simulator (every session closes) and waits until the
    controller counts no connected agent, then DISCONNECT_SETTLE_S more
    (its sweep gives freed memory back once a second). Returns the
    controller's RSS (KiB) when it started again (rss_start), with the
    fleet back (ready sessions) and after all left, and what it kept:
    after minus start."""
    rss_back = proc_status(c.controller.p.pid, "VmRSS")
    sim.stop()
    wait_until("every session closed at the controller",
               lambda: c.metric("edgesync_controller_connected_agents") == 0, 60, 0.5)
    time.sleep(DISCONNECT_SETTLE_S)
    rss_after = proc_status(c.controller.p.pid, "VmRSS")
    return {"rssStartKiB": rss_start, "rssBackKiB": rss_back, "ready": ready,
            "perConnBackKiB": round((rss_back - rss_start) / max(1, ready), 1),
            "rssAfterKiB": rss_after, "keptKiB": rss_after - rss_start}


def admin_metrics(c, port):
    """{sample: value} of the /metrics of the controller whose admin API is
    at port (the dev admin certificate of cluster c)."""
    conn = http.client.HTTPSConnection("localhost", port, context=c.admin_ssl(), timeout=10)
    try:
        conn.request("GET", "/metrics")
        return parse_metrics(conn.getresponse().read().decode())
    finally:
        conn.close()


ETCD_COUNTERS = ("etcd_server_proposals_committed_total", "etcd_debugging_mvcc_txn_total",
                 "etcd_debugging_mvcc_put_total", "etcd_debugging_mvcc_range_total",
                 "etcd_debugging_mvcc_delete_total", "etcd_mvcc_put_total",
                 "etcd_mvcc_txn_total", "etcd_mvcc_range_total")


def etcd_counts(ec):
    """Per member, the etcd counters of ETCD_COUNTERS it exposes."""
    out = []
    for i in range(len(ec.procs)):
        m = ec.metrics(i)
        out.append({k: m[k] for k in ETCD_COUNTERS if k in m})
    return out


def etcd_delta(before, after):
    """Per counter: the growth on the member where it grew most (raft
    proposals are committed on every member alike), and summed over the
    members (what each member served)."""
    d = {}
    for k in after[0]:
        per = [a.get(k, 0) - b.get(k, 0) for a, b in zip(after, before)]
        d[k] = {"max": max(per), "sum": sum(per)}
    return d


def db_reports(db):
    """{(node, stream, seq)} of the reports in a controller's database."""
    con = db_ro(db)
    try:
        return set(con.execute("SELECT node, stream, seq FROM reports"))
    finally:
        con.close()


def db_acked(db, rv):
    """Names of the nodes whose desiredAck of rv (or later) is stored there."""
    con = db_ro(db)
    try:
        return {r[0] for r in con.execute("SELECT name FROM nodes WHERE desired_ack_rv >= ?",
                                          (rv,))}
    finally:
        con.close()


def run_multi(a, n):
    """Several controllers on one etcd cluster (store = etcd), the fleet
    spread over them; returns the figures (a dict)."""
    owner = Owner()
    fig = {"nodes": n, "controllers": a.controllers, "etcdMembers": a.etcd_members,
           "protocol": a.protocol, "loadavg": list(os.getloadavg())}
    try:
        c = harness.Cluster(owner)
        ec = EtcdCluster(c.dir, a.etcd_members)
        owner.addCleanup(ec.stop)
        # the controllers stop before etcd (Cluster.close passes over them)
        owner.addCleanup(lambda: [stop_quietly(p) for p in c.procs])
        eps = ec.endpoints()
        seed_ca(a.cache, c.dev)
        # reports are never pruned during the run: the check below
        # looks for every acknowledged one
        common = ["--log-level", "warn", "--store", "etcd", "--report-bytes-kept", "0"]
        ctls = []  # (name, agent port, admin port, state dir, Proc)
        for i in range(a.controllers):
            # each prefers another member (tried in turn)
            mine = ",".join(eps[i % len(eps):] + eps[:i % len(eps)])
            extra = common + ["--etcd-endpoints", mine] + a.controller_arg
            if i == 0:
                p = c.start_controller(extra=extra)
                ctls.append(("controller", c.port, c.admin_port, c.state, p))
            else:
                port, admin = harness.free_port(), harness.free_port()
                name = f"controller-{chr(ord('a') + i)}"
                p = c.start_peer_controller(name, port, admin, extra)
                ctls.append((name, port, admin, os.path.join(c.dir, name), p))
        urls = ",".join(f"wss://127.0.0.1:{t[1]}" for t in ctls)
        fig["controllerOrder"] = a.controller_order
        sim = start_fleet(a, c, n, ["--controller", urls,
                                    "--controller-order", a.controller_order], fig, owner)
        t_connect = a.connect_timeout or n / a.ramp * 3 + 120
        s = wait_until("all connected", lambda: (lambda m: m if m["ready"] == n else None)(
            sim.summary()), t_connect, 2) or sim.summary()
        fig["connectAllSeconds"] = s["connectAllSeconds"]
        fig["connectMs"] = s["connectMs"]
        fig["overloadedDuringConnect"] = s["overloadedReceived"]
        fig["perController"] = [admin_metrics(c, t[2]).get(
            "edgesync_controller_connected_agents") for t in ctls]
        if s["ready"] < n:
            fig["failed"] = (f"only {s['ready']} of {n} connected after {t_connect:.0f} s"
                             f" ({s['welcomes']} welcomes, {s['dialFailures']} failed dials,"
                             f" {s['overloadedReceived']} come-back-later)")
            return fig
        # steady state
        time.sleep(a.interval * 1.5)
        fig["loadavgSteady"] = list(os.getloadavg())
        sim.summary()
        e0, t0 = etcd_counts(ec), time.monotonic()
        time.sleep(a.window)
        w = sim.summary()
        e1, t1 = etcd_counts(ec), time.monotonic()
        stored = w["window"]["reportsAcked"]
        de = etcd_delta(e0, e1)
        fig["steady"] = {
            "ready": w["ready"], "seconds": round(t1 - t0, 1), "reportsStored": stored,
            "reportsStoredPerSecond": round(stored / w["window"]["seconds"], 1),
            "ackMs": w["window"]["ackMs"], "etcd": de,
            "etcdPerStoredReport": {k: round(v["max"] / stored, 3) if stored else None
                                    for k, v in de.items()}}
        # fan-out of one apply, made on the first controller
        ready = w["ready"]
        name = f"fleet-bench-{int(time.time())}"
        sim.mark()
        tm = time.monotonic()
        c.ctl("apply", "-f", "-", stdin=json.dumps(rule(name)))
        fig["applySeconds"] = round(time.monotonic() - tm, 3)
        rv = c.ctl_json("get", "healthrule", name)["metadata"]["resourceVersion"]
        dbs = [os.path.join(t[3], "controller.db") for t in ctls]
        got = wait_until("every desiredAck stored", lambda: len(
            set().union(*(db_acked(d, rv) for d in dbs))) >= ready, a.fanout_timeout, 0.1)
        fig["allDesiredAcksStoredSeconds"] = round(time.monotonic() - tm, 2) if got else None
        f = wait_until("fan-out at every node", lambda: (lambda m: m if m["marker"]["fanoutMs"]["n"] >= ready else None)(
            sim.summary()), a.fanout_timeout, 0.5) or sim.summary()
        fig["fanoutMs"] = f["marker"]["fanoutMs"]
        # SIGKILL of the last controller: its agents move to the others
        victim = ctls[-1]
        had = admin_metrics(c, victim[2]).get("edgesync_controller_connected_agents") or 0
        fig["killed"] = {"controller": victim[0], "sessions": had}
        o0 = sim.summary()["overloadedReceived"]
        sim.mark()
        victim[4].p.kill()
        victim[4].p.wait()
        victim[4].log.close()
        k = wait_until("its agents served again", lambda: (lambda m: m if m["ready"] >= ready and
                                                          m["marker"]["welcomes"] >= had else None)(
            sim.summary()), a.storm_timeout, 0.5) or sim.summary()
        mk = k["marker"]
        fig["killed"].update({
            "ready": k["ready"], "welcomes": mk["welcomes"],
            "allServedAgainSeconds": mk["lastWelcomeSeconds"]
            if k["ready"] >= ready and mk["welcomes"] >= had else None,
            "firstWelcomeSeconds": mk["firstWelcomeSeconds"],
            "comeBackLater": k["overloadedReceived"] - o0,
            "loadavg": list(os.getloadavg())})
        fig["perControllerAfter"] = [admin_metrics(c, t[2]).get(
            "edgesync_controller_connected_agents") for t in ctls[:-1]]
        # a while of reports on the others, then every report accounted for
        time.sleep(a.interval * 3)
        sim.stop()
        nodes = sim.nodes()
        per_db = [db_reports(d) for d in dbs]
        union = set().union(*per_db)
        seen = {}
        for rs in per_db:
            for key in rs:
                seen[key] = seen.get(key, 0) + 1
        twice = [key for key, cnt in seen.items() if cnt > 1]
        lost = [(x["node"], x["streamId"], q) for x in nodes for q in x["ackedSeqs"]
                if (x["node"], x["streamId"], q) not in union]
        unacked_missing = sum(1 for x in nodes for q in x["unackedSeqs"]
                              if (x["node"], x["streamId"], q) not in union)
        fig["reports"] = {
            "acknowledged": sum(len(x["ackedSeqs"]) for x in nodes),
            "storedRows": sum(len(r) for r in per_db),
            "lost": len(lost), "lostExamples": lost[:5],
            "storedOnTwoControllers": len(twice), "twiceExamples": twice[:5],
            "writtenNeverAckedNotStored": unacked_missing,
            "notListed": sum(x["writtenNotListed"] for x in nodes),
            "duplicateMetric": [admin_metrics(c, t[2]).get(
                "edgesync_controller_reports_duplicate_total") for t in ctls[:-1]]}
        fig["commit"] = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True).stdout.strip()
    finally:
        finish(a, owner)
    return fig


def report_multi(fig):
    st = fig.get("steady", {})
    kd = fig.get("killed", {})
    rp = fig.get("reports", {})
    la = " ".join(f"{x:.1f}" for x in fig.get("loadavgSteady") or fig.get("loadavg", []))
    per = st.get("etcdPerStoredReport", {})
    lines = [
        f"N = {fig['nodes']} over {fig['controllers']} controllers (store = etcd, "
        f"{fig['etcdMembers']} etcd members), {fig.get('simProcs')} simulator process(es),"
        f" commit {fig.get('commit')}, controller-order {fig.get('controllerOrder')};"
        f" load average at steady state {la}",
        f"  connect all: {fig.get('connectAllSeconds')} s (dial->welcome"
        f" {fmt_dist(fig.get('connectMs'))}); sessions per controller {fig.get('perController')};"
        f" come-back-later answers {fig.get('overloadedDuringConnect')}",
        f"  reports stored: {st.get('reportsStoredPerSecond')}/s over {st.get('seconds')} s;"
        f" report->ack {fmt_dist(st.get('ackMs'))}",
        "  etcd per stored report: " + ", ".join(f"{k} {v}" for k, v in per.items()),
        f"  fan-out of one apply (on the first controller) to all: {fmt_dist(fig.get('fanoutMs'))};"
        f" every desiredAck stored after {fig.get('allDesiredAcksStoredSeconds')} s",
        f"  SIGKILL of {kd.get('controller')} ({kd.get('sessions')} sessions): all served again"
        f" after {kd.get('allServedAgainSeconds')} s (first {kd.get('firstWelcomeSeconds')} s;"
        f" {kd.get('comeBackLater')} come-back-later answers meanwhile); sessions per remaining"
        f" controller {fig.get('perControllerAfter')}",
        f"  reports: {rp.get('acknowledged')} acknowledged, {rp.get('lost')} of them in no"
        f" controller's database; {rp.get('storedOnTwoControllers')} stored on two controllers;"
        f" {rp.get('writtenNeverAckedNotStored')} written but never acknowledged and not stored",
    ]
    print("\n".join(lines), flush=True)


def finish(a, owner):
    """Stops everything the run started (the simulator first), keeping the
    temporary directories with --keep."""
    if a.keep:
        os.environ["ES_KEEP_TMP"] = "1"
    owner.run_cleanups()


def start_fleet(a, c, n, target, fig, owner):
    """Starts the simulated fleet of n nodes (a Fleet) against target
    (the simulator's --port or --controller flags), with the CA of
    cluster c; notes the processes and certificates issued in fig; owner
    stops it."""
    argv = [os.path.join(a.build, "bin", "edgesync-fleetsim")] + target + [
        "--ca-cert", os.path.join(c.dev, "ca.crt"), "--ca-key", os.path.join(c.dev, "ca.key"),
        "--cert-dir", os.path.join(a.cache, "nodes"),
        "--interval", str(a.interval), "--duration", "7200", "--protocol", str(a.protocol)]
    fig["simProcs"] = sim_procs(a, n)
    sim = Fleet(argv, n, fig["simProcs"], a.ramp, c.dir,
                os.path.join(c.dir, "fleetsim-nodes.jsonl"))
    owner.addCleanup(sim.stop)
    fig["certsIssued"] = sum(m["issued"] for m in sim.first("certs", timeout=3600))
    return sim


def sim_procs(a, n):
    """Simulator processes for n nodes: --procs, else enough that each
    holds at most PER_PROC."""
    return max(1, min(n, a.procs or -(-n // PER_PROC)))


def fmt_dist(d):
    if not d or not d.get("n"):
        return "-"
    return f"p50 {d['p50']:.0f} ms, p99 {d['p99']:.0f} ms, max {d['max']:.0f} ms"


def report(fig):
    st = fig.get("steady", {})
    rs = fig.get("restart", {})
    la = " ".join(f"{x:.1f}" for x in fig.get("loadavgSteady") or fig.get("loadavg", []))
    hs = fig.get("restartHandshakes") or {}
    dc = fig.get("disconnect") or {}
    lines = [
        f"N = {fig['nodes']}, protocol {fig.get('protocol')}, {fig.get('simProcs')} simulator"
        f" process(es)  (simulator and controller share"
        f" this {os.cpu_count()}-core machine; load average at steady state {la})",
        f"  connect all: {fig.get('connectAllSeconds')} s  (dial->welcome {fmt_dist(fig.get('connectMs'))})",
        f"  steady state: controller RSS {st.get('rssKiB', 0) / 1024:.0f} MiB, "
        f"{st.get('perConnKiB')} KiB per connection, CPU {st.get('cpuPercentOfOneCore')}% of one core",
        f"  reports stored: {st.get('reportsStoredPerSecond')}/s; report->ack {fmt_dist(st.get('ackMs'))}",
        f"  fan-out of one apply: {fmt_dist(fig.get('fanoutMs'))}; every desiredAck stored after "
        f"{fig.get('allDesiredAcksStoredSeconds')} s (apply itself {fig.get('applySeconds')} s;"
        f" {fig.get('fanoutNodes')} nodes got it)",
        f"  SIGKILL + restart: all back after {rs.get('allBackSeconds')} s, "
        f"{rs.get('arrivalsPerSecond')} arrivals/s ({rs.get('welcomes')} welcomes;"
        f" TLS handshakes after the restart: {hs.get('true')} resumed, {hs.get('false')} full;"
        f" load average then {' '.join(f'{x:.1f}' for x in rs.get('loadavg', []))})",
        f"  wire (socket bytes): up {st.get('upBytesPerNodePerSecond')} B/s, "
        f"down {st.get('downBytesPerNodePerSecond')} B/s per node",
        f"  after the restart: controller RSS {dc.get('rssStartKiB', 0) / 1024:.1f} MiB when"
        f" listening, {dc.get('rssBackKiB', 0) / 1024:.1f} MiB with the fleet back"
        f" ({dc.get('perConnBackKiB')} KiB per connection), {dc.get('rssAfterKiB', 0) / 1024:.1f}"
        f" MiB {DISCONNECT_SETTLE_S} s after all disconnected (kept {dc.get('keptKiB')} KiB)",
    ]
    print("\n".join(lines), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--nodes", default="1000,10000,30000",
                    help="comma-separated fleet sizes")
    ap.add_argument("--protocol", type=int, choices=(1, 2), default=2,
                    help="protocol version the simulated agents speak [2]")
    ap.add_argument("--interval", type=float, default=10.0,
                    help="seconds between a node's reports, version 1 (the agent's"
                    " default); version 2: the settling time is 1.5 times it")
    ap.add_argument("--ramp", type=float, default=500.0, help="first dials per second")
    ap.add_argument("--procs", type=int, default=0,
                    help=f"simulator processes [enough for at most {PER_PROC} nodes each]")
    ap.add_argument("--window", type=float, default=60.0,
                    help="seconds of steady state measured")
    ap.add_argument("--connect-timeout", type=float, default=0,
                    help="seconds the whole fleet may take to connect [3 N / ramp + 120]")
    ap.add_argument("--fanout-timeout", type=float, default=120.0)
    ap.add_argument("--storm-timeout", type=float, default=300.0)
    ap.add_argument("--cache", default=None,
                    help="CA and node certificate cache [BUILD/fleetsim-cache]")
    ap.add_argument("--controller-arg", action="append", default=[],
                    help="one more argument for edgesync-controller run (repeat it),"
                    " e.g. --controller-arg=--reports-kept=1000")
    ap.add_argument("--controllers", type=int, default=1,
                    help="controllers; above 1 they share an etcd cluster (store = etcd)"
                    " and the fleet is spread over them [1]")
    ap.add_argument("--controller-order", choices=("node", "listed"), default="node",
                    help="with --controllers: the simulated agents' controller-order"
                    " (node: each its rendezvous order; listed: node i starts at"
                    " controller i mod C, then the next) [node]")
    ap.add_argument("--etcd-members", type=int, default=3,
                    help="with --controllers: members of the etcd cluster started [3]")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    a = ap.parse_args()
    a.build = use_build(a.build)
    a.cache = os.path.abspath(a.cache or os.path.join(a.build, "fleetsim-cache"))
    sizes = [int(x) for x in a.nodes.split(",") if x]
    limit = raise_nofile(2 * max(sizes) + 4096)
    print(f"fleet benchmark: {os.cpu_count()} cores shared by the controller and the "
          f"simulator; protocol {a.protocol}, interval {a.interval} s, ramp {a.ramp}/s,"
          f" window {a.window} s, open-file limit {limit}", flush=True)
    if limit != resource.RLIM_INFINITY and limit < max(sizes) + 256:
        print(f"  N above about {limit - 256} cannot run: the open-file limit is {limit}"
              " (ulimit -Hn) and one controller holds every session's socket",
              flush=True)
    runnable = [n for n in sizes if limit == resource.RLIM_INFINITY or n + 256 <= limit]
    if runnable:
        make_ca(a, max(runnable))
    figs = []
    for n in sizes:
        if limit != resource.RLIM_INFINITY and n + 256 > limit:
            fig = {"nodes": n, "failed": f"not run: the open-file limit is {limit}"
                   " (hard; raising it needs CAP_SYS_RESOURCE) and the one controller"
                   f" needs a socket per session: {n} sessions"}
            print(f"N = {n}: {fig['failed']}", flush=True)
            figs.append(fig)
            continue
        try:
            fig = run_multi(a, n) if a.controllers > 1 else run_one(a, n)
        except (RuntimeError, AssertionError, OSError) as e:
            fig = {"nodes": n, "failed": str(e)[:2000]}
            print(f"N = {n}: failed: {str(e)[:2000]}", flush=True)
        else:
            if "failed" in fig:
                print(f"N = {n}: {fig['failed']}; dial->welcome {fmt_dist(fig['connectMs'])}",
                      flush=True)
            else:
                report_multi(fig) if a.controllers > 1 else report(fig)
        figs.append(fig)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figs, f, indent=1)


if __name__ == "__main__":
    main()
