/*
 * es_addr.h - "host:port" addresses: the listen settings of the agent and
 * the controller, and the authority of a URL (es_url.h). One parser, whose
 * flags say what a caller accepts besides an IP literal.
 *
 * Forms: "192.0.2.1:80", "[2001:db8::1]:80" (an IPv6 literal always in
 * brackets, RFC 3986 section 3.2.2), with ES_ADDR_ZONE "[fe80::1%eth0]:80"
 * (RFC 4007 section 11), with ES_ADDR_NAME "name:80", with
 * ES_ADDR_PORT_OPTIONAL the host alone.
 */
#ifndef ES_ADDR_H
#define ES_ADDR_H

#include <stddef.h>
#include "es_err.h"

/* Longest host accepted, in bytes (RFC 1035 section 2.3.4 bounds a name
 * at 253; an IPv6 literal with its zone is shorter). */
#define ES_ADDR_HOST_MAX 255
/* Longest zone (interface name) after '%': IF_NAMESIZE - 1 on Linux. */
#define ES_ADDR_ZONE_MAX 15

/* What es_addr_parse accepts besides an IP literal and a port (or-ed). */
enum {
	/* A host name (RFC 1123 section 2.1): dot-separated labels of 1..63
	 * letters, digits and '-', none starting or ending with '-', at most
	 * 253 bytes (RFC 1035 section 2.3.4). A host of digits and dots only
	 * must still be an IPv4 address (RFC 1123 section 2.1: a name never
	 * has the dotted-decimal form). */
	ES_ADDR_NAME = 1u << 0,
	/* A zone after a bracketed IPv6 literal: '%' then 1..ES_ADDR_ZONE_MAX
	 * of letters, digits, '-', '.', '_', '~' (RFC 6874 ZoneID, unencoded). */
	ES_ADDR_ZONE = 1u << 1,
	/* No ":port": the port is then 0 and the caller applies its default. */
	ES_ADDR_PORT_OPTIONAL = 1u << 2,
};

typedef struct es_addr {
	char host[ES_ADDR_HOST_MAX + 1]; /* without brackets; IPv6 with "%zone" */
	int port;                        /* 1..65535; 0 when absent */
	int ipv6;                        /* 1: host was a bracketed IPv6 literal */
} es_addr;

/*
 * Parses s (NUL-terminated) into *out (zeroed first). Without flags the
 * host is an IPv4 literal (inet_pton) or a bracketed IPv6 literal, and a
 * port is required; the port is 1..65535 in decimal digits only (RFC 3986
 * "port", leading zeros allowed). Never looks a name up.
 * key names the setting for the message: err gets `key: "s": what is
 * wrong` (key NULL: only what is wrong, for a caller that says the rest).
 * Errors: ES_ERR_INVAL: s NULL or empty, no port, port 0, over 65535 or not
 * digits, a '[' without ']', something between ']' and ':', a bracketed
 * host that is not IPv6, an unbracketed IPv6 literal, a host that is not
 * an IP literal (without ES_ADDR_NAME) or not a host name (a bad
 * character, an empty label or one over 63 bytes, a label starting or
 * ending with '-', over 253 bytes), a zone
 * where ES_ADDR_ZONE is not given, an empty or bad zone, a host longer
 * than ES_ADDR_HOST_MAX.
 */
es_err es_addr_parse(const char *key, const char *s, unsigned flags,
		     es_addr *out, char *err, size_t errsz);

/*
 * Checks that this host can listen on a (parsed by es_addr_parse with
 * flags): binds a TCP socket to it (SO_REUSEADDR, as a listener would) and
 * closes it, so a listener is never handed an address libwebsockets would
 * retry binding forever (one that is not this host's, EADDRNOTAVAIL).
 * With ES_ADDR_NAME in flags a name is looked up (getaddrinfo) and its
 * first address tried; without it the host must be an IP literal
 * (AI_NUMERICHOST), as the caller's listener takes nothing else.
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is refused: libwebsockets
 * cannot listen on one either.
 * Errors: ES_ERR_INVAL: err `key: host:port: not an IP address` (a name
 * without ES_ADDR_NAME); ES_ERR_IO: err `key: host:port: <why>` ("not an
 * address of this host", "in use", "an IPv4-mapped IPv6 address", "cannot
 * resolve: ...", or strerror).
 */
es_err es_addr_check_listen(const char *key, const es_addr *a, unsigned flags,
			    char *err, size_t errsz);

#endif
