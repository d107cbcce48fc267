#!/usr/bin/env python3
"""Prints the figures of the apply -> desiredAck path and of the
controller's report store (never pass/fail).

Runs the real binaries of a build tree (default: build) on loopback:

1. apply -> ack: a controller and one real agent; N applies of a changed
   CollectorConfig, each a PUT on one kept admin connection (HTTP
   keep-alive over one TLS session, as `edgesyncctl` does), then on the
   same connection the node GET that waits for the agent's desiredAck of
   it (waitForDesiredResourceVersion, as `edgesyncctl apply --wait`;
   --poll: polling GETs on a second connection instead), timed until that
   answer is read. Prints p50/p99 of that and of the PUT alone, the
   controller's own push -> desiredAck histogram, and the fsyncs (fsync +
   fdatasync, by strace -f on both processes) per apply: all of them, and
   those that happened between the PUT and the desiredAck (on the path).
   Then the same N applies from C (es-bench-apply-ack, on lib/es_http as
   edgesyncctl), without strace.
2. reports stored per second: S fake agent sessions (the raw protocol
   client of tests/integration/harness.py, one certificate each) each send
   M small event reports with at most W unacknowledged; prints stored
   reports per second, report -> ack p50/p99 and the controller's commits
   (fsyncs) per report.

The benchmark and the programs share this machine (2 cores shared with
other work): the figures are loopback figures under whatever else runs.
Run it inside the integration lock (flock /tmp/es-systest.lock).

Usage: bench/apply_ack.py [--build DIR] [--applies N] [--sessions S]
                          [--reports M] [--window W] [--no-strace] [--poll]
                          [--gap-ms M]
                          [--only apply|store]
"""

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import threading
import time

from benchlib import HERE, Owner, harness, use_build


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p * len(xs))) - 1))]


