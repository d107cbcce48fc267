/*
 * etcd_client.c - requests and watches over libwebsockets HTTP/1.1 client
 * connections to etcd's JSON gateway (see etcd_client.h for the contract:
 * failover, timeouts, which errors).
 *
 * One struct etcd_req per request or watch; it is on the client's list
 * from start to end, so es_etcd_destroy can end them all. The connection
 * of an attempt points at its request through lws's opaque user data; a
 * request that gives a connection up clears that pointer first, so a late
 * callback of the connection finds nothing to act on.
 */
#include "etcd/etcd_client.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "es_buf.h"
#include "es_time.h"
#include "es_url.h"

#define DEFAULT_TIMEOUT_MS 5000
#define DEFAULT_MAX_RESPONSE ((size_t)64 << 20)
#define WATCH_BACKOFF_MIN_MS 100
#define WATCH_BACKOFF_MAX_MS 5000
#define WRITE_CHUNK 16384
#define MAX_LINE ((size_t)16 << 20)

typedef enum req_kind {
	RK_CALL = 0,
	RK_KEEPALIVE,
	RK_WATCH,
} req_kind;

struct es_etcd {
	struct lws_context *ctx;
	struct lws_vhost *vh;
	es_url ep[ES_ETCD_MAX_ENDPOINTS];
	char ep_text[ES_ETCD_MAX_ENDPOINTS][ES_URL_PATH_MAX];
	char host_hdr[ES_ETCD_MAX_ENDPOINTS][ES_ADDR_HOST_MAX + 16];
	size_t n_ep, cur;
	int timeout_ms, watch_idle_ms;
	size_t max_resp;
	es_etcd_observe_fn observe;
	void *observe_ud;
	struct etcd_req *reqs; /* every live request and watch */
};

typedef struct etcd_req {
	es_etcd *e;
	struct etcd_req *prev, *next;
	req_kind kind;
	char path[96];
	char *buf;       /* LWS_PRE bytes, then the body */
	size_t body_len, body_off;
	int idempotent;
	es_etcd_cb cb;
	void *ud;
	int64_t lease_id; /* RK_KEEPALIVE: for the message */
	int64_t t0_us;    /* monotonic: the start (a watch: of this dial) */
	int answered;     /* a watch: this dial got a message from etcd */
	struct lws *wsi;
	lws_sorted_usec_list_t sul_timeout, sul_retry;
	size_t ep;       /* endpoint of this attempt */
	size_t tried;    /* endpoints tried by this request */
	int sent;        /* the whole body was written */
	int status;      /* HTTP status of this attempt, 0 before headers */
	int dialling;    /* inside lws_client_connect_via_info */
	char dial_err[300]; /* a connection error lws reported while dialling */
	es_buf rx;       /* unary: the body; watch: an error body */
	es_buf errs;     /* "endpoint: what" of every failed attempt */
	/* watch */
	es_etcd_watch_cb wcb;
	char *key, *range_end;
	size_t klen, relen;
	int64_t next_rev;
	int backoff_ms;
	int ended;
	es_buf lines;
} etcd_req;

struct es_etcd_watch {
	etcd_req r;
};

static void attempt(etcd_req *r);
static void watch_down(etcd_req *r, const char *why);

/* --- bookkeeping -------------------------------------------------------- */

static void link_req(es_etcd *e, etcd_req *r)
{
	r->e = e;
	r->next = e->reqs;
	if (e->reqs)
		e->reqs->prev = r;
	e->reqs = r;
}

static void unlink_req(etcd_req *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else if (r->e->reqs == r)
		r->e->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
}

