/*
 * es_http_parse.c - the incremental HTTP/1.1 response parser (see
 * es_http.h, es_http_parser_*).
 *
 * Each byte fed is looked at once: head and chunk-size lines are gathered
 * in line[] until their CRLF, body bytes are copied into the body as they
 * come. Nothing is rescanned from the start of the response.
 */
#include "es_http.h"
#include "es_buf.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum pstate {
	ST_HEAD,       /* status line and header fields, up to the empty line */
	ST_BODY_LEN,   /* Content-Length body: want bytes left */
	ST_BODY_EOF,   /* body up to the end of the connection */
	ST_CHUNK_SIZE, /* chunk-size [; extensions] CRLF */
	ST_CHUNK_DATA, /* want bytes of chunk data left */
	ST_CHUNK_CRLF, /* the CRLF after chunk data; want bytes of it left */
	ST_TRAILER,    /* trailer fields, up to the empty line */
	ST_DONE,
	ST_FAILED,
} pstate;

struct es_http_parser {
	pstate st;
	size_t max_body;
	uint64_t want;    /* bytes left of the state's part */
	int status;       /* of the final response; 0 before its head */
	int keep_alive;
	size_t trailer;   /* bytes of trailer fields so far */
	es_buf body;      /* the body so far, bounded by max_body */
	size_t llen;      /* bytes in line[] */
	char line[ES_HTTP_MAX_HEAD]; /* the head, or the current line */
};

void es_http_resp_free(es_http_resp *resp)
{
	if (!resp)
		return;
	free(resp->body);
	memset(resp, 0, sizeof(*resp));
}

es_err es_http_parser_new(size_t max_body, es_http_parser **out)
{
	es_http_parser *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return ES_ERR_NOMEM;
	p->max_body = max_body ? max_body : ES_HTTP_MAX_BODY;
	es_buf_init(&p->body, p->max_body);
	p->st = ST_HEAD;
	*out = p;
	return ES_OK;
}

void es_http_parser_free(es_http_parser *p)
{
	if (!p)
		return;
	es_buf_free(&p->body);
	free(p);
}

int es_http_parser_done(const es_http_parser *p)
{
	return p->st == ST_DONE;
}

int es_http_parser_status(const es_http_parser *p)
{
	return p->status;
}

static es_err fail(es_http_parser *p, es_err rc, char *err, size_t errsz,
		   const char *what)
{
	p->st = ST_FAILED;
	return es_errf(rc, err, errsz, "%s", what);
}

static es_err body_add(es_http_parser *p, const char *data, size_t n,
		       char *err, size_t errsz)
{
	if (n > p->max_body - p->body.len) {
		p->st = ST_FAILED;
		return es_errf(ES_ERR_TOOBIG, err, errsz,
			       "response body exceeds %zu bytes", p->max_body);
	}
	if (es_buf_append(&p->body, data, n) != ES_OK)
		return fail(p, ES_ERR_NOMEM, err, errsz, "out of memory");
	return ES_OK;
}

/* Value of the nth (from 0) header field called name (case-insensitive)
 * in the head, trimmed of spaces and tabs into out (cut to outsz - 1); 1
 * when present. The head is line[0..llen) and ends in the empty line. */
static int header_nth(const es_http_parser *p, const char *name, int nth,
		      char *out, size_t outsz)
{
	const char *head = p->line, *end = p->line + p->llen;
	const char *ls = memchr(head, '\n', p->llen);
	size_t nlen = strlen(name);

	while (ls && ++ls < end) {
		const char *le = memchr(ls, '\n', (size_t)(end - ls));
		const char *v;
		size_t vl;

		if (!le)
			break;
		if ((size_t)(le - ls) > nlen && !strncasecmp(ls, name, nlen) &&
		    ls[nlen] == ':' && nth-- == 0) {
			v = ls + nlen + 1;
			while (v < le && (*v == ' ' || *v == '\t'))
				v++;
			vl = (size_t)(le - v);
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' ' ||
				      v[vl - 1] == '\t'))
				vl--;
			if (vl >= outsz)
				vl = outsz - 1;
			memcpy(out, v, vl);
			out[vl] = '\0';
			return 1;
		}
		ls = le;
	}
	return 0;
}

