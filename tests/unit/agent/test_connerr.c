/*
 * test_connerr.c - the words for a failed attempt to reach the controller
 * (agent/sync/connerr.h): libwebsockets' reasons as they come, checked
 * against the peer's state (real loopback TCP sockets: a peer that closes,
 * resets or answers) and the name's resolution.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <netdb.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "sync/connerr.h"

/* What libwebsockets 4.3 with mbedTLS reports when its client TLS
 * handshake dies, whatever the cause (the text its connection error
 * callback, LWS_CALLBACK_CLIENT_CONNECTION_ERROR, passes). */
static const char bad_cert[] = "server's cert didn't look good, invalidca "
			       "(use_ssl 0x1) X509_V_ERR = 24: CA is not trusted\n";

static void test_describe(void **state)
{
	char out[200];

	(void)state;
	es_connerr_describe("conn fail: 111", "localhost", ES_CONNERR_PEER_UNKNOWN,
			    ES_CONNERR_UNRESOLVED, out, sizeof(out));
	assert_string_equal(out, "Connection refused");
	/* The handshake died because the peer went away: no certificate was
	 * ever checked. */
	es_connerr_describe(bad_cert, "localhost", ES_CONNERR_PEER_RESET,
			    ES_CONNERR_UNRESOLVED, out, sizeof(out));
	assert_string_equal(out, "the connection was reset before the controller "
				 "sent anything; is it stopping?");
	es_connerr_describe(bad_cert, "localhost", ES_CONNERR_PEER_CLOSED,
			    ES_CONNERR_UNRESOLVED, out, sizeof(out));
	assert_non_null(strstr(out, "was closed before the controller sent anything"));
	/* A peer that answered: the certificate really was refused. */
	es_connerr_describe(bad_cert, "localhost", ES_CONNERR_PEER_SENT,
			    ES_CONNERR_UNRESOLVED, out, sizeof(out));
	assert_string_equal(out, "server's cert didn't look good, invalidca "
				 "(use_ssl 0x1) X509_V_ERR = 24: CA is not trusted");
	es_connerr_describe(bad_cert, "localhost", ES_CONNERR_PEER_UNKNOWN,
			    ES_CONNERR_UNRESOLVED, out, sizeof(out));
	assert_non_null(strstr(out, "CA is not trusted"));
	/* A name that did not resolve is named. */
	es_connerr_describe("Closed before conn", "localhost", ES_CONNERR_PEER_UNKNOWN,
			    EAI_AGAIN, out, sizeof(out));
	assert_string_equal(out, "cannot resolve localhost: Temporary failure in "
				 "name resolution (no localhost line in /etc/hosts?)");
	es_connerr_describe("DNS NXDOMAIN", "ctl.example", ES_CONNERR_PEER_UNKNOWN,
			    EAI_NONAME, out, sizeof(out));
	assert_string_equal(out, "cannot resolve ctl.example: Name or service not known");
	/* Resolved: libwebsockets' words stand. */
	es_connerr_describe("Closed before conn", "localhost", ES_CONNERR_PEER_UNKNOWN,
			    0, out, sizeof(out));
	assert_string_equal(out, "Closed before conn");
	es_connerr_describe(NULL, NULL, ES_CONNERR_PEER_UNKNOWN, ES_CONNERR_UNRESOLVED,
			    out, sizeof(out));
	assert_string_equal(out, "unknown");
	/* "conn fail: " without an errno is not one. */
	es_connerr_describe("conn fail: sock accept", NULL, ES_CONNERR_PEER_UNKNOWN,
			    ES_CONNERR_UNRESOLVED, out, sizeof(out));
	assert_string_equal(out, "conn fail: sock accept");
	/* Truncated, still terminated. */
	es_connerr_describe(bad_cert, NULL, ES_CONNERR_PEER_RESET,
			    ES_CONNERR_UNRESOLVED, out, 8);
	assert_string_equal(out, "the con");
}

/* A listener on 127.0.0.1 and a client connected to it; *srv the accepted
 * end. */
