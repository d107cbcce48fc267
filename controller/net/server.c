/*
 * server.c - the controller's libwebsockets context and its two vhosts
 * (server.h), and the agents' connections: peer identity, message framing,
 * the outgoing queue, closing and the liveness sweep. The protocol's
 * messages are server_sync.c's, the admin listener server_admin.c's.
 */
#include "net/server_int.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ca/ca.h"
#include "es_json.h"
#include "es_log.h"
#include "es_time.h"
#include "es_version.h"
#include "es_ws.h"
#include "net/tickets.h"

#define SWEEP_US (1000 * LWS_US_PER_MS)
/* Seconds a closing connection may take before it is cut. */
#define CLOSE_GRACE_S 10
/* Receive buffer per agent connection, bytes: a message longer than this
 * arrives in several pieces and is joined by es_ws_rx_add, up to
 * ES_PROTO_MAX_MESSAGE. */
#define AGENT_RX_BUFFER 2048
#define DEFAULT_HANDSHAKE_TIMEOUT_S 10
/* Sweeps (seconds) between two looks at the heap's free memory, and the
 * free bytes above which it is given back (trim_heap). */
#define TRIM_EVERY_SWEEPS 5
#define TRIM_SLACK_BYTES (1024 * 1024)
#define DEFAULT_OVERLOAD_RETRY_S 30

es_server *server__from_wsi(struct lws *wsi)
{
	return lws_context_user(lws_get_context(wsi));
}

int server__check_peer(es_server *s, struct lws *wsi, es_identity_kind want,
		       char *name, size_t namesz, char *why, size_t whysz)
{
	union lws_tls_cert_info_results ci;
	unsigned char *der = NULL;
	size_t len = 0;
	char v[256];
	int rc = -1;

	memset(&ci, 0, sizeof(ci));
	if (lws_tls_peer_cert_info(wsi, LWS_TLS_CERT_INFO_VERIFIED, &ci, 0)) {
		es_errf(ES_ERR_AUTH, why, whysz, "no client certificate");
		goto cleanup;
	}
	switch (es_ws_peer_cert(wsi, &der, &len)) {
	case ES_OK:
		break;
	case ES_ERR_NOMEM:
		es_errf(ES_ERR_NOMEM, why, whysz, "out of memory");
		goto cleanup;
	default:
		es_errf(ES_ERR_AUTH, why, whysz,
			"client certificate unreadable or over %d bytes",
			ES_WS_PEER_CERT_MAX);
		goto cleanup;
	}
	if (!ci.verified) {
		/* Say which: a clock that disagrees with the certificate is
		 * the host's to fix, an unknown issuer the certificate's. */
		if (es_pki_check_validity(der, len, time(NULL), v, sizeof(v)) == ES_ERR_AUTH)
			es_errf(ES_ERR_AUTH, why, whysz, "client certificate %s", v);
		else
			es_errf(ES_ERR_AUTH, why, whysz,
				"client certificate does not verify against the "
				"client CA (unknown issuer or bad signature)");
		goto cleanup;
	}
	/* A resumed TLS session (net/tickets.h) carries the verification of
	 * the handshake that made it, perhaps days ago: the validity period
	 * is checked against the clock on every connection. */
	if (es_pki_check_validity(der, len, time(NULL), v, sizeof(v)) == ES_ERR_AUTH) {
		es_errf(ES_ERR_AUTH, why, whysz, "client certificate %s", v);
		goto cleanup;
	}
	if (es_pki_check_peer(der, len, s->trust_domain, want, name, namesz, why,
			      whysz) != ES_OK)
		goto cleanup;
	rc = 0;
cleanup:
	free(der);
	return rc;
}

/* ---- agents: outgoing queue and closing ---- */

void server__start_close(conn *c, int code, const char *reason)
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

void server__queue_clear(conn *c)
{
	es_ws_queue_clear(&c->q);
}

es_err server__queue_buf(conn *c, es_ws_buf *b)
{
	es_err rc = es_ws_queue_buf(&c->q, c->wsi, b);

	if (rc == ES_ERR_TOOBIG) {
		es_log_error("server", "message over the size limit not sent",
			     "node", c->node, NULL);
		return ES_OK;
	}
	if (rc != ES_OK)
		return rc;
	if (es_ws_queue_over(&c->q) && c->state != CS_CLOSING) {
		es_log_warn("server", "send queue full, dropping the connection",
			    "node", c->node, NULL);
		server__queue_clear(c);
		server__queue_error(c, ES_PC_INTERNAL, "send queue over its limit");
	}
	return ES_OK;
}

