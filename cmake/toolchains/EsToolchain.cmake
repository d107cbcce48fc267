# EsToolchain.cmake - what every toolchain file of this folder does:
#   es_toolchain(<compiler> <binutils prefix> <what to install>)
# names the target (Linux, ES_CROSS_PROCESSOR), the C compiler (stops with
# the Debian package to install when it is missing), the binutils of
# <binutils prefix>-{ar,ranlib,strip,objcopy,readelf}, programs from the
# build host only, and the emulator (ES_CROSS_QEMU, qemu-user-static) that
# CTest runs the target's binaries with, when ES_CROSS_QEMU is set and
# installed. Included by EsCross.cmake and EsMusl.cmake.
include_guard(GLOBAL)

macro(es_toolchain compiler prefix install)
    set(CMAKE_SYSTEM_NAME Linux)
    set(CMAKE_SYSTEM_PROCESSOR ${ES_CROSS_PROCESSOR})
    find_program(CMAKE_C_COMPILER ${compiler})
    if(NOT CMAKE_C_COMPILER)
        message(FATAL_ERROR "no ${compiler}: install the Debian package "
                            "${install} (scripts/install-deps.sh does it)")
    endif()
    foreach(_es_tool ar ranlib strip objcopy readelf)
        string(TOUPPER ${_es_tool} _es_var)
        find_program(CMAKE_${_es_var} ${prefix}-${_es_tool})
    endforeach()
    set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
    set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
    set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
    set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
    if(ES_CROSS_QEMU)
        find_program(ES_CROSS_EMULATOR_BIN ${ES_CROSS_QEMU})
        if(ES_CROSS_EMULATOR_BIN)
            set(CMAKE_CROSSCOMPILING_EMULATOR "${ES_CROSS_EMULATOR_BIN}")
        endif()
    endif()
    set(ES_CROSS_DEB_ARCH ${ES_CROSS_DEB_ARCH} CACHE INTERNAL "dpkg architecture of the target")
endmacro()