/* Gives the attempt's connection up: it closes later, finding no request. */
static void detach(etcd_req *r)
{
	lws_sul_cancel(&r->sul_timeout);
	if (!r->wsi)
		return;
	lws_set_opaque_user_data(r->wsi, NULL);
	lws_set_timeout(r->wsi, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
	r->wsi = NULL;
}

static void req_free(etcd_req *r)
{
	if (!r)
		return;
	detach(r);
	lws_sul_cancel(&r->sul_retry);
	if (r->e)
		unlink_req(r);
	free(r->buf);
	free(r->key);
	free(r->range_end);
	es_buf_free(&r->rx);
	es_buf_free(&r->errs);
	es_buf_free(&r->lines);
	free(r);
}

static es_err code_rc(int code)
{
	switch (code) {
	case ES_ETCD_CODE_OK:
		return ES_OK;
	case ES_ETCD_CODE_NOT_FOUND:
		return ES_ERR_NOTFOUND;
	case ES_ETCD_CODE_OUT_OF_RANGE:
		return ES_ERR_CONFLICT;
	case ES_ETCD_CODE_INVALID_ARGUMENT:
	case ES_ETCD_CODE_FAILED_PRECONDITION:
		return ES_ERR_INVAL;
	case ES_ETCD_CODE_PERMISSION_DENIED:
	case ES_ETCD_CODE_UNAUTHENTICATED:
		return ES_ERR_AUTH;
	case ES_ETCD_CODE_UNAVAILABLE:
	case ES_ETCD_CODE_DEADLINE_EXCEEDED:
		return ES_ERR_IO;
	default:
		return ES_ERR_PROTO;
	}
}

/* The op label of es_etcd_observe_fn for r's method. */
static const char *op_name(const etcd_req *r)
{
	static const struct { const char *method, *op; } ops[] = {
		{ "kv/range", "range" }, { "kv/put", "put" },
		{ "kv/deleterange", "delete" }, { "kv/txn", "txn" },
		{ "lease/grant", "lease" }, { "lease/keepalive", "lease" },
		{ "lease/revoke", "lease" }, { "watch", "watch" },
	};
	const char *m = r->path + strlen(ES_ETCD_PATH_PREFIX);

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(m, ops[i].method))
			return ops[i].op;
	return "other";
}

/* Tells the observer of r's end (or a watch's first message or break);
 * seconds since r->t0_us, or -1 when measured is 0. */
static void observe(const etcd_req *r, es_err rc, int measured)
{
	const es_etcd *e = r->e;
	int reached = rc == ES_OK || rc == ES_ERR_NOTFOUND ||
		      rc == ES_ERR_CONFLICT || rc == ES_ERR_INVAL;
	double secs = -1;

	if (!e || !e->observe)
		return;
	if (measured) {
		int64_t d = es_time_mono_us() - r->t0_us;

		secs = (double)(d > 0 ? d : 0) / 1e6;
	}
	e->observe(e->observe_ud, op_name(r), rc, reached, secs);
}

/* Ends a unary request: one call of its callback, then it is freed. */
static void finish(etcd_req *r, es_err rc, int code, int unknown,
		   const char *msg, const es_etcd_resp *resp)
{
	es_etcd_result res;

	observe(r, rc, 1);
	detach(r);
	unlink_req(r);
	memset(&res, 0, sizeof(res));
	res.rc = rc;
	res.code = code;
	res.unknown = unknown;
	res.endpoint = r->e->ep_text[r->ep];
	res.error = msg ? msg : "";
	res.resp = rc == ES_OK ? resp : NULL;
	if (r->cb)
		r->cb(r->ud, &res);
	r->e = NULL;
	req_free(r);
}

static es_err watch_body(etcd_req *r);

static void retry_cb(lws_sorted_usec_list_t *sul)
{
	etcd_req *r = lws_container_of(sul, etcd_req, sul_retry);

	/* A watch resumes from the revision after the last it delivered. */
	if (r->kind == RK_WATCH && watch_body(r) != ES_OK) {
		lws_sul_schedule(r->e->ctx, 0, &r->sul_retry, retry_cb,
				 (lws_usec_t)WATCH_BACKOFF_MAX_MS * LWS_US_PER_MS);
		return;
	}
	attempt(r);
}

/*
 * The attempt at r->ep failed without an answer from etcd (why; code 14
 * or 4). Moves to the next endpoint when that is allowed, else ends.
 */
static void attempt_failed(etcd_req *r, const char *why, int code)
{
	es_etcd *e = r->e;
	char msg[1024];

	detach(r);
	if (r->kind == RK_WATCH) {
		watch_down(r, why);
		return;
	}
	es_buf_appendf(&r->errs, "%s%s: %s", r->errs.len ? "; " : "",
		       e->ep_text[r->ep], why);
	if ((!r->sent || r->idempotent) && ++r->tried < e->n_ep) {
		if (e->cur == r->ep)
			e->cur = (r->ep + 1) % e->n_ep;
		r->ep = (r->ep + 1) % e->n_ep;
		r->sent = 0;
		r->body_off = 0;
		r->status = 0;
		es_buf_reset(&r->rx);
		lws_sul_schedule(e->ctx, 0, &r->sul_retry, retry_cb, 1);
		return;
	}
	if (e->cur == r->ep && e->n_ep > 1)
		e->cur = (r->ep + 1) % e->n_ep;
	snprintf(msg, sizeof(msg), "etcd: %s%s",
		 r->errs.p ? r->errs.p : why,
		 r->sent && !r->idempotent ?
		 " (the request was sent: etcd may have applied it)" : "");
	finish(r, ES_ERR_IO, code, r->sent && !r->idempotent, msg, NULL);
}

