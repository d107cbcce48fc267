/* Unit tests of lib/es_addr.c: "host:port" addresses and their flags. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "es_addr.h"

static void ok(const char *s, unsigned flags, const char *host, int port, int ipv6)
{
	es_addr a;
	char err[256] = "";

	if (es_addr_parse("k", s, flags, &a, err, sizeof(err)) != ES_OK)
		fail_msg("%s (flags %u): refused: %s", s, flags, err);
	assert_string_equal(a.host, host);
	assert_int_equal(a.port, port);
	assert_int_equal(a.ipv6, ipv6);
}

/* Refused with ES_ERR_INVAL, the message naming the key, the input and
 * holding needle; *out left zeroed. */
static void bad(const char *s, unsigned flags, const char *needle)
{
	es_addr a;
	char err[512] = "";

	memset(&a, 0x55, sizeof(a));
	assert_int_equal(es_addr_parse("http-listen", s, flags, &a, err, sizeof(err)),
			 ES_ERR_INVAL);
	if (!strstr(err, needle) || strncmp(err, "http-listen: ", 13))
		fail_msg("%s (flags %u): error \"%s\" lacks \"%s\"", s, flags, err, needle);
	if (s && *s && !strstr(err, s))
		fail_msg("%s: error \"%s\" does not quote the input", s, err);
	assert_string_equal(a.host, "");
	assert_int_equal(a.port, 0);
}

static void test_ip_literals(void **state)
{
	(void)state;
	ok("127.0.0.1:9477", 0, "127.0.0.1", 9477, 0);
	ok("0.0.0.0:1", 0, "0.0.0.0", 1, 0);
	ok("[::1]:65535", 0, "::1", 65535, 1);
	ok("[::]:80", 0, "::", 80, 1);
	ok("[::ffff:192.0.2.1]:80", 0, "::ffff:192.0.2.1", 80, 1); /* IPv4-mapped */
	ok("127.0.0.1:007443", 0, "127.0.0.1", 7443, 0);           /* RFC 3986 *DIGIT */
	/* the same with names and zones allowed */
	ok("127.0.0.1:9477", ES_ADDR_NAME | ES_ADDR_ZONE, "127.0.0.1", 9477, 0);
	ok("[::ffff:192.0.2.1]:80", ES_ADDR_NAME, "::ffff:192.0.2.1", 80, 1);
}

static void test_ports(void **state)
{
	(void)state;
	bad("127.0.0.1", 0, "missing port");
	bad("[::1]", 0, "missing port");
	bad("127.0.0.1:", 0, "port must be 1..65535, not \"\"");
	bad("127.0.0.1:0", 0, "port must be 1..65535, not \"0\"");
	bad("127.0.0.1:65536", 0, "port must be 1..65535");
	bad("127.0.0.1:99999999999999999999", 0, "port must be 1..65535");
	bad("127.0.0.1:12x", 0, "port must be 1..65535, not \"12x\"");
	bad("127.0.0.1:-1", 0, "port must be 1..65535");
	bad("127.0.0.1:+1", 0, "port must be 1..65535");
	bad("127.0.0.1: 1", 0, "port must be 1..65535");
	bad("[::1]:", 0, "port must be 1..65535");
	/* optional port: 0 when absent, still bounded when given */
	ok("example.org", ES_ADDR_NAME | ES_ADDR_PORT_OPTIONAL, "example.org", 0, 0);
	ok("[::1]", ES_ADDR_PORT_OPTIONAL, "::1", 0, 1);
	bad("example.org:0", ES_ADDR_NAME | ES_ADDR_PORT_OPTIONAL, "port must be 1..65535");
	bad("example.org:", ES_ADDR_NAME | ES_ADDR_PORT_OPTIONAL, "port must be 1..65535");
}

static void test_brackets(void **state)
{
	(void)state;
	bad("[::1:7443", 0, "IPv6 address lacks ']'");
	bad("[", 0, "lacks ']'");
	bad("[]:80", 0, "host missing");
	bad("[::1]7443", 0, "unexpected '7' after ']'");
	bad("[::1]x:80", ES_ADDR_NAME, "unexpected 'x' after ']'");
	bad("[1.2.3.4]:80", 0, "\"1.2.3.4\" is not an IPv6 address");
	bad("[localhost]:80", ES_ADDR_NAME, "\"localhost\" is not an IPv6 address");
	bad("[not:v6:zz]:1", ES_ADDR_NAME, "is not an IPv6 address");
	bad("::1:7443", 0, "an IPv6 address goes in brackets");
	bad("::1:7443", ES_ADDR_NAME, "an IPv6 address goes in brackets");
}

