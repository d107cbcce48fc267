"""Integration-test harness: runs the real edgesync binaries on loopback.

Every test starts its own controller in development mode (a throwaway CA
and certificates in a temporary state directory), its own agents and free
loopback ports, and stops everything it started, whatever happens.

Binaries come from ES_BIN_DIR (set by CTest). Only the Python standard
library is used, so the tests run on any Debian 12 python3.
"""

import base64
import hashlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# main(): the entry point of every test file (tests/ctest_main.py): exit 0
# when its tests passed (some may have skipped), 77 when every one skipped
# (CTest: Not Run), 1 on a failure.
from ctest_main import main  # noqa: E402,F401

BIN_DIR = os.environ.get("ES_BIN_DIR", os.path.join(os.getcwd(), "bin"))
TOOLS_DIR = os.environ.get("ES_TOOLS_DIR", BIN_DIR)
API = "/apis/edgesync.io/v1alpha1"


_ports_given = set()
_rng = random.SystemRandom()


def _ephemeral_range():
    """The kernel's range of local ports for outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now, that this
    process has not handed out before (the kernel may give the same free
    port to two binds in a row while neither is listening yet), and that is
    outside the kernel's range for outgoing connections: a server the test
    stops and starts again (an etcd member, a controller) must find its
    port free, and any connection's local port could take one from that
    range meanwhile."""
    lo, hi = _ephemeral_range()
    low = (10000, lo - 1) if lo - 1 - 10000 >= 2000 else (hi + 1, 65535)
    for _ in range(1000):
        port = _rng.randint(*low)
        if port in _ports_given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ports_given.add(port)
        return port
    raise RuntimeError(f"no free TCP port in {low[0]}-{low[1]}")


def wait_for(what, pred, timeout=30.0, interval=0.2):
    """Polls pred() until it returns a true value, which is returned.

    Fails the test with `what` in the message after `timeout` seconds.
    Exceptions raised by pred count as "not yet" and the last one is shown.
    """
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - shown on timeout
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                         + (f" (last error: {last!r})" if last else ""))


def host_node_name():
    """This host's name as the agent uses it by default."""
    return socket.gethostname().split(".")[0].lower()


def read_text(path):
    """The whole text file at path."""
    with open(path) as f:
        return f.read()


def cert_serial(path):
    """The serial of the PEM certificate at path, in lower-case hex as
    `openssl x509 -serial` prints it."""
    out = subprocess.run(["openssl", "x509", "-noout", "-serial", "-in", path],
                         capture_output=True, text=True, check=True).stdout
    return out.strip().split("=", 1)[1].lower()


def meminfo_total_bytes():
    """This host's MemTotal from /proc/meminfo, in bytes (the file says kB,
    meaning KiB): what the agent reports as capacity.memoryBytes."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal in /proc/meminfo")


def https_json(host, port, ctx, method, path, body=None, timeout=15):
    """One HTTPS request to host:port with the SSL context ctx, body (when
    not None) sent as JSON. Returns (status, parsed JSON or text)."""
    conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        raw = r.read().decode()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw
    finally:
        conn.close()


class Proc:
    """A started program whose output goes to a log file."""

    def __init__(self, name, argv, log_path, env=None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.log = open(log_path, "ab")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=full_env)

    def alive(self):
        return self.p.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Stops the program. Stopped with SIGTERM, it must exit 0 within
        timeout (a clean shutdown; under the sanitizers also no leak and no
        error report), else the test fails with the end of its log."""
        was_running = self.p.poll() is None
        if was_running:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                self.log.close()
                raise AssertionError(f"{self.name} did not stop within {timeout}s "
                                     f"of {sig!r}:\n" + self.output()[-4000:])
        self.log.close()
        if sig == signal.SIGTERM and self.p.returncode != 0:
            raise AssertionError(f"{self.name} exited {self.p.returncode}"
                                 + (" after SIGTERM" if was_running else "")
                                 + ":\n" + self.output()[-6000:])
        return self.p.returncode

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


class ClassScope:
    """Stands in for the TestCase of a Cluster made in setUpClass: the
    class's tearDownClass closes the cluster, so no cleanup is kept here."""

    def addCleanup(self, *args, **kw):
        pass


