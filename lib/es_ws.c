/*
 * es_ws.c - WebSocket transport settings shared by the agent and the
 * controller (es_ws.h).
 */
#include "es_ws.h"

#include <stdio.h>

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