static void test_zone(void **state)
{
	(void)state;
	ok("[fe80::1%eth0]:7443", ES_ADDR_ZONE, "fe80::1%eth0", 7443, 1);
	ok("[fe80::1%2]:7443", ES_ADDR_NAME | ES_ADDR_ZONE, "fe80::1%2", 7443, 1);
	bad("[fe80::1%eth0]:7443", 0, "a zone (\"%eth0\") is not allowed here");
	bad("[fe80::1%eth0]:7443", ES_ADDR_NAME, "is not allowed here");
	bad("[fe80::1%]:7443", ES_ADDR_ZONE, "zone after '%' must be 1..15 characters");
	bad("[fe80::1%abcdefghijklmnop]:1", ES_ADDR_ZONE, "must be 1..15 characters");
	bad("[fe80::1%e/0]:7443", ES_ADDR_ZONE, "invalid character '/' in the zone");
	bad("[fe80::zz%eth0]:7443", ES_ADDR_ZONE, "\"fe80::zz\" is not an IPv6 address");
	/* a zone only follows a bracketed IPv6 literal */
	bad("eth0%1:80", ES_ADDR_NAME | ES_ADDR_ZONE, "invalid character '%' in host");
}

static void test_names(void **state)
{
	char longname[300], want[256];

	(void)state;
	ok("localhost:7443", ES_ADDR_NAME, "localhost", 7443, 0);
	ok("eth0:7443", ES_ADDR_NAME, "eth0", 7443, 0);
	ok("my-host-1.Example:1", ES_ADDR_NAME, "my-host-1.Example", 1, 0);
	ok("1a.2-b.c:1", ES_ADDR_NAME, "1a.2-b.c", 1, 0);
	/* RFC 1123 section 2.1 host names: labels of 1..63 letters, digits
	 * and '-', not at either end; no '_' */
	bad("-h:1", ES_ADDR_NAME, "host name label \"-h\" starts or ends with '-'");
	bad("h-:1", ES_ADDR_NAME, "label \"h-\" starts or ends with '-'");
	bad("a.-b.c:1", ES_ADDR_NAME, "label \"-b\" starts or ends with '-'");
	bad("-:1", ES_ADDR_NAME, "starts or ends with '-'");
	bad("a..b:1", ES_ADDR_NAME, "host name label empty");
	bad(".a:1", ES_ADDR_NAME, "host name label empty");
	bad("example.org.:1", ES_ADDR_NAME, "host name label empty");
	bad("my_host:1", ES_ADDR_NAME, "invalid character '_' in host");
	/* without ES_ADDR_NAME only IP literals */
	bad("localhost:9477", 0, "\"localhost\" is not an IPv4 address (an IPv6 address goes in brackets)");
	bad("a b:1", ES_ADDR_NAME, "invalid character ' ' in host");
	bad("a b:1", 0, "is not an IPv4 address");
	bad("ho!st:1", ES_ADDR_NAME, "invalid character '!' in host");
	/* digits and dots are an IPv4 address or nothing (RFC 1123 2.1) */
	bad("1.2.3.256:80", ES_ADDR_NAME, "\"1.2.3.256\" is not an IPv4 address");
	bad("1.2.3:80", ES_ADDR_NAME, "is not an IPv4 address");
	bad("1.2.3.4.5:80", 0, "is not an IPv4 address");
	bad(":7443", ES_ADDR_NAME, "host missing");
	bad(":7443", 0, "host missing");
	memset(longname, 'a', sizeof(longname) - 4);
	strcpy(longname + sizeof(longname) - 4, ":80");
	bad(longname, ES_ADDR_NAME, "host longer than 255 characters");
	/* 63-byte labels are the longest; 253 bytes the longest name */
	memset(longname, 'a', 64);
	strcpy(longname + 64, ":80");
	bad(longname, ES_ADDR_NAME, "host name label longer than 63 characters");
	memset(longname, 'a', 63);
	strcpy(longname + 63, ":80");
	memset(want, 'a', 63);
	want[63] = '\0';
	ok(longname, ES_ADDR_NAME, want, 80, 0);
	for (int i = 0; i < 4; i++) {
		memset(want + i * 64, 'a', 63);
		want[i * 64 + 63] = '.';
	}
	want[253] = '\0'; /* four labels of 63, the last cut to 61 */
	snprintf(longname, sizeof(longname), "%s:80", want);
	ok(longname, ES_ADDR_NAME, want, 80, 0);
	want[253] = 'a';
	want[254] = '\0';
	snprintf(longname, sizeof(longname), "%s:80", want);
	bad(longname, ES_ADDR_NAME, "host name longer than 253 characters");
}

