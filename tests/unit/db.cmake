# Controller store and admin API (controller/db*.c, controller/admin*.c).
es_unit_test(test_db SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_db.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/testutil.c LIBS escontroller)
es_unit_test(test_admin SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_admin.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/testutil.c LIBS escontroller)
