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

include(EsThirdPartyBuild)  # _es_fetch, _es_build: download, check, build, cache

find_package(ZLIB REQUIRED)
find_package(Threads REQUIRED)
# --- mbedTLS -----------------------------------------------------------------
# Default configuration (include/mbedtls/mbedtls_config.h) with one change:
# MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH, so that a connection whose peer
# negotiated a smaller maximum fragment length (RFC 6066; the agent asks
# for 4096) holds record buffers of that size, not 2 x 16 KiB, once its
# handshake is done: the controller's memory per agent session. It changes
# the layout of mbedtls_ssl_context, so libwebsockets is rebuilt with it
# (its cache text below names it). It is checked below for what edgesync
# uses.
# ES_MBEDTLS_VARIABLE_BUFFERS=OFF builds the configuration unmodified (a
# build tree that shares a _deps built so).
option(ES_MBEDTLS_VARIABLE_BUFFERS
       "mbedTLS with MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH (small record buffers for agents)" ON)
if(ES_MBEDTLS_VARIABLE_BUFFERS)
    set(ES_MBEDTLS_CONFIG_EDITS "SSL_VARIABLE_BUFFER_LENGTH")
    set(_es_mbedtls_edits_note " config ${ES_MBEDTLS_CONFIG_EDITS}")
else()
    set(ES_MBEDTLS_CONFIG_EDITS "")
    set(_es_mbedtls_edits_note "")
endif()
function(_es_mbedtls_configure_source dir)
    set(cfg "${dir}/include/mbedtls/mbedtls_config.h")
    file(READ "${cfg}" text)
    foreach(opt IN LISTS ES_MBEDTLS_CONFIG_EDITS)
        string(REPLACE "//#define MBEDTLS_${opt}\n" "#define MBEDTLS_${opt}\n" text "${text}")
    endforeach()
    file(WRITE "${cfg}" "${text}")