/* The first header field called name; as header_nth. */
static int header_get(const es_http_parser *p, const char *name, char *out,
		      size_t outsz)
{
	return header_nth(p, name, 0, out, outsz);
}

/* One member of a Content-Length value (m, ml bytes, trimmed): its number
 * into *v; ES_ERR_PROTO when it is not decimal digits, ES_ERR_TOOBIG over
 * max_body. */
static es_err cl_member(const es_http_parser *p, const char *m, size_t ml,
			unsigned long long *v)
{
	size_t i;

	*v = 0;
	if (ml == 0)
		return ES_ERR_PROTO;
	for (i = 0; i < ml; i++)
		if (!isdigit((unsigned char)m[i]))
			return ES_ERR_PROTO;
	for (i = 0; i < ml && *v <= p->max_body; i++)
		*v = *v * 10 + (unsigned long long)(m[i] - '0');
	return i < ml || *v > p->max_body ? ES_ERR_TOOBIG : ES_OK;
}

/*
 * The body length the Content-Length fields give into *cl, *has 1; *has 0
 * without the field. The field may be repeated and hold a comma-separated
 * list (RFC 9110 section 8.6): every member must be the same decimal
 * number, else the framing is invalid and the response is refused (RFC
 * 9112 section 6.3, item 5). Errors: ES_ERR_PROTO (a member that is not a
 * number, or differing members), ES_ERR_TOOBIG (over max_body).
 */
static es_err content_length(const es_http_parser *p, unsigned long long *cl,
			     int *has, char *err, size_t errsz)
{
	char val[128], first[24] = "";
	unsigned long long v;
	es_err rc;
	int n;

	*cl = 0;
	*has = 0;
	for (n = 0; header_nth(p, "Content-Length", n, val, sizeof(val)); n++) {
		const char *m = val, *e;
		size_t ml;

		for (;;) {
			e = m + strcspn(m, ",");
			while (*m == ' ' || *m == '\t')
				m++;
			ml = (size_t)(e - m);
			while (ml && (m[ml - 1] == ' ' || m[ml - 1] == '\t'))
				ml--;
			rc = cl_member(p, m, ml, &v);
			if (rc == ES_ERR_TOOBIG)
				return es_errf(rc, err, errsz,
					       "response body of %.*s bytes exceeds %zu",
					       (int)ml, m, p->max_body);
			if (rc != ES_OK)
				return es_errf(rc, err, errsz,
					       "bad Content-Length \"%s\"", val);
			if (*has && v != *cl)
				return es_errf(ES_ERR_PROTO, err, errsz,
					       "differing Content-Length values \"%s\" "
					       "and \"%.*s\" (RFC 9112 section 6.3)",
					       first, (int)ml, m);
			if (!*has)
				snprintf(first, sizeof(first), "%.*s", (int)ml, m);
			*cl = v;
			*has = 1;
			if (!*e)
				break;
			m = e + 1;
		}
	}
	return ES_OK;
}

/* 1 when the Connection field value (RFC 9110 section 7.6.1) lists
 * "close". */
static int conn_close(const char *v)
{
	while (*v) {
		size_t n;

		while (*v == ' ' || *v == '\t' || *v == ',')
			v++;
		n = strcspn(v, ", \t");
		if (n == 5 && !strncasecmp(v, "close", 5))
			return 1;
		v += n;
	}
	return 0;
}