static void timeout_cb(lws_sorted_usec_list_t *sul)
{
	etcd_req *r = lws_container_of(sul, etcd_req, sul_timeout);
	char why[96];

	if (r->kind == RK_WATCH && r->status == 200)
		snprintf(why, sizeof(why), "watch silent for %d ms",
			 r->e->watch_idle_ms);
	else
		snprintf(why, sizeof(why), "no answer within %d ms",
			 r->e->timeout_ms);
	attempt_failed(r, why, ES_ETCD_CODE_DEADLINE_EXCEEDED);
}

/* Dials r->ep and arms the attempt's timeout. */
static void attempt(etcd_req *r)
{
	es_etcd *e = r->e;
	const es_url *u = &e->ep[r->ep];
	struct lws_client_connect_info i;
	struct lws *w;

	if (r->kind == RK_WATCH) {
		r->t0_us = es_time_mono_us();
		r->answered = 0;
	}
	memset(&i, 0, sizeof(i));
	i.context = e->ctx;
	i.vhost = e->vh;
	i.address = u->host;
	i.port = u->port;
	i.path = r->path;
	i.host = e->host_hdr[r->ep];
	i.origin = e->host_hdr[r->ep];
	i.method = "POST";
	i.alpn = "http/1.1";
	i.ssl_connection = LCCSCF_HTTP_NO_FOLLOW_REDIRECT |
			   (!strcmp(u->scheme, "https") ? LCCSCF_USE_SSL : 0);
	i.local_protocol_name = "es-etcd";
	i.opaque_user_data = r;
	r->status = 0;
	r->sent = 0;
	r->body_off = 0;
	lws_sul_schedule(e->ctx, 0, &r->sul_timeout, timeout_cb,
			 (lws_usec_t)e->timeout_ms * LWS_US_PER_MS);
	/* A connection error lws reports from inside the dial is kept and
	 * acted on here, after it returned, so that r is not moved on (or
	 * freed) under it. */
	r->dialling = 1;
	r->dial_err[0] = '\0';
	w = lws_client_connect_via_info(&i);
	r->dialling = 0;
	if (!w || r->dial_err[0]) {
		if (w)
			lws_set_opaque_user_data(w, NULL);
		r->wsi = NULL;
		attempt_failed(r, r->dial_err[0] ? r->dial_err :
			       "could not start a connection",
			       ES_ETCD_CODE_UNAVAILABLE);
		return;
	}
	r->wsi = w;
}

/* --- unary answers ------------------------------------------------------ */

static void complete(etcd_req *r)
{
	es_etcd *e = r->e;
	char msg[1024], perr[256], emsg[512];
	es_etcd_resp resp;
	int code = 0;
	es_err rc;

	if (r->status != 200) {
		if (es_etcd_msg_error(r->rx.p ? r->rx.p : "", r->rx.len, &code,
				      emsg, sizeof(emsg))) {
			if (code == ES_ETCD_CODE_UNAVAILABLE) {
				char why[600];

				snprintf(why, sizeof(why), "%s (code 14)", emsg);
				attempt_failed(r, why, code);
				return;
			}
			snprintf(msg, sizeof(msg), "etcd %s: %s (code %d)",
				 e->ep_text[r->ep], emsg, code);
			finish(r, code_rc(code), code, 0, msg, NULL);
			return;
		}
		snprintf(msg, sizeof(msg), "etcd %s: HTTP status %d, not an etcd answer",
			 e->ep_text[r->ep], r->status);
		finish(r, ES_ERR_PROTO, 0, 0, msg, NULL);
		return;
	}
	rc = es_etcd_msg_parse(r->rx.p ? r->rx.p : "", r->rx.len, &resp, perr,
			       sizeof(perr));
	if (rc != ES_OK) {
		snprintf(msg, sizeof(msg), "etcd %s: %s", e->ep_text[r->ep], perr);
		finish(r, rc == ES_ERR_NOMEM ? rc : ES_ERR_PROTO, 0, 0, msg, NULL);
		return;
	}
	if (r->kind == RK_KEEPALIVE && resp.ttl <= 0) {
		snprintf(msg, sizeof(msg), "etcd %s: lease %" PRId64 " has expired",
			 e->ep_text[r->ep], r->lease_id);
		es_etcd_resp_free(&resp);
		finish(r, ES_ERR_NOTFOUND, ES_ETCD_CODE_NOT_FOUND, 0, msg, NULL);
		return;
	}
	finish(r, ES_OK, 0, 0, NULL, &resp);
	es_etcd_resp_free(&resp);
}

