# Controller settings (controller/config.c). The server itself is covered by
# the integration tests, which drive the real binary on loopback.
es_unit_test(test_controller_config
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_controller_config.c
  LIBS escontroller)
