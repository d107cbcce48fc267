/* test_ctl_url.c - edgesyncctl/http.c: URL parsing and response framing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "edgesyncctl/http.h"

static void test_url_ok(void **state)
{
	es_http_url u;
	char err[256];
	(void)state;

	assert_int_equal(es_http_url_parse("https://127.0.0.1:7444/apis/x?limit=3", &u, err, sizeof(err)), ES_OK);
	assert_string_equal(u.host, "127.0.0.1");
	assert_string_equal(u.port, "7444");
	assert_string_equal(u.path, "/apis/x?limit=3");
	assert_int_equal(u.ipv6, 0);

	assert_int_equal(es_http_url_parse("HTTPS://controller.example", &u, err, sizeof(err)), ES_OK);
	assert_string_equal(u.host, "controller.example");
	assert_string_equal(u.port, "443");
	assert_string_equal(u.path, "/");

	assert_int_equal(es_http_url_parse("https://[::1]:7444/healthz", &u, err, sizeof(err)), ES_OK);
	assert_string_equal(u.host, "::1");
	assert_string_equal(u.port, "7444");
	assert_string_equal(u.path, "/healthz");
	assert_int_equal(u.ipv6, 1);

	assert_int_equal(es_http_url_parse("https://[fe80::1:2]?q=1", &u, err, sizeof(err)), ES_OK);
	assert_string_equal(u.host, "fe80::1:2");
	assert_string_equal(u.port, "443");
	assert_string_equal(u.path, "/?q=1");
}

static void bad(const char *url, const char *needle)
{
	es_http_url u;
	char err[256] = "";

	assert_int_equal(es_http_url_parse(url, &u, err, sizeof(err)), ES_ERR_INVAL);
	if (!strstr(err, needle))
		fail_msg("%s: error \"%s\" lacks \"%s\"", url, err, needle);
}

static void test_url_bad(void **state)
{
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
	bad("https://[not:v6:zz]:1", "is not an IPv6 address");
	bad("https://[::1]x", "unexpected 'x'");
	bad("https://user@host/", "user information");
	bad("https://ho st/", "space or control");
	bad("https://host/a#frag", "fragment");
	bad("https://ho!st/", "invalid character '!'");
}

static void test_parse_response(void **state)
{
	es_http_resp r;
	char err[256];
	const char *cl = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
			 "content-length: 7\r\n\r\n{\"a\":1}";
	const char *ch = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "4\r\n{\"a\"\r\n3;ext=1\r\n:1}\r\n0\r\n\r\n";
	const char *eof = "HTTP/1.0 404 Not Found\r\n\r\nnope";
	(void)state;

	assert_int_equal(es_http_parse_response(cl, strlen(cl), &r, err, sizeof(err)), ES_OK);
	assert_int_equal(r.status, 201);
	assert_int_equal(r.body_len, 7);
	assert_string_equal(r.body, "{\"a\":1}");
	es_http_resp_free(&r);

	assert_int_equal(es_http_parse_response(ch, strlen(ch), &r, err, sizeof(err)), ES_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"a\":1}");
	es_http_resp_free(&r);

	assert_int_equal(es_http_parse_response(eof, strlen(eof), &r, err, sizeof(err)), ES_OK);
	assert_int_equal(r.status, 404);
	assert_string_equal(r.body, "nope");
	es_http_resp_free(&r);

	/* truncated body, truncated chunks, garbage, oversize */
	assert_int_equal(es_http_parse_response(cl, strlen(cl) - 1, &r, err, sizeof(err)), ES_ERR_PROTO);
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(es_http_parse_response(ch, strlen(ch) - 5, &r, err, sizeof(err)), ES_ERR_PROTO);
	assert_int_equal(es_http_parse_response("SSH-2.0-x\r\n\r\n", 13, &r, err, sizeof(err)), ES_ERR_PROTO);
	assert_non_null(strstr(err, "not HTTP/1.x"));
	assert_int_equal(es_http_parse_response("HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
						 48, &r, err, sizeof(err)), ES_ERR_TOOBIG);
	assert_int_equal(es_http_parse_response("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
						 38, &r, err, sizeof(err)), ES_ERR_PROTO);
	assert_int_equal(es_http_parse_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
						 51, &r, err, sizeof(err)), ES_ERR_PROTO);
	assert_null(r.body);
}

static void test_request_errors(void **state)
{
	es_http_tls tls = { "/nonexistent/ca.crt", NULL, NULL };
	es_http_resp r;
	char err[512] = "";
	(void)state;

	assert_int_equal(es_http_request(&tls, "GET", "http://x/", NULL, 0, &r, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_int_equal(es_http_request(&tls, "PATCH", "https://x/", NULL, 0, &r, err, sizeof(err)),
			 ES_ERR_INVAL);
	/* credentials are checked before connecting: a configuration error */
	assert_int_equal(es_http_request(&tls, "GET", "https://127.0.0.1:1/", NULL, 0, &r, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "https://127.0.0.1:1/"));
	assert_non_null(strstr(err, "ca file /nonexistent/ca.crt"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_ok),
		cmocka_unit_test(test_url_bad),
		cmocka_unit_test(test_parse_response),
		cmocka_unit_test(test_request_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
