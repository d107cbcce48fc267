"""An EgressPolicy stays enforced in the kernel while the agent renews its
certificate over the session (PROTOCOL.md "Renewal"), as root, with the
nftables backend: a joined agent with certificates of 20 s renews at least
twice while a worker in the targeted cgroup connects in a loop to the
denied port and an allowed one; every attempt to the denied port is
refused and every one to the other connects, before, during and after
each switch of certificate.
"""

import os

from egress_util import policy
from harness import main
from test_egress_nft import REFUSED, NftCase
from test_rotate import join_and_run

LIFETIME = 20


class RotateEgressTest(NftCase):
    TAG = "es-rotate-egress-"

    def setUp(self):
        self.setup_nft()

    def test_enforced_across_renewals(self):
        self.check(self.run_case)

    def run_case(self):
        c = self.c
        c.stop_controller()
        c.start_controller(["--cert-lifetime", str(LIFETIME)])
        node = "edge-e"
        join_and_run(c, node, ["--interval", "2", "--egress-backend", "nftables",
                               "--egress-pin-dir", self.pin_dir])
        self.apply(policy("deny-one", self.p1, self.cg["a"][0]))
        self.wait_denied(self.p1, "the policy enforced", refused=REFUSED)

        def renewals():
            with open(os.path.join(c.dir, "controller.log")) as f:
                return f.read().count('msg="certificate renewed"')

        before = renewals()
        a = self.w["a"]
        a.start_loop(self.p1, self.p2, 2.5 * LIFETIME)
        res = a.loop_result()
        after = renewals()
        self.assertGreaterEqual(after - before, 2, "fewer than two renewals meanwhile")
        self.assertGreater(len(res), 100)
        for i, (prt, got) in enumerate(res):
            want = REFUSED if prt == self.p1 else "OK"
            if got != want:
                self.fail(f"attempt {i} of {len(res)} to port {prt}: {got}, "
                          f"expected {want}")
        self.assertEqual(self.w["b"].connect(self.p1), "OK")
        with open(os.path.join(c.dir, f"agent-{node}.log")) as f:
            self.assertIn("certificate renewed; reconnecting with it", f.read())


if __name__ == "__main__":
    main()
