"""Block I/O collector: 64 MiB written and fsync'ed to a file
on a real block device show up in that device's latency histogram.

The bound: a request carries at most the queue's max_sectors_kb, so the
write needs at least 64 MiB / max_sectors_kb requests; ios must grow by
at least that much (other writers only add to it).
"""

import json
import os
import subprocess
import tempfile
import time
import unittest

from harness import Cluster, main, wait_for
from bpfnet_util import activity, require_root, wait_backend

SIZE = 64 << 20


def whole_disk(dev):
    """major:minor of the disk holding dev (a partition's parent), the
    device block tracepoints report; None when dev is no block device."""
    base = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    if not os.path.exists(base):
        return None
    real = os.path.realpath(base)
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    with open(os.path.join(real, "dev")) as f:
        return f.read().strip(), real


def block_dir():
    """A writable directory on a real block device."""
    for d in (tempfile.gettempdir(), "/var/tmp", os.getcwd()):
        if whole_disk(os.stat(d).st_dev):
            return d
    raise AssertionError("no writable directory on a block device "
                         "(tmp, /var/tmp, cwd all on virtual file systems)")


def inflight_map_entries(pid):
    """Entries in the blockio collector's in-flight map (`start`, a hash
    of 16384 entries; the agent has no other map of that size) of the
    agent with this pid, found through the BPF map descriptors in
    /proc/PID/fdinfo."""
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(line.rstrip("\n").split(":\t", 1)
                            for line in f if ":\t" in line)
        except OSError:
            continue
        if (info.get("map_type") in ("1", "9")  # hash, LRU hash
                and info.get("value_size") in ("8", "16")
                and info.get("max_entries") == "16384"):
            out = subprocess.run(["bpftool", "-j", "map", "dump", "id",
                                  info["map_id"]], capture_output=True,
                                 text=True, check=True).stdout
            return len(json.loads(out))
    raise AssertionError(f"agent {pid} holds no blockio in-flight map")


def device_row(cluster, devid):
    for row in activity(cluster).get("blockIO", []):
        if row["device"] == devid:
            return row
    return None


class BlockIOTest(unittest.TestCase):
    def setUp(self):
        require_root()
        self.c = Cluster(self)
        self.c.start_controller()

    def test_fsync_writes_in_histogram(self):
        try:
            d = block_dir()
            devid, sysdir = whole_disk(os.stat(d).st_dev)
            with open(os.path.join(sysdir, "queue", "max_sectors_kb")) as f:
                max_req = int(f.read()) * 1024
            want = SIZE // max_req
            self.c.start_agent(extra=["--interval", "1"])
            wait_backend(self.c, "blockio", "ebpf")
            before = (device_row(self.c, devid) or {}).get("ios", 0)

            fd, path = tempfile.mkstemp(prefix="es-blockio-", dir=d)
            self.addCleanup(os.unlink, path)
            chunk = os.urandom(1 << 20)
            try:
                for _ in range(SIZE // len(chunk)):
                    os.write(fd, chunk)
                os.fsync(fd)
            finally:
                os.close(fd)

            row = wait_for(f"{want} more ios on {devid}",
                           lambda: (lambda r: r if r and r["ios"] - before >= want else None)(
                               device_row(self.c, devid)), timeout=30)
            lat = row["latencyMicroseconds"]
            buckets = lat["buckets"]
            self.assertEqual(sum(b["count"] for b in buckets), row["ios"], row)
            les = [b["le"] for b in buckets]
            self.assertEqual(les, sorted(les))
            for le in les:
                self.assertEqual(le & (le - 1), 0, f"le {le} is not a power of 2")
            self.assertGreater(lat["sum"], 0)
            self.assertTrue(row.get("name"), row)

            # Every request that completed left the in-flight map. Discards
            # (fstrim) are the requests whose sector at completion differs
            # from the one at issue: keyed by (dev, sector), 10 fstrims left
            # about 4 entries behind for good. What may remain is what is
            # in flight at that moment: take the least of a few readings.
            pid = self.c.agents[self.c.nodes[0]].p.pid
            trims = 0
            for _ in range(30):
                r = subprocess.run(["fstrim", d], capture_output=True)
                trims += r.returncode == 0
            os.sync()
            time.sleep(1)
            left = min(inflight_map_entries(pid) for _ in range(5)
                       if time.sleep(0.3) is None)
            self.assertLessEqual(left, 1, f"{left} requests still in the "
                                 f"in-flight map after {trims} fstrims")
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e


if __name__ == "__main__":
    main()
