/*
 * es_ws.h - the WebSocket side of the sync protocol, shared by both ends
 * (proto/PROTOCOL.md, "Transport" and "Limits"): reassembling a received
 * message from its fragments, the per-connection queue of outgoing
 * messages, and writing one message with libwebsockets.
 *
 * Everything here runs on the thread of the connection's lws context.
 */
#ifndef ES_WS_H
#define ES_WS_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include "es_buf.h"
#include "es_err.h"
#include "es_proto.h"

/* Bytes of messages the controller queues for one agent connection
 * (PROTOCOL.md "Limits": 16 MiB). */
#define ES_WS_SEND_QUEUE_MAX (16u * 1024 * 1024)

/*
 * Writes len bytes at payload (with LWS_PRE bytes of headroom before it)
 * as one text message on wsi. Call from wsi's WRITEABLE callback, once per
 * callback. The caller may free the buffer on return: no WebSocket
 * extension is negotiated, so lws_write has sent the message or copied
 * what it could not send to its own heap (lws_write's documentation in
 * libwebsockets' lws-write.h, "Truncated Writes"). With an extension such
 * as permessage-deflate, libwebsockets would keep reading the caller's
 * buffer on later writable events while it drains the extension's output,
 * which PROTOCOL.md "Transport" rules out. Returns 0, or -1 when lws_write
 * failed or wrote less than len (close the connection).
 */
int es_ws_send(struct lws *wsi, unsigned char *payload, size_t len);

/*
 * es_ws_send for len bytes of text (borrowed, no headroom needed): copies
 * them after LWS_PRE bytes of headroom first. Returns 0, or -1 when the
 * copy could not be allocated or the write failed (close the connection).
 */
int es_ws_send_text(struct lws *wsi, const char *text, size_t len);

/*
 * Compressed messages (PROTOCOL.md "Transport", protocol version 2, when
 * both sides announced the capability `deflate`): a binary WebSocket
 * message holding one zlib stream (RFC 1950, deflate of RFC 1951) of the
 * JSON text, with the preset dictionary of proto/deflate-dictionary.txt
 * (RFC 1950 FDICT; a stream without one is taken too). Messages shorter
 * than ES_WS_DEFLATE_MIN bytes, and those that would not shrink, go as
 * text. This replaces permessage-deflate (RFC 7692), which stays off: each
 * message is compressed on its own, with no context carried between
 * messages.
 */
#define ES_WS_DEFLATE_MIN 32

/*
 * Writes len bytes of JSON text (borrowed) as one message on wsi:
 * compressed in a binary message when deflate is not 0 and it pays (above),
 * else as es_ws_send_text. Call from wsi's WRITEABLE callback, once per
 * callback. Returns 0, or -1 when memory ran out or the write failed
 * (close the connection).
 */
int es_ws_send_json_text(struct lws *wsi, const char *text, size_t len, int deflate);

/* ---- receiving ---- */

/* One connection's message in reassembly. Zero it to start (or
 * es_ws_rx_free); all members are es_ws_rx_add's. */
typedef struct es_ws_rx {
	es_buf buf;    /* the text so far; nothing allocated before the first
			* byte of text */
	size_t len;    /* bytes of the message so far (a binary one's are
			* counted, not kept) */
	int in_msg;    /* 1: a fragment arrived, the final one not yet */
	int binary;    /* the message in progress is binary */
	int skip;      /* 1: the message was refused; drop the rest of it */
	int inflate;   /* set by the owner once `deflate` is negotiated: a
			* binary message is compressed JSON (ES_WS_DEFLATE_MIN);
			* es_ws_rx_reset clears it */
	char *ibuf;    /* the inflated text of the last binary message */
	size_t icap;   /* bytes allocated at ibuf */
} es_ws_rx;

