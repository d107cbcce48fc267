# Unit tests of the agent's procfs collectors (agent/collect.h).
# uname and statvfs are wrapped so fixture trees give exact values.
es_unit_test(test_collect
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_collect.c
  LIBS esagent
  WRAP uname statvfs)
