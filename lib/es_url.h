/*
 * es_url.h - absolute URLs of the schemes edgesync speaks: http and https
 * (RFC 9110 section 4.2), ws and wss (RFC 6455 section 3), in the syntax of
 * RFC 3986 section 3: scheme "://" host [":" port] [path] ["?" query].
 */
#ifndef ES_URL_H
#define ES_URL_H

#include <stddef.h>
#include "es_addr.h"
#include "es_err.h"

/* Bytes of path plus query, with the terminating NUL. */
#define ES_URL_PATH_MAX 2048

typedef struct es_url {
	char scheme[8];                  /* lower case: http, https, ws or wss */
	char host[ES_ADDR_HOST_MAX + 1]; /* name or address; IPv6 without brackets */
	int port;                        /* 1..65535: the URL's, else the scheme's */
	char path[ES_URL_PATH_MAX];      /* path plus "?query"; "/" when none */
	int ipv6;                        /* 1: host was a bracketed IPv6 literal */
} es_url;

/*
 * Parses url into *out (zeroed first). scheme is the one scheme the caller
 * accepts ("https", "wss", ...; compared case-insensitively), NULL for any
 * of the four. The host is as es_addr_parse with ES_ADDR_NAME (a name, an
 * IPv4 literal or a bracketed IPv6 literal; no zone); the port defaults to
 * 80 for http and ws, 443 for https and wss (RFC 9110 section 4.2, RFC 6455
 * section 3). A path that is empty or starts with '?' gets a leading '/'.
 * Refused: spaces and control characters anywhere, userinfo ("user@"), a
 * fragment ('#').
 * key names the setting for the message: err gets `key: "url": what is
 * wrong` (key NULL: `URL "url": what is wrong`).
 * Errors: ES_ERR_INVAL: url NULL or empty, or any refusal above, an
 * unknown or other scheme, a bad host or port (es_addr_parse), a path of
 * ES_URL_PATH_MAX bytes or more.
 */
es_err es_url_parse(const char *key, const char *url, const char *scheme,
		    es_url *out, char *err, size_t errsz);

#endif
