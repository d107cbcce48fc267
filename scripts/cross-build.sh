#!/usr/bin/env bash
# cross-build.sh [ARCH...] [--static] - builds edgesync for each Debian
# architecture named (amd64 arm64 armhf; default all three) on this amd64
# machine:
#   amd64 -> build/        (the native tree, as scripts/test.sh builds it)
#   arm64 -> build-arm64/  (cmake/toolchains/aarch64-linux-gnu.cmake)
#   armhf -> build-armhf/  (cmake/toolchains/arm-linux-gnueabihf.cmake)
# With --static, instead of those, the static (musl) agent of each:
#   amd64 -> build-static-amd64/  (cmake/toolchains/x86_64-linux-musl.cmake)
#   arm64 -> build-static-arm64/  (cmake/toolchains/aarch64-linux-musl.cmake)
#   armhf -> build-static-armhf/  (cmake/toolchains/arm-linux-musleabihf.cmake)
# each with its zlib, cJSON, SQLite, libelf, libbpf, mbedTLS and
# libwebsockets built from Debian source packages once into its _deps/
# (1.5 to 3 min per tree on 2 cores), and reused afterwards.
# The native tree is always built first: its eBPF objects are the ones
# every architecture embeds (the cross trees take them through
# ES_BPF_SKEL_DIR), and its downloaded third-party tarballs are reused
# (ES_TARBALL_DIR). Each cross tree builds its own mbedTLS and
# libwebsockets once into its _deps/ (about 1.5 min each on 2 cores) and
# reuses them on every later run.
#
# Options: --test runs each tree's unit tests and, for the cross trees, the
# agent's smoke test under qemu-user-static (label cross); --packages makes
# each tree's .deb packages (<tree>/packages/; a static tree's: one .ipk
# per OpenWrt architecture name). With --static the tests are the smoke
# test (label cross) of each static agent and, in build-static-amd64/, its
# eBPF collectors beside the dynamic agent's (label bpf; root, else skipped).
# Environment: ES_BUILD_DIR (native tree, default build), ES_JOBS (default
# 2), ES_CMAKE_ARGS (extra configure arguments for every tree).
# Exit status 77 when a requested cross toolchain is missing (with the
# package to install), so scripts/test.sh can report it as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

run_tests=0
make_packages=0
static=0
archs=()
for a in "$@"; do
    case $a in
    --test) run_tests=1 ;;
    --packages) make_packages=1 ;;
    --static) static=1 ;;
    amd64 | arm64 | armhf) archs+=("$a") ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "cross-build.sh: unknown argument '$a' (architectures: amd64 arm64 armhf)" >&2
        exit 2
        ;;
    esac
done
[[ ${#archs[@]} -gt 0 ]] || archs=(amd64 arm64 armhf)

native=${ES_BUILD_DIR:-build}
jobs=${ES_JOBS:-2}
read -r -a extra <<<"${ES_CMAKE_ARGS:-}"

declare -A TRIPLET=([arm64]=aarch64-linux-gnu [armhf]=arm-linux-gnueabihf)
declare -A QEMU=([arm64]=qemu-aarch64-static [armhf]=qemu-arm-static)
declare -A MUSL=([amd64]=x86_64-linux-musl [arm64]=aarch64-linux-musl [armhf]=arm-linux-musleabihf)
declare -A MUSL_PKG=([amd64]=musl-tools [arm64]=musl-dev:arm64 [armhf]=musl-dev:armhf)

# Every requested cross toolchain is there before anything is built.
for a in "${archs[@]}"; do
    if [[ $static == 1 ]]; then
        if ! command -v "${MUSL[$a]}-gcc" >/dev/null; then
            echo "cross-build.sh: ${MUSL[$a]}-gcc not found: install ${MUSL_PKG[$a]}" \
                 "(scripts/install-deps.sh does it)" >&2
            exit 77
        fi
        if ! command -v tclsh >/dev/null; then
            echo "cross-build.sh: tclsh not found (SQLite's amalgamation): install tcl" >&2
            exit 77
        fi
    fi
    [[ $a == amd64 ]] && continue
    t=${TRIPLET[$a]}
    if ! command -v "$t-gcc" >/dev/null; then
        echo "cross-build.sh: $t-gcc not found: install crossbuild-essential-$a and the :$a" \
             "libraries (scripts/install-deps.sh does it)" >&2
        exit 77
    fi
    if [[ $static == 0 && ! -e /usr/lib/$t/pkgconfig/libbpf.pc ]]; then
        echo "cross-build.sh: libbpf-dev:$a not installed (scripts/install-deps.sh does it)" >&2
        exit 77
    fi
    if [[ $run_tests == 1 ]] && ! command -v "${QEMU[$a]}" >/dev/null; then
        echo "cross-build.sh: ${QEMU[$a]} not found: install qemu-user-static" >&2
        exit 77
    fi
done

step() {
    local what=$1 t0=$SECONDS
    shift
    echo "cross-build.sh: $what" >&2
    "$@"
    echo "cross-build.sh: $what: $((SECONDS - t0)) s" >&2
}

step "configure $native (amd64)" cmake -S . -B "$native" -DES_WERROR=ON "${extra[@]}"
step "build $native (amd64)" cmake --build "$native" -j "$jobs"
# The static trees take the tarballs from the tree before them: the first
# from the native tree's, the others also the five static libraries' the
# first downloaded; and SQLite's amalgamation, the same for every target.
tarballs=$PWD/$native/_deps/dl
amalgamation=""
for a in "${archs[@]}"; do
    if [[ $static == 1 ]]; then
        tree=build-static-$a
        step "configure $tree ($a, static)" cmake -S . -B "$tree" \
            --toolchain "cmake/toolchains/${MUSL[$a]}.cmake" -DES_WERROR=ON \
            -DES_BPF_SKEL_DIR="$PWD/$native/bpf" -DES_NATIVE_BIN_DIR="$PWD/$native/bin" \
            -DES_TARBALL_DIR="$tarballs" -DES_SQLITE_AMALGAMATION="$amalgamation" \
            "${extra[@]}"
        tarballs=$PWD/$tree/_deps/dl
        amalgamation=$PWD/$tree/_deps/build/sqlite3/amalgamation
        step "build $tree ($a, static)" cmake --build "$tree" -j "$jobs"
    elif [[ $a == amd64 ]]; then
        tree=$native
    else
        tree=build-$a
        step "configure $tree ($a)" cmake -S . -B "$tree" \
            --toolchain "cmake/toolchains/${TRIPLET[$a]}.cmake" -DES_WERROR=ON \
            -DES_BPF_SKEL_DIR="$PWD/$native/bpf" -DES_NATIVE_BIN_DIR="$PWD/$native/bin" \
            -DES_TARBALL_DIR="$PWD/$native/_deps/dl" "${extra[@]}"
        step "build $tree ($a)" cmake --build "$tree" -j "$jobs"
    fi
    # Packages first: the cross trees' tests check them.
    if [[ $make_packages == 1 ]]; then
        step "packages $tree ($a)" cmake --build "$tree" --target packages
    fi
    if [[ $run_tests == 1 ]]; then
        labels=unit
        [[ $a == amd64 ]] || labels='unit|cross'
        [[ $static == 0 ]] || labels='cross|bpf'
        step "test $tree ($a)" ctest --test-dir "$tree" -L "$labels" -j "$jobs" \
            --output-on-failure --timeout 300
    fi
done
