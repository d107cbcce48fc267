/*
 * es_http.h - a small blocking HTTP/1.1 client: plain TCP (http://) or TLS
 * 1.2/1.3 on mbedTLS 3.6 (https://) with an optional client certificate,
 * the server verified against a CA file and the URL's host name. One
 * client keeps one persistent connection (RFC 9112 section 9.3) for all the
 * requests of a command, so a TLS handshake is paid once. Responses are
 * parsed as they arrive (es_http_parser), never rescanned (RFC 9110 for
 * HTTP semantics, RFC 9112 for the message syntax).
 */
#ifndef ES_HTTP_H
#define ES_HTTP_H

#include <stddef.h>
#include "es_err.h"

/* Largest response body accepted (16 MiB). */
#define ES_HTTP_MAX_BODY (16u * 1024u * 1024u)
/* Largest status line plus headers accepted; also bounds one chunk-size
 * line and the trailer section. */
#define ES_HTTP_MAX_HEAD (64u * 1024u)
/* Default connect, handshake and per-read timeout in milliseconds. */
#define ES_HTTP_TIMEOUT_MS 10000

typedef struct es_http_opts {
	int tls;                /* 1: https:// URLs over TLS; 0: http:// over TCP */
	const char *ca_file;    /* tls: PEM CA bundle the server must chain to (required) */
	const char *cert_file;  /* tls: PEM client certificate (NULL: none sent) */
	const char *key_file;   /* tls: PEM private key of cert_file */
	const char *user_agent; /* User-Agent header value; NULL: none sent */
	int timeout_ms;         /* connect, handshake, each wait for data; 0: default */
	/* tls: the CA bundle as PEM text instead of ca_file (NUL-terminated). */
	const char *ca_pem;
	/* tls: 1: the server's certificate is not checked at all. Only for
	 * fetching what the caller then checks itself against a pinned hash
	 * (a joining node's CA discovery, as kubeadm's); never for data. */
	int insecure_discovery;
} es_http_opts;

typedef struct es_http_resp {
	int status;      /* HTTP status code, 200..599 (interim 1xx are skipped) */
	char *body;      /* malloc'd and NUL-terminated (never NULL on ES_OK) */
	size_t body_len; /* bytes of body, excluding the terminating NUL */
} es_http_resp;

/* Frees resp->body and zeroes *resp. NULL-safe. */
void es_http_resp_free(es_http_resp *resp);

/*
 * Incremental response parser: bytes go in as they are received, in pieces
 * of any size; each byte is looked at once. Framing per RFC 9112 section
 * 6.3: interim 1xx responses skipped (section 15.2 of RFC 9110), no body
 * for 204 and 304, else chunked (section 7.1; extensions and trailer
 * fields read and dropped), Content-Length (repeated or a list only
 * of one value, RFC 9110 section 8.6), or up to the end of the
 * connection. Only "HTTP/1.x" status lines with a three-digit status;
 * head lines end in CRLF.
 */
typedef struct es_http_parser es_http_parser;

/*
 * Makes a parser for one response whose body may hold up to max_body
 * bytes (0: ES_HTTP_MAX_BODY). Free it with es_http_parser_free.
 * Errors: ES_ERR_NOMEM.
 */
es_err es_http_parser_new(size_t max_body, es_http_parser **out);

/*
 * Feeds len bytes of data (len 0 is fine). *used gets the bytes that
 * belonged to this response: len, or fewer when the response ended inside
 * data (the rest is the start of something else). Once the response is
 * whole (es_http_parser_done) feeding takes nothing.
 * Errors (err says what is wrong; every later call is ES_ERR_STATE):
 *   ES_ERR_PROTO  not an HTTP/1.x status line, a status out of 100..599, a
 *                 101, a bad Content-Length or differing ones, a
 *                 Transfer-Encoding other than chunked, a bad chunk-size
 *                 line, a chunk not followed by CRLF
 *   ES_ERR_TOOBIG the head, a chunk-size line or the trailers exceed
 *                 ES_HTTP_MAX_HEAD, the body exceeds max_body
 *   ES_ERR_NOMEM
 */
es_err es_http_parser_feed(es_http_parser *p, const char *data, size_t len,
			   size_t *used, char *err, size_t errsz);

