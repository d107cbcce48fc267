"""Per-cgroup network collector: a process placed in a new
cgroup v2 child sends 1 MiB to a loopback sink and receives 256 KiB back,
and that cgroup's counters show them, in status.activity and in the
agent's /metrics as cAdvisor's container_network_*_total{id="<path>"}
(which `promtool check metrics` accepts).

Tolerances: the cgroup_skb hooks count whole IP packets (headers
included), so the counters are at least the payload and, with loopback's
64 KiB MTU, within 10% + 64 KiB above it (headers, handshake, ACKs).
"""

import http.client
import os
import socket
import subprocess
import tempfile
import threading
import unittest

from harness import BIN_DIR, Cluster, main, wait_for
from bpfnet_util import (Cgroup2Child, activity, collector, read_to_eof, require_root,
                         wait_backend, wait_named, workload)
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


class CgroupRootTest(unittest.TestCase):
    """The cgroup-root setting (agent/host/cgroot.h): the agent works on the
    cgroup v2 hierarchy it names (in a container, the host's /sys/fs/cgroup
    mounted into it) instead of the one it finds, and says so in `check`;
    a directory that is not cgroup v2 makes cgroup-network unavailable
    with a reason naming the setting."""

    def setUp(self):
        require_root()
        self.mnt = tempfile.mkdtemp(prefix="es-cgroot-")
        subprocess.run(["mount", "-t", "cgroup2", "none", self.mnt], check=True)
        self.addCleanup(os.rmdir, self.mnt)
        self.addCleanup(subprocess.run, ["umount", self.mnt])

    def check(self, *flags):
        r = subprocess.run([os.path.join(BIN_DIR, "edgesync-agent"), "check"] + list(flags),
                           capture_output=True, text=True, timeout=120)
        return {line.split()[0]: line.split(None, 2)[1:] for line in r.stdout.splitlines()
                if line.strip()}

    def test_check_and_run_use_the_setting(self):
        rows = self.check("--cgroup-root", self.mnt)
        self.assertEqual(rows["kernel-cgroup-v2"], ["ok", self.mnt], rows)
        self.assertEqual(rows["collector/cgroup-network"][:2], ["ok", "ebpf"], rows)
        rows = self.check("--cgroup-root", "/tmp", "--collector-backend", "procfs")
        self.assertEqual(rows["cgroup-v2"][0], "missing", rows)
        self.assertIn("/tmp is not a cgroup v2 file system", rows["cgroup-v2"][1])
        self.assertTrue(rows["collector/process"][1].startswith("procfs"), rows)

        c = Cluster(self)
        c.start_controller()
        c.start_agent(extra=["--interval", "1", "--cgroup-root", "/tmp"])
        e = wait_for("cgroup-network reported", lambda: collector(c, "cgroup-network"))
        self.assertEqual(e["backend"], "unavailable", e)
        self.assertIn("cgroup-root: /tmp is not a cgroup v2 file system", e["reason"])


if __name__ == "__main__":
    main()