/* --- watch answers ------------------------------------------------------ */

static void watch_emit(etcd_req *r, es_etcd_watch_kind kind, int64_t rev,
		       int64_t compact, const es_etcd_event *evs, size_t n,
		       const char *error)
{
	es_etcd_watch_ev ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = kind;
	ev.revision = rev;
	ev.compact_revision = compact;
	ev.events = evs;
	ev.n_events = n;
	ev.endpoint = r->e->ep_text[r->ep];
	ev.error = error ? error : "";
	r->wcb(r->ud, &ev);
}

/* The stream broke: say so, then redial the next endpoint after backoff. */
static void watch_down(etcd_req *r, const char *why)
{
	es_etcd *e = r->e;
	char msg[1024];
	int delay;

	if (r->ended)
		return;
	detach(r);
	observe(r, ES_ERR_IO, 0);
	snprintf(msg, sizeof(msg), "etcd %s: watch: %s", e->ep_text[r->ep], why);
	es_buf_reset(&r->lines);
	es_buf_reset(&r->rx);
	delay = r->backoff_ms;
	r->backoff_ms = r->backoff_ms * 2 > WATCH_BACKOFF_MAX_MS ?
			WATCH_BACKOFF_MAX_MS : r->backoff_ms * 2;
	if (e->cur == r->ep && e->n_ep > 1)
		e->cur = (r->ep + 1) % e->n_ep;
	r->ep = (r->ep + 1) % e->n_ep;
	watch_emit(r, ES_ETCD_WATCH_DOWN, 0, 0, NULL, 0, msg);
	lws_sul_schedule(e->ctx, 0, &r->sul_retry, retry_cb,
			 (lws_usec_t)delay * LWS_US_PER_MS);
}

/* The create request from where the watch stands. */
static es_err watch_body(etcd_req *r)
{
	char *body = es_etcd_msg_watch_create(r->key, r->klen, r->range_end,
					      r->relen, r->next_rev);
	size_t n;

	if (!body)
		return ES_ERR_NOMEM;
	n = strlen(body);
	free(r->buf);
	r->buf = malloc(LWS_PRE + n + 1);
	if (!r->buf) {
		free(body);
		return ES_ERR_NOMEM;
	}
	memcpy(r->buf + LWS_PRE, body, n + 1);
	r->body_len = n;
	free(body);
	return ES_OK;
}

static void watch_end(etcd_req *r, es_etcd_watch_kind kind, int64_t rev,
		      int64_t compact, const char *msg)
{
	r->ended = 1;
	detach(r);
	observe(r, kind == ES_ETCD_WATCH_COMPACTED ? ES_ERR_CONFLICT : ES_ERR_INVAL,
		!r->answered);
	watch_emit(r, kind, rev, compact, NULL, 0, msg);
}

/* One line of the stream. Returns non-zero to stop reading it. */
static int watch_line(void *ud, const char *text, size_t n)
{
	etcd_req *r = ud;
	es_etcd *e = r->e;
	char perr[256], msg[1024], emsg[512];
	es_etcd_watch_msg m;
	int code;

	if (es_etcd_msg_error(text, n, &code, emsg, sizeof(emsg))) {
		snprintf(msg, sizeof(msg), "%s (code %d)", emsg, code);
		watch_down(r, msg);
		return 1;
	}
	if (es_etcd_msg_watch_parse(text, n, &m, perr, sizeof(perr)) != ES_OK) {
		watch_down(r, perr);
		return 1;
	}
	if (m.canceled) {
		if (m.compact_revision > 0) {
			snprintf(msg, sizeof(msg),
				 "etcd %s: watch from revision %" PRId64
				 " refused: compacted up to %" PRId64,
				 e->ep_text[r->ep], r->next_rev, m.compact_revision);
			watch_end(r, ES_ETCD_WATCH_COMPACTED, m.revision,
				  m.compact_revision, msg);
		} else {
			snprintf(msg, sizeof(msg), "etcd %s: watch cancelled: %s",
				 e->ep_text[r->ep],
				 m.cancel_reason[0] ? m.cancel_reason : "no reason given");
			watch_end(r, ES_ETCD_WATCH_FAILED, m.revision, 0, msg);
		}
		es_etcd_watch_msg_free(&m);
		return 1;
	}
	r->backoff_ms = WATCH_BACKOFF_MIN_MS;
	if (!r->answered) {
		r->answered = 1;
		observe(r, ES_OK, 1);
	}
	if (m.n_events) {
		r->next_rev = m.events[m.n_events - 1].kv.mod_revision + 1;
		watch_emit(r, ES_ETCD_WATCH_EVENTS, m.revision, 0, m.events,
			   m.n_events, NULL);
	} else if (m.created) {
		if (r->next_rev == 0)
			r->next_rev = m.revision + 1;
	} else if (m.revision > 0) {
		if (m.revision >= r->next_rev)
			r->next_rev = m.revision + 1;
		watch_emit(r, ES_ETCD_WATCH_PROGRESS, m.revision, 0, NULL, 0, NULL);
	}
	es_etcd_watch_msg_free(&m);
	return 0;
}

