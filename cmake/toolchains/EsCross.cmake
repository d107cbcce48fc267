# EsCross.cmake - the part the cross toolchain files share; included by
# aarch64-linux-gnu.cmake and arm-linux-gnueabihf.cmake after they set
# ES_CROSS_TRIPLET (GNU triplet, also Debian's multiarch directory name),
# ES_CROSS_PROCESSOR (CMAKE_SYSTEM_PROCESSOR), ES_CROSS_DEB_ARCH (dpkg's
# name) and ES_CROSS_QEMU (the qemu-user-static binary).
#
# Compilers: Debian's crossbuild-essential-<debarch> (<triplet>-gcc).
# Libraries: Debian's multiarch -dev packages (libbpf-dev:<debarch>, ...),
# which install into /usr/lib/<triplet> and /usr/include(/<triplet>). Only
# those directories are searched for libraries and headers: a host library
# never leaks into a target's link. pkg-config reads only the target's .pc
# files (PKG_CONFIG_LIBDIR), so the -I/-L flags it gives are the target's.
# Tests run through qemu-user-static, which CTest prepends to every test
# command (CMAKE_CROSSCOMPILING_EMULATOR), so no binfmt_misc registration
# is needed. The target's loader and libraries are the multiarch ones
# (libc6:<debarch>, pulled in by the -dev packages, at the paths the
# binaries name: /lib/ld-linux-aarch64.so.1, /usr/lib/<triplet>/...).
# Not `-L /usr/<triplet>` (the cross toolchain's own libc): with it, qemu
# 7.2 hangs in the first pthread_create() and in setuid().

include(${CMAKE_CURRENT_LIST_DIR}/EsToolchain.cmake)
es_toolchain(${ES_CROSS_TRIPLET}-gcc ${ES_CROSS_TRIPLET} crossbuild-essential-${ES_CROSS_DEB_ARCH})
set(CMAKE_LIBRARY_ARCHITECTURE ${ES_CROSS_TRIPLET})

# Headers and libraries from the target's multiarch directories (and the
# cross libc in /usr/<triplet>); programs (clang, bpftool, python3) from
# the build host.
set(CMAKE_FIND_ROOT_PATH /usr/${ES_CROSS_TRIPLET})

# pkg-config: the target's .pc files only. The environment is what
# FindPkgConfig hands to pkg-config, for this configure and the
# third-party ones (they inherit it).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${ES_CROSS_TRIPLET}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
