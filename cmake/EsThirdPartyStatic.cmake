# EsThirdPartyStatic.cmake - the static agent's libraries (ES_STATIC_AGENT,
# set by the musl toolchain files in cmake/toolchains/): zlib, cJSON,
# SQLite, libelf (from elfutils) and libbpf, each built static with the
# tree's musl compiler from its Debian 13 source package, checked against
# the SHA-256 pinned here, once per tree into _deps/ (EsThirdPartyBuild.cmake,
# the same download, check and cache as mbedTLS and libwebsockets).
# Exports es::zlib es::cjson es::sqlite3 es::elf es::bpf, and the
# ZLIB_LIBRARY / ZLIB_INCLUDE_DIR that FindZLIB and the libwebsockets build
# then take.
#
# None of the five ships a build that fits (zlib's and cJSON's CMake
# builds always make shared libraries too, which musl-dev:<arch> cannot
# link; SQLite's needs the amalgamation made first; elfutils' configure
# requires argp, which musl does not have, though its libelf does not use
# it; libbpf has a Makefile only): each is compiled by a small project of
# its own in cmake/thirdparty/<name>/ from the unpacked sources.

include_guard(GLOBAL)
include(EsThirdPartyBuild)

set(ES_ZLIB_TARBALL zlib_1.3.dfsg+really1.3.1.orig.tar.gz)
set(ES_ZLIB_SHA256 60dd315c07f616887caa029408308a018ace66e3d142726a97db164b3b8f69fb)
set(ES_CJSON_TARBALL cjson_1.7.18.orig.tar.gz)
set(ES_CJSON_SHA256 3aa806844a03442c00769b83e99970be70fbef03735ff898f4811dd03b9f5ee5)
set(ES_SQLITE_TARBALL sqlite3_3.46.1.orig.tar.xz)
set(ES_SQLITE_SHA256 d0cdd2ece271b29e7ce18095745d892517ee26d0f270065b3a25c2e9eb11639c)
set(ES_ELFUTILS_TARBALL elfutils_0.192.orig.tar.bz2)
set(ES_ELFUTILS_SHA256 616099beae24aba11f9b63d86ca6cc8d566d968b802391334c91df54eab416b4)
set(ES_LIBBPF_TARBALL libbpf_1.5.0.orig.tar.gz)
set(ES_LIBBPF_SHA256 53492aff6dd47e4da04ef5e672d753b9743848bdb38e9d90eafbe190b7983c44)

set(_es_lib "${ES_DEPS_INSTALL}/lib")
set(_es_inc "${ES_DEPS_INSTALL}/include")
set(_es_deps_paths "\
set(ES_DEPS_INCLUDE \"${_es_inc}\" CACHE PATH \"\")
")

_es_build(zlib zlib ${ES_ZLIB_TARBALL} ${ES_ZLIB_SHA256} zlib-1.3.1 "${_es_lib}/libz.a"
          "${_es_common}# zlib sha256 ${ES_ZLIB_SHA256}\n")
_es_build(cjson cjson ${ES_CJSON_TARBALL} ${ES_CJSON_SHA256} cJSON-1.7.18 "${_es_lib}/libcjson.a"
          "${_es_common}# cjson sha256 ${ES_CJSON_SHA256}\n")
# SQLite's amalgamation is made on the build machine, the same for every
# target: a tree may take another's (ES_SQLITE_AMALGAMATION, see
# cmake/thirdparty/sqlite3/).
set(ES_SQLITE_AMALGAMATION "" CACHE PATH
    "Another static tree's SQLite amalgamation directory to reuse (optional)")
_es_build(sqlite3 sqlite3 ${ES_SQLITE_TARBALL} ${ES_SQLITE_SHA256} sqlite3-3.46.1
          "${_es_lib}/libsqlite3.a" "${_es_common}\
set(ES_SQLITE_SHA256 ${ES_SQLITE_SHA256} CACHE STRING \"\")
set(ES_SQLITE_AMALGAMATION \"${ES_SQLITE_AMALGAMATION}\" CACHE PATH \"\")
")
_es_build(libelf elfutils ${ES_ELFUTILS_TARBALL} ${ES_ELFUTILS_SHA256} elfutils-0.192
          "${_es_lib}/libelf.a"
          "${_es_common}${_es_deps_paths}# elfutils sha256 ${ES_ELFUTILS_SHA256}\n")
_es_build(libbpf libbpf ${ES_LIBBPF_TARBALL} ${ES_LIBBPF_SHA256} libbpf-1.5.0
          "${_es_lib}/libbpf.a"
          "${_es_common}${_es_deps_paths}# libbpf sha256 ${ES_LIBBPF_SHA256} on elfutils ${ES_ELFUTILS_SHA256}\n")

# FindZLIB (EsThirdParty.cmake) and the libwebsockets build take this zlib.
set(ZLIB_LIBRARY "${_es_lib}/libz.a" CACHE FILEPATH "zlib of the static agent" FORCE)
set(ZLIB_INCLUDE_DIR "${_es_inc}" CACHE PATH "zlib headers of the static agent" FORCE)
string(APPEND _es_common "\
set(ZLIB_LIBRARY \"${_es_lib}/libz.a\" CACHE FILEPATH \"\")
set(ZLIB_INCLUDE_DIR \"${_es_inc}\" CACHE PATH \"\")
")

function(_es_static_import target lib deps)
    add_library(${target} STATIC IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES
        IMPORTED_LOCATION "${_es_lib}/${lib}"
        INTERFACE_INCLUDE_DIRECTORIES "${_es_inc}"
        INTERFACE_LINK_LIBRARIES "${deps}")
endfunction()
_es_static_import(es_static_zlib libz.a "")
_es_static_import(es_static_cjson libcjson.a "m")
_es_static_import(es_static_sqlite3 libsqlite3.a "m")
_es_static_import(es_static_elf libelf.a "es_static_zlib")
_es_static_import(es_static_bpf libbpf.a "es_static_elf;es_static_zlib")
foreach(name zlib cjson sqlite3 elf bpf)
    add_library(es::${name} ALIAS es_static_${name})
endforeach()
message(STATUS "edgesync: static agent: zlib, cJSON, SQLite, libelf, libbpf from ${ES_DEPS_INSTALL}")
