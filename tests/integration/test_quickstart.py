"""`scripts/quickstart.sh stop [agent] [controller]`, the README quick
start's stop steps: it signals only an edgesync program that the quick
start started (its pid file names a running edgesync-<prog> whose command
line names the quick start's directory), says when there is no pid file,
removes a stale one without killing anything, and waits until the program
has exited; `stop controller` leaves the agent running offline."""

import os
import subprocess
import tempfile
import shutil
import unittest

from harness import Cluster, main, wait_for

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "scripts", "quickstart.sh")


def stop(qdir, *progs):
    env = dict(os.environ, ES_QUICKSTART_DIR=qdir)
    return subprocess.run(["bash", SCRIPT, "stop"] + list(progs), capture_output=True,
                          text=True, env=env, timeout=60)


class StalePidFiles(unittest.TestCase):
    def test_missing_stale_and_foreign(self):
        qdir = tempfile.mkdtemp(prefix="es-it-qs-")
        self.addCleanup(shutil.rmtree, qdir, True)
        # Not an edgesync program: a pid reused by another process.
        other = subprocess.Popen(["sleep", "60"])
        self.addCleanup(other.wait)
        self.addCleanup(other.kill)
        with open(os.path.join(qdir, "controller.pid"), "w") as f:
            f.write(f"{other.pid}\n")
        with open(os.path.join(qdir, "agent.pid"), "w") as f:
            f.write("not-a-pid\n")
        r = stop(qdir)
        self.assertEqual(r.returncode, 0, r)
        self.assertIsNone(other.poll(), "stop killed a process it had not started")
        self.assertIn(f"names pid {other.pid}, which is no edgesync-controller", r.stdout)
        self.assertIn("nothing killed", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(qdir, "controller.pid")))
        self.assertFalse(os.path.exists(os.path.join(qdir, "agent.pid")))
        r = stop(qdir, "agent")
        self.assertEqual(r.returncode, 0, r)
        self.assertIn(f"no agent to stop (no {qdir}/agent.pid)", r.stdout)
        r = stop(qdir, "everything")
        self.assertEqual(r.returncode, 2, r)


class StopSteps(unittest.TestCase):
    def test_stop_controller_then_agent(self):
        """The README's steps: stop controller, the agent keeps serving
        its cached state; stop, the agent too."""
        c = Cluster(self)
        qdir = c.dir
        ctl = c.start_controller()
        agent = c.start_agent(state_dir=os.path.join(qdir, "agent"))
        wait_for("the node at the controller", lambda: c.node())
        for name, p in (("controller", ctl), ("agent", agent)):
            with open(os.path.join(qdir, f"{name}.pid"), "w") as f:
                f.write(f"{p.p.pid}\n")
        # Another quick start's pid file naming this controller: its
        # command line names another directory, so it is not signalled.
        elsewhere = tempfile.mkdtemp(prefix="es-it-qs-")
        self.addCleanup(shutil.rmtree, elsewhere, True)
        with open(os.path.join(elsewhere, "controller.pid"), "w") as f:
            f.write(f"{ctl.p.pid}\n")
        r = stop(elsewhere, "controller")
        self.assertIn("nothing killed", r.stdout)
        self.assertTrue(ctl.alive())

        r = stop(qdir, "controller")
        self.assertEqual(r.returncode, 0, r)
        self.assertIn(f"stopped the controller (pid {ctl.p.pid})", r.stdout)
        # stop waited: the controller has exited, cleanly.
        self.assertEqual(ctl.p.poll(), 0, r)
        self.assertTrue(agent.alive())
        self.assertIn("node", c.agent_state())
        r = stop(qdir)
        self.assertEqual(r.returncode, 0, r)
        self.assertIn(f"stopped the agent (pid {agent.p.pid})", r.stdout)
        self.assertIn("no controller to stop", r.stdout)
        self.assertEqual(agent.p.poll(), 0, r)


if __name__ == "__main__":
    main()
