/*
 * evloop_uv.c - one turn of a libwebsockets context's libuv loop
 * (evloop_uv.h).
 */
#include <uv.h> /* before libwebsockets.h: it declares lws_uv_getloop then */

#include "evloop_uv.h"

#include <libwebsockets.h>

void es_evloop_uv_run_once(struct lws_context *ctx)
{
	uv_loop_t *loop = lws_uv_getloop(ctx, 0);

	if (loop)
		(void)uv_run(loop, UV_RUN_ONCE);
}

const char *es_evloop_uv_version(void)
{
	return uv_version_string();
}
