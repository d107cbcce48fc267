/*
 * test_metrics.c - lib/es_metrics.c: the Prometheus text format 0.0.4
 * (HELP/TYPE lines, label value and HELP escaping, histogram buckets),
 * ordering, validation of names, and allocation failures (calloc, realloc
 * and strdup are wrapped).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "es_metrics.h"

/* Allocation calls left before one fails; < 0: never fail. */
static int alloc_budget = -1;

void *__real_calloc(size_t n, size_t sz);
void *__real_realloc(void *p, size_t sz);
char *__real_strdup(const char *s);
void *__wrap_calloc(size_t n, size_t sz);
void *__wrap_realloc(void *p, size_t sz);
char *__wrap_strdup(const char *s);

static int alloc_ok(void)
{
	if (alloc_budget < 0)
		return 1;
	if (alloc_budget == 0)
		return 0;
	alloc_budget--;
	return 1;
}

void *__wrap_calloc(size_t n, size_t sz)
{
	return alloc_ok() ? __real_calloc(n, sz) : NULL;
}

void *__wrap_realloc(void *p, size_t sz)
{
	return alloc_ok() ? __real_realloc(p, sz) : NULL;
}

char *__wrap_strdup(const char *s)
{
	return alloc_ok() ? __real_strdup(s) : NULL;
}

static char *render(es_metrics *r)
{
	char *out = NULL;
	size_t len = 0;

	assert_int_equal(es_metrics_render(r, &out, &len), ES_OK);
	assert_non_null(out);
	assert_int_equal(len, strlen(out));
	return out;
}

static void test_counter_gauge_text(void **state)
{
	es_metrics *r = NULL;
	es_metric *c, *g;
	char *out;

	(void)state;
	assert_int_equal(es_metrics_new(&r), ES_OK);
	assert_int_equal(es_metrics_counter(r, "a_requests_total", "Requests served.",
					    NULL, 0, &c, NULL, 0), ES_OK);
	assert_int_equal(es_metrics_gauge(r, "b_temperature_celsius", "Temperature.",
					  NULL, 0, &g, NULL, 0), ES_OK);
	out = render(r);
	/* Unlabelled families are exported from registration on, at 0. */
	assert_string_equal(out,
		"# HELP a_requests_total Requests served.\n"
		"# TYPE a_requests_total counter\n"
		"a_requests_total 0\n"
		"# HELP b_temperature_celsius Temperature.\n"
		"# TYPE b_temperature_celsius gauge\n"
		"b_temperature_celsius 0\n");
	free(out);
	assert_int_equal(es_metric_add(c, NULL, 2), ES_OK);
	assert_int_equal(es_metric_add(c, NULL, 1), ES_OK);
	assert_int_equal(es_metric_set(g, NULL, -3.5), ES_OK);
	assert_int_equal(es_metric_add(g, NULL, 0.25), ES_OK);
	out = render(r);
	assert_non_null(strstr(out, "\na_requests_total 3\n"));
	assert_non_null(strstr(out, "\nb_temperature_celsius -3.25\n"));
	free(out);
	/* Counters never go down; NaN is refused. */
	assert_int_equal(es_metric_add(c, NULL, -1), ES_ERR_INVAL);
	assert_int_equal(es_metric_set(c, NULL, -1), ES_ERR_INVAL);
	assert_int_equal(es_metric_set(c, NULL, NAN), ES_ERR_INVAL);
	assert_int_equal(es_metric_observe(c, NULL, 1), ES_ERR_INVAL);
	assert_int_equal(es_metric_set(c, NULL, 1e12), ES_OK);
	out = render(r);
	assert_non_null(strstr(out, "\na_requests_total 1000000000000\n"));
	free(out);
	es_metrics_free(r);
}

static void test_escaping(void **state)
{
	static const char *const l[] = { "path", "kind" };
	es_metrics *r = NULL;
	es_metric *g;
	char *out;

	(void)state;
	assert_int_equal(es_metrics_new(&r), ES_OK);
	assert_int_equal(es_metrics_gauge(r, "esc", "Back\\slash, \"quoted\"\nsecond line.",
					  l, 2, &g, NULL, 0), ES_OK);
	assert_int_equal(es_metric_set(g, (const char *[]){ "C:\\dir \"x\"\nnext", "a=b,c" }, 1),
			 ES_OK);
	assert_int_equal(es_metric_set(g, (const char *[]){ "bad\xff\xfeutf8", NULL }, 2),
			 ES_OK);
	assert_int_equal(es_metric_set(g, (const char *[]){ "caf\xc3\xa9", "" }, 3), ES_OK);
	out = render(r);
	/* HELP: backslash and newline escaped, quotes as they are. */
	assert_string_equal(out,
		"# HELP esc Back\\\\slash, \"quoted\"\\nsecond line.\n"
		"# TYPE esc gauge\n"
		"esc{path=\"C:\\\\dir \\\"x\\\"\\nnext\",kind=\"a=b,c\"} 1\n"
		"esc{path=\"bad\xef\xbf\xbd\xef\xbf\xbdutf8\",kind=\"\"} 2\n"
		"esc{path=\"caf\xc3\xa9\",kind=\"\"} 3\n");
	free(out);
	es_metrics_free(r);
}

