/* Unit tests of lib/es_cond.c: Kubernetes condition semantics. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "es_cond.h"

#define T1 ((time_t)1700000000) /* 2023-11-14T22:13:20Z */
#define T2 ((time_t)1700000100)
#define T3 ((time_t)1700000200) /* 2023-11-14T22:16:40Z */

static const char *member_str(const cJSON *c, const char *k)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, k);

	assert_true(cJSON_IsString(m));
	return m->valuestring;
}

static double member_num(const cJSON *c, const char *k)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, k);

	assert_true(cJSON_IsNumber(m));
	return m->valuedouble;
}

static void test_transition_time(void **state)
{
	cJSON *conds = cJSON_CreateArray();
	cJSON *c;
	int changed = -1;

	(void)state;
	assert_int_equal(es_cond_set(conds, "Applied", "True", "Applied", "ok", 1,
				     T1, &changed), ES_OK);
	assert_int_equal(changed, 1);
	c = es_cond_find(conds, "Applied");
	assert_non_null(c);
	assert_string_equal(member_str(c, "status"), "True");
	assert_string_equal(member_str(c, "lastTransitionTime"), "2023-11-14T22:13:20Z");

	/* Same status: reason, message, observedGeneration change, the time not. */
	assert_int_equal(es_cond_set(conds, "Applied", "True", "Reapplied", "again", 2,
				     T2, &changed), ES_OK);
	assert_int_equal(changed, 0);
	assert_int_equal(cJSON_GetArraySize(conds), 1);
	c = es_cond_find(conds, "Applied");
	assert_string_equal(member_str(c, "lastTransitionTime"), "2023-11-14T22:13:20Z");
	assert_string_equal(member_str(c, "reason"), "Reapplied");
	assert_string_equal(member_str(c, "message"), "again");
	assert_true(member_num(c, "observedGeneration") == 2);

	/* Status changes: the time moves. */
	assert_int_equal(es_cond_set(conds, "Applied", "False", "ApplyFailed", "bad", 3,
				     T3, &changed), ES_OK);
	assert_int_equal(changed, 1);
	c = es_cond_find(conds, "Applied");
	assert_string_equal(member_str(c, "status"), "False");
	assert_string_equal(member_str(c, "lastTransitionTime"), "2023-11-14T22:16:40Z");
	assert_true(member_num(c, "observedGeneration") == 3);
	assert_string_equal(member_str(c, "type"), "Applied");

	/* A second type is appended; the first one stays. changed may be NULL. */
	assert_int_equal(es_cond_set(conds, "Ready", "Unknown", "Starting", "", 0, T2,
				     NULL), ES_OK);
	assert_int_equal(cJSON_GetArraySize(conds), 2);
	assert_string_equal(member_str(es_cond_find(conds, "Ready"), "lastTransitionTime"),
			    "2023-11-14T22:15:00Z");
	assert_string_equal(member_str(es_cond_find(conds, "Applied"), "reason"),
			    "ApplyFailed");
	assert_null(es_cond_find(conds, "Missing"));
	cJSON_Delete(conds);
}

static void test_reason_camel_case(void **state)
{
	cJSON *conds = cJSON_CreateArray();
	static const char *const bad[] = {
		"", "applied", "Apply Failed", "Apply_Failed", "Apply-Failed", "1Applied",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(es_cond_set(conds, "Applied", "True", bad[i], "", 1, T1,
					     NULL), ES_ERR_INVAL);
	assert_int_equal(es_cond_set(conds, "Applied", "True", NULL, "", 1, T1, NULL),
			 ES_ERR_INVAL);
	assert_int_equal(es_cond_set(conds, "Applied", "true", "Applied", "", 1, T1,
				     NULL), ES_ERR_INVAL);
	assert_int_equal(es_cond_set(conds, "Applied", "Yes", "Applied", "", 1, T1,
				     NULL), ES_ERR_INVAL);
	assert_int_equal(cJSON_GetArraySize(conds), 0);

	/* A refused update leaves the existing condition as it was. */
	assert_int_equal(es_cond_set(conds, "Applied", "True", "Applied", "m", 1, T1,
				     NULL), ES_OK);
	assert_int_equal(es_cond_set(conds, "Applied", "False", "bad reason", "x", 2,
				     T2, NULL), ES_ERR_INVAL);
	assert_string_equal(member_str(es_cond_find(conds, "Applied"), "status"), "True");
	assert_string_equal(member_str(es_cond_find(conds, "Applied"), "message"), "m");

	assert_true(es_cond_is_camel("KindNotSupported"));
	assert_true(es_cond_is_camel("A"));
	assert_true(es_cond_is_camel("IPv4Ready2"));
	assert_false(es_cond_is_camel("kindNotSupported"));
	assert_false(es_cond_is_camel(""));
	assert_false(es_cond_is_camel(NULL));
	assert_false(es_cond_is_camel("Kind.Not"));
	cJSON_Delete(conds);
}

static void test_observed_generation(void **state)
{
	cJSON *conds = cJSON_CreateArray();
	int changed = -1;

	(void)state;
	assert_int_equal(es_cond_set(conds, "Applied", "True", "Applied", "", 4, T1,
				     &changed), ES_OK);
	assert_true(member_num(es_cond_find(conds, "Applied"), "observedGeneration") == 4);
	assert_int_equal(es_cond_set(conds, "Applied", "True", "Applied", "", 9, T2,
				     &changed), ES_OK);
	assert_int_equal(changed, 0);
	assert_true(member_num(es_cond_find(conds, "Applied"), "observedGeneration") == 9);
	cJSON_Delete(conds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transition_time),
		cmocka_unit_test(test_reason_camel_case),
		cmocka_unit_test(test_observed_generation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
