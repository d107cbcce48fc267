# EsMusl.cmake - the part the static (musl) toolchain files share; included
# by x86_64-linux-musl.cmake, aarch64-linux-musl.cmake and
# arm-linux-musleabihf.cmake after they set ES_MUSL_TRIPLET (musl's
# multiarch name, /usr/lib/<triplet>), ES_MUSL_GNU_TRIPLET (the glibc
# triplet whose kernel headers to use), ES_CROSS_PROCESSOR, ES_CROSS_DEB_ARCH,
# ES_CROSS_QEMU (empty for the build machine's own architecture) and
# ES_IPK_ARCHS (the OpenWrt architecture names the static agent is
# packaged for).
#
# Compiler: Debian's musl-gcc wrappers (musl-tools for x86_64, musl-dev:<arch>
# for the others: /usr/bin/<triplet>-gcc), which run the GNU cross compiler
# with musl's specs file: musl's headers and libraries only, no glibc.
# Every program is linked -static. The tree sets ES_STATIC_AGENT: it builds
# the agent only, its libraries from Debian source packages
# (cmake/EsThirdPartyStatic.cmake).
# Kernel headers: musl ships none; <tree>/musl-include links linux/,
# asm-generic/ and asm/ (the target's, from linux-libc-dev) and the
# declarations-only nftables/ header (libnftables is loaded with dlopen,
# which a static program cannot do: the backend then says so).

include(${CMAKE_CURRENT_LIST_DIR}/EsToolchain.cmake)
es_toolchain(${ES_MUSL_TRIPLET}-gcc ${ES_MUSL_GNU_TRIPLET} ${ES_MUSL_PACKAGE})

set(_es_musl_inc "${CMAKE_BINARY_DIR}/musl-include")
foreach(link linux asm-generic nftables)
    if(NOT EXISTS "${_es_musl_inc}/${link}")
        file(MAKE_DIRECTORY "${_es_musl_inc}")
        file(CREATE_LINK "/usr/include/${link}" "${_es_musl_inc}/${link}" SYMBOLIC)
    endif()
endforeach()
if(NOT EXISTS "${_es_musl_inc}/asm")
    file(CREATE_LINK "/usr/include/${ES_MUSL_GNU_TRIPLET}/asm" "${_es_musl_inc}/asm" SYMBOLIC)
endif()
set(CMAKE_C_FLAGS_INIT "-idirafter ${_es_musl_inc}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

# Libraries and headers: musl's and the tree's own _deps/install only.
set(CMAKE_FIND_ROOT_PATH /usr/lib/${ES_MUSL_TRIPLET} /usr/include/${ES_MUSL_TRIPLET})
set(ENV{PKG_CONFIG_LIBDIR} "${CMAKE_BINARY_DIR}/_deps/install/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

set(ES_STATIC_AGENT ON CACHE BOOL "Build the static agent only (musl toolchain)" FORCE)
set(ES_IPK_ARCHS "${ES_IPK_ARCHS}" CACHE INTERNAL "OpenWrt architectures of the .ipk packages")
