/*
 * es_ws.c - sync protocol messages over libwebsockets: writing, the
 * outgoing queue and reassembling received messages (es_ws.h).
 */
#include "es_ws.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "es_json.h"
#include "es_ws_dict.h"

/* Reassembly buffers start at this many bytes and double. */
#define RX_FIRST_CAP 4096

struct es_ws_buf {
	unsigned refs;
	size_t len;
	int binary;           /* 1: a zlib stream of JSON (sent as a binary message) */
	struct es_ws_buf *z;  /* text only: its compressed form, or NULL */
	int z_tried;          /* text only: z was made, or does not pay */
	unsigned char data[]; /* LWS_PRE bytes, then the message */
};

struct es_ws_qmsg {
	struct es_ws_qmsg *next;
	es_ws_buf *buf;
};

static int send_frame(struct lws *wsi, unsigned char *payload, size_t len, int binary)
{
	int n = lws_write(wsi, payload, len, binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);

	return n < 0 || (size_t)n < len ? -1 : 0;
}

int es_ws_send(struct lws *wsi, unsigned char *payload, size_t len)
{
	return send_frame(wsi, payload, len, 0);
}

/* Compresses len bytes of text into the *outlen bytes at out as one zlib
 * stream with the preset dictionary (PROTOCOL.md "Compressed messages").
 * Returns 0 (*outlen set), or -1 (*nomem 1 when memory ran out; else the
 * output did not fit). */
static int deflate_dict(unsigned char *out, uLongf *outlen, const char *text,
			size_t len, int *nomem)
{
	z_stream z;
	int r;

	memset(&z, 0, sizeof(z));
	if ((r = deflateInit(&z, Z_DEFAULT_COMPRESSION)) != Z_OK) {
		*nomem = r == Z_MEM_ERROR;
		return -1;
	}
	if (deflateSetDictionary(&z, es_ws_dict, (uInt)sizeof(es_ws_dict)) != Z_OK) {
		deflateEnd(&z);
		return -1;
	}
	z.next_in = (Bytef *)text;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)*outlen;
	r = deflate(&z, Z_FINISH);
	*outlen = z.total_out;
	deflateEnd(&z);
	return r == Z_STREAM_END ? 0 : -1;
}

/* A buffer with one reference holding len bytes of text after LWS_PRE
 * bytes of headroom, or NULL. */
static es_ws_buf *buf_new(const char *text, size_t len)
{
	es_ws_buf *b = malloc(sizeof(*b) + LWS_PRE + len);

	if (!b)
		return NULL;
	b->refs = 1;
	b->len = len;
	b->binary = 0;
	b->z = NULL;
	b->z_tried = 0;
	memcpy(b->data + LWS_PRE, text, len);
	return b;
}

int es_ws_send_text(struct lws *wsi, const char *text, size_t len)
{
	return es_ws_send_json_text(wsi, text, len, 0);
}

/* The compressed form of the text buffer b (PROTOCOL.md "Compressed
 * messages"), made on first use and kept with b, so that a message queued
 * on many connections is compressed once; NULL when it does not pay (b
 * short, or its stream no shorter than the text) or memory ran out (the
 * text is sent then). */
static es_ws_buf *buf_deflated(es_ws_buf *b)
{
	es_ws_buf *z;
	uLongf out;
	int nomem = 0;

	if (b->binary || b->len < ES_WS_DEFLATE_MIN)
		return NULL;
	if (b->z_tried)
		return b->z;
	out = compressBound((uLong)b->len) + 16;
	z = malloc(sizeof(*z) + LWS_PRE + out);
	if (!z)
		return NULL; /* tried again next time */
	if (deflate_dict(z->data + LWS_PRE, &out, (const char *)b->data + LWS_PRE,
			 b->len, &nomem) != 0 || out >= b->len) {
		free(z);
		if (!nomem)
			b->z_tried = 1;
		return NULL;
	}
	z->refs = 1;
	z->len = out;
	z->binary = 1;
	z->z = NULL;
	z->z_tried = 1;
	b->z = z;
	b->z_tried = 1;
	return z;
}

int es_ws_send_json_text(struct lws *wsi, const char *text, size_t len, int deflate)
{
	es_ws_buf *b = buf_new(text, len), *z;
	int rc;

	if (!b)
		return -1;
	z = deflate ? buf_deflated(b) : NULL;
	if (!z)
		z = b;
	rc = send_frame(wsi, z->data + LWS_PRE, z->len, z->binary);
	es_ws_buf_unref(b);
	return rc;
}

es_err es_ws_buf_json(cJSON *m, size_t max_len, es_ws_buf **out)
{
	char *text = m ? es_json_print(m) : NULL;
	size_t len = text ? strlen(text) : 0;

	*out = NULL;
	cJSON_Delete(m);
	if (!text)
		return ES_ERR_NOMEM;
	if (max_len && len > max_len) {
		free(text);
		return ES_ERR_TOOBIG;
	}
	*out = buf_new(text, len);
	free(text);
	return *out ? ES_OK : ES_ERR_NOMEM;
}

