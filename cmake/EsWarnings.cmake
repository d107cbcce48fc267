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
