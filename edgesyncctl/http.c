/*
 * http.c - URLs and HTTP/1.1 response framing (see http.h, http_int.h).
 */
#include "http.h"
#include "http_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

static int host_char_ok(int c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_';
}

es_err es_http_url_parse(const char *url, es_http_url *out, char *err,
			 size_t errsz)
{
	const char *p, *hs, *he;
	size_t n;

	if (!url || !out)
		return es_errf(ES_ERR_INVAL, err, errsz, "URL missing");
	memset(out, 0, sizeof(*out));
	for (p = url; *p; p++) {
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "URL \"%s\": contains a space or control character", url);
	}
	if (strncasecmp(url, "https://", 8) != 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "URL \"%s\": scheme must be https://", url);
	p = url + 8;
	if (*p == '[') {
		hs = p + 1;
		he = strchr(hs, ']');
		if (!he)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "URL \"%s\": IPv6 address lacks ']'", url);
		n = (size_t)(he - hs);
		if (n == 0 || n >= sizeof(out->host))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "URL \"%s\": bad IPv6 address", url);
		memcpy(out->host, hs, n);
		out->host[n] = '\0';
		{
			struct in6_addr a6;
			if (inet_pton(AF_INET6, out->host, &a6) != 1)
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "URL \"%s\": \"%s\" is not an IPv6 address",
					       url, out->host);
		}
		out->ipv6 = 1;
		p = he + 1;
	} else {
		hs = p;
		while (*p && *p != ':' && *p != '/' && *p != '?' && *p != '#') {
			if (*p == '@')
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "URL \"%s\": user information is not supported", url);
			if (!host_char_ok((unsigned char)*p))
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "URL \"%s\": invalid character '%c' in host", url, *p);
			p++;
		}
		n = (size_t)(p - hs);
		if (n == 0)
			return es_errf(ES_ERR_INVAL, err, errsz, "URL \"%s\": host missing", url);
		if (n >= sizeof(out->host))
			return es_errf(ES_ERR_INVAL, err, errsz, "URL \"%s\": host too long", url);
		memcpy(out->host, hs, n);
		out->host[n] = '\0';
	}
	if (*p == ':') {
		unsigned long port = 0;
		const char *ps = ++p;
		while (isdigit((unsigned char)*p) && port <= 65535)
			port = port * 10 + (unsigned long)(*p++ - '0');
		if (p == ps || port == 0 || port > 65535 || isalnum((unsigned char)*p))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "URL \"%s\": port must be 1..65535", url);
		snprintf(out->port, sizeof(out->port), "%lu", port);
	} else {
		strcpy(out->port, "443");
	}
	if (*p && *p != '/' && *p != '?')
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "URL \"%s\": unexpected '%c' after host", url, *p);
	if (strchr(p, '#'))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "URL \"%s\": a fragment is not allowed", url);
	n = strlen(p);
	if (n + 2 > sizeof(out->path))
		return es_errf(ES_ERR_INVAL, err, errsz, "URL \"%s\": path too long", url);
	if (*p != '/')
		out->path[0] = '/';
	strcat(out->path, p);
	return ES_OK;
}

void es_http_resp_free(es_http_resp *resp)
{
	if (!resp)
		return;
	free(resp->body);
	memset(resp, 0, sizeof(*resp));
}

/* Finds the end of the head ("\r\n\r\n"); returns its length or 0. */
static size_t head_len(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i + 3 < len; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' &&
		    buf[i + 3] == '\n')
			return i + 4;
	return 0;
}