es_err server__queue_msg(conn *c, cJSON *m)
{
	es_ws_buf *b = NULL;
	es_err rc = es_ws_buf_json(m, 0, &b);

	if (rc == ES_OK)
		rc = server__queue_buf(c, b);
	es_ws_buf_unref(b);
	return rc;
}

void server__queue_error(conn *c, es_proto_code code, const char *text)
{
	if (c->state == CS_CLOSING)
		return;
	es_log_warn("server", "protocol error", "node", c->node, "code",
		    es_proto_code_name(code), "error", text, NULL);
	(void)server__queue_msg(c, es_proto_error(code, text));
	server__start_close(c, es_proto_close_code(code),
			    es_proto_code_name(code));
}

/* ---- agents: handshakes in progress ---- */

/* A connection on the agents' listener was accepted: it has
 * handshake_timeout_s to reach its hello. */
static void pending_add(es_server *s, struct lws *wsi)
{
	pending_conn *p = calloc(1, sizeof(*p));

	if (!p)
		return; /* not timed: lws's own timeouts still apply */
	p->wsi = wsi;
	p->deadline_ms = es_time_mono_ms() + s->handshake_timeout_s * 1000LL;
	p->prev = s->pend_tail;
	if (s->pend_tail)
		s->pend_tail->next = p;
	else
		s->pend_head = p;
	s->pend_tail = p;
	lws_set_opaque_user_data(wsi, p);
}

void server__pending_done(struct lws *wsi)
{
	pending_conn *p = lws_get_opaque_user_data(wsi);
	es_server *s = server__from_wsi(wsi);

	if (!p)
		return;
	lws_set_opaque_user_data(wsi, NULL);
	if (p->prev)
		p->prev->next = p->next;
	else
		s->pend_head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		s->pend_tail = p->prev;
	free(p);
}

/* Cuts the connections past their deadline (the list is in deadline
 * order: one timeout for all). */
static void pending_expire(es_server *s, int64_t now)
{
	for (pending_conn *p = s->pend_head; p && p->deadline_ms <= now; p = p->next) {
		char peer[64] = "";

		if (p->killed)
			continue;
		p->killed = 1;
		lws_get_peer_simple(p->wsi, peer, sizeof(peer));
		es_log_warn("server", "agent connection closed: TLS, upgrade and "
			    "hello not done in time", "peer", peer, NULL);
		es_ctrl_metrics_refused(s->metrics, "HandshakeTimeout");
		lws_set_timeout(p->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
	}
}

/* ---- agents: receiving and connection lifecycle ---- */

/* One piece of a message from the agent (es_ws_rx_add: reassembly, the
 * size limit, no binary messages); a complete message is handled. */
static void on_receive(conn *c, const void *in, size_t len)
{
	es_ws_msg m;

	if (c->state == CS_CLOSING)
		return;
	c->last_rx_ms = es_time_mono_ms();
	if (es_ws_rx_add(&c->rx, c->wsi, in, len, &m) != ES_OK)
		server__queue_error(c, m.code, m.why);
	else if (m.done) {
		server__handle_message(c, m.text, m.len);
		/* An idle connection holds no reassembly buffer. */
		es_ws_rx_trim(&c->rx);
	}
}

static int on_writeable(conn *c)
{
	int n = es_ws_queue_write(&c->q, c->wsi);

	if (n < 0)
		return -1;
	if (n > 0) {
		if (es_ws_queue_pending(&c->q) || c->state == CS_CLOSING)
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
	server__batch_forget(c);
	server__session_release(c);
	server__renew_forget(c);
	if (c->helloed && !c->replaced &&
	    es_db_node_disconnected(s->db, c->node, time(NULL)) != ES_OK)
		es_log_error("server", "could not record the disconnection",
			     "node", c->node, NULL);
	if (c->helloed)
		es_log_info("server", "agent disconnected", "node", c->node, NULL);
	else if (c->close_code)
		es_log_warn("server", "agent connection refused", "node", c->node,
			    "reason", c->close_reason, NULL);
	else
		es_log_info("server", "agent session ended before hello", "node",
			    c->node, "reason", "closed by the agent or the network", NULL);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	server__queue_clear(c);
	es_ws_rx_free(&c->rx);
	es_ctrl_pending_free(&c->acks);
	cJSON_Delete(c->labels);
	memset(c, 0, sizeof(*c));
	s->closed_since_trim++;
}

/* 1 when the Sec-WebSocket-Protocol list (RFC 6455 section 11.3.4) offers
 * ES_PROTO_SUBPROTOCOL. */
static int offers_subprotocol(const char *list)
{
	const size_t n = strlen(ES_PROTO_SUBPROTOCOL);
	const char *p = list;

	while (*p) {
		size_t len;

		p += strspn(p, ", \t");
		len = strcspn(p, ", \t");
		if (len == n && strncmp(p, ES_PROTO_SUBPROTOCOL, n) == 0)
			return 1;
		p += len;
	}
	return 0;
}

/* The checks of an agent's connection before its WebSocket opens (the
 * path, the subprotocol, PROTOCOL.md "Transport" for the certificate).
 * Returns 0 with the node's name in node, or -1 with why. */
static int agent_refusal(struct lws *wsi, char *node, size_t nodesz, char *why,
			 size_t whysz)
{
	char uri[64] = "", proto[256] = "";

	if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) < 0 ||
	    strcmp(uri, ES_PROTO_PATH) != 0) {
		snprintf(why, whysz, "WebSocket path is not %s", ES_PROTO_PATH);
		return -1;
	}
	if (lws_hdr_copy(wsi, proto, sizeof(proto), WSI_TOKEN_PROTOCOL) <= 0) {
		snprintf(why, whysz, "no subprotocol; %s required", ES_PROTO_SUBPROTOCOL);
		return -1;
	}
	if (!offers_subprotocol(proto)) {
		snprintf(why, whysz, "subprotocol \"%.128s\" offered; %s required",
			 proto, ES_PROTO_SUBPROTOCOL);
		return -1;
	}
	return server__check_peer(server__from_wsi(wsi), wsi, ES_ID_NODE, node,
				  nodesz, why, whysz);
}

