"""`edgesync-agent status` against a scripted local endpoint: every error
names the URL it asked, and an answer of the wrong shape (valid JSON, but
not the agent's {node, desired, sync} document) is an error that says what
is wrong, never an empty table (exit 1)."""

import http.server
import json
import os
import subprocess
import threading
import unittest

from harness import BIN_DIR, free_port, main

AGENT = os.path.join(BIN_DIR, "edgesync-agent")

GOOD = {
    "node": {"metadata": {"name": "edge-1"},
             "status": {"conditions": [], "objects": []}},
    "desired": [],
    "sync": {"state": "disabled", "connected": False},
}


class Endpoint(http.server.ThreadingHTTPServer):
    """Answers GET /v1/state with self.answer: (status, body bytes)."""

    answer = (200, b"{}")


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        status, body = self.server.answer
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class StatusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Endpoint(("127.0.0.1", 0), Handler)
        cls.port = cls.srv.server_address[1]
        cls.url = f"http://127.0.0.1:{cls.port}/v1/state"
        threading.Thread(target=cls.srv.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        cls.srv.server_close()

    def status(self, port=None):
        return subprocess.run(
            [AGENT, "status", "--http-listen", f"127.0.0.1:{port or self.port}"],
            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
            env={k: v for k, v in os.environ.items() if not k.startswith("EDGESYNC_")})

    def assert_fails(self, answer, *needles, url=None):
        self.srv.answer = answer
        r = self.status()
        self.assertEqual(r.returncode, 1, r)
        self.assertEqual(r.stdout, "", r)
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r)
        self.assertTrue(lines[0].startswith(f"edgesync-agent: {url or self.url}: "), r)
        for n in needles:
            self.assertIn(n, lines[0])

    def test_good_answer_is_a_table(self):
        self.srv.answer = (200, json.dumps(GOOD).encode())
        r = self.status()
        self.assertEqual(r.returncode, 0, r)
        self.assertIn("NODE         edge-1", r.stdout)

    def test_wrong_shape_names_what_is_wrong(self):
        def with_(path, value):
            doc = json.loads(json.dumps(GOOD))
            o = doc
            for k in path[:-1]:
                o = o[k]
            if value is None:
                del o[path[-1]]
            else:
                o[path[-1]] = value
            return (200, json.dumps(doc).encode())

        cases = [
            ((200, b"[]"), "not a JSON object"),
            ((200, b"null"), "not a JSON object"),
            (with_(["node"], None), '"node"'),
            (with_(["node"], 1), '"node"'),
            (with_(["node", "metadata"], None), '"node.metadata"'),
            (with_(["node", "metadata", "name"], 7), '"node.metadata.name"'),
            (with_(["node", "status"], "x"), '"node.status"'),
            (with_(["node", "status", "conditions"], {}), '"node.status.conditions"'),
            (with_(["node", "status", "objects"], 3), '"node.status.objects"'),
            (with_(["desired"], {}), '"desired"'),
            (with_(["sync"], None), '"sync"'),
            (with_(["sync", "state"], None), '"sync.state"'),
        ]
        for answer, needle in cases:
            with self.subTest(body=answer[1]):
                self.assert_fails(answer, "not the agent's state", needle)

    def test_errors_name_the_url(self):
        self.assert_fails((200, b"{not json"), "not JSON")
        self.assert_fails((503, json.dumps({"kind": "Status", "message": "db gone"}).encode()),
                          "HTTP 503", "db gone")
        self.assert_fails((500, b""), "HTTP 500")
        port = free_port()
        self.srv.answer = (200, b"{}")
        r = self.status(port)
        self.assertEqual(r.returncode, 1, r)
        self.assertIn(f"http://127.0.0.1:{port}/v1/state", r.stderr)


if __name__ == "__main__":
    main()
