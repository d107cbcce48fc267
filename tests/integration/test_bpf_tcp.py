"""TCP collector: 50 loopback connections, each carrying a known
number of bytes, are counted with their bytes on the eBPF backend, and the
counters still move with the procfs fallback forced.

The workload runs in its own cgroup v2 child so that the per-cgroup
counters (byCgroup) hold exactly its connections, whatever else the host
does. Tolerances: a connection's bytes are read from the kernel's
tcp_sock bytes_acked / bytes_received, which also count the SYN and FIN
sequence numbers: each side may show up to 3 bytes more than the payload.
"""

from harness import Cluster, main, wait_for
from bpfnet_util import (Cgroup2Child, activity, read_to_eof, require_root, wait_backend,
                         wait_named, workload)
import unittest

N = 50
BASE, STEP = 200_000, 1_000   # connection i carries BASE + STEP*i bytes
SLACK = 3                     # bytes per side (SYN, FIN)
OPEN_BYTES = 16 << 20         # the held-open connection: more than any other test's

# Client and server in one process: each connection sends its bytes, half
# closes, the server reads to EOF and closes; prints the port and the
# byte counts the server received.
WORKLOAD = workload(r"""
import json, socket, sys, threading
n, base, step = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(128)
port = srv.getsockname()[1]
got = []
def serve():
    for _ in range(n):
        c, _ = srv.accept()
        got.append(read_to_eof(c))
        c.close()
t = threading.Thread(target=serve)
t.start()
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"x" * (base + step * i))
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    s.close()
t.join()
srv.close()
print(port)
print(json.dumps(sorted(got)))
""")

# procfs: the fallback scans /proc/net/tcp once a second, so the
# connections stay open for `hold` seconds before they close.
HOLD_WORKLOAD = r"""
import socket, sys, time
n, hold = int(sys.argv[1]), float(sys.argv[2])
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(128)
clients = [socket.create_connection(("127.0.0.1", srv.getsockname()[1])) for _ in range(n)]
servers = [srv.accept()[0] for _ in range(n)]
time.sleep(hold)
for s in servers + clients:
    s.close()
print(srv.getsockname()[1])
"""


