/*
 * http_int.h - response framing shared by http.c and http_client.c; not
 * part of the esctl interface.
 */
#ifndef ES_CTL_HTTP_INT_H
#define ES_CTL_HTTP_INT_H

#include <stddef.h>
#include "http.h"

typedef struct es_http_framing {
	int complete;   /* 1: the response is whole and resp is filled */
	int keep_alive; /* 1: the connection may carry another request (HTTP/1.1,
			   no "Connection: close", body not delimited by EOF) */
	size_t used;    /* bytes of buf the response took (when complete) */
} es_http_framing;

/*
 * Parses the response at the start of buf (len bytes; eof: no more will
 * come). When fr->complete is 0 and eof is 0 the caller reads more. Framing
 * per RFC 9112 section 6.3: no body for 1xx/204/304, else chunked,
 * Content-Length, or up to the end of the connection. Errors as
 * es_http_parse_response.
 */
es_err es_http__parse(const char *buf, size_t len, int eof, es_http_framing *fr,
		      es_http_resp *resp, char *err, size_t errsz);

#endif
