/*
 * test_log.c - lib/es_log.c: the logfmt line (time, level, component, msg,
 * fields), value quoting and escaping, key sanitising, level filtering,
 * the line length bound, and libwebsockets' levels as routed through it.
 * stderr is pointed at a temporary file to read the lines back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <libwebsockets.h>

#include "es_log.h"

static FILE *capture;
static int saved_fd = -1;

static void capture_start(void)
{
	capture = tmpfile();
	assert_non_null(capture);
	fflush(stderr);
	saved_fd = dup(2);
	assert_true(saved_fd >= 0);
	assert_true(dup2(fileno(capture), 2) >= 0);
}

/* Stops capturing; returns what was written (caller frees). */
static char *capture_end(void)
{
	long n;
	char *buf;

	fflush(stderr);
	assert_true(dup2(saved_fd, 2) >= 0);
	close(saved_fd);
	saved_fd = -1;
	n = ftell(capture);
	assert_true(n >= 0);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	rewind(capture);
	assert_int_equal(fread(buf, 1, (size_t)n, capture), (size_t)n);
	fclose(capture);
	capture = NULL;
	return buf;
}

/* The line without its "time=... " prefix, after checking that prefix. */
static const char *after_time(const char *line)
{
	/* time=2026-11-30T04:07:12.123Z */
	assert_memory_equal(line, "time=", 5);
	assert_int_equal(strlen(line) > 30, 1);
	assert_int_equal(line[9], '-');
	assert_int_equal(line[15], 'T');
	assert_int_equal(line[28], 'Z');
	assert_int_equal(line[29], ' ');
	return line + 30;
}

static void test_line_shape(void **state)
{
	char *out;

	(void)state;
	es_log_set_level(ES_LOG_INFO);
	capture_start();
	es_log_info("sync", "connected", "url", "wss://h:7443", "seq", "12", NULL);
	out = capture_end();
	assert_string_equal(after_time(out),
		"level=info component=sync msg=\"connected\" url=wss://h:7443 seq=12\n");
	free(out);
}

static void test_value_escaping(void **state)
{
	char *out;

	(void)state;
	es_log_set_level(ES_LOG_INFO);
	capture_start();
	es_log_warn("x", "say \"hi\"\nbye", "space", "a b", "quote", "he said \"no\"",
		    "nl", "one\ntwo", "eq", "a=b", "bs", "C:\\tmp", "tab", "a\tb",
		    "ctl", "\x01", "empty", "", "null", NULL, "plain", "ok", NULL);
	out = capture_end();
	assert_string_equal(after_time(out),
		"level=warn component=x msg=\"say \\\"hi\\\"\\nbye\" space=\"a b\" "
		"quote=\"he said \\\"no\\\"\" nl=\"one\\ntwo\" eq=\"a=b\" "
		"bs=\"C:\\\\tmp\" tab=\"a\\tb\" ctl=\"\\u0001\" empty= null= plain=ok\n");
	/* One event, one line. */
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
	free(out);
}

/* Library messages end in newlines (mbedTLS's and libwebsockets' error
 * strings): trailing white space is dropped, not logged as a literal \n;
 * inner newlines are still escaped. */
static void test_trailing_space_dropped(void **state)
{
	char *out;

	(void)state;
	es_log_set_level(ES_LOG_INFO);
	es_log_route_lws();
	capture_start();
	es_log_warn("sync", "disconnected\n", "error",
		    "server's cert didn't look good: Cert from the future\n",
		    "plain", "ok \r\n\t", "inner", "a\nb\n", "blank", " \n", NULL);
	out = capture_end();
	assert_string_equal(after_time(out),
		"level=warn component=sync msg=\"disconnected\" "
		"error=\"server's cert didn't look good: Cert from the future\" "
		"plain=ok inner=\"a\\nb\" blank=\n");
	free(out);
	capture_start();
	_lws_log(LLL_ERR, "it broke\n\n");
	out = capture_end();
	assert_non_null(strstr(out, "level=error component=lws msg=\"it broke\"\n"));
	free(out);
}

static void test_key_sanitised(void **state)
{
	char *out;

	(void)state;
	es_log_set_level(ES_LOG_INFO);
	capture_start();
	es_log_error("c", "m", "bad key=\"x\"", "v", "", "w", NULL);
	out = capture_end();
	assert_string_equal(after_time(out),
		"level=error component=c msg=\"m\" bad_key__x_=v _=w\n");
	free(out);
}

static void test_levels(void **state)
{
	char *out;

	(void)state;
	es_log_set_level(ES_LOG_WARN);
	capture_start();
	es_log_info("c", "hidden", NULL);
	es_log_debug("c", "hidden too", NULL);
	es_log_warn("c", "shown", NULL);
	out = capture_end();
	assert_null(strstr(out, "hidden"));
	assert_non_null(strstr(out, "level=warn component=c msg=\"shown\"\n"));
	free(out);
	es_log_set_level(ES_LOG_DEBUG);
	capture_start();
	es_log_debug("c", "now shown", NULL);
	out = capture_end();
	assert_non_null(strstr(out, "level=debug component=c msg=\"now shown\"\n"));
	free(out);
	es_log_set_level(ES_LOG_INFO);
}

