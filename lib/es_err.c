/*
 * es_err.c - names of the error codes and the caller-buffer message helper.
 */
#include <stdarg.h>
#include <stdio.h>

#include "es_err.h"

const char *es_strerror(es_err err)
{
	switch (err) {
	case ES_OK: return "success";
	case ES_ERR_NOMEM: return "out of memory";
	case ES_ERR_INVAL: return "invalid argument";
	case ES_ERR_IO: return "input/output error";
	case ES_ERR_NOTFOUND: return "not found";
	case ES_ERR_EXISTS: return "already exists";
	case ES_ERR_PARSE: return "parse error";
	case ES_ERR_TOOBIG: return "too big";
	case ES_ERR_DB: return "database error";
	case ES_ERR_TLS: return "tls error";
	case ES_ERR_AUTH: return "authentication refused";
	case ES_ERR_PROTO: return "protocol violation";
	case ES_ERR_UNSUPPORTED: return "not supported";
	case ES_ERR_CONFLICT: return "conflict";
	case ES_ERR_STATE: return "invalid state";
	}
	return "unknown error";
}

es_err es_errf(es_err err, char *buf, unsigned long size, const char *fmt, ...)
{
	va_list ap;

	if (buf == NULL || size == 0)
		return err;
	va_start(ap, fmt);
	if (vsnprintf(buf, size, fmt, ap) < 0)
		buf[0] = '\0';
	va_end(ap);
	return err;
}