/* An es_addr as es_addr_parse would fill it, without its checks. */
static es_addr addr_of(const char *host, int port, int ipv6)
{
	es_addr a;

	memset(&a, 0, sizeof(a));
	snprintf(a.host, sizeof(a.host), "%s", host);
	a.port = port;
	a.ipv6 = ipv6;
	return a;
}

/* es_addr_check_listen refuses with rc and an error holding needle after
 * "key: host:port: ". */
static void listen_bad(es_addr a, unsigned flags, es_err rc, const char *needle)
{
	char err[512] = "", want[400];

	assert_int_equal(es_addr_check_listen("listen", &a, flags, err, sizeof(err)), rc);
	snprintf(want, sizeof(want), "listen: %s:%d: %s", a.host, a.port, needle);
	if (strncmp(err, want, strlen(want)))
		fail_msg("%s:%d: error \"%s\", expected \"%s...\"", a.host, a.port, err, want);
}

static void test_check_listen(void **state)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	char err[512] = "";
	es_addr a;
	int fd;

	(void)state;
	/* this host's addresses: taken (port 0: any free one) */
	a = addr_of("127.0.0.1", 0, 0);
	assert_int_equal(es_addr_check_listen("listen", &a, 0, err, sizeof(err)), ES_OK);
	a = addr_of("0.0.0.0", 0, 0);
	assert_int_equal(es_addr_check_listen("listen", &a, 0, err, sizeof(err)), ES_OK);
	/* an address this host does not have (TEST-NET-1, RFC 5737) */
	listen_bad(addr_of("192.0.2.1", 7443, 0), 0, ES_ERR_IO, "not an address of this host");
	/* IPv4-mapped IPv6: refused whether or not the IPv4 one is local */
	listen_bad(addr_of("::ffff:127.0.0.1", 7443, 1), 0, ES_ERR_IO,
		   "an IPv4-mapped IPv6 address");
	/* a host name where the caller takes IP literals only; with
	 * ES_ADDR_NAME it is looked up */
	listen_bad(addr_of("localhost", 7443, 0), 0, ES_ERR_INVAL, "not an IP address");
	a = addr_of("localhost", 0, 0);
	assert_int_equal(es_addr_check_listen("listen", &a, ES_ADDR_NAME, err, sizeof(err)),
			 ES_OK);
	/* a port another socket listens on */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	listen_bad(addr_of("127.0.0.1", ntohs(sin.sin_port), 0), 0, ES_ERR_IO, "in use");
	close(fd);
}

static void test_empty_and_no_key(void **state)
{
	es_addr a;
	char err[256] = "";

	(void)state;
	bad("", 0, "empty; expected ip:port or [ipv6]:port");
	bad(NULL, ES_ADDR_NAME, "empty; expected host:port or [ipv6]:port");
	/* key NULL: only what is wrong, for a caller that says the rest */
	assert_int_equal(es_addr_parse(NULL, "h:0", ES_ADDR_NAME, &a, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_string_equal(err, "port must be 1..65535, not \"0\"");
	/* a NULL message buffer is fine */
	assert_int_equal(es_addr_parse("k", "h:0", ES_ADDR_NAME, &a, NULL, 0), ES_ERR_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ip_literals),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_brackets),
		cmocka_unit_test(test_zone),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_check_listen),
		cmocka_unit_test(test_empty_and_no_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
