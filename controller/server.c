/*
 * server.c - the controller's libwebsockets context: the agents' sync
 * endpoint (proto/PROTOCOL.md) and the admin HTTPS listener (admin.h).
 */
#include "server.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libwebsockets.h>

#include "admin.h"
#include "es_json.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_pki.h"
#include "es_proto.h"
#include "es_time.h"
#include "es_version.h"

/* Largest peer certificate (DER) accepted. */
#define DER_MAX 16384
/* Bytes queued for one agent before the connection is dropped. */
#define SEND_QUEUE_MAX (16u * 1024 * 1024)
/* Room kept in a desired message for its envelope. */
#define DESIRED_BUDGET (ES_PROTO_MAX_MESSAGE - 4096)
#define HTTP_CHUNK 16384
#define SWEEP_US (1000 * LWS_US_PER_MS)
/* Seconds a closing connection may take before it is cut. */
#define CLOSE_GRACE_S 10

typedef struct out_msg {
	struct out_msg *next;
	size_t len;
	unsigned char data[]; /* LWS_PRE bytes, then the message */
} out_msg;

enum conn_state { CS_NONE = 0, CS_HELLO, CS_READY, CS_CLOSING };

/* Per-session data of an agent connection (allocated zeroed by lws). */
typedef struct conn {
	es_server *srv;
	struct lws *wsi;
	struct conn *prev, *next;
	enum conn_state state;
	int linked, helloed, replaced, binary;
	char node[ES_NAME_MAX + 1];
	cJSON *labels;
	out_msg *qhead, *qtail;
	size_t qbytes;
	char *rx;
	size_t rx_len, rx_cap;
	int close_code;
	char close_reason[32];
	int64_t last_rx_ms;
} conn;

/* Per-session data of an admin connection: the request in progress. */
typedef struct http_req {
	const char *method;
	char *path, *query, *body;
	size_t body_len, body_cap;
	int want_body, too_big, responding;
	char who[ES_NAME_MAX + 1];
	char *resp;
	size_t resp_len, resp_off;
} http_req;

struct es_server {
	struct lws_context *ctx;
	es_db *db;
	char *trust_domain;
	conn *conns;
	int n_ready;
	uint64_t rx_by_type[ES_MSG_ERROR + 1];
	uint64_t reports_dup;
	volatile sig_atomic_t stop;
	lws_sorted_usec_list_t sweep;
	es_admin_hooks hooks;
	unsigned char chunk[LWS_PRE + HTTP_CHUNK];
};

static es_server *srv_of(struct lws *wsi)
{
	return lws_context_user(lws_get_context(wsi));
}

/*
 * The identity check of PROTOCOL.md "Transport": a certificate that
 * verified against the vhost's CA, then es_pki_check_peer's rules.
 * Returns 0 and fills name, or -1 with why set.
 */
static int check_peer(es_server *s, struct lws *wsi, es_identity_kind want,
		      char *name, size_t namesz, char *why, size_t whysz)
{
	const size_t alloc = sizeof(union lws_tls_cert_info_results) + DER_MAX;
	union lws_tls_cert_info_results ci, *der = NULL;
	int rc = -1;

	memset(&ci, 0, sizeof(ci));
	if (lws_tls_peer_cert_info(wsi, LWS_TLS_CERT_INFO_VERIFIED, &ci, 0)) {
		es_errf(ES_ERR_AUTH, why, whysz, "no client certificate");
		goto cleanup;
	}
	if (!ci.verified) {
		es_errf(ES_ERR_AUTH, why, whysz,
			"client certificate does not verify against the CA "
			"(unknown issuer, expired or not yet valid)");
		goto cleanup;
	}
	der = calloc(1, alloc);
	if (!der) {
		es_errf(ES_ERR_NOMEM, why, whysz, "out of memory");
		goto cleanup;
	}
	if (lws_tls_peer_cert_info(wsi, LWS_TLS_CERT_INFO_DER_RAW, der,
				   DER_MAX + sizeof(der->ns.name)) ||
	    der->ns.len <= 0) {
		es_errf(ES_ERR_AUTH, why, whysz,
			"client certificate unreadable or over %d bytes", DER_MAX);
		goto cleanup;
	}
	if (es_pki_check_peer((const unsigned char *)der->ns.name,
			      (size_t)der->ns.len, s->trust_domain, want, name,
			      namesz, why, whysz) != ES_OK)
		goto cleanup;
	rc = 0;
cleanup:
	free(der);
	return rc;
}

