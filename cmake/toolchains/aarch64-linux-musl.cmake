# aarch64-linux-musl.cmake - the static agent for 64-bit ARM, linked against
# musl (Debian's musl-dev:arm64 over gcc-aarch64-linux-gnu).
# scripts/cross-build.sh --static arm64 uses it. See EsMusl.cmake.
# OpenWrt names: the ARMv8-A baseline code runs on every aarch64 target.
set(ES_MUSL_TRIPLET aarch64-linux-musl)
set(ES_MUSL_GNU_TRIPLET aarch64-linux-gnu)
set(ES_MUSL_PACKAGE musl-dev:arm64)
set(ES_CROSS_PROCESSOR aarch64)
set(ES_CROSS_DEB_ARCH arm64)
set(ES_CROSS_QEMU qemu-aarch64-static)
set(ES_IPK_ARCHS aarch64_generic aarch64_cortex-a53 aarch64_cortex-a72)
include(${CMAKE_CURRENT_LIST_DIR}/EsMusl.cmake)
