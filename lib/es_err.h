/*
 * es_err.h - the one error enum of edgesync.
 *
 * Every public function of the project returns an es_err (or documents
 * another convention). Values are explicit and stable; ES_OK is 0.
 */
#ifndef ES_ERR_H
#define ES_ERR_H

typedef enum es_err {
	ES_OK = 0,
	ES_ERR_NOMEM = 1,     /* an allocation failed */
	ES_ERR_INVAL = 2,     /* bad argument or bad input (message says which) */
	ES_ERR_IO = 3,        /* a file or socket operation failed (errno kept) */
	ES_ERR_NOTFOUND = 4,  /* the named thing does not exist */
	ES_ERR_EXISTS = 5,    /* the named thing already exists */
	ES_ERR_PARSE = 6,     /* input is not well-formed (JSON, YAML, PEM, ...) */
	ES_ERR_TOOBIG = 7,    /* input exceeds a documented limit */
	ES_ERR_DB = 8,        /* SQLite reported an error */
	ES_ERR_TLS = 9,       /* mbedTLS reported an error */
	ES_ERR_AUTH = 10,     /* identity or certificate refused */
	ES_ERR_PROTO = 11,    /* protocol violation by the peer */
	ES_ERR_UNSUPPORTED = 12, /* valid but not supported here */
	ES_ERR_CONFLICT = 13, /* state changed underneath (stale version) */
	ES_ERR_STATE = 14,    /* operation not valid in the current state */
} es_err;

/* Returns a static, lower-case, human-readable name for err ("out of memory").
 * Never NULL; unknown values give "unknown error". */
const char *es_strerror(es_err err);

/*
 * Writes a formatted message into a caller-supplied buffer, the pattern used
 * everywhere a caller needs to know what was wrong. buf may be NULL (then
 * nothing is written); the message is truncated to size-1 bytes and always
 * NUL-terminated when size > 0. Returns err unchanged so callers can write
 * `return es_errf(ES_ERR_INVAL, err, errsz, "bad %s", key);`.
 */
es_err es_errf(es_err err, char *buf, unsigned long size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