/* ---- agents: outgoing queue and closing ---- */

static void start_close(conn *c, int code, const char *reason)
{
	if (c->state == CS_CLOSING)
		return;
	if (c->state == CS_READY)
		c->srv->n_ready--;
	c->state = CS_CLOSING;
	c->close_code = code;
	snprintf(c->close_reason, sizeof(c->close_reason), "%s", reason);
	lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, CLOSE_GRACE_S);
	lws_callback_on_writable(c->wsi);
}

static void queue_clear(conn *c)
{
	while (c->qhead) {
		out_msg *m = c->qhead;

		c->qhead = m->next;
		free(m);
	}
	c->qtail = NULL;
	c->qbytes = 0;
}

static void queue_error(conn *c, es_proto_code code, const char *text);

/* Serialises m (taken) onto the connection's queue. */
static es_err queue_msg(conn *c, cJSON *m)
{
	char *txt = m ? es_json_print(m) : NULL;
	size_t len = txt ? strlen(txt) : 0;
	out_msg *o = txt ? malloc(sizeof(*o) + LWS_PRE + len) : NULL;

	cJSON_Delete(m);
	if (!o) {
		free(txt);
		return ES_ERR_NOMEM;
	}
	o->next = NULL;
	o->len = len;
	memcpy(o->data + LWS_PRE, txt, len);
	free(txt);
	if (len > ES_PROTO_MAX_MESSAGE) {
		es_log_error("server", "message over the size limit not sent",
			     "node", c->node, NULL);
		free(o);
		return ES_OK;
	}
	if (c->qtail)
		c->qtail->next = o;
	else
		c->qhead = o;
	c->qtail = o;
	c->qbytes += len;
	lws_callback_on_writable(c->wsi);
	if (c->qbytes > SEND_QUEUE_MAX && c->state != CS_CLOSING) {
		es_log_warn("server", "send queue full, dropping the connection",
			    "node", c->node, NULL);
		queue_clear(c);
		queue_error(c, ES_PC_INTERNAL, "send queue over its limit");
	}
	return ES_OK;
}

/* Sends `error` then closes with the code's close code (PROTOCOL.md
 * "Errors"). */
static void queue_error(conn *c, es_proto_code code, const char *text)
{
	if (c->state == CS_CLOSING)
		return;
	es_log_warn("server", "protocol error", "node", c->node, "code",
		    es_proto_code_name(code), "error", text, NULL);
	(void)queue_msg(c, es_proto_error(code, text));
	start_close(c, es_proto_close_code(code), es_proto_code_name(code));
}

/* ---- agents: desired state ---- */

typedef struct desired_batch {
	conn *c;
	int full;
	int64_t rv;
	cJSON *objs, *dels;
	size_t count, bytes;
} desired_batch;

static es_err batch_flush(desired_batch *b, int more)
{
	/* Every part of a split full list says full: the agent joins the parts
	 * and replaces its set at the last one (PROTOCOL.md, "desired"). */
	cJSON *m = es_proto_desired(b->full, b->rv, b->objs, b->dels, more);

	b->objs = b->dels = NULL;
	b->count = b->bytes = 0;
	if (!m)
		return ES_ERR_NOMEM;
	if (queue_msg(b->c, m) != ES_OK)
		return ES_ERR_NOMEM;
	if (more) {
		b->objs = cJSON_CreateArray();
		b->dels = cJSON_CreateArray();
		if (!b->objs || !b->dels)
			return ES_ERR_NOMEM;
	}
	return ES_OK;
}

/* Adds item (taken) to the batch's objects or deleted refs, starting a new
 * message when this one is at ES_PROTO_MAX_OBJECTS_PER_MSG or its size
 * budget. */
static es_err batch_add(desired_batch *b, cJSON *item, int deleted)
{
	char *txt = es_json_print(item);
	size_t sz = txt ? strlen(txt) + 1 : 0;
	es_err rc;

	free(txt);
	if (!txt) {
		cJSON_Delete(item);
		return ES_ERR_NOMEM;
	}
	if (sz > DESIRED_BUDGET) {
		es_log_error("server", "object too large for one message, not sent",
			     "node", b->c->node, "name", es_obj_name(item), NULL);
		cJSON_Delete(item);
		return ES_OK;
	}
	if (b->count && (b->count >= ES_PROTO_MAX_OBJECTS_PER_MSG ||
			 b->bytes + sz > DESIRED_BUDGET)) {
		rc = batch_flush(b, 1);
		if (rc != ES_OK) {
			cJSON_Delete(item);
			return rc;
		}
	}
	cJSON_AddItemToArray(deleted ? b->dels : b->objs, item);
	b->count++;
	b->bytes += sz;
	return ES_OK;
}