/* Logs and refuses a connection that agent_refusal turns down. */
static int filter_agent(struct lws *wsi, char *node, size_t nodesz)
{
	char why[512] = "", peer[64] = "";

	if (agent_refusal(wsi, node, nodesz, why, sizeof(why)) == 0)
		return 0;
	lws_get_peer_simple(wsi, peer, sizeof(peer));
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
	case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
		/* A new socket: whatever an earlier one of this number
		 * resumed is not its. */
		es_tickets_forget((int)(intptr_t)in);
		return 0;
	case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
		pending_add(server__from_wsi(wsi), wsi);
		return 0;
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
		/* Before lws matches the subprotocol: a wrong one is refused
		 * here, with its reason, not silently by lws. */
		char node[ES_NAME_MAX + 1];

		es_ctrl_metrics_handshake(server__from_wsi(wsi)->metrics,
					  es_tickets_take_resumed(lws_get_socket_fd(wsi)));
		return filter_agent(wsi, node, sizeof(node));
	}
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		return c ? filter_agent(wsi, c->node, sizeof(c->node)) : -1;
	case LWS_CALLBACK_ESTABLISHED:
		s = server__from_wsi(wsi);
		if (!c || !c->node[0])
			return -1;
		c->srv = s;
		c->wsi = wsi;
		c->state = CS_HELLO;
		es_ws_queue_init(&c->q, ES_PROTO_MAX_MESSAGE, ES_WS_SEND_QUEUE_MAX);
		c->last_rx_ms = es_time_mono_ms();
		c->linked = 1;
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		/* "agent connected" comes with its hello (server_sync.c). */
		es_log_debug("server", "agent session opened, waiting for hello",
			     "node", c->node, NULL);
		return 0;
	case LWS_CALLBACK_RECEIVE:
		if (c && c->linked)
			on_receive(c, in, len);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return c && c->linked ? on_writeable(c) : 0;
	case LWS_CALLBACK_CLOSED:
		if (c)
			conn_release(c);
		return 0;
	case LWS_CALLBACK_WSI_DESTROY:
		server__pending_done(wsi);
		if (c)
			conn_release(c);
		return 0;
	default:
		return 0;
	}
}

/* Gives freed heap memory back to the system (malloc_trim: the free pages
 * inside the heap as well as its top): at the next sweep after connections
 * closed, so that a fleet that went away does not leave the RSS at its
 * peak, and every TRIM_EVERY_SWEEPS sweeps when more than TRIM_SLACK_BYTES
 * are free (mallinfo2), since glibc keeps what reports, handshakes and
 * pushes freed between the connections' own blocks for reuse, which left
 * about 2.5 KiB per connection resident at N = 1 000 (README
 * "Performance"). */
static void trim_heap(es_server *s)
{
	if (!s->closed_since_trim && ++s->sweeps_since_trim < TRIM_EVERY_SWEEPS)
		return;
	if (s->closed_since_trim || mallinfo2().fordblks > TRIM_SLACK_BYTES)
		malloc_trim(0);
	s->closed_since_trim = 0;
	s->sweeps_since_trim = 0;
}

