/*
 * es_buf.c - the growable byte buffer (see es_buf.h).
 *
 * Capacity starts at 64 bytes and doubles, cut to bound + 1 when the buffer
 * has a bound; every allocation goes through realloc.
 */
#include "es_buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ES_BUF_MIN_CAP 64

static es_err fail(es_buf *b, es_err err)
{
	b->err = err;
	return err;
}

void es_buf_init(es_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

es_err es_buf_reserve(es_buf *b, size_t n)
{
	size_t need, ncap;
	char *np;

	if (b->err != ES_OK)
		return b->err;
	if (n > SIZE_MAX - 1 - b->len)
		return fail(b, ES_ERR_NOMEM);
	need = b->len + n + 1;
	if (b->max != 0 && need - 1 > b->max)
		return fail(b, ES_ERR_TOOBIG);
	if (need <= b->cap)
		return ES_OK;
	ncap = b->cap ? b->cap : ES_BUF_MIN_CAP;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2) {
			ncap = need;
			break;
		}
		ncap *= 2;
	}
	if (b->max != 0 && b->max < SIZE_MAX && ncap > b->max + 1)
		ncap = b->max + 1;
	np = realloc(b->p, ncap);
	if (np == NULL)
		return fail(b, ES_ERR_NOMEM);
	np[b->len] = '\0';
	b->p = np;
	b->cap = ncap;
	return ES_OK;
}

void es_buf_commit(es_buf *b, size_t n)
{
	if (b->p == NULL)
		return;
	b->len += n;
	b->p[b->len] = '\0';
}

es_err es_buf_append(es_buf *b, const void *data, size_t n)
{
	es_err rc = es_buf_reserve(b, n);

	if (rc != ES_OK)
		return rc;
	if (n > 0)
		memcpy(b->p + b->len, data, n);
	es_buf_commit(b, n);
	return ES_OK;
}

es_err es_buf_append_str(es_buf *b, const char *s)
{
	return es_buf_append(b, s, strlen(s));
}

es_err es_buf_vappendf(es_buf *b, const char *fmt, va_list ap)
{
	size_t room = b->p != NULL ? b->cap - b->len : 0;
	va_list cp;
	es_err rc;
	int n;

	if (b->err != ES_OK)
		return b->err;
	/* First try the room there is; a copy of ap, as a second pass may be
	 * needed. */
	va_copy(cp, ap);
	n = vsnprintf(room ? b->p + b->len : NULL, room, fmt, cp);
	va_end(cp);
	if (n >= 0 && (size_t)n < room && (b->max == 0 || (size_t)n <= b->max - b->len)) {
		b->len += (size_t)n;
		return ES_OK;
	}
	if (b->p != NULL)
		b->p[b->len] = '\0';
	if (n < 0)
		return fail(b, ES_ERR_INVAL);
	rc = es_buf_reserve(b, (size_t)n);
	if (rc != ES_OK)
		return rc;
	if (vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap) != n) {
		b->p[b->len] = '\0';
		return fail(b, ES_ERR_INVAL);
	}
	b->len += (size_t)n;
	return ES_OK;
}

es_err es_buf_appendf(es_buf *b, const char *fmt, ...)
{
	va_list ap;
	es_err rc;

	va_start(ap, fmt);
	rc = es_buf_vappendf(b, fmt, ap);
	va_end(ap);
	return rc;
}

char *es_buf_detach(es_buf *b, size_t *len)
{
	char *p = b->p;

	if (len != NULL)
		*len = b->len;
	es_buf_init(b, b->max);
	return p;
}

void es_buf_reset(es_buf *b)
{
	b->len = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
	b->err = ES_OK;
}

void es_buf_free(es_buf *b)
{
	if (b == NULL)
		return;
	free(b->p);
	es_buf_init(b, b->max);
}
