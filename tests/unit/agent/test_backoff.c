/*
 * test_backoff.c - reconnect backoff (agent/sync/backoff.h; PROTOCOL.md
 * "Errors": full jitter in [0, min(cap, base * 2^n)], base 1 s, cap 60 s,
 * reset after a connection stayed up 60 s or was acknowledged; a
 * come-back-later of R seconds waits in [R, 2R]).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sync/backoff.h"

/* A fake random source: returns the queued values in turn. */
typedef struct fake_rand {
	uint64_t vals[16];
	size_t n, i;
} fake_rand;

static uint64_t fake_next(void *ctx)
{
	fake_rand *f = ctx;
	uint64_t v = f->vals[f->i % f->n];

	f->i++;
	return v;
}

static uint64_t max_rand(void *ctx)
{
	(void)ctx;
	return UINT64_MAX;
}

static int64_t expected_bound(unsigned n)
{
	int64_t b = ES_BACKOFF_BASE_MS;

	while (n-- && b < ES_BACKOFF_CAP_MS)
		b *= 2;
	return b < ES_BACKOFF_CAP_MS ? b : ES_BACKOFF_CAP_MS;
}

static void test_bounds_per_attempt(void **state)
{
	es_backoff b;
	unsigned n;

	(void)state;
	/* UINT64_MAX % (bound + 1) is the largest value the formula can give
	 * for some bounds; check every attempt stays within its bound and the
	 * bound doubles from 2 s up to the 60 s cap. */
	es_backoff_init(&b, max_rand, NULL);
	for (n = 1; n <= 20; n++) {
		int64_t d = es_backoff_next(&b, 0);

		assert_int_equal(es_backoff_bound_ms(&b), expected_bound(n));
		assert_true(d >= 0);
		assert_true(d <= expected_bound(n));
	}
	assert_int_equal(es_backoff_bound_ms(&b), ES_BACKOFF_CAP_MS);
	assert_int_equal(expected_bound(1), 2000);
	assert_int_equal(expected_bound(5), 32000);
	assert_int_equal(expected_bound(6), 60000);
}

static void test_exact_values(void **state)
{
	fake_rand f = { { 0, 2000, 4001, 123456789 }, 4, 0 };
	es_backoff b;

	(void)state;
	es_backoff_init(&b, fake_next, &f);
	assert_int_equal(es_backoff_next(&b, 0), 0);        /* [0,2000] */
	assert_int_equal(es_backoff_next(&b, 0), 2000);     /* [0,4000]: top */
	assert_int_equal(es_backoff_next(&b, 0), 4001 % 8001); /* [0,8000] */
	assert_int_equal(es_backoff_next(&b, 0), 123456789 % 16001);
}

static void test_cap(void **state)
{
	fake_rand f = { { 60000, 59999, 60001 }, 3, 0 };
	es_backoff b;
	int i;

	(void)state;
	es_backoff_init(&b, fake_next, &f);
	for (i = 0; i < 100; i++)
		es_backoff_next(&b, 0);
	f.i = 0;
	assert_int_equal(es_backoff_next(&b, 0), 60000);
	assert_int_equal(es_backoff_next(&b, 0), 59999);
	assert_int_equal(es_backoff_next(&b, 0), 0); /* 60001 % 60001 */
	assert_int_equal(es_backoff_bound_ms(&b), ES_BACKOFF_CAP_MS);
}

static void test_reset_after_long_connection(void **state)
{
	es_backoff b;
	int i;

	(void)state;
	es_backoff_init(&b, max_rand, NULL);
	for (i = 0; i < 8; i++)
		es_backoff_next(&b, 0);
	assert_int_equal(es_backoff_bound_ms(&b), ES_BACKOFF_CAP_MS);

	/* up for 59.999 s: not long enough, n keeps growing */
	es_backoff_up(&b, 1000);
	es_backoff_next(&b, 1000 + ES_BACKOFF_RESET_MS - 1);
	assert_int_equal(b.attempt, 9);
	assert_int_equal(es_backoff_bound_ms(&b), ES_BACKOFF_CAP_MS);

	/* up for 60 s: n restarts, the next wait is at most 2 s */
	es_backoff_up(&b, 100000);
	assert_true(es_backoff_next(&b, 100000 + ES_BACKOFF_RESET_MS) <= 2000);
	assert_int_equal(b.attempt, 1);
	assert_int_equal(es_backoff_bound_ms(&b), 2000);

	/* a failed dial without an up connection never resets */
	es_backoff_next(&b, 10 * ES_BACKOFF_RESET_MS);
	assert_int_equal(b.attempt, 2);
}