/* Closes connections silent for ES_PROTO_CONTROLLER_DEAD_S with 1001 and
 * those past their handshake timeout; gives freed memory back to the
 * system (trim_heap); keeps the ticket key active. */
static void sweep_cb(lws_sorted_usec_list_t *sul)
{
	es_server *s = lws_container_of(sul, es_server, sweep);
	int64_t now = es_time_mono_ms();

	pending_expire(s, now);
	es_tickets_tick();
	trim_heap(s);

	for (conn *c = s->conns; c; c = c->next) {
		if (c->state == CS_CLOSING ||
		    now - c->last_rx_ms < ES_PROTO_CONTROLLER_DEAD_S * 1000LL)
			continue;
		es_log_info("server", "agent silent, closing", "node", c->node, NULL);
		server__queue_clear(c);
		server__start_close(c, LWS_CLOSE_STATUS_GOINGAWAY, "silent");
	}
	lws_sul_schedule(s->ctx, 0, &s->sweep, sweep_cb, SWEEP_US);
}

/* ---- context ---- */

/*
 * The agents' connections have no libwebsockets validity timer (no
 * WebSocket ping after secs_since_valid_ping, no hang-up): liveness is
 * the protocol's own (PROTOCOL.md "ping": the agent pings after 20 s
 * without a message, and sweep_cb closes a session silent for
 * ES_PROTO_CONTROLLER_DEAD_S). libwebsockets keeps every connection's
 * timer in one list sorted by expiry and inserts from its head, so with
 * the default policy (a ping 300 s after the last pong) each pong and
 * each new session walked the whole list: the top cost of a controller
 * holding 10 000 sessions (README "A fleet on one controller").
 */
static const lws_retry_bo_t agent_no_validity = {
	.secs_since_valid_ping = 0,
	.secs_since_valid_hangup = 0,
};