static void watch_rx(etcd_req *r, const char *in, size_t len)
{
	es_err rc;

	if (r->e->watch_idle_ms > 0)
		lws_sul_schedule(r->e->ctx, 0, &r->sul_timeout, timeout_cb,
				 (lws_usec_t)r->e->watch_idle_ms * LWS_US_PER_MS);
	rc = es_etcd_lines_feed(&r->lines, in, len, watch_line, r);
	if (rc == ES_ERR_TOOBIG || rc == ES_ERR_NOMEM)
		watch_down(r, rc == ES_ERR_NOMEM ? "out of memory" :
			   "a watch message passed the size limit");
}

/* --- the lws protocol --------------------------------------------------- */

/* lws's connection error text, with its "conn fail: ERRNO" said in words.
 * lws says "closed before established" when it closes a socket whose
 * connect failed without reading why (its libuv loop sees the hang-up
 * first): then the socket's pending error (SO_ERROR) is the reason, e.g.
 * "Connection refused". fd: the attempt's socket, -1 when there is none. */
static void conn_error_text(const void *in, size_t len, int fd, char *out, size_t outsz)
{
	char text[256];
	int n, soerr = 0;
	socklen_t sl = sizeof(soerr);

	snprintf(text, sizeof(text), "%.*s",
		 in ? (int)strnlen(in, len && len < sizeof(text) ? len : sizeof(text) - 1) : 0,
		 in ? (const char *)in : "");
	if (sscanf(text, "conn fail: %d", &n) == 1 && n > 0)
		snprintf(out, outsz, "%s", strerror(n));
	else if (fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr > 0)
		snprintf(out, outsz, "%s", strerror(soerr));
	else
		snprintf(out, outsz, "%s", text);
}

static int on_writeable(etcd_req *r, struct lws *wsi)
{
	size_t left = r->body_len - r->body_off, n = left;
	enum lws_write_protocol how = LWS_WRITE_HTTP_FINAL;
	unsigned char *p = (unsigned char *)r->buf + LWS_PRE + r->body_off;

	if (n > WRITE_CHUNK) {
		n = WRITE_CHUNK;
		how = LWS_WRITE_HTTP;
	}
	/* lws_write needs LWS_PRE writable bytes before p: at the start they
	 * are the reserve, later the body bytes already sent. */
	if (lws_write(wsi, p, n, how) != (int)n)
		return -1;
	r->body_off += n;
	if (r->body_off < r->body_len) {
		lws_callback_on_writable(wsi);
		return 0;
	}
	r->sent = 1;
	lws_client_http_body_pending(wsi, 0);
	return 0;
}

