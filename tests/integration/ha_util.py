"""The multi-controller tier of the test's own on loopback: an N-member
etcd cluster (EtcdCluster: static --initial-cluster, one data directory
per member in a temporary directory, free ports, mutual TLS from
etcd_util.Etcd's certificates; a member can be killed and restarted) and
N edgesync controllers with store = etcd on it (Controllers: each its own
state directory and database, listen, admin and join ports, all with the
certificates of one dev CA, so one agent certificate is good at each).
Skipped (exit 77) with the reason when etcd is not installed."""

import json
import os
import signal
import subprocess

from etcd_util import ETCD, Etcd
from harness import (API, Cluster, Proc, WSClient, free_port, hello, https_json,
                     wait_for)


class EtcdCluster(Etcd):
    """members etcd members m0..m(N-1); endpoints() their client URLs."""

    def __init__(self, test, members=3, progress_s=1):
        super().__init__(test, progress_s)  # the CA, certificates, m0's ports
        self.n = members
        self.ports = [self.port] + [free_port() for _ in range(members - 1)]
        self.peer_ports = [self.peer_port] + [free_port() for _ in range(members - 1)]
        self.procs = [None] * members
        self.token = "es-it-" + os.path.basename(self.dir)

    def url(self, i):
        return f"https://127.0.0.1:{self.ports[i]}"

    def endpoints(self, first=0):
        """Every member's client URL, member first's first (a controller
        tries them in turn)."""
        order = list(range(first, self.n)) + list(range(first))
        return [self.url(i) for i in order]

    def _argv(self, i):
        peers = ",".join(f"m{j}=http://127.0.0.1:{p}" for j, p in enumerate(self.peer_ports))
        peer = f"http://127.0.0.1:{self.peer_ports[i]}"
        return [ETCD, "--name", f"m{i}", "--data-dir", os.path.join(self.dir, f"data-{i}"),
                "--listen-client-urls", self.url(i), "--advertise-client-urls", self.url(i),
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", peers, "--initial-cluster-state", "new",
                "--initial-cluster-token", self.token,
                "--cert-file", self.server_cert, "--key-file", self.server_key,
                "--trusted-ca-file", self.ca, "--client-cert-auth",
                f"--experimental-watch-progress-notify-interval={self.progress_s}s",
                "--log-level", "warn"]

    def _spawn(self, i):
        self.procs[i] = Proc(f"etcd-m{i}", self._argv(i),
                             os.path.join(self.dir, f"etcd-m{i}.log"))
        if i == 0:
            self.proc = self.procs[0]  # Etcd's

    def start(self):
        """Starts every member (together: a member waits for a quorum) and
        waits until each answers."""
        for i in range(self.n):
            self._spawn(i)
        for i in range(self.n):
            wait_for(f"etcd member m{i} to answer", lambda i=i: self.member_healthy(i),
                     timeout=60)

    def alive(self, i):
        p = self.procs[i]
        return p is not None and not p.log.closed and p.alive()

    def member_healthy(self, i):
        p = self.procs[i]
        if not p.alive():
            raise AssertionError(f"etcd member m{i} exited:\n" + p.output()[-3000:])
        r = self._etcdctl([self.url(i)], "endpoint", "health", check=False)
        return r.returncode == 0

    def _etcdctl(self, endpoints, *args, check=True):
        r = subprocess.run(["etcdctl", "--endpoints", ",".join(endpoints),
                            "--cacert", self.ca, "--cert", self.cert, "--key", self.key,
                            "--dial-timeout", "3s", "--command-timeout", "10s"]
                           + list(args), capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, ETCDCTL_API="3"))
        if check and r.returncode != 0:
            raise AssertionError(f"etcdctl {' '.join(args)} exited {r.returncode}: "
                                 f"{r.stderr}")
        return r

    def etcdctl(self, *args):
        """etcdctl on the members that run; returns its output."""
        live = [self.url(i) for i in range(self.n) if self.alive(i)]
        return self._etcdctl(live, *args).stdout

    def leader(self):
        """The index of the member that leads now (asked of those that run)."""
        live = [i for i in range(self.n) if self.alive(i)]
        out = json.loads(self._etcdctl([self.url(i) for i in live], "endpoint", "status",
                                       "-w", "json").stdout)
        for st in out:
            if st["Status"]["header"]["member_id"] == st["Status"]["leader"]:
                return self.endpoints().index(st["Endpoint"])
        raise AssertionError(f"no member leads: {out}")

    def revision(self, i=None):
        """etcd's revision at member i (None: the highest of those that run)."""
        if i is None:
            out = json.loads(self.etcdctl("endpoint", "status", "-w", "json"))
        else:
            out = json.loads(self._etcdctl([self.url(i)], "endpoint", "status", "-w",
                                           "json").stdout)
        return max(st["Status"]["header"]["revision"] for st in out)

    def kill(self, i, sig=signal.SIGKILL):
        """Ends member i with sig (SIGKILL: no sync, as a crash)."""
        p = self.procs[i]
        p.p.send_signal(sig)
        p.p.wait(20)
        p.log.close()

    def restart(self, i):
        """Starts member i again on its data directory and waits until it
        answers."""
        self._spawn(i)
        wait_for(f"etcd member m{i} to answer again", lambda: self.member_healthy(i),
                 timeout=60)

    def stop(self):
        """Stops every member that runs with SIGTERM (Etcd.stop's rules)."""
        bad = []
        for p in self.procs:
            self.proc = p
            try:
                super().stop()
            except AssertionError as e:
                bad.append(str(e))
        self.proc = self.procs[0]
        if bad:
            raise AssertionError("\n".join(bad))