static const struct lws_protocols agent_protocols[] = {
	{ ES_PROTO_SUBPROTOCOL, cb_agent, sizeof(conn), AGENT_RX_BUFFER, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
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
	s->debug_exit_after = -1;
	s->ca = o->ca;
	s->cert_lifetime = o->cert_lifetime;
	s->renewal_grace = o->renewal_grace;
	rc = es_ctrl_metrics_new(o->db_path, ES_VERSION, &s->metrics, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	s->hooks.object_changed = es_server_object_changed;
	s->hooks.ud = s;
	s->hooks.node_revoked = es_server_node_revoked;
	if (o->advertise_url && !(s->advertise_url = strdup(o->advertise_url))) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	s->hooks.join_url = s->advertise_url;
	s->hooks.ca_pin = o->ca ? es_ca_pin(o->ca) : NULL;
	if (o->trust_bundle) {
		char *txt = NULL;

		rc = es_ca_read_pem("trust-bundle", o->trust_bundle, &txt, err, errsz);
		if (rc != ES_OK)
			goto cleanup;
		s->trust_bundle = txt;
	}
	s->max_sessions = o->max_sessions > 0 ? o->max_sessions : 0;
	s->handshake_timeout_s = o->handshake_timeout_s > 0 ? o->handshake_timeout_s
							     : DEFAULT_HANDSHAKE_TIMEOUT_S;
	s->overload_retry_s = o->overload_retry_s > 0 ? o->overload_retry_s
						      : DEFAULT_OVERLOAD_RETRY_S;

	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS |
		       LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.user = s;
	info.timeout_secs = 20;
	/* At the limit lws stops accepting: new connections wait in the
	 * kernel's listen backlog and cost nothing until a slot frees. */
	info.simultaneous_ssl_handshake_restriction =
		o->max_handshakes > 0 ? o->max_handshakes : 0;
	/* lws clears s->ctx when it has freed the context (staged under
	 * libuv: es_server_destroy). */
	info.pcontext = &s->ctx;
	s->uv_run_once = o->uv_run_once;
	if (s->uv_run_once)
		info.options |= LWS_SERVER_OPTION_LIBUV |
				LWS_SERVER_OPTION_UV_NO_SIGSEGV_SIGFPE_SPIN;
	s->ctx = lws_create_context(&info);
	if (!s->ctx) {
		rc = es_errf(ES_ERR_TLS, err, errsz,
			     "libwebsockets: could not create the context%s",
			     s->uv_run_once ? " (event-loop libuv)" : "");
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
	/* No WebSocket extension: PROTOCOL.md "Transport" says why there is
	 * no permessage-deflate. */
	info.extensions = NULL;
	info.ssl_cert_filepath = o->cert;
	info.ssl_private_key_filepath = o->key;
	info.ssl_ca_filepath = o->client_ca;
	info.user = s;
	info.retry_and_idle_policy = &agent_no_validity;
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
	info.retry_and_idle_policy = NULL; /* libwebsockets' default */
	info.vhost_name = "admin";
	info.iface = o->admin_host;
	info.port = o->admin_port;
	info.protocols = server__admin_protocols;
	info.ssl_ca_filepath = o->admin_ca;
	if (!lws_create_vhost(s->ctx, &info)) {
		rc = es_errf(ES_ERR_TLS, err, errsz,
			     "admin-listen %s:%d: could not start the admin listener "
			     "(address in use, or cert %s, key %s, admin-ca %s unusable)",
			     o->admin_host, o->admin_port, o->cert, o->key,
			     o->admin_ca);
		goto cleanup;
	}
	if (o->join_port && (rc = server__join_vhost(s, o, err, errsz)) != ES_OK)
		goto cleanup;
	lws_sul_schedule(s->ctx, 0, &s->sweep, sweep_cb, SWEEP_US);
	*out = s;
	s = NULL;
cleanup:
	es_server_destroy(s);
	return rc;
}

es_err es_server_run(es_server *s)
{
	/* Under libuv lws_service would run the loop until uv_stop: one turn
	 * at a time instead, so that the stop flag is seen as with poll. */
	while (!s->stop) {
		if (s->uv_run_once)
			s->uv_run_once(s->ctx);
		else if (lws_service(s->ctx, 0) < 0)
			return s->stop ? ES_OK : ES_ERR_IO;
	}
	return ES_OK;
}

struct lws_context *es_server_context(es_server *s)
{
	return s->ctx;
}

void es_server_stop(es_server *s)
{
	if (!s)
		return;
	s->stop = 1;
	if (s->ctx)
		lws_cancel_service(s->ctx);
}

/* es_server_drain: how long the loop runs, in milliseconds, once etcd
 * answered every cursor, to write the acks out. */
#define DRAIN_WRITE_MS 100

static void drain_timer(lws_sorted_usec_list_t *sul)
{
	(void)sul; /* only wakes the loop */
}

void es_server_drain(es_server *s, int bound_ms)
{
	lws_sorted_usec_list_t wake;
	struct timespec now;
	int64_t end;

	if (!s || !s->ctx || !s->store)
		return;
	memset(&wake, 0, sizeof(wake));
	clock_gettime(CLOCK_MONOTONIC, &now);
	end = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + bound_ms;
	server__batch_flush(s);
	/* The deadline wakes the loop should nothing else. */
	lws_sul_schedule(s->ctx, 0, &wake, drain_timer, (lws_usec_t)bound_ms * LWS_US_PER_MS);
	for (;;) {
		int64_t ms;

		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
		if (ms >= end)
			break;
		/* All answered: a few more turns write the acks out. */
		if (!s->cursor_groups && !es_db_batch_open(s->db) && end > ms + DRAIN_WRITE_MS) {
			end = ms + DRAIN_WRITE_MS;
			lws_sul_cancel(&wake);
			lws_sul_schedule(s->ctx, 0, &wake, drain_timer,
					 DRAIN_WRITE_MS * LWS_US_PER_MS);
		}
		if (s->uv_run_once)
			s->uv_run_once(s->ctx);
		else if (lws_service(s->ctx, 0) < 0)
			break;
	}
	lws_sul_cancel(&wake);
}

void es_server_destroy(es_server *s)
{
	if (!s)
		return;
	if (s->ctx) {
		lws_sul_cancel(&s->sweep);
		s->stopping = 1;
		server__batch_flush(s);
		server__cursor_groups_free(s);
		lws_context_destroy(s->ctx);
		/* Under libuv the destroy is staged: the first call closes the
		 * connections and runs the loop until libuv has closed their
		 * handles, and each later call advances it until lws frees the
		 * context and clears s->ctx (info.pcontext). With poll the first
		 * call frees it. A few calls suffice; the bound is against a
		 * libwebsockets that never finishes (the context then leaks). */
		for (int i = 0; s->ctx && i < 16; i++)
			lws_context_destroy(s->ctx);
	}
	while (s->pend_head) {
		pending_conn *p = s->pend_head;

		s->pend_head = p->next;
		free(p);
	}
	es_ctrl_metrics_free(s->metrics);
	free(s->trust_domain);
	free(s->advertise_url);
	free(s->trust_bundle);
	free(s);
}