static cJSON *deleted_ref(const cJSON *obj)
{
	return es_proto_deleted_ref(es_obj_kind_str(obj), es_obj_name(obj),
				    es_obj_uid(obj));
}

/*
 * The sync after a hello (PROTOCOL.md "Desired state"): a full list when
 * since is 0, older than the compaction point, newer than the store, or
 * the labels changed; else the changes since it. Always at least one
 * message.
 */
static es_err sync_desired(conn *c, int64_t since, int labels_changed)
{
	es_db *db = c->srv->db;
	desired_batch b = { .c = c };
	cJSON *list = NULL, *tombs = NULL, *it;
	int64_t compacted = 0;
	es_err rc;

	rc = es_db_rv(db, &b.rv, &compacted);
	if (rc != ES_OK)
		goto cleanup;
	b.full = since == 0 || since < compacted || since > b.rv ||
		 labels_changed;
	if (b.full)
		rc = es_db_object_list(db, ES_KIND_UNKNOWN, &list);
	else
		rc = es_db_changes_since(db, since, &list, &tombs);
	if (rc != ES_OK)
		goto cleanup;
	b.objs = cJSON_CreateArray();
	b.dels = cJSON_CreateArray();
	if (!b.objs || !b.dels) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	while (rc == ES_OK && list && (it = list->child) != NULL) {
		cJSON_DetachItemViaPointer(list, it);
		if (es_obj_selects(it, c->labels)) {
			rc = batch_add(&b, it, 0);
		} else if (!b.full) {
			cJSON *ref = deleted_ref(it);

			cJSON_Delete(it);
			rc = ref ? batch_add(&b, ref, 1) : ES_ERR_NOMEM;
		} else {
			cJSON_Delete(it);
		}
	}
	for (it = tombs ? tombs->child : NULL; rc == ES_OK && it; it = it->next) {
		cJSON *ref = es_proto_deleted_ref(
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "kind")),
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "name")),
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "uid")));

		rc = ref ? batch_add(&b, ref, 1) : ES_ERR_NOMEM;
	}
	if (rc == ES_OK)
		rc = batch_flush(&b, 0);
	es_log_info("server", b.full ? "desired sync: full list" :
		    "desired sync: changes", "node", c->node, NULL);
cleanup:
	cJSON_Delete(b.objs);
	cJSON_Delete(b.dels);
	cJSON_Delete(list);
	cJSON_Delete(tombs);
	return rc;
}

void es_server_object_changed(void *ud, const cJSON *prev, const cJSON *cur)
{
	es_server *s = ud;
	int64_t rv = 0, compacted = 0;

	if (es_db_rv(s->db, &rv, &compacted) != ES_OK)
		rv = es_obj_resource_version(cur ? cur : prev);
	for (conn *c = s->conns; c; c = c->next) {
		cJSON *objs, *dels, *item = NULL;
		int del = 0;

		if (c->state != CS_READY)
			continue;
		if (cur && es_obj_selects(cur, c->labels)) {
			item = cJSON_Duplicate(cur, 1);
		} else if (prev && es_obj_selects(prev, c->labels)) {
			item = deleted_ref(prev);
			del = 1;
		} else {
			continue;
		}
		objs = cJSON_CreateArray();
		dels = cJSON_CreateArray();
		if (item && objs && dels) {
			cJSON_AddItemToArray(del ? dels : objs, item);
			item = NULL;
			if (queue_msg(c, es_proto_desired(0, rv, objs, dels, 0)) ==
			    ES_OK)
				continue;
		} else {
			cJSON_Delete(objs);
			cJSON_Delete(dels);
		}
		cJSON_Delete(item);
		queue_error(c, ES_PC_INTERNAL, "out of memory");
	}
}

/* ---- agents: messages ---- */

