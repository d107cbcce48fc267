"""Agents and edgesyncctl follow several controllers: with controller-url
(and --server) naming two controllers of which the first is down, the
agent is served by the second and edgesyncctl reads from it; when the
second goes down and the first is back, the agent moves to the first by
itself; when none answers, edgesyncctl names each. With controller-order
= node (the default), two agents given the same list start at the
controllers the rendezvous order of their names gives (es-urlorder, the
lib function the unit tests check), not both at the first."""

import os
import signal
import subprocess
import unittest

from harness import API, BIN_DIR, TOOLS_DIR, Cluster, free_port, https_json, main, wait_for


class ControllerListTest(unittest.TestCase):
    def setUp(self):
        self.c = Cluster(self)
        self.c.start_controller()  # A: makes the dev CA and certificates
        self.node = self.c.nodes[0]
        self.a_port, self.a_admin = self.c.port, self.c.admin_port
        self.b_port, self.b_admin = free_port(), free_port()
        self.b = None

    def start_b(self):
        """Controller B: its own state directory and ports, A's certificates."""
        self.b = self.c.start_peer_controller("controller-b", self.b_port, self.b_admin)

    def served_by(self, admin_port):
        st, body = https_json("localhost", admin_port, self.c.admin_ssl(), "GET",
                              f"{API}/nodes/{self.node}")
        return st == 200 and body.get("status", {}).get("sync", {}).get("connected")

    def test_agent_and_ctl_go_past_a_dead_controller(self):
        self.start_b()
        self.c.stop_controller()  # A is down from here on
        urls = [f"wss://127.0.0.1:{self.a_port}", f"wss://127.0.0.1:{self.b_port}"]
        self.c.start_agent(extra=["--controller-url", urls[0],
                                  "--controller-url", urls[1]])
        try:
            wait_for("the node at controller B", lambda: self.served_by(self.b_admin),
                     timeout=60)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e
        sync = self.c.agent_state()["sync"]
        self.assertTrue(sync["connected"], sync)
        self.assertEqual(sync["url"], urls[1])
        # The redial names the controller that failed and the next one.
        log = self.c.agents[self.c.nodes[0]].output()
        self.assertIn(f'msg="disconnected, redialling" url={urls[0]} next={urls[1]}', log)

        # edgesyncctl: the first server is down, the second answers
        servers = [f"https://localhost:{self.a_admin}", f"https://localhost:{self.b_admin}"]
        r = self.c.ctl("--server", servers[0], "--server", servers[1], "get", "nodes")
        self.assertIn(self.node, r.stdout)
        r = self.c.ctl("--server", ",".join(servers), "get", "node", self.node)
        self.assertIn(self.node, r.stdout)

        # B goes down, A is back: the agent moves to A by itself
        self.c.start_controller()
        self.b.stop(signal.SIGKILL)
        try:
            wait_for("the node at controller A", lambda: self.served_by(self.a_admin),
                     timeout=90)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.c.logs()}") from e
        self.assertEqual(self.c.agent_state()["sync"]["url"], urls[0])

        # none answers: edgesyncctl says so for each
        dead = free_port()
        r = self.c.ctl("--server", f"https://localhost:{dead}",
                       "--server", f"https://localhost:{self.b_admin}", "get", "nodes",
                       check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(str(dead), r.stderr)
        self.assertIn(str(self.b_admin), r.stderr)


def node_order(node, urls):
    """urls in the order node dials them with controller-order = node."""
    r = subprocess.run([os.path.join(TOOLS_DIR, "es-urlorder"), node] + urls,
                       capture_output=True, text=True, check=True)
    return r.stdout.split()


class RendezvousOrderTest(unittest.TestCase):
    def test_same_list_different_first_controller(self):
        a_port, b_port = free_port(), free_port()
        urls = [f"wss://127.0.0.1:{a_port}", f"wss://127.0.0.1:{b_port}"]
        # Two node names whose orders start at different controllers: the
        # one starting at B shows the list's order is not followed.
        first = {}
        for k in range(64):
            name = f"edge-{k:02d}"
            first.setdefault(node_order(name, urls)[0], name)
        self.assertEqual(len(first), 2, f"64 names all start at one of {urls}")
        at_a, at_b = first[urls[0]], first[urls[1]]
        self.assertEqual(node_order(at_b, urls[::-1])[0], urls[1])  # as listed either way

        c = Cluster(self, nodes=[at_a, at_b])
        c.port = a_port
        c.start_controller()
        b_admin = free_port()
        c.start_peer_controller("controller-b", b_port, b_admin)
        for node in (at_a, at_b):
            c.start_agent(node, controller_order="node",
                          extra=["--controller-url", ",".join(urls)])
        try:
            for node in (at_a, at_b):
                wait_for(f"{node} connected",
                         lambda n=node: c.agent_state(n)["sync"]["connected"], timeout=60)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{c.logs()}") from e
        for node, want, admin in ((at_a, urls[0], c.admin_port),
                                  (at_b, urls[1], b_admin)):
            sync = c.agent_state(node)["sync"]
            self.assertEqual(sync["url"], want, (node, sync))
            self.assertEqual(sync["reconnects"], 0, (node, sync))  # its first dial
            r = subprocess.run([os.path.join(BIN_DIR, "edgesync-agent"), "status",
                                "--http-listen", f"127.0.0.1:{c.agent_ports[node]}"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"CONTROLLER   {want}\n", r.stdout)
            st, body = https_json("localhost", admin, c.admin_ssl(), "GET",
                                  f"{API}/nodes/{node}")
            self.assertEqual(st, 200, body)
            self.assertTrue(body["status"]["sync"]["connected"], body)


if __name__ == "__main__":
    main()
