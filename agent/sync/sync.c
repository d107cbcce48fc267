/*
 * sync.c - the agent's sync client (see sync.h; proto/PROTOCOL.md): the
 * connection, its send queue and message reassembly (es_ws.h), liveness and
 * redialling. The messages themselves are in sync_msg.c; sync_int.h has the
 * invariants.
 */
#include "sync/sync.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "sync/backoff.h"
#include "sync/connerr.h"
#include "enroll/renew.h"
#include "runtime/config.h"
#include "es_json.h"
#include "es_log.h"
#include "es_proto.h"
#include "es_time.h"
#include "es_ws.h"
#include "sync/sync_int.h"

#define TICK_US (1000 * LWS_US_PER_MS)
#define CLOSE_GRACE_S 5
/* Longest a reconcile waits for its desiredAck to be written. */
#define RECONCILE_WAIT_MS 100

static const char *const state_names[] = {
	"idle", "connecting", "handshaking", "ready"
};

void sync__set_error(es_sync *s, const char *what, const char *detail)
{
	snprintf(s->last_error, sizeof(s->last_error), "%s%s%s", what,
		 detail && *detail ? ": " : "", detail ? detail : "");
}

es_err sync__queue_msg(es_sync *s, cJSON *msg)
{
	return es_ws_queue_json(&s->q, s->wsi, msg);
}

void sync__fail_conn(es_sync *s, int code, int close_code, const char *msg)
{
	if (!s->wsi || s->close_code)
		return;
	sync__set_error(s, "closing", msg);
	if (code >= 0)
		sync__queue_msg(s, es_proto_error((es_proto_code)code, msg));
	s->close_code = close_code;
	lws_callback_on_writable(s->wsi);
	lws_set_timeout(s->wsi, PENDING_TIMEOUT_CLOSE_SEND, CLOSE_GRACE_S);
}

void sync__proto_fail(es_sync *s, es_proto_code code, const char *msg)
{
	es_log_warn("sync", "protocol error", "code", es_proto_code_name(code),
		    "error", msg, NULL);
	sync__fail_conn(s, (int)code, es_proto_close_code(code), msg);
}

static void reconcile_timer(lws_sorted_usec_list_t *sul)
{
	es_sync *s = lws_container_of(sul, es_sync, sul_reconcile);

	if (!s->reconcile_owed || s->stopping)
		return;
	s->reconcile_owed = 0;
	if (s->hooks.desired_changed)
		s->hooks.desired_changed(s->hooks.user);
}

void sync__reconcile_after_ack(es_sync *s)
{
	s->reconcile_owed = 1;
	lws_sul_schedule(s->ctx, 0, &s->sul_reconcile, reconcile_timer,
			 (lws_usec_t)RECONCILE_WAIT_MS * LWS_US_PER_MS);
}

/* The queue drained (the desiredAck is written) or the connection is gone:
 * the owed reconcile runs from the next turn of the loop. */
static void reconcile_soon(es_sync *s)
{
	if (s->reconcile_owed)
		lws_sul_schedule(s->ctx, 0, &s->sul_reconcile, reconcile_timer, 1);
}

static void dial(lws_sorted_usec_list_t *sul);

/* Makes urls.cur the controller in use: u, url and the Host header. */
static void use_url(es_sync *s)
{
	s->u = s->us[s->urls.cur];
	s->url = es_urllist_current(&s->urls);
	snprintf(s->host_hdr, sizeof(s->host_hdr), "%s:%d", s->u.host, s->u.port);
}

/*
 * The address to dial for u, into s->addr: the host itself when it is an
 * address literal (or its name does not resolve: lws then says so), else
 * the urls.addr-th of the addresses its name resolves to (at most
 * MAX_ADDRS of them), so that a name with several addresses is several
 * controllers: in the resolver's order (RFC 6724) when listed, else in
 * the node's rendezvous order of the addresses as text (es_urllist_order,
 * the same every dial while the name gives the same addresses). The lookup
 * blocks as lws's own would.
 */
