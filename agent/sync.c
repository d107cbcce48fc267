/*
 * sync.c - the agent's sync client (see sync.h; proto/PROTOCOL.md).
 *
 * Invariants while ready: reports leave in seq order (es_store_outbox_next
 * after sent_after), at most one state report is unacknowledged
 * (state_inflight), a row once sent is resent byte for byte (its stored wire
 * text), and the first new state report of a connection is a snapshot.
 */
#include "sync.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "config.h"
#include "es_json.h"
#include "es_log.h"
#include "es_mpatch.h"
#include "es_proto.h"
#include "es_time.h"

#define TICK_US (1000 * LWS_US_PER_MS)
#define CLOSE_GRACE_S 5

enum sync_state { ST_IDLE = 0, ST_CONNECTING, ST_HANDSHAKING, ST_READY };

static const char *const state_names[] = {
	"idle", "connecting", "handshaking", "ready"
};

typedef struct txmsg {
	struct txmsg *next;
	size_t len;
	char text[];
} txmsg;

struct es_sync {
	struct lws_context *ctx;
	struct lws_vhost *vh;
	es_store *st;
	es_sync_hooks hooks;
	char *url, *node, *agent_version, *boot_id;
	cJSON *labels;
	es_agent_url u;
	char host_hdr[300];

	struct lws *wsi;
	enum sync_state state;
	es_backoff bo;
	lws_sorted_usec_list_t sul_dial, sul_tick;
	int stopping;

	char *rx;
	size_t rx_len, rx_cap;
	int rx_discard;

	txmsg *q_head, *q_tail;
	int close_code;

	int64_t sent_after, state_inflight;
	int snapshot_sent;
	int64_t last_rx_ms, last_ping_ms;
	int heartbeat_s;

	time_t last_connected;
	char last_error[256];
	int64_t attempts, last_acked_seq;
};

static void set_error(es_sync *s, const char *what, const char *detail)
{
	snprintf(s->last_error, sizeof(s->last_error), "%s%s%s", what,
		 detail && *detail ? ": " : "", detail ? detail : "");
}

static void queue_clear(es_sync *s)
{
	txmsg *m = s->q_head, *n;

	for (; m; m = n) {
		n = m->next;
		free(m);
	}
	s->q_head = s->q_tail = NULL;
}

/* Queues a control message (not an outbox report); consumes msg. */
static es_err queue_msg(es_sync *s, cJSON *msg)
{
	char *text;
	size_t len;
	txmsg *m;

	if (!msg)
		return ES_ERR_NOMEM;
	text = es_json_print(msg);
	cJSON_Delete(msg);
	if (!text)
		return ES_ERR_NOMEM;
	len = strlen(text);
	m = calloc(1, sizeof(*m) + len + 1);
	if (!m) {
		free(text);
		return ES_ERR_NOMEM;
	}
	memcpy(m->text, text, len + 1);
	m->len = len;
	free(text);
	if (s->q_tail)
		s->q_tail->next = m;
	else
		s->q_head = m;
	s->q_tail = m;
	if (s->wsi)
		lws_callback_on_writable(s->wsi);
	return ES_OK;
}

/* Sends an `error` (when code >= 0) then closes with close_code. */
static void fail_conn(es_sync *s, int code, int close_code, const char *msg)
{
	if (!s->wsi || s->close_code)
		return;
	set_error(s, "closing", msg);
	if (code >= 0)
		queue_msg(s, es_proto_error((es_proto_code)code, msg));
	s->close_code = close_code;
	lws_callback_on_writable(s->wsi);
	lws_set_timeout(s->wsi, PENDING_TIMEOUT_CLOSE_SEND, CLOSE_GRACE_S);
}

static void proto_fail(es_sync *s, es_proto_code code, const char *msg)
{
	es_log_warn("sync", "protocol error", "code", es_proto_code_name(code),
		    "error", msg, NULL);
	fail_conn(s, (int)code, es_proto_close_code(code), msg);
}