static int pair(int *cli, int *srv)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(l >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &alen), 0);
	*cli = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*cli >= 0);
	assert_int_equal(connect(*cli, (struct sockaddr *)&a, sizeof(a)), 0);
	*srv = accept(l, NULL, NULL);
	assert_true(*srv >= 0);
	close(l);
	return 0;
}

/* Waits until the client end has heard of the peer's FIN or RST. */
static void wait_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	assert_int_equal(poll(&p, 1, 5000), 1);
}

/* True when getsockopt(TCP_INFO) answers a whole struct tcp_info.
 * qemu-user (the cross builds' unit tests) answers 4 bytes, as for an int
 * option: the peer states cannot be seen there. */
static int tcp_info_works(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
	       len >= offsetof(struct tcp_info, tcpi_data_segs_in) + sizeof(ti.tcpi_data_segs_in);
}

static void test_peer_state(void **state)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	char out[200], b;
	int cli, srv, sv[2];

	(void)state;
	assert_int_equal(es_connerr_peer_state(-1), ES_CONNERR_PEER_UNKNOWN);

	pair(&cli, &srv);
	if (!tcp_info_works(cli)) {
		print_message("getsockopt(TCP_INFO) answers a short struct (qemu-user?): "
			      "peer states not testable here\n");
		close(cli);
		close(srv);
		skip();
	}
	assert_int_equal(es_connerr_peer_state(cli), ES_CONNERR_PEER_SILENT);
	close(srv);
	wait_readable(cli);
	assert_int_equal(es_connerr_peer_state(cli), ES_CONNERR_PEER_CLOSED);
	es_connerr_explain(bad_cert, sizeof(bad_cert) - 1, "localhost", cli, out,
			   sizeof(out));
	assert_string_equal(out, "the connection was closed before the controller "
				 "sent anything; is it stopping?");
	close(cli);

	pair(&cli, &srv);
	assert_int_equal(setsockopt(srv, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(srv);
	wait_readable(cli);
	/* A TLS library reading it sees ECONNRESET, and then the state. */
	assert_int_equal(recv(cli, &b, 1, 0), -1);
	assert_int_equal(es_connerr_peer_state(cli), ES_CONNERR_PEER_RESET);
	close(cli);

	pair(&cli, &srv);
	assert_int_equal(write(srv, "x", 1), 1);
	close(srv);
	wait_readable(cli);
	assert_int_equal(es_connerr_peer_state(cli), ES_CONNERR_PEER_SENT);
	es_connerr_explain(bad_cert, sizeof(bad_cert) - 1, "localhost", cli, out,
			   sizeof(out));
	assert_non_null(strstr(out, "CA is not trusted"));
	close(cli);

	/* Not a TCP socket. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(es_connerr_peer_state(sv[0]), ES_CONNERR_PEER_UNKNOWN);
	close(sv[0]);
	close(sv[1]);
}

/* explain looks the name up only when nothing else explains the failure,
 * and never a numeric address. */
static void test_explain(void **state)
{
	char out[200];

	(void)state;
	es_connerr_explain("conn fail: 111", 14, "localhost", -1, out, sizeof(out));
	assert_string_equal(out, "Connection refused");
	/* A numeric host is not resolved: libwebsockets' words stand. */
	es_connerr_explain("Closed before conn", 18, "127.0.0.1", -1, out, sizeof(out));
	assert_string_equal(out, "Closed before conn");
	es_connerr_explain("Closed before conn", 18, "::1", -1, out, sizeof(out));
	assert_string_equal(out, "Closed before conn");
	/* len bounds the text; a NUL inside it ends it. */
	es_connerr_explain("conn fail: 111 and more", 14, NULL, -1, out, sizeof(out));
	assert_string_equal(out, "Connection refused");
	es_connerr_explain("closed\0junk", 11, "::1", -1, out, sizeof(out));
	assert_string_equal(out, "closed");
	es_connerr_explain(NULL, 0, NULL, -1, out, sizeof(out));
	assert_string_equal(out, "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_peer_state),
		cmocka_unit_test(test_explain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