class Controllers:
    """n controllers (0..n-1) with store = etcd under prefix on etcd (an
    Etcd or EtcdCluster), controller i trying etcd member i first. The
    certificates are those of a --dev controller run once (its CA, a
    controller certificate for localhost and 127.0.0.1, one certificate
    and agent config per node of nodes); that one does not stay up."""

    def __init__(self, test, etcd, n=3, nodes=("node-0", "node-1", "node-2"),
                 prefix="/ha/"):
        self.etcd = etcd
        self.prefix = prefix
        self.c = Cluster(test, nodes=list(nodes))
        self.c.start_controller()
        self.c.stop_controller()
        self.n = n
        self.ports = [free_port() for _ in range(n)]
        self.admin_ports = [free_port() for _ in range(n)]
        self.join_ports = [free_port() for _ in range(n)]
        self.procs = [None] * n

    def etcd_flags(self, i):
        eps = self.etcd.endpoints(i % self.etcd.n) if hasattr(self.etcd, "n") \
            else [self.etcd.endpoint()]
        return ["--store", "etcd", "--etcd-endpoints", ",".join(eps),
                "--etcd-cert", self.etcd.cert, "--etcd-key", self.etcd.key,
                "--etcd-ca", self.etcd.ca, "--etcd-prefix", self.prefix]

    def start(self, i=None):
        """Starts controller i (None: each); returns its Proc. Its join
        listener signs with the dev CA, as the --dev one does."""
        if i is None:
            return [self.start(j) for j in range(self.n)]
        dev = self.c.dev
        extra = self.etcd_flags(i) + [
            "--join-listen", f"127.0.0.1:{self.join_ports[i]}",
            "--ca-cert", os.path.join(dev, "ca.crt"),
            "--ca-key", os.path.join(dev, "ca.key")]
        self.procs[i] = self.c.start_peer_controller(
            f"controller-{i}", self.ports[i], self.admin_ports[i], extra)
        return self.procs[i]

    def kill(self, i, sig=signal.SIGKILL):
        self.procs[i].stop(sig)

    def url(self, i):
        """Controller i's agent URL."""
        return f"wss://127.0.0.1:{self.ports[i]}"

    def server(self, i):
        """Controller i's admin URL (edgesyncctl --server)."""
        return f"https://localhost:{self.admin_ports[i]}"

    def ctl(self, i, *args, stdin=None, check=True):
        return self.c.ctl("--server", self.server(i), *args, stdin=stdin, check=check)

    def api(self, i, method, path, body=None):
        """One admin API request to controller i: (status, JSON or text)."""
        return https_json("localhost", self.admin_ports[i], self.c.admin_ssl(), method,
                          API + path, body)

    def get(self, i, plural, name):
        """The object at controller i, None when it has none."""
        st, body = self.api(i, "GET", f"/{plural}/{name}")
        return body if st == 200 else None

    def node(self, i, name):
        st, body = self.api(i, "GET", f"/nodes/{name}")
        return body if st == 200 else None

    def sync(self, i, name):
        """status.sync of node name at controller i ({} when unknown)."""
        return ((self.node(i, name) or {}).get("status") or {}).get("sync") or {}

    def metrics(self, i):
        """Controller i's /metrics as {sample: value}."""
        st, body = https_json("localhost", self.admin_ports[i], self.c.admin_ssl(), "GET",
                              "/metrics")
        if st != 200:
            raise AssertionError(f"metrics of controller {i}: HTTP {st}")
        out = {}
        for line in body.splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                out[k] = float(v)
        return out

    def start_agent(self, node, order, extra=()):
        """Starts node's agent with controller-url the controllers of order
        (indices), dialled in that order (controller-order = listed,
        harness.Cluster.start_agent's default)."""
        urls = []
        for i in order:
            urls += ["--controller-url", self.url(i)]
        return self.c.start_agent(node, extra=urls + list(extra))

    def held(self, node):
        return self.c.held(node)

    def wait_held(self, node, want, what, timeout=90):
        self.c.wait_held(node, want, what, timeout)

    def hello_at(self, i, node, keep=False):
        """A raw session of node (its certificate) to controller i: returns
        the first message after the hello (and the open connection when
        keep, else it is closed)."""
        ws = WSClient("127.0.0.1", self.ports[i], os.path.join(self.c.dev, "ca.crt"),
                      *self.c.node_cert(node))
        try:
            ws.send_json(hello(node))
            _, m = ws.recv()
        except BaseException:
            ws.close()
            raise
        if keep:
            return m, ws
        ws.close()
        return m


