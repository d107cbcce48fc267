/*
 * test_httpd.c - the answers of the agent's local endpoint
 * (agent/endpoint/httpd.h, es_httpd_respond): /readyz says why it is not
 * ready; /v1/state answers the source's status with its JSON (a 503
 * Status when the store cannot be read); no answer has an empty body, an
 * allocation failure's 500 neither.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoint/httpd.h"
#include "testutil.h"

/* What the fake agent answers. */
static int ready_now;
static int state_status;

static int src_ready(void *user, char *why, size_t whysz)
{
	(void)user;
	if (!ready_now)
		snprintf(why, whysz, "the agent database is locked");
	return ready_now;
}

static int src_state(void *user, cJSON **doc)
{
	(void)user;
	*doc = NULL;
	if (state_status < 0)
		return -1;
	*doc = es_test_json(state_status == 200 ? "{\"node\":null}" :
			    "{\"kind\":\"Status\",\"reason\":\"StoreUnavailable\"}");
	return state_status;
}

static const es_httpd_source src = { NULL, src_ready, src_state, NULL };

/* The status of GET path; *body (caller frees) and *ctype. */
static int get(const char *path, char **body, const char **ctype)
{
	size_t len = 0;
	int st = es_httpd_respond(&src, "GET", path, body, &len, ctype);

	assert_non_null(*body);
	assert_true(len > 0);
	assert_int_equal(strlen(*body), len);
	return st;
}

static void test_readyz_says_why(void **state)
{
	const char *ct;
	char *body = NULL;

	(void)state;
	ready_now = 1;
	assert_int_equal(get("/readyz", &body, &ct), 200);
	assert_string_equal(body, "ready\n");
	free(body);
	ready_now = 0;
	assert_int_equal(get("/readyz", &body, &ct), 503);
	assert_string_equal(body, "not ready: the agent database is locked\n");
	free(body);
}

static void test_state_status_and_body(void **state)
{
	const char *ct;
	char *body = NULL;

	(void)state;
	state_status = 200;
	assert_int_equal(get("/v1/state", &body, &ct), 200);
	assert_string_equal(ct, "application/json");
	free(body);
	state_status = 503;
	assert_int_equal(get("/v1/state", &body, &ct), 503);
	assert_string_equal(ct, "application/json");
	assert_non_null(strstr(body, "\"reason\":\"StoreUnavailable\""));
	free(body);
	/* Out of memory: 500, still with a body. */
	state_status = -1;
	assert_int_equal(get("/v1/state", &body, &ct), 500);
	assert_non_null(strstr(body, "internal error"));
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readyz_says_why),
		cmocka_unit_test(test_state_status_and_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
