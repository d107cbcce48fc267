# EsFuzz.cmake - the libFuzzer build (tests/fuzz/), in a build tree of its
# own configured with clang:
#
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DES_FUZZ=ON
#   cmake --build build-fuzz --target fuzz
#   ctest --test-dir build-fuzz -L fuzz
#
# With ES_FUZZ=ON every edgesync source is compiled with
# -fsanitize=fuzzer-no-link,address,undefined (coverage and sanitizers, no
# main) and linked with address,undefined; the fuzz targets alone link
# -fsanitize=fuzzer (libFuzzer's main). The third-party libraries stay the
# gcc-built static ones (EsThirdParty.cmake, ES_DEPS_C_COMPILER).
#
# ES_FUZZ_USABLE is set to ON when the compiler can link a libFuzzer target
# (clang with its fuzzer runtime, Debian's libclang-rt-14-dev); when it
# cannot, the fuzz tests are still registered but exit 77 (skipped, saying
# why), so a missing toolchain never looks like a pass.

include_guard(GLOBAL)

option(ES_FUZZ "Build the libFuzzer targets of tests/fuzz (needs clang)" OFF)
set(ES_FUZZ_USABLE OFF)
set(ES_FUZZ_WHY "")

if(ES_FUZZ)
    include(CheckCSourceCompiles)
    set(_es_fuzz_flags -fsanitize=fuzzer-no-link,address,undefined
                       -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
        set(ES_FUZZ_WHY "the C compiler is ${CMAKE_C_COMPILER_ID}, libFuzzer needs clang "
                        "(-DCMAKE_C_COMPILER=clang)")
    else()
        set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
        set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=fuzzer,address,undefined)
        check_c_source_compiles([[
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return (int)(d == 0 && n); }
]] ES_HAVE_LIBFUZZER)
        unset(CMAKE_REQUIRED_FLAGS)
        unset(CMAKE_REQUIRED_LINK_OPTIONS)
        if(ES_HAVE_LIBFUZZER)
            set(ES_FUZZ_USABLE ON)
        else()
            set(ES_FUZZ_WHY "${CMAKE_C_COMPILER} cannot link -fsanitize=fuzzer "
                            "(install libclang-rt-14-dev)")
        endif()
    endif()
    if(ES_FUZZ_USABLE)
        add_compile_options(${_es_fuzz_flags})
        add_link_options(-fsanitize=address,undefined)
        message(STATUS "edgesync: libFuzzer targets enabled (tests/fuzz, target fuzz)")
    else()
        string(JOIN "" ES_FUZZ_WHY ${ES_FUZZ_WHY})
        message(WARNING "edgesync: ES_FUZZ=ON but ${ES_FUZZ_WHY}: "
                        "the fuzz tests will exit 77 (skipped)")
    endif()
endif()
