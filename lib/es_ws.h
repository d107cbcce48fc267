/*
 * es_ws.h - writing sync protocol messages with libwebsockets, shared by
 * both ends (proto/PROTOCOL.md, "Transport").
 */
#ifndef ES_WS_H
#define ES_WS_H

#include <libwebsockets.h>

/*
 * Writes len bytes at payload (with LWS_PRE bytes of headroom before it)
 * as one text message on wsi. Call from wsi's WRITEABLE callback, once per
 * callback. The caller may free the buffer on return: no WebSocket
 * extension is negotiated, so lws_write has sent the message or copied
 * what it could not send (lib/core-net/output.c, lws_issue_raw). With an
 * extension such as permessage-deflate it would keep reading the caller's
 * buffer on later writable events (lib/roles/ws/ops-ws.c, "Priority 5"),
 * which PROTOCOL.md "Transport" rules out. Returns 0, or -1 when lws_write
 * failed or wrote less than len (close the connection).
 */
int es_ws_send(struct lws *wsi, unsigned char *payload, size_t len);

#endif
