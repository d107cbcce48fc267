/*
 * evloop_uv.h - one turn of the libuv loop libwebsockets made for a
 * context created with LWS_SERVER_OPTION_LIBUV (es_server_opts.uv_run_once,
 * net/server.h). Compiled only into the edgesync-controller program, and
 * only when it is linked with libwebsockets' libuv build
 * (ES_CONTROLLER_LIBUV, cmake/EsThirdParty.cmake): the controller library
 * and its tests stay on the poll loop and do not link libuv.
 */
#ifndef ES_CTRL_EVLOOP_UV_H
#define ES_CTRL_EVLOOP_UV_H

struct lws_context;

/*
 * Runs one turn of ctx's libuv loop (uv_run with UV_RUN_ONCE): waits in
 * epoll until a socket, timer (lws_sul), signal or lws_cancel_service
 * wakes it and runs what is ready. ctx must have been made with
 * LWS_SERVER_OPTION_LIBUV and not be destroyed yet.
 */
void es_evloop_uv_run_once(struct lws_context *ctx);

/* The version of the libuv the program runs with ("1.44.2"), static. */
const char *es_evloop_uv_version(void);

#endif
