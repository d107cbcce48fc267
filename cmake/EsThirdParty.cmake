# EsThirdParty.cmake - mbedTLS 3.6 and libwebsockets 4.3 built static into the
# build tree at configure time, exported as es::mbedtls and es::websockets.
#
# Why at configure time: both are needed to configure and compile edgesync,
# they take about a minute to build, and they change only when the pins
# below change. They are built once per build tree into
#   ${CMAKE_BINARY_DIR}/_deps/{dl,src,build,install}
# and reused on every later configure. A build is redone only when its
# library is missing or its settings (the generated initial-cache file)
# changed; delete _deps/ to force one.
#
# Tarballs come from Debian 13 (trixie) source packages
# (`apt-get source --download-only NAME/trixie`, needs the deb-src entry that
# scripts/install-deps.sh writes) and are checked against the SHA-256 pinned
# here, never against the .dsc (the libwebsockets .dsc is not reliably
# served). Set ES_TARBALL_DIR (cache variable or environment) to a directory
# that already holds the tarballs to build offline.

include_guard(GLOBAL)

set(ES_MBEDTLS_VERSION 3.6.6)
set(ES_MBEDTLS_TARBALL mbedtls_${ES_MBEDTLS_VERSION}.orig.tar.bz2)
set(ES_MBEDTLS_SHA256 8fb65fae8dcae5840f793c0a334860a411f884cc537ea290ce1c52bb64ca007a)

set(ES_LWS_VERSION 4.3.5)
set(ES_LWS_TARBALL libwebsockets_${ES_LWS_VERSION}.orig.tar.gz)
set(ES_LWS_SHA256 87f99ad32803ed325fceac5327aae1f5c1b417d54ee61ad36cffc8df5f5ab276)

set(ES_TARBALL_DIR "$ENV{ES_TARBALL_DIR}" CACHE PATH
    "Directory holding the third-party tarballs (optional; otherwise apt-get source)")

set(ES_DEPS_DIR     "${CMAKE_BINARY_DIR}/_deps")
# A build tree may share another's third-party build through a symlinked
# _deps (the sanitizer build in scripts/test.sh does). The stamps record
# paths, so resolve the link: both trees then see the same stamps.
if(IS_SYMLINK "${ES_DEPS_DIR}")
    file(REAL_PATH "${ES_DEPS_DIR}" ES_DEPS_DIR)
endif()
set(ES_DEPS_DL      "${ES_DEPS_DIR}/dl")
set(ES_DEPS_SRC     "${ES_DEPS_DIR}/src")
set(ES_DEPS_BUILD   "${ES_DEPS_DIR}/build")
set(ES_DEPS_INSTALL "${ES_DEPS_DIR}/install")
set(ES_DEPS_JOBS 2 CACHE STRING "Parallel jobs for the third-party builds")

find_package(ZLIB REQUIRED)
find_package(Threads REQUIRED)

# _es_fetch(<debian source package> <tarball file name> <sha256> <out var>)
# Puts the tarball in _deps/dl (reusing one already there or in
# ES_TARBALL_DIR, else downloading it with apt-get source) and checks it.
function(_es_fetch pkg file sha out)
    set(dest "${ES_DEPS_DL}/${file}")
    file(MAKE_DIRECTORY "${ES_DEPS_DL}")
    if(NOT EXISTS "${dest}" AND ES_TARBALL_DIR AND EXISTS "${ES_TARBALL_DIR}/${file}")
        file(COPY "${ES_TARBALL_DIR}/${file}" DESTINATION "${ES_DEPS_DL}")
    endif()
    if(NOT EXISTS "${dest}")
        find_program(ES_APT_GET apt-get)
        if(NOT ES_APT_GET)
            message(FATAL_ERROR "edgesync: ${file} is missing and apt-get was not found. "
                "Put the tarball in ES_TARBALL_DIR or ${ES_DEPS_DL}.")
        endif()
        message(STATUS "edgesync: downloading ${pkg}/trixie sources with apt-get source")
        # The exit status is ignored on purpose: for some packages the .dsc
        # answers 404 while the upstream tarball downloads fine. The SHA-256
        # check below is what decides.
        execute_process(
            COMMAND "${ES_APT_GET}" source --download-only "${pkg}/trixie"
            WORKING_DIRECTORY "${ES_DEPS_DL}"
            OUTPUT_FILE "${ES_DEPS_DIR}/${pkg}-download.log"
            ERROR_FILE "${ES_DEPS_DIR}/${pkg}-download.log"
            RESULT_VARIABLE rc)
        if(NOT EXISTS "${dest}")
            file(READ "${ES_DEPS_DIR}/${pkg}-download.log" log)
            message(FATAL_ERROR "edgesync: could not download ${file} "
                "(apt-get source ${pkg}/trixie exited with '${rc}'):\n${log}\n"
                "Run scripts/install-deps.sh as root (it adds the trixie deb-src entry and runs "
                "apt-get update), or put ${file} in ES_TARBALL_DIR.")
        endif()
    endif()
    file(SHA256 "${dest}" actual)
    if(NOT actual STREQUAL sha)
        message(FATAL_ERROR "edgesync: SHA-256 mismatch for ${dest}\n"
            "  expected ${sha}\n  actual   ${actual}\n"
            "Delete the file and configure again to re-download it.")
    endif()
    set(${out} "${dest}" PARENT_SCOPE)
