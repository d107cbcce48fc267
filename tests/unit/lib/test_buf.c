/*
 * test_buf.c - lib/es_buf.c: growth, reserve and commit, the bound,
 * printf-style appends of any length (es_buf_appendf goes through
 * es_buf_vappendf), handing the text over, sticky errors and allocation
 * failures (realloc is wrapped).
 */
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "es_buf.h"

/* realloc calls left before one fails; < 0: never fail. */
static int realloc_budget = -1;
static int realloc_calls;

void *__real_realloc(void *p, size_t sz);
void *__wrap_realloc(void *p, size_t sz);

void *__wrap_realloc(void *p, size_t sz)
{
	realloc_calls++;
	if (realloc_budget == 0)
		return NULL;
	if (realloc_budget > 0)
		realloc_budget--;
	return __real_realloc(p, sz);
}

static void test_zeroed_and_growth(void **state)
{
	es_buf b = { 0 };
	char want[5000];

	(void)state;
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	for (size_t i = 0; i < sizeof(want) - 1; i++) {
		char c = (char)('a' + i % 26);

		want[i] = c;
		assert_int_equal(es_buf_append(&b, &c, 1), ES_OK);
		assert_int_equal(b.len, i + 1);
		assert_true(b.cap >= b.len + 1);
		assert_int_equal(b.p[b.len], '\0');
	}
	want[sizeof(want) - 1] = '\0';
	assert_string_equal(b.p, want);
	/* Doubling: a few reallocations, not one per byte. */
	assert_true(b.cap < 2 * sizeof(want));
	es_buf_free(&b);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	es_buf_free(NULL);
}

static void test_append_kinds(void **state)
{
	es_buf b;

	(void)state;
	es_buf_init(&b, 0);
	assert_int_equal(es_buf_append_str(&b, "abc"), ES_OK);
	assert_int_equal(es_buf_append(&b, "d\0e", 3), ES_OK);
	assert_int_equal(b.len, 6);
	assert_memory_equal(b.p, "abcd\0e", 7);
	assert_int_equal(es_buf_append(&b, NULL, 0), ES_OK);
	assert_int_equal(b.len, 6);
	es_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.p, "");
	assert_int_equal(es_buf_append_str(&b, "x"), ES_OK);
	assert_string_equal(b.p, "x");
	es_buf_free(&b);

	/* An empty append still allocates the empty text. */
	assert_int_equal(es_buf_append_str(&b, ""), ES_OK);
	assert_non_null(b.p);
	assert_string_equal(b.p, "");
	es_buf_free(&b);
}

static void test_reserve_commit(void **state)
{
	es_buf b = { 0 };

	(void)state;
	assert_int_equal(es_buf_reserve(&b, 0), ES_OK);
	assert_non_null(b.p);
	assert_string_equal(b.p, "");
	assert_int_equal(es_buf_reserve(&b, 1000), ES_OK);
	assert_true(b.cap >= 1001);
	memcpy(b.p + b.len, "hello", 5);
	es_buf_commit(&b, 5);
	assert_int_equal(b.len, 5);
	assert_string_equal(b.p, "hello");
	assert_int_equal(es_buf_reserve(&b, 3), ES_OK);
	memcpy(b.p + b.len, "!!!", 3);
	es_buf_commit(&b, 2);
	assert_string_equal(b.p, "hello!!");
	/* A size that cannot exist: refused before any allocation. */
	realloc_calls = 0;
	assert_int_equal(es_buf_reserve(&b, SIZE_MAX), ES_ERR_NOMEM);
	assert_int_equal(realloc_calls, 0);
	assert_string_equal(b.p, "hello!!");
	es_buf_free(&b);
}

static void test_bound(void **state)
{
	es_buf b;

	(void)state;
	es_buf_init(&b, 16);
	assert_int_equal(es_buf_append_str(&b, "0123456789"), ES_OK);
	assert_int_equal(es_buf_append_str(&b, "abcdefg"), ES_ERR_TOOBIG);
	assert_int_equal(b.err, ES_ERR_TOOBIG);
	assert_string_equal(b.p, "0123456789");
	/* Sticky: even what would fit is refused now. */
	assert_int_equal(es_buf_append_str(&b, "a"), ES_ERR_TOOBIG);
	assert_int_equal(es_buf_appendf(&b, "%d", 1), ES_ERR_TOOBIG);
	assert_int_equal(es_buf_reserve(&b, 0), ES_ERR_TOOBIG);
	assert_string_equal(b.p, "0123456789");
	es_buf_reset(&b);
	assert_int_equal(b.err, ES_OK);
	assert_int_equal(b.max, 16);
	/* Exactly the bound fits, and no more is allocated than it needs. */
	assert_int_equal(es_buf_append_str(&b, "0123456789abcdef"), ES_OK);
	assert_int_equal(b.len, 16);
	assert_int_equal(b.cap, 17);
	assert_int_equal(es_buf_reserve(&b, 0), ES_OK);
	assert_int_equal(es_buf_reserve(&b, 1), ES_ERR_TOOBIG);
	es_buf_free(&b);
	assert_int_equal(b.max, 16);
	assert_int_equal(b.err, ES_OK);

	/* A large bound: growth stops at it. */
	es_buf_init(&b, 1000);
	for (int i = 0; i < 100; i++)
		assert_int_equal(es_buf_append_str(&b, "0123456789"), ES_OK);
	assert_int_equal(b.len, 1000);
	assert_true(b.cap <= 1001);
	assert_int_equal(es_buf_append_str(&b, "x"), ES_ERR_TOOBIG);
	assert_int_equal(b.len, 1000);
	es_buf_free(&b);
}

