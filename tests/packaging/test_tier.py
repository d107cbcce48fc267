#!/usr/bin/env python3
"""The README's "A three-controller tier on one machine", run as written:
its shell blocks are taken from README.md, their loopback ports moved by
one offset to free ones and /tmp/es-tier to a scratch directory, and run
with this build's programs first on PATH. Then: each agent is served by
the controller its node name's rendezvous order of the list starts at
(es-urlorder, controller-order = node), etcd holds one session per
node naming that controller's id, an object applied on controller b
reaches all three agents, /metrics counts etcd requests with etcd_up 1,
and /readyz (the join listener) turns 503 while etcd is stopped
(SIGSTOP) and 200 again once it runs. Skipped when etcd (Debian's
etcd-server, etcdctl from etcd-client) or curl is not installed. Touches
loopback ports: run it inside the test lock (docs/HACKING.md)."""

import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.request

import pkgtest

HEADING = "#### A three-controller tier on one machine"
# Every fixed port the README's commands name or imply (join-listen is
# listen + 2): etcd's client and peer ports, the controllers' listen,
# admin-listen and join ports, the agents' local endpoints.
PORTS = [2379, 2380, 7443, 7444, 7445, 7453, 7454, 7455, 7463, 7464, 7465,
         9481, 9482, 9483]


def readme_blocks():
    """The ```sh blocks of the tier section, in order."""
    with open(os.path.join(pkgtest.SOURCE_DIR, "README.md")) as f:
        text = f.read()
    start = text.index(HEADING)
    end = text.find("\n#", start + len(HEADING))
    section = text[start:end if end > 0 else len(text)]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def port_free(p):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            return False
    return True


def pick_offset():
    """An offset that moves every port of PORTS to a free one."""
    for off in range(31000, 50000, 211):
        if all(port_free(p + off) for p in PORTS):
            return off
    raise AssertionError("no free loopback ports for the tier")