static void test_histogram(void **state)
{
	static const double b[] = { 0.25, 0.5, 1 };
	static const char *const l[] = { "op" };
	es_metrics *r = NULL;
	es_metric *h;
	char *out;

	(void)state;
	assert_int_equal(es_metrics_new(&r), ES_OK);
	assert_int_equal(es_metrics_histogram(r, "op_duration_seconds", "Op time.", l, 1,
					      b, 3, &h, NULL, 0), ES_OK);
	out = render(r);
	assert_string_equal(out, ""); /* labelled, no series yet */
	free(out);
	/* 0.25 is in le="0.25" (upper bounds are inclusive); 7 only in +Inf. */
	assert_int_equal(es_metric_observe(h, (const char *[]){ "put" }, 0.125), ES_OK);
	assert_int_equal(es_metric_observe(h, (const char *[]){ "put" }, 0.25), ES_OK);
	assert_int_equal(es_metric_observe(h, (const char *[]){ "put" }, 0.75), ES_OK);
	assert_int_equal(es_metric_observe(h, (const char *[]){ "put" }, 7), ES_OK);
	assert_int_equal(es_metric_observe(h, (const char *[]){ "get" }, 0.375), ES_OK);
	assert_int_equal(es_metric_observe(h, (const char *[]){ "get" }, NAN), ES_ERR_INVAL);
	assert_int_equal(es_metric_set(h, (const char *[]){ "get" }, 1), ES_ERR_INVAL);
	out = render(r);
	assert_string_equal(out,
		"# HELP op_duration_seconds Op time.\n"
		"# TYPE op_duration_seconds histogram\n"
		"op_duration_seconds_bucket{op=\"get\",le=\"0.25\"} 0\n"
		"op_duration_seconds_bucket{op=\"get\",le=\"0.5\"} 1\n"
		"op_duration_seconds_bucket{op=\"get\",le=\"1\"} 1\n"
		"op_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 1\n"
		"op_duration_seconds_sum{op=\"get\"} 0.375\n"
		"op_duration_seconds_count{op=\"get\"} 1\n"
		"op_duration_seconds_bucket{op=\"put\",le=\"0.25\"} 2\n"
		"op_duration_seconds_bucket{op=\"put\",le=\"0.5\"} 2\n"
		"op_duration_seconds_bucket{op=\"put\",le=\"1\"} 3\n"
		"op_duration_seconds_bucket{op=\"put\",le=\"+Inf\"} 4\n"
		"op_duration_seconds_sum{op=\"put\"} 8.125\n"
		"op_duration_seconds_count{op=\"put\"} 4\n");
	free(out);
	es_metrics_free(r);
}

static void test_unlabelled_histogram(void **state)
{
	static const double b[] = { 1 };
	es_metrics *r = NULL;
	es_metric *h;
	char *out;

	(void)state;
	assert_int_equal(es_metrics_new(&r), ES_OK);
	assert_int_equal(es_metrics_histogram(r, "h_seconds", "H.", NULL, 0, b, 1, &h,
					      NULL, 0), ES_OK);
	assert_int_equal(es_metric_observe(h, NULL, 2), ES_OK);
	out = render(r);
	assert_string_equal(out,
		"# HELP h_seconds H.\n"
		"# TYPE h_seconds histogram\n"
		"h_seconds_bucket{le=\"1\"} 0\n"
		"h_seconds_bucket{le=\"+Inf\"} 1\n"
		"h_seconds_sum 2\n"
		"h_seconds_count 1\n");
	free(out);
	es_metrics_free(r);
}