static void test_appendf(void **state)
{
	es_buf b = { 0 };
	char *big = malloc(100001), want[64];

	(void)state;
	assert_non_null(big);
	memset(big, 'x', 100000);
	big[100000] = '\0';
	assert_int_equal(es_buf_appendf(&b, "n=%d s=%s", 42, "ok"), ES_OK);
	assert_string_equal(b.p, "n=42 s=ok");
	/* Output far longer than the room there is. */
	assert_int_equal(es_buf_appendf(&b, "[%s]%zu", big, (size_t)7), ES_OK);
	assert_int_equal(b.len, 9 + 1 + 100000 + 1 + 1);
	assert_memory_equal(b.p, "n=42 s=ok[", 10);
	assert_memory_equal(b.p + 10, big, 100000);
	assert_string_equal(b.p + 100010, "]7");
	assert_int_equal(es_buf_appendf(&b, "%s-%u", "v", 3u), ES_OK);
	assert_string_equal(b.p + 100012, "v-3");
	assert_int_equal(es_buf_appendf(&b, "%s", ""), ES_OK);
	assert_int_equal(b.len, 100015);
	es_buf_free(&b);

	/* Many short appends: those that outgrow the room take the second
	 * vsnprintf pass over the same arguments. */
	es_buf_init(&b, 0);
	for (int i = 0; i < 200; i++)
		assert_int_equal(es_buf_appendf(&b, "%03d,", i), ES_OK);
	assert_int_equal(b.len, 800);
	snprintf(want, sizeof(want), "%03d,", 199);
	assert_string_equal(b.p + 796, want);
	es_buf_free(&b);

	/* Over the bound: nothing appended, still terminated. */
	es_buf_init(&b, 100);
	assert_int_equal(es_buf_appendf(&b, "%s", "head"), ES_OK);
	assert_int_equal(es_buf_appendf(&b, "%s", big + 99900), ES_ERR_TOOBIG);
	assert_int_equal(b.len, 4);
	assert_string_equal(b.p, "head");
	es_buf_free(&b);
	/* Over the bound though within the room already allocated. */
	es_buf_init(&b, 10);
	assert_int_equal(es_buf_appendf(&b, "%s", "12345"), ES_OK);
	assert_int_equal(es_buf_appendf(&b, "%s", "678901"), ES_ERR_TOOBIG);
	assert_string_equal(b.p, "12345");
	es_buf_free(&b);
	free(big);
}

static void test_detach(void **state)
{
	es_buf b;
	size_t len = 99;
	char *s;

	(void)state;
	es_buf_init(&b, 50);
	assert_null(es_buf_detach(&b, &len));
	assert_int_equal(len, 0);
	assert_int_equal(es_buf_append_str(&b, "text"), ES_OK);
	s = es_buf_detach(&b, &len);
	assert_string_equal(s, "text");
	assert_int_equal(len, 4);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	assert_int_equal(b.max, 50);
	free(s);
	assert_int_equal(es_buf_append_str(&b, "again"), ES_OK);
	s = es_buf_detach(&b, NULL);
	assert_string_equal(s, "again");
	free(s);
}

static void test_alloc_failure(void **state)
{
	es_buf b = { 0 };
	char big[300];

	(void)state;
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	/* The first allocation fails: nothing held, error sticky. */
	realloc_budget = 0;
	assert_int_equal(es_buf_append_str(&b, "a"), ES_ERR_NOMEM);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	realloc_budget = -1;
	assert_int_equal(es_buf_append_str(&b, "a"), ES_ERR_NOMEM);
	es_buf_reset(&b);
	assert_int_equal(es_buf_append_str(&b, "a"), ES_OK);
	assert_string_equal(b.p, "a");

	/* Growth fails: the text so far is kept. */
	realloc_budget = 0;
	assert_int_equal(es_buf_append_str(&b, big), ES_ERR_NOMEM);
	assert_string_equal(b.p, "a");
	assert_int_equal(b.len, 1);
	realloc_budget = -1;
	es_buf_reset(&b);
	assert_int_equal(es_buf_append_str(&b, "bc"), ES_OK);
	realloc_budget = 0;
	assert_int_equal(es_buf_appendf(&b, "%s", big), ES_ERR_NOMEM);
	assert_string_equal(b.p, "bc");
	assert_int_equal(b.err, ES_ERR_NOMEM);
	realloc_budget = -1;
	assert_int_equal(es_buf_reserve(&b, 1000), ES_ERR_NOMEM);
	es_buf_free(&b);
	assert_int_equal(b.err, ES_OK);
	assert_int_equal(es_buf_appendf(&b, "%s", big), ES_OK);
	assert_string_equal(b.p, big);
	es_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zeroed_and_growth),
		cmocka_unit_test(test_append_kinds),
		cmocka_unit_test(test_reserve_commit),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_appendf),
		cmocka_unit_test(test_detach),
		cmocka_unit_test(test_alloc_failure),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
