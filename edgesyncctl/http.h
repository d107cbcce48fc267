/*
 * http.h - a small blocking HTTPS/1.1 client for edgesyncctl: TLS 1.2 or 1.3
 * on mbedTLS 3.6 with a client certificate, the server verified against a
 * CA file and the URL's host name. One client keeps one persistent
 * connection (RFC 9112 section 9.3) for all the requests of a command, so
 * the handshake is paid once (RFC 9110 for HTTP semantics, RFC 9112 for the
 * message syntax, RFC 3986 for the URL).
 */
#ifndef ES_CTL_HTTP_H
#define ES_CTL_HTTP_H

#include <stddef.h>
#include "es_err.h"

/* Largest response body accepted (16 MiB). */
#define ES_HTTP_MAX_BODY (16u * 1024u * 1024u)
/* Largest status line plus headers accepted. */
#define ES_HTTP_MAX_HEAD (64u * 1024u)
/* Connect, handshake and per-read timeout in milliseconds. */
#define ES_HTTP_TIMEOUT_MS 10000

typedef struct es_http_url {
	char host[256];  /* host name or address; IPv6 without the brackets */
	char port[6];    /* decimal port, "443" when the URL names none */
	char path[2048]; /* path plus query, "/" when the URL names none */
	int ipv6;        /* 1 when host was a bracketed IPv6 literal */
} es_http_url;

/*
 * Parses an absolute https URL: "https://" host [":" port] [path-abempty
 * ["?" query]] (RFC 3986 section 3). host is a registered name or IPv4
 * address (letters, digits, '-', '.', '_') or an IPv6 literal in brackets
 * ("[::1]"); port is 1..65535. The scheme is case-insensitive. A fragment,
 * userinfo ("user@"), spaces and control characters are refused.
 * Returns ES_OK and fills *out, or ES_ERR_INVAL with err naming the URL and
 * what is wrong with it.
 */
es_err es_http_url_parse(const char *url, es_http_url *out, char *err,
			 size_t errsz);

typedef struct es_http_tls {
	const char *ca_file;   /* PEM CA bundle the server must chain to (required) */
	const char *cert_file; /* PEM client certificate (NULL: none sent) */
	const char *key_file;  /* PEM private key of cert_file */
} es_http_tls;

typedef struct es_http_resp {
	int status;      /* HTTP status code, 100..599 */
	char *body;      /* malloc'd and NUL-terminated (never NULL on ES_OK) */
	size_t body_len; /* bytes of body, excluding the terminating NUL */
} es_http_resp;

typedef struct es_http_client es_http_client;

/*
 * Makes a client: reads and checks tls's files now, before any connection,
 * so that a bad configuration is reported as such. ca_file is required;
 * cert_file and key_file go together, and the key must be the
 * certificate's (mbedtls_pk_check_pair). Nothing is connected yet.
 * On ES_OK the caller frees *out with es_http_client_free.
 * Errors:
 *   ES_ERR_INVAL  a file is missing, unreadable or not PEM, only one of cert
 *                 and key is given, or they do not match; err names the
 *                 setting ("ca", "cert", "key") and the file(s)
 *   ES_ERR_TLS    mbedTLS could not be initialised
 *   ES_ERR_NOMEM
 */
es_err es_http_client_new(const es_http_tls *tls, es_http_client **out,
			  char *err, size_t errsz);

/*
 * Sends one request and reads the whole response. method is "GET", "PUT",
 * "POST" or "DELETE"; url an https URL (es_http_url_parse); body/len the
 * request body sent as application/json (NULL/0: none). The request (head
 * and body) is written with one TLS write on a TCP_NODELAY socket. The
 * connection of the previous request is reused when it was to the same
 * host and port and is still open; the server ends it with "Connection:
 * close", a body delimited by the end of the connection, or by closing it
 * while idle. When a reused connection fails before any byte of the
 * response, a GET, PUT or DELETE is sent once more on a new connection.
 * Timeouts: ES_HTTP_TIMEOUT_MS for connecting and for each wait for data.
 * Chunked and Content-Length bodies are read. Any HTTP status is ES_OK:
 * the caller reads resp->status and frees resp->body with
 * es_http_resp_free.
 * Errors (err names the URL and, for TLS, mbedTLS's error text):
 *   ES_ERR_INVAL  bad URL or method
 *   ES_ERR_IO     cannot resolve, connect, send or receive; timeout
 *   ES_ERR_TLS    handshake failed, server certificate not trusted or not
 *                 for the host
 *   ES_ERR_PROTO  the response is not HTTP/1.x or is malformed
 *   ES_ERR_TOOBIG the body exceeds ES_HTTP_MAX_BODY or the head
 *                 ES_HTTP_MAX_HEAD
 *   ES_ERR_NOMEM
 */
es_err es_http_client_request(es_http_client *c, const char *method,
			      const char *url, const char *body, size_t len,
			      es_http_resp *resp, char *err, size_t errsz);

/* TCP connections the client has opened so far (for tests and figures). */
unsigned long es_http_client_connections(const es_http_client *c);

/* Closes the connection (TLS close_notify) and frees c. NULL-safe. */
void es_http_client_free(es_http_client *c);

/*
 * One request on a client of its own (es_http_client_new, then
 * es_http_client_request, then es_http_client_free); errors as those, a
 * credential problem's message prefixed with the URL.
 */
es_err es_http_request(const es_http_tls *tls, const char *method,
		       const char *url, const char *body, size_t len,
		       es_http_resp *resp, char *err, size_t errsz);

/* Frees resp->body and zeroes *resp. NULL-safe. */
void es_http_resp_free(es_http_resp *resp);

/*
 * Parses a complete response held in memory (status line, headers, body:
 * Content-Length, chunked, or up to the end of buf). Exposed so the framing
 * rules are testable without a network. Same ownership and errors as
 * es_http_request (ES_ERR_PROTO, ES_ERR_TOOBIG, ES_ERR_NOMEM); a body shorter
 * than its Content-Length or a chunked body without its last chunk is
 * ES_ERR_PROTO ("truncated").
 */
es_err es_http_parse_response(const char *buf, size_t len, es_http_resp *resp,
			      char *err, size_t errsz);

#endif
