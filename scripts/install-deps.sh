#!/usr/bin/env bash
# install-deps.sh - install what building and testing edgesync needs on
# Debian 12 (bookworm). Run as root. Idempotent: a rerun on a ready machine
# only checks and returns.
#
# It also adds a deb-src entry for Debian 13 (trixie): the build fetches the
# mbedTLS 3.6 and libwebsockets 4.3 sources from there with
# `apt-get source --download-only NAME/trixie` (see cmake/EsThirdParty.cmake).
#
# It also installs the tools of the platform tests (tests/platform/):
# podman with runc (crun refuses hybrid cgroup v1 hosts), mmdebstrap and
# systemd-nspawn (systemd-container). As root, podman and mmdebstrap need
# no subordinate ids (uidmap). `--build-only` leaves those out (the
# container image's build stage uses it).
#
# libuv1-dev: the controller's event loop (libwebsockets' libuv build,
# cmake/EsThirdParty.cmake; the agents do not link it). The cross and
# static trees leave it out (ES_CONTROLLER_LIBUV is off there), so it has
# no :arm64 / :armhf entry below.
#
# uthash-dev: header-only hash tables of the controller's per-node state
# (its etcd report cursors, a batch's nodes).
#
# etcd-server and etcd-client (etcd 3.4, not for `--build-only`) are for
# the controller's etcd client tests, which start a one-member etcd of
# their own on loopback; the package's own etcd.service is stopped and
# disabled again, so no etcd is left listening on the default ports.
set -euo pipefail

build_only=0
if [[ ${1:-} == --build-only ]]; then
    build_only=1
fi

if [[ ${EUID} -ne 0 ]]; then
    echo "install-deps.sh: run as root" >&2
    exit 1
fi

PACKAGES=(
    build-essential cmake pkg-config clang llvm bpftool libbpf-dev libelf-dev
    zlib1g-dev libcjson-dev libsqlite3-dev sqlite3 libcmocka-dev libyaml-dev
    python3 python3-jsonschema python3-yaml bzip2 ca-certificates curl procps
    iproute2 dpkg-dev prometheus nftables libnftables-dev
    libclang-rt-14-dev
    libuv1-dev
    uthash-dev
)
if [[ ${build_only} == 0 ]]; then
    PACKAGES+=(podman runc mmdebstrap systemd-container)
    PACKAGES+=(etcd-server etcd-client)
fi

SRC_FILE=/etc/apt/sources.list.d/trixie-src.sources
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
wrote_sources=0

if [[ ! -f ${SRC_FILE} ]]; then
    cat >"${SRC_FILE}" <<SOURCES
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie trixie-updates
Components: main
Signed-By: ${KEYRING}

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: trixie-security
Components: main
Signed-By: ${KEYRING}
SOURCES
    echo "install-deps.sh: wrote ${SRC_FILE}"
    wrote_sources=1
fi

# Cross builds (scripts/cross-build.sh, cmake/toolchains/): Debian's cross
# compilers, each target's libraries as multiarch packages (all Multi-Arch:
# same, so they sit beside the amd64 ones; apt keeps both at one version),
# libsystemd0 for the unit tests of es_notify, and qemu-user-static to
# run the targets' tests (`--build-only` leaves them out). zlib stays in
# the list even where nothing links it directly: libwebsockets needs it.
CROSS_ARCHS=(arm64 armhf)
CROSS_LIBS=(libbpf-dev libelf-dev zlib1g-dev libcjson-dev libsqlite3-dev libcmocka-dev
    libyaml-dev libnftables-dev libsystemd0)
if [[ ${build_only} == 0 ]]; then
    PACKAGES+=(qemu-user-static)
    for a in "${CROSS_ARCHS[@]}"; do
        PACKAGES+=("crossbuild-essential-${a}")
        for l in "${CROSS_LIBS[@]}"; do
            PACKAGES+=("${l}:${a}")
        done
    done
fi
# The static agent (scripts/cross-build.sh --static, cmake/toolchains/
# *-musl*.cmake): Debian's musl-gcc wrappers for x86_64 (musl-tools) and
# the cross targets (musl-dev:<arch>, over the cross compilers above), and
# tcl, whose tclsh makes SQLite's amalgamation from its source package.
if [[ ${build_only} == 0 ]]; then
    PACKAGES+=(musl-tools tcl)
    for a in "${CROSS_ARCHS[@]}"; do
        PACKAGES+=("musl-dev:${a}")
    done
fi
added_arch=0
if [[ ${build_only} == 0 ]]; then
    for a in "${CROSS_ARCHS[@]}"; do
        if ! dpkg --print-foreign-architectures | grep -qx "${a}"; then
            dpkg --add-architecture "${a}"
            echo "install-deps.sh: added dpkg architecture ${a}"
            added_arch=1
        fi
    done
fi

# A name without :ARCH is this machine's architecture (or all): with
# foreign architectures added, dpkg-query lists one line per architecture.
native_arch=$(dpkg --print-architecture)
missing=()
for p in "${PACKAGES[@]}"; do
    want="${native_arch}|all"
    [[ ${p} == *:* ]] && want=${p##*:}
    if ! dpkg-query -W -f='${Status} ${Architecture}\n' "${p}" 2>/dev/null |
        grep -Eqx "install ok installed (${want})"; then
        missing+=("${p}")
    fi
done

# True when apt has the package lists this script relies on: bookworm
# binaries, and trixie sources for the third-party tarballs.
have_debian_lists() {
    compgen -G '/var/lib/apt/lists/*_dists_bookworm_*Packages*' >/dev/null &&
        compgen -G '/var/lib/apt/lists/*_dists_trixie_*Sources*' >/dev/null
}

if [[ ${#missing[@]} -eq 0 && ${wrote_sources} -eq 0 && ${added_arch} -eq 0 ]] && have_debian_lists; then
    echo "install-deps.sh: all ${#PACKAGES[@]} packages already installed"
    exit 0
fi

# A failing third-party source (a vendor repository that is down or has a
# stale key) must not stop us; the Debian lists are what matter.
if ! apt-get update; then
    if have_debian_lists; then
        echo "install-deps.sh: apt-get update reported errors; Debian lists are present, continuing" >&2
    else
        echo "install-deps.sh: apt-get update failed and the Debian package lists are missing" >&2
        exit 1
    fi
fi

if [[ ${#missing[@]} -gt 0 ]]; then
    echo "install-deps.sh: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
    if [[ " ${missing[*]} " == *" etcd-server "* ]] && [[ -d /run/systemd/system ]]; then
        systemctl disable --now etcd.service >/dev/null 2>&1 || true
    fi
fi
echo "install-deps.sh: done"
