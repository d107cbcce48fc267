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

#endif
