/*
 * es_addr.c - "host:port" addresses (see es_addr.h).
 */
#include "es_addr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

/* The forms accepted, for "expected ..." messages. */
static const char *forms(unsigned flags)
{
	if (flags & ES_ADDR_NAME)
		return flags & ES_ADDR_PORT_OPTIONAL ? "host[:port] or [ipv6][:port]"
						     : "host:port or [ipv6]:port";
	return flags & ES_ADDR_PORT_OPTIONAL ? "ip[:port] or [ipv6][:port]"
					     : "ip:port or [ipv6]:port";
}

static int name_char(int c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_';
}

/* The bracketed host h (1..ES_ADDR_HOST_MAX bytes, without the brackets)
 * into out->host. */
static int bracketed(const char *h, size_t n, unsigned flags, es_addr *out,
		     char *why, size_t whysz)
{
	const char *pct = memchr(h, '%', n);
	size_t alen = pct ? (size_t)(pct - h) : n;
	unsigned char a6[16];
	size_t i;

	memcpy(out->host, h, alen);
	out->host[alen] = '\0';
	if (inet_pton(AF_INET6, out->host, a6) != 1) {
		snprintf(why, whysz, "\"%s\" is not an IPv6 address", out->host);
		return -1;
	}
	if (pct) {
		const char *z = pct + 1;
		size_t zl = n - alen - 1;

		if (!(flags & ES_ADDR_ZONE)) {
			snprintf(why, whysz, "a zone (\"%%%.*s\") is not allowed here",
				 (int)zl, z);
			return -1;
		}
		if (zl == 0 || zl > ES_ADDR_ZONE_MAX) {
			snprintf(why, whysz, "zone after '%%' must be 1..%d characters",
				 ES_ADDR_ZONE_MAX);
			return -1;
		}
		for (i = 0; i < zl; i++) {
			if (!name_char((unsigned char)z[i]) && z[i] != '~') {
				snprintf(why, whysz, "invalid character '%c' in the zone",
					 z[i]);
				return -1;
			}
		}
		memcpy(out->host, h, n);
		out->host[n] = '\0';
	}
	out->ipv6 = 1;
	return 0;
}

/* A host name h (n bytes, of letters, digits, '-' and '.') as RFC 1123
 * section 2.1 allows it: dot-separated labels of 1..63 bytes that neither
 * start nor end with '-', at most 253 bytes in all (RFC 1035 section
 * 2.3.4). 0, or -1 with why set. */
static int host_name(const char *h, size_t n, char *why, size_t whysz)
{
	size_t i = 0, l;

	if (n > 253) {
		snprintf(why, whysz, "host name longer than 253 characters");
		return -1;
	}
	while (i <= n) {
		for (l = 0; i + l < n && h[i + l] != '.'; l++)
			;
		if (l == 0 || l > 63) {
			snprintf(why, whysz, "host name label %s (RFC 1123: 1..63 "
				 "characters between dots)", l ? "longer than 63 characters"
				 : "empty");
			return -1;
		}
		if (h[i] == '-' || h[i + l - 1] == '-') {
			snprintf(why, whysz, "host name label \"%.*s\" starts or ends "
				 "with '-' (RFC 1123)", (int)l, h + i);
			return -1;
		}
		i += l + 1;
	}
	return 0;
}

/* The unbracketed host h (1..ES_ADDR_HOST_MAX bytes) into out->host. */
static int plain(const char *h, size_t n, unsigned flags, es_addr *out,
		 char *why, size_t whysz)
{
	unsigned char a4[4];
	size_t i, dotted = 1;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)h[i];

		if ((flags & ES_ADDR_NAME) && !isalnum(c) && c != '-' && c != '.') {
			snprintf(why, whysz, "invalid character '%c' in host", c);
			return -1;
		}
		if (!isdigit(c) && c != '.')
			dotted = 0;
	}
	memcpy(out->host, h, n);
	out->host[n] = '\0';
	if ((dotted || !(flags & ES_ADDR_NAME)) &&
	    inet_pton(AF_INET, out->host, a4) != 1) {
		snprintf(why, whysz, "\"%s\" is not an IPv4 address%s", out->host,
			 dotted ? "" : " (an IPv6 address goes in brackets)");
		return -1;
	}
	if (!dotted)
		return host_name(h, n, why, whysz);
	return 0;
}

/* The digits after ':' into out->port. */
static int port(const char *p, es_addr *out, char *why, size_t whysz)
{
	long v = 0;
	const char *q;

	for (q = p; isdigit((unsigned char)*q) && v <= 65535; q++)
		v = v * 10 + (*q - '0');
	if (q == p || *q || v < 1 || v > 65535) {
		snprintf(why, whysz, "port must be 1..65535, not \"%s\"", p);
		return -1;
	}
	out->port = (int)v;
	return 0;
}