class TcpTest(unittest.TestCase):
    def setUp(self):
        require_root()
        self.c = Cluster(self)
        self.c.start_controller()

    def fail_with_logs(self, e):
        raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def test_ebpf_counts_connections_and_bytes(self):
        try:
            self.c.start_agent(extra=["--interval", "1"])
            wait_backend(self.c, "tcp", "ebpf")
            before = wait_for("tcp activity", lambda: activity(self.c).get("tcp"))
            cg = Cgroup2Child(self)
            out = cg.run(WORKLOAD, N, BASE, STEP)
            port = int(out[0])
            sizes = [BASE + STEP * i for i in range(N)]
            self.assertEqual(__import__("json").loads(out[1]), sizes,
                             "the workload itself lost bytes")
            total = sum(sizes)

            def mine():
                t = activity(self.c).get("tcp") or {}
                for row in t.get("byCgroup", []):
                    if row["cgroupId"] == cg.id and row["closed"] >= 2 * N:
                        return t, row
                return None
            wait_for("the workload's cgroup in tcp.byCgroup", mine, timeout=30)
            tcp, row = wait_named(cg, mine, row=lambda m: m[1])

            # Exactly the workload's connections: one active and one
            # passive open each, both sides closed.
            self.assertEqual(row["opened"], N, row)
            self.assertEqual(row["accepted"], N, row)
            self.assertEqual(row["closed"], 2 * N, row)
            self.assertEqual(row.get("cgroup"), cg.rel, row)
            # Sent by the clients + the servers' nothing; received likewise.
            for k in ("bytesSent", "bytesReceived"):
                self.assertGreaterEqual(row[k], total, (k, row))
                self.assertLessEqual(row[k], total + 2 * N * SLACK, (k, row))
            # Host-wide counters include ours.
            for k, want in (("opened", N), ("accepted", N), ("closed", 2 * N)):
                self.assertGreaterEqual(tcp[k] - before[k], want, (k, before, tcp))
            self.assertIn("retransmits", tcp)

            # topConnections: the biggest recent connections are ours (the
            # 10 largest, as client and server sides), with their bytes.
            top = tcp["topConnections"]
            self.assertLessEqual(len(top), 20)
            client = [e for e in top if e["dport"] == port and e["daddr"] == "127.0.0.1"]
            server = [e for e in top if e["sport"] == port]
            self.assertGreaterEqual(len(client), 5, top)
            self.assertGreaterEqual(len(server), 5, top)
            for e in client:
                self.assertTrue(any(0 <= e["bytesSent"] - s <= SLACK for s in sizes), e)
                self.assertLessEqual(e["bytesReceived"], SLACK, e)
                self.assertFalse(e["accepted"], e)
                self.assertEqual(e.get("cgroup"), cg.rel, e)
                self.assertGreaterEqual(e["durationSeconds"], 0)
                self.assertLess(e["durationSeconds"], 60)
            for e in server:
                self.assertTrue(any(0 <= e["bytesReceived"] - s <= SLACK for s in sizes), e)
                self.assertTrue(e["accepted"], e)
            self.assertTrue(any(0 <= e["bytesSent"] - sizes[-1] <= SLACK for e in client),
                            ("the biggest connection is missing", client))
        except AssertionError as e:
            self.fail_with_logs(e)

    def test_ebpf_open_connection_has_its_source_port(self):
        """An active open enters SYN_SENT before the kernel picks its source
        port: the open connection in topConnections shows the port it got.
        The client half-closes after sending OPEN_BYTES, so both sides' byte
        counts are read at that state change (FIN_WAIT2 / CLOSE_WAIT) while
        the connection stays open, and it ranks among the biggest."""
        import socket
        import threading
        try:
            self.c.start_agent(extra=["--interval", "1"])
            wait_backend(self.c, "tcp", "ebpf")
            srv = socket.socket()
            srv.bind(("127.0.0.1", 0))
            srv.listen(1)
            self.addCleanup(srv.close)
            port = srv.getsockname()[1]
            got = []

            def serve():
                c, _ = srv.accept()
                self.addCleanup(c.close)
                got.append(read_to_eof(c))
            t = threading.Thread(target=serve, daemon=True)
            t.start()
            cli = socket.create_connection(("127.0.0.1", port))
            self.addCleanup(cli.close)
            cport = cli.getsockname()[1]
            cli.sendall(b"o" * OPEN_BYTES)
            cli.shutdown(socket.SHUT_WR)
            t.join(30)
            self.assertEqual(got, [OPEN_BYTES], "the server did not get the bytes")

            def ours():
                top = (activity(self.c).get("tcp") or {}).get("topConnections", [])
                c = [e for e in top if e["open"] and e["dport"] == port and
                     e["daddr"] == "127.0.0.1" and not e["accepted"]]
                s = [e for e in top if e["open"] and e["sport"] == port and e["accepted"]]
                return (c[0], s[0]) if c and s else None
            client, server = wait_for("the open connection in topConnections", ours,
                                      timeout=30)
            self.assertEqual(client["sport"], cport, client)
            self.assertEqual(client["saddr"], "127.0.0.1", client)
            self.assertGreaterEqual(client["bytesSent"], OPEN_BYTES, client)
            self.assertEqual(server["dport"], cport, server)
            self.assertGreaterEqual(server["bytesReceived"], OPEN_BYTES, server)
        except AssertionError as e:
            self.fail_with_logs(e)

    def test_procfs_fallback_counts_move(self):
        try:
            self.c.start_agent(extra=["--interval", "1", "--collector-backend", "procfs"])
            wait_backend(self.c, "tcp", "procfs")
            before = wait_for("tcp activity", lambda: activity(self.c).get("tcp"))
            cg = Cgroup2Child(self)
            cg.run(HOLD_WORKLOAD, N, 3)

            def moved():
                t = activity(self.c).get("tcp") or {}
                ok = (t.get("opened", 0) - before["opened"] >= N and
                      t.get("accepted", 0) - before["accepted"] >= N and
                      t.get("closed", 0) - before["closed"] >= 2 * N)
                return t if ok else None
            tcp = wait_for("procfs tcp counters to move by the workload", moved,
                           timeout=20)
            self.assertIn("states", tcp)
            self.assertNotIn("topConnections", tcp)
        except AssertionError as e:
            self.fail_with_logs(e)


if __name__ == "__main__":
    main()
