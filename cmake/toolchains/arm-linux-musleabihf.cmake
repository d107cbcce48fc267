# arm-linux-musleabihf.cmake - the static agent for 32-bit ARMv7 hard-float,
# linked against musl (Debian's musl-dev:armhf over gcc-arm-linux-gnueabihf:
# ARMv7-A, Thumb-2, VFPv3-D16, as Debian's armhf). musl 1.2 has a 64-bit
# time_t on every architecture, so no _TIME_BITS flag is needed.
# scripts/cross-build.sh --static armhf uses it. See EsMusl.cmake.
# OpenWrt names: every ARMv7-A target with hard float has at least
# VFPv3-D16, so the one binary serves the Cortex-A7, A9 and A15 ones.
set(ES_MUSL_TRIPLET arm-linux-musleabihf)
set(ES_MUSL_GNU_TRIPLET arm-linux-gnueabihf)
set(ES_MUSL_PACKAGE musl-dev:armhf)
set(ES_CROSS_PROCESSOR armv7l)
set(ES_CROSS_DEB_ARCH armhf)
set(ES_CROSS_QEMU qemu-arm-static)
set(ES_IPK_ARCHS arm_cortex-a7_neon-vfpv4 arm_cortex-a9_vfpv3-d16 arm_cortex-a15_neon-vfpv4)
include(${CMAKE_CURRENT_LIST_DIR}/EsMusl.cmake)
