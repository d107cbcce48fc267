# Unit tests of the agent's store and reconciler (agent/store*.c,
# agent/reconcile.c).
es_unit_test(test_store SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_store.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/testutil.c LIBS esagent)
es_unit_test(test_reconcile SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_reconcile.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/testutil.c LIBS esagent)
