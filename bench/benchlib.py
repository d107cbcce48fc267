"""Helpers shared by the bench/ scripts: the loopback harness of the
integration tests (tests/integration/harness.py, re-exported as
`benchlib.harness`), pointed at a build tree, a cleanup owner for its
Cluster outside unittest, /proc readings, and for the soak and fault
scripts: restarting a killed program, the agent's endpoint, Prometheus
text, read-only SQLite checks, mounts. Figures only: nothing here passes
or fails.
"""

import argparse
import http.client
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

import harness  # noqa: E402,F401


class Owner:
    """Stands in for the unittest.TestCase that harness.Cluster expects:
    collects cleanups and runs them, last added first, at run_cleanups()."""

    def __init__(self):
        self.cleanups = []

    def addCleanup(self, fn, *a):
        self.cleanups.append((fn, a))

    def run_cleanups(self):
        for fn, a in reversed(self.cleanups):
            fn(*a)


def use_build(build):
    """Points the harness at the binaries of the build tree build (a path,
    made absolute) and returns that absolute path."""
    build = os.path.abspath(build)
    harness.BIN_DIR = os.path.join(build, "bin")
    harness.TOOLS_DIR = harness.BIN_DIR
    return build


def proc_status(pid, key):
    """The value of key (e.g. "VmRSS") in /proc/<pid>/status, in kB, or None
    when the line is missing."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # kB
    return None


# -- helpers of the soak and fault scripts (soak_kill.py, fault_store.py) ----

def http_get(port, path, timeout=10.0):
    """GET http://127.0.0.1:<port><path> (an agent's local endpoint).
    Returns (status, body text); raises OSError (refused, timed out)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def parse_metrics(text):
    """{'name{labels}': value} of a Prometheus text exposition (comments and
    unparsable lines left out)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, val = line.rpartition(" ")
        try:
            out[key] = float(val)
        except ValueError:
            pass
    return out


def db_ro(path):
    """A read-only sqlite3 connection to path (the writers are stopped, or
    hold their own locks: nothing here writes)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)


def integrity(path):
    """`PRAGMA integrity_check` of the database at path, opened read-only:
    "ok", the first problems it lists, or why it could not be opened."""
    if not os.path.exists(path):
        return "missing"
    try:
        con = db_ro(path)
        try:
            rows = [r[0] for r in con.execute("PRAGMA integrity_check").fetchall()]
        finally:
            con.close()
    except sqlite3.Error as e:
        return f"error: {e}"
    if rows == ["ok"]:
        return "ok"
    return f"{len(rows)} problem(s): " + "; ".join(rows[:3])


def table_columns(con, table):
    """The column names of table ([] when there is no such table)."""
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})").fetchall()]


def stream_column(columns):
    """The column among columns that names a report stream (stream_id,
    stream, ...), or None when the schema has none."""
    for c in ("stream_id", "stream", "stream_uid"):
        if c in columns:
            return c
    return next((c for c in columns if c.startswith("stream")), None)


def stop_quietly(proc, sig=signal.SIGTERM, timeout=20):
    """Stops a harness.Proc like Proc.stop but never raises: returns its
    exit status (None when it could not be reaped) and, when it did not stop
    cleanly, what went wrong (else None)."""
    try:
        return proc.stop(sig, timeout), None
    except AssertionError as e:
        first = str(e).split("\n", 1)[0]
        return proc.p.returncode, first


def mounts_under(path):
    """Mount points at or below path, deepest first (from /proc/self/mounts)."""
    path = os.path.realpath(path)
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            mp = line.split()[1].encode().decode("unicode_escape")
            if mp == path or mp.startswith(path + "/"):
                out.append(mp)
    return sorted(out, key=len, reverse=True)


def unmount_under(path):
    """Unmounts every mount at or below path (lazily when busy). Returns the
    mount points it could not unmount."""
    left = []
    for mp in mounts_under(path):
        if subprocess.run(["umount", mp], capture_output=True).returncode != 0 and \
                subprocess.run(["umount", "-l", mp], capture_output=True).returncode != 0:
            left.append(mp)
    return left