static void test_jitter_spans_range(void **state)
{
	es_backoff b;
	int64_t lo = INT64_MAX, hi = -1, d;
	int i, low_half = 0, high_half = 0;

	(void)state;
	/* the real random source, at the cap: values spread over [0, 60000] */
	es_backoff_init(&b, NULL, NULL);
	for (i = 0; i < 10; i++)
		es_backoff_next(&b, 0);
	for (i = 0; i < 2000; i++) {
		d = es_backoff_next(&b, 0);
		assert_true(d >= 0 && d <= ES_BACKOFF_CAP_MS);
		if (d < lo)
			lo = d;
		if (d > hi)
			hi = d;
		if (d < ES_BACKOFF_CAP_MS / 2)
			low_half++;
		else
			high_half++;
	}
	assert_true(lo < 3000);
	assert_true(hi > 57000);
	assert_true(low_half > 800 && high_half > 800);
}

static void test_reset_after_acknowledged_session(void **state)
{
	fake_rand f = { { 1999, 2000 }, 2, 0 };
	es_backoff b;
	int i;

	(void)state;
	es_backoff_init(&b, fake_next, &f);
	b.attempt = 8;
	/* a short session whose first report was acknowledged: the blip that
	 * ends it costs at most base * 2, not the cap */
	es_backoff_up(&b, 5000);
	es_backoff_ok(&b);
	assert_int_equal(es_backoff_next(&b, 5100), 1999);
	assert_int_equal(b.attempt, 1);
	/* a session that came up but was never acknowledged does not reset */
	for (i = 0; i < 8; i++)
		(void)es_backoff_next(&b, 0);
	es_backoff_up(&b, 6000);
	es_backoff_next(&b, 6100);
	assert_int_equal(b.attempt, 10);
	assert_int_equal(es_backoff_bound_ms(&b), ES_BACKOFF_CAP_MS);
}

static void test_retry_after(void **state)
{
	fake_rand f = { { 0, 30000, 30001, 7 }, 4, 0 };
	es_backoff b;

	(void)state;
	es_backoff_init(&b, fake_next, &f);
	es_backoff_next(&b, 0);
	es_backoff_next(&b, 0);
	assert_int_equal(b.attempt, 2);
	f.i = 0;
	/* [R, 2R] for R = 30 s: the bottom, the top, wrapped, and the next
	 * failure is back on the exponential curve with n unchanged by the
	 * come-back-later */
	es_backoff_retry_after(&b, 30000);
	assert_int_equal(es_backoff_next(&b, 0), 30000);
	assert_int_equal(b.attempt, 2);
	es_backoff_retry_after(&b, 30000);
	assert_int_equal(es_backoff_next(&b, 0), 60000);
	es_backoff_retry_after(&b, 30000);
	assert_int_equal(es_backoff_next(&b, 0), 30000);
	assert_int_equal(es_backoff_next(&b, 0), 7);
	assert_int_equal(b.attempt, 3);
	/* ignored when not positive; a later one replaces an earlier one */
	es_backoff_retry_after(&b, 0);
	es_backoff_retry_after(&b, -5);
	assert_int_equal(b.retry_after_ms, 0);
	es_backoff_retry_after(&b, 1000);
	es_backoff_retry_after(&b, 2000);
	f.i = 0;
	assert_int_equal(es_backoff_next(&b, 0), 2000);
}

static void test_retry_after_jitter_spreads(void **state)
{
	es_backoff b;
	int64_t lo = INT64_MAX, hi = -1, d;
	int i;

	(void)state;
	es_backoff_init(&b, NULL, NULL);
	for (i = 0; i < 2000; i++) {
		es_backoff_retry_after(&b, 10000);
		d = es_backoff_next(&b, 0);
		assert_true(d >= 10000 && d <= 20000);
		if (d < lo)
			lo = d;
		if (d > hi)
			hi = d;
	}
	assert_true(lo < 10500);
	assert_true(hi > 19500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds_per_attempt),
		cmocka_unit_test(test_exact_values),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_reset_after_long_connection),
		cmocka_unit_test(test_jitter_spans_range),
		cmocka_unit_test(test_reset_after_acknowledged_session),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_retry_after_jitter_spreads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
