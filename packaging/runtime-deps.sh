#!/bin/sh
# runtime-deps.sh BINARY... - prints, one per line and sorted, the Debian
# packages that hold the shared libraries the BINARYs link directly (as ldd
# resolves them on this machine). Used by the container image's build stage
# (the runtime stage installs exactly these: the controller image's for
# edgesync-controller and edgesyncctl) and by the .ipk's Depends.
# Exit status 1 when a library is missing or belongs to no package.
set -eu
[ $# -ge 1 ] || { echo "usage: runtime-deps.sh BINARY..." >&2; exit 1; }
for bin in "$@"; do
    [ -x "$bin" ] || { echo "runtime-deps.sh: $bin: not an executable" >&2; exit 1; }
done
# In a command substitution, so that an exit 1 inside is the script's.
pkgs=$(for bin in "$@"; do
    # Only the libraries BINARY names itself (DT_NEEDED): theirs are their
    # packages' own Depends.
    needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    libs=$(ldd "$bin" | awk -v needed=" $(echo $needed) " '
        index(needed, " " $1 " ") == 0 { next }
        /=> not found/ { print "MISSING:" $1; next }
        $2 == "=>" && $3 ~ /^\// { print $3 }')
    for lib in $libs; do
        case $lib in
        MISSING:*) echo "runtime-deps.sh: $bin needs ${lib#MISSING:}, which is not installed" >&2; exit 1 ;;
        esac
        real=$(readlink -f "$lib")
        # dpkg knows the path a package shipped: try the resolved file, then
        # the name ldd gave, each with and without the /usr merge.
        pkg=""
        for p in "$real" "$lib" "/usr$real" "${real#/usr}" "/usr$lib" "${lib#/usr}"; do
            pkg=$(dpkg-query -S "$p" 2>/dev/null | head -n1 | cut -d: -f1) || true
            [ -n "$pkg" ] && break
        done
        if [ -z "$pkg" ]; then
            echo "runtime-deps.sh: $lib ($bin) belongs to no Debian package" >&2
            exit 1
        fi
        echo "$pkg"
    done
done)
printf '%s\n' "$pkgs" | sort -u
