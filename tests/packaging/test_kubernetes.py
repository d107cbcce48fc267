#!/usr/bin/env python3
"""The Kubernetes manifests (packaging/kubernetes/): they parse, have the
expected kinds and API versions, and every name they refer to exists:
ConfigMap and Secret keys (the Secrets' layout is secrets.example.yaml),
volumes and mounts, container ports and probe ports, Service target
ports and selectors, environment variables and config-file keys (against
the programs' --help), and the files the settings name (under a mounted
Secret or ConfigMap, with that key).

The ha overlay (packaging/kubernetes-ha/: three controller replicas on
etcd) is rendered with `kubectl kustomize` (skipped without kubectl) and
the result held to the same checks, plus its own: replicas on different
nodes, a PodDisruptionBudget that leaves two, store = etcd with the etcd
client files mounted, no claim, and readiness from /readyz on the join
listener's port. The trial overlay (packaging/kubernetes-ha-trial/: the
same with a three-member etcd StatefulSet of its own) too, and that its
members find each other and the controllers find them."""

import os
import re
import shutil
import subprocess
import unittest

import yaml

import pkgtest

KDIR = os.path.join(pkgtest.PACKAGING, "kubernetes")
HADIR = os.path.join(pkgtest.PACKAGING, "kubernetes-ha")
TRIALDIR = os.path.join(pkgtest.PACKAGING, "kubernetes-ha-trial")
API = {"PodDisruptionBudget": "policy/v1", "StatefulSet": "apps/v1", "Namespace": "v1", "ConfigMap": "v1", "Secret": "v1", "Service": "v1",
       "PersistentVolumeClaim": "v1", "DaemonSet": "apps/v1",
       "Deployment": "apps/v1"}
PROGRAM = {"agent": "edgesync-agent", "controller": "edgesync-controller"}
PATH_SETTINGS = ("cert", "key", "ca", "client-ca", "admin-ca", "ca-cert", "ca-key",
                 "etcd-cert", "etcd-key", "etcd-ca", "tls-ticket-key")