endfunction()

# _es_run(<name> <step> COMMAND...) runs one step with its output in
# _deps/<name>-<step>.log; on failure prints the log's tail and stops.
function(_es_run name step)
    set(log "${ES_DEPS_DIR}/${name}-${step}.log")
    execute_process(COMMAND ${ARGN} OUTPUT_FILE "${log}" ERROR_FILE "${log}"
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        file(STRINGS "${log}" lines)
        list(LENGTH lines n)
        math(EXPR first "${n} - 40")
        if(first LESS 0)
            set(first 0)
        endif()
        list(SUBLIST lines ${first} 40 tail)
        list(JOIN tail "\n" tail)
        message(FATAL_ERROR "edgesync: ${name} ${step} failed (${rc}); last lines of ${log}:\n${tail}")
    endif()
endfunction()

# _es_build(<name> <pkg> <file> <sha> <src subdir> <library> <cache text>)
# Builds and installs one package when <library> is missing or <cache text>
# (its initial-cache file) changed since the last build.
function(_es_build name pkg file sha srcdir lib cache_text)
    set(init "${ES_DEPS_DIR}/${name}-init.cmake")
    set(stamp "${ES_DEPS_DIR}/${name}.stamp")
    set(old "")
    if(EXISTS "${stamp}")
        file(READ "${stamp}" old)
    endif()
    if(EXISTS "${lib}" AND old STREQUAL cache_text)
        message(STATUS "edgesync: ${name} up to date (${lib})")
        return()
    endif()

    string(TIMESTAMP t0 "%s")
    _es_fetch(${pkg} ${file} ${sha} tarball)
    file(REMOVE_RECURSE "${ES_DEPS_SRC}/${srcdir}" "${ES_DEPS_BUILD}/${name}")
    file(REMOVE "${stamp}")
    file(MAKE_DIRECTORY "${ES_DEPS_SRC}")
    file(ARCHIVE_EXTRACT INPUT "${tarball}" DESTINATION "${ES_DEPS_SRC}")
    if(NOT EXISTS "${ES_DEPS_SRC}/${srcdir}/CMakeLists.txt")
        message(FATAL_ERROR "edgesync: ${tarball} did not unpack to ${ES_DEPS_SRC}/${srcdir}")
    endif()
    file(WRITE "${init}" "${cache_text}")

    set(gen -G "${CMAKE_GENERATOR}")
    if(CMAKE_MAKE_PROGRAM)
        list(APPEND gen "-DCMAKE_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}")
    endif()
    _es_run(${name} configure "${CMAKE_COMMAND}" ${gen} -C "${init}"
            -S "${ES_DEPS_SRC}/${srcdir}" -B "${ES_DEPS_BUILD}/${name}")
    _es_run(${name} build "${CMAKE_COMMAND}" --build "${ES_DEPS_BUILD}/${name}"
            --parallel ${ES_DEPS_JOBS})
    _es_run(${name} install "${CMAKE_COMMAND}" --install "${ES_DEPS_BUILD}/${name}")
    if(NOT EXISTS "${lib}")
        message(FATAL_ERROR "edgesync: ${name} built but ${lib} was not installed; see ${ES_DEPS_DIR}/${name}-*.log")
    endif()
    file(WRITE "${stamp}" "${cache_text}")
    string(TIMESTAMP t1 "%s")
    math(EXPR dt "${t1} - ${t0}")
    message(STATUS "edgesync: built ${name} in ${dt} s (logs: ${ES_DEPS_DIR}/${name}-*.log)")
endfunction()

# The C compiler of both builds: edgesync's, except in the fuzz build
# (clang, EsFuzz.cmake), which reuses through its symlinked _deps what the
# default build made with cc: another compiler here would rebuild them.
if(ES_FUZZ)
    find_program(_es_default_cc NAMES cc gcc)
    set(_es_deps_cc_default "${_es_default_cc}")
else()
    set(_es_deps_cc_default "${CMAKE_C_COMPILER}")
endif()
set(ES_DEPS_C_COMPILER "${_es_deps_cc_default}" CACHE FILEPATH
    "C compiler of the third-party builds (default: edgesync's; cc in the fuzz build)")

# Settings shared by both builds: static, PIC, Release, ES_DEPS_C_COMPILER,
# installed under _deps/install/{include,lib}.
set(_es_common "\
set(CMAKE_BUILD_TYPE Release CACHE STRING \"\")
set(CMAKE_C_COMPILER \"${ES_DEPS_C_COMPILER}\" CACHE FILEPATH \"\")
set(CMAKE_POSITION_INDEPENDENT_CODE ON CACHE BOOL \"\")
set(CMAKE_INSTALL_PREFIX \"${ES_DEPS_INSTALL}\" CACHE PATH \"\")
set(CMAKE_INSTALL_LIBDIR lib CACHE PATH \"\")
set(BUILD_SHARED_LIBS OFF CACHE BOOL \"\")
")

# --- mbedTLS -----------------------------------------------------------------
# mbedTLS's default configuration, unmodified (its MBEDTLS_* options as
# installed). It is checked below for what edgesync uses.
set(_es_mbedtls_cache "${_es_common}\
set(ENABLE_PROGRAMS OFF CACHE BOOL \"\")
set(ENABLE_TESTING OFF CACHE BOOL \"\")
set(USE_STATIC_MBEDTLS_LIBRARY ON CACHE BOOL \"\")
set(USE_SHARED_MBEDTLS_LIBRARY OFF CACHE BOOL \"\")
set(GEN_FILES OFF CACHE BOOL \"\")
set(MBEDTLS_FATAL_WARNINGS OFF CACHE BOOL \"\")
# mbedtls ${ES_MBEDTLS_VERSION} sha256 ${ES_MBEDTLS_SHA256}
")
_es_build(mbedtls mbedtls ${ES_MBEDTLS_TARBALL} ${ES_MBEDTLS_SHA256}
          mbedtls-${ES_MBEDTLS_VERSION} "${ES_DEPS_INSTALL}/lib/libmbedtls.a"
          "${_es_mbedtls_cache}")

file(STRINGS "${ES_DEPS_INSTALL}/include/mbedtls/mbedtls_config.h" _es_mbedtls_defs
     REGEX "^#define MBEDTLS_[A-Z0-9_]+$")
foreach(opt X509_CRT_WRITE_C X509_CSR_WRITE_C X509_CREATE_C X509_CRT_PARSE_C PEM_WRITE_C
            PK_WRITE_C ECDSA_C ECP_C SSL_PROTO_TLS1_2 SSL_PROTO_TLS1_3 SSL_SRV_C SSL_CLI_C
            SSL_KEEP_PEER_CERTIFICATE)
    if(NOT "#define MBEDTLS_${opt}" IN_LIST _es_mbedtls_defs)
        message(FATAL_ERROR "edgesync: the mbedTLS build lacks MBEDTLS_${opt} "
                "(${ES_DEPS_INSTALL}/include/mbedtls/mbedtls_config.h); delete ${ES_DEPS_DIR} and reconfigure")
    endif()
endforeach()

set(_es_mbedtls_libs
    "${ES_DEPS_INSTALL}/lib/libmbedtls.a"
    "${ES_DEPS_INSTALL}/lib/libmbedx509.a"
    "${ES_DEPS_INSTALL}/lib/libmbedcrypto.a")
# Drivers libmbedcrypto.a can call into; unused by the default config but
# harmless to link, and required if the config enables them.
foreach(extra p256m everest)
    if(EXISTS "${ES_DEPS_INSTALL}/lib/lib${extra}.a")
        list(APPEND _es_mbedtls_libs "${ES_DEPS_INSTALL}/lib/lib${extra}.a")
    endif()
endforeach()

# --- libwebsockets -----------------------------------------------------------
# LWS_MBEDTLS_LIBRARIES/_INCLUDE_DIRS point lws at our mbedTLS. lws 4.3.5's
# feature probes (lib/tls/CMakeLists.txt) link against ${MBEDTLS_LIBRARY}
# ${MBEDX509_LIBRARY} ${MBEDCRYPTO_LIBRARY}, which it only sets itself when it
# searches the system, so they are given too; without them every
# LWS_HAVE_mbedtls_* probe fails silently.
list(JOIN _es_mbedtls_libs ";" _es_mbedtls_libs_str)
set(_es_lws_cache "${_es_common}\
set(LWS_WITH_SSL ON CACHE BOOL \"\")
set(LWS_WITH_MBEDTLS ON CACHE BOOL \"\")
set(LWS_MBEDTLS_INCLUDE_DIRS \"${ES_DEPS_INSTALL}/include\" CACHE PATH \"\")
set(LWS_MBEDTLS_LIBRARIES \"${_es_mbedtls_libs_str}\" CACHE STRING \"\")
set(MBEDTLS_LIBRARY \"${ES_DEPS_INSTALL}/lib/libmbedtls.a\" CACHE FILEPATH \"\")
set(MBEDX509_LIBRARY \"${ES_DEPS_INSTALL}/lib/libmbedx509.a\" CACHE FILEPATH \"\")
set(MBEDCRYPTO_LIBRARY \"${ES_DEPS_INSTALL}/lib/libmbedcrypto.a\" CACHE FILEPATH \"\")
set(LWS_SSL_CLIENT_USE_OS_CA_CERTS OFF CACHE BOOL \"\")
set(LWS_WITH_STATIC ON CACHE BOOL \"\")
set(LWS_WITH_SHARED OFF CACHE BOOL \"\")
set(LWS_STATIC_PIC ON CACHE BOOL \"\")
set(LWS_WITHOUT_CLIENT OFF CACHE BOOL \"\")
set(LWS_WITHOUT_SERVER OFF CACHE BOOL \"\")
set(LWS_WITHOUT_TESTAPPS ON CACHE BOOL \"\")
set(LWS_WITH_MINIMAL_EXAMPLES OFF CACHE BOOL \"\")
set(LWS_WITHOUT_EXTENSIONS OFF CACHE BOOL \"\")
set(LWS_WITH_ZLIB ON CACHE BOOL \"\")
set(LWS_WITH_BUNDLED_ZLIB OFF CACHE BOOL \"\")
set(LWS_WITH_HTTP2 OFF CACHE BOOL \"\")
set(LWS_IPV6 ON CACHE BOOL \"\")
set(LWS_WITH_EXTERNAL_POLL OFF CACHE BOOL \"\")
set(LWS_WITH_LIBUV OFF CACHE BOOL \"\")
set(LWS_WITH_LIBEV OFF CACHE BOOL \"\")
set(LWS_WITH_LIBEVENT OFF CACHE BOOL \"\")
set(LWS_WITH_GLIB OFF CACHE BOOL \"\")
set(LWS_WITH_SDEVENT OFF CACHE BOOL \"\")
set(LWS_WITH_ULOOP OFF CACHE BOOL \"\")
set(LWS_WITH_EVLIB_PLUGINS OFF CACHE BOOL \"\")
set(LWS_WITH_ACCESS_LOG OFF CACHE BOOL \"\")
set(LWS_WITH_SYS_ASYNC_DNS OFF CACHE BOOL \"\")
set(LWS_WITH_SYS_NTPCLIENT OFF CACHE BOOL \"\")
set(LWS_WITH_SYS_DHCP_CLIENT OFF CACHE BOOL \"\")
set(LWS_WITH_SYS_FAULT_INJECTION OFF CACHE BOOL \"\")
set(LWS_WITH_SYS_METRICS OFF CACHE BOOL \"\")
set(LWS_WITH_SYS_SMD OFF CACHE BOOL \"\")
set(LWS_WITH_SYS_STATE OFF CACHE BOOL \"\")
set(LWS_WITH_GENCRYPTO OFF CACHE BOOL \"\")
set(LWS_WITH_SECURE_STREAMS OFF CACHE BOOL \"\")
set(DISABLE_WERROR ON CACHE BOOL \"\")
# libwebsockets ${ES_LWS_VERSION} sha256 ${ES_LWS_SHA256} on mbedtls ${ES_MBEDTLS_SHA256}
")
_es_build(libwebsockets libwebsockets ${ES_LWS_TARBALL} ${ES_LWS_SHA256}
          libwebsockets-${ES_LWS_VERSION} "${ES_DEPS_INSTALL}/lib/libwebsockets.a"
          "${_es_lws_cache}")

# What edgesync relies on: the mbedTLS backend, and the peer certificate's
# raw DER.
file(STRINGS "${ES_DEPS_INSTALL}/include/lws_config.h" _es_lws_mbed REGEX "^#define LWS_WITH_MBEDTLS$")
file(STRINGS "${ES_DEPS_INSTALL}/include/libwebsockets/lws-x509.h" _es_lws_der REGEX "LWS_TLS_CERT_INFO_DER_RAW")
if(NOT _es_lws_mbed OR NOT _es_lws_der)
    message(FATAL_ERROR "edgesync: ${ES_DEPS_INSTALL} holds a libwebsockets without the mbedTLS backend "
            "or LWS_TLS_CERT_INFO_DER_RAW; delete ${ES_DEPS_DIR} and reconfigure")
endif()

# --- imported targets --------------------------------------------------------
# Each archive is its own STATIC IMPORTED target with its dependencies, so
# CMake orders the link line correctly (libwebsockets.a before the mbedTLS
# archives, libmbedtls.a before libmbedx509.a before libmbedcrypto.a) whatever
# order a target lists es::websockets and es::mbedtls in.
function(_es_import name path deps)
    if(NOT TARGET ${name})
        add_library(${name} STATIC IMPORTED GLOBAL)
        set_target_properties(${name} PROPERTIES
            IMPORTED_LOCATION "${path}"
            INTERFACE_INCLUDE_DIRECTORIES "${ES_DEPS_INSTALL}/include"
            INTERFACE_LINK_LIBRARIES "${deps}")
    endif()
endfunction()

set(_es_crypto_deps "")
foreach(extra p256m everest)
    if(EXISTS "${ES_DEPS_INSTALL}/lib/lib${extra}.a")
        _es_import(es_thirdparty_${extra} "${ES_DEPS_INSTALL}/lib/lib${extra}.a" "")
        list(APPEND _es_crypto_deps es_thirdparty_${extra})
    endif()
endforeach()
_es_import(es_thirdparty_mbedcrypto "${ES_DEPS_INSTALL}/lib/libmbedcrypto.a" "${_es_crypto_deps}")
_es_import(es_thirdparty_mbedx509 "${ES_DEPS_INSTALL}/lib/libmbedx509.a" "es_thirdparty_mbedcrypto")
_es_import(es_thirdparty_mbedtls "${ES_DEPS_INSTALL}/lib/libmbedtls.a" "es_thirdparty_mbedx509")

if(NOT TARGET es::mbedtls)
    add_library(es::mbedtls INTERFACE IMPORTED GLOBAL)
    set_target_properties(es::mbedtls PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${ES_DEPS_INSTALL}/include"
        INTERFACE_LINK_LIBRARIES "es_thirdparty_mbedtls;es_thirdparty_mbedx509;es_thirdparty_mbedcrypto")
endif()

# libwebsockets.a needs zlib (permessage-deflate), pthread, dl and libm.
_es_import(es::websockets "${ES_DEPS_INSTALL}/lib/libwebsockets.a"
           "es::mbedtls;ZLIB::ZLIB;Threads::Threads;${CMAKE_DL_LIBS};m")
