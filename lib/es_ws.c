/*
 * es_ws.c - sync protocol messages over libwebsockets: writing, the
 * outgoing queue and reassembling received messages (es_ws.h).
 */
#include "es_ws.h"

#include <stdlib.h>
#include <string.h>

#include "es_json.h"

/* Reassembly buffers start at this many bytes and double. */
#define RX_FIRST_CAP 4096

struct es_ws_buf {
	unsigned refs;
	size_t len;
	unsigned char data[]; /* LWS_PRE bytes, then the message */
};

struct es_ws_qmsg {
	struct es_ws_qmsg *next;
	es_ws_buf *buf;
};

int es_ws_send(struct lws *wsi, unsigned char *payload, size_t len)
{
	int n = lws_write(wsi, payload, len, LWS_WRITE_TEXT);

	return n < 0 || (size_t)n < len ? -1 : 0;
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
	memcpy(b->data + LWS_PRE, text, len);
	return b;
}

int es_ws_send_text(struct lws *wsi, const char *text, size_t len)
{
	es_ws_buf *b = buf_new(text, len);
	int rc;

	if (!b)
		return -1;
	rc = es_ws_send(wsi, b->data + LWS_PRE, len);
	free(b);
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
	if (b && --b->refs == 0)
		free(b);
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

/* ---- receiving ---- */

/* Refuses the message in progress: drops the rest of it unless this was
 * its last piece. */
static es_err refuse(es_ws_rx *rx, int final, es_err err, es_proto_code code,
		     const char *why, es_ws_msg *out)
{
	rx->len = 0;
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
	if (!rx->binary && rx->len + len > rx->cap) {
		size_t cap = rx->cap ? rx->cap : RX_FIRST_CAP;
		char *n;

		while (cap < rx->len + len)
			cap *= 2;
		if (cap > ES_PROTO_MAX_MESSAGE)
			cap = ES_PROTO_MAX_MESSAGE;
		n = realloc(rx->buf, cap);
		if (!n)
			return refuse(rx, final, ES_ERR_NOMEM, ES_PC_INTERNAL,
				      "out of memory", out);
		rx->buf = n;
		rx->cap = cap;
	}
	if (!rx->binary && len)
		memcpy(rx->buf + rx->len, in, len);
	rx->len += len;
	if (!final)
		return ES_OK;
	rx->in_msg = 0;
	if (rx->binary)
		return refuse(rx, final, ES_ERR_PROTO, ES_PC_MALFORMED,
			      "binary message; one JSON text message expected", out);
	out->done = 1;
	out->text = rx->buf;
	out->len = rx->len;
	return ES_OK;
}

void es_ws_rx_reset(es_ws_rx *rx)
{
	if (!rx)
		return;
	rx->len = 0;
	rx->in_msg = rx->binary = rx->skip = 0;
}

void es_ws_rx_trim(es_ws_rx *rx)
{
	if (!rx || rx->in_msg)
		return;
	free(rx->buf);
	rx->buf = NULL;
	rx->cap = 0;
	rx->len = 0;
}

void es_ws_rx_free(es_ws_rx *rx)
{
	if (!rx)
		return;
	free(rx->buf);
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

	if (q->max_msg && b->len > q->max_msg)
		return ES_ERR_TOOBIG;
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
	rc = es_ws_send(wsi, m->buf->data + LWS_PRE, m->buf->len);
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
