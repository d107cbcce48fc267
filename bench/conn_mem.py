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

The sessions are opened one after another by this process (Python's ssl
module, not the agent) on loopback, so the figures are the controller's;
the client shares the machine. N is bounded (at most 2000) and the open
file limit is raised for it. Run inside the system-test lock:

  flock /tmp/es-systest.lock bench/conn_mem.py [--build DIR] [-n N]

Give --build the tree of an older controller to measure "before" (it must
accept the same flags; nothing new is passed).
"""

import argparse
import base64
import os
import resource
import socket
import ssl
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


def session(port, ctx, node, tls_session=None):
    """One agent session up to its desired sync. Returns the TLS socket."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=30)
    s = ctx.wrap_socket(raw, server_hostname="localhost", session=tls_session)
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


def rss_kib(pid):
    return proc_status(pid, "VmRSS")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--settle", type=float, default=3.0)
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
        ctxs = []
        for cert, key in certs:
            ctx = ssl.create_default_context(cafile=os.path.join(c.dev, "ca.crt"))
            ctx.load_cert_chain(cert, key)
            ctxs.append(ctx)
        # Warm up: one session opened and closed, so what the first one
        # allocates for good is in the baseline.
        session(c.port, ctxs[0], "bench-0").close()
        time.sleep(a.settle)
        rss0 = rss_kib(pid)
        cpu0, t0 = cpu_s(pid), time.monotonic()
        socks = [session(c.port, ctxs[i], f"bench-{i}") for i in range(n)]
        cpu1, t1 = cpu_s(pid), time.monotonic()
        time.sleep(a.settle)
        rss_n = rss_kib(pid)
        tickets = [s.session for s in socks]
        for s in socks:
            s.close()
        time.sleep(a.settle)
        rss_after = rss_kib(pid)
        # Reconnects offering the first connection's session.
        cpu2, t2 = cpu_s(pid), time.monotonic()
        socks = [session(c.port, ctxs[i], f"bench-{i}", tickets[i]) for i in range(n)]
        cpu3, t3 = cpu_s(pid), time.monotonic()
        resumed = sum(1 for s in socks if s.session_reused)
        for s in socks:
            s.close()

        print(f"sessions: {n} idle mutual-TLS agent sessions on loopback "
              f"(client: this Python process, same machine)")
        print(f"controller_rss_kib{{sessions=\"0\"}} {rss0}")
        print(f"controller_rss_kib{{sessions=\"{n}\"}} {rss_n}")
        print(f"controller_rss_kib{{sessions=\"0\",after=\"disconnect\"}} {rss_after}")
        print(f"memory_per_connection_kib {(rss_n - rss0) / n:.1f}")
        print(f"memory_not_returned_kib {rss_after - rss0}")
        print(f"full_handshake_controller_cpu_ms {1000 * (cpu1 - cpu0) / n:.2f}")
        print(f"full_handshake_wall_ms {1000 * (t1 - t0) / n:.2f}")
        print(f"reconnect_controller_cpu_ms {1000 * (cpu3 - cpu2) / n:.2f}")
        print(f"reconnect_wall_ms {1000 * (t3 - t2) / n:.2f}")
        print(f"reconnects_resumed {resumed}/{n}")
    finally:
        owner.run_cleanups()


if __name__ == "__main__":
    main()
