# Unit tests of the kernel-collector framework (agent/kcollect.h) and the
# cgroup name cache (agent/cgroupname.h). calloc is wrapped so the tests
# reach the allocation-failure paths.
es_unit_test(test_cgroupname
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cgroupname.c
  LIBS esagent
  WRAP calloc)
es_unit_test(test_kcollect
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_kcollect.c
  LIBS esagent)
