# Unit tests of HealthRules: specs, durations and metrics (lib/es_health.c),
# and their evaluation over time on the agent (agent/health.c).
es_unit_test(test_health SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_health.c LIBS escommon)
es_unit_test(test_health_eval SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_health_eval.c LIBS esagent WRAP calloc)