endfunction()
set(_es_mbedtls_cache "${_es_common}\
set(ENABLE_PROGRAMS OFF CACHE BOOL \"\")
set(ENABLE_TESTING OFF CACHE BOOL \"\")
set(USE_STATIC_MBEDTLS_LIBRARY ON CACHE BOOL \"\")
set(USE_SHARED_MBEDTLS_LIBRARY OFF CACHE BOOL \"\")
set(GEN_FILES OFF CACHE BOOL \"\")
set(MBEDTLS_FATAL_WARNINGS OFF CACHE BOOL \"\")
# mbedtls ${ES_MBEDTLS_VERSION} sha256 ${ES_MBEDTLS_SHA256}${_es_mbedtls_edits_note}
")
_es_build(mbedtls mbedtls ${ES_MBEDTLS_TARBALL} ${ES_MBEDTLS_SHA256}
          mbedtls-${ES_MBEDTLS_VERSION} "${ES_DEPS_INSTALL}/lib/libmbedtls.a"
          "${_es_mbedtls_cache}")

file(STRINGS "${ES_DEPS_INSTALL}/include/mbedtls/mbedtls_config.h" _es_mbedtls_defs
     REGEX "^#define MBEDTLS_[A-Z0-9_]+$")
foreach(opt X509_CRT_WRITE_C X509_CSR_WRITE_C X509_CREATE_C X509_CRT_PARSE_C PEM_WRITE_C
            PK_WRITE_C ECDSA_C ECP_C SSL_PROTO_TLS1_2 SSL_PROTO_TLS1_3 SSL_SRV_C SSL_CLI_C
            SSL_KEEP_PEER_CERTIFICATE SSL_TICKET_C SSL_SESSION_TICKETS
            SSL_MAX_FRAGMENT_LENGTH ${ES_MBEDTLS_CONFIG_EDITS})
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
# libwebsockets ${ES_LWS_VERSION} sha256 ${ES_LWS_SHA256} on mbedtls ${ES_MBEDTLS_SHA256}${_es_mbedtls_edits_note}
")
_es_build(libwebsockets libwebsockets ${ES_LWS_TARBALL} ${ES_LWS_SHA256}
          libwebsockets-${ES_LWS_VERSION} "${ES_DEPS_INSTALL}/lib/libwebsockets.a"
          "${_es_lws_cache}")

# --- libwebsockets with libuv (the controller's) ----------------------------
# lws 4.3's default event loop is poll() over every socket: at 10 000
# agents the controller spent a third of its CPU there. Its libuv event
# library (epoll on Linux) is the controller's loop. lws offers event
# libraries either as plugins (LWS_WITH_EVLIB_PLUGINS), which are shared
# objects linked to a shared libwebsockets and so unusable with this static
# build, or compiled into the library, which then links libuv for every
# program. So the controller gets a second build of the same source with
# LWS_WITH_LIBUV (and its poll loop still there: the controller's
# event-loop setting chooses at run time), installed beside the first
# under include/lws-uv and lib/lws-uv; the agents (a few connections) keep
# the build without libuv and gain no dependency. libuv rather than libev:
# libuv is the better kept of the two (libev's last release is from 2020)
# and lws's libuv code is the one its own examples and tests exercise most.
# Off by default in cross and static trees: their controllers (if any) use
# poll, so CI builds one libwebsockets per target and needs no libuv1-dev
# of the target; -DES_CONTROLLER_LIBUV=ON with libuv1-dev:<arch> turns it on.
if(CMAKE_CROSSCOMPILING OR ES_STATIC_AGENT)
    set(_es_libuv_default OFF)
else()
    set(_es_libuv_default ON)
endif()
option(ES_CONTROLLER_LIBUV "The controller's libwebsockets with libuv (epoll event loop)"
       ${_es_libuv_default})
if(ES_CONTROLLER_LIBUV)
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
        pkg_check_modules(ES_PC_libuv QUIET IMPORTED_TARGET GLOBAL libuv)
    endif()
    if(NOT ES_PC_libuv_FOUND)
        message(FATAL_ERROR "edgesync: ES_CONTROLLER_LIBUV needs libuv: install the Debian "
                "package libuv1-dev (scripts/install-deps.sh does it), or configure with "
                "-DES_CONTROLLER_LIBUV=OFF (the controller then has the poll loop only)")
    endif()
    message(STATUS "edgesync: libuv ${ES_PC_libuv_VERSION} (the controller's event loop)")
    find_library(_es_libuv_lib NAMES uv HINTS ${ES_PC_libuv_LIBRARY_DIRS} NO_CACHE)
    string(REPLACE "set(LWS_WITH_LIBUV OFF CACHE BOOL \"\")"
           "set(LWS_WITH_LIBUV ON CACHE BOOL \"\")
set(LWS_LIBUV_INCLUDE_DIRS \"${ES_PC_libuv_INCLUDEDIR}\" CACHE PATH \"\")
set(LWS_LIBUV_LIBRARIES \"${_es_libuv_lib}\" CACHE FILEPATH \"\")
set(LIB_SUFFIX \"/lws-uv\" CACHE STRING \"\")
set(LWS_INSTALL_INCLUDE_DIR include/lws-uv CACHE PATH \"\")"
           _es_lws_uv_cache "${_es_lws_cache}")
    string(APPEND _es_lws_uv_cache "# with libuv ${ES_PC_libuv_VERSION}\n")
    _es_build(libwebsockets-uv libwebsockets ${ES_LWS_TARBALL} ${ES_LWS_SHA256}
              libwebsockets-${ES_LWS_VERSION} "${ES_DEPS_INSTALL}/lib/lws-uv/libwebsockets.a"
              "${_es_lws_uv_cache}")
    # Objects compiled against one lws_config.h are linked with the other
    # build (lib/ is shared by the agent and the controller): the two must
    # differ only in the libuv lines (they declare libuv-only functions),
    # LWS_WITH_EVENT_LIBS (no public header reads it), the install paths
    # and the version text; none changes a structure.
    foreach(v poll uv)
        if(v STREQUAL poll)
            set(_f "${ES_DEPS_INSTALL}/include/lws_config.h")
        else()
            set(_f "${ES_DEPS_INSTALL}/include/lws-uv/lws_config.h")
        endif()
        file(STRINGS "${_f}" _es_lws_cfg_${v})
        list(FILTER _es_lws_cfg_${v} EXCLUDE REGEX
             "UV|LWS_WITH_EVENT_LIBS|LWS_INSTALL_|LWS_BUILD_HASH|LWS_LIBRARY_VERSION")
    endforeach()
    if(NOT _es_lws_cfg_poll STREQUAL _es_lws_cfg_uv)
        message(FATAL_ERROR "edgesync: the two libwebsockets builds' lws_config.h differ in more "
                "than libuv (${ES_DEPS_INSTALL}/include/lws_config.h, "
                "${ES_DEPS_INSTALL}/include/lws-uv/lws_config.h)")
    endif()
endif()

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

# _es_interface(<name> <libs>): an INTERFACE target over the archives.
function(_es_interface name libs)
    if(NOT TARGET ${name})
        add_library(${name} INTERFACE IMPORTED GLOBAL)
        set_target_properties(${name} PROPERTIES
            INTERFACE_INCLUDE_DIRECTORIES "${ES_DEPS_INSTALL}/include"
            INTERFACE_LINK_LIBRARIES "${libs}")
    endif()
endfunction()
_es_interface(es::mbedtls "es_thirdparty_mbedtls;es_thirdparty_mbedx509;es_thirdparty_mbedcrypto")

# libwebsockets.a needs zlib (permessage-deflate), pthread, dl and libm.
# es::websockets is the build without libuv, except for a program with the
# property ES_LWS_LIBUV set (the controller's, controller/CMakeLists.txt):
# the link takes the libuv build and libuv instead. Only the program's own
# property counts (it is evaluated where the program is linked), so an
# object library or test that does not set it links the poll build.
set(_es_lws_deps "es::mbedtls;ZLIB::ZLIB;Threads::Threads;${CMAKE_DL_LIBS};m")
_es_import(es_thirdparty_lws "${ES_DEPS_INSTALL}/lib/libwebsockets.a" "${_es_lws_deps}")
if(ES_CONTROLLER_LIBUV)
    _es_import(es_thirdparty_lws_uv "${ES_DEPS_INSTALL}/lib/lws-uv/libwebsockets.a"
               "${_es_lws_deps};PkgConfig::ES_PC_libuv")
    set(_es_lws_pick "$<IF:$<BOOL:$<TARGET_PROPERTY:ES_LWS_LIBUV>>,es_thirdparty_lws_uv,es_thirdparty_lws>")
    set(ES_LWS_UV_INCLUDE_DIR "${ES_DEPS_INSTALL}/include/lws-uv")
else()
    set(_es_lws_pick es_thirdparty_lws)
endif()
_es_interface(es::websockets "${_es_lws_pick}")
