"""The agent's own database under faults (README, "Where state lives";
proto/PROTOCOL.md, "Node conditions"): a truncated, overwritten or damaged
agent.db is moved aside and replaced with a new empty one, the desired
state comes again from the controller, and StoreDegraded and the
StoreRebuilt event say so; another process holding the write lock for 20 s
does not stall the event loop and loses no event; a full state directory
drops events only counted, keeps outboxDepth truthful, raises StoreDegraded
and recovers once there is room again."""

import errno
import http.client
import json
import os
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import unittest

from harness import EVERY_ROUND, Cluster, main, wait_for

OBJECTS = """apiVersion: edgesync.io/v1alpha1
kind: HealthRule
metadata: {name: always}
spec: {metric: processes.count, operator: Gt, threshold: 0, conditionType: AlwaysOn}
---
apiVersion: edgesync.io/v1alpha1
kind: CollectorConfig
metadata: {name: fast}
spec: {intervalSeconds: 1}
"""

FLIP = """apiVersion: edgesync.io/v1alpha1
kind: HealthRule
metadata: {{name: flip{i:02d}}}
spec: {{metric: processes.count, operator: Gt, threshold: {threshold},
        conditionType: Flip{i:02d}}}
"""


def get(port, path, timeout=10):
    """(status, body text) of GET path on the agent's local endpoint."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


def conditions(state):
    return {c["type"]: c for c in
            ((state.get("node") or {}).get("status") or {}).get("conditions", [])}


def applied(state, name):
    for d in state.get("desired", []):
        if d["metadata"]["name"] == name:
            for c in (d.get("status") or {}).get("conditions", []):
                if c["type"] == "Applied" and c["status"] == "True":
                    return True
    return False


def aside(state_dir):
    """The moved-aside databases in state_dir (not their -wal, -shm)."""
    return sorted(n for n in os.listdir(state_dir)
                  if n.startswith("agent.db.corrupt-")
                  and not n.endswith(("-wal", "-shm")))


class StoreFaultsTest(unittest.TestCase):
    def setUp(self):
        self.c = Cluster(self)
        self.node = self.c.nodes[0]
        self.state_dir = os.path.join(self.c.dir, f"agent-{self.node}")
        self.db = os.path.join(self.state_dir, "agent.db")
        self.sleepers = []
        self.addCleanup(self.stop_sleepers)

    def stop_sleepers(self):
        for p in self.sleepers:
            if p.poll() is None:
                p.kill()
        for p in self.sleepers:
            p.wait()
        self.sleepers = []

    def port(self):
        return self.c.agent_ports[self.node]

    def state(self):
        """/v1/state; fails unless it is 200 JSON."""
        st, body = get(self.port(), "/v1/state")
        self.assertEqual(st, 200, body)
        return json.loads(body)

    def events(self, reason=None, prefix=""):
        return [r["event"] for r in self.c.reports()
                if r["reportType"] == "event" and "event" in r
                and (reason is None or r["event"]["reason"] == reason)
                and r["event"]["message"].startswith(prefix)]

    def start_synced(self, extra=()):
        """Controller, the two objects, an agent that applied them."""
        self.c.start_controller()
        self.c.ctl("apply", "-f", "-", stdin=OBJECTS)
        agent = self.c.start_agent(extra=["--interval", "1"] + EVERY_ROUND + list(extra))
        wait_for("both objects applied", lambda: (
            lambda s: applied(s, "always") and applied(s, "fast"))(self.state()))
        return agent

    def assert_refetched(self, rv):
        """The objects came again from the controller: applied, the
        HealthRule's condition back, the cursor where it was (rv, or any
        version when rv is None)."""
        st = wait_for("the objects fetched again and applied", lambda: (
            lambda s: s if applied(s, "always") and applied(s, "fast")
            and "AlwaysOn" in conditions(s) else None)(self.state()), timeout=60)
        got = st["node"]["status"]["agent"]["desiredResourceVersion"]
        if rv is None:
            self.assertGreater(got, 0)
        else:
            self.assertEqual(got, rv)
        self.assertEqual(conditions(st)["AlwaysOn"]["status"], "True")
        return st

    def assert_store_back(self):
        st = wait_for("StoreDegraded False", lambda: (
            lambda s: s if conditions(s).get("StoreDegraded", {}).get("status")
            == "False" else None)(self.state()), timeout=60)
        self.assertEqual(conditions(st)["StoreDegraded"]["reason"], "StoreWritable")
        wait_for("/readyz 200", lambda: get(self.port(), "/readyz")[0] == 200)
        return st

    # -- damaged files -----------------------------------------------------

    def test_truncated_db_replaced_and_refetched(self):
        try:
            agent = self.start_synced()
            rv = self.state()["node"]["status"]["agent"]["desiredResourceVersion"]
            self.assertGreater(rv, 0)
            agent.stop()
            with open(self.db, "r+b") as f:
                f.truncate(os.path.getsize(self.db) // 2)
            agent = self.c.start_agent(extra=["--interval", "1"] + EVERY_ROUND)
            self.assert_refetched(rv)
            self.assertEqual(len(aside(self.state_dir)), 1, os.listdir(self.state_dir))
            self.assertTrue(agent.alive())
            self.assertIn("moved aside and replaced", agent.output())
            # StoreDegraded was True (StoreRebuilt) until the full list came,
            # then False: that event reaches the controller.
            back = wait_for("StoreDegraded False at the controller", lambda: self.events(
                "ConditionChanged", "StoreDegraded is now False (StoreWritable)"))
            self.assertTrue(back)
            self.assert_store_back()
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def test_overwritten_db_replaced_with_event(self):
        """The first run offline, so the controller has stored no report of
        this node: every report of the new database reaches it (a
        controller that did gets the new stream's numbers as old ones until
        hello carries the report stream's identity)."""
        try:
            self.c.start_controller()
            self.c.ctl("apply", "-f", "-", stdin=OBJECTS)
            agent = self.c.start_agent(extra=["--controller-url", ""])
            wait_for("the offline agent collecting", lambda: self.state()["node"])
            agent.stop()
            size = os.path.getsize(self.db)
            junk = os.urandom(size)
            with open(self.db, "r+b") as f:
                f.write(junk)
            agent = self.c.start_agent(extra=["--interval", "1"] + EVERY_ROUND)
            self.assert_refetched(None)
            moved = aside(self.state_dir)
            self.assertEqual(len(moved), 1)
            with open(os.path.join(self.state_dir, moved[0]), "rb") as f:
                self.assertEqual(f.read(), junk, "not moved byte for byte")
            ev = wait_for("the StoreRebuilt event at the controller",
                          lambda: self.events("StoreRebuilt"))
            self.assertIn(moved[0], ev[0]["message"])
            self.assertIn("(file is not a database)", ev[0]["message"])
            self.assertEqual(ev[0]["type"], "Warning")
            wait_for("StoreDegraded True (StoreRebuilt) at the controller",
                     lambda: self.events("ConditionChanged",
                                         "StoreDegraded is now True (StoreRebuilt)"))
            self.assert_store_back()
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def damage_desired_page(self, conn=None):
        """Overwrites the root page of the desired table in the main file."""
        own = conn is None
        conn = conn or sqlite3.connect(self.db)
        try:
            page = conn.execute("SELECT rootpage FROM sqlite_schema WHERE"
                                " name = 'desired'").fetchone()[0]
            size = conn.execute("PRAGMA page_size").fetchone()[0]
        finally:
            if own:
                conn.close()
        with open(self.db, "r+b") as f:
            f.seek((page - 1) * size)
            f.write(bytes((0xA5 ^ (i * 31)) & 0xFF for i in range(size)))
            f.flush()
            os.fsync(f.fileno())

    def test_damaged_desired_page_at_start(self):
        try:
            agent = self.start_synced()
            rv = self.state()["node"]["status"]["agent"]["desiredResourceVersion"]
            agent.stop()
            self.damage_desired_page()
            agent = self.c.start_agent(extra=["--interval", "1"] + EVERY_ROUND)
            self.assert_refetched(rv)
            self.assertEqual(len(aside(self.state_dir)), 1)
            self.assertIn("integrity check", agent.output())
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def test_damaged_desired_page_at_run_time(self):
        try:
            agent = self.start_synced(["--egress-check-interval", "3600"])
            rv = self.state()["node"]["status"]["agent"]["desiredResourceVersion"]
            conn = sqlite3.connect(self.db, timeout=5, isolation_level=None)
            try:
                # Everything into the main file, then the damage; a write
                # of another connection makes the agent read the file again.
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self.damage_desired_page(conn)
                conn.execute("UPDATE meta SET value = value WHERE key = 'next_seq'")
            finally:
                conn.close()
            first = get(self.port(), "/v1/state")
            # Never a 500 or an empty body: 503 with a Status naming it.
            self.assertIn(first[0], (200, 503), first)
            body = json.loads(first[1])
            if first[0] == 503:
                self.assertEqual(body["kind"], "Status")
                self.assertEqual(body["reason"], "StoreUnavailable")
                self.assertEqual(body["code"], 503)
                self.assertIn(self.db, body["message"])
                self.assertIn("malformed", body["message"])
            wait_for("the damaged file moved aside", lambda: aside(self.state_dir),
                     timeout=20)
            self.assert_refetched(rv)
            self.assertIn("database damaged", agent.output())
            self.assertTrue(agent.alive())
            # The sync connection started again from the new database.
            self.assertIn("agent database replaced", agent.output())
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def test_newer_db_refused_exit_2(self):
        """A newer database (a downgrade) is not damaged: refused, left as
        it is, exit 2, which the systemd unit does not restart."""
        self.c.start_controller()
        agent = self.c.start_agent(extra=["--controller-url", ""])
        wait_for("the offline agent collecting", lambda: self.state()["node"])
        agent.stop()
        conn = sqlite3.connect(self.db)
        conn.execute("PRAGMA user_version = 99")
        conn.close()
        with open(self.db, "rb") as f:
            before = f.read()
        r = subprocess.run(agent.argv, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("newer than this build", r.stderr)
        with open(self.db, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(aside(self.state_dir), [])

    def test_status_names_the_store_problem(self):
        """`edgesync-agent status` against an agent answering 503 with a
        Status object prints its message."""
        self.c.start_controller()
        agent = self.c.start_agent(extra=["--controller-url", ""])
        srv = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(srv.close)
        body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                           "reason": "StoreUnavailable", "code": 503,
                           "message": "the agent database x cannot be read: "
                                      "database disk image is malformed"}).encode()

        def answer():
            conn, _ = srv.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
                             b"application/json\r\nContent-Length: %d\r\n\r\n"
                             % len(body) + body)
        t = threading.Thread(target=answer, daemon=True)
        t.start()
        r = subprocess.run([agent.argv[0], "status", "--http-listen",
                            f"127.0.0.1:{srv.getsockname()[1]}"],
                           capture_output=True, text=True, timeout=30)
        t.join(10)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("the agent answered HTTP 503: the agent database x cannot be"
                      " read: database disk image is malformed", r.stderr)

    # -- writes that cannot be done now ------------------------------------

    def test_writer_holding_the_lock(self):
        try:
            self.start_synced()
            wait_for("Ready True at the controller", lambda: any(
                x["type"] == "Ready" and x["status"] == "True"
                for x in (self.c.node() or {}).get("status", {}).get("conditions", [])))
            dropped0 = self.state()["sync"]["reportsDropped"]
            conn = sqlite3.connect(self.db, timeout=10, isolation_level=None)
            conn.execute("BEGIN EXCLUSIVE")
            slowest, busy, readyz = 0.0, None, set()
            try:
                end = time.monotonic() + 20
                while time.monotonic() < end:
                    t0 = time.monotonic()
                    st, _ = get(self.port(), "/healthz", timeout=5)
                    slowest = max(slowest, time.monotonic() - t0)
                    self.assertEqual(st, 200)
                    readyz.add(get(self.port(), "/readyz")[0])
                    s = self.state()
                    cond = conditions(s).get("StoreDegraded", {})
                    if cond.get("status") == "True":
                        busy = s
                    time.sleep(0.2)
            finally:
                conn.execute("ROLLBACK")
                conn.close()
            self.assertLess(slowest, 1.0, "the event loop stalled")
            self.assertIsNotNone(busy, "StoreDegraded never True")
            cond = conditions(busy)["StoreDegraded"]
            self.assertEqual(cond["reason"], "StoreBusy", cond)
            self.assertIn("database is locked", cond["message"])
            self.assertEqual(conditions(busy)["Ready"]["status"], "False")
            self.assertIn(503, readyz)
            self.assert_store_back()
            # What was queued meanwhile arrives: the transitions, nothing dropped.
            wait_for("StoreDegraded True (StoreBusy) at the controller",
                     lambda: self.events("ConditionChanged",
                                         "StoreDegraded is now True (StoreBusy)"),
                     timeout=60)
            wait_for("StoreDegraded False at the controller", lambda: self.events(
                "ConditionChanged", "StoreDegraded is now False"), timeout=60)
            self.assertEqual(self.state()["sync"]["reportsDropped"], dropped0)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e

    def test_full_filesystem(self):
        if os.geteuid() != 0:
            self.skipTest("needs root (mounts a tmpfs as the state directory)")
        mnt = tempfile.mkdtemp(prefix="es-full-")
        self.addCleanup(os.rmdir, mnt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs",
                        mnt], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", mnt], check=False)
        self.state_dir, self.db = mnt, os.path.join(mnt, "agent.db")
        n = 8
        try:
            self.c.start_controller()
            # Version 1: the activity events of version 2 (every round
            # here) would take the n event slots this test counts.
            self.c.start_agent(state_dir=mnt, extra=EVERY_ROUND + [
                "--interval", "1", "--max-events", str(n), "--protocol-version", "1"])
            count = wait_for("the process count", lambda: self.state()["node"]
                             ["status"]["usage"]["processes"]["count"])
            threshold = count + 150
            self.c.ctl("apply", "-f", "-", stdin="---\n".join(
                FLIP.format(i=i, threshold=threshold) for i in range(n)))
            flips = [f"Flip{i:02d}" for i in range(n)]

            def all_flips(status):
                def pred():
                    s = self.state()
                    cs = conditions(s)
                    return s if all(cs.get(t, {}).get("status") == status
                                    for t in flips) else None
                return pred

            wait_for("the rules False", all_flips("False"))
            st0 = self.state()
            dropped0, depth0 = st0["sync"]["reportsDropped"], st0["sync"]["outboxDepth"]
            t_full = time.time()

            filler = os.path.join(mnt, "filler")
            with open(filler, "wb", buffering=0) as f:
                for chunk in (1 << 20, 4096, 1):
                    try:
                        while True:
                            f.write(b"\0" * chunk)
                    except OSError as e:
                        self.assertEqual(e.errno, errno.ENOSPC)
            full = wait_for("StoreDegraded True (StoreFull)", lambda: (
                lambda s: s if conditions(s).get("StoreDegraded", {}).get("reason")
                == "StoreFull" else None)(self.state()), timeout=30)
            self.assertEqual(conditions(full)["StoreDegraded"]["status"], "True")
            self.assertEqual(conditions(full)["Ready"]["status"], "False")
            self.assertEqual(get(self.port(), "/readyz")[0], 503)

            # 2n transitions, each an event, with room for n in memory.
            for _ in range(300):
                self.sleepers.append(subprocess.Popen(
                    ["sleep", "120"], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_for("the rules True", all_flips("True"), timeout=60)
            self.stop_sleepers()
            wait_for("the rules False again", all_flips("False"), timeout=60)
            during = self.state()
            dropped = during["sync"]["reportsDropped"] - dropped0
            self.assertGreaterEqual(dropped, n, during["sync"])
            self.assertEqual(during["node"]["status"]["agent"]["reportsDropped"] -
                             dropped0, dropped)
            # Truthful: the n held events and the state report are queued.
            self.assertGreaterEqual(during["sync"]["outboxDepth"], n + 1)
            self.assertGreater(during["sync"]["outboxDepth"], depth0)
            self.assertIn("held in memory", conditions(during)["StoreDegraded"]["message"])

            os.remove(filler)
            back = self.assert_store_back()
            final = back["sync"]["reportsDropped"] - dropped0
            self.assertGreaterEqual(final, dropped)
            wait_for("the drop count at the controller", lambda: (
                self.c.node()["status"]["agent"]["reportsDropped"] - dropped0 == final))
            # Every transition reached the controller or was counted.
            seen = wait_for("the held events at the controller", lambda: (
                lambda ev: ev if len(ev) >= n else None)(
                    [e for e in self.events("ConditionChanged", "Flip")
                     if e["time"] >= time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                   time.gmtime(t_full))]))
            self.assertGreaterEqual(len(seen) + final, 2 * n, (len(seen), final))
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e


if __name__ == "__main__":
    main()
