# Unit tests of the agent runtime (agent/backoff.c, agent/config.c,
# agent/heap.c).
es_unit_test(test_backoff SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_backoff.c LIBS esagent)
es_unit_test(test_agent_config SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_agent_config.c LIBS esagent)
es_unit_test(test_heap SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_heap.c LIBS esagent)