static void test_ordering_remove_clear(void **state)
{
	static const char *const l[] = { "device", "mode" };
	es_metrics *r = NULL;
	es_metric *z, *a, *e;
	char *out;

	(void)state;
	assert_int_equal(es_metrics_new(&r), ES_OK);
	assert_int_equal(es_metrics_gauge(r, "zz", "Z.", NULL, 0, &z, NULL, 0), ES_OK);
	assert_int_equal(es_metrics_counter(r, "aa_total", "A.", l, 2, &a, NULL, 0), ES_OK);
	assert_int_equal(es_metrics_gauge(r, "mm_empty", "Never set.", l, 1, &e, NULL, 0),
			 ES_OK);
	assert_int_equal(es_metric_set(a, (const char *[]){ "sdb", "w" }, 4), ES_OK);
	assert_int_equal(es_metric_set(a, (const char *[]){ "sda", "w" }, 2), ES_OK);
	assert_int_equal(es_metric_set(a, (const char *[]){ "sda", "r" }, 1), ES_OK);
	assert_int_equal(es_metric_set(a, (const char *[]){ "sdb", "r" }, 3), ES_OK);
	out = render(r);
	assert_string_equal(out,
		"# HELP aa_total A.\n"
		"# TYPE aa_total counter\n"
		"aa_total{device=\"sda\",mode=\"r\"} 1\n"
		"aa_total{device=\"sda\",mode=\"w\"} 2\n"
		"aa_total{device=\"sdb\",mode=\"r\"} 3\n"
		"aa_total{device=\"sdb\",mode=\"w\"} 4\n"
		"# HELP zz Z.\n"
		"# TYPE zz gauge\n"
		"zz 0\n");
	free(out);
	assert_int_equal(es_metric_remove(a, (const char *[]){ "sda", "w" }), ES_OK);
	assert_int_equal(es_metric_remove(a, (const char *[]){ "sda", "w" }), ES_ERR_NOTFOUND);
	es_metric_clear(z);
	out = render(r);
	assert_null(strstr(out, "sda\",mode=\"w\""));
	assert_non_null(strstr(out, "aa_total{device=\"sdb\",mode=\"w\"} 4\n"));
	assert_null(strstr(out, "zz")); /* cleared: left out */
	free(out);
	assert_int_equal(es_metric_set(z, NULL, 5), ES_OK);
	es_metric_clear(a);
	out = render(r);
	assert_string_equal(out, "# HELP zz Z.\n# TYPE zz gauge\nzz 5\n");
	free(out);
	es_metrics_free(r);
}

static void test_validation(void **state)
{
	static const double up[] = { 1, 2 }, down[] = { 2, 1 }, inf[] = { 1, INFINITY };
	es_metrics *r = NULL;
	es_metric *m;
	char err[256];

	(void)state;
	assert_int_equal(es_metrics_new(&r), ES_OK);
	assert_int_equal(es_metrics_gauge(r, "9lives", "x", NULL, 0, &m, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "9lives"));
	assert_int_equal(es_metrics_gauge(r, "has-dash", "x", NULL, 0, &m, NULL, 0), ES_ERR_INVAL);
	assert_int_equal(es_metrics_gauge(r, "", "x", NULL, 0, &m, NULL, 0), ES_ERR_INVAL);
	assert_int_equal(es_metrics_gauge(r, "ns:ok_total_x", "x", NULL, 0, &m, NULL, 0), ES_OK);
	assert_int_equal(es_metrics_gauge(r, "l1", "x", (const char *[]){ "a:b" }, 1, &m,
					  NULL, 0), ES_ERR_INVAL);
	assert_int_equal(es_metrics_gauge(r, "l2", "x", (const char *[]){ "__name" }, 1, &m,
					  NULL, 0), ES_ERR_INVAL);
	assert_int_equal(es_metrics_gauge(r, "l3", "x", (const char *[]){ "a", "a" }, 2, &m,
					  err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "twice"));
	assert_int_equal(es_metrics_histogram(r, "h1", "x", (const char *[]){ "le" }, 1, up, 2,
					      &m, NULL, 0), ES_ERR_INVAL);
	assert_int_equal(es_metrics_histogram(r, "h2", "x", NULL, 0, down, 2, &m, NULL, 0),
			 ES_ERR_INVAL);
	assert_int_equal(es_metrics_histogram(r, "h3", "x", NULL, 0, inf, 2, &m, NULL, 0),
			 ES_ERR_INVAL);
	assert_int_equal(es_metrics_add(r, ES_METRIC_GAUGE, "g_b", "x", NULL, 0, up, 2, &m,
					NULL, 0), ES_ERR_INVAL);
	/* Sample names must not clash: a histogram h writes h_count. */
	assert_int_equal(es_metrics_histogram(r, "h", "x", NULL, 0, up, 2, &m, NULL, 0), ES_OK);
	assert_int_equal(es_metrics_gauge(r, "h_count", "x", NULL, 0, &m, err, sizeof(err)),
			 ES_ERR_EXISTS);
	assert_int_equal(es_metrics_gauge(r, "h", "x", NULL, 0, &m, NULL, 0), ES_ERR_EXISTS);
	assert_int_equal(es_metrics_gauge(r, "q_sum", "x", NULL, 0, &m, NULL, 0), ES_OK);
	assert_int_equal(es_metrics_histogram(r, "q", "x", NULL, 0, up, 2, &m, NULL, 0),
			 ES_ERR_EXISTS);
	es_metrics_free(r);
}

