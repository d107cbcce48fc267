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
- bytes per node per second on the wire at steady state, up and down,
  counted at the socket (the kernel's TCP_INFO bytes_acked and
  bytes_received of each connection: TLS records with WebSocket frames,
  without TCP/IP headers).

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
       [--interval S] [--ramp R] [--window S] [--controller-arg ARG]...
       [--json FILE] [--keep]
"""

import argparse
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

from benchlib import Owner, db_ro, harness, proc_status, respawn, use_build

HERE = os.path.dirname(os.path.abspath(__file__))
CLK_TCK = os.sysconf("SC_CLK_TCK")
PER_PROC = 2500  # simulated nodes per simulator process by default


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
    sim = None
    try:
        c = harness.Cluster(owner)
        seed_ca(a.cache, c.dev)
        c.start_controller(extra=["--log-level", "warn"] + a.controller_arg)
        ctl_pid = c.controller.p.pid
        time.sleep(1)
        rss0 = proc_status(ctl_pid, "VmRSS")
        argv = [os.path.join(a.build, "bin", "edgesync-fleetsim"),
                "--port", str(c.port), "--ca-cert", os.path.join(c.dev, "ca.crt"),
                "--ca-key", os.path.join(c.dev, "ca.key"),
                "--cert-dir", os.path.join(a.cache, "nodes"),
                "--interval", str(a.interval), "--duration", "7200",
                "--protocol", str(a.protocol)]
        procs = sim_procs(a, n)
        fig["simProcs"] = procs
        sim = Fleet(argv, n, procs, a.ramp, c.dir,
                    os.path.join(c.dir, "fleetsim-nodes.jsonl"))
        fig["certsIssued"] = sum(m["issued"] for m in sim.first("certs", timeout=3600))
        t_connect = n / a.ramp * 3 + 120
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
    finally:
        if sim:
            sim.stop()
        if a.keep:
            os.environ["ES_KEEP_TMP"] = "1"
        owner.run_cleanups()
    return fig


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
    ap.add_argument("--fanout-timeout", type=float, default=120.0)
    ap.add_argument("--storm-timeout", type=float, default=300.0)
    ap.add_argument("--cache", default=None,
                    help="CA and node certificate cache [BUILD/fleetsim-cache]")
    ap.add_argument("--controller-arg", action="append", default=[],
                    help="one more argument for edgesync-controller run (repeat it),"
                    " e.g. --controller-arg=--state-cache-nodes=16384")
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
            fig = run_one(a, n)
        except (RuntimeError, AssertionError, OSError) as e:
            fig = {"nodes": n, "failed": str(e)[:2000]}
            print(f"N = {n}: failed: {str(e)[:2000]}", flush=True)
        else:
            if "failed" in fig:
                print(f"N = {n}: {fig['failed']}; dial->welcome {fmt_dist(fig['connectMs'])}",
                      flush=True)
            else:
                report(fig)
        figs.append(fig)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figs, f, indent=1)


if __name__ == "__main__":
    main()