static void dial(lws_sorted_usec_list_t *sul);

/* Keeps the highest acknowledged seq, also in the store ("acked_seq") so
 * /v1/state shows it across restarts. */
static void set_acked(es_sync *s, int64_t seq)
{
	if (seq == s->last_acked_seq)
		return;
	s->last_acked_seq = seq;
	if (es_store_set_int(s->st, "acked_seq", seq) != ES_OK)
		es_log_warn("sync", "cannot record the acknowledged seq", NULL);
}

static void conn_down(es_sync *s, const char *why)
{
	int64_t delay;
	char ms[32];

	if (s->state == ST_IDLE)
		return;
	s->wsi = NULL;
	s->state = ST_IDLE;
	s->rx_len = 0;
	s->rx_discard = 0;
	s->close_code = 0;
	queue_clear(s);
	lws_sul_cancel(&s->sul_tick);
	if (why && *why)
		set_error(s, why, NULL);
	if (s->stopping)
		return;
	delay = es_backoff_next(&s->bo, es_time_mono_ms());
	snprintf(ms, sizeof(ms), "%lld", (long long)delay);
	es_log_warn("sync", "disconnected, redialling", "url", s->url,
		    "error", s->last_error, "delay_ms", ms, NULL);
	lws_sul_schedule(s->ctx, 0, &s->sul_dial, dial, delay * LWS_US_PER_MS);
}

static void dial(lws_sorted_usec_list_t *sul)
{
	es_sync *s = lws_container_of(sul, es_sync, sul_dial);
	struct lws_client_connect_info i;
	struct lws *w;

	if (s->stopping || s->state != ST_IDLE)
		return;
	memset(&i, 0, sizeof(i));
	i.context = s->ctx;
	i.vhost = s->vh;
	i.address = s->u.host;
	i.port = s->u.port;
	i.path = s->u.path;
	i.host = s->host_hdr;
	i.origin = s->host_hdr;
	i.ssl_connection = LCCSCF_USE_SSL;
	i.protocol = ES_PROTO_SUBPROTOCOL;
	i.local_protocol_name = ES_PROTO_SUBPROTOCOL;
	i.ietf_version_or_minus_one = -1;
	i.opaque_user_data = s;
	s->attempts++;
	s->state = ST_CONNECTING;
	es_log_debug("sync", "dialling", "url", s->url, NULL);
	w = lws_client_connect_via_info(&i);
	if (!w) {
		if (s->state == ST_CONNECTING)
			conn_down(s, "connect failed");
		return;
	}
	if (s->state == ST_CONNECTING)
		s->wsi = w;
}

static void tick(lws_sorted_usec_list_t *sul)
{
	es_sync *s = lws_container_of(sul, es_sync, sul_tick);
	int64_t now = es_time_mono_ms();
	char t[ES_TIME_RFC3339_LEN];

	if (s->stopping || !s->wsi)
		return;
	if (!s->close_code && now - s->last_rx_ms >= ES_PROTO_AGENT_DEAD_S * 1000LL) {
		es_log_warn("sync", "controller silent, closing", "url", s->url, NULL);
		fail_conn(s, -1, LWS_CLOSE_STATUS_GOINGAWAY,
			  "nothing received for 45 s");
	} else if (s->state == ST_READY && !s->close_code &&
		   now - s->last_ping_ms >= s->heartbeat_s * 1000LL) {
		s->last_ping_ms = now;
		queue_msg(s, es_proto_ping(es_time_now_rfc3339(t)));
	}
	lws_sul_schedule(s->ctx, 0, &s->sul_tick, tick, TICK_US);
}

static int write_text(struct lws *wsi, const char *text, size_t len)
{
	unsigned char *buf = malloc(LWS_PRE + len);
	int n;

	if (!buf)
		return -1;
	memcpy(buf + LWS_PRE, text, len);
	n = lws_write(wsi, buf + LWS_PRE, len, LWS_WRITE_TEXT);
	free(buf);
	return n < (int)len ? -1 : 0;
}

