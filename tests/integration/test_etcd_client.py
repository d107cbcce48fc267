"""The controller's etcd client (controller/etcd/) against a real
one-member etcd on loopback with mutual TLS: put, range, compare-and-swap
transactions, a lease that expires, watches with history, progress and a
compacted start revision, failover past a dead endpoint and the error
that names every endpoint when none answers. The checks themselves are
in etcd_client_it.c; this file starts etcd and runs it."""

import os
import subprocess
import unittest

from etcd_util import Etcd
from harness import BIN_DIR, free_port, main

DRIVER = os.path.join(BIN_DIR, "etcd_client_it")


class EtcdClientTest(unittest.TestCase):
    def test_client_against_real_etcd(self):
        etcd = Etcd(self)
        etcd.start()
        dead = f"https://127.0.0.1:{free_port()}"
        r = subprocess.run([DRIVER, f"{dead},{etcd.endpoint()}", etcd.cert, etcd.key,
                            etcd.ca, dead],
                           capture_output=True, text=True, timeout=180)
        print(r.stdout)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("all passed", r.stdout)


if __name__ == "__main__":
    main()
