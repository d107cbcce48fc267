/*
 * server_admin.c - the admin HTTPS vhost (server.h): the admin identity
 * check, request bodies bounded by ES_ADMIN_MAX_BODY, the REST API
 * (admin.h), /metrics and Kubernetes Status error responses.
 */
#include "net/server_int.h"
#include "store/store_enroll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_buf.h"
#include "es_json.h"
#include "es_log.h"

typedef struct http_req http_req;

/* An admin request the store answers later (es_admin_handle_async): freed
 * by on_admin_done; r NULL once the connection went away. */
typedef struct admin_wait {
	struct lws *wsi;
	http_req *r;
} admin_wait;

/* Per-session data of an admin connection: the request in progress. */
struct http_req {
	const char *method;
	char *path, *query;
	es_buf body; /* bounded by ES_ADMIN_MAX_BODY */
	int want_body, too_big, responding;
	char who[ES_NAME_MAX + 1];
	char *resp;
	size_t resp_len, resp_off;
	admin_wait *wait;   /* the store's answer is awaited */
	int owed_status;    /* that answer came: headers owed (status) */
	const char *owed_type;
	struct lws *wsi;
	node_wait *nwait;   /* a node GET waiting for its desiredAck (server_wait.c) */
};

static void req_reset(http_req *r)
{
	if (r->wait)
		r->wait->r = NULL; /* on_admin_done frees it */
	server__wait_cancel(r->nwait);
	free(r->path);
	free(r->query);
	es_buf_free(&r->body);
	free(r->resp);
	memset(r, 0, sizeof(*r));
	es_buf_init(&r->body, ES_ADMIN_MAX_BODY);
}

/* Writes status and headers now; the body (taken) follows over
 * LWS_CALLBACK_HTTP_WRITEABLE, or at once and then the connection is closed
 * when close_now (a request whose body is not read). */
static int respond(struct lws *wsi, http_req *r, int status, const char *ctype,
		   char *body, size_t len, int close_now)
{
	free(r->resp);
	r->resp = body;
	r->resp_len = body ? len : 0;
	r->resp_off = 0;
	r->responding = 1;
	if (server__http_headers(wsi, status, ctype, r->resp_len, close_now) != 0)
		return -1;
	if (close_now) {
		unsigned char bb[LWS_PRE + 2048];
		size_t n = r->resp_len < 2048 ? r->resp_len : 2048;

		if (n) {
			memcpy(bb + LWS_PRE, r->resp, n);
			(void)lws_write(wsi, bb + LWS_PRE, n, LWS_WRITE_HTTP_FINAL);
		}
		return -1;
	}
	lws_callback_on_writable(wsi);
	return 0;
}

static int respond_status(struct lws *wsi, http_req *r, int code,
			  const char *reason, const char *message, int close_now)
{
	cJSON *st = es_admin_status(code, reason, message);
	char *b = st ? es_json_print(st) : NULL;

	cJSON_Delete(st);
	return respond(wsi, r, code, "application/json", b, b ? strlen(b) : 0,
		       close_now);
}

/* Answers r from the next LWS_CALLBACK_HTTP_WRITEABLE (an answer found
 * outside the request's own callback): status, ctype (static) and body
 * (taken; NULL: out of memory, sent without one). */
static void owe(struct lws *wsi, http_req *r, int status, const char *ctype,
		char *body, size_t len)
{
	free(r->resp);
	r->resp = body;
	r->resp_len = body ? len : 0;
	r->owed_status = status;
	r->owed_type = ctype;
	lws_callback_on_writable(wsi);
}

/* The store's answer to a pending request (es_admin_done_fn): the
 * response is written from the next LWS_CALLBACK_HTTP_WRITEABLE. */