static void on_hello(conn *c, const cJSON *msg)
{
	es_server *s = c->srv;
	const char *node = cJSON_GetStringValue(cJSON_GetObjectItem(msg, "node"));
	const cJSON *labels = cJSON_GetObjectItem(msg, "labels");
	int64_t since = 0, acked = 0;
	int labels_changed = 0;
	char e[512];

	if (c->helloed) {
		queue_error(c, ES_PC_PROTOCOL, "a second hello on this connection");
		return;
	}
	if (!node || strcmp(node, c->node) != 0) {
		snprintf(e, sizeof(e),
			 "hello.node \"%.253s\" is not the certificate's node \"%s\"",
			 node ? node : "", c->node);
		queue_error(c, ES_PC_IDENTITY, e);
		return;
	}
	es_json_get_int(msg, "hello", "resourceVersion", 0, 0, ES_JSON_MAX_INT,
			&since, NULL, 0);
	for (conn *o = s->conns; o; o = o->next) {
		if (o == c || o->state != CS_READY || strcmp(o->node, c->node))
			continue;
		es_log_info("server", "connection replaced by a newer one",
			    "node", o->node, NULL);
		o->replaced = 1;
		queue_clear(o);
		start_close(o, ES_SERVER_CLOSE_REPLACED, "replaced");
	}
	c->labels = cJSON_IsObject(labels) ? cJSON_Duplicate(labels, 1)
					   : cJSON_CreateObject();
	if (!c->labels) {
		queue_error(c, ES_PC_INTERNAL, "out of memory");
		return;
	}
	if (es_db_node_hello(s->db, c->node, c->labels,
			     cJSON_GetStringValue(cJSON_GetObjectItem(msg, "agentVersion")),
			     cJSON_GetStringValue(cJSON_GetObjectItem(msg, "bootId")),
			     time(NULL), &acked, &labels_changed) != ES_OK) {
		queue_error(c, ES_PC_INTERNAL, "the controller's store failed");
		return;
	}
	c->helloed = 1;
	c->state = CS_READY;
	s->n_ready++;
	es_log_info("server", "agent ready", "node", c->node, NULL);
	if (queue_msg(c, es_proto_welcome(c->node, ES_VERSION, acked)) != ES_OK ||
	    sync_desired(c, since, labels_changed) != ES_OK)
		queue_error(c, ES_PC_INTERNAL, "could not compute the desired state");
}

static void on_report(conn *c, const cJSON *msg)
{
	int64_t seq = 0;
	int dup = 0, resync = 0;

	es_json_get_int(msg, "report", "seq", 1, 1, ES_JSON_MAX_INT, &seq, NULL, 0);
	if (es_db_report_store(c->srv->db, c->node, msg, time(NULL), &dup,
			       &resync) != ES_OK) {
		queue_error(c, ES_PC_INTERNAL, "the controller's store failed");
		return;
	}
	if (dup)
		c->srv->reports_dup++;
	if (queue_msg(c, es_proto_ack(seq)) != ES_OK ||
	    (resync && queue_msg(c, es_proto_resync()) != ES_OK))
		queue_error(c, ES_PC_INTERNAL, "out of memory");
}

static void handle_message(conn *c, const char *buf, size_t len)
{
	es_msg_type t = ES_MSG_UNKNOWN;
	es_proto_code code = ES_PC_MALFORMED;
	cJSON *msg = NULL;
	char e[512];
	int64_t rv = 0;
	es_err rc;

	rc = es_proto_decode(buf, len, &t, &msg, &code, e, sizeof(e));
	if (rc == ES_ERR_NOMEM) {
		queue_error(c, ES_PC_INTERNAL, "out of memory");
		return;
	}
	if (rc != ES_OK) {
		queue_error(c, code, e);
		return;
	}
	c->srv->rx_by_type[t]++;
	if (t != ES_MSG_HELLO && !c->helloed) {
		snprintf(e, sizeof(e), "%s before hello", es_proto_type_name(t));
		queue_error(c, ES_PC_PROTOCOL, e);
		goto cleanup;
	}
	switch (t) {
	case ES_MSG_HELLO:
		on_hello(c, msg);
		break;
	case ES_MSG_REPORT:
		on_report(c, msg);
		break;
	case ES_MSG_DESIRED_ACK:
		es_json_get_int(msg, "desiredAck", "resourceVersion", 1, 0,
				ES_JSON_MAX_INT, &rv, NULL, 0);
		if (es_db_node_desired_ack(c->srv->db, c->node, rv, time(NULL)) !=
		    ES_OK)
			queue_error(c, ES_PC_INTERNAL, "the controller's store failed");
		break;
	case ES_MSG_PING:
		if (queue_msg(c, es_proto_pong(cJSON_GetStringValue(
				 cJSON_GetObjectItem(msg, "time")))) != ES_OK)
			queue_error(c, ES_PC_INTERNAL, "out of memory");
		break;
	case ES_MSG_PONG:
		break;
	case ES_MSG_ERROR:
		es_log_warn("server", "agent reported an error", "node", c->node,
			    "code", cJSON_GetStringValue(cJSON_GetObjectItem(msg, "code")),
			    "error", cJSON_GetStringValue(cJSON_GetObjectItem(msg, "message")),
			    NULL);
		break;
	default:
		snprintf(e, sizeof(e), "%s is sent by the controller, not to it",
			 es_proto_type_name(t));
		queue_error(c, ES_PC_PROTOCOL, e);
		break;
	}
cleanup:
	cJSON_Delete(msg);
}

