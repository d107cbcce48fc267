/* Unit tests of lib/es_url.c: http, https, ws and wss URLs (the cases of
 * edgesyncctl's former URL parser among them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "es_url.h"

static void test_url_ok(void **state)
{
	es_url u;
	char err[256];
	(void)state;

	assert_int_equal(es_url_parse(NULL, "https://127.0.0.1:7444/apis/x?limit=3", "https", &u, err, sizeof(err)), ES_OK);
	assert_string_equal(u.scheme, "https");
	assert_string_equal(u.host, "127.0.0.1");
	assert_int_equal(u.port, 7444);
	assert_string_equal(u.path, "/apis/x?limit=3");
	assert_int_equal(u.ipv6, 0);

	assert_int_equal(es_url_parse(NULL, "HTTPS://controller.example", "https", &u, err, sizeof(err)), ES_OK);
	assert_string_equal(u.scheme, "https");
	assert_string_equal(u.host, "controller.example");
	assert_int_equal(u.port, 443);
	assert_string_equal(u.path, "/");

	assert_int_equal(es_url_parse(NULL, "https://[::1]:7444/healthz", "https", &u, err, sizeof(err)), ES_OK);
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.port, 7444);
	assert_string_equal(u.path, "/healthz");
	assert_int_equal(u.ipv6, 1);

	assert_int_equal(es_url_parse(NULL, "https://[fe80::1:2]?q=1", "https", &u, err, sizeof(err)), ES_OK);
	assert_string_equal(u.host, "fe80::1:2");
	assert_int_equal(u.port, 443);
	assert_string_equal(u.path, "/?q=1");

	assert_int_equal(es_url_parse(NULL, "https://[::ffff:192.0.2.1]/", "https", &u, err, sizeof(err)), ES_OK);
	assert_string_equal(u.host, "::ffff:192.0.2.1");
}

static void test_default_ports(void **state)
{
	static const struct {
		const char *url;
		const char *scheme;
		int port;
	} cases[] = {
		{ "http://h", "http", 80 },     { "https://h", "https", 443 },
		{ "ws://h/x", "ws", 80 },       { "wss://h/x", "wss", 443 },
		{ "WsS://h:7443", "wss", 7443 }, { "http://[::1]", "http", 80 },
	};
	es_url u;
	char err[256];
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (es_url_parse(NULL, cases[i].url, NULL, &u, err, sizeof(err)) != ES_OK)
			fail_msg("%s: %s", cases[i].url, err);
		assert_string_equal(u.scheme, cases[i].scheme);
		assert_int_equal(u.port, cases[i].port);
		/* the same with that one scheme required */
		assert_int_equal(es_url_parse(NULL, cases[i].url, cases[i].scheme, &u, err,
					      sizeof(err)), ES_OK);
	}
}

static void bad(const char *url, const char *needle)
{
	es_url u;
	char err[512] = "";

	assert_int_equal(es_url_parse(NULL, url, "https", &u, err, sizeof(err)), ES_ERR_INVAL);
	if (!strstr(err, needle))
		fail_msg("%s: error \"%s\" lacks \"%s\"", url, err, needle);
	assert_string_equal(u.host, "");
}

static void test_url_bad(void **state)
{
	es_url u;
	char err[512] = "";

	(void)state;
	bad("http://127.0.0.1:7444", "scheme must be https");
	bad("127.0.0.1:7444", "scheme must be https");
	bad("https://", "host missing");
	bad("https://:7444/", "host missing");
	bad("https://host:0", "port must be 1..65535");
	bad("https://host:65536", "port must be 1..65535");
	bad("https://host:", "port must be 1..65535");
	bad("https://host:12ab", "port must be 1..65535");
	bad("https://[::1", "lacks ']'");
	bad("https://[::1/x]", "lacks ']'");
	bad("https://[not:v6:zz]:1", "is not an IPv6 address");
	bad("https://[::1]x", "unexpected 'x'");
	bad("https://user@host/", "user information");
	bad("https://ho st/", "space or control");
	bad("https://host/a\tb", "space or control");
	bad("https://host/a#frag", "fragment");
	bad("https://ho!st/", "invalid character '!'");
	/* a host name as RFC 1123 section 2.1 has it: no '-' at either end of
	 * a label (a host that could pass for a command-line option) */
	bad("https://-h:1", "host name label \"-h\" starts or ends with '-'");
	bad("https://h-.example/", "starts or ends with '-'");
	bad("https://a..b/", "host name label empty");
	assert_int_equal(es_url_parse("controller", "wss://-h:1", "wss", &u, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "controller: \"wss://-h:1\": host name label \"-h\" starts "
			    "or ends with '-' (RFC 1123)");
	/* an unbracketed IPv6 literal, a zone, a bad dotted quad */
	bad("https://::1:7444/", "an IPv6 address goes in brackets");
	bad("https://[fe80::1%eth0]:7444/", "is not allowed here");
	bad("https://1.2.3.999/", "is not an IPv4 address");
	bad("", "URL missing");
	bad(NULL, "URL missing");
}

static void test_messages(void **state)
{
	es_url u;
	char err[512] = "", path[ES_URL_PATH_MAX + 16];
	(void)state;

	/* key NULL: URL "..."; else the setting's name */
	assert_int_equal(es_url_parse(NULL, "https://h:0/", "https", &u, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "URL \"https://h:0/\": port must be 1..65535, not \"0\"");
	assert_int_equal(es_url_parse("controller-url", "wss://h:99999", "wss", &u, err,
				      sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "controller-url: \"wss://h:99999\": "
			    "port must be 1..65535, not \"99999\"");
	assert_int_equal(es_url_parse("server", "ftp://h/", NULL, &u, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "scheme must be http://, https://, ws:// or wss://"));
	assert_int_equal(es_url_parse("server", "", NULL, &u, err, sizeof(err)), ES_ERR_INVAL);
	assert_string_equal(err, "server: empty");
	/* the longest path that fits, and one byte more */
	strcpy(path, "https://h/");
	memset(path + 10, 'p', ES_URL_PATH_MAX - 2);
	path[10 + ES_URL_PATH_MAX - 2] = '\0';
	assert_int_equal(es_url_parse(NULL, path, "https", &u, NULL, 0), ES_ERR_INVAL);
	path[10 + ES_URL_PATH_MAX - 3] = '\0';
	assert_int_equal(es_url_parse(NULL, path, "https", &u, err, sizeof(err)), ES_OK);
	assert_int_equal(strlen(u.path), ES_URL_PATH_MAX - 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_ok),
		cmocka_unit_test(test_default_ports),
		cmocka_unit_test(test_url_bad),
		cmocka_unit_test(test_messages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