static void on_admin_done(void *ud, es_admin_resp *resp)
{
	admin_wait *w = ud;
	http_req *r = w->r;
	static const char oom[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
		"\"metadata\":{},\"status\":\"Failure\",\"message\":\"out of memory\","
		"\"reason\":\"InternalError\",\"code\":500}";

	if (!r) {
		if (resp)
			free(resp->body);
		free(w);
		return;
	}
	r->wait = NULL;
	if (resp)
		owe(w->wsi, r, resp->status, resp->content_type, resp->body,
		    resp->body_len);
	else
		owe(w->wsi, r, 500, "application/json", strdup(oom), strlen(oom));
	free(w);
}

void es_server_set_store(es_server *srv, es_store *store)
{
	srv->store = store;
	/* Revocations made on other controllers close sessions here. */
	es_store_on_revoked(store, es_server_node_revoked, srv);
}

/* Hands r to the admin API (admin.h). */
static int api(struct lws *wsi, es_server *s, http_req *r)
{
	es_admin_resp resp = { 0 };
	admin_wait *w = NULL;

	if (s->store && !(w = calloc(1, sizeof(*w))))
		return respond_status(wsi, r, 500, "InternalError", "out of memory", 0);
	if (w) {
		w->wsi = wsi;
		w->r = r;
	}
	if (es_admin_handle_async(s->db, s->store, &s->hooks, r->method, r->path,
				  r->query, r->body.p, r->body.len, r->who,
				  w ? on_admin_done : NULL, w, &resp) != ES_OK) {
		free(w);
		return respond_status(wsi, r, 500, "InternalError", "out of memory", 0);
	}
	if (resp.status == 0) {
		r->wait = w; /* answered through on_admin_done */
		return 0;
	}
	free(w);
	return respond(wsi, r, resp.status, resp.content_type, resp.body,
		       resp.body_len, 0);
}

/* The Status of a wait's outcome (server_wait.c): status Success for
 * 200 (API conventions: a Status may report success), else Failure with
 * reason. NULL when out of memory. */
static char *wait_status(int code, const char *reason, const char *message)
{
	cJSON *st = es_admin_status(code, reason ? reason : "", message);
	char *b = NULL;

	if (st && code == 200) {
		cJSON_DeleteItemFromObject(st, "reason");
		cJSON_ReplaceItemInObject(st, "status", cJSON_CreateString("Success"));
	}
	b = st ? es_json_print(st) : NULL;
	cJSON_Delete(st);
	return b;
}

/* How a node GET's wait ended (server_wait_fn): its Status is owed. */
static void on_wait_done(void *ud, int status, const char *reason, const char *message)
{
	http_req *r = ud;
	char *b = wait_status(status, reason, message);

	r->nwait = NULL;
	owe(r->wsi, r, status, "application/json", b, b ? strlen(b) : 0);
}

/* The node NAME of "GET <API>/nodes/NAME" (no further segment) in path,
 * else NULL. */
static const char *node_get_name(const http_req *r)
{
	static const char pre[] = "/apis/edgesync.io/v1alpha1/nodes/";
	const char *name = r->path + sizeof(pre) - 1;

	if (strcmp(r->method, "GET") != 0 || strncmp(r->path, pre, sizeof(pre) - 1) != 0 ||
	    !*name || strchr(name, '/'))
		return NULL;
	return name;
}

/* A request with waitForDesiredResourceVersion rv (and timeoutSeconds,
 * server_wait.c): answered once the node is in sync or at the timeout; at
 * once when the node has no session here or is unknown. */
static int dispatch_wait(struct lws *wsi, es_server *s, http_req *r, int64_t rv,
			 int timeout_s)
{
	const char *node = node_get_name(r);
	char why[600], *b;
	int st;

	if (!node) {
		snprintf(why, sizeof(why), "%s applies to GET "
			 "/apis/edgesync.io/v1alpha1/nodes/NAME only, not to %s %s",
			 SERVER_WAIT_PARAM, r->method, r->path);
		return respond_status(wsi, r, 400, "BadRequest", why, 0);
	}
	if (!es_obj_name_valid(node))
		return api(wsi, s, r); /* the API's own 404 */
	st = server__wait_start(s, node, rv, timeout_s, on_wait_done, r, &r->nwait,
				why, sizeof(why));
	if (st == 0) {
		/* libwebsockets' own timeout for an answer (the context's
		 * timeout_secs, 20 s) would close the connection first. */
		lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, timeout_s + 10);
		return 0;
	}
	if (st == 500)
		return respond_status(wsi, r, 500, "InternalError", why, 0);
	if (st == 404)
		return api(wsi, s, r); /* the API's own 404, with its details */
	b = wait_status(st, st == 409 ? "NodeNotConnected" : st == 504 ? "Timeout" : NULL,
			why);
	return respond(wsi, r, st, "application/json", b, b ? strlen(b) : 0, 0);
}

