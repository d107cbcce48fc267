/*
 * test_ctl_tokens.c - the request body of `edgesyncctl create token`
 * (edgesyncctl/tokens.c): --ttl as a duration, --usages, --labels,
 * --name-prefix, and the errors that name the flag.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "edgesyncctl/tokens.h"
#include "es_json.h"

static cJSON *body_of(const es_ctl_token_opts *o)
{
	char *b = NULL, err[256];
	cJSON *v = NULL;

	assert_int_equal(es_ctl_token_body(o, &b, err, sizeof(err)), ES_OK);
	assert_int_equal(es_json_parse(b, strlen(b), 8, &v, err, sizeof(err)), ES_OK);
	free(b);
	return v;
}

static void defaults_are_the_servers(void **state)
{
	es_ctl_token_opts o = { 0 };
	cJSON *v = body_of(&o);

	(void)state;
	assert_null(v->child);
	cJSON_Delete(v);
}

static void all_flags(void **state)
{
	es_ctl_token_opts o = { "1h30m", "25", "site=berlin,tier=edge", "edge-" };
	cJSON *v = body_of(&o), *l;

	(void)state;
	assert_int_equal((int)cJSON_GetObjectItem(v, "ttlSeconds")->valuedouble, 5400);
	assert_int_equal((int)cJSON_GetObjectItem(v, "usages")->valuedouble, 25);
	assert_string_equal(cJSON_GetObjectItem(v, "namePrefix")->valuestring, "edge-");
	l = cJSON_GetObjectItem(v, "labels");
	assert_string_equal(cJSON_GetObjectItem(l, "site")->valuestring, "berlin");
	assert_string_equal(cJSON_GetObjectItem(l, "tier")->valuestring, "edge");
	cJSON_Delete(v);
}

/* Kubernetes label syntax: a DNS-subdomain prefix, an empty value, 63
 * characters, white space around items. */
static void labels_accepted(void **state)
{
	es_ctl_token_opts o = { NULL, NULL, " site = lab , edgesync.io/tier=edge,e=,"
				"k012345678901234567890123456789012345678901234567890123456789ab"
				"=v01234567890123456789012345678901234567890123456789012345678ab", NULL };
	cJSON *v = body_of(&o), *l = cJSON_GetObjectItem(v, "labels");

	(void)state;
	assert_int_equal(cJSON_GetArraySize(l), 4);
	assert_string_equal(cJSON_GetObjectItem(l, "site")->valuestring, "lab");
	assert_string_equal(cJSON_GetObjectItem(l, "edgesync.io/tier")->valuestring, "edge");
	assert_string_equal(cJSON_GetObjectItem(l, "e")->valuestring, "");
	cJSON_Delete(v);
}

static void bad_flags(void **state)
{
	static const struct { es_ctl_token_opts o; const char *want; } cases[] = {
		{ { "24", NULL, NULL, NULL }, "--ttl" },
		{ { "30s", NULL, NULL, NULL }, "at least 1m" },
		{ { "1m500ms", NULL, NULL, NULL }, "whole seconds" },
		{ { NULL, "0", NULL, NULL }, "--usages" },
		{ { NULL, "3x", NULL, NULL }, "--usages" },
		{ { NULL, NULL, "site", NULL }, "--labels: bad label \"site\": expected key=value" },
		{ { NULL, NULL, "=x", NULL }, "--labels: empty label key" },
		{ { NULL, NULL, "a=b,a=c", NULL },
		  "--labels: label key \"a\" given twice (a=b, a=c)" },
		{ { NULL, NULL, "a=b, a =c", NULL }, "label key \"a\" given twice" },
		{ { NULL, NULL, "-a=b", NULL }, "--labels: label key \"-a\": name \"-a\": "
		  "expected [A-Za-z0-9._-], starting and ending alphanumeric" },
		{ { NULL, NULL, "bad key=b", NULL }, "label key \"bad key\"" },
		{ { NULL, NULL, "x/=b", NULL }, "label key \"x/\": name \"\": empty" },
		{ { NULL, NULL, "Ex.com/a=b", NULL },
		  "label key \"Ex.com/a\": prefix \"Ex.com\" is not a DNS subdomain" },
		{ { NULL, NULL, "a..b/c=d", NULL }, "prefix \"a..b\" is not a DNS subdomain" },
		{ { NULL, NULL, "a=b_", NULL },
		  "--labels: label \"a\": value \"b_\": expected [A-Za-z0-9._-]" },
		{ { NULL, NULL, "a=b c", NULL }, "label \"a\": value \"b c\"" },
		{ { NULL, NULL, "a=0123456789012345678901234567890123456789012345678901234567890123",
		    NULL }, "label \"a\": value \"0123" },
		{ { NULL, NULL, "a=0123456789012345678901234567890123456789012345678901234567890123",
		    NULL }, "64 characters, at most 63" },
		{ { NULL, NULL, "k012345678901234567890123456789012345678901234567890123456789012=v",
		    NULL }, "name \"k012345678901234567890123456789012345678901234567890123456789012\": "
		  "64 characters, at most 63" },
	};
	char *b, err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b = NULL;
		assert_int_equal(es_ctl_token_body(&cases[i].o, &b, err, sizeof(err)),
				 ES_ERR_INVAL);
		assert_null(b);
		if (!strstr(err, cases[i].want))
			fail_msg("case %zu: \"%s\" does not name %s", i, err, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_are_the_servers),
		cmocka_unit_test(all_flags),
		cmocka_unit_test(labels_accepted),
		cmocka_unit_test(bad_flags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
