#!/usr/bin/env bash
# test.sh - the README's test command and CI's only step.
#
# Installs what the build needs (Debian 12 packages; mbedTLS 3.6 and
# libwebsockets 4.3 are built from Debian 13 sources inside the build tree),
# builds with warnings as errors, runs the whole suite, cross-builds arm64
# and armhf (build-arm64/, build-armhf/: scripts/cross-build.sh) and runs
# their unit tests and the agent's smoke test under qemu-user-static,
# builds the static (musl) agent of amd64, arm64 and armhf
# (build-static-<arch>/: `cross-build.sh --static`) with its .ipk packages
# and runs its smoke test (under qemu-user-static for the ARM ones), then
# builds again with AddressSanitizer and UndefinedBehaviorSanitizer and
# runs the unit and integration tests a second time. Last it builds the libFuzzer targets
# (tests/fuzz) with clang in a tree of their own and runs each for
# ES_FUZZ_SECONDS (CTest label fuzz).
#
# Environment: ES_BUILD_DIR (default build), ES_JOBS (default nproc),
# ES_SKIP_SANITIZE=1 skips the sanitizer pass, ES_SKIP_FUZZ=1 the fuzz
# pass and ES_SKIP_CROSS=1 the arm64/armhf and static passes (local use
# only).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${EUID} -eq 0 ]]; then
    bash scripts/install-deps.sh
else
    echo "test.sh: not root, skipping scripts/install-deps.sh" >&2
fi

build=${ES_BUILD_DIR:-build}
jobs=${ES_JOBS:-$(nproc)}

# The third-party builds (mbedTLS and libwebsockets for every tree, the
# static agent's libraries) are kept the same way, under a key of their
# settings (cmake/EsThirdPartyBuild.cmake, ES_DEPS_CACHE).
if [[ ${CI:-} == true && ${EUID} -eq 0 && -z ${ES_DEPS_CACHE:-} ]]; then
    export ES_DEPS_CACHE=/var/cache/edgesync/deps
fi
cmake -S . -B "${build}" -DES_WERROR=ON
cmake --build "${build}" -j "${jobs}"
# The platform tests (label platform) record how long each step took.
# CI builds in a new clone every run: their Debian roots are kept where the
# next run finds them (tests/platform/plattest.py, ES_PLATFORM_ROOTS).
if [[ ${CI:-} == true && ${EUID} -eq 0 && -z ${ES_PLATFORM_ROOTS:-} ]]; then
    export ES_PLATFORM_ROOTS=/var/cache/edgesync/platform-roots
fi
rm -f "${build}/platform/timings.txt"
status=0
ctest --test-dir "${build}" --output-on-failure -j "${jobs}" --timeout 300 || status=$?
if [[ -f ${build}/platform/timings.txt ]]; then
    echo "test.sh: platform test steps:"
    cat "${build}/platform/timings.txt"
fi
if [[ ${status} != 0 ]]; then
    exit "${status}"
fi

# The arm64 and armhf builds (scripts/cross-build.sh): their unit tests
# and the agent's smoke test under qemu-user-static, and their .deb
# packages. Exit 77 from it (a cross toolchain missing) is a skip, said why.
if [[ ${ES_SKIP_CROSS:-0} != 1 ]]; then
    cross=0
    ES_BUILD_DIR=${build} ES_JOBS=${jobs} bash scripts/cross-build.sh --test --packages \
        arm64 armhf || cross=$?
    if [[ ${cross} == 77 ]]; then
        echo "test.sh: cross builds skipped (exit 77): the cross toolchain is missing (see above)" >&2
    elif [[ ${cross} != 0 ]]; then
        exit "${cross}"
    fi
    # The static (musl) agent of each architecture: its smoke test
    # (label cross) and its .ipk packages.
    static=0
    ES_BUILD_DIR=${build} ES_JOBS=${jobs} bash scripts/cross-build.sh --static --test \
        --packages amd64 arm64 armhf || static=$?
    if [[ ${static} == 77 ]]; then
        echo "test.sh: static builds skipped (exit 77): a musl toolchain is missing (see above)" >&2
    elif [[ ${static} != 0 ]]; then
        exit "${static}"
    fi
fi

if [[ ${ES_SKIP_SANITIZE:-0} != 1 ]]; then
    asan="${build}-asan"
    mkdir -p "${asan}"
    # The third-party libraries are built without sanitizers: reuse them.
    if [[ ! -e ${asan}/_deps ]]; then
        ln -s "$(cd "${build}" && pwd)/_deps" "${asan}/_deps"
    fi
    cmake -S . -B "${asan}" -DES_WERROR=ON -DES_SANITIZE=ON
    cmake --build "${asan}" -j "${jobs}"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir "${asan}" --output-on-failure -j "${jobs}" \
            --timeout 300 -L 'unit|integration' -LE load
fi

if [[ ${ES_SKIP_FUZZ:-0} != 1 ]]; then
    fuzz="${build}-fuzz"
    mkdir -p "${fuzz}"
    if [[ ! -e ${fuzz}/_deps ]]; then
        ln -s "$(cd "${build}" && pwd)/_deps" "${fuzz}/_deps"
    fi
    # Without clang the tree is configured with the default compiler: its
    # fuzz tests then exit 77 and CTest lists them as skipped, with why.
    fuzz_cc=()
    if command -v clang >/dev/null; then
        fuzz_cc=(-DCMAKE_C_COMPILER=clang)
    else
        echo "test.sh: clang not found: the fuzz tests will be skipped" \
             "(scripts/install-deps.sh installs clang and libclang-rt-14-dev)" >&2
    fi
    cmake -S . -B "${fuzz}" "${fuzz_cc[@]}" -DES_WERROR=ON -DES_FUZZ=ON
    cmake --build "${fuzz}" -j "${jobs}" --target fuzz
    ctest --test-dir "${fuzz}" --output-on-failure -j "${jobs}" -L fuzz
fi