#define MAX_ADDRS 64
static void pick_addr(es_sync *s)
{
	struct addrinfo hints, *res = NULL, *ai;
	char txt[MAX_ADDRS][INET6_ADDRSTRLEN];
	const char *names[MAX_ADDRS];
	size_t order[MAX_ADDRS];
	unsigned char bin[16];
	size_t n = 0;

	snprintf(s->addr, sizeof(s->addr), "%s", s->u.host);
	s->naddrs = 1;
	if (inet_pton(AF_INET, s->u.host, bin) == 1 ||
	    inet_pton(AF_INET6, s->u.host, bin) == 1)
		return;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_ADDRCONFIG;
	if (getaddrinfo(s->u.host, NULL, &hints, &res) != 0)
		return;
	for (ai = res; ai && n < MAX_ADDRS; ai = ai->ai_next) {
		const void *a = ai->ai_family == AF_INET6 ?
			(const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr :
			(const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr;

		if (inet_ntop(ai->ai_family, a, txt[n], sizeof(txt[n]))) {
			names[n] = txt[n];
			n++;
		}
	}
	if (!n) {
		freeaddrinfo(res);
		return;
	}
	s->naddrs = n;
	if (s->urls.addr >= s->naddrs)
		s->urls.addr = 0;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	if (!s->listed)
		es_urllist_order(s->node, names, n, order);
	snprintf(s->addr, sizeof(s->addr), "%s", names[order[s->urls.addr]]);
	freeaddrinfo(res);
}

/* Schedules the next dial in delay_ms (>= 0) and remembers when, for
 * es_sync_get_info. */
static void dial_in(es_sync *s, int64_t delay_ms)
{
	s->dial_at_ms = es_time_mono_ms() + delay_ms;
	lws_sul_schedule(s->ctx, 0, &s->sul_dial, dial,
			 delay_ms > 0 ? delay_ms * LWS_US_PER_MS : 1);
}

/*
 * The controller closed this agent's session with 4000 `replaced`: a
 * newer session of this node opened, and this agent holds only one, so
 * another agent runs with this node's identity (a cloned disk or copied
 * certificate). Redialling at once would take the node back and start an
 * endless exchange: the next dial waits 30 to 60 s (PROTOCOL.md "Errors").
 */
static void replaced(es_sync *s)
{
	es_log_warn("sync", "this node's session was replaced by a newer one:"
		    " another agent may be running with this node's identity (a"
		    " cloned disk or a copied certificate; every host needs its own,"
		    " edgesync-agent join); redialling in 30 to 60 s", "node", s->node,
		    NULL);
	sync__set_error(s, "session replaced by a newer session of this node: another"
			" agent may be running with this node's identity", NULL);
	es_backoff_retry_after(&s->bo, ES_BACKOFF_CAP_MS / 2);
}

static void conn_down(es_sync *s, const char *why)
{
	const char *failed;
	int64_t delay;
	char ms[32];

	if (s->state == ST_IDLE)
		return;
	s->wsi = NULL;
	s->state = ST_IDLE;
	es_ws_rx_reset(&s->rx);
	s->close_code = 0;
	es_ws_queue_clear(&s->q);
	s->proto = 1;
	s->deflate = 0;
	lws_sul_cancel(&s->sul_tick);
	reconcile_soon(s);
	sync__renew_conn_down(s);
	if (why && *why)
		sync__set_error(s, why, NULL);
	if (s->stopping)
		return;
	if (s->redial_now) {
		/* New credentials (sync_renew.c): the same controller, now. */
		s->redial_now = 0;
		es_log_info("sync", "redialling with the new credentials", "url", s->url,
			    NULL);
		dial_in(s, 0);
		return;
	}
	/* The next controller (address, then URL) gets the next dial; the
	 * log names the one that failed and the one dialled next. */
	failed = s->url;
	es_urllist_advance(&s->urls, s->naddrs);
	use_url(s);
	delay = es_backoff_next(&s->bo, es_time_mono_ms());
	snprintf(ms, sizeof(ms), "%lld", (long long)delay);
	es_log_warn("sync", "disconnected, redialling", "url", failed, "next", s->url,
		    "error", s->last_error, "delay_ms", ms, NULL);
	dial_in(s, delay);
}

static void dial(lws_sorted_usec_list_t *sul)
{
	es_sync *s = lws_container_of(sul, es_sync, sul_dial);
	struct lws_client_connect_info i;
	struct lws *w;

	s->dial_at_ms = 0;
	if (s->stopping || s->state != ST_IDLE)
		return;
	if (sync__tls_load(s) != 0) {
		dial_in(s, ES_SYNC_CREDS_RETRY_S * 1000);
		return;
	}
	pick_addr(s);
	memset(&i, 0, sizeof(i));
	i.context = s->ctx;
	i.vhost = s->vh;
	i.address = s->addr;
	i.port = s->u.port;
	i.path = s->u.path;
	i.host = s->host_hdr;
	i.origin = s->host_hdr;
	/* A redirect is refused, not followed: the controller is the URL
	 * configured, and following one freed the connection under lws. */
	i.ssl_connection = LCCSCF_USE_SSL | LCCSCF_HTTP_NO_FOLLOW_REDIRECT;
	i.protocol = ES_PROTO_SUBPROTOCOL;
	i.local_protocol_name = ES_PROTO_SUBPROTOCOL;
	i.ietf_version_or_minus_one = -1;
	i.opaque_user_data = s;
	s->attempts++;
	s->state = ST_CONNECTING;
	es_log_debug("sync", "dialling", "url", s->url, "address", s->addr, NULL);
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
		sync__fail_conn(s, -1, LWS_CLOSE_STATUS_GOINGAWAY,
				"nothing received for 45 s");
	} else if (s->state == ST_READY && !s->close_code &&
		   now - s->last_ping_ms >= s->heartbeat_s * 1000LL) {
		s->last_ping_ms = now;
		sync__queue_msg(s, es_proto_ping(es_time_now_rfc3339(t)));
	}
	lws_sul_schedule(s->ctx, 0, &s->sul_tick, tick, TICK_US);
}

static int on_writeable(es_sync *s, struct lws *wsi)
{
	int n = es_ws_queue_write(&s->q, wsi);

	if (n < 0) {
		sync__set_error(s, "write failed", NULL);
		return -1;
	}
	if (n > 0) {
		if (!es_ws_queue_pending(&s->q))
			reconcile_soon(s);
		lws_callback_on_writable(wsi);
		return 0;
	}
	if (s->close_code) {
		lws_close_reason(wsi, (enum lws_close_status)s->close_code, NULL, 0);
		return -1;
	}
	if (s->state == ST_READY)
		return sync__send_next_report(s, wsi);
	return 0;
}

/* One piece of a message from the controller (es_ws_rx_add: reassembly,
 * the size limit, binary messages only once `deflate` is agreed). */
static void on_receive(es_sync *s, struct lws *wsi, const void *in, size_t len)
{
	es_ws_msg m;

	s->last_rx_ms = es_time_mono_ms();
	if (s->close_code)
		return;
	if (es_ws_rx_add(&s->rx, wsi, in, len, &m) != ES_OK)
		sync__proto_fail(s, m.code, m.why);
	else if (m.done)
		sync__on_message(s, m.text, m.len);
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
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
		char what[sizeof(why) - 20];
		size_t n = in ? strnlen(in, len) : 0;

		/* libwebsockets' reason, checked against the socket and the
		 * name (connerr.h): a refused or reset connection is not a
		 * certificate problem, an unresolved name is named. When that
		 * finds nothing to add, a certificate problem is said in full
		 * (sync_tls.c). */
		es_connerr_explain(in, len, s->u.host, lws_get_socket_fd(wsi), what,
				   sizeof(what));
		while (n > 0 && isspace((unsigned char)((const char *)in)[n - 1]))
			n--;
		if (n > 0 && strlen(what) == n && !strncmp(what, in, n))
			sync__tls_conn_error(s, in, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "connection failed: %s", what);
		if (s->state != ST_IDLE && !s->peer_refused)
			sync__set_error(s, why, NULL);
		s->peer_refused = 0;
		conn_down(s, NULL);
		break;
	}
	case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH:
		return sync__tls_check_peer(s, wsi);
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		s->wsi = wsi;
		s->state = ST_HANDSHAKING;
		s->last_rx_ms = es_time_mono_ms();
		s->heartbeat_s = ES_PROTO_HEARTBEAT_S;
		es_backoff_up(&s->bo, es_time_mono_ms());
		sync__send_hello(s);
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
			unsigned code = (unsigned)(p[0] << 8 | p[1]);

			snprintf(why, sizeof(why), "controller closed with %u%s%.*s",
				 code, len > 2 ? ": " : "", (int)(len - 2),
				 (const char *)in + 2);
			sync__set_error(s, why, NULL);
			if (wsi == s->wsi && code == ES_PROTO_CLOSE_REPLACED)
				replaced(s);
		}
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		if (wsi == s->wsi) {
			if (!s->last_error[0])
				sync__set_error(s, "connection closed", NULL);
			conn_down(s, NULL);
		}
		break;
	default:
		break;
	}
	return 0;
}

