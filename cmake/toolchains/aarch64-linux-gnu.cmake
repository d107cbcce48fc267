# aarch64-linux-gnu.cmake - cross build for 64-bit ARM (Debian arm64).
#   cmake -S . -B build-arm64 --toolchain cmake/toolchains/aarch64-linux-gnu.cmake
# (scripts/cross-build.sh does it). See EsCross.cmake beside this file.
set(ES_CROSS_TRIPLET aarch64-linux-gnu)
set(ES_CROSS_PROCESSOR aarch64)
set(ES_CROSS_DEB_ARCH arm64)
set(ES_CROSS_QEMU qemu-aarch64-static)
include(${CMAKE_CURRENT_LIST_DIR}/EsCross.cmake)