static int dispatch(struct lws *wsi, es_server *s, http_req *r)
{
	int64_t rv;
	int timeout_s, wait;
	char why[600];

	wait = server__wait_params(r->query, &rv, &timeout_s, why, sizeof(why));
	if (wait < 0)
		return respond_status(wsi, r, 400, "BadRequest", why, 0);
	if (wait)
		return dispatch_wait(wsi, s, r, rv, timeout_s);
	if (strcmp(r->path, "/metrics") == 0) {
		size_t len = 0;
		char *m;

		if (strcmp(r->method, "GET") != 0)
			return respond_status(wsi, r, 405, "MethodNotAllowed",
					      "/metrics: only GET", 0);
		if (es_ctrl_metrics_render(s->metrics, s->n_ready, &m, &len) != ES_OK)
			return respond_status(wsi, r, 500, "InternalError",
					      "out of memory", 0);
		return respond(wsi, r, 200,
			       "text/plain; version=0.0.4; charset=utf-8", m, len, 0);
	}
	return api(wsi, s, r);
}

/* Collects the URI arguments (libwebsockets splits them at '&' and ';'
 * and decodes each), joined with '&', empty ones left out; a decoded '&'
 * in one is written %26 again, so it stays inside its argument. NULL when there are none or out of memory. */
static char *query_of(struct lws *wsi)
{
	int total = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS), n;
	char *frag;
	es_buf q = { 0 };

	if (total <= 0 || !(frag = malloc((size_t)total + 1)))
		return NULL;
	/* With room for all of them, only a missing fragment is refused. */
	for (int i = 0; (n = lws_hdr_copy_fragment(wsi, frag, total + 1,
						   WSI_TOKEN_HTTP_URI_ARGS, i)) >= 0; i++) {
		es_err rc = n && q.len ? es_buf_append(&q, "&", 1) : ES_OK;

		for (int j = 0; j < n && rc == ES_OK; j++)
			rc = frag[j] == '&' ? es_buf_append(&q, "%26", 3) :
			     es_buf_append(&q, frag + j, 1);
		if (rc != ES_OK) {
			es_buf_free(&q);
			break;
		}
	}
	free(frag);
	return es_buf_detach(&q, NULL);
}

static int on_http(struct lws *wsi, es_server *s, http_req *r, const char *uri,
		   size_t urilen)
{
	static const struct { enum lws_token_indexes tok; const char *name; } ms[] = {
		{ WSI_TOKEN_GET_URI, "GET" }, { WSI_TOKEN_POST_URI, "POST" },
		{ WSI_TOKEN_PUT_URI, "PUT" }, { WSI_TOKEN_DELETE_URI, "DELETE" },
		{ WSI_TOKEN_PATCH_URI, "PATCH" }, { WSI_TOKEN_OPTIONS_URI, "OPTIONS" },
		{ WSI_TOKEN_HEAD_URI, "HEAD" },
	};
	char why[512] = "", peer[64] = "", cl[32] = "";
	long long clen = -1;

	req_reset(r);
	r->wsi = wsi;
	lws_get_peer_simple(wsi, peer, sizeof(peer));
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]) && !r->method; i++)
		if (lws_hdr_total_length(wsi, ms[i].tok) > 0)
			r->method = ms[i].name;
	if (server__check_peer(s, wsi, ES_ID_ADMIN, r->who, sizeof(r->who),
			       why, sizeof(why))) {
		char msg[900];

		es_log_warn("server", "admin request refused", "peer", peer,
			    "reason", why, NULL);
		/* Say what would pass: the operator holds the wrong file. */
		snprintf(msg, sizeof(msg), "%s; the admin API accepts a client certificate "
			 "from client-ca with one URI subjectAltName spiffe://%s/admin/<name>",
			 why, s->trust_domain);
		return respond_status(wsi, r, 403, "Forbidden", msg, 1);
	}
	r->path = strndup(uri ? uri : "", urilen);
	r->query = query_of(wsi);
	if (!r->path)
		return respond_status(wsi, r, 500, "InternalError", "out of memory", 1);
	if (!r->method)
		return respond_status(wsi, r, 405, "MethodNotAllowed",
				      "unsupported method", 1);
	if (lws_hdr_copy(wsi, cl, sizeof(cl), WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0)
		clen = strtoll(cl, NULL, 10);
	if (clen > ES_ADMIN_MAX_BODY)
		return respond_status(wsi, r, 413, "RequestEntityTooLarge",
				      "request body over 4194304 bytes", 1);
	if (clen < 0 && (!strcmp(r->method, "POST") || !strcmp(r->method, "PUT") ||
			 !strcmp(r->method, "PATCH")))
		return respond_status(wsi, r, 411, "LengthRequired",
				      "a request body needs Content-Length", 1);
	if (clen > 0 || (clen == 0 && !strcmp(r->method, "POST"))) {
		r->want_body = 1;
		return 0;
	}
	return dispatch(wsi, s, r);
}

