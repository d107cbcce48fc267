/* Unit tests of lib/es_http.c and lib/es_http_parse.c: the incremental
 * response parser (fed whole and in small pieces) and the client over
 * plain TCP against a scripted server on loopback (the framing and error
 * cases of edgesyncctl's former client among them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "es_http.h"

/* ---- the parser ---- */

/* Feeds len bytes of buf in pieces of step bytes (0: at once), then the end
 * of the connection when eof. Returns the first error, or ES_ERR_PROTO
 * ("response truncated") when the response is not whole; on ES_OK *r is
 * filled and *ka (may be NULL) gets keep-alive. *used (may be NULL) gets
 * the bytes the response took. */
static es_err parse(const char *buf, size_t len, size_t step, int eof, size_t max_body,
		    es_http_resp *r, int *ka, size_t *used, char *err, size_t errsz)
{
	es_http_parser *p = NULL;
	size_t off = 0, total = 0;
	es_err rc;

	memset(r, 0, sizeof(*r));
	assert_int_equal(es_http_parser_new(max_body, &p), ES_OK);
	rc = ES_OK;
	while (rc == ES_OK && off < len) {
		size_t n = step && len - off > step ? step : len - off, u = 0;

		rc = es_http_parser_feed(p, buf + off, n, &u, err, errsz);
		assert_true(u <= n);
		total += u;
		off += n;
	}
	if (rc == ES_OK && eof)
		rc = es_http_parser_eof(p, err, errsz);
	if (rc == ES_OK && !es_http_parser_done(p))
		rc = es_errf(ES_ERR_PROTO, err, errsz, "response truncated");
	if (rc == ES_OK)
		assert_int_equal(es_http_parser_take(p, r, ka), ES_OK);
	if (used)
		*used = total;
	es_http_parser_free(p);
	return rc;
}

/* A complete response held in memory: fed to the incremental parser in
 * pieces of step bytes, then the end of the input. */
static es_err whole(const char *buf, size_t len, size_t step, es_http_resp *r,
		    char *err, size_t errsz)
{
	return parse(buf, len, step, 1, 0, r, NULL, NULL, err, errsz);
}

/* A string literal and its length. */
#define LIT(s) s, strlen(s)

static const size_t steps[] = { 0, 1, 2, 3, 7, 64 };
#define NSTEPS (sizeof(steps) / sizeof(steps[0]))

static void test_parse_response(void **state)
{
	es_http_resp r;
	char err[256];
	const char *cl = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
			 "content-length: 7\r\n\r\n{\"a\":1}";
	const char *ch = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "4\r\n{\"a\"\r\n3;ext=1\r\n:1}\r\n0\r\n\r\n";
	const char *eof = "HTTP/1.0 404 Not Found\r\n\r\nnope";
	size_t i;
	(void)state;

	for (i = 0; i < NSTEPS; i++) {
		size_t st = steps[i];

		assert_int_equal(whole(cl, strlen(cl), st, &r, err, sizeof(err)), ES_OK);
		assert_int_equal(r.status, 201);
		assert_int_equal(r.body_len, 7);
		assert_string_equal(r.body, "{\"a\":1}");
		es_http_resp_free(&r);

		assert_int_equal(whole(ch, strlen(ch), st, &r, err, sizeof(err)), ES_OK);
		assert_int_equal(r.status, 200);
		assert_string_equal(r.body, "{\"a\":1}");
		es_http_resp_free(&r);

		assert_int_equal(whole(eof, strlen(eof), st, &r, err, sizeof(err)), ES_OK);
		assert_int_equal(r.status, 404);
		assert_string_equal(r.body, "nope");
		es_http_resp_free(&r);

		/* truncated body, truncated chunks, garbage, oversize */
		assert_int_equal(whole(cl, strlen(cl) - 1, st, &r, err, sizeof(err)), ES_ERR_PROTO);
		assert_non_null(strstr(err, "truncated"));
		assert_int_equal(whole(ch, strlen(ch) - 5, st, &r, err, sizeof(err)), ES_ERR_PROTO);
		assert_non_null(strstr(err, "truncated"));
		assert_int_equal(whole(cl, 20, st, &r, err, sizeof(err)), ES_ERR_PROTO);
		assert_non_null(strstr(err, "truncated before the end of its headers"));
		assert_int_equal(whole("SSH-2.0-x\r\n\r\n", 13, st, &r, err, sizeof(err)), ES_ERR_PROTO);
		assert_non_null(strstr(err, "not HTTP/1.x"));
		assert_int_equal(whole("HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
				       48, st, &r, err, sizeof(err)), ES_ERR_TOOBIG);
		assert_int_equal(whole("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
				       38, st, &r, err, sizeof(err)), ES_ERR_PROTO);
		assert_int_equal(whole("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
				       51, st, &r, err, sizeof(err)), ES_ERR_PROTO);
		assert_null(r.body);
	}
}

