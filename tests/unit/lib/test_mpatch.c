/* Unit tests of lib/es_mpatch.c: RFC 7386 apply and diff. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "es_json.h"
#include "es_mpatch.h"

static cJSON *J(const char *s)
{
	char err[256] = "";
	cJSON *v = NULL;

	if (es_json_parse(s, strlen(s), ES_JSON_MAX_DEPTH, &v, err, sizeof(err)) != ES_OK)
		fail_msg("fixture does not parse: %s: %s", s, err);
	return v;
}

static void assert_json_equal(const cJSON *got, const char *want_text)
{
	cJSON *want = J(want_text);
	char *g = es_json_print(got);

	if (!cJSON_Compare(got, want, 1))
		fail_msg("got %s, want %s", g ? g : "(null)", want_text);
	free(g);
	cJSON_Delete(want);
}

/* RFC 7386 Appendix A: original, patch, result. */
static const char *const rfc_examples[][3] = {
	{"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
	{"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
	{"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
	{"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
	{"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
	{"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
	{"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"},
	{"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
	{"[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"},
	{"{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"},
	{"{\"a\":\"foo\"}", "null", "null"},
	{"{\"a\":\"foo\"}", "\"bar\"", "\"bar\""},
	{"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
	{"[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"},
	{"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"},
};

static void test_rfc7386_appendix_a(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rfc_examples) / sizeof(rfc_examples[0]); i++) {
		cJSON *target = J(rfc_examples[i][0]);
		cJSON *patch = J(rfc_examples[i][1]);
		char *before = es_json_print(patch);
		char *after;

		assert_int_equal(es_mpatch_apply(&target, patch), ES_OK);
		assert_json_equal(target, rfc_examples[i][2]);
		/* The patch is not modified. */
		after = es_json_print(patch);
		assert_string_equal(before, after);
		free(before);
		free(after);
		cJSON_Delete(target);
		cJSON_Delete(patch);
	}
}

static void test_apply_absent_target(void **state)
{
	cJSON *target = NULL;
	cJSON *patch = J("{\"a\":{\"b\":1,\"c\":null}}");

	(void)state;
	assert_int_equal(es_mpatch_apply(&target, patch), ES_OK);
	assert_json_equal(target, "{\"a\":{\"b\":1}}");
	cJSON_Delete(target);
	cJSON_Delete(patch);
}

/* from, to pairs for diff round trips. */
static const char *const pairs[][2] = {
	{"{\"a\":1,\"b\":{\"c\":2,\"d\":[1,2]}}", "{\"a\":1,\"b\":{\"c\":3,\"d\":[1,2]}}"},
	{"{\"a\":1,\"b\":{\"c\":2}}", "{\"b\":{\"e\":{\"f\":true}}}"},
	{"{\"status\":{\"usage\":{\"cpu\":{\"user\":1.5,\"idle\":9},\"load\":{\"load1\":0.1}},"
	 "\"filesystems\":[{\"device\":\"/dev/sda1\",\"availBytes\":10}]}}",
	 "{\"status\":{\"usage\":{\"cpu\":{\"user\":2.5,\"idle\":9},\"load\":{\"load1\":0.1}},"
	 "\"filesystems\":[{\"device\":\"/dev/sda1\",\"availBytes\":9}],\"new\":\"x\"}}"},
	{"{\"a\":{\"b\":{\"c\":{\"d\":1}}}}", "{\"a\":{\"b\":{\"c\":{}}}}"},
	{"{\"a\":\"x\"}", "{\"a\":{\"b\":\"y\"}}"},
	{"{\"a\":{\"b\":\"y\"}}", "{\"a\":\"x\"}"},
	{"{\"a\":[1,{\"b\":2}]}", "{\"a\":[1,{\"b\":3}]}"},
	{"{}", "{\"a\":1,\"b\":[],\"c\":{}}"},
	{"{\"a\":1,\"b\":[],\"c\":{}}", "{}"},
	{"[1,2]", "{\"a\":1}"},
	{"{\"a\":1}", "[1,2]"},
	{"\"s\"", "\"t\""},
	{"3", "3"},
};

static void test_diff_round_trips(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		cJSON *from = J(pairs[i][0]);
		cJSON *to = J(pairs[i][1]);
		cJSON *patch = NULL;
		char *from_text = es_json_print(from);
		char *to_text = es_json_print(to);
		char *check;

		assert_int_equal(es_mpatch_diff(from, to, &patch), ES_OK);
		assert_non_null(patch);
		/* diff leaves both inputs alone */
		check = es_json_print(from);
		assert_string_equal(check, from_text);
		free(check);
		check = es_json_print(to);
		assert_string_equal(check, to_text);
		free(check);

		assert_int_equal(es_mpatch_apply(&from, patch), ES_OK);
		if (!cJSON_Compare(from, to, 1)) {
			char *p = es_json_print(patch), *r = es_json_print(from);

			fail_msg("pair %zu: patch %s gave %s, want %s", i, p, r, to_text);
		}
		cJSON_Delete(from);
		cJSON_Delete(to);
		cJSON_Delete(patch);
		free(from_text);
		free(to_text);
	}
}

static void test_diff_minimal(void **state)
{
	cJSON *from = J("{\"a\":1,\"b\":{\"c\":2,\"d\":3},\"e\":[1],\"gone\":true}");
	cJSON *to = J("{\"a\":1,\"b\":{\"c\":2,\"d\":4},\"e\":[1,2],\"new\":null}");
	cJSON *patch = NULL;

	(void)state;
	assert_int_equal(es_mpatch_diff(from, to, &patch), ES_OK);
	/* Equal members omitted, nested objects diffed, arrays whole, removed
	 * members null, null members of `to` dropped. */
	assert_json_equal(patch, "{\"b\":{\"d\":4},\"e\":[1,2],\"gone\":null}");
	cJSON_Delete(from);
	cJSON_Delete(to);
	cJSON_Delete(patch);
}

static void test_diff_unchanged_is_empty(void **state)
{
	static const char *const docs[] = {
		"{}", "{\"a\":1}",
		"{\"metadata\":{\"name\":\"n1\",\"labels\":{\"site\":\"lab\"}},"
		"\"status\":{\"conditions\":[{\"type\":\"Ready\"}],\"x\":{\"y\":{\"z\":[]}}}}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		cJSON *a = J(docs[i]), *b = J(docs[i]), *patch = NULL;

		assert_int_equal(es_mpatch_diff(a, b, &patch), ES_OK);
		assert_true(cJSON_IsObject(patch));
		assert_null(patch->child);
		cJSON_Delete(a);
		cJSON_Delete(b);
		cJSON_Delete(patch);
	}
}

/* An independent reference of RFC 7386 section 2, written as the RFC's
 * pseudo-code with plain linear lookups, to check es_mpatch_apply against.
 * Consumes target (may be NULL) and returns the result. */
static cJSON *ref_merge(cJSON *target, const cJSON *patch)
{
	const cJSON *m;

	if (!cJSON_IsObject(patch)) {
		cJSON_Delete(target);
		return cJSON_Duplicate(patch, 1);
	}
	if (!cJSON_IsObject(target)) {
		cJSON_Delete(target);
		target = cJSON_CreateObject();
	}
	for (m = patch->child; m != NULL; m = m->next) {
		if (cJSON_IsNull(m)) {
			cJSON_DeleteItemFromObjectCaseSensitive(target, m->string);
		} else {
			cJSON *old = cJSON_DetachItemFromObjectCaseSensitive(target,
									    m->string);

			cJSON_AddItemToObject(target, m->string, ref_merge(old, m));
		}
	}
	return target;
}

static unsigned rng_state = 12345;
static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return (rng_state >> 16) % n;
}

/* A random value; objects get up to 14 members from a 20-name alphabet,
 * so both the linear and the indexed lookups are exercised, and names
 * collide between target and patch. Nulls only where allow_null. */
static cJSON *random_value(int depth, int allow_null)
{
	unsigned kind = rnd(depth > 2 ? 3 : 6);

	if (allow_null && rnd(5) == 0)
		return cJSON_CreateNull();
	switch (kind) {
	case 0:
		return cJSON_CreateNumber((double)rnd(100));
	case 1: {
		char t[8];

		snprintf(t, sizeof(t), "s%u", rnd(10));
		return cJSON_CreateString(t);
	}
	case 2:
		return cJSON_CreateBool(rnd(2));
	case 3: {
		cJSON *a = cJSON_CreateArray();

		for (unsigned i = rnd(3); i > 0; i--)
			cJSON_AddItemToArray(a, random_value(depth + 1, 0));
		return a;
	}
	default: {
		cJSON *o = cJSON_CreateObject();

		for (unsigned i = rnd(15); i > 0; i--) {
			char k[8];

			snprintf(k, sizeof(k), "k%u", rnd(20));
			cJSON_DeleteItemFromObjectCaseSensitive(o, k);
			cJSON_AddItemToObject(o, k, random_value(depth + 1, allow_null));
		}
		return o;
	}
	}
}

static void test_apply_matches_reference(void **state)
{
	(void)state;
	for (int i = 0; i < 3000; i++) {
		cJSON *target = random_value(0, 0), *patch = random_value(0, 1);
		cJSON *want = ref_merge(cJSON_Duplicate(target, 1), patch);
		cJSON *got = cJSON_Duplicate(target, 1);

		assert_int_equal(es_mpatch_apply(&got, patch), ES_OK);
		if (!cJSON_Compare(got, want, 1)) {
			char *t = es_json_print(target), *p = es_json_print(patch);
			char *g = es_json_print(got), *w = es_json_print(want);

			fail_msg("case %d: %s + %s gave %s, want %s", i, t, p, g, w);
		}
		/* And diff is its inverse: from + diff(from, to) == to. */
		{
			cJSON *d = NULL, *back = cJSON_Duplicate(target, 1);

			assert_int_equal(es_mpatch_diff(target, want, &d), ES_OK);
			assert_int_equal(es_mpatch_apply(&back, d), ES_OK);
			assert_true(cJSON_Compare(back, want, 1));
			cJSON_Delete(d);
			cJSON_Delete(back);
		}
		cJSON_Delete(target);
		cJSON_Delete(patch);
		cJSON_Delete(want);
		cJSON_Delete(got);
	}
}

/* A flat object of n members "m<i>" = i + add. */
static cJSON *flat(int n, int add)
{
	cJSON *o = cJSON_CreateObject();
	char k[16];

	assert_non_null(o);
	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "m%d", i);
		assert_non_null(cJSON_AddNumberToObject(o, k, i + add));
	}
	return o;
}

/* 200 000 members patched by 200 000: linear member lookups would make
 * this 4e10 comparisons (minutes; the test's CTest timeout is 20 s). */
static void test_large_objects(void **state)
{
	const int n = 200000;
	cJSON *target = flat(n, 0), *patch = flat(n, 1), *d = NULL;
	const cJSON *m;
	int i = 0;

	(void)state;
	assert_int_equal(es_mpatch_apply(&target, patch), ES_OK);
	cJSON_ArrayForEach(m, target) {
		assert_int_equal(m->valueint, i + 1);
		i++;
	}
	assert_int_equal(i, n);
	cJSON_Delete(patch);
	patch = flat(n, 0);
	assert_int_equal(es_mpatch_diff(target, patch, &d), ES_OK);
	assert_int_equal(cJSON_GetArraySize(d), n);
	cJSON_Delete(d);
	cJSON_Delete(patch);
	cJSON_Delete(target);
}

/* One member object of 200 000 members, equal on both sides, beside a
 * member that changed: diff compared the member objects with cJSON_Compare,
 * whose lookups are linear, 2e10 string comparisons (found by
 * tests/fuzz/fuzz_mpatch; minutes, against the CTest timeout of 20 s). */
static void test_diff_large_nested(void **state)
{
	const int n = 200000;
	cJSON *from = cJSON_CreateObject(), *to, *d = NULL;

	(void)state;
	assert_non_null(from);
	assert_true(cJSON_AddItemToObject(from, "o", flat(n, 0)));
	assert_non_null(cJSON_AddNumberToObject(from, "p", 1));
	to = cJSON_Duplicate(from, 1);
	assert_non_null(to);
	cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(to, "p"), 2);
	assert_int_equal(es_mpatch_diff(from, to, &d), ES_OK);
	assert_int_equal(cJSON_GetArraySize(d), 1);
	assert_true(cJSON_GetObjectItemCaseSensitive(d, "p")->valuedouble == 2);
	cJSON_Delete(d);
	cJSON_Delete(from);
	cJSON_Delete(to);
}

/* A change of one unit in the last place is a change: cJSON_Compare's
 * relative epsilon took 1 and 1.0000000000000002, or 2^53-1 and 2^53-2, as
 * equal, so diff left them out and from + diff was not to. */
static void test_diff_exact_numbers(void **state)
{
	static const char *const near[][2] = {
		{"{\"a\":1}", "{\"a\":1.0000000000000002}"},
		{"{\"a\":{\"b\":9007199254740991}}", "{\"a\":{\"b\":9007199254740990}}"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
		cJSON *from = cJSON_Parse(near[i][0]), *to = cJSON_Parse(near[i][1]), *d = NULL;

		assert_non_null(from);
		assert_non_null(to);
		assert_int_equal(es_mpatch_diff(from, to, &d), ES_OK);
		assert_int_equal(es_mpatch_apply(&from, d), ES_OK);
		assert_int_equal(es_json_equal(from, to), 1);
		cJSON_Delete(d);
		cJSON_Delete(from);
		cJSON_Delete(to);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc7386_appendix_a),
		cmocka_unit_test(test_apply_absent_target),
		cmocka_unit_test(test_diff_round_trips),
		cmocka_unit_test(test_diff_minimal),
		cmocka_unit_test(test_diff_unchanged_is_empty),
		cmocka_unit_test(test_apply_matches_reference),
		cmocka_unit_test(test_large_objects),
		cmocka_unit_test(test_diff_large_nested),
		cmocka_unit_test(test_diff_exact_numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