static int etcd_cb(struct lws *wsi, enum lws_callback_reasons reason,
		   void *user, void *in, size_t len)
{
	etcd_req *r = lws_get_opaque_user_data(wsi);

	switch (reason) {
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
		char why[300];

		if (!r)
			return 0;
		conn_error_text(in, len, lws_get_socket_fd(wsi), why, sizeof(why));
		lws_set_opaque_user_data(wsi, NULL);
		r->wsi = NULL;
		if (r->dialling) {
			snprintf(r->dial_err, sizeof(r->dial_err), "%s",
				 why[0] ? why : "connection failed");
			return 0;
		}
		attempt_failed(r, why[0] ? why : "connection failed",
			       ES_ETCD_CODE_UNAVAILABLE);
		return 0;
	}
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: {
		unsigned char **p = in, *end = *p + len;
		char cl[24];

		if (!r)
			return -1;
		snprintf(cl, sizeof(cl), "%zu", r->body_len);
		if (lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
						 (const unsigned char *)"application/json",
						 16, p, end) ||
		    lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH,
						 (const unsigned char *)cl,
						 (int)strlen(cl), p, end))
			return -1;
		lws_client_http_body_pending(wsi, 1);
		lws_callback_on_writable(wsi);
		return 0;
	}
	case LWS_CALLBACK_CLIENT_HTTP_WRITEABLE:
		if (!r)
			return -1;
		return on_writeable(r, wsi);
	case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
		if (!r)
			return -1;
		r->status = (int)lws_http_client_http_response(wsi);
		r->sent = 1;
		if (r->kind == RK_WATCH && r->status == 200) {
			lws_sul_cancel(&r->sul_timeout);
			if (r->e->watch_idle_ms > 0)
				lws_sul_schedule(r->e->ctx, 0, &r->sul_timeout,
						 timeout_cb, (lws_usec_t)r->e->watch_idle_ms *
						 LWS_US_PER_MS);
		}
		return 0;
	case LWS_CALLBACK_RECEIVE_CLIENT_HTTP: {
		char buf[LWS_PRE + 4096], *px = buf + LWS_PRE;
		int n = (int)sizeof(buf) - LWS_PRE;

		if (!r)
			return -1;
		return lws_http_client_read(wsi, &px, &n) < 0 ? -1 : 0;
	}
	case LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ:
		if (!r)
			return -1;
		if (r->kind == RK_WATCH && r->status == 200) {
			watch_rx(r, in, len);
			return r->wsi == wsi ? 0 : -1;
		}
		if (es_buf_append(&r->rx, in, len) != ES_OK) {
			char msg[300];

			if (r->kind == RK_WATCH) {
				watch_down(r, "error answer too large");
				return -1;
			}
			snprintf(msg, sizeof(msg), "etcd %s: answer larger than %zu bytes",
				 r->e->ep_text[r->ep], r->e->max_resp);
			finish(r, r->rx.err == ES_ERR_NOMEM ? ES_ERR_NOMEM : ES_ERR_TOOBIG,
			       0, 0, msg, NULL);
			return -1;
		}
		return 0;
	case LWS_CALLBACK_COMPLETED_CLIENT_HTTP:
		if (!r)
			return -1;
		lws_set_opaque_user_data(wsi, NULL);
		lws_sul_cancel(&r->sul_timeout);
		r->wsi = NULL;
		if (r->kind != RK_WATCH) {
			complete(r);
		} else if (r->status != 200) {
			char emsg[512], msg[700];
			int code;

			if (es_etcd_msg_error(r->rx.p ? r->rx.p : "", r->rx.len, &code,
					      emsg, sizeof(emsg)))
				snprintf(msg, sizeof(msg), "%s (code %d)", emsg, code);
			else
				snprintf(msg, sizeof(msg), "HTTP status %d", r->status);
			watch_down(r, msg);
		} else {
			watch_down(r, "the stream ended");
		}
		return -1;
	case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
		if (!r)
			return 0;
		lws_set_opaque_user_data(wsi, NULL);
		r->wsi = NULL;
		attempt_failed(r, "connection closed before the answer was complete",
			       ES_ETCD_CODE_UNAVAILABLE);
		return 0;
	default:
		break;
	}
	return 0;
}

static const struct lws_protocols etcd_protocols[] = {
	{ "es-etcd", etcd_cb, 0, 0, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
};

/* --- public ------------------------------------------------------------- */

es_err es_etcd_endpoint_parse(const char *url, es_url *out, char *err,
			      size_t errsz)
{
	const char *auth, *end;
	es_err rc;

	/* The scheme first: es_url_parse's own message would list the
	 * WebSocket schemes too, which etcd's gateway does not speak. */
	if (!url || (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8)))
		return es_errf(ES_ERR_INVAL, err, errsz, "etcd-endpoints: \"%s\": "
			       "expected http://host[:port] or https://host[:port]",
			       url ? url : "");
	rc = es_url_parse("etcd-endpoints", url, NULL, out, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (strcmp(out->path, "/"))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "etcd-endpoints: \"%s\": no path or query expected", url);
	/* es_url_parse took the scheme's port when none is written: find
	 * whether one is, after the host (a bracketed IPv6 literal has
	 * colons of its own). */
	auth = strstr(url, "://") + 3;
	end = auth + strcspn(auth, "/?#");
	if (*auth == '[')
		auth = memchr(auth, ']', (size_t)(end - auth));
	if (!auth || !memchr(auth, ':', (size_t)(end - auth)))
		out->port = ES_ETCD_DEFAULT_PORT;
	return ES_OK;
}

