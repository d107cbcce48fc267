# EsBpf.cmake - turns bpf/<name>.bpf.c into a libbpf skeleton.
#
#   es_bpf_skeleton(<name>)
#
# compiles bpf/<name>.bpf.c with clang -target bpf (CO-RE, -g for BTF),
# strips DWARF but keeps BTF, and runs `bpftool gen skeleton` into
# ${CMAKE_BINARY_DIR}/bpf/<name>.skel.h. It defines the INTERFACE target
# es_bpf_<name>: link it to get the skeleton header on the include path
# (together with bpf/ for the shared <name>.h) and the build ordering.
# Everything is written to the build tree only.
#
# vmlinux.h (the kernel's types for CO-RE) is generated at build time from
# the build host's BTF, /sys/kernel/btf/vmlinux, or taken from the file named
# by -DES_VMLINUX_H=PATH at configure time (cross builds, hosts without BTF).

set(ES_VMLINUX_H "" CACHE FILEPATH
    "vmlinux.h for the eBPF programs (default: generated from /sys/kernel/btf/vmlinux)")

set(ES_BPF_OUT "${CMAKE_BINARY_DIR}/bpf")
file(MAKE_DIRECTORY "${ES_BPF_OUT}")

if(ES_VMLINUX_H)
    if(NOT EXISTS "${ES_VMLINUX_H}")
        message(FATAL_ERROR "ES_VMLINUX_H: ${ES_VMLINUX_H} does not exist")
    endif()
    set(_es_vmlinux_src "${ES_VMLINUX_H}")
    add_custom_command(OUTPUT "${ES_BPF_OUT}/vmlinux.h"
        COMMAND ${CMAKE_COMMAND} -E copy "${ES_VMLINUX_H}" "${ES_BPF_OUT}/vmlinux.h"
        DEPENDS "${ES_VMLINUX_H}"
        COMMENT "vmlinux.h from ${ES_VMLINUX_H}")
else()
    if(NOT EXISTS /sys/kernel/btf/vmlinux)
        message(FATAL_ERROR "edgesync's eBPF programs need the build host's BTF "
            "(/sys/kernel/btf/vmlinux) or -DES_VMLINUX_H=PATH to a vmlinux.h")
    endif()
    add_custom_command(OUTPUT "${ES_BPF_OUT}/vmlinux.h"
        COMMAND ${ES_BPFTOOL} btf dump file /sys/kernel/btf/vmlinux format c
                > "${ES_BPF_OUT}/vmlinux.h.tmp"
        COMMAND ${CMAKE_COMMAND} -E rename "${ES_BPF_OUT}/vmlinux.h.tmp"
                "${ES_BPF_OUT}/vmlinux.h"
        COMMENT "vmlinux.h from /sys/kernel/btf/vmlinux")
endif()
add_custom_target(es_bpf_vmlinux DEPENDS "${ES_BPF_OUT}/vmlinux.h")

# clang's target architecture macro for bpf_tracing.h.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|amd64|AMD64")
    set(ES_BPF_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
    set(ES_BPF_ARCH arm64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^arm")
    set(ES_BPF_ARCH arm)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "riscv64")
    set(ES_BPF_ARCH riscv)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "mips")
    set(ES_BPF_ARCH mips)
else()
    message(FATAL_ERROR "eBPF: unknown architecture ${CMAKE_SYSTEM_PROCESSOR}")
endif()

function(es_bpf_skeleton name)
    set(src "${PROJECT_SOURCE_DIR}/bpf/${name}.bpf.c")
    set(obj "${ES_BPF_OUT}/${name}.bpf.o")
    set(skel "${ES_BPF_OUT}/${name}.skel.h")
    # vmlinux.h is ordered by a target dependency (below): a file rule made
    # in another directory is not visible to this one's Makefile.
    set(deps "${src}" "${PROJECT_SOURCE_DIR}/bpf/es_bpf_common.h"
        "${PROJECT_SOURCE_DIR}/bpf/es_events.h")
    if(EXISTS "${PROJECT_SOURCE_DIR}/bpf/${name}.h")
        list(APPEND deps "${PROJECT_SOURCE_DIR}/bpf/${name}.h")
    endif()
    set(strip_cmd)
    if(ES_LLVM_STRIP)
        # DWARF is not needed at run time; BTF (CO-RE relocations) stays.
        set(strip_cmd COMMAND ${ES_LLVM_STRIP} -g "${obj}")
    endif()
    add_custom_command(OUTPUT "${obj}"
        COMMAND ${ES_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${ES_BPF_ARCH}
                -Wall -Werror -I "${ES_BPF_OUT}" -I "${PROJECT_SOURCE_DIR}/bpf"
                -c "${src}" -o "${obj}"
        ${strip_cmd}
        DEPENDS ${deps}
        COMMENT "BPF ${name}.bpf.c"
        VERBATIM)
    add_custom_command(OUTPUT "${skel}"
        COMMAND ${ES_BPFTOOL} gen skeleton "${obj}" name "${name}_bpf" > "${skel}.tmp"
        COMMAND ${CMAKE_COMMAND} -E rename "${skel}.tmp" "${skel}"
        DEPENDS "${obj}"
        COMMENT "BPF skeleton ${name}.skel.h")
    add_custom_target(es_bpf_${name}_gen DEPENDS "${skel}")
    add_dependencies(es_bpf_${name}_gen es_bpf_vmlinux)
    add_library(es_bpf_${name} INTERFACE)
    target_include_directories(es_bpf_${name} INTERFACE
        "${ES_BPF_OUT}" "${PROJECT_SOURCE_DIR}/bpf")
    target_link_libraries(es_bpf_${name} INTERFACE es::bpf es::elf es::zlib)
    add_dependencies(es_bpf_${name} es_bpf_${name}_gen)
endfunction()
