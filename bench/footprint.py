#!/usr/bin/env python3
"""Prints edgesync's footprint figures (never pass/fail), the source of the
DaemonSet's requests and limits and of the README's size claims:

- stripped sizes of edgesync-agent, edgesync-controller and edgesyncctl
  (strip(1) of this build's binaries, as the packages ship them);
- the stripped agent of each architecture's tree (build/, build-arm64/,
  build-armhf/ of scripts/cross-build.sh), stripped with that target's
  strip; a tree not built is said so;
- the packages of <build>/packages (`cmake --build BUILD --target
  packages`): file size, Installed-Size, and the size of the data archive;
- the stripped static (musl) agent of each architecture
  (build-static-<arch>/ of `scripts/cross-build.sh --static`);
- resident memory (VmRSS, VmHWM) of the agent at steady state holding 100
  cached desired objects, and of the controller serving it, on loopback
  (tests/integration/harness.py); also their PSS and USS (private pages)
  from /proc/<pid>/smaps_rollup, since most of the RSS is library pages
  that other processes share. When build-static-amd64/ has its agent, it
  runs in the same run beside the dynamic one (a second node of the same
  controller, the same flags, the same 100 objects) and is measured the
  same way (label agent-static).

Usage: bench/footprint.py [--build DIR] [--static-build DIR] [--settle SECONDS]
       [--arch-only]
"""

import argparse
import io
import os
import subprocess
import tarfile
import tempfile
import time

from benchlib import HERE, Owner, harness, proc_status, use_build

PROGRAMS = ("edgesync-agent", "edgesync-controller", "edgesyncctl")


def kib(n):
    return f"{n / 1024:.0f} KiB"


def stripped_sizes(bindir):
    with tempfile.TemporaryDirectory() as tmp:
        for p in PROGRAMS:
            src = os.path.join(bindir, p)
            if not os.path.exists(src):
                print(f"binary_stripped_bytes{{program=\"{p}\"}} missing ({src})")
                continue
            out = os.path.join(tmp, p)
            subprocess.run(["strip", "-o", out, src], check=True)
            print(f"binary_stripped_bytes{{program=\"{p}\"}} {os.path.getsize(out)}  "
                  f"({kib(os.path.getsize(out))}; unstripped {kib(os.path.getsize(src))})")


# Debian architecture -> (build tree beside the native one, strip program).
ARCH_TREES = (("amd64", None, "strip"), ("arm64", "build-arm64", "aarch64-linux-gnu-strip"),
              ("armhf", "build-armhf", "arm-linux-gnueabihf-strip"))
# The static (musl) trees of `cross-build.sh --static`, same strip programs.
STATIC_TREES = tuple((arch, f"build-static-{arch}", strip) for arch, _, strip in ARCH_TREES)


def arch_sizes(build):
    """The agent of each architecture's tree, stripped by that target's
    strip: the dynamic ones (link="dynamic"; the cross trees sit beside the
    source, as cross-build.sh makes them; the amd64 one is BUILD) and the
    static ones (link="static", build-static-<arch>/)."""
    root = os.path.join(HERE, "..")
    trees = [(a, "dynamic", t, s) for a, t, s in ARCH_TREES]
    trees += [(a, "static", t, s) for a, t, s in STATIC_TREES]
    with tempfile.TemporaryDirectory() as tmp:
        for arch, link, tree, strip in trees:
            label = f"arch=\"{arch}\",link=\"{link}\""
            src = os.path.join(build if tree is None else os.path.join(root, tree),
                               "bin", "edgesync-agent")
            if not os.path.exists(src):
                how = "--static " if link == "static" else ""
                print(f"agent_stripped_bytes{{{label}}} missing ({src}; "
                      f"scripts/cross-build.sh {how}{arch} builds it)")
                continue
            out = os.path.join(tmp, f"{arch}-{link}")
            try:
                subprocess.run([strip, "-o", out, src], check=True)
            except FileNotFoundError:
                print(f"agent_stripped_bytes{{{label}}} unknown ({strip} not installed)")
                continue
            print(f"agent_stripped_bytes{{{label}}} {os.path.getsize(out)}  "
                  f"({kib(os.path.getsize(out))}; unstripped {kib(os.path.getsize(src))})")


def ar_members(path):
    """{name: bytes} of an ar archive (the format of .deb and .ipk)."""
    out = {}
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise ValueError(f"{path}: not an ar archive")
        while True:
            hdr = f.read(60)
            if len(hdr) < 60:
                return out
            name = hdr[:16].decode().strip().rstrip("/")
            size = int(hdr[48:58].decode().strip())
            out[name] = f.read(size)
            if size % 2:
                f.read(1)


def control_field(text, key):
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return None