es_ws_buf *es_ws_buf_ref(es_ws_buf *b)
{
	b->refs++;
	return b;
}

void es_ws_buf_unref(es_ws_buf *b)
{
	if (b && --b->refs == 0) {
		es_ws_buf_unref(b->z);
		free(b);
	}
}

size_t es_ws_buf_len(const es_ws_buf *b)
{
	return b->len;
}

const char *es_ws_buf_text(const es_ws_buf *b)
{
	return (const char *)b->data + LWS_PRE;
}

unsigned es_ws_buf_refs(const es_ws_buf *b)
{
	return b->refs;
}

/* Inflates the len bytes of the zlib stream at in into rx->ibuf. Returns
 * ES_OK (*olen set), ES_ERR_TOOBIG (more than ES_PROTO_MAX_MESSAGE bytes),
 * ES_ERR_PROTO (not one complete zlib stream), ES_ERR_NOMEM. */
static es_err inflate_msg(es_ws_rx *rx, const void *in, size_t len, size_t *olen)
{
	z_stream z;
	es_err rc = ES_OK;
	int r;

	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK)
		return ES_ERR_NOMEM;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	for (;;) {
		if (z.total_out == rx->icap) {
			size_t cap = rx->icap ? rx->icap * 2 : RX_FIRST_CAP;
			char *n;

			if (rx->icap >= ES_PROTO_MAX_MESSAGE + 1) {
				rc = ES_ERR_TOOBIG;
				break;
			}
			if (cap > ES_PROTO_MAX_MESSAGE + 1)
				cap = ES_PROTO_MAX_MESSAGE + 1;
			if (!(n = realloc(rx->ibuf, cap))) {
				rc = ES_ERR_NOMEM;
				break;
			}
			rx->ibuf = n;
			rx->icap = cap;
		}
		z.next_out = (Bytef *)rx->ibuf + z.total_out;
		z.avail_out = (uInt)(rx->icap - z.total_out);
		r = inflate(&z, Z_NO_FLUSH);
		if (r == Z_NEED_DICT) {
			/* The stream names its dictionary by Adler-32: only
			 * edgesync's is known. */
			if (z.adler != adler32(adler32(0L, Z_NULL, 0), es_ws_dict,
					       (uInt)sizeof(es_ws_dict)) ||
			    inflateSetDictionary(&z, es_ws_dict,
						 (uInt)sizeof(es_ws_dict)) != Z_OK) {
				rc = ES_ERR_PROTO;
				break;
			}
			r = inflate(&z, Z_NO_FLUSH);
		}
		if (r == Z_STREAM_END) {
			if (z.avail_in != 0)
				rc = ES_ERR_PROTO;
			else if (z.total_out > ES_PROTO_MAX_MESSAGE)
				rc = ES_ERR_TOOBIG;
			break;
		}
		if (r == Z_MEM_ERROR) {
			rc = ES_ERR_NOMEM;
			break;
		}
		if (r != Z_OK && !(r == Z_BUF_ERROR && z.avail_out == 0)) {
			rc = ES_ERR_PROTO;
			break;
		}
		if (z.avail_in == 0 && z.avail_out != 0) {
			rc = ES_ERR_PROTO; /* the stream ends early */
			break;
		}
	}
	*olen = z.total_out;
	inflateEnd(&z);
	return rc;
}

/* ---- receiving ---- */

/* Refuses the message in progress: drops the rest of it unless this was
 * its last piece. */
static es_err refuse(es_ws_rx *rx, int final, es_err err, es_proto_code code,
		     const char *why, es_ws_msg *out)
{
	rx->len = 0;
	es_buf_reset(&rx->buf);
	rx->skip = !final;
	rx->in_msg = !final;
	out->code = code;
	out->why = why;
	return err;
}

es_err es_ws_rx_add(es_ws_rx *rx, struct lws *wsi, const void *in, size_t len,
		    es_ws_msg *out)
{
	int final = lws_is_final_fragment(wsi);

	memset(out, 0, sizeof(*out));
	if (!rx->in_msg) {
		rx->len = 0;
		es_buf_reset(&rx->buf);
		rx->skip = 0;
		rx->in_msg = 1;
		rx->binary = lws_frame_is_binary(wsi);
	}
	if (rx->skip) {
		rx->in_msg = !final;
		return ES_OK;
	}
	if (len > ES_PROTO_MAX_MESSAGE - rx->len)
		return refuse(rx, final, ES_ERR_TOOBIG, ES_PC_TOO_BIG,
			      "message over 1048576 bytes", out);
	if ((!rx->binary || rx->inflate) && len &&
	    es_buf_append(&rx->buf, in, len) != ES_OK)
		return refuse(rx, final, ES_ERR_NOMEM, ES_PC_INTERNAL,
			      "out of memory", out);
	rx->len += len;
	if (!final)
		return ES_OK;
	rx->in_msg = 0;
	if (rx->binary && !rx->inflate)
		return refuse(rx, final, ES_ERR_PROTO, ES_PC_MALFORMED,
			      "binary message; one JSON text message expected", out);
	if (rx->binary) {
		size_t n = 0;
		es_err rc = inflate_msg(rx, rx->buf.p, rx->len, &n);

		if (rc == ES_ERR_TOOBIG)
			return refuse(rx, final, rc, ES_PC_TOO_BIG,
				      "compressed message inflates past 1048576 bytes", out);
		if (rc == ES_ERR_NOMEM)
			return refuse(rx, final, rc, ES_PC_INTERNAL, "out of memory", out);
		if (rc != ES_OK)
			return refuse(rx, final, rc, ES_PC_MALFORMED,
				      "binary message is not one complete zlib stream "
				      "(deflate-compressed JSON)", out);
		rx->len = 0;
		out->done = 1;
		out->text = rx->ibuf;
		out->len = n;
		return ES_OK;
	}
	out->done = 1;
	out->text = rx->buf.p;
	out->len = rx->len;
	return ES_OK;
}