/*
 * The connection ended: completes a body delimited by the end of the
 * connection. Errors: ES_ERR_PROTO ("truncated") when the head or a body
 * of known length is incomplete; ES_ERR_STATE after an earlier error.
 */
es_err es_http_parser_eof(es_http_parser *p, char *err, size_t errsz);

/* 1 when the response is whole. */
int es_http_parser_done(const es_http_parser *p);

/* The status of the final response once its head is read, else 0. */
int es_http_parser_status(const es_http_parser *p);

/*
 * Moves the whole response into *resp (the caller frees it with
 * es_http_resp_free); *keep_alive (may be NULL) gets 1 when the
 * connection may carry another request: HTTP/1.1 without "Connection:
 * close" and a body not delimited by the end of the connection.
 * Errors: ES_ERR_STATE when the response is not whole.
 */
es_err es_http_parser_take(es_http_parser *p, es_http_resp *resp,
			   int *keep_alive);

/* Frees p. NULL-safe. */
void es_http_parser_free(es_http_parser *p);

typedef struct es_http_client es_http_client;

/*
 * Makes a client. With opts->tls, reads and checks the credential files
 * now, before any connection, so that a bad configuration is reported as
 * such: ca_file (or ca_pem, or insecure_discovery) is required; cert_file and key_file go together, and the
 * key must be the certificate's (mbedtls_pk_check_pair). Nothing is
 * connected yet. opts is copied (its strings are not: they must outlive
 * the client). On ES_OK the caller frees *out with es_http_client_free.
 * Errors:
 *   ES_ERR_INVAL  a file is missing, unreadable or not PEM, only one of cert
 *                 and key is given, or they do not match; err names the
 *                 setting ("ca", "cert", "key") and the file(s)
 *   ES_ERR_TLS    mbedTLS could not be initialised
 *   ES_ERR_NOMEM
 */
es_err es_http_client_new(const es_http_opts *opts, es_http_client **out,
			  char *err, size_t errsz);

/*
 * Sends one request and reads the whole response. method is "GET", "PUT",
 * "POST" or "DELETE"; url an https URL for a TLS client, an http one for a
 * plain one (es_url_parse); body/len the request body sent as
 * application/json (NULL/0: none). The request (head and body) is one
 * write on a TCP_NODELAY socket. The connection of the previous request is
 * reused when it was to the same host and port and is still open; the
 * server ends it with "Connection: close", a body delimited by the end of
 * the connection, or by closing it while idle. When a reused connection
 * fails before any byte of the response (closed or reset, not a timeout),
 * a GET, PUT or DELETE is sent once more on a new connection (RFC 9110
 * section 9.2.2).
 * Any HTTP status is ES_OK: the caller reads resp->status and frees
 * resp->body with es_http_resp_free.
 * Errors (err names the URL and, for TLS, mbedTLS's error text):
 *   ES_ERR_INVAL  bad URL, wrong scheme for the client, bad method
 *   ES_ERR_IO     cannot resolve, connect, send or receive; timeout (err
 *                 then gives the status when the head had come)
 *   ES_ERR_TLS    handshake failed, server certificate not trusted or not
 *                 for the host
 *   ES_ERR_PROTO, ES_ERR_TOOBIG  as es_http_parser_feed and _eof
 *   ES_ERR_NOMEM
 */
es_err es_http_client_request(es_http_client *c, const char *method,
			      const char *url, const char *body, size_t len,
			      es_http_resp *resp, char *err, size_t errsz);

/* Sets how long each wait for a response's data may take from the next
 * request on (timeout_ms milliseconds; <= 0: opts.timeout_ms again), for
 * requests the server holds on purpose; connect and the TLS handshake keep
 * opts.timeout_ms. NULL-safe. */
void es_http_client_set_timeout(es_http_client *c, int timeout_ms);

/* TCP connections the client has opened so far (for tests and figures). */
unsigned long es_http_client_connections(const es_http_client *c);

/* Closes the connection (TLS close_notify) and frees c. NULL-safe. */
void es_http_client_free(es_http_client *c);

/*
 * One request on a client of its own (es_http_client_new, then
 * es_http_client_request, then es_http_client_free); errors as those, a
 * credential problem's message prefixed with the URL.
 */
es_err es_http_request(const es_http_opts *opts, const char *method,
		       const char *url, const char *body, size_t len,
		       es_http_resp *resp, char *err, size_t errsz);

#endif