def load(name, d=KDIR):
    with open(os.path.join(d, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


class TestKubernetes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.kust = load("kustomization.yaml")[0]
        cls.objs = []
        for r in cls.kust["resources"]:
            cls.objs += load(r)
        cls.secrets = {s["metadata"]["name"]: s for s in load("secrets.example.yaml")}
        cls.by_kind = {}
        for o in cls.objs:
            cls.by_kind.setdefault(o["kind"], {})[o["metadata"]["name"]] = o

    def test_every_manifest_is_listed_and_parses(self):
        files = sorted(f for f in os.listdir(KDIR) if f.endswith(".yaml"))
        listed = set(self.kust["resources"]) | {"kustomization.yaml", "secrets.example.yaml"}
        self.assertEqual(set(files), listed)
        self.assertEqual(self.kust["apiVersion"], "kustomize.config.k8s.io/v1beta1")
        self.assertEqual(self.kust["kind"], "Kustomization")

    def test_kinds_and_api_versions(self):
        for o in self.objs + list(self.secrets.values()):
            self.assertIn(o["kind"], API)
            self.assertEqual(o["apiVersion"], API[o["kind"]], o["kind"])
            if o["kind"] != "Namespace":
                self.assertEqual(o["metadata"]["namespace"], self.kust["namespace"])
        self.assertIn("edgesync-agent", self.by_kind["DaemonSet"])
        self.assertIn("edgesync-controller", self.by_kind["Deployment"])
        self.assertIn("edgesync-controller", self.by_kind["Service"])
        images = {i["name"] for i in self.kust["images"]}
        for w in self.workloads():
            for c in w["spec"]["template"]["spec"]["containers"]:
                self.assertIn(c["image"].split(":")[0], images)

    def workloads(self):
        return list(self.by_kind["DaemonSet"].values()) + \
            list(self.by_kind["Deployment"].values())

    def key_exists(self, vol, key):
        if "configMap" in vol:
            cm = self.by_kind["ConfigMap"][vol["configMap"]["name"]]
            return key in cm["data"]
        if "secret" in vol:
            self.assertIn(vol["secret"]["secretName"], self.secrets,
                          "a Secret of secrets.example.yaml")
            data = self.secrets[vol["secret"]["secretName"]]["stringData"]
            if key in data:
                return True
            # Per-node keys: <node-name>.crt / .key.
            return ("NODE-NAME." + key.rsplit(".", 1)[-1]) in data and "$(" in key
        return False

    def check_workload(self, w):
        name = w["metadata"]["name"]
        spec = w["spec"]["template"]["spec"]
        labels = w["spec"]["template"]["metadata"]["labels"]
        for k, v in w["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v, name)
        vols = {v["name"]: v for v in spec["volumes"]}
        self.assertEqual(len(vols), len(spec["volumes"]), f"{name}: duplicate volume")
        used = set()
        for c in spec["containers"]:
            role = c["name"]
            prog = PROGRAM[role]
            known = pkgtest.settings(prog)
            env_names = set(known.values()) | {"EDGESYNC_CONFIG"}
            env = {}
            for e in c.get("env", []):
                self.assertIn(e["name"], env_names, f"{name}: env {e['name']}")
                v = e.get("value")
                if v is not None:
                    # $(VAR) must name an earlier variable of this container.
                    for ref in re.findall(r"\$\((\w+)\)", v):
                        self.assertIn(ref, env, f"{name}: {e['name']} uses $({ref})")
                env[e["name"]] = v if v is not None else "$(" + e["name"] + ")"
            mounts = {}
            for m in c.get("volumeMounts", []):
                self.assertIn(m["name"], vols, f"{name}: mount of unknown volume {m['name']}")
                used.add(m["name"])
                mounts[m["mountPath"]] = m
                if "subPath" in m:
                    vol = vols[m["name"]]
                    items = {i["path"]: i["key"] for i in vol.get("configMap", vol.get("secret", {})).get("items", [])}
                    key = items.get(m["subPath"], m["subPath"])
                    self.assertTrue(self.key_exists(vol, key), f"{name}: {m['subPath']}")
            for vol in vols.values():
                for i in vol.get("configMap", vol.get("secret", {})).get("items", []):
                    self.assertTrue(self.key_exists(vol, i["key"]), f"{name}: key {i['key']}")
            ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
            for probe in ("livenessProbe", "readinessProbe"):
                self.assertIn(probe, c, f"{name}: {probe}")
                p = c[probe]
                port = (p.get("httpGet") or p.get("tcpSocket"))["port"]
                self.assertIn(port if isinstance(port, str) else None, ports,
                              f"{name}: {probe} port {port}")
            # The settings: config file from a mount, then the environment.
            settings = {}
            conf = env.get("EDGESYNC_CONFIG")
            if conf:
                m = mounts.get(conf)
                self.assertIsNotNone(m, f"{name}: EDGESYNC_CONFIG {conf} is not mounted")
                cm = self.by_kind["ConfigMap"][vols[m["name"]]["configMap"]["name"]]
                settings = pkgtest.parse_conf(cm["data"][m["subPath"]])
                for k in settings:
                    self.assertIn(k, known, f"{name}: config key {k}")
            by_env = {v: k for k, v in known.items()}
            for e, v in env.items():
                if e in by_env:
                    settings[by_env[e]] = v
            for k in PATH_SETTINGS:
                if k not in settings:
                    continue
                path = settings[k]
                d, base = os.path.split(path)
                m = mounts.get(d)
                self.assertIsNotNone(m, f"{name}: {k} = {path}: {d} is not mounted")
                self.assertTrue(self.key_exists(vols[m["name"]], base),
                                f"{name}: {k} = {path}: no key {base}")
            if role == "agent":
                _, port = settings["http-listen"].rsplit(":", 1)
                self.assertEqual(int(port), ports["http"])
                for probe in ("livenessProbe", "readinessProbe"):
                    self.assertEqual(c[probe]["httpGet"]["path"],
                                     "/healthz" if probe == "livenessProbe" else "/readyz")
                    # Loopback listener: only reachable as 127.0.0.1 with host networking.
                    if settings["http-listen"].startswith("127."):
                        self.assertTrue(spec.get("hostNetwork"))
                        self.assertEqual(c[probe]["httpGet"]["host"], "127.0.0.1")
                self.assertEqual(settings["state-dir"], "/var/lib/edgesync")
                self.assertIn("/var/lib/edgesync", mounts)
                node = [e for e in c["env"] if e["name"] == "EDGESYNC_NODE_NAME"][0]
                self.assertEqual(node["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName")
            else:
                for k in ("listen", "admin-listen", "join-listen"):
                    _, port = settings[k].rsplit(":", 1)
                    self.assertIn(int(port), ports.values(), f"{name}: {k}")
                self.assertIn(settings["state-dir"], mounts)
                self.controller_settings = settings
        self.assertEqual(used, set(vols), f"{name}: unused volumes")
        return spec

    def test_agent_daemonset(self):
        ds = self.by_kind["DaemonSet"]["edgesync-agent"]
        spec = self.check_workload(ds)
        self.assertEqual(spec["tolerations"], [{"operator": "Exists"}])
        c = spec["containers"][0]
        sc = c["securityContext"]
        self.assertFalse(sc.get("privileged", False))
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertEqual(set(sc["capabilities"]["add"]),
                         {"BPF", "PERFMON", "NET_ADMIN", "SYS_ADMIN", "DAC_READ_SEARCH"})
        host = {v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
        self.assertTrue({"/sys/fs/bpf", "/sys/kernel/btf", "/sys/kernel/tracing",
                         "/var/lib/edgesync"} <= host)
        # Nodes join with the token of one Secret, read from its file
        # (token-file: never in the environment or on the command line);
        # no Secret holds node keys.
        secrets = [v for v in spec["volumes"] if "secret" in v]
        self.assertEqual([(v["name"], v["secret"]["secretName"], v["secret"]["items"])
                          for v in secrets],
                         [("join-token", "edgesync-join-token",
                           [{"key": "token", "path": "token"}])])
        self.assertEqual(secrets[0]["secret"]["defaultMode"], 0o400)
        mount = next(m for m in c["volumeMounts"] if m["name"] == "join-token")
        self.assertTrue(mount["readOnly"])
        env = {e["name"]: e.get("value") for e in c["env"]}
        self.assertNotIn("EDGESYNC_TOKEN", env)
        self.assertEqual(env["EDGESYNC_TOKEN_FILE"], mount["mountPath"] + "/token")
        refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in c["env"]
                if "secretKeyRef" in e.get("valueFrom", {})}
        self.assertEqual(refs, {"EDGESYNC_CA_HASH": {"name": "edgesync-join-token",
                                                     "key": "ca-hash"}})
        for r in list(refs.values()) + [{"name": "edgesync-join-token", "key": "token"}]:
            self.assertIn(r["key"], self.secrets[r["name"]]["stringData"])
        res = c["resources"]
        self.assertEqual(res["requests"], {"cpu": "10m", "memory": "32Mi"})
        self.assertEqual(res["limits"], {"memory": "64Mi"})
        # Bidirectional propagation is refused for unprivileged containers.
        for m in c["volumeMounts"]:
            self.assertNotEqual(m.get("mountPropagation"), "Bidirectional")

    def test_controller(self):
        self.check_controller()

    def check_controller(self):
        """The controller's Deployment and Service; returns (Deployment,
        pod spec)."""
        dep = self.by_kind["Deployment"]["edgesync-controller"]
        spec = self.check_workload(dep)
        svc = self.by_kind["Service"]["edgesync-controller"]
        labels = dep["spec"]["template"]["metadata"]["labels"]
        for k, v in svc["spec"]["selector"].items():
            self.assertEqual(labels.get(k), v)
        ports = {p["name"]: p["containerPort"] for p in spec["containers"][0]["ports"]}
        got = {p["port"]: p["targetPort"] for p in svc["spec"]["ports"]}
        self.assertEqual(got, {7443: "sync", 7444: "admin", 7445: "join"})
        for tp in got.values():
            self.assertIn(tp, ports)
        claims = {v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"]
                  if "persistentVolumeClaim" in v}
        self.assertTrue(claims <= set(self.by_kind.get("PersistentVolumeClaim", {})))
        # The agents dial the Service by name; no session affinity (any
        # replica serves any node).
        self.assertNotIn("sessionAffinity", svc["spec"])
        agent_conf = pkgtest.parse_conf(self.by_kind["ConfigMap"]["edgesync-agent"]["data"]["agent.conf"])
        url = agent_conf["controller-url"]
        self.assertEqual(url, f"wss://{svc['metadata']['name']}.{self.kust['namespace']}.svc:7443")
        return dep, spec

    def test_base_is_one_replica_on_sqlite(self):
        """The default stays one replica over its SQLite file on a claim."""
        dep, spec = self.check_controller()
        self.assertEqual(dep["spec"]["replicas"], 1)
        self.assertEqual(dep["spec"]["strategy"], {"type": "Recreate"})
        self.assertEqual(self.controller_settings.get("store", "sqlite"), "sqlite")
        state = next(v for v in spec["volumes"] if v["name"] == "state")
        self.assertIn(state["persistentVolumeClaim"]["claimName"],
                      self.by_kind["PersistentVolumeClaim"])


def kustomize(path):
    """The objects `kubectl kustomize path` renders, or SkipTest."""
    kubectl = shutil.which("kubectl")
    if not kubectl:
        raise unittest.SkipTest("kubectl is not installed (its kustomize renders the overlay)")
    r = subprocess.run([kubectl, "kustomize", path], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0 and "unknown command" in r.stderr:
        raise unittest.SkipTest(f"this kubectl has no kustomize: {r.stderr.strip()}")
    if r.returncode != 0:
        raise AssertionError(f"kubectl kustomize {path} exited {r.returncode}:\n{r.stderr}")
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def overlay_setup(cls, d):
    """The class attributes of TestKubernetes for the overlay in d: its
    kustomization, its objects as kubectl renders them, the Secrets of
    both secrets.example.yaml files."""
    cls.kust = load("kustomization.yaml", d)[0]
    cls.objs = kustomize(d)
    cls.secrets = {s["metadata"]["name"]: s for s in
                   load("secrets.example.yaml") + load("secrets.example.yaml", HADIR)}
    cls.by_kind = {}
    for o in cls.objs:
        cls.by_kind.setdefault(o["kind"], {})[o["metadata"]["name"]] = o


class TestKubernetesHA(TestKubernetes):
    """packaging/kubernetes-ha, rendered, under every check of the base and
    these."""

    @classmethod
    def setUpClass(cls):
        overlay_setup(cls, HADIR)
        cls.base_kust = load("kustomization.yaml")[0]

    # Of the base only (None: not a test here).
    test_base_is_one_replica_on_sqlite = None

    def test_every_manifest_is_listed_and_parses(self):
        files = sorted(f for f in os.listdir(HADIR) if f.endswith(".yaml"))
        for f in files:
            load(f, HADIR)
        listed = {r for r in self.kust["resources"] if not r.startswith("..")} | \
            {p["path"] for p in self.kust["patches"]} | \
            {"kustomization.yaml", "secrets.example.yaml"}
        self.assertEqual(set(files), listed)
        self.assertEqual(self.kust["resources"][0], "../kubernetes")
        self.assertEqual(self.kust["namespace"], self.base_kust["namespace"])
        self.kust.setdefault("images", self.base_kust["images"])

    def test_kinds_and_api_versions(self):
        self.kust.setdefault("images", self.base_kust["images"])
        super().test_kinds_and_api_versions()

    def test_three_replicas_on_etcd(self):
        dep, spec = self.check_controller()
        labels = dep["spec"]["template"]["metadata"]["labels"]
        replicas = dep["spec"]["replicas"]
        self.assertEqual(replicas, 3)
        # Rolling, one at a time, no surge (one replica per node).
        self.assertEqual(dep["spec"]["strategy"], {
            "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        # Never two on one node.
        terms = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual([t["topologyKey"] for t in terms], ["kubernetes.io/hostname"])
        for k, v in terms[0]["labelSelector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v)
        for c in spec.get("topologySpreadConstraints", []):
            for k, v in c["labelSelector"]["matchLabels"].items():
                self.assertEqual(labels.get(k), v)
        # The budget selects these pods and leaves at least two.
        pdb = self.by_kind["PodDisruptionBudget"]["edgesync-controller"]
        for k, v in pdb["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v)
        left = pdb["spec"].get("minAvailable", replicas - pdb["spec"].get("maxUnavailable", 0))
        self.assertEqual(left, 2)
        # store = etcd, over https with the client certificate (mounted:
        # check_workload resolved etcd-cert, etcd-key, etcd-ca and the
        # shared ticket key to Secret keys).
        conf = self.controller_settings
        self.assertEqual(conf["store"], "etcd")
        eps = conf["etcd-endpoints"].split(",")
        self.assertGreaterEqual(len(eps), 1)
        for e in eps:
            self.assertRegex(e, r"^https://[a-z0-9.-]+:\d+$")
        for k in ("etcd-cert", "etcd-key", "etcd-ca", "tls-ticket-key"):
            self.assertIn(k, conf)
        self.assertTrue(conf["etcd-prefix"].endswith("/"))
        # Each replica's own state in an emptyDir; no claim is left.
        state = next(v for v in spec["volumes"] if v["name"] == "state")
        self.assertEqual(set(state), {"name", "emptyDir"})
        self.assertNotIn("PersistentVolumeClaim", self.by_kind)
        # Probes: HTTPS (no client certificate) on the join listener's port,
        # /readyz for readiness (503 while etcd does not answer).
        c = spec["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        _, join_port = conf["join-listen"].rsplit(":", 1)
        self.assertIn("ca-cert", conf, "the join listener needs ca-cert")
        for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
            g = c[probe]["httpGet"]
            self.assertEqual(set(c[probe]) & {"tcpSocket", "exec", "grpc"}, set())
            self.assertEqual((g["scheme"], g["path"]), ("HTTPS", path))
            self.assertEqual(ports[g["port"]], int(join_port))
        # The agents are the base's: one URL, the Service.
        self.assertEqual(self.by_kind["DaemonSet"],
                         {d["metadata"]["name"]: d for d in kustomize(KDIR)
                          if d["kind"] == "DaemonSet"})



class TestKubernetesHATrial(TestKubernetes):
    """packaging/kubernetes-ha-trial, rendered: every check of the base,
    and the etcd StatefulSet's names, ports and flags against the
    controllers' etcd-endpoints."""

    test_base_is_one_replica_on_sqlite = None

    @classmethod
    def setUpClass(cls):
        overlay_setup(cls, TRIALDIR)
        cls.kust["images"] = load("kustomization.yaml")[0]["images"]

    def test_every_manifest_is_listed_and_parses(self):
        files = sorted(f for f in os.listdir(TRIALDIR) if f.endswith(".yaml"))
        for f in files:
            load(f, TRIALDIR)
        listed = {r for r in self.kust["resources"] if not r.startswith("..")} | \
            {p["path"] for p in self.kust["patches"]} | {"kustomization.yaml"}
        self.assertEqual(set(files), listed)
        self.assertEqual(self.kust["resources"][0], "../kubernetes-ha")

    def test_etcd_members_and_endpoints(self):
        ns = self.kust["namespace"]
        sts = self.by_kind["StatefulSet"]["edgesync-etcd"]
        svc = self.by_kind["Service"][sts["spec"]["serviceName"]]
        self.assertEqual(svc["spec"]["clusterIP"], "None")
        self.assertTrue(svc["spec"]["publishNotReadyAddresses"])
        labels = sts["spec"]["template"]["metadata"]["labels"]
        for sel in (svc["spec"]["selector"], sts["spec"]["selector"]["matchLabels"]):
            for k, v in sel.items():
                self.assertEqual(labels.get(k), v)
        n = sts["spec"]["replicas"]
        self.assertEqual(n, 3)
        c = sts["spec"]["template"]["spec"]["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        for p in svc["spec"]["ports"]:
            self.assertEqual(ports[p["targetPort"]], p["port"])
        args = dict(a[2:].split("=", 1) for a in c["args"])
        env = {e["name"]: e for e in c["env"]}
        self.assertEqual(env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name")
        name, host = sts["metadata"]["name"], f"{svc['metadata']['name']}.{ns}.svc"
        self.assertEqual(args["name"], "$(POD_NAME)")
        self.assertEqual(args["initial-cluster"], ",".join(
            f"{name}-{i}=http://{name}-{i}.{host}:{ports['peer']}" for i in range(n)))
        self.assertEqual(args["initial-advertise-peer-urls"],
                         f"http://$(POD_NAME).{host}:{ports['peer']}")
        self.assertEqual(args["advertise-client-urls"],
                         f"http://$(POD_NAME).{host}:{ports['client']}")
        self.assertEqual(args["listen-client-urls"], f"http://0.0.0.0:{ports['client']}")
        self.assertEqual(args["auto-compaction-mode"], "periodic")
        self.assertIn("auto-compaction-retention", args)
        # Data on the member's own claim.
        tmpl = [t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]]
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        self.assertEqual(list(mounts), tmpl)
        self.assertEqual(mounts[tmpl[0]], args["data-dir"])
        # The controllers dial every member by its stable name, without
        # client certificates; the etcd Secret is not mounted.
        self.check_controller()
        conf = self.controller_settings
        self.assertEqual(conf["store"], "etcd")
        self.assertEqual(conf["etcd-endpoints"].split(","),
                         [f"http://{name}-{i}.{host}:{ports['client']}" for i in range(n)])
        for k in ("etcd-cert", "etcd-key", "etcd-ca"):
            self.assertNotIn(k, conf)
        dep = self.by_kind["Deployment"]["edgesync-controller"]
        self.assertNotIn("edgesync-etcd-client",
                         [v.get("secret", {}).get("secretName")
                          for v in dep["spec"]["template"]["spec"]["volumes"]])
        self.assertEqual(dep["spec"]["replicas"], 3)


if __name__ == "__main__":
    pkgtest.main()