void es_ws_rx_reset(es_ws_rx *rx)
{
	if (!rx)
		return;
	rx->len = 0;
	es_buf_reset(&rx->buf);
	rx->in_msg = rx->binary = rx->skip = rx->inflate = 0;
}

void es_ws_rx_trim(es_ws_rx *rx)
{
	if (!rx || rx->in_msg)
		return;
	es_buf_free(&rx->buf);
	rx->len = 0;
	free(rx->ibuf);
	rx->ibuf = NULL;
	rx->icap = 0;
}

void es_ws_rx_free(es_ws_rx *rx)
{
	if (!rx)
		return;
	es_buf_free(&rx->buf);
	free(rx->ibuf);
	memset(rx, 0, sizeof(*rx));
}

/* ---- sending ---- */

void es_ws_queue_init(es_ws_queue *q, size_t max_msg, size_t max)
{
	memset(q, 0, sizeof(*q));
	q->max_msg = max_msg;
	q->max = max;
}

es_err es_ws_queue_buf(es_ws_queue *q, struct lws *wsi, es_ws_buf *b)
{
	es_ws_qmsg *o;
	es_ws_buf *z;

	if (q->max_msg && b->len > q->max_msg)
		return ES_ERR_TOOBIG;
	z = q->deflate ? buf_deflated(b) : NULL;
	if (z)
		b = z;
	o = malloc(sizeof(*o));
	if (!o)
		return ES_ERR_NOMEM;
	o->next = NULL;
	o->buf = es_ws_buf_ref(b);
	if (q->tail)
		q->tail->next = o;
	else
		q->head = o;
	q->tail = o;
	q->bytes += b->len;
	if (wsi)
		lws_callback_on_writable(wsi);
	return ES_OK;
}

es_err es_ws_queue_json(es_ws_queue *q, struct lws *wsi, cJSON *m)
{
	es_ws_buf *b = NULL;
	es_err rc = es_ws_buf_json(m, q->max_msg, &b);

	if (rc == ES_OK)
		rc = es_ws_queue_buf(q, wsi, b);
	es_ws_buf_unref(b);
	return rc;
}

es_ws_buf *es_ws_queue_peek(const es_ws_queue *q)
{
	return q->head ? q->head->buf : NULL;
}

int es_ws_queue_over(const es_ws_queue *q)
{
	return q->max && q->bytes > q->max;
}

int es_ws_queue_pending(const es_ws_queue *q)
{
	return q->head != NULL;
}

int es_ws_queue_write(es_ws_queue *q, struct lws *wsi)
{
	es_ws_qmsg *m = q->head;
	int rc;

	if (!m)
		return 0;
	q->head = m->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= m->buf->len;
	rc = send_frame(wsi, m->buf->data + LWS_PRE, m->buf->len, m->buf->binary);
	es_ws_buf_unref(m->buf);
	free(m);
	return rc == 0 ? 1 : -1;
}

void es_ws_queue_clear(es_ws_queue *q)
{
	if (!q)
		return;
	while (q->head) {
		es_ws_qmsg *m = q->head;

		q->head = m->next;
		es_ws_buf_unref(m->buf);
		free(m);
	}
	q->tail = NULL;
	q->bytes = 0;
	q->deflate = 0;
}

es_err es_ws_peer_cert(struct lws *wsi, unsigned char **der, size_t *len)
{
	const size_t alloc = sizeof(union lws_tls_cert_info_results) +
			     ES_WS_PEER_CERT_MAX;
	union lws_tls_cert_info_results *r;
	size_t n;

	*der = NULL;
	*len = 0;
	r = calloc(1, alloc);
	if (!r)
		return ES_ERR_NOMEM;
	if (lws_tls_peer_cert_info(wsi, LWS_TLS_CERT_INFO_DER_RAW, r,
				   ES_WS_PEER_CERT_MAX + sizeof(r->ns.name)) ||
	    r->ns.len <= 0 || (size_t)r->ns.len > ES_WS_PEER_CERT_MAX) {
		free(r);
		return ES_ERR_NOTFOUND;
	}
	n = (size_t)r->ns.len;
	memmove(r, r->ns.name, n);
	*der = (unsigned char *)r;
	*len = n;
	return ES_OK;
}