es_err es_etcd_new(struct lws_context *ctx, const es_etcd_opts *o,
		   es_etcd **out, char *err, size_t errsz)
{
	struct lws_context_creation_info info;
	es_etcd *e = NULL;
	int any_tls = 0;
	es_err rc = ES_OK;

	*out = NULL;
	if (!ctx || !o || !o->endpoints || o->n_endpoints == 0)
		return es_errf(ES_ERR_INVAL, err, errsz, "etcd-endpoints: none given");
	if (o->n_endpoints > ES_ETCD_MAX_ENDPOINTS)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "etcd-endpoints: %zu given, at most %d",
			       o->n_endpoints, ES_ETCD_MAX_ENDPOINTS);
	if (!o->cert != !o->key)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "etcd-cert and etcd-key go together");
	e = calloc(1, sizeof(*e));
	if (!e)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	for (size_t i = 0; i < o->n_endpoints; i++) {
		es_url *u = &e->ep[i];

		rc = es_etcd_endpoint_parse(o->endpoints[i], u, err, errsz);
		if (rc != ES_OK)
			goto cleanup;
		any_tls |= !strcmp(u->scheme, "https");
		snprintf(e->ep_text[i], sizeof(e->ep_text[i]), "%s", o->endpoints[i]);
		snprintf(e->host_hdr[i], sizeof(e->host_hdr[i]),
			 u->ipv6 ? "[%s]:%d" : "%s:%d", u->host, u->port);
	}
	if (any_tls && !o->ca) {
		rc = es_errf(ES_ERR_INVAL, err, errsz,
			     "etcd-ca: required for https endpoints");
		goto cleanup;
	}
	e->n_ep = o->n_endpoints;
	e->ctx = ctx;
	e->timeout_ms = o->request_timeout_ms > 0 ? o->request_timeout_ms :
			DEFAULT_TIMEOUT_MS;
	e->watch_idle_ms = o->watch_idle_ms > 0 ? o->watch_idle_ms : 0;
	e->max_resp = o->max_response_bytes ? o->max_response_bytes :
		      DEFAULT_MAX_RESPONSE;
	e->observe = o->observe;
	e->observe_ud = o->observe_ud;

	memset(&info, 0, sizeof(info));
	info.vhost_name = "etcd";
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.protocols = etcd_protocols;
	if (any_tls) {
		info.client_ssl_ca_filepath = o->ca;
		info.client_ssl_cert_filepath = o->cert;
		info.client_ssl_private_key_filepath = o->key;
	}
	e->vh = lws_create_vhost(ctx, &info);
	if (!e->vh) {
		rc = es_errf(ES_ERR_TLS, err, errsz,
			     "etcd: could not set up the client (etcd-ca %s, etcd-cert %s, "
			     "etcd-key %s unreadable or not PEM?)",
			     o->ca ? o->ca : "-", o->cert ? o->cert : "-",
			     o->key ? o->key : "-");
		goto cleanup;
	}
	*out = e;
	e = NULL;
cleanup:
	free(e);
	return rc;
}

void es_etcd_destroy(es_etcd *e)
{
	if (!e)
		return;
	while (e->reqs) {
		etcd_req *r = e->reqs;

		unlink_req(r);
		r->e = NULL;
		detach(r);
		lws_sul_cancel(&r->sul_retry);
		if (r->kind == RK_WATCH)
			r->ended = 1; /* the caller still holds it: cancel frees */
		else
			req_free(r);
	}
	free(e);
}

const char *es_etcd_endpoint(const es_etcd *e)
{
	return e->ep_text[e->cur];
}

/* Starts a unary request whose body is text (taken over, freed here). */
static es_err start(es_etcd *e, req_kind kind, const char *method, char *text,
		    int idempotent, int64_t lease_id, es_etcd_cb cb, void *ud)
{
	etcd_req *r;
	size_t n;

	if (!text)
		return ES_ERR_NOMEM;
	n = strlen(text);
	r = calloc(1, sizeof(*r));
	if (!r || !(r->buf = malloc(LWS_PRE + n + 1))) {
		free(r);
		free(text);
		return ES_ERR_NOMEM;
	}
	memcpy(r->buf + LWS_PRE, text, n + 1);
	free(text);
	r->body_len = n;
	r->kind = kind;
	snprintf(r->path, sizeof(r->path), "%s%s", ES_ETCD_PATH_PREFIX, method);
	r->idempotent = idempotent;
	r->lease_id = lease_id;
	r->cb = cb;
	r->ud = ud;
	es_buf_init(&r->rx, e->max_resp);
	es_buf_init(&r->errs, 4096);
	link_req(e, r);
	r->ep = e->cur;
	r->t0_us = es_time_mono_us();
	attempt(r);
	return ES_OK;
}

es_err es_etcd_range(es_etcd *e, const void *key, size_t klen,
		     const void *range_end, size_t relen, int64_t revision,
		     int64_t limit, es_etcd_cb cb, void *ud)
{
	if (!key || !klen)
		return ES_ERR_INVAL;
	return start(e, RK_CALL, "kv/range",
		     es_etcd_msg_range(key, klen, range_end, relen, revision, limit),
		     1, 0, cb, ud);
}