/* The first "\r\n" in buf[pos..len), or NULL. */
static const char *crlf_from(const char *buf, size_t pos, size_t len)
{
	size_t i;

	for (i = pos; i + 1 < len; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n')
			return buf + i;
	return NULL;
}

/* Value of header name in the head (case-insensitive), trimmed into out. */
static int header_get(const char *head, size_t hlen, const char *name,
		      char *out, size_t outsz)
{
	const char *line = memchr(head, '\n', hlen);
	size_t nlen = strlen(name);

	while (line && (size_t)(line - head) < hlen) {
		const char *ls = line + 1, *le;
		le = memchr(ls, '\n', hlen - (size_t)(ls - head));
		if (!le)
			break;
		if ((size_t)(le - ls) > nlen && strncasecmp(ls, name, nlen) == 0 &&
		    ls[nlen] == ':') {
			const char *v = ls + nlen + 1;
			size_t vl;
			while (v < le && (*v == ' ' || *v == '\t'))
				v++;
			vl = (size_t)(le - v);
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (vl >= outsz)
				vl = outsz - 1;
			memcpy(out, v, vl);
			out[vl] = '\0';
			return 1;
		}
		line = le;
	}
	return 0;
}

/* 1 when the Connection header value (RFC 9110 section 7.6.1) lists "close". */
static int conn_close(const char *v)
{
	while (*v) {
		size_t n;
		while (*v == ' ' || *v == '\t' || *v == ',')
			v++;
		n = strcspn(v, ", \t");
		if (n == 5 && strncasecmp(v, "close", 5) == 0)
			return 1;
		v += n;
	}
	return 0;
}

es_err es_http__parse(const char *buf, size_t len, int eof, es_http_framing *fr,
		      es_http_resp *resp, char *err, size_t errsz)
{
	size_t hl = head_len(buf, len), blen = 0, pos;
	char val[128];
	char *body = NULL;
	int status, chunked = 0, has_cl = 0;
	unsigned long long cl = 0;

	memset(fr, 0, sizeof(*fr));
	if (!hl) {
		if (len > ES_HTTP_MAX_HEAD)
			return es_errf(ES_ERR_TOOBIG, err, errsz,
				       "response head exceeds %u bytes", ES_HTTP_MAX_HEAD);
		if (eof)
			return es_errf(ES_ERR_PROTO, err, errsz,
				       "response truncated before the end of its headers");
		return ES_OK;
	}
	if (hl > ES_HTTP_MAX_HEAD)
		return es_errf(ES_ERR_TOOBIG, err, errsz,
			       "response head exceeds %u bytes", ES_HTTP_MAX_HEAD);
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)buf[7]) ||
	    buf[8] != ' ' || !isdigit((unsigned char)buf[9]) ||
	    !isdigit((unsigned char)buf[10]) || !isdigit((unsigned char)buf[11]) ||
	    (buf[12] != ' ' && buf[12] != '\r'))
		return es_errf(ES_ERR_PROTO, err, errsz,
			       "response is not HTTP/1.x (status line \"%.40s\")", buf);
	status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	if (status < 100 || status > 599)
		return es_errf(ES_ERR_PROTO, err, errsz, "response status %d out of range", status);
	fr->keep_alive = buf[7] == '1' &&
		!(header_get(buf, hl, "Connection", val, sizeof(val)) && conn_close(val));
	if (header_get(buf, hl, "Transfer-Encoding", val, sizeof(val))) {
		if (strcasecmp(val, "chunked") != 0)
			return es_errf(ES_ERR_PROTO, err, errsz,
				       "unsupported Transfer-Encoding \"%s\"", val);
		chunked = 1;
	} else if (header_get(buf, hl, "Content-Length", val, sizeof(val))) {
		char *end = NULL;
		errno = 0;
		cl = strtoull(val, &end, 10);
		if (!isdigit((unsigned char)val[0]) || *end || errno)
			return es_errf(ES_ERR_PROTO, err, errsz, "bad Content-Length \"%s\"", val);
		if (cl > ES_HTTP_MAX_BODY)
			return es_errf(ES_ERR_TOOBIG, err, errsz,
				       "response body of %llu bytes exceeds %u", cl, ES_HTTP_MAX_BODY);
		has_cl = 1;
	}
	if (status == 204 || status == 304 || status < 200) {
		has_cl = 1;
		cl = 0;
		chunked = 0;
	}
	body = calloc(1, (chunked ? len - hl : has_cl ? cl : len - hl) + 1);
	if (!body)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	if (chunked) {
		pos = hl;
		for (;;) {
			const char *le = crlf_from(buf, pos, len);
			char *end = NULL;
			unsigned long long sz;
			if (!le)
				goto incomplete;
			if (!isxdigit((unsigned char)buf[pos])) {
				free(body);
				return es_errf(ES_ERR_PROTO, err, errsz, "bad chunk size line");
			}
			errno = 0;
			sz = strtoull(buf + pos, &end, 16);
			if (errno || end > le || (*end != ';' && end != le)) {
				free(body);
				return es_errf(ES_ERR_PROTO, err, errsz, "bad chunk size line");
			}
			pos = (size_t)(le - buf) + 2;
			if (sz == 0) {
				/* trailer fields, then the empty line (RFC 9112 7.1.2) */
				for (;;) {
					const char *te = crlf_from(buf, pos, len);
					if (!te)
						goto incomplete;
					if (te == buf + pos) {
						pos += 2;
						break;
					}
					pos = (size_t)(te - buf) + 2;
				}
				break;
			}
			if (sz > ES_HTTP_MAX_BODY - blen) {
				free(body);
				return es_errf(ES_ERR_TOOBIG, err, errsz,
					       "response body exceeds %u bytes", ES_HTTP_MAX_BODY);
			}
			if (len - pos < sz + 2)
				goto incomplete;
			if (buf[pos + sz] != '\r' || buf[pos + sz + 1] != '\n') {
				free(body);
				return es_errf(ES_ERR_PROTO, err, errsz, "chunk not followed by CRLF");
			}
			memcpy(body + blen, buf + pos, sz);
			blen += sz;
			pos += sz + 2;
		}
	} else if (has_cl) {
		if (len - hl < cl)
			goto incomplete;
		memcpy(body, buf + hl, cl);
		blen = cl;
		pos = hl + cl;
	} else {
		if (!eof) {
			free(body);
			return ES_OK;
		}
		if (len - hl > ES_HTTP_MAX_BODY) {
			free(body);
			return es_errf(ES_ERR_TOOBIG, err, errsz,
				       "response body exceeds %u bytes", ES_HTTP_MAX_BODY);
		}
		memcpy(body, buf + hl, len - hl);
		blen = len - hl;
		pos = len;
		fr->keep_alive = 0;
	}
	body[blen] = '\0';
	resp->status = status;
	resp->body = body;
	resp->body_len = blen;
	fr->complete = 1;
	fr->used = pos;
	return ES_OK;

incomplete:
	free(body);
	if (eof)
		return es_errf(ES_ERR_PROTO, err, errsz, "response body truncated");
	return ES_OK;
}

es_err es_http_parse_response(const char *buf, size_t len, es_http_resp *resp,
			      char *err, size_t errsz)
{
	es_http_framing fr;
	es_err rc;

	memset(resp, 0, sizeof(*resp));
	rc = es_http__parse(buf, len, 1, &fr, resp, err, errsz);
	if (rc == ES_OK && !fr.complete)
		rc = es_errf(ES_ERR_PROTO, err, errsz, "response truncated");
	return rc;
}
