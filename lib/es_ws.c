/*
 * es_ws.c - sync protocol messages over libwebsockets: writing, the
 * outgoing queue and reassembling received messages (es_ws.h).
 */
#include "es_ws.h"

#include <stdlib.h>
#include <string.h>

#include "es_json.h"

struct es_ws_qmsg {
	struct es_ws_qmsg *next;
	size_t len;
	unsigned char data[]; /* LWS_PRE bytes, then the message */
};

int es_ws_send(struct lws *wsi, unsigned char *payload, size_t len)
{
	int n = lws_write(wsi, payload, len, LWS_WRITE_TEXT);

	return n < 0 || (size_t)n < len ? -1 : 0;
}

/* A queue entry holding len bytes of text after LWS_PRE bytes of headroom,
 * or NULL. */
static es_ws_qmsg *msg_new(const char *text, size_t len)
{
	es_ws_qmsg *m = malloc(sizeof(*m) + LWS_PRE + len);

	if (!m)
		return NULL;
	m->next = NULL;
	m->len = len;
	memcpy(m->data + LWS_PRE, text, len);
	return m;
}

int es_ws_send_text(struct lws *wsi, const char *text, size_t len)
{
	es_ws_qmsg *m = msg_new(text, len);
	int rc;

	if (!m)
		return -1;
	rc = es_ws_send(wsi, m->data + LWS_PRE, len);
	free(m);
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
	if (!rx->binary && len && es_buf_append(&rx->buf, in, len) != ES_OK)
		return refuse(rx, final, ES_ERR_NOMEM, ES_PC_INTERNAL,
			      "out of memory", out);
	rx->len += len;
	if (!final)
		return ES_OK;
	rx->in_msg = 0;
	if (rx->binary)
		return refuse(rx, final, ES_ERR_PROTO, ES_PC_MALFORMED,
			      "binary message; one JSON text message expected", out);
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
	rx->in_msg = rx->binary = rx->skip = 0;
}

void es_ws_rx_free(es_ws_rx *rx)
{
	if (!rx)
		return;
	es_buf_free(&rx->buf);
	memset(rx, 0, sizeof(*rx));
}

/* ---- sending ---- */

void es_ws_queue_init(es_ws_queue *q, size_t max_msg, size_t max)
{
	memset(q, 0, sizeof(*q));
	q->max_msg = max_msg;
	q->max = max;
}

es_err es_ws_queue_json(es_ws_queue *q, struct lws *wsi, cJSON *m)
{
	char *text = m ? es_json_print(m) : NULL;
	size_t len = text ? strlen(text) : 0;
	es_ws_qmsg *o = NULL;

	cJSON_Delete(m);
	if (!text)
		return ES_ERR_NOMEM;
	if (q->max_msg && len > q->max_msg) {
		free(text);
		return ES_ERR_TOOBIG;
	}
	o = msg_new(text, len);
	free(text);
	if (!o)
		return ES_ERR_NOMEM;
	if (q->tail)
		q->tail->next = o;
	else
		q->head = o;
	q->tail = o;
	q->bytes += len;
	if (wsi)
		lws_callback_on_writable(wsi);
	return ES_OK;
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
	q->bytes -= m->len;
	rc = es_ws_send(wsi, m->data + LWS_PRE, m->len);
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
