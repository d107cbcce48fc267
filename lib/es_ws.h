/*
 * es_ws.h - writing sync protocol messages with libwebsockets, shared by
 * both ends (proto/PROTOCOL.md, "Transport").
 */
#ifndef ES_WS_H
#define ES_WS_H

#include <libwebsockets.h>

/*
 * The message buffer of a connection's last write. With a WebSocket
 * extension such as permessage-deflate, lws_write processes a message in
 * 1 KiB pieces and, when it does not fit, keeps reading the caller's buffer
 * from later POLLOUT events (tx_draining_ext, lib/roles/ws/ops-ws.c
 * "Priority 5") before it calls the next WRITEABLE callback; without one it
 * copies what it cannot send. Holding the buffer until the next write or
 * the close is right in both cases. Zero-initialize; one per connection.
 */
typedef struct es_ws_held {
	void *block;
} es_ws_held;

/*
 * Writes len bytes at payload (inside block, with LWS_PRE bytes of headroom
 * before it) as one text message on wsi, and holds block (malloc'd; always
 * taken over, also on failure) until the next es_ws_send or es_ws_release
 * on h, freeing the block held before. Call only from wsi's WRITEABLE
 * callback, once per callback. Returns 0, or -1 when lws_write failed or
 * wrote less than len (close the connection).
 */
int es_ws_send(es_ws_held *h, struct lws *wsi, void *block, unsigned char *payload,
	       size_t len);

/* Frees the held block: call once the connection is closed (libwebsockets
 * no longer drains it) and when the owner goes away. NULL-safe; idempotent. */
void es_ws_release(es_ws_held *h);

#endif
