"""A one-member etcd of the test's own on loopback: a temporary data
directory, free ports, mutual TLS with certificates from es-mkcert (a CA,
a server certificate for 127.0.0.1, a client certificate), stopped and
removed whatever happens. Tests skip (exit 77) with the reason when the
etcd binary (Debian's etcd-server) is not installed."""

import os
import shutil
import subprocess
import tempfile
import unittest

from harness import TOOLS_DIR, Proc, free_port, wait_for

ETCD = shutil.which("etcd") or "/usr/bin/etcd"


def require_etcd():
    """Raises SkipTest naming what is missing when etcd cannot run here."""
    if not os.access(ETCD, os.X_OK):
        raise unittest.SkipTest("etcd is not installed (Debian package etcd-server; "
                                "scripts/install-deps.sh installs it)")


class Etcd:
    """One etcd member; endpoint() is its https client URL."""

    def __init__(self, test, progress_s=1, compaction=("periodic", "5m")):
        require_etcd()
        self.dir = tempfile.mkdtemp(prefix="es-it-etcd-")
        test.addCleanup(self.close)
        self.port = free_port()
        self.peer_port = free_port()
        self.progress_s = progress_s
        # What README ("Controller store settings") tells an operator: etcd
        # compacts its own history (every cursor write is a revision).
        self.compaction = compaction
        self.ca, self.ca_key = self._mkcert("ca", "test etcd CA", "--ca")
        # clientAuth too: with --client-cert-auth, etcd's JSON gateway dials
        # etcd's own gRPC port with the server certificate.
        self.server_cert, self.server_key = self._mkcert(
            "server", "etcd", "--server", "--client", "--ip", "127.0.0.1",
            "--dns", "localhost", signed=True)
        self.cert, self.key = self._mkcert("client", "edgesync-controller", "--client",
                                           signed=True)
        self.proc = None

    def _mkcert(self, name, cn, *extra, signed=False):
        cert = os.path.join(self.dir, name + ".crt")
        key = os.path.join(self.dir, name + ".key")
        argv = [os.path.join(TOOLS_DIR, "es-mkcert"), "--out-cert", cert,
                "--out-key", key, "--cn", cn] + list(extra)
        if signed:
            argv += ["--ca-cert", self.ca, "--ca-key", self.ca_key]
        subprocess.run(argv, check=True, capture_output=True, timeout=30)
        return cert, key

    def endpoint(self):
        return f"https://127.0.0.1:{self.port}"

    def start(self):
        url = f"https://127.0.0.1:{self.port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        argv = [ETCD, "--name", "m0", "--data-dir", os.path.join(self.dir, "data"),
                "--listen-client-urls", url, "--advertise-client-urls", url,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"m0={peer}",
                "--cert-file", self.server_cert, "--key-file", self.server_key,
                "--trusted-ca-file", self.ca, "--client-cert-auth",
                f"--experimental-watch-progress-notify-interval={self.progress_s}s",
                f"--auto-compaction-mode={self.compaction[0]}",
                f"--auto-compaction-retention={self.compaction[1]}",
                "--log-level", "warn"]
        self.proc = Proc("etcd", argv, os.path.join(self.dir, "etcd.log"))
        wait_for("etcd to answer", self._healthy, timeout=30)

    def _healthy(self):
        if not self.proc.alive():
            raise AssertionError("etcd exited:\n" + self.proc.output()[-3000:])
        r = subprocess.run(["etcdctl", "--endpoints", self.endpoint(),
                            "--cacert", self.ca, "--cert", self.cert, "--key", self.key,
                            "endpoint", "health"],
                           capture_output=True, text=True, timeout=10,
                           env=dict(os.environ, ETCDCTL_API="3"))
        return r.returncode == 0

    def stop(self):
        """Stops etcd with SIGTERM; it exits by that signal (-15) once its
        data is synced."""
        if self.proc and not self.proc.log.closed:
            self.proc.p.terminate()
            try:
                self.proc.p.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.p.kill()
                self.proc.p.wait()
            self.proc.log.close()
            if self.proc.p.returncode not in (0, -15):
                raise AssertionError(f"etcd exited {self.proc.p.returncode}:\n"
                                     + self.proc.output()[-3000:])

    def close(self):
        self.stop()
        if os.environ.get("ES_KEEP_TMP"):
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