class Cluster:
    """A controller in --dev mode plus agents, in one temporary directory."""

    def __init__(self, test, nodes=None):
        self.test = test
        self.dir = tempfile.mkdtemp(prefix="es-it-")
        self.state = os.path.join(self.dir, "controller")
        self.dev = os.path.join(self.state, "dev")
        self.port = free_port()
        self.admin_port = free_port()
        self.join_port = free_port()
        self.nodes = list(nodes or [host_node_name()])
        self.controller = None
        self.agents = {}
        self.agent_ports = {}
        self.procs = []
        test.addCleanup(self.close)

    # -- processes ---------------------------------------------------------

    def start_controller(self, extra=()):
        argv = [os.path.join(BIN_DIR, "edgesync-controller"), "run", "--dev",
                "--state-dir", self.state,
                "--listen", f"127.0.0.1:{self.port}",
                "--admin-listen", f"127.0.0.1:{self.admin_port}",
                "--log-level", "debug"]
        if "--join-listen" not in extra:
            # --dev signs joins: give its join listener a free port of its
            # own rather than the one beside listen (port + 2).
            argv += ["--join-listen", f"127.0.0.1:{self.join_port}"]
        for n in self.nodes:
            argv += ["--dev-node", n]
        argv += list(extra)
        self.controller = Proc("controller", argv,
                               os.path.join(self.dir, "controller.log"))
        self.procs.append(self.controller)
        wait_for("controller admin API", lambda: self._listening(self.admin_port)
                 and self._alive_or_fail(self.controller))
        wait_for("controller agent listener", lambda: self._listening(self.port))
        return self.controller

    def start_peer_controller(self, name, port, admin_port, extra=()):
        """Another controller beside the first: its own state directory
        (<dir>/<name>) and ports, the first one's dev certificates (the dev
        CA, a certificate for localhost and 127.0.0.1). Returns its Proc."""
        argv = [os.path.join(BIN_DIR, "edgesync-controller"), "run",
                "--state-dir", os.path.join(self.dir, name),
                "--listen", f"127.0.0.1:{port}",
                "--admin-listen", f"127.0.0.1:{admin_port}",
                "--cert", os.path.join(self.dev, "controller.crt"),
                "--key", os.path.join(self.dev, "controller.key"),
                "--client-ca", os.path.join(self.dev, "ca.crt"),
                "--log-level", "debug"] + list(extra)
        p = Proc(name, argv, os.path.join(self.dir, f"{name}.log"))
        self.procs.append(p)
        wait_for(name, lambda: self._alive_or_fail(p) and self._listening(port)
                 and self._listening(admin_port))
        return p

    def stop_controller(self):
        rc = self.controller.stop()
        return rc

    def agent_conf(self, node):
        return os.path.join(self.dev, f"agent-{node}.conf")

    def start_agent(self, node=None, extra=(), env=None, state_dir=None, binary=None,
                    controller_order="listed"):
        """Starts an agent for node (default the first) with BIN_DIR's
        edgesync-agent, or the one binary names (another build's path, or
        a list: an emulator command and the binary it runs).
        controller_order is its controller-order: "listed" by default, so
        that a test giving several controller-url knows the one dialled
        first and next; "node" (the agent's default) for a test of the
        rendezvous order; None leaves the setting out."""
        node = node or self.nodes[0]
        port = self.agent_ports.get(node) or free_port()
        self.agent_ports[node] = port
        state_dir = state_dir or os.path.join(self.dir, f"agent-{node}")
        if isinstance(binary, (list, tuple)):
            prog = list(binary)
        else:
            prog = [binary or os.path.join(BIN_DIR, "edgesync-agent")]
        argv = prog + ["run",
                       "--config", self.agent_conf(node),
                       "--node-name", node,
                       "--state-dir", state_dir,
                       "--http-listen", f"127.0.0.1:{port}",
                       "--log-level", "debug"]
        if controller_order:
            argv += ["--controller-order", controller_order]
        argv += list(extra)
        p = Proc(f"agent-{node}", argv, os.path.join(self.dir, f"agent-{node}.log"),
                 env=env)
        self.agents[node] = p
        self.procs.append(p)
        wait_for(f"agent {node} local endpoint",
                 lambda: self._alive_or_fail(p) and self._listening(port))
        return p

    def _alive_or_fail(self, p):
        if not p.alive():
            raise AssertionError(f"{p.name} exited with {p.p.returncode}:\n"
                                 + p.output()[-4000:])
        return True

    @staticmethod
    def _listening(port):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    def close(self):
        """Stops every program still running; fails when one did not shut
        down cleanly."""
        failures = []
        for p in self.procs:
            if p.log.closed:
                continue
            try:
                p.stop()
            except AssertionError as e:
                failures.append(str(e))
        if os.environ.get("ES_KEEP_TMP") or failures:
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        if failures:
            raise AssertionError("\n".join(failures))

    def logs(self):
        out = []
        for p in self.procs:
            try:
                out.append(f"==== {p.name} ({p.log_path})\n{p.output()[-6000:]}")
            except OSError:
                pass
        return "\n".join(out)

    # -- clients -----------------------------------------------------------

    def ctl(self, *args, check=True, stdin=None):
        """Runs edgesyncctl with the dev admin credentials; returns the
        CompletedProcess (text). check=True fails the test on non-zero."""
        argv = [os.path.join(BIN_DIR, "edgesyncctl"),
                "--config", os.path.join(self.dev, "edgesyncctl.conf")] + list(args)
        r = subprocess.run(argv, capture_output=True, text=True, input=stdin,
                           timeout=60)
        if check and r.returncode != 0:
            raise AssertionError(f"edgesyncctl {' '.join(args)} exited "
                                 f"{r.returncode}:\n{r.stdout}\n{r.stderr}")
        return r

    def ctl_json(self, *args):
        return json.loads(self.ctl(*args, "-o", "json").stdout)

    def admin_ssl(self, cert=None, key=None):
        ctx = ssl.create_default_context(cafile=os.path.join(self.dev, "ca.crt"))
        ctx.load_cert_chain(cert or os.path.join(self.dev, "admin.crt"),
                            key or os.path.join(self.dev, "admin.key"))
        return ctx

    def admin(self, method, path, body=None, ctx=None, timeout=15):
        """One admin API request with the dev admin certificate (timeout:
        seconds to wait for the answer). Returns (status, parsed JSON or
        text)."""
        return https_json("localhost", self.admin_port, ctx or self.admin_ssl(),
                          method, path, body, timeout=timeout)

    def metric(self, sample):
        """The value of one sample (`name{labels}` as exposed) of the
        controller's /metrics, or None when it has no such sample."""
        conn = http.client.HTTPSConnection("localhost", self.admin_port,
                                           context=self.admin_ssl(), timeout=10)
        try:
            conn.request("GET", "/metrics")
            body = conn.getresponse().read().decode()
        finally:
            conn.close()
        for line in body.splitlines():
            if line.startswith(sample + " "):
                return float(line.split()[-1])
        return None

    def node(self, name=None):
        st, body = self.admin("GET", f"{API}/nodes/{name or self.nodes[0]}")
        return body if st == 200 else None

    def reports(self, name=None, limit=10000):
        st, body = self.admin("GET", f"{API}/nodes/{name or self.nodes[0]}/reports"
                              f"?limit={limit}")
        if st != 200:
            raise AssertionError(f"reports: HTTP {st}: {body}")
        return body["items"] if isinstance(body, dict) else body

    def agent_state(self, node=None):
        port = self.agent_ports[node or self.nodes[0]]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", "/v1/state")
            r = conn.getresponse()
            return json.loads(r.read().decode())
        finally:
            conn.close()

    def held(self, node=None):
        """{name: (uid, resourceVersion)} of the objects node's agent holds
        (its /v1/state), None when its endpoint does not answer."""
        try:
            st = self.agent_state(node)
        except OSError:
            return None
        return {d["metadata"]["name"]: (d["metadata"]["uid"],
                                        d["metadata"]["resourceVersion"])
                for d in st.get("desired", [])}

    def wait_held(self, node, want, what, timeout=60):
        """Waits until held(node) == want; the failure shows both and the logs."""
        try:
            wait_for(what, lambda: self.held(node) == want, timeout=timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}: held {self.held(node)}, want {want}\n"
                                 f"{self.logs()}") from e

    def mkcert(self, out, cn, uri=None, dns=(), ca=True, not_before=None,
               not_after=None, ca_cert=None, ca_key=None, client=True,
               server=False, is_ca=False):
        """Issues a certificate with es-mkcert; by default signed by the dev
        CA. Returns (cert path, key path)."""
        cert, key = os.path.join(self.dir, out + ".crt"), os.path.join(self.dir, out + ".key")
        argv = [os.path.join(TOOLS_DIR, "es-mkcert"), "--out-cert", cert,
                "--out-key", key, "--cn", cn]
        if uri:
            argv += ["--uri", uri]
        for d in dns:
            argv += ["--dns", d]
        if client:
            argv.append("--client")
        if server:
            argv.append("--server")
        if is_ca:
            argv.append("--ca")
        if ca:
            argv += ["--ca-cert", ca_cert or os.path.join(self.dev, "ca.crt"),
                     "--ca-key", ca_key or os.path.join(self.dev, "ca.key")]
        if not_before:
            argv += ["--not-before", not_before]
        if not_after:
            argv += ["--not-after", not_after]
        subprocess.run(argv, check=True, capture_output=True, timeout=30)
        return cert, key

    def node_cert(self, node):
        return (os.path.join(self.dev, "nodes", f"{node}.crt"),
                os.path.join(self.dev, "nodes", f"{node}.key"))

    def ws(self, cert=None, key=None, **kw):
        """A raw protocol client (WebSocket over TLS) to the agent listener."""
        return WSClient("127.0.0.1", self.port, os.path.join(self.dev, "ca.crt"),
                        cert, key, **kw)