static es_err fail_render(void *user)
{
	(*(int *)user)++;
	return ES_ERR_IO;
}

static es_err set_on_render(void *user)
{
	return es_metric_set(user, NULL, 42);
}

static void test_render_functions(void **state)
{
	es_metrics *r = NULL;
	es_metric *g;
	char *out = (char *)"x";
	size_t len = 1;
	int calls = 0;

	(void)state;
	assert_int_equal(es_metrics_new(&r), ES_OK);
	assert_int_equal(es_metrics_gauge(r, "g", "G.", NULL, 0, &g, NULL, 0), ES_OK);
	assert_int_equal(es_metrics_on_render(r, set_on_render, g), ES_OK);
	out = render(r);
	assert_string_equal(out, "# HELP g G.\n# TYPE g gauge\ng 42\n");
	free(out);
	assert_int_equal(es_metrics_on_render(r, fail_render, &calls), ES_OK);
	assert_int_equal(es_metrics_render(r, &out, &len), ES_ERR_IO);
	assert_null(out);
	assert_int_equal(len, 0);
	assert_int_equal(calls, 1);
	es_metrics_free(r);
}

static void test_format_value(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(es_metrics_format_value(0.1, b), "0.1");
	assert_string_equal(es_metrics_format_value(0, b), "0");
	assert_string_equal(es_metrics_format_value(-2.5, b), "-2.5");
	assert_string_equal(es_metrics_format_value(16777216000.0, b), "16777216000");
	assert_string_equal(es_metrics_format_value(1234567890123456.0, b), "1234567890123456");
	assert_string_equal(es_metrics_format_value(0.1 + 0.2, b), "0.30000000000000004");
	assert_string_equal(es_metrics_format_value(1e300, b), "1e+300");
	assert_string_equal(es_metrics_format_value(NAN, b), "NaN");
	assert_string_equal(es_metrics_format_value(INFINITY, b), "+Inf");
	assert_string_equal(es_metrics_format_value(-INFINITY, b), "-Inf");
}

/* Fails the n-th allocation for every n until a whole scenario succeeds:
 * each failure must be reported as ES_ERR_NOMEM and leave the registry
 * usable and leak-free (ASan checks the leaks). */
static void test_alloc_failures(void **state)
{
	static const double b[] = { 1 };
	int done = 0;

	(void)state;
	for (int n = 0; !done && n < 500; n++) {
		es_metrics *r = NULL;
		es_metric *c = NULL, *h = NULL;
		char *out = NULL;
		size_t len;
		es_err rc;

		alloc_budget = n;
		rc = es_metrics_new(&r);
		if (rc != ES_OK) {
			assert_int_equal(rc, ES_ERR_NOMEM);
			alloc_budget = -1;
			continue;
		}
		rc = es_metrics_counter(r, "c_total", "C.", (const char *[]){ "k" }, 1, &c,
					NULL, 0);
		if (rc == ES_OK)
			rc = es_metrics_histogram(r, "h_seconds", "H.", NULL, 0, b, 1, &h,
						  NULL, 0);
		if (rc == ES_OK)
			rc = es_metric_add(c, (const char *[]){ "v1" }, 1);
		if (rc == ES_OK)
			rc = es_metric_add(c, (const char *[]){ "v2" }, 1);
		if (rc == ES_OK)
			rc = es_metric_observe(h, NULL, 0.5);
		if (rc == ES_OK)
			rc = es_metrics_render(r, &out, &len);
		if (rc != ES_OK) {
			assert_int_equal(rc, ES_ERR_NOMEM);
			assert_null(out);
		}
		alloc_budget = -1;
		if (rc == ES_OK) {
			assert_non_null(strstr(out, "c_total{k=\"v2\"} 1\n"));
			assert_non_null(strstr(out, "h_seconds_count 1\n"));
			done = 1;
		}
		free(out);
		es_metrics_free(r);
	}
	assert_true(done);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_gauge_text),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_unlabelled_histogram),
		cmocka_unit_test(test_ordering_remove_clear),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_render_functions),
		cmocka_unit_test(test_format_value),
		cmocka_unit_test(test_alloc_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
