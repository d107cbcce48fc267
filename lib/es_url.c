/*
 * es_url.c - absolute http, https, ws and wss URLs (see es_url.h).
 */
#include "es_url.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *name;
	int port;
} schemes[] = {
	{ "http", 80 }, { "https", 443 }, { "ws", 80 }, { "wss", 443 },
};

#define NSCHEMES (sizeof(schemes) / sizeof(schemes[0]))

/* The scheme of url (the known one it starts with, followed by "://"), or
 * -1. */
static int scheme_of(const char *url)
{
	size_t i, n;

	for (i = 0; i < NSCHEMES; i++) {
		n = strlen(schemes[i].name);
		if (!strncasecmp(url, schemes[i].name, n) && !strncmp(url + n, "://", 3))
			return (int)i;
	}
	return -1;
}

/* Checks url and fills out; why gets what is wrong. */
static int parse(const char *url, const char *want, es_url *out, char *why,
		 size_t whysz)
{
	char auth[ES_ADDR_HOST_MAX + 32];
	const char *p, *a;
	es_addr addr;
	size_t n;
	int s;

	for (p = url; *p; p++) {
		if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
			snprintf(why, whysz, "contains a space or control character");
			return -1;
		}
	}
	s = scheme_of(url);
	if (want && (s < 0 || strcasecmp(schemes[s].name, want))) {
		snprintf(why, whysz, "scheme must be %s://", want);
		return -1;
	}
	if (s < 0) {
		snprintf(why, whysz, "scheme must be http://, https://, ws:// or wss://");
		return -1;
	}
	snprintf(out->scheme, sizeof(out->scheme), "%s", schemes[s].name);
	a = url + strlen(schemes[s].name) + 3;
	n = strcspn(a, "/?#");
	if (memchr(a, '@', n)) {
		snprintf(why, whysz, "user information (\"user@\") is not supported");
		return -1;
	}
	if (n == 0) {
		snprintf(why, whysz, "host missing");
		return -1;
	}
	if (n >= sizeof(auth)) {
		snprintf(why, whysz, "host longer than %d characters", ES_ADDR_HOST_MAX);
		return -1;
	}
	memcpy(auth, a, n);
	auth[n] = '\0';
	if (es_addr_parse(NULL, auth, ES_ADDR_NAME | ES_ADDR_PORT_OPTIONAL, &addr,
			  why, whysz) != ES_OK)
		return -1;
	memcpy(out->host, addr.host, sizeof(out->host));
	out->port = addr.port ? addr.port : schemes[s].port;
	out->ipv6 = addr.ipv6;
	p = a + n;
	if (strchr(p, '#')) {
		snprintf(why, whysz, "a fragment is not allowed");
		return -1;
	}
	n = strlen(p);
	if (n + 2 > sizeof(out->path)) {
		snprintf(why, whysz, "path longer than %d bytes", ES_URL_PATH_MAX - 2);
		return -1;
	}
	snprintf(out->path, sizeof(out->path), "%s%s", *p == '/' ? "" : "/", p);
	return 0;
}

es_err es_url_parse(const char *key, const char *url, const char *scheme,
		    es_url *out, char *err, size_t errsz)
{
	char why[320] = "";

	memset(out, 0, sizeof(*out));
	if (!url || !*url) {
		if (key)
			return es_errf(ES_ERR_INVAL, err, errsz, "%s: empty", key);
		return es_errf(ES_ERR_INVAL, err, errsz, "URL missing");
	}
	if (parse(url, scheme, out, why, sizeof(why)) == 0)
		return ES_OK;
	memset(out, 0, sizeof(*out));
	if (key)
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: \"%s\": %s", key, url, why);
	return es_errf(ES_ERR_INVAL, err, errsz, "URL \"%s\": %s", url, why);
}
