# Unit tests of the /proc parsers behind the kernel collectors' procfs
# fallbacks (agent/kcprocfs.h), on fixtures in fixtures/procfs/kc/.
# realloc is wrapped so the tests reach the allocation-failure paths.
es_unit_test(test_kcprocfs
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_kcprocfs.c
  LIBS esagent
  WRAP realloc)
