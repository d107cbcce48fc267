# Unit tests of the EgressPolicy spec (lib/es_egress.c) and of the rule sets
# the agent writes to the kernel (agent/egress_plan.c).
es_unit_test(test_egress SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_egress.c
  LIBS esagent escommon)