static int on_http_body(http_req *r, const void *in, size_t len)
{
	es_err rc;

	if (!r->want_body || r->too_big || !len)
		return 0;
	rc = es_buf_append(&r->body, in, len);
	if (rc == ES_ERR_TOOBIG) {
		r->too_big = 1;
		es_buf_free(&r->body);
		return 0;
	}
	return rc == ES_OK ? 0 : -1;
}

int server__http_headers(struct lws *wsi, int status, const char *ctype,
			 size_t len, int close_now)
{
	unsigned char hdr[LWS_PRE + 1024], *p = hdr + LWS_PRE,
		*end = hdr + sizeof(hdr) - 1;

	if (lws_add_http_common_headers(wsi, (unsigned)status, ctype, len, &p, end) ||
	    (close_now && lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION,
				(const unsigned char *)"close", 5, &p, end)) ||
	    lws_finalize_write_http_header(wsi, hdr + LWS_PRE, &p, end))
		return -1;
	return 0;
}

int server__http_write_body(struct lws *wsi, es_server *s, const char *body,
			    size_t len, size_t *off)
{
	size_t n = len - *off;
	int final;

	if (n > SERVER_HTTP_CHUNK)
		n = SERVER_HTTP_CHUNK;
	final = *off + n == len;
	if (n) {
		memcpy(s->chunk + LWS_PRE, body + *off, n);
		if (lws_write(wsi, s->chunk + LWS_PRE, n,
			      final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) < 0)
			return -1;
	}
	*off += n;
	if (!final) {
		lws_callback_on_writable(wsi);
		return 0;
	}
	return 1;
}

static int on_http_writeable(struct lws *wsi, es_server *s, http_req *r)
{
	int n;

	if (r->owed_status) {
		char *body = r->resp;
		int status = r->owed_status;

		r->owed_status = 0;
		r->resp = NULL;
		if (respond(wsi, r, status, r->owed_type, body, r->resp_len, 0) != 0)
			return -1;
		/* The body follows in this callback (libwebsockets queues what
		 * the socket does not take), so nothing the loop does next, such
		 * as a batch's fsync, comes between the two. */
	}
	if (!r->responding)
		return 0;
	n = server__http_write_body(wsi, s, r->resp, r->resp_len, &r->resp_off);
	if (n <= 0)
		return n;
	req_reset(r);
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int cb_admin(struct lws *wsi, enum lws_callback_reasons reason,
		    void *user, void *in, size_t len)
{
	http_req *r = user;
	es_server *s = server__from_wsi(wsi);

	switch (reason) {
	case LWS_CALLBACK_HTTP:
		return r ? on_http(wsi, s, r, in, len) : -1;
	case LWS_CALLBACK_HTTP_BODY:
		return r ? on_http_body(r, in, len) : -1;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		if (!r || !r->want_body)
			return 0;
		r->want_body = 0;
		if (r->too_big)
			return respond_status(wsi, r, 413, "RequestEntityTooLarge",
					      "request body over 4194304 bytes", 0);
		return dispatch(wsi, s, r);
	case LWS_CALLBACK_HTTP_WRITEABLE:
		return r ? on_http_writeable(wsi, s, r) : 0;
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		return -1;
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
	case LWS_CALLBACK_CLOSED_HTTP:
		if (r)
			req_reset(r);
		return 0;
	default:
		return 0;
	}
}

const struct lws_protocols server__admin_protocols[] = {
	{ "edgesync-admin", cb_admin, sizeof(http_req), 16384, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
};
