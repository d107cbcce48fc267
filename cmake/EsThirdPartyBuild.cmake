# EsThirdPartyBuild.cmake - the download, check and build of third-party
# libraries from Debian source packages, shared by EsThirdParty.cmake
# (mbedTLS, libwebsockets) and EsThirdPartyStatic.cmake (the static agent's
# zlib, cJSON, SQLite, libelf and libbpf).
#
#   _es_fetch(<pkg> <tarball> <sha256> <out var>)   tarball into _deps/dl, checked
#   _es_build(<name> <pkg> <tarball> <sha256> <src subdir> <library> <cache text>)
#
# A library is built once per build tree into
#   ${CMAKE_BINARY_DIR}/_deps/{dl,src,build,install}
# and rebuilt only when <library> is missing or <cache text> (its
# initial-cache file) changed. Tarballs come from Debian 13 (trixie)
# (`apt-get source --download-only NAME/trixie`) and are checked against
# the SHA-256 pinned by the caller. A source tree without a CMake build of
# its own is built by the project in cmake/thirdparty/<name>/ when that
# directory exists; it gets the unpacked source as ES_SRC.
#
# ES_DEPS_CACHE (cache variable, default from the environment; empty: off)
# names a directory shared by build trees, so that a new clone (CI makes
# one every run) does not build the libraries again: each library's
# installed files are kept there as <name>-<key>.tar.gz, where key is the
# SHA-256 of its settings with this tree's paths taken out, the toolchain
# files, its build of its own and the keys of the libraries built before
# it in this tree (libwebsockets is built against mbedTLS). A tree whose
# library is missing takes it from there when the key matches, else builds
# it and puts it there.

include_guard(GLOBAL)

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
set(_es_thirdparty_projects "${CMAKE_CURRENT_LIST_DIR}/thirdparty")
set(ES_DEPS_CACHE "$ENV{ES_DEPS_CACHE}" CACHE PATH
    "Directory of third-party builds shared by build trees (optional)")


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

# _es_cache_key(<name> <sha> <cache text> <out var>): the key of a library
# in ES_DEPS_CACHE (see above), also recorded as what the libraries built
# after it in this tree depend on.
function(_es_cache_key name sha cache_text out)
    string(REPLACE "${ES_DEPS_DIR}" "@deps@" norm "${cache_text}")
    string(REPLACE "${CMAKE_SOURCE_DIR}" "@source@" norm "${norm}")
    file(GLOB toolchains "${CMAKE_SOURCE_DIR}/cmake/toolchains/*.cmake")
    list(SORT toolchains)
    foreach(f IN LISTS toolchains)
        file(SHA256 "${f}" fsha)
        string(APPEND norm "# ${f} ${fsha}\n")
    endforeach()
    string(REPLACE "${CMAKE_SOURCE_DIR}" "@source@" norm "${norm}")
    get_property(chain GLOBAL PROPERTY _es_deps_chain)
    string(SHA256 key "${chain}\n${name} ${sha}\n${norm}")
    set_property(GLOBAL APPEND PROPERTY _es_deps_chain "${name}=${key}")
    set(${out} "${key}" PARENT_SCOPE)
endfunction()

# _es_cache_put(<name> <archive>): the files <name>'s install wrote (its
# install_manifest.txt), relative to _deps/install, into <archive>, written
# under a temporary name and renamed, so a tree never sees half of one.
# A failure only warns: the cache is an optimisation.
function(_es_cache_put name archive)
    set(manifest "${ES_DEPS_BUILD}/${name}/install_manifest.txt")
    if(NOT EXISTS "${manifest}")
        message(WARNING "edgesync: ${manifest} missing; ${name} not kept in ${ES_DEPS_CACHE}")
        return()
    endif()
    file(STRINGS "${manifest}" files)
    set(rel "")
    foreach(f IN LISTS files)
        file(RELATIVE_PATH r "${ES_DEPS_INSTALL}" "${f}")
        string(APPEND rel "${r}\n")
    endforeach()
    set(list "${ES_DEPS_DIR}/${name}-cache-files.txt")
    file(WRITE "${list}" "${rel}")
    file(MAKE_DIRECTORY "${ES_DEPS_CACHE}")
    string(RANDOM LENGTH 8 tag)
    set(tmp "${archive}.${tag}.tmp")
    execute_process(COMMAND tar -czf "${tmp}" -C "${ES_DEPS_INSTALL}" -T "${list}"
                    RESULT_VARIABLE rc ERROR_VARIABLE msg)
    if(rc EQUAL 0)
        file(RENAME "${tmp}" "${archive}")
        message(STATUS "edgesync: ${name} kept in ${archive}")
    else()
        file(REMOVE "${tmp}")
        message(WARNING "edgesync: could not keep ${name} in ${ES_DEPS_CACHE}: ${msg}")
    endif()
endfunction()