/* Buffers one fragment; a complete message is handled. Stops buffering as
 * soon as the message exceeds ES_PROTO_MAX_MESSAGE. */
static void on_receive(conn *c, const void *in, size_t len)
{
	struct lws *wsi = c->wsi;

	if (c->state == CS_CLOSING)
		return;
	c->last_rx_ms = es_time_mono_ms();
	if (c->rx_len == 0 && lws_is_first_fragment(wsi))
		c->binary = lws_frame_is_binary(wsi);
	if (len > ES_PROTO_MAX_MESSAGE - c->rx_len) {
		free(c->rx);
		c->rx = NULL;
		c->rx_len = c->rx_cap = 0;
		queue_error(c, ES_PC_TOO_BIG, "message over 1048576 bytes");
		return;
	}
	if (c->rx_len + len > c->rx_cap) {
		size_t cap = c->rx_cap ? c->rx_cap : 4096;
		char *n;

		while (cap < c->rx_len + len)
			cap *= 2;
		if (cap > ES_PROTO_MAX_MESSAGE)
			cap = ES_PROTO_MAX_MESSAGE;
		n = realloc(c->rx, cap);
		if (!n) {
			queue_error(c, ES_PC_INTERNAL, "out of memory");
			return;
		}
		c->rx = n;
		c->rx_cap = cap;
	}
	if (len)
		memcpy(c->rx + c->rx_len, in, len);
	c->rx_len += len;
	if (!lws_is_final_fragment(wsi))
		return;
	if (c->binary)
		queue_error(c, ES_PC_MALFORMED,
			    "binary message; one JSON text message expected");
	else
		handle_message(c, c->rx, c->rx_len);
	c->rx_len = 0;
}

static int on_writeable(conn *c)
{
	out_msg *m = c->qhead;

	if (m) {
		int n;

		c->qhead = m->next;
		if (!c->qhead)
			c->qtail = NULL;
		c->qbytes -= m->len;
		n = lws_write(c->wsi, m->data + LWS_PRE, m->len, LWS_WRITE_TEXT);
		free(m);
		if (n < 0)
			return -1;
		if (c->qhead || c->state == CS_CLOSING)
			lws_callback_on_writable(c->wsi);
		return 0;
	}
	if (c->state == CS_CLOSING) {
		lws_close_reason(c->wsi, (enum lws_close_status)c->close_code,
				 (unsigned char *)c->close_reason,
				 strlen(c->close_reason));
		return -1;
	}
	return 0;
}

static void conn_release(conn *c)
{
	es_server *s = c->srv;

	if (!c->linked)
		return;
	if (c->state == CS_READY)
		s->n_ready--;
	if (c->helloed && !c->replaced &&
	    es_db_node_disconnected(s->db, c->node, time(NULL)) != ES_OK)
		es_log_error("server", "could not record the disconnection",
			     "node", c->node, NULL);
	es_log_info("server", "agent disconnected", "node", c->node, NULL);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	queue_clear(c);
	free(c->rx);
	cJSON_Delete(c->labels);
	memset(c, 0, sizeof(*c));
}

static int filter_agent(struct lws *wsi, conn *c)
{
	char uri[64] = "", why[512] = "", peer[64] = "";
	es_server *s = srv_of(wsi);

	lws_get_peer_simple(wsi, peer, sizeof(peer));
	if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) < 0 ||
	    strcmp(uri, ES_PROTO_PATH) != 0)
		snprintf(why, sizeof(why), "WebSocket path is not %s", ES_PROTO_PATH);
	else if (lws_hdr_total_length(wsi, WSI_TOKEN_PROTOCOL) <= 0)
		snprintf(why, sizeof(why), "no subprotocol; %s required",
			 ES_PROTO_SUBPROTOCOL);
	else if (check_peer(s, wsi, ES_ID_NODE, c->node, sizeof(c->node), why,
			    sizeof(why)) == 0)
		return 0;
	es_log_warn("server", "agent connection refused", "peer", peer,
		    "reason", why, NULL);
	return -1;
}