const struct lws_protocols sync__protocols[] = {
	{ ES_PROTO_SUBPROTOCOL, sync_cb, 0, 0, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
};

es_err es_sync_new(struct lws_context *ctx, es_store *st,
		   const es_sync_opts *opts, const es_sync_hooks *hooks,
		   es_sync **out, char *err, size_t errsz)
{
	es_sync *s = NULL;
	es_err rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	s->creds_ok = -1;
	rc = es_agent_urls_parse(opts->url, &s->urls, s->us, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	s->listed = opts->listed;
	if (!s->listed) {
		es_agent_url us[ES_URLLIST_MAX];
		size_t perm[ES_URLLIST_MAX];

		es_urllist_order_for(&s->urls, opts->node, perm);
		for (size_t i = 0; i < s->urls.n; i++)
			us[i] = s->us[perm[i]];
		memcpy(s->us, us, s->urls.n * sizeof(us[0]));
	}
	use_url(s);
	s->ctx = ctx;
	s->st = st;
	s->metrics = opts->metrics;
	s->proto_offer = opts->protocol_version == 1 ? 1 : 2;
	s->deflate_offer = opts->deflate && s->proto_offer == 2;
	s->proto = 1;
	s->renew_percent = opts->renew_percent < 0 ? 0 : opts->renew_percent > 99 ? 99 :
			   opts->renew_percent;
	if (hooks)
		s->hooks = *hooks;
	s->node = strdup(opts->node);
	s->agent_version = strdup(opts->agent_version);
	s->boot_id = strdup(opts->boot_id ? opts->boot_id : "");
	s->labels = opts->labels ? cJSON_Duplicate(opts->labels, 1)
				 : cJSON_CreateObject();
	s->cert = strdup(opts->cert ? opts->cert : "");
	s->key = strdup(opts->key ? opts->key : "");
	s->ca = strdup(opts->ca ? opts->ca : "");
	if (!s->node || !s->agent_version || !s->boot_id || !s->labels ||
	    !s->cert || !s->key || !s->ca) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	s->heartbeat_s = ES_PROTO_HEARTBEAT_S;
	es_store_get_int(st, "acked_seq", 0, &s->last_acked_seq);
	es_backoff_init(&s->bo, NULL, NULL);
	{
		int recovered = 0;
		char rerr[300];

		/* A renewal cut short by a crash (enroll/renew.h). */
		if (es_renew_recover(s->cert, s->key, &recovered, rerr, sizeof(rerr)) != ES_OK)
			es_log_error("sync", "cannot finish a renewal cut short", "error",
				     rerr, NULL);
		else if (recovered)
			es_log_info("sync", "finished a renewal cut short: the new key "
				    "is in place", "key", s->key, NULL);
	}
	/* The first look at the files, so that the first collection round
	 * already knows; a bad file is not an error here (dial retries). */
	(void)sync__tls_load(s);
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
	dial_in(s, 0);
	sync__renew_start(s);
}

void es_sync_kick(es_sync *s)
{
	if (s && s->wsi && s->state == ST_READY)
		lws_callback_on_writable(s->wsi);
}

void es_sync_restart(es_sync *s, const char *why)
{
	if (!s)
		return;
	s->last_acked_seq = 0;
	es_store_get_int(s->st, "acked_seq", 0, &s->last_acked_seq);
	s->sent_after = 0;
	s->state_inflight = 0;
	s->snapshot_sent = 0;
	sync__fail_conn(s, -1, LWS_CLOSE_STATUS_GOINGAWAY, why);
}

int es_sync_refused(const es_sync *s, const char **reason, const char **message)
{
	*reason = s->refused_reason;
	*message = s->refused_msg;
	return s->refused;
}

void es_sync_credentials_changed(es_sync *s)
{
	if (!s || s->stopping)
		return;
	s->refused = 0;
	es_backoff_init(&s->bo, NULL, NULL);
	if (s->state == ST_IDLE)
		dial_in(s, 0);
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
	info->next_dial_ms = -1;
	if (s->state == ST_IDLE && s->dial_at_ms && !s->stopping) {
		int64_t left = s->dial_at_ms - es_time_mono_ms();

		info->next_dial_ms = left > 0 ? left : 0;
	}
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
	    !es_json_add_int(o, "lastAckedSeq", in.last_acked_seq) ||
	    (in.next_dial_ms >= 0 && !es_json_add_int(o, "nextDialInMs", in.next_dial_ms))) {
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
	lws_sul_cancel(&s->sul_reconcile);
	lws_sul_cancel(&s->sul_creds);
}

void es_sync_free(es_sync *s)
{
	if (!s)
		return;
	es_ws_queue_clear(&s->q);
	es_ws_rx_free(&s->rx);
	es_urllist_free(&s->urls);
	sync__renew_free(s);
	free(s->node);
	free(s->agent_version);
	free(s->boot_id);
	cJSON_Delete(s->labels);
	free(s->cert);
	free(s->key);
	free(s->ca);
	free(s);
}