class WSRefused(Exception):
    """The TLS handshake or the WebSocket upgrade was refused."""


class WSPeer:
    """One end of an RFC 6455 connection over TLS (self.s), for hand-made
    (hostile) frames: a client masks what it sends, a server does not."""

    masked = True

    def __init__(self, sock, buf=b""):
        self.s = sock
        self.buf = buf

    def send_frame(self, payload, opcode=1, fin=True):
        if isinstance(payload, str):
            payload = payload.encode()
        b0 = (0x80 if fin else 0) | opcode
        n = len(payload)
        bit = 0x80 if self.masked else 0
        if n < 126:
            hdr = struct.pack("!BB", b0, bit | n)
        elif n < 65536:
            hdr = struct.pack("!BBH", b0, bit | 126, n)
        else:
            hdr = struct.pack("!BBQ", b0, bit | 127, n)
        if not self.masked:
            self.s.sendall(hdr + payload)
            return
        mask = os.urandom(4)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) \
            if n < 65536 else _mask_fast(payload, mask)
        self.s.sendall(hdr + mask + body)

    def send_json(self, obj):
        self.send_frame(json.dumps(obj))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        """Returns ("text", dict), ("close", code, reason) or raises EOFError."""
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = _mask_fast(payload, mask)
            op = b0 & 0x0F
            if op == 8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                return ("close", code, payload[2:].decode("utf-8", "replace"))
            if op in (9, 10):
                continue
            msg += payload
            if b0 & 0x80:
                return ("text", json.loads(msg.decode()))

    def recv_until_close(self, limit=50):
        """Reads messages until the close frame or EOF. Returns
        (list of text messages, close code or None)."""
        msgs = []
        for _ in range(limit):
            try:
                m = self.recv()
            except (EOFError, OSError, ssl.SSLError):
                return msgs, None
            if m[0] == "close":
                return msgs, m[1]
            msgs.append(m[1])
        return msgs, None

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class WSClient(WSPeer):
    """A minimal RFC 6455 client for sending hand-made (hostile) frames."""

    def __init__(self, host, port, ca, cert=None, key=None,
                 server_hostname="localhost", path="/v1/sync",
                 protocol="edgesync.v1", timeout=15):
        ctx = ssl.create_default_context(cafile=ca)
        if cert:
            ctx.load_cert_chain(cert, key)
        raw = socket.create_connection((host, port), timeout=timeout)
        try:
            s = ctx.wrap_socket(raw, server_hostname=server_hostname)
        except (ssl.SSLError, OSError) as e:
            raw.close()
            raise WSRefused(f"TLS handshake: {e}") from e
        k = base64.b64encode(os.urandom(16)).decode()
        req = (f"GET {path} HTTP/1.1\r\nHost: {server_hostname}:{port}\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {k}\r\nSec-WebSocket-Version: 13\r\n"
               f"Sec-WebSocket-Protocol: {protocol}\r\n\r\n")
        try:
            s.sendall(req.encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                if not chunk:
                    raise WSRefused("connection closed during the upgrade: "
                                    + head.decode("latin-1"))
                head += chunk
        except (ssl.SSLError, OSError) as e:
            s.close()
            raise WSRefused(f"upgrade: {e}") from e
        status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        if " 101 " not in status_line + " ":
            s.close()
            raise WSRefused(f"upgrade refused: {status_line}")
        super().__init__(s, head.split(b"\r\n\r\n", 1)[1])


class FakeController:
    """A hand-driven controller for sending an agent hostile frames: listens
    on the cluster's agent port with the dev controller certificate (start
    and stop the real controller first, so that the dev files exist) and
    accepts the agent's WebSocket (subprotocol edgesync.v1)."""

    def __init__(self, cluster, timeout=30):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(os.path.join(cluster.dev, "controller.crt"),
                                 os.path.join(cluster.dev, "controller.key"))
        self.ctx.load_verify_locations(os.path.join(cluster.dev, "ca.crt"))
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.ls = socket.create_server(("127.0.0.1", cluster.port))
        self.ls.settimeout(timeout)
        cluster.test.addCleanup(self.close)

    def accept_answer(self, response):
        """Waits for the agent's connection, reads its upgrade request and
        answers it with the raw bytes response (an HTTP response that is
        not an upgrade), then closes the connection."""
        raw, _ = self.ls.accept()
        raw.settimeout(self.ls.gettimeout())
        s = self.ctx.wrap_socket(raw, server_side=True)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        s.sendall(response)
        s.close()

    def accept(self):
        """Waits for the agent's connection and answers its upgrade. Returns
        the session (a WSPeer that sends unmasked frames)."""
        raw, _ = self.ls.accept()
        raw.settimeout(self.ls.gettimeout())
        s = self.ctx.wrap_socket(raw, server_side=True)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                raise EOFError("connection closed during the upgrade")
            head += chunk
        head, rest = head.split(b"\r\n\r\n", 1)
        fields = {}
        for line in head.decode("latin-1").split("\r\n")[1:]:
            k, _, v = line.partition(":")
            fields[k.strip().lower()] = v.strip()
        accept = base64.b64encode(hashlib.sha1(
            (fields["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
            .encode()).digest()).decode()
        s.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\n"
                   f"Sec-WebSocket-Accept: {accept}\r\n"
                   "Sec-WebSocket-Protocol: edgesync.v1\r\n\r\n").encode())
        peer = WSPeer(s, rest)
        peer.masked = False
        return peer

    def close(self):
        self.ls.close()


def agent_and_fake_controller(test, node="target"):
    """A cluster of one node whose agent dials a FakeController (the real
    controller runs once first, for the dev files). Returns (cluster,
    fake controller, the agent's first session, the hello it sent)."""
    c = Cluster(test, nodes=[node])
    c.start_controller()
    c.stop_controller()
    fake = FakeController(c)
    c.start_agent(node)
    ws = fake.accept()
    _, msg = ws.recv()
    return c, fake, ws, msg


def _mask_fast(payload, mask):
    """XORs payload with the repeating 4-byte mask, as big integers (fast
    enough for the 10 MiB frame)."""
    whole = (mask * (len(payload) // 4 + 1))[:len(payload)]
    x = int.from_bytes(payload, "big") ^ int.from_bytes(whole, "big")
    return x.to_bytes(len(payload), "big")


# Agent flags for tests that need a report from every collection round
# (usage figures otherwise wait for usage-report-interval, and a round that
# changes nothing reported sends and writes nothing).
EVERY_ROUND = ["--usage-report-interval", "1", "--usage-min-change", "0"]


def hello(node, rv=0, next_seq=1, labels=None):
    return {"type": "hello", "protocolVersion": 1, "node": node,
            "agentVersion": "test", "bootId": "00000000-0000-0000-0000-000000000000",
            "labels": labels or {}, "capabilities": ["merge-patch"],
            "resourceVersion": rv, "nextSeq": next_seq}


def welcome(node, acked_seq=0):
    return {"type": "welcome", "node": node, "controllerVersion": "test",
            "ackedSeq": acked_seq, "heartbeatSeconds": 20,
            "maxMessageBytes": 1048576}
