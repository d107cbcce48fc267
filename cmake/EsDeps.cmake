# EsDeps.cmake - system libraries and tools edgesync needs, from Debian 12
# packages. Each missing one stops the configure with the package to install.
#
# Exports: es::cjson es::sqlite3 es::bpf es::elf es::zlib es::yaml es::nftables
#          es::cmocka (only when ES_BUILD_TESTS is ON); with ES_STATIC_AGENT
#          only the first five, from EsThirdPartyStatic.cmake
# Sets:    ES_CLANG, ES_BPFTOOL (full paths), ES_LLVM_STRIP (may be empty)

include_guard(GLOBAL)

find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
    message(FATAL_ERROR "edgesync needs pkg-config: install the Debian package pkg-config "
                        "(scripts/install-deps.sh does it)")
endif()

# _es_pkg(<target> <pkg-config module> <Debian package>)
function(_es_pkg target module debpkg)
    string(MAKE_C_IDENTIFIER "ES_PC_${module}" prefix)
    pkg_check_modules(${prefix} QUIET IMPORTED_TARGET GLOBAL ${module})
    if(NOT ${prefix}_FOUND)
        message(FATAL_ERROR "edgesync needs ${module}: install the Debian package ${debpkg} "
                            "(scripts/install-deps.sh does it)")
    endif()
    add_library(${target} ALIAS PkgConfig::${prefix})
    message(STATUS "edgesync: ${module} ${${prefix}_VERSION}")
endfunction()

if(ES_STATIC_AGENT)
    # The static agent (musl toolchain): its libraries are built from
    # Debian source packages; it links no libyaml, libnftables or cmocka.
    include(EsThirdPartyStatic)
else()
_es_pkg(es::cjson   libcjson  libcjson-dev)
_es_pkg(es::sqlite3 sqlite3   libsqlite3-dev)
_es_pkg(es::bpf     libbpf    libbpf-dev)
_es_pkg(es::elf     libelf    libelf-dev)
_es_pkg(es::zlib    zlib      zlib1g-dev)
_es_pkg(es::yaml    yaml-0.1  libyaml-dev)
_es_pkg(es::nftables libnftables libnftables-dev)
if(ES_BUILD_TESTS)
    _es_pkg(es::cmocka cmocka libcmocka-dev)
endif()
endif()

# _es_program(<var> <program> <Debian package>)
function(_es_program var prog debpkg)
    find_program(${var} ${prog} PATHS /usr/sbin /sbin)
    if(NOT ${var})
        message(FATAL_ERROR "edgesync needs ${prog}: install the Debian package ${debpkg} "
                            "(scripts/install-deps.sh does it)")
    endif()
endfunction()

_es_program(ES_CLANG   clang   clang)
_es_program(ES_BPFTOOL bpftool bpftool)
# Strips DWARF from BPF objects; optional (package llvm).
find_program(ES_LLVM_STRIP NAMES llvm-strip llvm-strip-14)
