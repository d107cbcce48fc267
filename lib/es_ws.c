/*
 * es_ws.c - writing sync protocol messages (es_ws.h).
 */
#include "es_ws.h"

int es_ws_send(struct lws *wsi, unsigned char *payload, size_t len)
{
	int n = lws_write(wsi, payload, len, LWS_WRITE_TEXT);

	return n < 0 || (size_t)n < len ? -1 : 0;
}