/* What es_ws_rx_add found. */
typedef struct es_ws_msg {
	int done;            /* ES_OK: 1 when the text message is complete, 0
			      * while fragments are still to come */
	const char *text;    /* ... the message, borrowed from the es_ws_rx
			      * until its next call; NULL for an empty message
			      * when the es_ws_rx never buffered anything
			      * (es_proto_decode takes both) */
	size_t len;          /* ... its length in bytes */
	es_proto_code code;  /* on an error: the protocol error to send */
	const char *why;     /* ... and its message (static) */
} es_ws_msg;

/*
 * Adds one received piece (len bytes at in, borrowed; from wsi's RECEIVE
 * callback) to the message in rx. Whether it ends the message and whether
 * the message is binary come from wsi (lws_is_final_fragment,
 * lws_frame_is_binary). PROTOCOL.md "Transport" and "Limits": one JSON
 * text message of at most ES_PROTO_MAX_MESSAGE bytes over all fragments.
 * Returns ES_OK with out->done set when the message is complete. Errors
 * (out->code, out->why set; the rest of the message is dropped; the caller
 * sends the error and closes, PROTOCOL.md "Errors"):
 *   ES_ERR_TOOBIG  over ES_PROTO_MAX_MESSAGE bytes (ES_PC_TOO_BIG), as soon
 *                  as the size is passed;
 *   ES_ERR_PROTO   a binary message while rx->inflate is 0, or one that is
 *                  not a complete zlib stream (ES_PC_MALFORMED), at its
 *                  final fragment (a binary message over the size limit,
 *                  compressed or inflated, is ES_ERR_TOOBIG);
 *   ES_ERR_NOMEM   the buffer could not grow (ES_PC_INTERNAL).
 */
es_err es_ws_rx_add(es_ws_rx *rx, struct lws *wsi, const void *in, size_t len,
		    es_ws_msg *out);

/* Forgets the message in progress and rx->inflate (a new connection
 * starts); the buffers are kept for the next message. NULL-safe. */
void es_ws_rx_reset(es_ws_rx *rx);

/* Between messages: frees both buffers (the received text and the
 * inflated text of a compressed message), so an idle connection holds
 * none (the next message allocates again); the text es_ws_rx_add gave
 * for the last message is gone with them. No-op inside a message.
 * NULL-safe. */
void es_ws_rx_trim(es_ws_rx *rx);

/* Frees rx's buffer and forgets the message in progress; rx can be used
 * again. NULL-safe. */
void es_ws_rx_free(es_ws_rx *rx);

/* ---- sending ---- */

/*
 * One serialised outgoing message, shared by every connection it is queued
 * on and freed with its last reference: a change fanned out to N agents is
 * printed once and held once (PROTOCOL.md "Desired state"). The text sits
 * after LWS_PRE bytes of headroom, into which lws_write puts the frame
 * header. A server's frames are not masked (RFC 6455 section 5.1), so the
 * header is the same for every connection and the text is never changed:
 * one buffer may be written to many server connections. A client masks its
 * frames in place, so a client writes a buffer once.
 */
typedef struct es_ws_buf es_ws_buf;

/*
 * Prints m (taken; NULL counts as an allocation failure) as compact JSON
 * (es_json_print) into a new buffer with one reference, in *out. max_len:
 * longest text accepted in bytes (0: no limit). Errors: ES_ERR_NOMEM,
 * ES_ERR_TOOBIG (the text is over max_len: no buffer).
 */
es_err es_ws_buf_json(cJSON *m, size_t max_len, es_ws_buf **out);

/* Adds a reference to b and returns it. */
es_ws_buf *es_ws_buf_ref(es_ws_buf *b);

/* Drops a reference; the last one frees b. NULL-safe. */
void es_ws_buf_unref(es_ws_buf *b);

/* The message's length in bytes (a compressed buffer's: its zlib stream). */
size_t es_ws_buf_len(const es_ws_buf *b);

/* The message (borrowed, es_ws_buf_len bytes, not NUL-terminated): JSON
 * text, or the zlib stream of a buffer es_ws_queue_buf compressed. */
const char *es_ws_buf_text(const es_ws_buf *b);

/* The references held on b (for tests and accounting). */
unsigned es_ws_buf_refs(const es_ws_buf *b);

