#!/usr/bin/env python3
"""Uplink bytes per node per second of one real agent with its default
settings, against a real controller (the loopback harness of the
integration tests).

The agent dials a proxy in this script instead of the controller. The
proxy ends the agent's TLS with the dev controller certificate and opens
its own TLS connection to the controller with the node's certificate, so
it sees the WebSocket frames in the clear. It counts, agent to controller:

  - wire bytes: TCP payload bytes the proxy's socket received from the
    agent (TLS records included), read from the kernel (TCP_INFO
    tcpi_bytes_received);
  - frame bytes: WebSocket frames (headers included) after TLS;
  - message bytes: WebSocket message payloads, and messages.

The figures are taken over the steady-state window, from --warmup seconds
after the agent connected to the end of the run (the first snapshot and
the handshake fall before it). Figures only: nothing here passes or fails.
Run it inside the lock of the system tests (the agent loads its kernel
collectors):

  flock /tmp/es-systest.lock python3 bench/wire_bytes.py --build build
"""

import argparse
import os
import socket
import ssl
import struct
import sys
import threading
import time
import zlib

import benchlib

harness = benchlib.harness

# struct tcp_info (linux/tcp.h): tcpi_bytes_received is the u64 at 128.
TCP_INFO_BYTES_RECEIVED = 128


class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.frame_bytes = 0
        self.msg_bytes = 0
        self.msgs = 0
        self.binary_msgs = 0
        self.agent_sock = None

    def wire_bytes(self):
        s = self.agent_sock
        if s is None:
            return 0
        try:
            info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        except OSError:
            return 0
        return struct.unpack_from("<Q", info, TCP_INFO_BYTES_RECEIVED)[0]

    def snapshot(self):
        with self.lock:
            return (self.wire_bytes(), self.frame_bytes, self.msg_bytes,
                    self.msgs, self.binary_msgs)


# The preset dictionary of compressed messages (PROTOCOL.md "Compressed
# messages").
DICT = os.path.join(benchlib.HERE, "..", "proto", "deflate-dictionary.txt")


def inflate(data):
    """The text of a compressed message (a zlib stream, with the preset
    dictionary when its header names one)."""
    try:
        with open(DICT, "rb") as f:
            z = zlib.decompressobj(zdict=f.read())
        return z.decompress(data) + z.flush()
    except zlib.error as e:
        return f"(not inflated: {e})".encode()


class FrameParser:
    """Counts the WebSocket frames (RFC 6455 section 5.2) of one direction
    of a byte stream after the HTTP upgrade; with dump, writes each message
    (a compressed one inflated) as one line to that file."""

    def __init__(self, counter, dump=None):
        self.c = counter
        self.buf = b""
        self.upgraded = False
        self.msg_len = 0
        self.msg_binary = False
        self.dump = dump
        self.payload = b""

    def feed(self, data):
        self.buf += data
        if not self.upgraded:
            i = self.buf.find(b"\r\n\r\n")
            if i < 0:
                return
            self.buf = self.buf[i + 4:]
            self.upgraded = True
        while len(self.buf) >= 2:
            b0, b1 = self.buf[0], self.buf[1]
            n = b1 & 0x7F
            hl = 2
            if n == 126:
                if len(self.buf) < 4:
                    return
                n = struct.unpack_from(">H", self.buf, 2)[0]
                hl = 4
            elif n == 127:
                if len(self.buf) < 10:
                    return
                n = struct.unpack_from(">Q", self.buf, 2)[0]
                hl = 10
            if b1 & 0x80:
                hl += 4
            if len(self.buf) < hl + n:
                return
            data = self.buf[hl:hl + n]
            if b1 & 0x80:
                mask = self.buf[hl - 4:hl]
                data = bytes(x ^ mask[i % 4] for i, x in enumerate(data))
            self.buf = self.buf[hl + n:]
            opcode = b0 & 0x0F
            if self.dump and opcode in (0, 1, 2):
                self.payload += data
            with self.c.lock:
                self.c.frame_bytes += hl + n
                if opcode in (0, 1, 2):
                    if opcode != 0:
                        self.msg_binary = opcode == 2
                    self.msg_len += n
                    if b0 & 0x80 and self.dump:
                        text = inflate(self.payload) if self.msg_binary else self.payload
                        self.dump.write(f"{time.time():.1f} {self.msg_len} "
                                        f"{text.decode('utf-8', 'replace')}\n")
                        self.dump.flush()
                        self.payload = b""
                    if b0 & 0x80:
                        self.c.msg_bytes += self.msg_len
                        self.c.msgs += 1
                        self.c.binary_msgs += 1 if self.msg_binary else 0
                        self.msg_len = 0


