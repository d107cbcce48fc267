/* Unit tests of lib/es_urllist.c: splitting a list of server URLs, going
 * through their addresses and URLs in turn, a repeated flag as a list. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "es_urllist.h"

static void test_split(void **state)
{
	es_urllist l;
	char err[256];

	(void)state;
	assert_int_equal(es_urllist_split("controller-url",
					  " wss://a:7443 ,wss://b:7443,\twss://[::1]:7443",
					  &l, err, sizeof(err)), ES_OK);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.items[0], "wss://a:7443");
	assert_string_equal(l.items[1], "wss://b:7443");
	assert_string_equal(l.items[2], "wss://[::1]:7443");
	assert_string_equal(es_urllist_current(&l), "wss://a:7443");
	es_urllist_free(&l);
	assert_int_equal(l.n, 0);
	es_urllist_free(NULL);

	/* one URL is a list of one */
	assert_int_equal(es_urllist_split("server", "https://h:7444", &l, err,
					  sizeof(err)), ES_OK);
	assert_int_equal(l.n, 1);
	es_urllist_free(&l);
}

static void test_split_bad(void **state)
{
	char err[256], big[ES_URLLIST_MAX * 4 + 8] = "";
	es_urllist l;

	(void)state;
	assert_int_equal(es_urllist_split("controller-url", "", &l, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "controller-url: empty");
	assert_int_equal(es_urllist_split("controller-url", "wss://a,,wss://b", &l, err,
					  sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "an empty entry"));
	assert_int_equal(l.n, 0);
	assert_int_equal(es_urllist_split("server", "https://a, ", &l, err,
					  sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "server: "));
	for (int i = 0; i <= ES_URLLIST_MAX; i++)
		strcat(big, i ? ",u" : "u");
	assert_int_equal(es_urllist_split("server", big, &l, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "more than 16"));
}

static void test_advance(void **state)
{
	es_urllist l;
	char err[64];

	(void)state;
	assert_int_equal(es_urllist_split("k", "a,b", &l, err, sizeof(err)), ES_OK);
	/* a's name has three addresses: all of them, then b, then a again */
	assert_int_equal(es_urllist_advance(&l, 3), 0);
	assert_int_equal(l.cur, 0);
	assert_int_equal(l.addr, 1);
	assert_int_equal(es_urllist_advance(&l, 3), 0);
	assert_int_equal(l.addr, 2);
	assert_int_equal(es_urllist_advance(&l, 3), 0);
	assert_int_equal(l.cur, 1);
	assert_int_equal(l.addr, 0);
	assert_string_equal(es_urllist_current(&l), "b");
	/* b is a literal (1 address; 0 when its name did not resolve) */
	assert_int_equal(es_urllist_advance(&l, 0), 1);
	assert_int_equal(l.cur, 0);
	assert_int_equal(l.addr, 0);
	es_urllist_free(&l);

	/* one URL with one address stays where it is, each round wraps */
	assert_int_equal(es_urllist_split("k", "only", &l, err, sizeof(err)), ES_OK);
	assert_int_equal(es_urllist_advance(&l, 1), 1);
	assert_int_equal(l.cur, 0);
	es_urllist_free(&l);
}

static void test_join_flag(void **state)
{
	char *argv[] = { "prog", "run", "--controller-url", "wss://a", "--log-level",
			 "debug", "--controller-url=wss://b", "--controller-urlx=no",
			 "--", "--controller-url", "wss://c" };
	char *one[] = { "prog", "--controller-url", "wss://a" };
	char *missing[] = { "prog", "--controller-url=wss://a", "--controller-url" };
	char err[128], *out = (char *)"x";

	(void)state;
	assert_int_equal(es_urllist_join_flag(11, argv, 2, "controller-url", &out, err,
					      sizeof(err)), ES_OK);
	assert_non_null(out);
	assert_string_equal(out, "wss://a,wss://b");
	free(out);
	/* given once: left to the settings parser */
	assert_int_equal(es_urllist_join_flag(3, one, 1, "controller-url", &out, err,
					      sizeof(err)), ES_OK);
	assert_null(out);
	assert_int_equal(es_urllist_join_flag(3, missing, 1, "controller-url", &out, err,
					      sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "--controller-url: missing value");
	assert_null(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_split_bad),
		cmocka_unit_test(test_advance),
		cmocka_unit_test(test_join_flag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
