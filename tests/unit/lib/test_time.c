/* Unit tests of lib/es_time.c: RFC 3339 formatting and parsing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "es_time.h"

static void test_format(void **state)
{
	char buf[ES_TIME_RFC3339_LEN];

	(void)state;
	assert_string_equal(es_time_rfc3339(0, buf), "1970-01-01T00:00:00Z");
	assert_string_equal(es_time_rfc3339((time_t)1700000000, buf),
			    "2023-11-14T22:13:20Z");
	assert_string_equal(es_time_rfc3339((time_t)-1, buf), "1969-12-31T23:59:59Z");
}

/* date-fullyear is four digits (RFC 3339 section 5.6): a year below 1000
 * is zero-padded, as the parser requires (found by tests/fuzz/fuzz_proto:
 * "0314-11-30T04:07:12Z" was written back as "314-11-30T04:07:12Z"). */
static void test_four_digit_years(void **state)
{
	static const char *const times[] = {
		"0314-11-30T04:07:12Z", "0000-01-01T00:00:00Z", "0999-12-31T23:59:59Z",
		"0001-02-03T04:05:06Z", "9999-12-31T23:59:59Z",
	};
	char buf[ES_TIME_RFC3339_LEN];
	time_t t, t2;

	(void)state;
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		assert_int_equal(es_time_parse_rfc3339(times[i], &t), 0);
		assert_string_equal(es_time_rfc3339(t, buf), times[i]);
		assert_int_equal(es_time_parse_rfc3339(buf, &t2), 0);
		assert_true(t2 == t);
	}
	assert_true(es_time_parse_rfc3339("0000-01-01T00:00:00Z", &t) == 0 &&
		    (int64_t)t == ES_TIME_RFC3339_MIN);
	assert_true(es_time_parse_rfc3339("9999-12-31T23:59:59Z", &t) == 0 &&
		    (int64_t)t == ES_TIME_RFC3339_MAX);
}

/* Seconds RFC 3339 cannot write are written as the nearest bound. */
static void test_out_of_range_clamped(void **state)
{
	char buf[ES_TIME_RFC3339_LEN];

	(void)state;
	if (sizeof(time_t) < 8)
		skip();
	assert_string_equal(es_time_rfc3339((time_t)(ES_TIME_RFC3339_MAX + 1), buf),
			    "9999-12-31T23:59:59Z");
	assert_string_equal(es_time_rfc3339((time_t)(ES_TIME_RFC3339_MIN - 1), buf),
			    "0000-01-01T00:00:00Z");
	assert_string_equal(es_time_rfc3339((time_t)INT64_MAX, buf), "9999-12-31T23:59:59Z");
	assert_string_equal(es_time_rfc3339((time_t)INT64_MIN, buf), "0000-01-01T00:00:00Z");
}

static void test_parse(void **state)
{
	time_t t;

	(void)state;
	assert_int_equal(es_time_parse_rfc3339("2023-11-14T22:13:20Z", &t), 0);
	assert_true(t == (time_t)1700000000);
	assert_int_equal(es_time_parse_rfc3339("2023-11-14T23:13:20.25+01:00", &t), 0);
	assert_true(t == (time_t)1700000000);
	assert_int_equal(es_time_parse_rfc3339("314-11-30T04:07:12Z", &t), -1);
	assert_int_equal(es_time_parse_rfc3339("2023-02-29T00:00:00Z", &t), -1);
	assert_int_equal(es_time_parse_rfc3339("2023-11-14T22:13:20", &t), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_four_digit_years),
		cmocka_unit_test(test_out_of_range_clamped),
		cmocka_unit_test(test_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