static int cb_agent(struct lws *wsi, enum lws_callback_reasons reason,
		    void *user, void *in, size_t len)
{
	conn *c = user;
	es_server *s;

	switch (reason) {
	case LWS_CALLBACK_HTTP:
		lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND,
				       "WebSocket edgesync.v1 at /v1/sync only");
		return lws_http_transaction_completed(wsi) ? -1 : 0;
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		return c ? filter_agent(wsi, c) : -1;
	case LWS_CALLBACK_ESTABLISHED:
		s = srv_of(wsi);
		if (!c || !c->node[0])
			return -1;
		c->srv = s;
		c->wsi = wsi;
		c->state = CS_HELLO;
		c->last_rx_ms = es_time_mono_ms();
		c->linked = 1;
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		es_log_info("server", "agent connected", "node", c->node, NULL);
		return 0;
	case LWS_CALLBACK_RECEIVE:
		if (c && c->linked)
			on_receive(c, in, len);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return c && c->linked ? on_writeable(c) : 0;
	case LWS_CALLBACK_CLOSED:
	case LWS_CALLBACK_WSI_DESTROY:
		if (c)
			conn_release(c);
		return 0;
	default:
		return 0;
	}
}

/* Closes connections silent for ES_PROTO_CONTROLLER_DEAD_S with 1001. */
static void sweep_cb(lws_sorted_usec_list_t *sul)
{
	es_server *s = lws_container_of(sul, es_server, sweep);
	int64_t now = es_time_mono_ms();

	for (conn *c = s->conns; c; c = c->next) {
		if (c->state == CS_CLOSING ||
		    now - c->last_rx_ms < ES_PROTO_CONTROLLER_DEAD_S * 1000LL)
			continue;
		es_log_info("server", "agent silent, closing", "node", c->node, NULL);
		queue_clear(c);
		start_close(c, LWS_CLOSE_STATUS_GOINGAWAY, "silent");
	}
	lws_sul_schedule(s->ctx, 0, &s->sweep, sweep_cb, SWEEP_US);
}

/* ---- admin ---- */

static void req_reset(http_req *r)
{
	free(r->path);
	free(r->query);
	free(r->body);
	free(r->resp);
	memset(r, 0, sizeof(*r));
}

/* A Kubernetes Status object (API conventions, "Response Status Kind"). */
static char *status_body(int code, const char *reason, const char *message)
{
	cJSON *st = cJSON_CreateObject();
	char *txt = NULL;

	if (st && cJSON_AddStringToObject(st, "kind", "Status") &&
	    cJSON_AddStringToObject(st, "apiVersion", "v1") &&
	    cJSON_AddObjectToObject(st, "metadata") &&
	    cJSON_AddStringToObject(st, "status", "Failure") &&
	    cJSON_AddStringToObject(st, "message", message) &&
	    cJSON_AddStringToObject(st, "reason", reason) &&
	    es_json_add_int(st, "code", code))
		txt = es_json_print(st);
	cJSON_Delete(st);
	return txt;
}

/* Writes status and headers now; the body (taken) follows over
 * LWS_CALLBACK_HTTP_WRITEABLE, or at once and then the connection is closed
 * when close_now (a request whose body is not read). */
static int respond(struct lws *wsi, http_req *r, int status, const char *ctype,
		   char *body, size_t len, int close_now)
{
	unsigned char hdr[LWS_PRE + 1024], *p = hdr + LWS_PRE,
		*end = hdr + sizeof(hdr) - 1;

	free(r->resp);
	r->resp = body;
	r->resp_len = body ? len : 0;
	r->resp_off = 0;
	r->responding = 1;
	if (lws_add_http_common_headers(wsi, (unsigned)status, ctype,
					r->resp_len, &p, end) ||
	    (close_now && lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION,
				(const unsigned char *)"close", 5, &p, end)) ||
	    lws_finalize_write_http_header(wsi, hdr + LWS_PRE, &p, end))
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
	char *b = status_body(code, reason, message);

	return respond(wsi, r, code, "application/json", b, b ? strlen(b) : 0,
		       close_now);
}

