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
# by -DES_VMLINUX_H=PATH at configure time (hosts without BTF). It only
# names the types and fields the programs read: where they are in the
# running kernel libbpf works out at load time from that kernel's BTF
# (CO-RE), so one vmlinux.h, whatever kernel or architecture it came from,
# serves every target. A cross tree takes the native tree's objects
# (ES_BPF_SKEL_DIR below) and so needs no vmlinux.h of its own.

set(ES_VMLINUX_H "" CACHE FILEPATH
    "vmlinux.h for the eBPF programs (default: generated from /sys/kernel/btf/vmlinux)")

set(ES_BPF_OUT "${CMAKE_BINARY_DIR}/bpf")
file(MAKE_DIRECTORY "${ES_BPF_OUT}")

# ES_BPF_SKEL_DIR: the bpf/ directory of another build tree of this source
# (scripts/cross-build.sh passes the native tree's) whose skeletons this
# tree uses as they are instead of compiling its own: the cross trees then
# embed the very objects the native agent does.
set(ES_BPF_SKEL_DIR "" CACHE PATH
    "bpf/ directory of a built tree whose eBPF skeletons to reuse (default: compile them here)")

# vmlinux.h: only where this tree compiles its own objects.
if(NOT ES_BPF_SKEL_DIR)
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
endif()

# No -D__TARGET_ARCH_<arch>: the programs are tracepoint, raw-tracepoint
# and cgroup programs, which never read struct pt_regs, the one kernel type
# whose layout CO-RE cannot relocate (its registers differ per
# architecture; bpf_tracing.h's PT_REGS_* and BPF_KPROBE need the macro).
# Without it bpf_tracing.h makes any PT_REGS_* use a compile error, so the
# objects stay architecture-neutral: every field they read is relocated by
# libbpf against the running kernel's BTF (offsets and load sizes, which
# covers 32-bit kernels' 4-byte pointers), whatever machine built them.

function(es_bpf_skeleton name)
    if(ES_BPF_SKEL_DIR)
        if(NOT EXISTS "${ES_BPF_SKEL_DIR}/${name}.skel.h")
            message(FATAL_ERROR "ES_BPF_SKEL_DIR: ${ES_BPF_SKEL_DIR}/${name}.skel.h is missing "
                    "(build that tree first)")
        endif()
        add_library(es_bpf_${name} INTERFACE)
        target_include_directories(es_bpf_${name} INTERFACE
            "${ES_BPF_SKEL_DIR}" "${PROJECT_SOURCE_DIR}/bpf")
        target_link_libraries(es_bpf_${name} INTERFACE es::bpf es::elf es::zlib)
        return()
    endif()
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
        COMMAND ${ES_CLANG} -g -O2 -target bpf
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
