"""A controller on etcd (store = etcd) is not ready before it holds the
etcd lease its node sessions are bound to: with a one-member etcd of the
test's own (plain http on loopback) behind a TCP gate that holds every
lease grant unanswered, the controller lists and watches etcd's objects,
but its join listener's /readyz stays 503 and says why; once the gate
lets the grants through, /readyz turns 200. With nothing listening at
the endpoint the log names the refused connection, each repeated
warning once in 30 s."""

import os
import re
import select
import socket
import ssl
import threading
import time
import unittest
import urllib.error
import urllib.request

from etcd_util import ETCD, Etcd
from harness import Cluster, Proc, free_port, main, wait_for


class PlainEtcd(Etcd):
    """Etcd's member on plain http (no certificates: loopback only)."""

    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        url, peer = self.endpoint(), f"http://127.0.0.1:{self.peer_port}"
        argv = [ETCD, "--name", "m0", "--data-dir", os.path.join(self.dir, "data"),
                "--listen-client-urls", url, "--advertise-client-urls", url,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"m0={peer}",
                f"--experimental-watch-progress-notify-interval={self.progress_s}s",
                "--log-level", "warn"]
        self.proc = Proc("etcd", argv, os.path.join(self.dir, "etcd.log"))
        wait_for("etcd to answer", lambda: self._get("/health")[0] == 200, timeout=30)

    def _get(self, path):
        try:
            with urllib.request.urlopen(self.endpoint() + path, timeout=5) as r:
                return r.status, r.read()
        except (OSError, urllib.error.URLError) as e:
            return 0, str(e)


class LeaseGate:
    """A TCP proxy in front of etcd's client port. The etcd client opens a
    connection per request, so the first bytes of each name the request:
    while the gate is shut, a lease grant is held unanswered (as an etcd
    that does not get to it); everything else is piped through."""

    def __init__(self, test, upstream):
        self.upstream = upstream
        self.shut = True
        self.held = []
        self.grants_held = 0
        self.lock = threading.Lock()
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()
        test.addCleanup(self.close)

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            first = c.recv(65536)
        except OSError:
            c.close()
            return
        with self.lock:
            if self.shut and b"/v3/lease/grant" in first.split(b"\r\n", 1)[0]:
                self.grants_held += 1
                self.held.append(c)
                return
        try:
            u = socket.create_connection(("127.0.0.1", self.upstream), timeout=10)
            u.settimeout(None)
            u.sendall(first)
        except OSError:
            c.close()
            return
        self._pipe(c, u)

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                r, _, _ = select.select([a, b], [], [], 60)
                if not r:
                    continue
                for s in r:
                    d = s.recv(65536)
                    if not d:
                        return
                    (b if s is a else a).sendall(d)
        except OSError:
            pass
        finally:
            a.close()
            b.close()

    def open(self):
        with self.lock:
            self.shut = False
            for c in self.held:
                c.close()
            self.held = []

    def close(self):
        self.stopping = True
        self.ls.close()
        self.open()


def readyz(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # as kubelet's probes
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx,
                                    timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class EtcdReadyTest(unittest.TestCase):
    def test_not_ready_before_the_lease(self):
        etcd = PlainEtcd(self)
        etcd.start()
        gate = LeaseGate(self, etcd.port)
        c = Cluster(self)
        c.start_controller(extra=["--store", "etcd", "--etcd-endpoints",
                                  f"http://127.0.0.1:{gate.port}", "--etcd-prefix", "/it/"])
        wait_for("a lease grant held at the gate", lambda: gate.grants_held > 0)
        # The mirror catches up (the list and watch pass), etcd answers:
        # only the lease is missing, and /readyz must say so, never 200.
        seen = []
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            seen.append(readyz(c.join_port))
            time.sleep(0.1)
        self.assertNotIn(200, [st for st, _ in seen], seen[-5:])
        self.assertTrue(any(st == 503 and "no etcd lease" in body for st, body in seen),
                        f"{seen[-5:]}\n{c.logs()}")
        gate.open()
        wait_for("/readyz 200 once the lease is granted",
                 lambda: readyz(c.join_port)[0] == 200, timeout=30)

    def test_refused_endpoint_named(self):
        """No etcd listens at the endpoint: the controller is not ready and
        its log says the connection was refused (libwebsockets' own words
        were "closed before established"). Needs no etcd."""
        port = free_port()
        c = Cluster(self)
        c.start_controller(extra=["--store", "etcd", "--etcd-endpoints",
                                  f"http://127.0.0.1:{port}", "--etcd-prefix", "/it/"])
        wait_for("a failed etcd request logged",
                 lambda: "trying again" in c.controller.output(), timeout=20)
        self.assertEqual(readyz(c.join_port)[0], 503)
        time.sleep(4)  # each request is retried every second meanwhile
        failed = [ln for ln in c.controller.output().splitlines() if "trying again" in ln]
        self.assertTrue(all(f"http://127.0.0.1:{port}: Connection refused" in ln
                            for ln in failed), failed)
        # A warning that repeats is logged once, then once in 30 s.
        msgs = [re.search(r'msg="([^"]*)"', ln).group(1) for ln in failed]
        self.assertEqual(len(msgs), len(set(msgs)), failed)


if __name__ == "__main__":
    main()