/* The host of s: *h and *n, and *rest what follows it (after the ']' of a
 * bracketed one); 1 for a bracketed host, -1 with why set when s has no
 * host. */
static int split(const char *s, unsigned flags, const char **h, size_t *n,
		 const char **rest, char *why, size_t whysz)
{
	const char *end;

	if (*s == '[') {
		end = strchr(s, ']');
		if (!end) {
			snprintf(why, whysz, "IPv6 address lacks ']'");
			return -1;
		}
		*h = s + 1;
		*rest = end + 1;
	} else {
		end = strchr(s, ':');
		if (end && strchr(end + 1, ':')) {
			snprintf(why, whysz, "an IPv6 address goes in brackets: expected %s",
				 forms(flags));
			return -1;
		}
		*h = s;
		end = end ? end : s + strlen(s);
		*rest = end;
	}
	*n = (size_t)(end - *h);
	if (*n == 0) {
		snprintf(why, whysz, "host missing");
		return -1;
	}
	if (*n > ES_ADDR_HOST_MAX) {
		snprintf(why, whysz, "host longer than %d characters", ES_ADDR_HOST_MAX);
		return -1;
	}
	return *s == '[';
}

es_err es_addr_parse(const char *key, const char *s, unsigned flags,
		     es_addr *out, char *err, size_t errsz)
{
	char why[320];
	const char *h = NULL, *rest = "";
	size_t n = 0;
	int kind, bad;

	memset(out, 0, sizeof(*out));
	why[0] = '\0';
	if (!s || !*s) {
		snprintf(why, sizeof(why), "empty; expected %s", forms(flags));
		if (key)
			return es_errf(ES_ERR_INVAL, err, errsz, "%s: %s", key, why);
		return es_errf(ES_ERR_INVAL, err, errsz, "%s", why);
	}
	kind = split(s, flags, &h, &n, &rest, why, sizeof(why));
	if (kind < 0)
		bad = 1;
	else if (kind)
		bad = bracketed(h, n, flags, out, why, sizeof(why));
	else
		bad = plain(h, n, flags, out, why, sizeof(why));
	if (!bad && *rest && *rest != ':') {
		snprintf(why, sizeof(why), "unexpected '%c' after ']'", *rest);
		bad = 1;
	}
	if (!bad && !*rest && !(flags & ES_ADDR_PORT_OPTIONAL)) {
		snprintf(why, sizeof(why), "missing port: expected %s", forms(flags));
		bad = 1;
	}
	if (!bad && *rest)
		bad = port(rest + 1, out, why, sizeof(why));
	if (!bad)
		return ES_OK;
	memset(out, 0, sizeof(*out));
	if (key)
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: \"%s\": %s", key, s, why);
	return es_errf(ES_ERR_INVAL, err, errsz, "%s", why);
}

es_err es_addr_check_listen(const char *key, const es_addr *a, unsigned flags,
			    char *err, size_t errsz)
{
	struct addrinfo hints, *res = NULL;
	char port[8];
	int fd, on = 1, rc, e;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if (!(flags & ES_ADDR_NAME))
		hints.ai_flags |= AI_NUMERICHOST;
	snprintf(port, sizeof(port), "%d", a->port);
	rc = getaddrinfo(a->host, port, &hints, &res);
	if (rc == EAI_NONAME && !(flags & ES_ADDR_NAME))
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: %s:%d: not an IP address",
			       key, a->host, a->port);
	if (rc != 0 || !res)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s:%d: cannot resolve: %s",
			       key, a->host, a->port, gai_strerror(rc));
	if (res->ai_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)(void *)res->ai_addr)->sin6_addr)) {
		freeaddrinfo(res);
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s:%d: an IPv4-mapped IPv6 "
			       "address: give the IPv4 address", key, a->host, a->port);
	}
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
	if (fd < 0) {
		e = errno;
		freeaddrinfo(res);
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s:%d: %s", key, a->host,
			       a->port, strerror(e));
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	rc = bind(fd, res->ai_addr, res->ai_addrlen);
	e = errno;
	close(fd);
	freeaddrinfo(res);
	if (rc == 0)
		return ES_OK;
	if (e == EADDRNOTAVAIL || e == EINVAL || e == EAFNOSUPPORT)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s:%d: not an address of "
			       "this host", key, a->host, a->port);
	if (e == EADDRINUSE)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s:%d: in use", key,
			       a->host, a->port);
	return es_errf(ES_ERR_IO, err, errsz, "%s: %s:%d: %s", key, a->host,
		       a->port, strerror(e));
}
