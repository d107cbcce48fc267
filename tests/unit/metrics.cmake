# Unit tests of the metrics registry and its text format (lib/es_metrics.c),
# the logfmt logger (lib/es_log.c), and the agent's metric definitions
# (agent/metrics*.c).
es_unit_test(test_metrics SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_metrics.c
  LIBS escommon WRAP calloc realloc strdup)
es_unit_test(test_log SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_log.c LIBS escommon)
es_unit_test(test_agent_metrics SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_agent_metrics.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/testutil.c LIBS esagent)
es_unit_test(test_ctrl_metrics SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ctrl_metrics.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/testutil.c LIBS escontroller)