/* Prometheus text exposition format 0.0.4. */
static char *metrics_text(es_server *s, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap);

	if (!b)
		return NULL;
	n += (size_t)snprintf(b + n, cap - n,
		"# HELP edgesync_controller_connected_agents Agents whose hello was accepted and that are still connected.\n"
		"# TYPE edgesync_controller_connected_agents gauge\n"
		"edgesync_controller_connected_agents %d\n"
		"# HELP edgesync_controller_messages_received_total Protocol messages received from agents and decoded, by type.\n"
		"# TYPE edgesync_controller_messages_received_total counter\n",
		s->n_ready);
	for (int t = ES_MSG_HELLO; t <= ES_MSG_ERROR && n < cap; t++)
		n += (size_t)snprintf(b + n, cap - n,
			"edgesync_controller_messages_received_total{type=\"%s\"} %llu\n",
			es_proto_type_name((es_msg_type)t),
			(unsigned long long)s->rx_by_type[t]);
	if (n < cap)
		n += (size_t)snprintf(b + n, cap - n,
			"# HELP edgesync_controller_reports_duplicate_total Reports dropped as duplicates (seq already stored).\n"
			"# TYPE edgesync_controller_reports_duplicate_total counter\n"
			"edgesync_controller_reports_duplicate_total %llu\n",
			(unsigned long long)s->reports_dup);
	*len = n < cap ? n : cap - 1;
	return b;
}

static int dispatch(struct lws *wsi, es_server *s, http_req *r)
{
	es_admin_resp resp = { 0 };

	if (strcmp(r->path, "/metrics") == 0) {
		size_t len = 0;
		char *m;

		if (strcmp(r->method, "GET") != 0)
			return respond_status(wsi, r, 405, "MethodNotAllowed",
					      "/metrics: only GET", 0);
		m = metrics_text(s, &len);
		if (!m)
			return respond_status(wsi, r, 500, "InternalError",
					      "out of memory", 0);
		return respond(wsi, r, 200,
			       "text/plain; version=0.0.4; charset=utf-8", m, len, 0);
	}
	if (es_admin_handle(s->db, &s->hooks, r->method, r->path, r->query,
			    r->body, r->body_len, r->who, &resp) != ES_OK)
		return respond_status(wsi, r, 500, "InternalError", "out of memory", 0);
	return respond(wsi, r, resp.status, resp.content_type, resp.body,
		       resp.body_len, 0);
}

/* Collects the URI arguments, joined with '&'. */
static char *query_of(struct lws *wsi)
{
	char frag[1024], *q = NULL;
	size_t len = 0;

	for (int i = 0; lws_hdr_copy_fragment(wsi, frag, sizeof(frag),
					      WSI_TOKEN_HTTP_URI_ARGS, i) > 0; i++) {
		size_t fl = strlen(frag);
		char *n = realloc(q, len + fl + 2);

		if (!n) {
			free(q);
			return NULL;
		}
		q = n;
		if (len)
			q[len++] = '&';
		memcpy(q + len, frag, fl + 1);
		len += fl;
	}
	return q;
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
	lws_get_peer_simple(wsi, peer, sizeof(peer));
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]) && !r->method; i++)
		if (lws_hdr_total_length(wsi, ms[i].tok) > 0)
			r->method = ms[i].name;
	if (check_peer(s, wsi, ES_ID_ADMIN, r->who, sizeof(r->who), why,
		       sizeof(why))) {
		es_log_warn("server", "admin request refused", "peer", peer,
			    "reason", why, NULL);
		return respond_status(wsi, r, 403, "Forbidden", why, 1);
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
	if (!r->want_body || r->too_big || !len)
		return 0;
	if (len > ES_ADMIN_MAX_BODY - r->body_len) {
		r->too_big = 1;
		free(r->body);
		r->body = NULL;
		r->body_len = r->body_cap = 0;
		return 0;
	}
	if (r->body_len + len + 1 > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap : 4096;
		char *n;

		while (cap < r->body_len + len + 1)
			cap *= 2;
		n = realloc(r->body, cap);
		if (!n)
			return -1;
		r->body = n;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, in, len);
	r->body_len += len;
	r->body[r->body_len] = '\0';
	return 0;
}

