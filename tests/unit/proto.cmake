# Protocol codec, schemas and golden files (lib/es_proto.c, lib/es_pki.c,
# proto/).
es_unit_test(test_proto SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_proto.c LIBS escommon)
es_unit_test(test_pki SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_pki.c LIBS escommon)
add_test(NAME check_schemas
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_schemas.py
          ${PROJECT_SOURCE_DIR}/proto)
set_tests_properties(check_schemas PROPERTIES LABELS unit TIMEOUT 120)
