/*
 * es_ws.c - WebSocket transport settings shared by the agent and the
 * controller (es_ws.h).
 */
#include "es_ws.h"

#include <stdio.h>
#include <stdlib.h>

#define EXT_NAME "permessage-deflate"

const struct lws_extension es_ws_extensions[] = {
	{ EXT_NAME, lws_extension_callback_pm_deflate,
	  EXT_NAME "; client_max_window_bits" },
	{ NULL, NULL, NULL }
};

int es_ws_deflate_tune(struct lws *wsi)
{
	char v[8];

	/* lws_set_extension_option fails only when the extension is not
	 * active on wsi; an option it does not know is ignored. */
	snprintf(v, sizeof(v), "%d", ES_WS_DEFLATE_MEM_LEVEL);
	if (lws_set_extension_option(wsi, EXT_NAME, "mem_level", v) < 0)
		return 0;
	snprintf(v, sizeof(v), "%d", ES_WS_DEFLATE_CLIENT_WINDOW_BITS);
	lws_set_extension_option(wsi, EXT_NAME, "client_max_window_bits", v);
	return 1;
}

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