static int on_http_writeable(struct lws *wsi, es_server *s, http_req *r)
{
	size_t n;
	int final;

	if (!r->responding)
		return 0;
	n = r->resp_len - r->resp_off;
	if (n > HTTP_CHUNK)
		n = HTTP_CHUNK;
	final = r->resp_off + n == r->resp_len;
	if (n) {
		memcpy(s->chunk + LWS_PRE, r->resp + r->resp_off, n);
		if (lws_write(wsi, s->chunk + LWS_PRE, n,
			      final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) < 0)
			return -1;
	}
	r->resp_off += n;
	if (!final) {
		lws_callback_on_writable(wsi);
		return 0;
	}
	req_reset(r);
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int cb_admin(struct lws *wsi, enum lws_callback_reasons reason,
		    void *user, void *in, size_t len)
{
	http_req *r = user;
	es_server *s = srv_of(wsi);

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

/* ---- context ---- */

static const struct lws_protocols agent_protocols[] = {
	{ ES_PROTO_SUBPROTOCOL, cb_agent, sizeof(conn), 65536, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
};

static const struct lws_protocols admin_protocols[] = {
	{ "edgesync-admin", cb_admin, sizeof(http_req), 16384, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
};

/* RFC 7692; the agent may ask for no context takeover. */
static const struct lws_extension agent_extensions[] = {
	{ "permessage-deflate", lws_extension_callback_pm_deflate,
	  "permessage-deflate; client_max_window_bits" },
	{ NULL, NULL, NULL }
};

es_err es_server_new(const es_server_opts *o, es_db *db, es_server **out,
		     char *err, size_t errsz)
{
	struct lws_context_creation_info info;
	es_server *s = NULL;
	es_err rc = ES_OK;

	*out = NULL;
	if (!o || !db || !o->cert || !o->key || !o->client_ca || !o->admin_ca ||
	    !o->trust_domain || !o->listen_host || !o->admin_host)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "server: missing certificate, CA, trust domain or address");
	s = calloc(1, sizeof(*s));
	if (!s || !(s->trust_domain = strdup(o->trust_domain))) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	s->db = db;
	s->hooks.object_changed = es_server_object_changed;
	s->hooks.ud = s;

	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS |
		       LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.user = s;
	info.timeout_secs = 20;
	s->ctx = lws_create_context(&info);
	if (!s->ctx) {
		rc = es_errf(ES_ERR_TLS, err, errsz,
			     "libwebsockets: could not create the context");
		goto cleanup;
	}

	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT |
		       LWS_SERVER_OPTION_REQUIRE_VALID_OPENSSL_CLIENT_CERT |
		       LWS_SERVER_OPTION_VALIDATE_UTF8;
	info.vhost_name = "agents";
	info.iface = o->listen_host;
	info.port = o->listen_port;
	info.protocols = agent_protocols;
	info.extensions = agent_extensions;
	info.ssl_cert_filepath = o->cert;
	info.ssl_private_key_filepath = o->key;
	info.ssl_ca_filepath = o->client_ca;
	info.user = s;
	if (!lws_create_vhost(s->ctx, &info)) {
		rc = es_errf(ES_ERR_TLS, err, errsz,
			     "listen %s:%d: could not start the agents' listener "
			     "(address in use, or cert %s, key %s, client-ca %s unusable)",
			     o->listen_host, o->listen_port, o->cert, o->key,
			     o->client_ca);
		goto cleanup;
	}

	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT |
		       LWS_SERVER_OPTION_REQUIRE_VALID_OPENSSL_CLIENT_CERT;
	info.vhost_name = "admin";
	info.iface = o->admin_host;
	info.port = o->admin_port;
	info.protocols = admin_protocols;
	info.extensions = NULL;
	info.ssl_ca_filepath = o->admin_ca;
	if (!lws_create_vhost(s->ctx, &info)) {
		rc = es_errf(ES_ERR_TLS, err, errsz,
			     "admin-listen %s:%d: could not start the admin listener "
			     "(address in use, or cert %s, key %s, admin-ca %s unusable)",
			     o->admin_host, o->admin_port, o->cert, o->key,
			     o->admin_ca);
		goto cleanup;
	}
	lws_sul_schedule(s->ctx, 0, &s->sweep, sweep_cb, SWEEP_US);
	*out = s;
	s = NULL;
cleanup:
	es_server_destroy(s);
	return rc;
}

es_err es_server_run(es_server *s)
{
	while (!s->stop)
		if (lws_service(s->ctx, 0) < 0)
			return s->stop ? ES_OK : ES_ERR_IO;
	return ES_OK;
}

void es_server_stop(es_server *s)
{
	if (!s)
		return;
	s->stop = 1;
	if (s->ctx)
		lws_cancel_service(s->ctx);
}

void es_server_destroy(es_server *s)
{
	if (!s)
		return;
	if (s->ctx) {
		lws_sul_cancel(&s->sweep);
		lws_context_destroy(s->ctx);
	}
	free(s->trust_domain);
	free(s);
}