def running(pid):
    """pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return not f.read().rsplit(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return False


def wait_for(what, fn, timeout=60):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if fn():
                return
        except (OSError, ValueError, KeyError) as e:
            last = e
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what} (last error: {last})")


class TestTier(unittest.TestCase):
    def setUp(self):
        for tool in ("etcd", "etcdctl", "curl"):
            if not shutil.which(tool):
                raise unittest.SkipTest(f"{tool} is not installed (etcd-server, etcd-client, "
                                        "curl; scripts/install-deps.sh)")
        self.blocks = readme_blocks()
        self.assertEqual(len(self.blocks), 3, "the section has its three sh blocks")
        self.dir = tempfile.mkdtemp(prefix="es-tier-")
        self.addCleanup(self.cleanup)
        self.pids = []
        self.off = pick_offset()
        self.env = dict(os.environ, PATH=pkgtest.BIN_DIR + ":" + os.environ["PATH"],
                        ETCDCTL_API="3")
        self.env.pop("EDGESYNCCTL_CONFIG", None)

    def cleanup(self):
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 20
        for pid in self.pids:
            while time.monotonic() < deadline and running(pid):
                time.sleep(0.1)
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if os.environ.get("ES_KEEP_TMP"):
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def port(self, p):
        return p + self.off

    def moved(self, block):
        """block with its ports moved and its directory the scratch one."""
        out = re.sub(r"\b(%s)\b" % "|".join(map(str, PORTS)),
                     lambda m: str(int(m.group(1)) + self.off), block)
        return out.replace("/tmp/es-tier", self.dir)

    def sh(self, block, timeout=120):
        r = subprocess.run(["bash", "-e", "-c", block], cwd=self.dir, env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        self.assertEqual(r.returncode, 0, f"{block}\nexited {r.returncode}:\n{r.stdout}\n"
                         f"{r.stderr}\n{self.logs()}")
        return r.stdout

    def logs(self):
        out = []
        for n in ("etcd", "a", "b", "c", "n1", "n2", "n3"):
            p = os.path.join(self.dir, n + ".log")
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    out.append(f"--- {n}.log\n" + f.read()[-2000:])
        return "\n".join(out)

    def start(self):
        """The first block, in a shell that then writes its jobs' pids (the
        processes `kill $(jobs -p)` would stop)."""
        pids = os.path.join(self.dir, "jobs.pids")
        # Its own process group: the programs outlive this shell and are
        # stopped by pid in cleanup.
        p = subprocess.Popen(["bash", "-e", "-c", self.moved(self.blocks[0]) +
                              f"\njobs -p >{pids}\n"], cwd=self.dir, env=self.env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        out, _ = p.communicate(timeout=120)
        if os.path.exists(pids):
            with open(pids) as f:
                self.pids = [int(x) for x in f.read().split()]
        self.assertEqual(p.returncode, 0, f"the start block exited {p.returncode}:\n{out}\n"
                         + self.logs())
        self.assertEqual(len(self.pids), 7, "etcd, three controllers, three agents")

    def agent(self, n):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port(9480 + n)}/v1/state",
                                    timeout=5) as r:
            return json.load(r)

    def readyz(self, join_port):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # as kubelet's probes
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{self.port(join_port)}/readyz",
                                        context=ctx, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def first_controller(self, node, ctl_urls):
        """The URL of ctl_urls node dials first (controller-order = node)."""
        r = subprocess.run([os.path.join(pkgtest.BIN_DIR, "es-urlorder"), node] + ctl_urls,
                           capture_output=True, text=True, check=True)
        return r.stdout.split()[0]

    def test_tier(self):
        self.start()
        names = {f"wss://127.0.0.1:{self.port(p)}": c
                 for p, c in ((7443, "a"), (7453, "b"), (7463, "c"))}
        first = {n: self.first_controller(f"n{n}", list(names)) for n in (1, 2, 3)}
        for n, url in first.items():
            wait_for(f"agent n{n} connected to its first controller",
                     lambda: self.agent(n)["sync"]["connected"] and
                     self.agent(n)["sync"]["url"] == url)
        for jp in (7445, 7455, 7465):
            wait_for(f"/readyz 200 on {jp}", lambda: self.readyz(jp)[0] == 200)

        out = self.sh(self.moved(self.blocks[1]))
        print(out)
        # The agents say where they are connected.
        for n, url in first.items():
            self.assertRegex(out, rf"NODE +n{n}\nCONTROLLER +{re.escape(url)}\n")
        # etcd: one session key per node, naming the controller that serves
        # it, whose id that controller logged.
        ids = {}
        for name in ("a", "b", "c"):
            with open(os.path.join(self.dir, name + ".log")) as f:
                m = re.search(r'msg="etcd lease for node sessions" .*controller=(\S+)', f.read())
            self.assertIsNotNone(m, f"{name}.log names its controller id")
            ids[name] = m.group(1)
        sessions = dict(re.findall(r"^/edgesync/sessions/(n\d)\n(\S+)$", out, re.M))
        self.assertEqual(sessions, {f"n{n}": ids[names[url]] for n, url in first.items()},
                         out)
        # The apply on b reaches every agent.
        for n in first:
            wait_for(f"n{n} holds the CollectorConfig applied on b",
                     lambda: any(d["metadata"]["name"] == "tier"
                                 for d in self.agent(n).get("desired", [])))
        self.assertEqual(out.count("ready\n"), 3, out)
        self.assertRegex(out, r'edgesync_controller_etcd_requests_total\{op="txn",result="ok"\} [1-9]')
        self.assertRegex(out, r'edgesync_controller_etcd_requests_total\{op="watch",result="ok"\} [1-9]')
        self.assertRegex(out, r'edgesync_controller_etcd_request_duration_seconds_count\{op="lease"\} [1-9]')
        self.assertIn("\nedgesync_controller_etcd_up 1\n", out)

        # etcd stops answering: every controller is not ready; then it is.
        etcd_pid = self.pids[0]
        with open(f"/proc/{etcd_pid}/cmdline") as f:
            self.assertIn("etcd", f.read().split("\0")[0])
        os.kill(etcd_pid, signal.SIGSTOP)
        try:
            for jp in (7445, 7455, 7465):
                wait_for(f"/readyz 503 on {jp} while etcd is stopped",
                         lambda: self.readyz(jp) == (503, "not ready: etcd does not answer\n"),
                         timeout=40)
        finally:
            os.kill(etcd_pid, signal.SIGCONT)
        for jp in (7445, 7455, 7465):
            wait_for(f"/readyz 200 on {jp} after etcd is back",
                     lambda: self.readyz(jp) == (200, "ready\n"), timeout=40)


if __name__ == "__main__":
    pkgtest.main()
