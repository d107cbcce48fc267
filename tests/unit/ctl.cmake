# edgesyncctl (controller/ctl): manifests, URLs and HTTP framing, output.
es_unit_test(test_ctl_yaml SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ctl_yaml.c LIBS esctl)
es_unit_test(test_ctl_url SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ctl_url.c LIBS esctl)
es_unit_test(test_ctl_print SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ctl_print.c LIBS esctl)
