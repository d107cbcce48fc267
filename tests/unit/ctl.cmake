# edgesyncctl (controller/ctl): manifests, URLs and HTTP framing, output.
es_unit_test(test_ctl_yaml SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ctl_yaml.c LIBS esctl)
es_unit_test(test_ctl_url SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ctl_url.c LIBS esctl)
es_unit_test(test_ctl_print SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ctl_print.c LIBS esctl)
# A 200 000-level manifest must be refused at once, not after a minute.
set_tests_properties(test_ctl_yaml PROPERTIES TIMEOUT 20)
es_unit_test(test_ctl_main SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_ctl_main.c LIBS esctl)
