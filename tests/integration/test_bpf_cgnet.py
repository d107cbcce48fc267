"""Per-cgroup network collector (issue 3): a process placed in a new
cgroup v2 child sends 1 MiB to a loopback sink and receives 256 KiB back,
and that cgroup's counters show them, in status.activity and in the
agent's /metrics as cAdvisor's container_network_*_total{id="<path>"}
(which `promtool check metrics` accepts).

Tolerances: the cgroup_skb hooks count whole IP packets (headers
included), so the counters are at least the payload and, with loopback's
64 KiB MTU, within 10% + 64 KiB above it (headers, handshake, ACKs).
"""

import http.client
import socket
import threading
import unittest

from harness import Cluster, main, wait_for
from bpfnet_util import (Cgroup2Child, activity, read_to_eof, require_root, wait_backend,
                         wait_named, workload)
from test_metrics import promtool_problems, samples

SEND = 1 << 20
RECV = 256 << 10

WORKLOAD = workload(r"""
import socket, sys
port, send, recv = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"y" * send)
s.shutdown(socket.SHUT_WR)
got = read_to_eof(s)
s.close()
print(got)
""")


def within(value, payload):
    return payload <= value <= payload * 1.10 + 65536


class CgroupNetTest(unittest.TestCase):
    def setUp(self):
        require_root()
        self.c = Cluster(self)
        self.c.start_controller()

    def metrics(self):
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.c.agent_ports[self.c.nodes[0]], timeout=10)
        try:
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            body = r.read().decode()
            self.assertEqual(r.status, 200, body)
            return body
        finally:
            conn.close()

    def test_child_cgroup_bytes(self):
        try:
            self.c.start_agent(extra=["--interval", "1"])
            wait_backend(self.c, "cgroup-network", "ebpf")
            sink = socket.socket()
            sink.bind(("127.0.0.1", 0))
            sink.listen(1)
            self.addCleanup(sink.close)
            received = []

            def serve():
                c, _ = sink.accept()
                total = read_to_eof(c)
                c.sendall(b"z" * RECV)
                c.close()
                received.append(total)
            t = threading.Thread(target=serve, daemon=True)
            t.start()
            cg = Cgroup2Child(self)
            out = cg.run(WORKLOAD, sink.getsockname()[1], SEND, RECV)
            t.join(30)
            self.assertEqual(received, [SEND], "the sink did not get the bytes")
            self.assertEqual(int(out[0]), RECV, "the workload did not get the bytes")

            def mine():
                for row in activity(self.c).get("cgroupNetwork", []):
                    if row["cgroupId"] == cg.id and row["transmitBytes"] >= SEND \
                            and row["receiveBytes"] >= RECV:
                        return row
                return None
            wait_for("the child cgroup's counters in cgroupNetwork", mine, timeout=30)
            row = wait_named(cg, mine)
            self.assertTrue(within(row["transmitBytes"], SEND), row)
            self.assertTrue(within(row["receiveBytes"], RECV), row)
            # At most one packet per 64 KiB of payload plus ACKs and the
            # handshake; at least one.
            self.assertGreaterEqual(row["transmitPackets"], SEND // 65536)
            self.assertGreaterEqual(row["receivePackets"], RECV // 65536)
            self.assertEqual(row.get("cgroup"), cg.rel, row)
            # The agent's own cgroup is counted too: the root or its own.
            self.assertGreater(len(activity(self.c)["cgroupNetwork"]), 1)

            # /metrics: cAdvisor's families, id = the cgroup's path, at
            # least what the activity showed earlier; promtool finds nothing.
            text = self.metrics()
            self.assertEqual(promtool_problems(text), [], text)
            m = samples(text)
            series = {f"container_network_{d}_{u}_total{{id=\"{cg.rel}\"}}": (d, u)
                      for d in ("receive", "transmit") for u in ("bytes", "packets")}
            for key in series:
                self.assertIn(key, m, text)
            field = {("receive", "bytes"): "receiveBytes",
                     ("receive", "packets"): "receivePackets",
                     ("transmit", "bytes"): "transmitBytes",
                     ("transmit", "packets"): "transmitPackets"}
            for key, du in series.items():
                self.assertGreaterEqual(m[key], row[field[du]], (key, row))
            self.assertTrue(within(m[f'container_network_transmit_bytes_total{{id="{cg.rel}"}}'],
                                   SEND), text)
            self.assertTrue(within(m[f'container_network_receive_bytes_total{{id="{cg.rel}"}}'],
                                   RECV), text)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e


if __name__ == "__main__":
    main()