static void test_chunked_pieces(void **state)
{
	const char *t = "HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n"
			"5;name=\"v\"\r\nhello\r\nA\r\n, chunked!\r\n1b\r\n"
			" fed in pieces of any size.\r\n0\r\nX-Trailer: 1\r\nX-Two: 2\r\n\r\n";
	const char *want = "hello, chunked! fed in pieces of any size.";
	es_http_resp r;
	char err[256];
	size_t i, used;
	int ka;
	(void)state;

	for (i = 0; i < NSTEPS; i++) {
		/* whole without the end of the connection; keep-alive */
		assert_int_equal(parse(t, strlen(t), steps[i], 0, 0, &r, &ka, &used, err,
				       sizeof(err)), ES_OK);
		assert_string_equal(r.body, want);
		assert_int_equal(r.body_len, strlen(want));
		assert_int_equal(used, strlen(t));
		assert_int_equal(ka, 1);
		es_http_resp_free(&r);
		/* every proper prefix is incomplete, and truncated at the end */
		assert_int_equal(parse(t, strlen(t) - 2, steps[i], 0, 0, &r, NULL, NULL, err,
				       sizeof(err)), ES_ERR_PROTO);
		assert_int_equal(parse(t, strlen(t) - 2, steps[i], 1, 0, &r, NULL, NULL, err,
				       sizeof(err)), ES_ERR_PROTO);
		assert_non_null(strstr(err, "truncated"));
	}
	/* chunk data not followed by CRLF; a size with junk after it */
	assert_int_equal(whole(LIT("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				   "2\r\nabX\r\n"), 1, &r, err, sizeof(err)), ES_ERR_PROTO);
	assert_non_null(strstr(err, "chunk not followed by CRLF"));
	assert_int_equal(whole(LIT("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				   "2 x\r\nab\r\n"), 0, &r, err, sizeof(err)), ES_ERR_PROTO);
	assert_non_null(strstr(err, "bad chunk size line"));
	assert_int_equal(whole(LIT("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"), 0,
			       &r, err, sizeof(err)), ES_ERR_PROTO);
	assert_non_null(strstr(err, "unsupported Transfer-Encoding \"gzip\""));
}

static void test_framing_rules(void **state)
{
	const char *two = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 204 No Content\r\n\r\n";
	const char *interim = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n"
			      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	es_http_resp r;
	char err[256];
	size_t used, i;
	int ka;
	(void)state;

	/* a response ends where its framing says: the rest is not taken */
	assert_int_equal(parse(two, strlen(two), 0, 0, 0, &r, &ka, &used, err, sizeof(err)), ES_OK);
	assert_string_equal(r.body, "ok");
	assert_int_equal(used, strlen(two) - 27);
	es_http_resp_free(&r);
	assert_int_equal(parse(two + used, 27, 0, 0, 0, &r, &ka, NULL, err, sizeof(err)), ES_OK);
	assert_int_equal(r.status, 204);
	assert_int_equal(r.body_len, 0);
	assert_string_equal(r.body, "");
	assert_int_equal(ka, 1);
	es_http_resp_free(&r);
	/* interim 1xx responses are skipped (RFC 9110 15.2); 101 is refused */
	for (i = 0; i < NSTEPS; i++) {
		assert_int_equal(parse(interim, strlen(interim), steps[i], 0, 0, &r, &ka, &used,
				       err, sizeof(err)), ES_OK);
		assert_int_equal(r.status, 200);
		assert_string_equal(r.body, "ok");
		es_http_resp_free(&r);
	}
	assert_int_equal(whole(LIT("HTTP/1.1 101 Switching Protocols\r\n\r\n"), 0, &r, err,
			       sizeof(err)), ES_ERR_PROTO);
	assert_non_null(strstr(err, "101"));
	/* keep-alive: HTTP/1.1 without Connection: close, not EOF-delimited */
	assert_int_equal(parse(LIT("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n"
			       "Content-Length: 0\r\n\r\n"), 0, 0, 0, &r, &ka, NULL, err,
			       sizeof(err)), ES_OK);
	assert_int_equal(ka, 0);
	es_http_resp_free(&r);
	assert_int_equal(parse(LIT("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"), 0, 0, 0, &r,
			       &ka, NULL, err, sizeof(err)), ES_OK);
	assert_int_equal(ka, 0);
	es_http_resp_free(&r);
	assert_int_equal(parse(LIT("HTTP/1.1 500 Oops\r\n\r\nbody"), 0, 1, 0, &r, &ka, NULL,
			       err, sizeof(err)), ES_OK);
	assert_int_equal(r.status, 500);
	assert_string_equal(r.body, "body");
	assert_int_equal(ka, 0);
	es_http_resp_free(&r);
	/* 304 has no body whatever its Content-Length says */
	assert_int_equal(parse(LIT("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"), 0,
			       0, 0, &r, &ka, NULL, err, sizeof(err)), ES_OK);
	assert_int_equal(r.body_len, 0);
	es_http_resp_free(&r);
	/* status out of range, short status line */
	assert_int_equal(whole(LIT("HTTP/1.1 600 X\r\n\r\n"), 0, &r, err, sizeof(err)), ES_ERR_PROTO);
	assert_non_null(strstr(err, "out of range"));
	assert_int_equal(whole(LIT("HTTP/1.1 20\r\n\r\n"), 0, &r, err, sizeof(err)), ES_ERR_PROTO);
}

/* Content-Length given more than once, or as a list (RFC 9110 section 8.6):
 * the same value repeated is that value; differing values make the framing
 * invalid and the response is refused (RFC 9112 section 6.3, item 5). */
static void test_content_length_repeated(void **state)
{
	es_http_resp r;
	char err[256];
	size_t i;
	(void)state;

	for (i = 0; i < NSTEPS; i++) {
		assert_int_equal(whole(LIT("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
					   "X: y\r\ncontent-length: 2\r\n\r\nok"), steps[i], &r,
				       err, sizeof(err)), ES_OK);
		assert_string_equal(r.body, "ok");
		es_http_resp_free(&r);
		assert_int_equal(whole(LIT("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok"),
				       steps[i], &r, err, sizeof(err)), ES_OK);
		assert_string_equal(r.body, "ok");
		es_http_resp_free(&r);
		assert_int_equal(whole(LIT("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
					   "Content-Length: 3\r\n\r\nok!"), steps[i], &r, err,
				       sizeof(err)), ES_ERR_PROTO);
		assert_non_null(strstr(err, "differing Content-Length values \"2\" and \"3\""));
		assert_null(r.body);
		assert_int_equal(whole(LIT("HTTP/1.1 200 OK\r\nContent-Length: 3, 2\r\n\r\nok!"),
				       steps[i], &r, err, sizeof(err)), ES_ERR_PROTO);
		assert_non_null(strstr(err, "differing Content-Length"));
		assert_int_equal(whole(LIT("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
					   "Content-Length: x\r\n\r\nok"), steps[i], &r, err,
				       sizeof(err)), ES_ERR_PROTO);
		assert_non_null(strstr(err, "bad Content-Length \"x\""));
		assert_int_equal(whole(LIT("HTTP/1.1 200 OK\r\nContent-Length: 2,\r\n\r\nok"),
				       steps[i], &r, err, sizeof(err)), ES_ERR_PROTO);
		assert_non_null(strstr(err, "bad Content-Length"));
	}
}

static void test_oversize(void **state)
{
	es_http_resp r;
	char err[256], *big;
	size_t n = ES_HTTP_MAX_HEAD + 100, i;
	(void)state;

	/* a body bound of 10 bytes: 10 fit, 11 do not, however framed */
	assert_int_equal(parse(LIT("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"), 1,
			       0, 10, &r, NULL, NULL, err, sizeof(err)), ES_OK);
	es_http_resp_free(&r);
	assert_int_equal(parse(LIT("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"), 1, 0, 10,
			       &r, NULL, NULL, err, sizeof(err)), ES_ERR_TOOBIG);
	assert_non_null(strstr(err, "exceeds 10"));
	assert_int_equal(parse(LIT("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			       "6\r\n012345\r\n5\r\n"), 1, 0, 10, &r, NULL, NULL, err,
			       sizeof(err)), ES_ERR_TOOBIG);
	assert_int_equal(parse(LIT("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			       "ffffffffffffffffffffffff\r\n"), 0, 0, 10, &r, NULL, NULL, err,
			       sizeof(err)), ES_ERR_TOOBIG);
	assert_int_equal(parse(LIT("HTTP/1.0 200 OK\r\n\r\n0123456789A"), 3, 1, 10, &r, NULL,
			       NULL, err, sizeof(err)), ES_ERR_TOOBIG);
	assert_non_null(strstr(err, "response body exceeds 10 bytes"));
	/* the default bound: 16 MiB */
	assert_int_equal(whole(LIT("HTTP/1.1 200 OK\r\nContent-Length: 16777217\r\n\r\n"), 0,
			       &r, err, sizeof(err)), ES_ERR_TOOBIG);
	/* a head over ES_HTTP_MAX_HEAD, with or without its end */
	big = malloc(n + 1);
	assert_non_null(big);
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	for (i = 20; i < n; i++)
		big[i] = 'a';
	assert_int_equal(parse(big, n, 4096, 0, 0, &r, NULL, NULL, err, sizeof(err)),
			 ES_ERR_TOOBIG);
	assert_non_null(strstr(err, "head exceeds"));
	free(big);
}

static void test_large_body_in_pieces(void **state)
{
	const size_t blen = 4u * 1024 * 1024;
	char head[64], *buf, err[256];
	size_t hl, i;
	es_http_resp r;
	(void)state;

	hl = (size_t)snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
			      blen);
	buf = malloc(hl + blen);
	assert_non_null(buf);
	memcpy(buf, head, hl);
	for (i = 0; i < blen; i++)
		buf[hl + i] = (char)('a' + i % 26);
	assert_int_equal(parse(buf, hl + blen, 1000, 0, 0, &r, NULL, NULL, err, sizeof(err)),
			 ES_OK);
	assert_int_equal(r.body_len, blen);
	assert_memory_equal(r.body, buf + hl, blen);
	es_http_resp_free(&r);
	free(buf);
}

static void test_after_error(void **state)
{
	es_http_parser *p = NULL;
	char err[256];
	size_t used = 99;
	es_http_resp r;
	(void)state;

	assert_int_equal(es_http_parser_new(0, &p), ES_OK);
	assert_int_equal(es_http_parser_status(p), 0);
	assert_int_equal(es_http_parser_feed(p, "XTTP/1.1 200 OK\r\n\r\n", 19, &used, err,
					     sizeof(err)), ES_ERR_PROTO);
	assert_int_equal(es_http_parser_feed(p, "a", 1, &used, err, sizeof(err)), ES_ERR_STATE);
	assert_int_equal(used, 0);
	assert_int_equal(es_http_parser_eof(p, err, sizeof(err)), ES_ERR_STATE);
	assert_int_equal(es_http_parser_take(p, &r, NULL), ES_ERR_STATE);
	assert_null(r.body);
	es_http_parser_free(p);
	es_http_parser_free(NULL);
	es_http_resp_free(NULL);
}

/* ---- the client, against a scripted server on 127.0.0.1 ---- */

typedef struct srv {
	int lfd, port;
	const char *const *resp; /* one per request, NULL-terminated */
	int close_each;          /* close the connection after each response */
	int hold_ms;             /* keep the connection this long after the last */
	size_t piece;            /* bytes per write (0: at once) */
	int delay_from, delay_ms; /* responses from index delay_from (> 0) on
				   * are sent delay_ms late */
	int conns, reqs;
	char req[4096];          /* head of the last request */
	pthread_t th;
} srv;

/* Reads one request (head, then Content-Length bytes); 0 when the client
 * closed the connection first. */
static int read_req(int fd, srv *s)
{
	size_t n = 0;
	long cl = 0;
	const char *h;
	char c;

	while (n + 1 < sizeof(s->req)) {
		if (read(fd, &c, 1) != 1)
			return 0;
		s->req[n++] = c;
		s->req[n] = '\0';
		if (n >= 4 && !memcmp(s->req + n - 4, "\r\n\r\n", 4))
			break;
	}
	h = strstr(s->req, "Content-Length: ");
	if (h)
		cl = strtol(h + 16, NULL, 10);
	while (cl-- > 0)
		if (read(fd, &c, 1) != 1)
			return 0;
	s->reqs++;
	return 1;
}

static void send_resp(int fd, const srv *s, const char *r)
{
	size_t len = strlen(r), off = 0;

	while (off < len) {
		size_t n = s->piece && len - off > s->piece ? s->piece : len - off;
		ssize_t w = send(fd, r + off, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		off += (size_t)w;
		if (s->piece)
			usleep(200);
	}
}

static void *srv_main(void *arg)
{
	srv *s = arg;
	int i = 0;

	while (s->resp[i]) {
		int fd = accept(s->lfd, NULL, NULL);

		if (fd < 0)
			break;
		s->conns++;
		while (s->resp[i] && read_req(fd, s)) {
			if (s->delay_from && i >= s->delay_from)
				usleep((useconds_t)s->delay_ms * 1000);
			send_resp(fd, s, s->resp[i++]);
			if (s->close_each)
				break;
		}
		if (!s->resp[i] && s->hold_ms)
			usleep((useconds_t)s->hold_ms * 1000);
		close(fd);
	}
	return NULL;
}

static void srv_start(srv *s, const char *const *resp)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);

	s->resp = resp;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
}

static void srv_stop(srv *s)
{
	shutdown(s->lfd, SHUT_RDWR); /* ends a pending accept */
	pthread_join(s->th, NULL);
	close(s->lfd);
}

static const es_http_opts plain = { .user_agent = "test/1", .timeout_ms = 2000 };

static void test_client_keep_alive(void **state)
{
	static const char *const resp[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{\"a\": 1}\n",
		"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
		NULL,
	};
	srv s = { .piece = 3 };
	es_http_client *c = NULL;
	es_http_resp r;
	char url[64], err[512] = "";
	(void)state;

	srv_start(&s, resp);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/state", s.port);
	assert_int_equal(es_http_client_new(&plain, &c, err, sizeof(err)), ES_OK);
	assert_int_equal(es_http_client_request(c, "GET", url, NULL, 0, &r, err, sizeof(err)), ES_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"a\": 1}\n");
	es_http_resp_free(&r);
	assert_non_null(strstr(s.req, "GET /v1/state HTTP/1.1\r\n"));
	assert_non_null(strstr(s.req, "\r\nUser-Agent: test/1\r\n"));
	/* any status is an answer, not an error */
	assert_int_equal(es_http_client_request(c, "PUT", url, "{}", 2, &r, err, sizeof(err)), ES_OK);
	assert_int_equal(r.status, 500);
	assert_string_equal(r.body, "oops");
	es_http_resp_free(&r);
	assert_non_null(strstr(s.req, "PUT /v1/state HTTP/1.1\r\n"));
	assert_non_null(strstr(s.req, "Content-Type: application/json\r\nContent-Length: 2\r\n"));
	assert_int_equal(es_http_client_request(c, "GET", url, NULL, 0, &r, err, sizeof(err)), ES_OK);
	assert_string_equal(r.body, "abcde");
	es_http_resp_free(&r);
	/* three requests, one connection */
	assert_int_equal(es_http_client_connections(c), 1);
	es_http_client_free(c);
	srv_stop(&s);
	assert_int_equal(s.conns, 1);
	assert_int_equal(s.reqs, 3);
}

static void test_client_reconnects(void **state)
{
	/* the server closes the connection after each response: after a
	 * keep-alive one while it is idle, after "Connection: close", after a
	 * body delimited by the end of the connection */
	static const char *const resp[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na",
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nb",
		"HTTP/1.0 200 OK\r\n\r\nc",
		NULL,
	};
	srv s = { .close_each = 1 };
	es_http_client *c = NULL;
	es_http_resp r;
	char url[64], err[512] = "";
	const char *want[] = { "a", "b", "c" };
	int i;
	(void)state;

	srv_start(&s, resp);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", s.port);
	assert_int_equal(es_http_client_new(&plain, &c, err, sizeof(err)), ES_OK);
	for (i = 0; i < 3; i++) {
		if (es_http_client_request(c, "GET", url, NULL, 0, &r, err, sizeof(err)) != ES_OK)
			fail_msg("request %d: %s", i, err);
		assert_string_equal(r.body, want[i]);
		es_http_resp_free(&r);
		if (i == 0)
			usleep(100 * 1000); /* the server's close arrives */
	}
	assert_non_null(strstr(s.req, "\r\nHost: 127.0.0.1:"));
	assert_int_equal(es_http_client_connections(c), 3);
	es_http_client_free(c);
	srv_stop(&s);
	assert_int_equal(s.conns, 3);
}

static void test_client_timeout_names_status(void **state)
{
	/* a 500 whose body is delimited by the end of a connection that the
	 * server keeps open */
	static const char *const resp[] = {
		"HTTP/1.1 500 Internal Server Error\r\n\r\npartial", NULL,
	};
	es_http_opts o = plain;
	srv s = { .hold_ms = 1500 };
	es_http_resp r;
	char url[64], err[512] = "";
	(void)state;

	o.timeout_ms = 300;
	srv_start(&s, resp);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/state", s.port);
	assert_int_equal(es_http_request(&o, "GET", url, NULL, 0, &r, err, sizeof(err)), ES_ERR_IO);
	if (!strstr(err, "HTTP 500") || !strstr(err, url) || !strstr(err, "0.3 s"))
		fail_msg("error \"%s\"", err);
	assert_null(r.body);
	srv_stop(&s);
}

static void test_client_response_timeout(void **state)
{
	/* the second and third answers come 600 ms late */
	static const char *const resp[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nc",
		NULL,
	};
	es_http_opts o = plain;
	srv s = { .delay_from = 1, .delay_ms = 600 };
	es_http_client *c = NULL;
	es_http_resp r;
	char url[64], err[512] = "";
	(void)state;

	o.timeout_ms = 300;
	srv_start(&s, resp);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", s.port);
	assert_int_equal(es_http_client_new(&o, &c, err, sizeof(err)), ES_OK);
	assert_int_equal(es_http_client_request(c, "GET", url, NULL, 0, &r, err, sizeof(err)), ES_OK);
	es_http_resp_free(&r);
	/* on the reused connection the answer is late: a timeout, not sent
	 * again as if the server had closed the connection while idle */
	assert_int_equal(es_http_client_request(c, "GET", url, NULL, 0, &r, err, sizeof(err)),
			 ES_ERR_IO);
	if (!strstr(err, "no response within 0.3 s"))
		fail_msg("error \"%s\"", err);
	usleep(400 * 1000); /* the server has answered the closed connection */
	assert_int_equal(s.reqs, 2);
	/* a longer wait for the response, for a request the server holds */
	es_http_client_set_timeout(c, 2000);
	assert_int_equal(es_http_client_request(c, "GET", url, NULL, 0, &r, err, sizeof(err)), ES_OK);
	assert_string_equal(r.body, "c");
	es_http_resp_free(&r);
	es_http_client_free(c);
	srv_stop(&s);
	assert_int_equal(s.reqs, 3);
	assert_int_equal(s.conns, 2);
}

static void test_client_oversize(void **state)
{
	static const char *const resp[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 16777217\r\n\r\n", NULL,
	};
	srv s = { 0 };
	es_http_resp r;
	char url[64], err[512] = "";
	(void)state;

	srv_start(&s, resp);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
	assert_int_equal(es_http_request(&plain, "GET", url, NULL, 0, &r, err, sizeof(err)),
			 ES_ERR_TOOBIG);
	assert_non_null(strstr(err, "exceeds 16777216"));
	srv_stop(&s);
}

static void test_client_errors(void **state)
{
	static const char *const resp[] = { NULL };
	srv s = { 0 };
	es_http_resp r;
	char url[64], err[512] = "";
	(void)state;

	/* a port nobody listens on: bound, then closed */
	srv_start(&s, resp);
	srv_stop(&s);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", s.port);
	assert_int_equal(es_http_request(&plain, "GET", url, NULL, 0, &r, err, sizeof(err)),
			 ES_ERR_IO);
	assert_non_null(strstr(err, "cannot connect to 127.0.0.1 port"));
	/* a plain client takes http:// only */
	assert_int_equal(es_http_request(&plain, "GET", "https://127.0.0.1/", NULL, 0, &r, err,
					 sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "scheme must be http://"));
}

static void test_request_errors(void **state)
{
	es_http_opts tls = { .tls = 1, .ca_file = "/nonexistent/ca.crt" };
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
	tls.ca_file = NULL;
	assert_int_equal(es_http_request(&tls, "GET", "https://127.0.0.1:1/", NULL, 0, &r, err,
					 sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "ca: no CA file given"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_response),
		cmocka_unit_test(test_chunked_pieces),
		cmocka_unit_test(test_framing_rules),
		cmocka_unit_test(test_content_length_repeated),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_large_body_in_pieces),
		cmocka_unit_test(test_after_error),
		cmocka_unit_test(test_client_keep_alive),
		cmocka_unit_test(test_client_reconnects),
		cmocka_unit_test(test_client_timeout_names_status),
		cmocka_unit_test(test_client_response_timeout),
		cmocka_unit_test(test_client_oversize),
		cmocka_unit_test(test_client_errors),
		cmocka_unit_test(test_request_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