class Kept:
    """One kept HTTPS connection to the admin API."""

    def __init__(self, c):
        self.conn = http.client.HTTPSConnection("localhost", c.admin_port,
                                                context=c.admin_ssl(), timeout=15)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        self.conn.request(method, path, body=data,
                          headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, json.loads(raw) if raw else None


def strace(pid, out, writes=False):
    calls = "fsync,fdatasync" + (",write,writev,sendto,sendmsg" if writes else "")
    return subprocess.Popen(["strace", "-f", "--seccomp-bpf", "-ttt", "-qq", "-e",
                             "trace=" + calls, "-p", str(pid), "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def syscall_times(path, names, fds=None):
    """Wall-clock times of the calls named in path's strace output (to one
    of fds when given)."""
    ts = []
    if not os.path.exists(path):
        return ts
    pat = re.compile(r"^(?:\d+\s+)?(\d+\.\d+)\s+(\w+)\((\d+)")
    with open(path) as f:
        for line in f:
            m = pat.match(line)
            if m and m.group(2) in names and (fds is None or int(m.group(3)) in fds):
                ts.append(float(m.group(1)))
    return ts


def fsync_times(path):
    return syscall_times(path, ("fsync", "fdatasync"))


def socket_fds(pid):
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                out.add(int(fd))
        except OSError:
            pass
    return out


def metric(c, name):
    """Sum of the samples of a metric family on the controller's /metrics."""
    conn = http.client.HTTPSConnection("localhost", c.admin_port,
                                       context=c.admin_ssl(), timeout=15)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    total = None
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total = (total or 0) + float(line.rsplit(" ", 1)[1])
    return total


def apply_ack(c, args, tmp):
    c.start_controller(extra=["--log-level", "warn"])
    agent = c.start_agent(extra=["--interval", "10", "--log-level", "warn"])
    harness.wait_for("first report", lambda: c.node(), timeout=60)
    put, poll = Kept(c), Kept(c)
    path = f"{harness.API}/collectorconfigs/bench"
    node_path = f"{harness.API}/nodes/{c.nodes[0]}"

    def once(i):
        body = {"apiVersion": "edgesync.io/v1alpha1", "kind": "CollectorConfig",
                "metadata": {"name": "bench"},
                "spec": {"intervalSeconds": 10 + (i % 2)}}
        t0 = time.time()
        st, obj = put.call("PUT", path, body)
        t_put = time.time()
        if st not in (200, 201):
            raise SystemExit(f"apply failed: HTTP {st}: {obj}")
        rv = obj["metadata"]["resourceVersion"]
        if args.poll:
            while True:
                st, n = poll.call("GET", node_path)
                if n["status"]["sync"]["desiredResourceVersion"] >= rv:
                    return t0, time.time(), t_put
        st, n = put.call("GET", f"{node_path}?waitForDesiredResourceVersion={rv}"
                         "&timeoutSeconds=10")
        if st != 200:
            raise SystemExit(f"wait failed: HTTP {st}: {n}")
        return t0, time.time(), t_put

    for i in range(5):  # warm up: the object exists, connections are open
        once(i)
    time.sleep(1)
    tr = []
    if not args.no_strace:
        socks = socket_fds(agent.p.pid)
        tr = [strace(c.controller.p.pid, os.path.join(tmp, "ctrl.strace")),
              strace(agent.p.pid, os.path.join(tmp, "agent.strace"), writes=True)]
        time.sleep(1)
    h0 = (metric(c, "edgesync_controller_desired_ack_latency_seconds_sum"),
          metric(c, "edgesync_controller_desired_ack_latency_seconds_count"))
    spans = []
    # Under strace the agent's reconcile and collection round after each
    # apply (about 10 fsyncs) takes longer than 50 ms: the next apply would
    # wait for it, so the traced loop leaves 200 ms between applies.
    gap = (args.gap_ms if args.gap_ms is not None else 50 if args.no_strace else 200) / 1000
    for i in range(args.applies):
        spans.append(once(i))
        time.sleep(gap)  # let the reconcile and its round run between applies
    time.sleep(1)
    h1 = (metric(c, "edgesync_controller_desired_ack_latency_seconds_sum"),
          metric(c, "edgesync_controller_desired_ack_latency_seconds_count"))
    for p in tr:
        p.terminate()
        p.wait()
    lat = [(b - a) * 1000 for a, b, _ in spans]
    put_ms = [(p - a) * 1000 for a, _, p in spans]
    print(f"apply_to_desired_ack_ms p50 {pct(lat, 0.5):.2f} p99 {pct(lat, 0.99):.2f} "
          f"max {max(lat):.2f} (n={len(lat)}; PUT on a kept admin connection until "
          f"the controller holds the desiredAck, {'polled on a second one' if args.poll else 'then a waiting GET on the same one'})")
    print(f"put_answered_ms p50 {pct(put_ms, 0.5):.2f} p99 {pct(put_ms, 0.99):.2f}")
    if h0[1] is not None and h1[1] and h1[1] > h0[1]:
        print(f"controller_push_to_desired_ack_ms mean "
              f"{(h1[0] - h0[0]) / (h1[1] - h0[1]) * 1000:.2f} "
              f"(edgesync_controller_desired_ack_latency_seconds)")
    if tr:
        first, last = spans[0][0], spans[-1][1]
        # On the path: the controller's before its PUT answered (the
        # object's commit), the agent's before it wrote the desiredAck (its
        # first socket write after the PUT began).
        writes = syscall_times(os.path.join(tmp, "agent.strace"),
                               ("write", "writev", "sendto", "sendmsg"), socks)
        ends = {"ctrl": [p for _, _, p in spans],
                "agent": [min([w for w in writes if w >= a] or [b]) for a, b, _ in spans]}
        for who in ("ctrl", "agent"):
            ts = fsync_times(os.path.join(tmp, f"{who}.strace"))
            inside = [t for t in ts if first <= t <= last + 0.05]
            on_path = [t for t in ts
                       if any(a <= t <= e for (a, _, _), e in zip(spans, ends[who]))]
            print(f"fsyncs_per_apply {who} all {len(inside) / len(spans):.2f} "
                  f"on_path {len(on_path) / len(spans):.2f}")
    # The same loop from C, on lib/es_http as edgesyncctl sends it (no
    # strace: it runs after the traced Python loop).
    client = os.path.join(harness.BIN_DIR, "es-bench-apply-ack")
    r = subprocess.run([client, "--server", f"https://localhost:{c.admin_port}",
                        "--ca", os.path.join(c.dev, "ca.crt"),
                        "--cert", os.path.join(c.dev, "admin.crt"),
                        "--key", os.path.join(c.dev, "admin.key"),
                        "--node", c.nodes[0], "--applies", str(args.applies),
                        "--gap-ms", str(args.gap_ms if args.gap_ms is not None else 50)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"es-bench-apply-ack failed: {r.stderr}")
    print(r.stdout, end="")
    c.stop_controller()
    agent.stop()


def session(c, node, args, out):
    cert, key = c.node_cert(node)
    ws = c.ws(cert, key)
    ws.send_json(harness.hello(node) | {"streamId": f"bench-{node}-{os.getpid()}"})
    while True:
        m = ws.recv()
        if m[0] == "text" and m[1]["type"] == "welcome":
            break
    ev = {"type": "Normal", "reason": "Bench", "message": "m",
          "involvedObject": {"kind": "CollectorConfig", "name": "a", "uid": "u"},
          "time": "2026-01-01T00:00:00Z"}
    sent, acked, lat, seq = {}, 0, [], 0
    out["ready"].wait()
    t0 = time.monotonic()
    while acked < args.reports:
        while seq < args.reports and seq - acked < args.window:
            seq += 1
            sent[seq] = time.monotonic()
            ws.send_json({"type": "report", "seq": seq, "time": "2026-01-01T00:00:00Z",
                          "reportType": "event", "body": ev})
        m = ws.recv()
        if m[0] == "close":
            raise SystemExit(f"{node}: closed {m}")
        if m[1]["type"] == "ack":
            now = time.monotonic()
            for s in range(acked + 1, m[1]["seq"] + 1):
                lat.append((now - sent.pop(s)) * 1000)
            acked = max(acked, m[1]["seq"])
    out["t"].append((t0, time.monotonic()))
    out["lat"] += lat
    ws.close()


def store_rate(c, args):
    c.start_controller(extra=["--log-level", "warn"])
    out = {"ready": threading.Event(), "t": [], "lat": []}
    threads = [threading.Thread(target=session, args=(c, n, args, out), daemon=True)
               for n in c.nodes]
    for t in threads:
        t.start()
    time.sleep(2)
    trace = os.path.join(c.dir, "store.strace")
    tr = None if args.no_strace else strace(c.controller.p.pid, trace)
    time.sleep(0.5 if tr else 0)
    out["ready"].set()
    for t in threads:
        t.join(300)
    if tr:
        tr.terminate()
        tr.wait()
    if len(out["t"]) != len(threads):
        raise SystemExit("a session did not finish")
    start = min(a for a, _ in out["t"])
    end = max(b for _, b in out["t"])
    n = args.reports * len(threads)
    print(f"reports_stored_per_second {n / (end - start):.0f} ({len(threads)} sessions x "
          f"{args.reports} event reports, at most {args.window} unacknowledged each; "
          f"Python clients on the same 2 cores)")
    print(f"report_to_ack_ms p50 {pct(out['lat'], 0.5):.2f} p99 {pct(out['lat'], 0.99):.2f}")
    if tr:
        ts = [t for t in fsync_times(trace) if start <= t - (time.time() - time.monotonic())
              <= end]
        print(f"controller_fsyncs_per_report {len(ts) / n:.3f} (strace -f, while the "
              f"sessions sent; strace slows the controller's syscalls)")
    c.stop_controller()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--applies", type=int, default=200)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--reports", type=int, default=2000)
    ap.add_argument("--window", type=int, default=16)
    ap.add_argument("--no-strace", action="store_true")
    ap.add_argument("--gap-ms", type=int, default=None,
                    help="pause between applies (default 50 ms; 200 ms in the "
                    "traced Python loop)")
    ap.add_argument("--poll", action="store_true",
                    help="poll GET nodes/NAME on a second connection instead of "
                    "the waiting GET (waitForDesiredResourceVersion)")
    ap.add_argument("--only", choices=("apply", "store"))
    args = ap.parse_args()
    use_build(args.build)
    owner = Owner()
    try:
        if args.only != "store":
            c = harness.Cluster(owner)
            apply_ack(c, args, c.dir)
        if args.only != "apply":
            nodes = [f"bench-{i:02d}" for i in range(args.sessions)]
            c = harness.Cluster(owner, nodes=nodes)
            store_rate(c, args)
    finally:
        owner.run_cleanups()


if __name__ == "__main__":
    main()
