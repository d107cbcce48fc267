/*
 * http.h - a small blocking HTTPS/1.1 client for edgesyncctl: one request
 * per connection (Connection: close), TLS 1.2 or 1.3 on mbedTLS 3.6 with a
 * client certificate, the server verified against a CA file and the URL's
 * host name (RFC 9110 for HTTP semantics, RFC 9112 for the message syntax,
 * RFC 3986 for the URL).
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

/*
 * Sends one request and reads the whole response. method is "GET", "PUT",
 * "POST" or "DELETE"; url an https URL (es_http_url_parse); body/len the
 * request body sent as application/json (NULL/0: none). The connection times
 * out after ES_HTTP_TIMEOUT_MS of connecting or waiting for data. Chunked
 * and Content-Length bodies are read; a body without either runs to the end
 * of the connection. Any HTTP status is ES_OK: the caller reads resp->status.
 * On ES_OK the caller frees resp->body with es_http_resp_free.
 * Errors (err names the URL and, for TLS, mbedTLS's error text):
 *   ES_ERR_INVAL  bad URL or method
 *   ES_ERR_IO     cannot resolve, connect, send or receive; timeout
 *   ES_ERR_TLS    CA/cert/key file unreadable or invalid, handshake failed,
 *                 server certificate not trusted or not for the host
 *   ES_ERR_PROTO  the response is not HTTP/1.x or is malformed
 *   ES_ERR_TOOBIG the body exceeds ES_HTTP_MAX_BODY or the head
 *                 ES_HTTP_MAX_HEAD
 *   ES_ERR_NOMEM
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