def respawn(cluster, who, timeout=30.0):
    """Starts again, with the same command line and log file, the
    controller (who == "controller") or the agent of node who of a
    harness.Cluster that ran it before (its old process must have exited).
    Waits until it listens (the controller on both ports), or exits, or
    timeout seconds pass. Returns True when it listens; the new harness.Proc
    replaces the old one in the cluster either way."""
    old = cluster.controller if who == "controller" else cluster.agents[who]
    p = harness.Proc(old.name, old.argv, old.log_path)
    cluster.procs.append(p)
    if who == "controller":
        cluster.controller = p
        ports = (cluster.admin_port, cluster.port)
    else:
        cluster.agents[who] = p
        ports = (cluster.agent_ports[who],)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not p.alive():
            return False
        if all(cluster._listening(port) for port in ports):
            return True
        time.sleep(0.05)
    return False


def fault_parser(doc):
    """An argparse.ArgumentParser described by doc's first line, with the
    options the soak and fault scripts share: --build, --backend (the
    agents' collector-backend), --seed, --keep."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--backend", default="procfs", help="the agents' collector-backend")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    return ap


def fault_args(ap):
    """Parses the command line with ap (from fault_parser), points the
    harness at --build and, with --keep, keeps the clusters' temporary
    directories. Returns the arguments."""
    args = ap.parse_args()
    use_build(args.build)
    if args.keep:
        os.environ["ES_KEEP_TMP"] = "1"
    return args


# -- an etcd cluster of the benchmark's own (bench/fleet.py --etcd-members) --

class EtcdCluster:
    """members etcd members on loopback, a static cluster (each its own
    temporary data directory under dir, free ports, plain http: the
    benchmark measures the store's work, not etcd's TLS), with periodic
    auto-compaction. endpoints() are the client URLs; metrics(i) the
    Prometheus text of member i's /metrics (served at its client URL).
    Uses the etcd binary of Debian's etcd-server; stop() stops every
    member."""

    def __init__(self, dir, members, compaction="5m"):
        self.dir = dir
        self.etcd = shutil.which("etcd") or "/usr/bin/etcd"
        if not os.access(self.etcd, os.X_OK):
            raise RuntimeError("etcd is not installed (Debian package etcd-server)")
        self.client = [harness.free_port() for _ in range(members)]
        self.peer = [harness.free_port() for _ in range(members)]
        cluster = ",".join(f"m{i}=http://127.0.0.1:{p}" for i, p in enumerate(self.peer))
        self.procs = []
        for i in range(members):
            url = f"http://127.0.0.1:{self.client[i]}"
            peer = f"http://127.0.0.1:{self.peer[i]}"
            argv = [self.etcd, "--name", f"m{i}",
                    "--data-dir", os.path.join(dir, f"etcd-m{i}"),
                    "--listen-client-urls", url, "--advertise-client-urls", url,
                    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                    "--initial-cluster", cluster, "--initial-cluster-state", "new",
                    "--initial-cluster-token", "edgesync-fleet-bench",
                    "--auto-compaction-mode", "periodic",
                    "--auto-compaction-retention", compaction,
                    "--log-level", "warn"]
            self.procs.append(harness.Proc(f"etcd-m{i}", argv,
                                           os.path.join(dir, f"etcd-m{i}.log")))
        harness.wait_for("every etcd member healthy",
                         lambda: all(self._healthy(i) for i in range(members)), timeout=60)

    def endpoints(self):
        return [f"http://127.0.0.1:{p}" for p in self.client]

    def _healthy(self, i):
        if not self.procs[i].alive():
            raise RuntimeError(f"etcd member {i} exited:\n" + self.procs[i].output()[-3000:])
        st, body = http_get(self.client[i], "/health")
        return st == 200 and '"true"' in body

    def metrics(self, i):
        """{sample: value} of member i's /metrics."""
        return parse_metrics(http_get(self.client[i], "/metrics")[1])

    def stop(self):
        for p in self.procs:
            if p.alive():
                p.p.terminate()
        for p in self.procs:
            try:
                p.p.wait(20)
            except subprocess.TimeoutExpired:
                p.p.kill()
                p.p.wait()
            p.log.close()
