# x86_64-linux-musl.cmake - the static agent for x86-64, linked against musl
# (Debian's musl-tools). scripts/cross-build.sh --static amd64 uses it.
# See EsMusl.cmake beside this file.
set(ES_MUSL_TRIPLET x86_64-linux-musl)
set(ES_MUSL_GNU_TRIPLET x86_64-linux-gnu)
set(ES_MUSL_PACKAGE musl-tools)
set(ES_CROSS_PROCESSOR x86_64)
set(ES_CROSS_DEB_ARCH amd64)
set(ES_CROSS_QEMU "")
set(ES_IPK_ARCHS x86_64)
include(${CMAKE_CURRENT_LIST_DIR}/EsMusl.cmake)