def pump(src, dst, parser):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if parser:
                parser.feed(data)
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(ls, cluster, node, counter, stop, dump):
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(os.path.join(cluster.dev, "controller.crt"),
                         os.path.join(cluster.dev, "controller.key"))
    sctx.load_verify_locations(os.path.join(cluster.dev, "ca.crt"))
    sctx.verify_mode = ssl.CERT_REQUIRED
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.load_verify_locations(os.path.join(cluster.dev, "ca.crt"))
    cctx.load_cert_chain(os.path.join(cluster.dev, "nodes", f"{node}.crt"),
                         os.path.join(cluster.dev, "nodes", f"{node}.key"))
    ls.settimeout(1.0)
    while not stop.is_set():
        try:
            raw, _ = ls.accept()
        except socket.timeout:
            continue
        try:
            a = sctx.wrap_socket(raw, server_side=True)
            up = cctx.wrap_socket(socket.create_connection(("127.0.0.1", cluster.port)),
                                  server_hostname="localhost")
        except (OSError, ssl.SSLError) as e:
            print(f"proxy: connection failed: {e}", file=sys.stderr)
            raw.close()
            continue
        counter.agent_sock = a
        threading.Thread(target=pump, args=(a, up, FrameParser(counter, dump)),
                         daemon=True).start()
        threading.Thread(target=pump, args=(up, a, None), daemon=True).start()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="build tree (default: build)")
    ap.add_argument("--seconds", type=float, default=180.0,
                    help="how long the agent runs (default 180)")
    ap.add_argument("--warmup", type=float, default=30.0,
                    help="seconds after the first connection left out (default 30)")
    ap.add_argument("--agent-arg", action="append", default=[],
                    help="an extra agent flag (repeatable), e.g. "
                         "--agent-arg=--usage-report-interval=10")
    ap.add_argument("--dump", help="write every uplink message (inflated) to this file")
    args = ap.parse_args()
    dump = open(args.dump, "w") if args.dump else None
    benchlib.use_build(args.build)
    owner = benchlib.Owner()
    stop = threading.Event()
    try:
        cluster = harness.Cluster(owner)
        node = cluster.nodes[0]
        cluster.start_controller()
        ls = socket.create_server(("127.0.0.1", 0))
        pport = ls.getsockname()[1]
        counter = Counter()
        threading.Thread(target=serve, args=(ls, cluster, node, counter, stop, dump),
                         daemon=True).start()
        cluster.start_agent(extra=[f"--controller-url=wss://localhost:{pport}"]
                            + args.agent_arg)
        harness.wait_for("the agent's first report", lambda: counter.msgs >= 2,
                         timeout=60)
        t0 = time.monotonic()
        time.sleep(args.warmup)
        w0, f0, m0, n0, b0 = counter.snapshot()
        t1 = time.monotonic()
        time.sleep(max(1.0, args.seconds - args.warmup))
        w1, f1, m1, n1, b1 = counter.snapshot()
        t2 = time.monotonic()
        win = t2 - t1
        print(f"wire_bytes: node {node}, agent defaults"
              f"{' + ' + ' '.join(args.agent_arg) if args.agent_arg else ''}, "
              f"window {win:.0f} s after {t1 - t0:.0f} s of warm-up "
              "(agent, controller and this proxy on one host)")
        print(f"  uplink wire bytes (TLS records, TCP payload): {w1 - w0} "
              f"= {(w1 - w0) / win:.1f} B/s per node")
        print(f"  uplink WebSocket frame bytes:                 {f1 - f0} "
              f"= {(f1 - f0) / win:.1f} B/s")
        print(f"  uplink message payload bytes:                 {m1 - m0} "
              f"= {(m1 - m0) / win:.1f} B/s in {n1 - n0} messages "
              f"({b1 - b0} binary)")
    finally:
        stop.set()
        owner.run_cleanups()


if __name__ == "__main__":
    main()
