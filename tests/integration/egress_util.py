"""What the EgressPolicy tests share (test_egress.py: cgroup BPF backend,
test_egress_nft.py: nftables backend).

EgressCase sets up two children of the host's cgroup v2 hierarchy (a and
b), a worker process in each that connects on command, listeners on two
ports of 127.0.0.2 and a controller; the test then starts its agent.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time
import unittest

from bpfnet_util import remove_cgroup
from harness import Cluster, wait_for

ADDR = "127.0.0.2"

WORKER = r"""
import errno, json, socket, sys, time

def attempt(port):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.2", port))
        return "OK"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()

for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "connect":
        print(attempt(int(cmd[1])), flush=True)
    elif cmd[0] == "loop":
        p1, p2, until = int(cmd[1]), int(cmd[2]), time.time() + float(cmd[3])
        out = []
        while time.time() < until:
            out.append([p1, attempt(p1)])
            out.append([p2, attempt(p2)])
        print(json.dumps(out), flush=True)
"""


def cgroup2_root():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if post.startswith("cgroup2 ") and pre.split()[3] == "/":
                return pre.split()[4]
    return None


class Worker:
    """A Python process placed in a cgroup before it opens any socket."""

    def __init__(self, cgroup):
        self.p = subprocess.Popen([sys.executable, "-c", WORKER], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(self.p.pid))

    def connect(self, port):
        self.p.stdin.write(f"connect {port}\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def start_loop(self, p1, p2, seconds):
        self.p.stdin.write(f"loop {p1} {p2} {seconds}\n")
        self.p.stdin.flush()

    def loop_result(self):
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.kill()
        self.p.wait()
        self.p.stdin.close()
        self.p.stdout.close()


class Listener:
    """Accepts and closes connections on ADDR:port until closed."""

    def __init__(self, port):
        self.s = socket.socket()
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.s.bind((ADDR, port))
        self.s.listen(128)
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while True:
            try:
                c, _ = self.s.accept()
                c.close()
            except OSError:
                return

    def close(self):
        try:
            self.s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.s.close()


def free_port_on(addr):
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def policy(name, port, prefix):
    return {"apiVersion": "edgesync.io/v1alpha1", "kind": "EgressPolicy",
            "metadata": {"name": name},
            "spec": {"action": "Deny",
                     "rules": [{"cidr": f"{ADDR}/32", "protocol": "TCP",
                                "ports": [port]}],
                     "targets": {"cgroupPathPrefix": prefix}}}


def es_time(s):
    return time.mktime(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S"))


def stale(d, prefix):
    """Entries of d named prefix<pid>... whose pid is gone (left by a
    killed earlier run)."""
    try:
        names = os.listdir(d)
    except OSError:
        return []
    out = []
    for n in names:
        if not n.startswith(prefix):
            continue
        pid = n[len(prefix):].split("-")[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            out.append(os.path.join(d, n))
    return out


class EgressCase(unittest.TestCase):
    """Cgroups a and b with a worker each, listeners on p1 and p2, a
    controller (self.c); tag is the prefix of this run's names."""

    TAG = "es-egress-test-"

    def setup_egress(self):
        self.root = cgroup2_root()
        for path in stale(self.root, self.TAG):
            remove_cgroup(path)
        self.c = Cluster(self)
        self.tag = f"{self.TAG}{os.getpid()}"
        self.cg = {}
        for k in ("a", "b"):
            rel = f"/{self.tag}-{k}"
            path = self.root + rel
            os.mkdir(path)
            self.addCleanup(remove_cgroup, path)
            self.cg[k] = (rel, path)
        self.p1, self.p2 = free_port_on(ADDR), free_port_on(ADDR)
        for p in (self.p1, self.p2):
            self.addCleanup(Listener(p).close)
        self.w = {}
        for k in ("a", "b"):
            self.w[k] = Worker(self.cg[k][1])
            self.addCleanup(self.w[k].close)
        self.c.start_controller()
        self.node = self.c.nodes[0]

    def apply(self, obj):
        return self.c.ctl("apply", "-f", "-", stdin=json.dumps(obj))

    def reported(self, name):
        node = self.c.node() or {}
        for o in node.get("status", {}).get("objects", []):
            if o["kind"] == "EgressPolicy" and o["name"] == name:
                return o
        return None

    @staticmethod
    def cond(o, t):
        for c in (o or {}).get("conditions", []):
            if c["type"] == t:
                return c
        return None

    def events(self, reason):
        return [r["event"] for r in self.c.reports() if r["reportType"] == "event"
                and (r.get("event") or {}).get("reason") == reason]

    def wait_denied(self, port, what, refused="EPERM"):
        wait_for(what, lambda: self.w["a"].connect(port) == refused, timeout=30)

    def check(self, fn):
        try:
            fn()
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def step(self, what):
        print(f"[{time.monotonic() - self.t0:6.1f}s] {what}", file=sys.stderr, flush=True)

    def atomic_update(self, name, refused):
        """Switches policy name from denying p1 to denying p2 (cgroup a)
        while worker a connects to both in a loop: one switch, never both
        or neither refused."""
        a = self.w["a"]
        a.start_loop(self.p1, self.p2, 8)
        time.sleep(2)
        self.apply(policy(name, self.p2, self.cg["a"][0]))
        res = a.loop_result()
        self.assertGreater(len(res), 20)
        old = {self.p1: refused, self.p2: "OK"}
        new = {self.p1: "OK", self.p2: refused}
        switched = None
        for i, (port, got) in enumerate(res):
            if switched is None and got == new[port] and got != old[port]:
                switched = i
            want = new if switched is not None else old
            if got != want[port]:
                self.fail(f"attempt {i} of {len(res)} to port {port}: {got} "
                          f"({'after' if switched is not None else 'before'} "
                          f"the switch at attempt {switched}); attempts "
                          f"{max(0, i - 6)}..{i + 6}: {res[max(0, i - 6):i + 7]}")
        self.assertIsNotNone(switched, f"the update never took effect in {len(res)} "
                             f"attempts; the first: {res[:6]}")
        self.assertGreater(switched, 0, "no attempt before the update")
