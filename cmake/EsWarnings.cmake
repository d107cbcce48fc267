# EsWarnings.cmake - warning flags for edgesync's own targets, and the
# sanitizer switch. Third-party code is not built with these.
#
#   ES_WERROR=ON    warnings are errors (CI)
#   ES_SANITIZE=ON  ASan + UBSan on everything compiled and linked from here
#                   on; UBSan findings abort instead of only printing.

include_guard(GLOBAL)

option(ES_WERROR "Treat compiler warnings as errors" OFF)
option(ES_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

function(es_target_warnings target)
    target_compile_options(${target} PRIVATE
        -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes
        -Wno-unused-parameter
        $<$<BOOL:${ES_WERROR}>:-Werror>)
endfunction()

if(ES_SANITIZE)
    set(_es_san -fsanitize=address,undefined -fno-omit-frame-pointer
                -fno-sanitize-recover=undefined)
    add_compile_options(${_es_san})
    add_link_options(${_es_san})
endif()

# es_part(TARGET SOURCES src.c... [LIBS lib...])
# One part of a program: an OBJECT library of the folder's sources, with
# edgesync's warnings. INCLUDES are the include roots its sources and their
# users need (a program's folder, so that headers are named "part/x.h");
# LIBS are the parts and libraries it uses. The program's static library
# links its parts, which puts their objects into it.
function(es_part target)
    cmake_parse_arguments(P "" "" "SOURCES;INCLUDES;LIBS" ${ARGN})
    add_library(${target} OBJECT ${P_SOURCES})
    target_include_directories(${target} PUBLIC ${P_INCLUDES})
    target_link_libraries(${target} PUBLIC ${P_LIBS})
    es_target_warnings(${target})
endfunction()
