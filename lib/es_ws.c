/*
 * es_ws.c - writing sync protocol messages (es_ws.h).
 */
#include "es_ws.h"

#include <stdlib.h>

int es_ws_send(es_ws_held *h, struct lws *wsi, void *block, unsigned char *payload,
	       size_t len)
{
	int n;

	/* A WRITEABLE callback runs only once the previous message is
	 * drained: what was held is no longer read. */
	es_ws_release(h);
	h->block = block;
	n = lws_write(wsi, payload, len, LWS_WRITE_TEXT);
	return n < 0 || (size_t)n < len ? -1 : 0;
}

void es_ws_release(es_ws_held *h)
{
	if (!h)
		return;
	free(h->block);
	h->block = NULL;
}