static void test_long_line_bounded(void **state)
{
	char *big = malloc(20000), *out;
	size_t n;

	(void)state;
	assert_non_null(big);
	memset(big, 'a', 19999);
	big[19999] = '\0';
	es_log_set_level(ES_LOG_INFO);
	capture_start();
	es_log_info("c", "big", "v", big, NULL);
	out = capture_end();
	n = strlen(out);
	assert_true(n <= 8192);
	assert_string_equal(out + n - 4, "...\n");
	assert_ptr_equal(strchr(out, '\n'), out + n - 1);
	free(out);
	free(big);
}

/* lws's notices are per-connection chatter: debug, not printed at info;
 * its errors and warnings keep their level. */
static void test_lws_levels(void **state)
{
	char *out;

	(void)state;
	es_log_set_level(ES_LOG_INFO);
	es_log_route_lws();
	capture_start();
	_lws_log(LLL_NOTICE, "vhost created\n");
	_lws_log(LLL_INFO, "connection chatter\n");
	_lws_log(LLL_WARN, "something odd\n");
	_lws_log(LLL_ERR, "it broke\n");
	out = capture_end();
	assert_null(strstr(out, "vhost created"));
	assert_null(strstr(out, "chatter"));
	assert_non_null(strstr(out, "level=warn component=lws msg=\"something odd\"\n"));
	assert_non_null(strstr(out, "level=error component=lws msg=\"it broke\"\n"));
	free(out);

	es_log_set_level(ES_LOG_DEBUG);
	capture_start();
	_lws_log(LLL_NOTICE, "vhost created\n");
	out = capture_end();
	assert_non_null(strstr(out, "level=debug component=lws msg=\"vhost created\"\n"));
	free(out);
	es_log_set_level(ES_LOG_INFO);
}

/* A repeated warning: the first passes, then one per ES_LOG_GATE_MS with
 * the count held back; a reset lets the next pass at once. */
static void test_gate(void **state)
{
	es_log_gate g = {0, 0};
	unsigned long long held = 99;

	(void)state;
	assert_int_equal(es_log_gate_pass(&g, 1000, &held), 1);
	assert_int_equal(held, 0);
	assert_int_equal(es_log_gate_pass(&g, 2000, &held), 0);
	assert_int_equal(es_log_gate_pass(&g, 1000 + ES_LOG_GATE_MS - 1, &held), 0);
	assert_int_equal(es_log_gate_pass(&g, 1000 + ES_LOG_GATE_MS, &held), 1);
	assert_int_equal(held, 2);
	assert_int_equal(es_log_gate_pass(&g, 1000 + ES_LOG_GATE_MS + 5, NULL), 0);
	assert_int_equal(es_log_gate_reset(&g), 1);
	assert_int_equal(es_log_gate_pass(&g, 1000 + ES_LOG_GATE_MS + 6, &held), 1);
	assert_int_equal(held, 0);
	/* es_log_gated: the first logged as is, the next held back; once the
	 * gate reopens (here: its time set past) the count is appended. */
	{
		es_log_gate lg = {0, 0};
		char *out;
		const char *second;

		es_log_set_level(ES_LOG_INFO);
		capture_start();
		es_log_gated(&lg, ES_LOG_WARN, "store", "list failed", "error", "refused", NULL);
		es_log_gated(&lg, ES_LOG_WARN, "store", "list failed", "error", "refused", NULL);
		es_log_gated(&lg, ES_LOG_WARN, "store", "list failed", "error", "refused", NULL);
		lg.next_ms = 1;
		es_log_gated(&lg, ES_LOG_WARN, "store", "list failed", "error", "refused", NULL);
		out = capture_end();
		second = strchr(out, '\n');
		assert_non_null(second);
		assert_memory_equal(after_time(out),
				    "level=warn component=store msg=\"list failed\" error=refused\n",
				    strlen("level=warn component=store msg=\"list failed\" error=refused\n"));
		assert_string_equal(after_time(second + 1), "level=warn component=store "
				    "msg=\"list failed\" error=refused suppressed=2\n");
		free(out);
	}
	/* at monotonic time 0 too: the gate still closes */
	g = (es_log_gate){0, 0};
	assert_int_equal(es_log_gate_pass(&g, 0, NULL), 1);
	assert_int_equal(es_log_gate_pass(&g, 1, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_shape),
		cmocka_unit_test(test_value_escaping),
		cmocka_unit_test(test_trailing_space_dropped),
		cmocka_unit_test(test_key_sanitised),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_long_line_bounded),
		cmocka_unit_test(test_lws_levels),
		cmocka_unit_test(test_gate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