/* One queued message (es_ws.c). */
typedef struct es_ws_qmsg es_ws_qmsg;

/* A connection's outgoing messages, oldest first. Zero it, or set its
 * limits with es_ws_queue_init; all other members are es_ws_queue_*'s. */
typedef struct es_ws_queue {
	es_ws_qmsg *head, *tail;
	size_t bytes;    /* bytes of the messages queued */
	size_t max_msg;  /* longest message queued, bytes; 0: no limit */
	size_t max;      /* bytes the queue may hold (es_ws_queue_over); 0: no
			  * limit */
	int deflate;     /* set by the owner once `deflate` is negotiated:
			  * messages are queued compressed where it pays
			  * (ES_WS_DEFLATE_MIN); es_ws_queue_clear clears it */
} es_ws_queue;

/* Empties q's fields and sets its limits (bytes; 0 = none): messages over
 * max_msg are not queued, a queue holding more than max is over
 * (es_ws_queue_over). Does not free: call on a zeroed or cleared queue. */
void es_ws_queue_init(es_ws_queue *q, size_t max_msg, size_t max);

/*
 * Prints m (taken; NULL counts as an allocation failure) as compact JSON
 * (es_json_print) and appends it to q (compressed when q->deflate is set
 * and it pays), then asks for wsi's WRITEABLE callback (wsi may be NULL: no
 * request). Errors: ES_ERR_NOMEM, ES_ERR_TOOBIG (the text is over
 * q->max_msg bytes: not queued).
 */
es_err es_ws_queue_json(es_ws_queue *q, struct lws *wsi, cJSON *m);

/*
 * Appends b (borrowed: the queue takes a reference of its own) to q, then
 * asks for wsi's WRITEABLE callback (wsi may be NULL). Costs the queue one
 * small entry, not a copy of the text. When q->deflate is set and it pays,
 * the queue holds b's compressed form instead, which b makes on first use
 * and keeps, so a message queued on many connections is compressed once.
 * Errors: ES_ERR_NOMEM, ES_ERR_TOOBIG (b's text is over q->max_msg bytes:
 * not queued).
 */
es_err es_ws_queue_buf(es_ws_queue *q, struct lws *wsi, es_ws_buf *b);

/* The oldest queued message (borrowed), or NULL when q is empty. */
es_ws_buf *es_ws_queue_peek(const es_ws_queue *q);

/* 1 when q holds more than its limit of bytes (q->max, when set), else 0:
 * the caller decides (the controller clears the queue and closes). */
int es_ws_queue_over(const es_ws_queue *q);

/* 1 when a message is queued, else 0. */
int es_ws_queue_pending(const es_ws_queue *q);

/*
 * Writes the oldest message of q as one message on wsi (es_ws_send; binary
 * when it was queued compressed)
 * and drops it; call from wsi's WRITEABLE callback, once per callback.
 * Returns 1 when a message was written, 0 when q was empty, -1 when the
 * write failed (the message is dropped; close the connection).
 */
int es_ws_queue_write(es_ws_queue *q, struct lws *wsi);

/* Drops every queued message and clears q->deflate; the limits stay.
 * NULL-safe. */
void es_ws_queue_clear(es_ws_queue *q);

/* ---- the peer ---- */

/* Largest peer certificate (DER, bytes) es_ws_peer_cert reads. */
#define ES_WS_PEER_CERT_MAX 16384

/*
 * The leaf certificate the peer of wsi's TLS connection presented, whether
 * or not it verified (lws_tls_peer_cert_info, LWS_TLS_CERT_INFO_DER_RAW),
 * as DER in *der (malloc'd, the caller frees) of *len bytes. Only for a
 * connection whose TLS handshake has run: lws on mbedTLS reads the
 * connection's SSL object without checking that there is one (a TCP
 * connect that failed has none). Errors:
 * ES_ERR_NOTFOUND (no certificate, or one over ES_WS_PEER_CERT_MAX bytes),
 * ES_ERR_NOMEM.
 */
es_err es_ws_peer_cert(struct lws *wsi, unsigned char **der, size_t *len);

#endif