/* Builds the wire text of a row never sent. *snapshot says which kind of
 * state report it became. Returns a malloc'd string or NULL (err set). */
static char *build_report(es_sync *s, const es_outbox_row *row, int *snapshot,
			  char *err, size_t errsz)
{
	cJSON *doc = NULL, *base = NULL, *body = NULL, *msg = NULL;
	const char *type = "event";
	int64_t base_seq = 0;
	char t[ES_TIME_RFC3339_LEN], *text = NULL;
	es_err rc;

	*snapshot = 0;
	rc = es_json_parse(row->doc, strlen(row->doc), ES_JSON_MAX_DEPTH, &doc,
			   err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	if (row->is_state) {
		type = "snapshot";
		if (s->snapshot_sent &&
		    es_store_base_get(s->st, &base_seq, &base) == ES_OK) {
			if (es_mpatch_diff(base, doc, &body) != ES_OK) {
				es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
				goto cleanup;
			}
			type = "patch";
		} else {
			body = doc;
			doc = NULL;
			*snapshot = 1;
		}
	} else {
		body = doc;
		doc = NULL;
	}
	msg = es_proto_report(row->seq, es_time_now_rfc3339(t), type, base_seq, body);
	body = NULL;
	if (!msg || !(text = es_json_print(msg)))
		es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
cleanup:
	cJSON_Delete(doc);
	cJSON_Delete(base);
	cJSON_Delete(body);
	cJSON_Delete(msg);
	return text;
}

/* Sends the next outbox row when allowed. Returns -1 to drop the
 * connection, else 0. */
static int send_next_report(es_sync *s, struct lws *wsi)
{
	es_outbox_row row;
	char err[256] = "", seqs[24];
	char *text = NULL;
	int snapshot = 0, rv = 0;
	es_err rc;

	memset(&row, 0, sizeof(row));
	rc = es_store_outbox_next(s->st, s->sent_after, &row);
	if (rc == ES_ERR_NOTFOUND)
		return 0;
	if (rc != ES_OK) {
		es_log_error("sync", "reading the outbox failed", "error",
			     es_strerror(rc), NULL);
		return 0;
	}
	if (row.is_state && s->state_inflight)
		goto cleanup;
	if (row.wire) {
		text = strdup(row.wire);
		if (!text)
			goto cleanup;
	} else {
		text = build_report(s, &row, &snapshot, err, sizeof(err));
		if (!text) {
			snprintf(seqs, sizeof(seqs), "%lld", (long long)row.seq);
			es_log_error("sync", "cannot build report", "seq", seqs,
				     "error", err, NULL);
			goto cleanup;
		}
		rc = es_store_outbox_mark_sent(s->st, row.seq, text);
		if (rc != ES_OK) {
			es_log_error("sync", "recording a sent report failed",
				     "error", es_strerror(rc), NULL);
			goto cleanup;
		}
	}
	if (write_text(wsi, text, strlen(text)) != 0) {
		set_error(s, "write failed", NULL);
		rv = -1;
		goto cleanup;
	}
	s->sent_after = row.seq;
	if (row.is_state)
		s->state_inflight = row.seq;
	if (snapshot)
		s->snapshot_sent = 1;
	lws_callback_on_writable(wsi);
cleanup:
	free(text);
	es_outbox_row_free(&row);
	return rv;
}

static int on_writeable(es_sync *s, struct lws *wsi)
{
	if (s->q_head) {
		txmsg *m = s->q_head;
		int rc;

		s->q_head = m->next;
		if (!s->q_head)
			s->q_tail = NULL;
		rc = write_text(wsi, m->text, m->len);
		free(m);
		if (rc != 0) {
			set_error(s, "write failed", NULL);
			return -1;
		}
		lws_callback_on_writable(wsi);
		return 0;
	}
	if (s->close_code) {
		lws_close_reason(wsi, (enum lws_close_status)s->close_code, NULL, 0);
		return -1;
	}
	if (s->state == ST_READY)
		return send_next_report(s, wsi);
	return 0;
}

static void send_hello(es_sync *s)
{
	int64_t rv = 0, next = 1;
	cJSON *labels, *msg, *caps;

	es_store_get_int(s->st, "desired_rv", 0, &rv);
	es_store_get_int(s->st, "next_seq", 1, &next);
	labels = cJSON_Duplicate(s->labels, 1);
	if (!labels) {
		fail_conn(s, -1, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "out of memory");
		return;
	}
	msg = es_proto_hello(s->node, s->agent_version, s->boot_id, labels, rv,
			     next < 1 ? 1 : next);
	if (msg && !cJSON_GetObjectItemCaseSensitive(msg, "capabilities")) {
		caps = cJSON_AddArrayToObject(msg, "capabilities");
		if (!caps ||
		    !cJSON_AddItemToArray(caps, cJSON_CreateString("CollectorConfig")) ||
		    !cJSON_AddItemToArray(caps, cJSON_CreateString("merge-patch"))) {
			cJSON_Delete(msg);
			msg = NULL;
		}
	}
	if (queue_msg(s, msg) != ES_OK)
		fail_conn(s, -1, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "out of memory");
}

static void on_welcome(es_sync *s, const cJSON *msg)
{
	int64_t acked = 0, hb = ES_PROTO_HEARTBEAT_S, next = 1;
	char a[24];

	es_json_get_int(msg, "welcome", "ackedSeq", 0, 0, ES_JSON_MAX_INT, &acked,
			NULL, 0);
	if (es_json_get_int(msg, "welcome", "heartbeatSeconds", 0, 1, 3600, &hb,
			    NULL, 0) != ES_OK)
		hb = ES_PROTO_HEARTBEAT_S;
	s->heartbeat_s = (int)hb;
	if (es_store_outbox_ack(s->st, acked) != ES_OK) {
		proto_fail(s, ES_PC_INTERNAL, "agent database: acknowledging reports failed");
		return;
	}
	es_store_get_int(s->st, "next_seq", 1, &next);
	if (acked >= next) {
		snprintf(a, sizeof(a), "%lld", (long long)acked);
		es_log_warn("sync", "controller holds newer reports than this agent "
			    "made; continuing after them", "ackedSeq", a, NULL);
		es_store_set_int(s->st, "next_seq", acked + 1);
	}
	set_acked(s, acked);
	s->state = ST_READY;
	s->last_connected = time(NULL);
	s->last_error[0] = '\0';
	s->sent_after = 0;
	s->state_inflight = 0;
	s->snapshot_sent = 0;
	s->last_ping_ms = es_time_mono_ms();
	snprintf(a, sizeof(a), "%lld", (long long)acked);
	es_log_info("sync", "connected", "url", s->url, "ackedSeq", a, NULL);
	if (s->hooks.queue_state)
		s->hooks.queue_state(s->hooks.user);
	lws_callback_on_writable(s->wsi);
}

static void on_desired(es_sync *s, const cJSON *msg)
{
	int64_t rv = 0;
	int more = 0;
	char err[160];
	es_err rc;

	es_json_get_int(msg, "desired", "resourceVersion", 0, 0, ES_JSON_MAX_INT,
			&rv, NULL, 0);
	es_json_get_bool(msg, "desired", "more", 0, &more, NULL, 0);
	rc = es_store_desired_commit(s->st, msg);
	if (rc == ES_ERR_INVAL) {
		proto_fail(s, ES_PC_INVALID, "desired.objects: an object without kind or metadata.name");
		return;
	}
	if (rc != ES_OK) {
		snprintf(err, sizeof(err), "agent database: %s", es_strerror(rc));
		proto_fail(s, ES_PC_INTERNAL, err);
		return;
	}
	if (more)
		return;
	queue_msg(s, es_proto_desired_ack(rv));
	if (s->hooks.desired_changed)
		s->hooks.desired_changed(s->hooks.user);
}

static void on_message(es_sync *s, const char *buf, size_t len)
{
	es_msg_type type = ES_MSG_UNKNOWN;
	es_proto_code code = ES_PC_INTERNAL;
	cJSON *msg = NULL;
	char err[256] = "";
	const char *c = NULL, *m = NULL;
	int64_t seq = 0;
	es_err rc;

	rc = es_proto_decode(buf, len, &type, &msg, &code, err, sizeof(err));
	if (rc != ES_OK) {
		proto_fail(s, rc == ES_ERR_PROTO ? code : ES_PC_INTERNAL,
			   rc == ES_ERR_PROTO ? err : "out of memory");
		return;
	}
	if (s->state == ST_HANDSHAKING && type != ES_MSG_WELCOME && type != ES_MSG_ERROR) {
		snprintf(err, sizeof(err), "%s before welcome", es_proto_type_name(type));
		proto_fail(s, ES_PC_PROTOCOL, err);
		goto cleanup;
	}
	switch (type) {
	case ES_MSG_WELCOME:
		if (s->state != ST_HANDSHAKING)
			proto_fail(s, ES_PC_PROTOCOL, "a second welcome");
		else
			on_welcome(s, msg);
		break;
	case ES_MSG_DESIRED:
		on_desired(s, msg);
		break;
	case ES_MSG_ACK:
		es_json_get_int(msg, "ack", "seq", 1, 0, ES_JSON_MAX_INT, &seq, NULL, 0);
		if (es_store_outbox_ack(s->st, seq) != ES_OK) {
			proto_fail(s, ES_PC_INTERNAL, "agent database: acknowledging reports failed");
			break;
		}
		if (seq > s->last_acked_seq)
			set_acked(s, seq);
		if (s->state_inflight && seq >= s->state_inflight)
			s->state_inflight = 0;
		lws_callback_on_writable(s->wsi);
		break;
	case ES_MSG_RESYNC:
		es_log_info("sync", "controller asked for a snapshot", NULL);
		s->snapshot_sent = 0;
		if (s->hooks.queue_state)
			s->hooks.queue_state(s->hooks.user);
		lws_callback_on_writable(s->wsi);
		break;
	case ES_MSG_PING:
		es_json_get_str(msg, "ping", "time", 0, &m, NULL, 0);
		queue_msg(s, es_proto_pong(m ? m : ""));
		break;
	case ES_MSG_PONG:
		break;
	case ES_MSG_ERROR:
		es_json_get_str(msg, "error", "code", 0, &c, NULL, 0);
		es_json_get_str(msg, "error", "message", 0, &m, NULL, 0);
		es_log_warn("sync", "controller reported an error", "code", c,
			    "message", m, NULL);
		snprintf(err, sizeof(err), "controller: %s: %s", c ? c : "",
			 m ? m : "");
		set_error(s, err, NULL);
		break;
	default:
		snprintf(err, sizeof(err), "%s is not sent by a controller",
			 es_proto_type_name(type) ? es_proto_type_name(type) : "message");
		proto_fail(s, ES_PC_PROTOCOL, err);
		break;
	}
cleanup:
	cJSON_Delete(msg);
}

static void on_receive(es_sync *s, struct lws *wsi, const void *in, size_t len)
{
	int final = lws_is_final_fragment(wsi);

	s->last_rx_ms = es_time_mono_ms();
	if (s->rx_discard || s->close_code) {
		if (final)
			s->rx_discard = 0;
		return;
	}
	if (s->rx_len + len > ES_PROTO_MAX_MESSAGE) {
		s->rx_len = 0;
		s->rx_discard = !final;
		proto_fail(s, ES_PC_TOO_BIG, "message over 1048576 bytes");
		return;
	}
	if (s->rx_len + len > s->rx_cap) {
		size_t cap = s->rx_cap ? s->rx_cap : 4096;
		char *n;

		while (cap < s->rx_len + len)
			cap *= 2;
		if (cap > ES_PROTO_MAX_MESSAGE)
			cap = ES_PROTO_MAX_MESSAGE;
		n = realloc(s->rx, cap);
		if (!n) {
			proto_fail(s, ES_PC_INTERNAL, "out of memory");
			return;
		}
		s->rx = n;
		s->rx_cap = cap;
	}
	memcpy(s->rx + s->rx_len, in, len);
	s->rx_len += len;
	if (!final)
		return;
	len = s->rx_len;
	s->rx_len = 0;
	on_message(s, s->rx, len);
}

static int sync_cb(struct lws *wsi, enum lws_callback_reasons reason,
		   void *user, void *in, size_t len)
{
	struct lws_vhost *vh = lws_get_vhost(wsi);
	es_sync *s = vh ? lws_vhost_user(vh) : NULL;
	char why[200];

	if (!s || s->stopping)
		return 0;
	switch (reason) {
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		if (in && !strncmp(in, "conn fail: ", 11) && atoi((const char *)in + 11) > 0)
			snprintf(why, sizeof(why), "connection failed: %s",
				 strerror(atoi((const char *)in + 11)));
		else
			snprintf(why, sizeof(why), "connection failed: %s",
				 in ? (const char *)in : "unknown");
		if (s->state != ST_IDLE)
			set_error(s, why, NULL);
		conn_down(s, NULL);
		break;
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		s->wsi = wsi;
		s->state = ST_HANDSHAKING;
		s->last_rx_ms = es_time_mono_ms();
		s->heartbeat_s = ES_PROTO_HEARTBEAT_S;
		es_backoff_up(&s->bo, es_time_mono_ms());
		send_hello(s);
		lws_sul_schedule(s->ctx, 0, &s->sul_tick, tick, TICK_US);
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		if (wsi == s->wsi)
			on_receive(s, wsi, in, len);
		break;
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		if (wsi == s->wsi)
			return on_writeable(s, wsi);
		break;
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		if (in && len >= 2) {
			const unsigned char *p = in;

			snprintf(why, sizeof(why), "controller closed with %u%s%.*s",
				 (unsigned)(p[0] << 8 | p[1]), len > 2 ? ": " : "",
				 (int)(len - 2), (const char *)in + 2);
			set_error(s, why, NULL);
		}
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		if (wsi == s->wsi) {
			if (!s->last_error[0])
				set_error(s, "connection closed", NULL);
			conn_down(s, NULL);
		}
		break;
	default:
		break;
	}
	return 0;
}

static const struct lws_protocols sync_protocols[] = {
	{ ES_PROTO_SUBPROTOCOL, sync_cb, 0, 0, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
};

static const struct lws_extension sync_exts[] = {
	{ "permessage-deflate", lws_extension_callback_pm_deflate,
	  "permessage-deflate; client_max_window_bits" },
	{ NULL, NULL, NULL }
};

static es_err check_file(const char *key, const char *path, char *err,
			 size_t errsz)
{
	if (access(path, R_OK) != 0)
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: cannot read %s: %s", key,
			       path, strerror(errno));
	return ES_OK;
}

es_err es_sync_new(struct lws_context *ctx, es_store *st,
		   const es_sync_opts *opts, const es_sync_hooks *hooks,
		   es_sync **out, char *err, size_t errsz)
{
	struct lws_context_creation_info info;
	es_sync *s = NULL;
	es_err rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	rc = es_agent_url_parse(opts->url, &s->u, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	if ((rc = check_file("cert", opts->cert, err, errsz)) != ES_OK ||
	    (rc = check_file("key", opts->key, err, errsz)) != ES_OK ||
	    (rc = check_file("ca", opts->ca, err, errsz)) != ES_OK)
		goto cleanup;
	s->ctx = ctx;
	s->st = st;
	if (hooks)
		s->hooks = *hooks;
	s->url = strdup(opts->url);
	s->node = strdup(opts->node);
	s->agent_version = strdup(opts->agent_version);
	s->boot_id = strdup(opts->boot_id ? opts->boot_id : "");
	s->labels = opts->labels ? cJSON_Duplicate(opts->labels, 1)
				 : cJSON_CreateObject();
	if (!s->url || !s->node || !s->agent_version || !s->boot_id || !s->labels) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	snprintf(s->host_hdr, sizeof(s->host_hdr), "%s:%d", s->u.host, s->u.port);
	s->heartbeat_s = ES_PROTO_HEARTBEAT_S;
	es_store_get_int(st, "acked_seq", 0, &s->last_acked_seq);
	es_backoff_init(&s->bo, NULL, NULL);

	memset(&info, 0, sizeof(info));
	info.vhost_name = "sync";
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.protocols = sync_protocols;
	info.extensions = sync_exts;
	info.client_ssl_ca_filepath = opts->ca;
	info.client_ssl_cert_filepath = opts->cert;
	info.client_ssl_private_key_filepath = opts->key;
	info.user = s;
	s->vh = lws_create_vhost(ctx, &info);
	if (!s->vh) {
		rc = es_errf(ES_ERR_TLS, err, errsz,
			     "cannot build the TLS client from cert %s, key %s, ca %s "
			     "(not PEM, or the key does not match the certificate)",
			     opts->cert, opts->key, opts->ca);
		goto cleanup;
	}
	*out = s;
	s = NULL;
cleanup:
	es_sync_free(s);
	return rc;
}

void es_sync_start(es_sync *s)
{
	if (!s || s->stopping)
		return;
	lws_sul_schedule(s->ctx, 0, &s->sul_dial, dial, 1);
}

void es_sync_kick(es_sync *s)
{
	if (s && s->wsi && s->state == ST_READY)
		lws_callback_on_writable(s->wsi);
}

void es_sync_get_info(const es_sync *s, es_sync_info *info)
{
	memset(info, 0, sizeof(*info));
	info->connected = s->state == ST_READY;
	info->state = state_names[s->state];
	info->url = s->url;
	info->last_connected = s->last_connected;
	info->last_error = s->last_error;
	info->reconnects = s->attempts > 1 ? s->attempts - 1 : 0;
	info->last_acked_seq = s->last_acked_seq;
}

cJSON *es_sync_info_json(const es_sync *s)
{
	es_sync_info in;
	cJSON *o = cJSON_CreateObject();
	char t[ES_TIME_RFC3339_LEN];

	if (!o)
		return NULL;
	es_sync_get_info(s, &in);
	if (!cJSON_AddBoolToObject(o, "connected", in.connected) ||
	    !cJSON_AddStringToObject(o, "state", in.state) ||
	    !cJSON_AddStringToObject(o, "url", in.url) ||
	    !(in.last_connected
		      ? cJSON_AddStringToObject(o, "lastConnected",
						es_time_rfc3339(in.last_connected, t))
		      : cJSON_AddNullToObject(o, "lastConnected")) ||
	    !cJSON_AddStringToObject(o, "lastError", in.last_error) ||
	    !es_json_add_int(o, "reconnects", in.reconnects) ||
	    !es_json_add_int(o, "lastAckedSeq", in.last_acked_seq)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

void es_sync_stop(es_sync *s)
{
	if (!s)
		return;
	s->stopping = 1;
	lws_sul_cancel(&s->sul_dial);
	lws_sul_cancel(&s->sul_tick);
}

void es_sync_free(es_sync *s)
{
	if (!s)
		return;
	queue_clear(s);
	free(s->rx);
	free(s->url);
	free(s->node);
	free(s->agent_version);
	free(s->boot_id);
	cJSON_Delete(s->labels);
	free(s);
}
