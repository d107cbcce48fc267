#!/usr/bin/env python3
"""Prints the controller's cost of idle agent sessions and of handshakes
(figures, never pass/fail; README "Performance"):

- controller RSS with 0 sessions, with N idle mutual-TLS sessions (TLS,
  WebSocket upgrade, hello, welcome and the desired sync done; each with
  its own node certificate), and after they disconnected; the difference
  divided by N is the memory per connection;
- controller CPU time (utime + stime, /proc/<pid>/stat) and wall time per
  full handshake (TLS + upgrade + hello) and per reconnect that offers the
  TLS session of the first connection (RFC 5077 ticket), with how many
  were resumed.

The sessions are opened one after another on loopback, so the figures
are the controller's; the client shares the machine. `--client python`
(the default) uses Python's ssl module: 16 KiB TLS records, as a generic
client sends. `--client openssl` runs one `openssl s_client -maxfraglen
4096` per session, which asks for 4096-byte records as the agent does
(RFC 6066), so a controller built with MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH
holds small record buffers for it. N is bounded (at most 2000) and the
open file limit is raised for it. Run inside the system-test lock:

  flock /tmp/es-systest.lock bench/conn_mem.py [--build DIR] [-n N] [--client openssl]

Give --build the tree of an older controller to measure "before" (it must
accept the same flags; nothing new is passed).
"""

import argparse
import base64
import os
import resource
import socket
import ssl
import subprocess
import time

from benchlib import Owner, harness, proc_status, use_build

TRUST = "edgesync.local"


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_until_desired_done(peer):
    """Reads messages until a desired message without more=true."""
    while True:
        m = peer.recv()
        if m[0] == "close":
            raise EOFError(f"closed with {m[1]}: {m[2]}")
        if m[1].get("type") == "error":
            raise EOFError(f"controller error: {m[1]}")
        if m[1].get("type") == "desired" and not m[1].get("more"):
            return


def agent_session(s, port, node):
    """The WebSocket upgrade, hello and desired sync of an agent on the TLS
    stream s (sendall/recv). Returns s."""
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /v1/sync HTTP/1.1\r\nHost: localhost:{port}\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Protocol: edgesync.v1\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            raise EOFError("closed during the upgrade")
        head += chunk
    if b" 101 " not in head.split(b"\r\n", 1)[0] + b" ":
        raise EOFError(head.split(b"\r\n", 1)[0].decode())
    peer = harness.WSPeer(s, head.split(b"\r\n\r\n", 1)[1])
    peer.send_json(harness.hello(node))
    read_until_desired_done(peer)
    return s


class PyClient:
    """An agent session from Python's ssl module (OpenSSL, 16 KiB records,
    no max_fragment_length)."""

    contexts = {}

    def __init__(self, port, cert, key, ca, node, resume=None):
        # A session resumes only in the context that made it.
        ctx = self.contexts.get(cert)
        if not ctx:
            ctx = ssl.create_default_context(cafile=ca)
            ctx.load_cert_chain(cert, key)
            self.contexts[cert] = ctx
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        # As the agent (libwebsockets) does: else Nagle and the delayed ACK
        # add 40 ms to the abbreviated handshake's last flight.
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s = ctx.wrap_socket(raw, server_hostname="localhost",
                                 session=resume.session if resume else None)
        agent_session(self.s, port, node)
        self.session = self.s.session
        self.reused = self.s.session_reused

    def close(self):
        self.s.close()


class OpenSSLClient:
    """An agent session from `openssl s_client` asking, as the agent does,
    for records of at most 4096 bytes (-maxfraglen 4096); resumption
    through its session file."""

    def __init__(self, port, cert, key, ca, node, resume=None):
        self.file = f"{cert}.sess"
        argv = ["openssl", "s_client", "-quiet", "-connect", f"127.0.0.1:{port}",
                "-servername", "localhost", "-cert", cert, "-key", key,
                "-CAfile", ca, "-maxfraglen", "4096", "-tls1_2"]
        argv += ["-sess_in", self.file] if resume else ["-sess_out", self.file]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        agent_session(self, port, node)
        self.reused = None

    def sendall(self, b):
        self.p.stdin.write(b)
        self.p.stdin.flush()

    def recv(self, n):
        return os.read(self.p.stdout.fileno(), n)

    def close(self):
        self.p.kill()
        self.p.wait()


def rss_kib(pid):
    return proc_status(pid, "VmRSS")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--client", choices=("python", "openssl"), default="python",
                    help="python: 16 KiB records; openssl: s_client with "
                    "-maxfraglen 4096, as the agent asks (one process each)")
    a = ap.parse_args()
    n = max(1, min(a.n, 2000))
    use_build(a.build)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 4 * n + 256)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    owner = Owner()
    try:
        c = harness.Cluster(owner, nodes=["bench-0"])
        c.start_controller()
        pid = c.controller.p.pid
        certs = []
        for i in range(n):
            certs.append(c.mkcert(f"n{i}", f"bench-{i}",
                                  uri=f"spiffe://{TRUST}/node/bench-{i}"))
        ca = os.path.join(c.dev, "ca.crt")
        client = OpenSSLClient if a.client == "openssl" else PyClient

        def open_session(i, resume=None):
            return client(c.port, certs[i][0], certs[i][1], ca, f"bench-{i}", resume)

        def resumed_metric():
            return c.metric('edgesync_controller_tls_handshakes_total{resumed="true"}')

        # Warm up: one session opened and closed, so what the first one
        # allocates for good is in the baseline.
        open_session(0).close()
        time.sleep(a.settle)
        rss0 = rss_kib(pid)
        cpu0, t0 = cpu_s(pid), time.monotonic()
        socks = [open_session(i) for i in range(n)]
        cpu1, t1 = cpu_s(pid), time.monotonic()
        time.sleep(a.settle)
        rss_n = rss_kib(pid)
        for s in socks:
            s.close()
        time.sleep(a.settle)
        rss_after = rss_kib(pid)
        print(f"sessions: {n} idle mutual-TLS agent sessions on loopback "
              f"(client: {a.client}, on the same machine)")
        print(f"controller_rss_kib{{sessions=\"0\"}} {rss0}")
        print(f"controller_rss_kib{{sessions=\"{n}\"}} {rss_n}")
        print(f"controller_rss_kib{{sessions=\"0\",after=\"disconnect\"}} {rss_after}")
        print(f"memory_per_connection_kib {(rss_n - rss0) / n:.1f}")
        print(f"memory_not_returned_kib {rss_after - rss0}")
        print(f"full_handshake_controller_cpu_ms {1000 * (cpu1 - cpu0) / n:.2f}")
        print(f"full_handshake_wall_ms {1000 * (t1 - t0) / n:.2f}", flush=True)

        # Reconnects offering the first connection's session.
        first = socks
        m0 = resumed_metric() or 0.0
        cpu2, t2 = cpu_s(pid), time.monotonic()
        socks = [open_session(i, first[i]) for i in range(n)]
        cpu3, t3 = cpu_s(pid), time.monotonic()
        if a.client == "openssl":
            after = resumed_metric()
            resumed = None if after is None else int(after - m0)
        else:
            resumed = sum(1 for s in socks if s.reused)
        for s in socks:
            s.close()
        print(f"reconnect_controller_cpu_ms {1000 * (cpu3 - cpu2) / n:.2f}")
        print(f"reconnect_wall_ms {1000 * (t3 - t2) / n:.2f}")
        print(f"reconnects_resumed {'unknown' if resumed is None else resumed}/{n}")
    finally:
        owner.run_cleanups()


if __name__ == "__main__":
    main()
