/*
 * es_ws.h - WebSocket transport settings shared by both ends of the sync
 * protocol (proto/PROTOCOL.md, "Transport"): the extensions offered and
 * accepted, and how each side sizes its compressor.
 */
#ifndef ES_WS_H
#define ES_WS_H

#include <libwebsockets.h>

/*
 * permessage-deflate (RFC 7692) compressor size: zlib memLevel
 * ES_WS_DEFLATE_MEM_LEVEL on both sides, and on the agent an LZ77 window of
 * 2^ES_WS_DEFLATE_CLIENT_WINDOW_BITS bytes. zlib's deflate state is about
 * 2^(windowBits+2) + 2^(memLevel+9) bytes (zlib.h, deflateInit2): 80 KiB on
 * the agent and 144 KiB per agent on the controller, against 256 KiB with
 * zlib's defaults (windowBits 15, memLevel 8), for sync reports about 2%
 * larger. A sender may use a smaller window than the one negotiated (RFC
 * 7692 section 7.1.2), so the peer needs no agreement for this. The
 * controller keeps window 15: libwebsockets sizes its own inflater from the
 * same setting, and a client may send with a 32 KiB window.
 */
#define ES_WS_DEFLATE_CLIENT_WINDOW_BITS 14
#define ES_WS_DEFLATE_MEM_LEVEL 5

/* The extension list for lws_context_creation_info.extensions on both the
 * agent's client vhost and the controller's agent vhost: permessage-deflate,
 * offered with client_max_window_bits. Static; never freed. */
extern const struct lws_extension es_ws_extensions[];

/*
 * Sizes wsi's permessage-deflate compressor as said above. Call it when the
 * connection is established (LWS_CALLBACK_ESTABLISHED or
 * LWS_CALLBACK_CLIENT_ESTABLISHED), before the first message is written:
 * libwebsockets sets the compressor up at the first compressed write
 * (lib/roles/ws/ext/extension-permessage-deflate.c), and compresses with
 * client_max_window_bits on a client. Returns 1 when sized, 0 when the peer
 * did not negotiate permessage-deflate (nothing to size). No errors.
 */
int es_ws_deflate_tune(struct lws *wsi);

/*
 * The message buffer of a connection's last write. With permessage-deflate
 * lws_write compresses into a 1 KiB buffer; when a message does not fit,
 * libwebsockets keeps reading the caller's buffer from later POLLOUT events
 * (tx_draining_ext, lib/roles/ws/ops-ws.c "Priority 5"), before it calls
 * the next WRITEABLE callback. So the buffer must outlive lws_write until
 * that callback, or until the connection is closed. Zero-initialize; one per
 * connection.
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