es_err es_etcd_put(es_etcd *e, const void *key, size_t klen, const void *value,
		   size_t vlen, int64_t lease, es_etcd_cb cb, void *ud)
{
	if (!key || !klen)
		return ES_ERR_INVAL;
	return start(e, RK_CALL, "kv/put",
		     es_etcd_msg_put(key, klen, value, vlen, lease), 0, 0, cb, ud);
}

es_err es_etcd_delete(es_etcd *e, const void *key, size_t klen,
		      const void *range_end, size_t relen, es_etcd_cb cb,
		      void *ud)
{
	if (!key || !klen)
		return ES_ERR_INVAL;
	return start(e, RK_CALL, "kv/deleterange",
		     es_etcd_msg_delete(key, klen, range_end, relen), 0, 0, cb, ud);
}

es_err es_etcd_txn_send(es_etcd *e, const es_etcd_txn *t, es_etcd_cb cb, void *ud)
{
	es_err rc;
	char *body = es_etcd_msg_txn_body(t, &rc);

	if (!body)
		return rc;
	/* A txn of reads only changes nothing: like a range it may go to
	 * another endpoint after it was sent, and its failure never says etcd
	 * may have applied it. */
	return start(e, RK_CALL, "kv/txn", body, t->n_writes == 0, 0, cb, ud);
}

es_err es_etcd_lease_grant(es_etcd *e, int64_t ttl_s, es_etcd_cb cb, void *ud)
{
	if (ttl_s < 1)
		return ES_ERR_INVAL;
	return start(e, RK_CALL, "lease/grant", es_etcd_msg_lease_grant(ttl_s, 0),
		     0, 0, cb, ud);
}

es_err es_etcd_lease_keepalive(es_etcd *e, int64_t id, es_etcd_cb cb, void *ud)
{
	if (!id)
		return ES_ERR_INVAL;
	return start(e, RK_KEEPALIVE, "lease/keepalive", es_etcd_msg_lease_id(id),
		     1, id, cb, ud);
}

es_err es_etcd_lease_revoke(es_etcd *e, int64_t id, es_etcd_cb cb, void *ud)
{
	if (!id)
		return ES_ERR_INVAL;
	return start(e, RK_CALL, "lease/revoke", es_etcd_msg_lease_id(id), 1, id,
		     cb, ud);
}

es_err es_etcd_call(es_etcd *e, const char *method, const char *body,
		    int idempotent, es_etcd_cb cb, void *ud)
{
	if (!method || !*method || strlen(method) > 64 || !body)
		return ES_ERR_INVAL;
	return start(e, RK_CALL, method, strdup(body), idempotent, 0, cb, ud);
}

es_err es_etcd_watch_start(es_etcd *e, const void *key, size_t klen,
			   const void *range_end, size_t relen,
			   int64_t start_revision, es_etcd_watch_cb cb, void *ud,
			   es_etcd_watch **out)
{
	es_etcd_watch *w;
	etcd_req *r;

	*out = NULL;
	if (!key || !klen || start_revision < 0 || !cb)
		return ES_ERR_INVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return ES_ERR_NOMEM;
	r = &w->r;
	r->kind = RK_WATCH;
	r->wcb = cb;
	r->ud = ud;
	r->idempotent = 1;
	r->klen = klen;
	r->relen = range_end ? relen : 0;
	r->key = malloc(klen);
	r->range_end = range_end ? malloc(relen ? relen : 1) : NULL;
	if (!r->key || (range_end && !r->range_end)) {
		free(r->key);
		free(r->range_end);
		free(w);
		return ES_ERR_NOMEM;
	}
	memcpy(r->key, key, klen);
	if (range_end)
		memcpy(r->range_end, range_end, relen);
	r->next_rev = start_revision;
	r->backoff_ms = WATCH_BACKOFF_MIN_MS;
	snprintf(r->path, sizeof(r->path), "%swatch", ES_ETCD_PATH_PREFIX);
	es_buf_init(&r->rx, 65536);
	es_buf_init(&r->lines, MAX_LINE);
	es_buf_init(&r->errs, 4096);
	if (watch_body(r) != ES_OK) {
		free(r->key);
		free(r->range_end);
		free(r->buf);
		free(w);
		return ES_ERR_NOMEM;
	}
	link_req(e, r);
	r->ep = e->cur;
	attempt(r);
	*out = w;
	return ES_OK;
}

int64_t es_etcd_watch_next_revision(const es_etcd_watch *w)
{
	return w->r.next_rev;
}

void es_etcd_watch_cancel(es_etcd_watch *w)
{
	if (!w)
		return;
	req_free(&w->r);
}
