# Unit tests of lib/es_notify.c, through the real libsystemd (loaded at run
# time; Debian's libsystemd0 is part of every systemd install).
es_unit_test(test_notify SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_notify.c LIBS escommon)