# _es_build(<name> <pkg> <file> <sha> <src subdir> <library> <cache text>)
# Builds and installs one package when <library> is missing or <cache text>
# (its initial-cache file) changed since the last build.
function(_es_build name pkg file sha srcdir lib cache_text)
    # A build of our own (cmake/thirdparty/<name>/) is part of the settings:
    # changing it rebuilds the library.
    set(own "${_es_thirdparty_projects}/${name}/CMakeLists.txt")
    if(EXISTS "${own}")
        file(SHA256 "${own}" own_sha)
        string(APPEND cache_text "# cmake/thirdparty/${name} sha256 ${own_sha}\n")
    endif()
    set(init "${ES_DEPS_DIR}/${name}-init.cmake")
    set(stamp "${ES_DEPS_DIR}/${name}.stamp")
    set(kept "")
    if(ES_DEPS_CACHE)
        _es_cache_key(${name} "${sha}" "${cache_text}" key)
        set(kept "${ES_DEPS_CACHE}/${name}-${key}.tar.gz")
    endif()
    set(old "")
    if(EXISTS "${stamp}")
        file(READ "${stamp}" old)
    endif()
    if(EXISTS "${lib}" AND old STREQUAL cache_text)
        message(STATUS "edgesync: ${name} up to date (${lib})")
        return()
    endif()
    if(kept AND EXISTS "${kept}")
        file(MAKE_DIRECTORY "${ES_DEPS_INSTALL}")
        file(ARCHIVE_EXTRACT INPUT "${kept}" DESTINATION "${ES_DEPS_INSTALL}")
        if(EXISTS "${lib}")
            file(WRITE "${stamp}" "${cache_text}")
            message(STATUS "edgesync: ${name} taken from ${kept}")
            return()
        endif()
        message(WARNING "edgesync: ${kept} holds no ${lib}; building ${name}")
    endif()

    string(TIMESTAMP t0 "%s")
    _es_fetch(${pkg} ${file} ${sha} tarball)
    file(REMOVE_RECURSE "${ES_DEPS_SRC}/${srcdir}" "${ES_DEPS_BUILD}/${name}")
    file(REMOVE "${stamp}")
    file(MAKE_DIRECTORY "${ES_DEPS_SRC}")
    file(ARCHIVE_EXTRACT INPUT "${tarball}" DESTINATION "${ES_DEPS_SRC}")
    set(project "${ES_DEPS_SRC}/${srcdir}")
    set(project_args "")
    if(EXISTS "${own}")
        set(project "${_es_thirdparty_projects}/${name}")
        set(project_args "-DES_SRC=${ES_DEPS_SRC}/${srcdir}")
    endif()
    if(NOT IS_DIRECTORY "${ES_DEPS_SRC}/${srcdir}" OR NOT EXISTS "${project}/CMakeLists.txt")
        message(FATAL_ERROR "edgesync: ${tarball} did not unpack to ${ES_DEPS_SRC}/${srcdir}")
    endif()
    if(COMMAND _es_${name}_configure_source)
        cmake_language(CALL _es_${name}_configure_source "${ES_DEPS_SRC}/${srcdir}")
    endif()
    file(WRITE "${init}" "${cache_text}")

    set(gen -G "${CMAKE_GENERATOR}")
    if(CMAKE_MAKE_PROGRAM)
        list(APPEND gen "-DCMAKE_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}")
    endif()
    _es_run(${name} configure "${CMAKE_COMMAND}" ${gen} -C "${init}" ${_es_toolchain_arg}
            ${project_args} -S "${project}" -B "${ES_DEPS_BUILD}/${name}")
    _es_run(${name} build "${CMAKE_COMMAND}" --build "${ES_DEPS_BUILD}/${name}"
            --parallel ${ES_DEPS_JOBS})
    _es_run(${name} install "${CMAKE_COMMAND}" --install "${ES_DEPS_BUILD}/${name}")
    if(NOT EXISTS "${lib}")
        message(FATAL_ERROR "edgesync: ${name} built but ${lib} was not installed; see ${ES_DEPS_DIR}/${name}-*.log")
    endif()
    file(WRITE "${stamp}" "${cache_text}")
    if(kept)
        _es_cache_put(${name} "${kept}")
    endif()
    string(TIMESTAMP t1 "%s")
    math(EXPR dt "${t1} - ${t0}")
    message(STATUS "edgesync: built ${name} in ${dt} s (logs: ${ES_DEPS_DIR}/${name}-*.log)")
endfunction()

# The C compiler of the third-party builds: edgesync's, except in the fuzz build
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

# Settings shared by every build: static, PIC, Release, ES_DEPS_C_COMPILER,
# installed under _deps/install/{include,lib}.
#
# A cross build (CMAKE_TOOLCHAIN_FILE, cmake/toolchains/) hands its
# toolchain file to every build: the same compiler, search paths and
# pkg-config directories as edgesync's, so the archives are the target's.
# Each build tree has its own _deps/, so a cross tree never reuses the
# native one's archives.
set(_es_toolchain "")
set(_es_toolchain_arg "")
if(CMAKE_TOOLCHAIN_FILE)
    file(REAL_PATH "${CMAKE_TOOLCHAIN_FILE}" _es_toolchain_path)
    set(_es_toolchain "set(CMAKE_TOOLCHAIN_FILE \"${_es_toolchain_path}\" CACHE FILEPATH \"\")\n")
    set(_es_toolchain_arg "-DCMAKE_TOOLCHAIN_FILE=${_es_toolchain_path}")
endif()
set(_es_common "${_es_toolchain}\
set(CMAKE_BUILD_TYPE Release CACHE STRING \"\")
set(CMAKE_C_COMPILER \"${ES_DEPS_C_COMPILER}\" CACHE FILEPATH \"\")
set(CMAKE_POSITION_INDEPENDENT_CODE ON CACHE BOOL \"\")
set(CMAKE_INSTALL_PREFIX \"${ES_DEPS_INSTALL}\" CACHE PATH \"\")
set(CMAKE_INSTALL_LIBDIR lib CACHE PATH \"\")
set(BUILD_SHARED_LIBS OFF CACHE BOOL \"\")
")
