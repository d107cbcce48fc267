# Unit tests of escommon (lib/).
es_unit_test(test_json SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_json.c LIBS escommon)
es_unit_test(test_mpatch SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_mpatch.c LIBS escommon)
es_unit_test(test_cond SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cond.c LIBS escommon)
es_unit_test(test_obj SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_obj.c LIBS escommon)
es_unit_test(test_config SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_config.c LIBS escommon)