def snapshot(node, seq):
    """A snapshot report of node at seq (its usage says the seq)."""
    return {"type": "report", "seq": seq, "time": "2026-01-01T00:00:00Z",
            "reportType": "snapshot",
            "body": {"kind": "Node", "metadata": {"name": node},
                     "status": {"conditions": [
                         {"type": "Ready", "status": "True", "reason": "Test",
                          "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                         "usage": {"n": seq}}}}


def cc(name, interval=5, role=None):
    """A CollectorConfig manifest (for every node, or those of role)."""
    sel = f", nodeSelector: {{matchLabels: {{role: {role}}}}}" if role else ""
    return f"""apiVersion: edgesync.io/v1alpha1
kind: CollectorConfig
metadata: {{name: {name}}}
spec: {{intervalSeconds: {interval}, collectors: [cpu, memory]{sel}}}
"""


def served_by(node):
    """The id of the controller serving node (a Node of the admin API:
    status.sync.controller), None when no controller holds its session."""
    return (((node or {}).get("status") or {}).get("sync") or {}).get("controller")


def stored_seq(h, i, node):
    """The highest report seq in controller i's own history of node (its
    db, read without etcd: nodes/NAME/reports), 0 when none."""
    st, body = h.api(i, "GET", f"/nodes/{node}/reports?limit=1")
    if st != 200:
        raise AssertionError(f"reports of {node} at controller {i}: HTTP {st}: {body}")
    return max((r["seq"] for r in body["items"]), default=0)
