/*
 * es_buf.h - a growable byte buffer for building text and collecting bytes.
 *
 * The bytes are kept NUL-terminated (the NUL is not counted in len), so a
 * buffer of text can be handed over as a C string. Growth can be bounded:
 * with a bound, the buffer never holds more than that many bytes.
 *
 * Errors are sticky: when an append fails, the buffer keeps the bytes it had
 * (still valid, still NUL-terminated), remembers the error in err, and
 * every later append or reserve returns that same error and changes
 * nothing, until es_buf_reset or es_buf_free. A builder can therefore
 * append many pieces and check err once at the end.
 *
 * A zeroed es_buf (es_buf b = { 0 };) is an empty, unbounded buffer.
 */
#ifndef ES_BUF_H
#define ES_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "es_err.h"

typedef struct es_buf {
	char *p;    /* the bytes, NUL-terminated; NULL until the first
		     * successful append or reserve */
	size_t len; /* bytes held, not counting the NUL */
	size_t cap; /* bytes allocated at p, the NUL included */
	size_t max; /* most bytes len may reach; 0: no bound */
	es_err err; /* first failure since the last reset, or ES_OK */
} es_buf;

/* Makes b empty with room for at most max bytes (0: no bound). Allocates
 * nothing. b must not hold memory (use es_buf_free first). */
void es_buf_init(es_buf *b, size_t max);

/*
 * Makes room for n more bytes after b->len (and the NUL after them), so a
 * caller may write up to n bytes at b->p + b->len and then count them with
 * es_buf_commit. Allocates even for n == 0 when nothing is allocated yet
 * (then b->p is "").
 * Errors (sticky, b unchanged): ES_ERR_TOOBIG when b->len + n exceeds the
 * bound; ES_ERR_NOMEM when the memory cannot be had (or the size would
 * overflow); an earlier error of b.
 */
es_err es_buf_reserve(es_buf *b, size_t n);

/* Counts n bytes the caller wrote at b->p + b->len after es_buf_reserve
 * (b, m) with m >= n returned ES_OK, and writes the NUL after them. */
void es_buf_commit(es_buf *b, size_t n);

/* Appends n bytes of data (may hold NULs; data may be NULL when n is 0).
 * Errors as es_buf_reserve; on error nothing is appended. */
es_err es_buf_append(es_buf *b, const void *data, size_t n);

/* Appends the C string s (without its NUL). Errors as es_buf_append. */
es_err es_buf_append_str(es_buf *b, const char *s);

/*
 * Appends printf-style formatted text (C11 7.21.6.1 formats), of any length.
 * Errors as es_buf_reserve, and ES_ERR_INVAL when vsnprintf refuses the
 * format or the arguments (an encoding error); on error nothing is
 * appended.
 */
es_err es_buf_appendf(es_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* es_buf_appendf with a va_list (consumed as by vsnprintf). */
es_err es_buf_vappendf(es_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/*
 * Hands the bytes over: returns b->p, which the caller now owns and frees
 * with free() (NULL when nothing was ever appended or reserved), and stores
 * b->len in *len when len is not NULL. b is left empty with its bound and
 * its error cleared. Check b->err first: after an error the bytes are only
 * what was appended before it.
 */
char *es_buf_detach(es_buf *b, size_t *len);

/* Empties b for reuse: len 0, text "", error cleared; keeps its memory and
 * its bound. */
void es_buf_reset(es_buf *b);

/* Frees b's memory and leaves b empty with its bound (ready for reuse).
 * NULL-safe. */
void es_buf_free(es_buf *b);

#endif
