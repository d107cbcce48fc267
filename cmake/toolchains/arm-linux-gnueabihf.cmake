# arm-linux-gnueabihf.cmake - cross build for 32-bit ARMv7 hard-float
# (Debian armhf: ARMv7-A, Thumb-2, VFPv3-D16).
#   cmake -S . -B build-armhf --toolchain cmake/toolchains/arm-linux-gnueabihf.cmake
# (scripts/cross-build.sh does it). See EsCross.cmake beside this file.
set(ES_CROSS_TRIPLET arm-linux-gnueabihf)
set(ES_CROSS_PROCESSOR armv7l)
set(ES_CROSS_DEB_ARCH armhf)
set(ES_CROSS_QEMU qemu-arm-static)
# 64-bit time_t and off_t (glibc's _TIME_BITS=64, which needs
# _FILE_OFFSET_BITS=64): Debian 12's armhf ABI still has a 32-bit time_t,
# which ends in 2038 and cannot hold certificate validity dates or the
# RFC 3339 range the agent accepts. The flag changes only edgesync's own
# code and its third-party archives (built with this file too): none of the
# Debian libraries it links (libbpf, libelf, zlib, cjson, sqlite3, yaml,
# nftables, cmocka) takes a time_t, off_t or struct stat/timespec in a
# function edgesync calls.
set(CMAKE_C_FLAGS_INIT "-D_FILE_OFFSET_BITS=64 -D_TIME_BITS=64")
include(${CMAKE_CURRENT_LIST_DIR}/EsCross.cmake)
