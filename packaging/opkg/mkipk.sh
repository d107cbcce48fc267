#!/bin/sh
# mkipk.sh BUILD_DIR SOURCE_DIR VERSION ARCH OUT_DIR - makes
# OUT_DIR/edgesync-agent_VERSION_ARCH.ipk for opkg: an ar archive of
# debian-binary ("2.0"), control.tar.gz (control, conffiles, postinst,
# prerm) and data.tar.gz (the stripped agent from `cmake --install
# --component agent --strip`, /etc/edgesync/agent.conf, the procd init
# script /etc/init.d/edgesync-agent). Run by the `packages` build target.
#
# In the native tree the binary is this machine's (glibc and Debian's
# library ABIs); Depends names the packages of the libraries it links
# (runtime-deps.sh), so it installs on opkg systems whose feeds carry them.
# In a static tree (musl) the binary links nothing and the package has no
# Depends: it installs on OpenWrt as it is. ARCH is opkg's name (x86_64,
# aarch64_generic, arm_cortex-a7_neon-vfpv4, ...).
set -eu
build=$1 src=$2 version=$3 arch=$4 out=$5
pkg=edgesync-agent
here=$src/packaging

work=$(mktemp -d "${TMPDIR:-/tmp}/es-ipk.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
data=$work/data ctrl=$work/control
mkdir -p "$data" "$ctrl"

DESTDIR=$data cmake --install "$build" --component agent --prefix /usr --strip >/dev/null
# procd, not systemd; no documentation on small devices.
rm -rf "$data/lib/systemd" "$data/usr/share/doc"
rmdir "$data/lib" "$data/usr/share" 2>/dev/null || true
install -D -m 0755 "$here/opkg/edgesync-agent.init" "$data/etc/init.d/edgesync-agent"
[ -x "$data/usr/bin/edgesync-agent" ] || { echo "mkipk.sh: no usr/bin/edgesync-agent installed" >&2; exit 1; }
[ -f "$data/etc/edgesync/agent.conf" ] || { echo "mkipk.sh: no etc/edgesync/agent.conf installed" >&2; exit 1; }

# A static agent (the musl trees, cmake/toolchains/*-musl*.cmake) names no
# library (no NEEDED entry, no program interpreter): no Depends line.
if readelf -d "$build/bin/edgesync-agent" | grep -q '(NEEDED)'; then
    depends=$("$here/runtime-deps.sh" "$build/bin/edgesync-agent" | paste -sd, - | sed 's/,/, /g')
    depends_line="Depends: $depends
"
    kind="Runs under procd."
else
    depends_line=""
    kind="Runs under procd; linked statically (musl), it needs no library."
fi
# Installed-Size in bytes, as OpenWrt's ipkg-build counts it.
size=$(find "$data" -type f -exec cat {} + | wc -c)
cat >"$ctrl/control" <<CONTROL
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: edgesync maintainers <edgesync@example.org>
Section: net
Priority: optional
${depends_line}Installed-Size: $size
Description: edgesync agent: host state, desired-state cache and sync
 Collects the host's state, caches the desired state it was given in
 SQLite so it keeps enforcing it offline, and syncs both with the
 edgesync controller over a mutual-TLS WebSocket. $kind
CONTROL
echo /etc/edgesync/agent.conf >"$ctrl/conffiles"
install -m 0755 "$here/opkg/postinst" "$ctrl/postinst"
install -m 0755 "$here/opkg/prerm" "$ctrl/prerm"

# Reproducible archives: fixed owner, order and time.
epoch=${SOURCE_DATE_EPOCH:-0}
tarit() {
    tar --format=gnu --numeric-owner --owner=0 --group=0 --sort=name \
        --mtime="@$epoch" -C "$1" -cf - . | gzip -9n >"$2"
}
tarit "$data" "$work/data.tar.gz"
tarit "$ctrl" "$work/control.tar.gz"
printf '2.0\n' >"$work/debian-binary"

mkdir -p "$out"
rm -f "$out/${pkg}_${version}_${arch}.ipk"
(cd "$work" && ar rcD "$out/${pkg}_${version}_${arch}.ipk" debian-binary control.tar.gz data.tar.gz)
echo "mkipk.sh: wrote $out/${pkg}_${version}_${arch}.ipk"