/* The head is whole in line[]: status line, framing, the next state. */
static es_err head_done(es_http_parser *p, char *err, size_t errsz)
{
	const char *b = p->line;
	char val[128];
	int status, chunked = 0, has_cl = 0;
	unsigned long long cl = 0;

	if (p->llen < 13 || strncmp(b, "HTTP/1.", 7) || !isdigit((unsigned char)b[7]) ||
	    b[8] != ' ' || !isdigit((unsigned char)b[9]) ||
	    !isdigit((unsigned char)b[10]) || !isdigit((unsigned char)b[11]) ||
	    (b[12] != ' ' && b[12] != '\r')) {
		p->st = ST_FAILED;
		return es_errf(ES_ERR_PROTO, err, errsz,
			       "response is not HTTP/1.x (status line \"%.40s\")", b);
	}
	status = (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
	if (status < 100 || status > 599) {
		p->st = ST_FAILED;
		return es_errf(ES_ERR_PROTO, err, errsz,
			       "response status %d out of range", status);
	}
	if (status == 101)
		return fail(p, ES_ERR_PROTO, err, errsz,
			    "unexpected 101 Switching Protocols (no upgrade was asked for)");
	if (status < 200) {
		/* interim response: the final one follows (RFC 9110 15.2) */
		p->llen = 0;
		return ES_OK;
	}
	p->status = status;
	p->keep_alive = b[7] == '1' &&
		!(header_get(p, "Connection", val, sizeof(val)) && conn_close(val));
	if (header_get(p, "Transfer-Encoding", val, sizeof(val))) {
		if (strcasecmp(val, "chunked")) {
			p->st = ST_FAILED;
			return es_errf(ES_ERR_PROTO, err, errsz,
				       "unsupported Transfer-Encoding \"%s\"", val);
		}
		chunked = 1;
	} else {
		es_err rc = content_length(p, &cl, &has_cl, err, errsz);

		if (rc != ES_OK) {
			p->st = ST_FAILED;
			return rc;
		}
	}
	p->llen = 0;
	if (status == 204 || status == 304 || (has_cl && cl == 0)) {
		p->st = ST_DONE;
	} else if (chunked) {
		p->st = ST_CHUNK_SIZE;
	} else if (has_cl) {
		if (es_buf_reserve(&p->body, (size_t)cl) != ES_OK)
			return fail(p, ES_ERR_NOMEM, err, errsz, "out of memory");
		p->want = cl;
		p->st = ST_BODY_LEN;
	} else {
		p->keep_alive = 0;
		p->st = ST_BODY_EOF;
	}
	return ES_OK;
}

/* A chunk-size line is whole in line[] (with its CRLF). */
static es_err chunk_size_done(es_http_parser *p, char *err, size_t errsz)
{
	const char *s = p->line, *e = p->line + p->llen - 2;
	uint64_t sz = 0;

	if (!isxdigit((unsigned char)*s))
		return fail(p, ES_ERR_PROTO, err, errsz, "bad chunk size line");
	for (; s < e && isxdigit((unsigned char)*s); s++) {
		if (sz > p->max_body)
			break;
		sz = sz * 16 + (uint64_t)(isdigit((unsigned char)*s) ? *s - '0'
						: (tolower((unsigned char)*s) - 'a' + 10));
	}
	if (sz > p->max_body - p->body.len) {
		p->st = ST_FAILED;
		return es_errf(ES_ERR_TOOBIG, err, errsz,
			       "response body exceeds %zu bytes", p->max_body);
	}
	if (s < e && *s != ';')
		return fail(p, ES_ERR_PROTO, err, errsz, "bad chunk size line");
	p->llen = 0;
	if (sz == 0) {
		p->st = ST_TRAILER;
		return ES_OK;
	}
	if (es_buf_reserve(&p->body, (size_t)sz) != ES_OK)
		return fail(p, ES_ERR_NOMEM, err, errsz, "out of memory");
	p->want = sz;
	p->st = ST_CHUNK_DATA;
	return ES_OK;
}

/* Adds one byte of a line-based part (head, chunk-size line, trailer) and
 * acts on a finished line. */
static es_err line_byte(es_http_parser *p, char c, char *err, size_t errsz)
{
	if (p->st == ST_TRAILER && p->trailer >= ES_HTTP_MAX_HEAD)
		return fail(p, ES_ERR_TOOBIG, err, errsz,
			    "response trailer fields exceed the head limit");
	if (p->llen == sizeof(p->line)) {
		const char *what = p->st == ST_HEAD ? "head" : "chunk size line";

		p->st = ST_FAILED;
		return es_errf(ES_ERR_TOOBIG, err, errsz, "response %s exceeds %u bytes",
			       what, ES_HTTP_MAX_HEAD);
	}
	p->line[p->llen++] = c;
	if (p->st == ST_TRAILER)
		p->trailer++;
	if (c != '\n' || p->llen < 2 || p->line[p->llen - 2] != '\r')
		return ES_OK;
	switch (p->st) {
	case ST_HEAD:
		/* the head ends with an empty line: CRLF CRLF */
		if (p->llen >= 4 && p->line[p->llen - 3] == '\n' &&
		    p->line[p->llen - 4] == '\r')
			return head_done(p, err, errsz);
		return ES_OK;
	case ST_CHUNK_SIZE:
		return chunk_size_done(p, err, errsz);
	default: /* ST_TRAILER: fields are dropped, an empty line ends them */
		if (p->llen == 2)
			p->st = ST_DONE;
		p->llen = 0;
		return ES_OK;
	}
}

es_err es_http_parser_feed(es_http_parser *p, const char *data, size_t len,
			   size_t *used, char *err, size_t errsz)
{
	size_t i = 0, n;
	es_err rc = ES_OK;

	*used = 0;
	if (p->st == ST_FAILED)
		return es_errf(ES_ERR_STATE, err, errsz, "the response already failed");
	while (i < len && rc == ES_OK && p->st != ST_DONE) {
		switch (p->st) {
		case ST_BODY_LEN:
		case ST_CHUNK_DATA:
			n = len - i < p->want ? len - i : (size_t)p->want;
			rc = body_add(p, data + i, n, err, errsz);
			i += n;
			p->want -= n;
			if (rc == ES_OK && p->want == 0) {
				if (p->st == ST_BODY_LEN) {
					p->st = ST_DONE;
				} else {
					p->st = ST_CHUNK_CRLF;
					p->want = 2;
				}
			}
			break;
		case ST_BODY_EOF:
			rc = body_add(p, data + i, len - i, err, errsz);
			i = len;
			break;
		case ST_CHUNK_CRLF:
			if (data[i] != (p->want == 2 ? '\r' : '\n'))
				return fail(p, ES_ERR_PROTO, err, errsz,
					    "chunk not followed by CRLF");
			i++;
			if (--p->want == 0)
				p->st = ST_CHUNK_SIZE;
			break;
		default:
			rc = line_byte(p, data[i++], err, errsz);
			break;
		}
	}
	*used = i;
	return rc;
}

es_err es_http_parser_eof(es_http_parser *p, char *err, size_t errsz)
{
	switch (p->st) {
	case ST_DONE:
		return ES_OK;
	case ST_BODY_EOF:
		p->st = ST_DONE;
		return ES_OK;
	case ST_HEAD:
		return fail(p, ES_ERR_PROTO, err, errsz,
			    "response truncated before the end of its headers");
	case ST_FAILED:
		return es_errf(ES_ERR_STATE, err, errsz, "the response already failed");
	default:
		return fail(p, ES_ERR_PROTO, err, errsz, "response body truncated");
	}
}

es_err es_http_parser_take(es_http_parser *p, es_http_resp *resp,
			   int *keep_alive)
{
	memset(resp, 0, sizeof(*resp));
	if (p->st != ST_DONE)
		return ES_ERR_STATE;
	if (es_buf_reserve(&p->body, 0) != ES_OK)
		return ES_ERR_NOMEM;
	resp->status = p->status;
	resp->body = es_buf_detach(&p->body, &resp->body_len);
	if (keep_alive)
		*keep_alive = p->keep_alive;
	return ES_OK;
}