def package_sizes(pkgdir):
    if not os.path.isdir(pkgdir):
        print(f"packages: none in {pkgdir} (cmake --build BUILD --target packages)")
        return
    for name in sorted(os.listdir(pkgdir)):
        path = os.path.join(pkgdir, name)
        if not name.endswith((".deb", ".ipk")):
            continue
        members = ar_members(path)
        data = next(k for k in members if k.startswith("data.tar"))
        ctrl_name = next(k for k in members if k.startswith("control.tar"))
        with tarfile.open(fileobj=io.BytesIO(members[ctrl_name])) as t:
            control = t.extractfile("./control").read().decode()
        inst = int(control_field(control, "Installed-Size"))
        # dpkg counts Installed-Size in KiB; opkg (ipkg-build) in bytes.
        inst_bytes = inst * 1024 if name.endswith(".deb") else inst
        with tarfile.open(fileobj=io.BytesIO(members[data])) as t:
            unpacked = sum(m.size for m in t.getmembers() if m.isfile())
        print(f"package_bytes{{file=\"{name}\"}} {os.path.getsize(path)}  "
              f"(installed {kib(inst_bytes)} per Installed-Size; {data} {kib(len(members[data]))} "
              f"compressed, {kib(unpacked)} of files)")


def smaps_rollup(pid):
    """{field: kB} of /proc/<pid>/smaps_rollup (Rss, Pss, Private_Clean, ...)."""
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1])
    return out


def resident(settle, static_agent):
    """static_agent: the static agent's binary to run beside the dynamic one
    (a second node), or None."""
    owner = Owner()
    try:
        node = harness.host_node_name()
        nodes = [node] + ([node + "-static"] if static_agent else [])
        c = harness.Cluster(owner, nodes=nodes)
        ctl = c.start_controller(extra=["--log-level", "warn"])
        flags = ["--interval", "10", "--log-level", "warn"]
        agent = c.start_agent(extra=flags)
        procs = [("agent", agent)]
        if static_agent:
            procs.append(("agent-static", c.start_agent(nodes[1], extra=flags,
                                                         binary=static_agent)))
        for n in nodes:
            harness.wait_for(f"first report of {n}", lambda: c.node(n), timeout=60)
        docs = ["apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
                "metadata: {name: a-interval}\nspec: {intervalSeconds: 10}\n"]
        for i in range(99):
            docs.append("apiVersion: edgesync.io/v1alpha1\nkind: CollectorConfig\n"
                        f"metadata: {{name: cc-{i:03d}}}\nspec: {{intervalSeconds: 10}}\n")
        c.ctl("apply", "-f", "-", stdin="---\n".join(docs))
        for n in nodes:
            harness.wait_for(f"100 objects reported by {n}", lambda: len(
                c.node(n)["status"].get("objects", [])) >= 100, timeout=120)
        time.sleep(settle)
        for name, p in procs + [("controller", ctl)]:
            rss = proc_status(p.p.pid, "VmRSS")
            hwm = proc_status(p.p.pid, "VmHWM")
            name = name.replace("-", "_")
            print(f"{name}_rss_steady_100_objects_kib {rss}  ({rss / 1024:.2f} MiB; "
                  f"peak VmHWM {hwm / 1024:.2f} MiB; after {settle} s at a 10 s interval)")
            roll = smaps_rollup(p.p.pid)
            uss = roll["Private_Clean"] + roll["Private_Dirty"]
            print(f"{name}_pss_kib {roll['Pss']}  ({roll['Pss'] / 1024:.2f} MiB: shared "
                  f"pages divided among the processes mapping them)")
            print(f"{name}_uss_kib {uss}  ({uss / 1024:.2f} MiB mapped by it alone; "
                  f"anonymous {roll['Anonymous'] / 1024:.2f} MiB, the rest "
                  f"file-backed pages of its binary and libraries)")
    finally:
        owner.run_cleanups()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--settle", type=int, default=25,
                    help="seconds of steady state before measuring (default 25)")
    ap.add_argument("--static-build", default=os.path.join(HERE, "..", "build-static-amd64"),
                    help="tree of the static x86_64 agent measured beside the dynamic one")
    ap.add_argument("--arch-only", action="store_true",
                    help="print only the per-architecture agent sizes")
    args = ap.parse_args()
    build = use_build(args.build)
    arch_sizes(build)
    if args.arch_only:
        return
    stripped_sizes(harness.BIN_DIR)
    package_sizes(os.path.join(build, "packages"))
    static_agent = os.path.join(os.path.abspath(args.static_build), "bin", "edgesync-agent")
    if not os.path.exists(static_agent):
        print(f"agent_static: not measured ({static_agent} missing; "
              "scripts/cross-build.sh --static amd64 builds it)")
        static_agent = None
    resident(args.settle, static_agent)


if __name__ == "__main__":
    main()
