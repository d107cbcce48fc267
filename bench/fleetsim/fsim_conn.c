/*
 * fsim_conn.c - the simulated agents' connections (fleetsim.h): dialling
 * with the agent's backoff, the protocol state machine of each node
 * (proto/PROTOCOL.md: hello, welcome, desired/desiredAck, reports and
 * their acks, resync, ping; version 2: deltas, events and compressed
 * messages), the send queue, and the TLS client settings the agent has
 * (4096-byte records, session tickets kept for the next dial).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <mbedtls/ssl.h>

#include "es_buf.h"
#include "es_proto.h"
#include "es_urllist.h"
#include "fleetsim.h"
#include "fsim_certs.h"

/* The agent's redial backoff (PROTOCOL.md "Errors", agent/sync/backoff.c):
 * the n-th consecutive failure waits a uniformly random time in
 * [0, min(cap, base * 2^n)], base 1 s, cap 60 s; n is reset by a session
 * that stayed up 60 s or got its welcome and an acknowledged report. A
 * come-back-later (Overloaded, retryAfterSeconds R) waits a uniformly
 * random time in [R, 2R] instead and n does not grow. Every redial goes
 * to the next controller of the list. */
#define BACKOFF_BASE_MS 1000
#define BACKOFF_CAP_MS 60000
#define BACKOFF_RESET_MS 60000
/* A connection silent this long is closed (PROTOCOL.md "Limits"). */
#define SILENT_MS (ES_PROTO_AGENT_DEAD_S * 1000LL)
/* Source addresses: at most this many connections from one (loopback)
 * address, below the 28 232 ephemeral ports of Linux's default range. */
#define CONNS_PER_SOURCE 20000
/* As edgesync-agent (agent/sync): TLS records of at most 4096 bytes
 * (RFC 6066 max_fragment_length), and the session kept for the next dial
 * (RFC 5077 tickets) for as long as a controller accepts one. */
#define TLS_MFL_CODE MBEDTLS_SSL_MAX_FRAG_LEN_4096
#define TLS_SESSION_KEEP_S (7u * 24 * 3600)

int __real_mbedtls_ssl_setup(mbedtls_ssl_context *ssl, const mbedtls_ssl_config *conf);
int __wrap_mbedtls_ssl_setup(mbedtls_ssl_context *ssl, const mbedtls_ssl_config *conf);

/* Sets the record size where mbedTLS binds a connection's configuration,
 * as the agent does: libwebsockets makes one configuration per connection
 * and offers no hook before its handshake (the link wraps
 * mbedtls_ssl_setup, bench/fleetsim/CMakeLists.txt). */
int __wrap_mbedtls_ssl_setup(mbedtls_ssl_context *ssl, const mbedtls_ssl_config *conf)
{
#if defined(MBEDTLS_SSL_MAX_FRAGMENT_LENGTH)
	if (conf && mbedtls_ssl_conf_get_endpoint(conf) == MBEDTLS_SSL_IS_CLIENT)
		(void)mbedtls_ssl_conf_max_frag_len((mbedtls_ssl_config *)conf, TLS_MFL_CODE);
#endif
	return __real_mbedtls_ssl_setup(ssl, conf);
}

/* A uniformly random double in [0, 1). */
static double rnd01(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = (uint64_t)random() << 31 ^ (uint64_t)random();
	return (double)(v >> 11) / 9007199254740992.0;
}

static void queue_clear(fsim_node *n)
{
	while (n->qhead) {
		fsim_out *o = n->qhead;

		n->qhead = o->next;
		free(o->buf);
		free(o);
	}
	n->qtail = NULL;
}

/* Starts b with LWS_PRE bytes of headroom for lws_write. */
static void msg_begin(es_buf *b)
{
	es_buf_init(b, 0);
	if (es_buf_reserve(b, LWS_PRE) == ES_OK)
		es_buf_commit(b, LWS_PRE);
}

/* Queues the message in b (taken) and asks for a writeable callback.
 * Returns 0, or -1 when out of memory (the connection is closed). */
static int msg_queue(fsim_node *n, es_buf *b, int report)
{
	fsim_out *o = calloc(1, sizeof(*o));

	if (!o || b->err != ES_OK) {
		free(o);
		es_buf_free(b);
		if (n->wsi)
			lws_set_timeout(n->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
		return -1;
	}
	o->len = b->len - LWS_PRE;
	o->report = report;
	o->buf = (unsigned char *)es_buf_detach(b, NULL);
	if (n->qtail)
		n->qtail->next = o;
	else
		n->qhead = o;
	n->qtail = o;
	if (n->wsi)
		lws_callback_on_writable(n->wsi);
	return 0;
}

/* Sends the next state report: a snapshot when one is owed, else the next
 * patch of the replay (version 1) or the delta of record rec (version 2,
 * rec >= 0) on the last acknowledged state. At most one is in flight
 * (PROTOCOL.md "Reports"); a round that comes meanwhile waits. */
static void send_state(fsim *s, fsim_node *n, long rec)
{
	const fsim_tmpl *t;
	int snap = n->need_snapshot || n->state_seq == 0;
	es_buf b;

	if (n->unacked_seq) {
		n->pending_state = 1;
		if (rec >= 0)
			n->pending_rec = rec;
		return;
	}
	if (n->pending_state && rec < 0)
		rec = n->pending_rec;
	n->pending_state = 0;
	n->pending_rec = -1;
	if (snap)
		t = &s->replay.snapshot;
	else if (n->proto == 2 && rec >= 0)
		t = &s->replay.recs[rec].body;
	else if (n->proto == 2 || s->replay.npatches == 0)
		return; /* version 2 sends a delta only when a record is due; a
			 * version 1 session with the version 2 capture keeps its
			 * snapshot */
	else
		t = &s->replay.patches[n->patch_pos++ % s->replay.npatches];
	msg_begin(&b);
	fsim_msg_report(&b, t, n->next_seq, snap ? "snapshot" : n->proto == 2 ? "delta" : "patch",
			n->state_seq, n->name);
	if (msg_queue(n, &b, 1) != 0)
		return;
	n->qtail->seq = n->next_seq;
	n->unacked_seq = n->next_seq++;
	n->unacked_sent_ms = 0;
	n->need_snapshot = 0;
	s->st.reports_sent++;
	s->st.snapshots_sent += snap;
}

/* Sends the state report in flight again, as a snapshot under its seq (the
 * agent's latest-wins outbox entry keeps its seq). */
static void resend_state(fsim *s, fsim_node *n)
{
	es_buf b;

	msg_begin(&b);
	fsim_msg_report(&b, &s->replay.snapshot, n->unacked_seq, "snapshot", 0, n->name);
	if (msg_queue(n, &b, 1) != 0)
		return;
	n->qtail->seq = n->unacked_seq;
	n->unacked_sent_ms = 0;
	n->need_snapshot = 0;
	s->st.reports_sent++;
	s->st.snapshots_sent++;
}

static void schedule_report(fsim *s, fsim_node *n, int64_t now, int first)
{
	double iv = s->o.interval_s * 1000.0;

	if (first)
		n->next_report_ms = now + (int64_t)(iv * rnd01());
	else
		n->next_report_ms = now + (int64_t)(iv * (1.0 + s->o.jitter * (2.0 * rnd01() - 1.0)));
}

/* Version 2: sets when record n->rec_pos is due, its captured gap after
 * the one before with the jitter (first: a random part of it, so the
 * nodes of a fleet do not report together). */
static void schedule_rec(fsim *s, fsim_node *n, int64_t now, int first)
{
	double gap = s->replay.recs[n->rec_pos % s->replay.nrecs].after_s * 1000.0 /
		     s->o.speedup;

	if (first)
		n->next_rec_ms = now + (int64_t)(gap * rnd01());
	else
		n->next_rec_ms = now + (int64_t)(gap * (1.0 + s->o.jitter * (2.0 * rnd01() - 1.0)));
}

/* Version 2: sends the record that is due (an event at once, a delta as
 * the state report) and schedules the next. */
static void send_rec(fsim *s, fsim_node *n, int64_t now)
{
	long i = (long)(n->rec_pos++ % s->replay.nrecs);
	es_buf b;

	if (!s->replay.recs[i].event) {
		send_state(s, n, i);
	} else {
		msg_begin(&b);
		fsim_msg_report(&b, &s->replay.recs[i].body, n->next_seq, "event", 0, n->name);
		if (msg_queue(n, &b, 2) == 0) {
			n->qtail->seq = n->next_seq;
			n->ev_seq = n->next_seq++;
			s->st.reports_sent++;
			s->st.events_sent++;
		}
	}
	schedule_rec(s, n, now, 0);
}

static void on_welcome(fsim *s, fsim_node *n, const fsim_in *m, int64_t now)
{
	n->state = FS_READY;
	n->up_ms = now;
	n->proto = s->o.protocol == 2 && m->proto == 2 ? 2 : 1;
	n->deflate = n->proto == 2 && s->o.compress && m->deflate;
	n->rx.inflate = n->deflate;
	s->st.sessions_v2 += n->proto == 2;
	s->st.sessions_deflate += n->deflate;
	n->heartbeat_s = m->heartbeat_s > 0 ? (int)m->heartbeat_s : ES_PROTO_HEARTBEAT_S;
	n->last_ping_ms = now;
	if (n->welcomes++ > 0)
		s->st.reconnects++;
	fsim_stats_welcome(&s->st, now);
	fsim_samples_add(&s->st.connect, (double)(now - n->dial_ms));
	if (++s->ready == s->o.nodes && s->st.all_ready_ms < 0)
		s->st.all_ready_ms = now;
	if (m->acked_seq > n->acked_seq)
		n->acked_seq = m->acked_seq;
	if (n->acked_seq >= n->next_seq)
		n->next_seq = n->acked_seq + 1;
	if (n->unacked_seq && n->unacked_seq <= n->acked_seq) {
		/* stored before the connection went */
		n->state_seq = n->unacked_seq;
		n->unacked_seq = 0;
		s->st.reports_acked++;
	}
	if (n->unacked_seq) {
		resend_state(s, n);
	} else {
		n->need_snapshot = 1;
		send_state(s, n, -1);
	}
	n->ev_sent_ms = 0;
	if (n->proto == 2) {
		if (n->welcomes == 1) /* each node starts somewhere in the capture */
			n->rec_pos = (size_t)(rnd01() * (double)s->replay.nrecs);
		schedule_rec(s, n, now, 1);
	} else {
		schedule_report(s, n, now, 1);
	}
}

static void on_ack(fsim *s, fsim_node *n, int64_t seq)
{
	/* an ack covers every report up to seq; the numbers are consecutive */
	if (!n->session_acked)
		n->attempt = 0;
	if (seq > n->acked_seq) {
		int64_t newly = (seq < n->next_seq ? seq : n->next_seq - 1) - n->acked_seq;

		if (newly > 0) {
			s->st.reports_acked += newly;
			s->st.win_reports_acked += newly;
		}
		n->acked_seq = seq;
	}
	n->session_acked = 1; /* the agent: this session worked (backoff reset) */
	if (n->ev_sent_ms > 0 && seq >= n->ev_seq) {
		fsim_samples_add(&s->st.ack, fsim_now_msf() - n->ev_sent_ms);
		n->ev_sent_ms = 0;
	}
	/* the reports this session wrote up to seq are stored */
	for (int i = n->nwrote - 1; i >= 0 && n->wrote[i].session == n->welcomes; i--)
		if (n->wrote[i].seq <= seq)
			n->wrote[i].acked = 1;
	if (!n->unacked_seq || seq < n->unacked_seq)
		return;
	if (n->unacked_sent_ms > 0)
		fsim_samples_add(&s->st.ack, fsim_now_msf() - n->unacked_sent_ms);
	n->state_seq = n->unacked_seq;
	n->unacked_seq = 0;
	if (n->pending_state)
		send_state(s, n, -1);
}

static void on_desired(fsim *s, fsim_node *n, const fsim_in *m, int64_t now)
{
	es_buf b;

	s->st.desired_rx++;
	if (m->full && m->more) {
		n->rv_pending = m->rv;
		return;
	}
	if (m->full || m->rv > n->rv)
		n->rv = m->rv;
	if (!m->full && s->st.marker_ms >= 0 && now >= s->st.marker_ms)
		fsim_samples_add(&s->st.fanout, fsim_now_msf() - (double)s->st.marker_ms);
	msg_begin(&b);
	fsim_msg_desired_ack(&b, n->rv);
	if (msg_queue(n, &b, 0) == 0)
		s->st.desired_acks++;
}

static void on_message(fsim *s, fsim_node *n, const char *text, size_t len)
{
	int64_t now = es_time_mono_ms();
	char err[256];
	fsim_in m;
	es_buf b;

	s->st.msgs_rx++;
	s->st.ws_rx_bytes += (int64_t)len;
	if (fsim_msg_parse(text, len, &m, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, "fleetsim: %s: bad message from the controller: %s\n",
			n->name, err);
		lws_set_timeout(n->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
		return;
	}
	if (n->state == FS_HELLO && m.type != FSIM_IN_WELCOME && m.type != FSIM_IN_ERROR)
		return;
	switch (m.type) {
	case FSIM_IN_WELCOME:
		on_welcome(s, n, &m, now);
		break;
	case FSIM_IN_DESIRED:
		on_desired(s, n, &m, now);
		break;
	case FSIM_IN_ACK:
		on_ack(s, n, m.seq);
		break;
	case FSIM_IN_RESYNC:
		s->st.resyncs++;
		n->need_snapshot = 1;
		send_state(s, n, -1);
		break;
	case FSIM_IN_PING:
		msg_begin(&b);
		fsim_msg_pong(&b, m.time[0] ? m.time : NULL);
		msg_queue(n, &b, 0);
		break;
	case FSIM_IN_ERROR:
		s->st.errors_rx++;
		if (strcmp(m.code, "Overloaded") == 0) {
			/* as the agent: 1 s when absent or out of range */
			int64_t r = m.retry_after_s;

			if (r < 1 || r > ES_PROTO_RETRY_AFTER_MAX_S)
				r = 1;
			n->retry_after_ms = r * 1000;
			s->st.overloaded_rx++;
			break;
		}
		if (s->st.errors_rx <= 20)
			fprintf(stderr, "fleetsim: %s: controller error %s\n", n->name, m.text);
		break;
	default:
		break;
	}
}

/* The session of n ended (or its dial failed): schedule the redial. */
static void conn_down(fsim *s, fsim_node *n, int64_t now)
{
	double bound;

	if (n->state == FS_IDLE)
		return;
	if (n->wsi)
		fsim_tcp_bytes(lws_get_socket_fd(n->wsi), &s->tcp_tx_closed,
			       &s->tcp_rx_closed);
	if (n->state == FS_READY) {
		s->ready--;
		s->st.disconnects++;
	} else {
		s->st.dial_failures++;
	}
	if (n->est_ms && now - n->est_ms >= BACKOFF_RESET_MS)
		n->attempt = 0;
	n->est_ms = 0;
	n->session_acked = 0;
	n->state = FS_IDLE;
	n->wsi = NULL;
	queue_clear(n);
	es_ws_rx_reset(&n->rx);
	n->rv_pending = 0;
	n->proto = 0;
	n->deflate = 0;
	n->pending_state = 0;
	n->pending_rec = -1;
	if (s->stopping)
		return;
	n->url = fsim_url_next(&s->o, n->name, n->url);
	if (n->retry_after_ms > 0) {
		int64_t r = n->retry_after_ms;

		n->retry_after_ms = 0;
		n->next_dial_ms = now + r + (int64_t)((double)(r + 1) * rnd01());
		return;
	}
	if (n->attempt < 16)
		n->attempt++;
	bound = BACKOFF_BASE_MS * (double)(1LL << n->attempt);
	if (bound > BACKOFF_CAP_MS)
		bound = BACKOFF_CAP_MS;
	n->next_dial_ms = now + 1 + (int64_t)((bound + 1) * rnd01());
}

/* o's URL texts in node's rendezvous order, into order[o->nurls]. */
static void url_order(const fsim_opts *o, const char *node, size_t *order)
{
	const char *texts[FSIM_MAX_URLS];

	for (int i = 0; i < o->nurls; i++)
		texts[i] = o->urls[i].text;
	es_urllist_order(node, texts, (size_t)o->nurls, order);
}

int fsim_url_first(const fsim_opts *o, int idx, const char *node)
{
	size_t order[FSIM_MAX_URLS];

	if (o->listed)
		return idx % o->nurls;
	url_order(o, node, order);
	return (int)order[0];
}

int fsim_url_next(const fsim_opts *o, const char *node, int url)
{
	size_t order[FSIM_MAX_URLS];
	int pos = 0;

	if (o->listed)
		return (url + 1) % o->nurls;
	url_order(o, node, order);
	while (pos < o->nurls && (int)order[pos] != url)
		pos++;
	return (int)order[(pos + 1) % o->nurls];
}

static struct lws_vhost *node_vhost(fsim *s, fsim_node *n)
{
	struct lws_context_creation_info info;
	char crt[4200], key[4200];

	snprintf(crt, sizeof(crt), "%s/%s.crt", s->cert_dir, n->name);
	snprintf(key, sizeof(key), "%s/%s.key", s->cert_dir, n->name);
	memset(&info, 0, sizeof(info));
	info.vhost_name = n->name;
	info.port = CONTEXT_PORT_NO_LISTEN;
	/* lws builds a vhost's TLS client only with this option */
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.protocols = fsim_conn_protocols;
	info.extensions = NULL; /* PROTOCOL.md "Transport": no permessage-deflate */
	info.client_ssl_ca_filepath = s->o.ca_cert;
	info.client_ssl_cert_filepath = crt;
	info.client_ssl_private_key_filepath = key;
	info.tls_session_timeout = TLS_SESSION_KEEP_S;
	info.tls_session_cache_max = 4;
	return lws_create_vhost(s->ctx, &info);
}

static void dial(fsim *s, fsim_node *n, int64_t now)
{
	struct lws_client_connect_info i;
	struct lws *w;
	char src[32];

	n->next_dial_ms = 0;
	if (!n->vh && !(n->vh = node_vhost(s, n))) {
		fprintf(stderr, "fleetsim: %s: could not build its TLS client from %s\n",
			n->name, s->cert_dir);
		n->state = FS_DIALING;
		conn_down(s, n, now);
		return;
	}
	memset(&i, 0, sizeof(i));
	i.context = s->ctx;
	i.vhost = n->vh;
	i.address = s->o.urls[n->url].host;
	i.port = s->o.urls[n->url].port;
	i.path = ES_PROTO_PATH;
	i.host = s->o.server_name;
	i.origin = s->o.server_name;
	i.ssl_connection = LCCSCF_USE_SSL | LCCSCF_HTTP_NO_FOLLOW_REDIRECT;
	i.protocol = ES_PROTO_SUBPROTOCOL;
	i.local_protocol_name = ES_PROTO_SUBPROTOCOL;
	i.ietf_version_or_minus_one = -1;
	i.opaque_user_data = n;
	if (s->o.nodes > CONNS_PER_SOURCE && strncmp(i.address, "127.", 4) == 0) {
		snprintf(src, sizeof(src), "127.0.%d.%d", 1 + n->idx / CONNS_PER_SOURCE / 250,
			 1 + (n->idx / CONNS_PER_SOURCE) % 250);
		i.iface = src;
	}
	n->state = FS_DIALING;
	n->dial_ms = now;
	n->last_rx_ms = now;
	s->st.dials++;
	/* lws may report the failure before it returns (then n is idle). */
	w = lws_client_connect_via_info(&i);
	if (n->state == FS_DIALING && !w)
		conn_down(s, n, now);
	else if (n->state == FS_DIALING)
		n->wsi = w;
}

/* Records that report seq went out on the node's session (a resend of a
 * seq under the same session is one entry). */
static void note_written(fsim_node *n, int64_t seq)
{
	if (n->nwrote && n->wrote[n->nwrote - 1].seq == seq &&
	    n->wrote[n->nwrote - 1].session == n->welcomes)
		return;
	if (n->nwrote == n->capwrote) {
		int cap = n->capwrote ? n->capwrote * 2 : 16;
		fsim_wrote *w;

		if (cap > FSIM_WROTE_MAX || !(w = realloc(n->wrote, (size_t)cap * sizeof(*w)))) {
			n->wrote_dropped++;
			return;
		}
		n->wrote = w;
		n->capwrote = cap;
	}
	n->wrote[n->nwrote++] = (fsim_wrote){ seq, n->welcomes, 0 };
}

static int on_writeable(fsim *s, fsim_node *n, struct lws *wsi)
{
	fsim_out *o = n->qhead;
	int w;

	if (!o)
		return 0;
	if (n->deflate) {
		/* compressed where it pays, as the agent sends (es_ws) */
		if (es_ws_send_json_text(wsi, (const char *)o->buf + LWS_PRE, o->len, 1) != 0)
			return -1;
	} else {
		w = lws_write(wsi, o->buf + LWS_PRE, o->len, LWS_WRITE_TEXT);
		if (w < 0 || (size_t)w < o->len)
			return -1;
	}
	s->st.msgs_tx++;
	s->st.ws_tx_bytes += (int64_t)o->len;
	if (o->report)
		note_written(n, o->seq);
	if (o->report == 1)
		n->unacked_sent_ms = fsim_now_msf();
	else if (o->report == 2)
		n->ev_sent_ms = fsim_now_msf();
	n->qhead = o->next;
	if (!n->qhead)
		n->qtail = NULL;
	free(o->buf);
	free(o);
	if (n->qhead)
		lws_callback_on_writable(wsi);
	return 0;
}

static int sim_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
		  void *in, size_t len)
{
	fsim_node *n = lws_get_opaque_user_data(wsi);
	fsim *s = n ? n->sim : NULL;
	int64_t now;
	es_ws_msg m;
	es_buf b;

	(void)user;
	/* first, before the clock: libwebsockets calls this for every vhost
	 * (one per node) on its broadcasts, without a connection */
	if (!n || (n->wsi && n->wsi != wsi))
		return 0;
	now = es_time_mono_ms();
	switch (reason) {
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		if (s->st.dial_failures < 20 && !s->stopping)
			fprintf(stderr, "fleetsim: %s: dial failed: %.*s\n", n->name,
				in ? (int)strnlen(in, len ? len : 200) : 7,
				in ? (const char *)in : "unknown");
		conn_down(s, n, now);
		break;
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		n->state = FS_HELLO;
		n->est_ms = now;
		n->last_rx_ms = now;
		msg_begin(&b);
		if (s->o.protocol == 2)
			fsim_msg_hello_v2(&b, n->name, n->stream_id, n->rv, n->next_seq,
					  s->o.compress);
		else
			fsim_msg_hello(&b, n->name, n->stream_id, n->rv, n->next_seq);
		msg_queue(n, &b, 0);
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		n->last_rx_ms = now;
		if (es_ws_rx_add(&n->rx, wsi, in, len, &m) != ES_OK) {
			fprintf(stderr, "fleetsim: %s: %s\n", n->name, m.why);
			return -1;
		}
		if (m.done)
			on_message(s, n, m.text, m.len);
		break;
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		return on_writeable(s, n, wsi);
	case LWS_CALLBACK_CLIENT_CLOSED:
		conn_down(s, n, now);
		break;
	default:
		break;
	}
	return 0;
}

const struct lws_protocols fsim_conn_protocols[] = {
	{ ES_PROTO_SUBPROTOCOL, sim_cb, 0, 0, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
};

void fsim_conn_tick(fsim *s, int64_t now, double dt_s)
{
	es_buf b;

	if (s->stopping)
		return;
	s->ramp_credit += s->o.ramp * dt_s;
	while (s->ramp_credit >= 1.0 && s->next_first_dial < s->o.nodes) {
		s->nodes[s->next_first_dial++].next_dial_ms = now;
		s->ramp_credit -= 1.0;
	}
	if (s->next_first_dial >= s->o.nodes || s->ramp_credit > s->o.ramp)
		s->ramp_credit = 0;
	for (int i = 0; i < s->o.nodes; i++) {
		fsim_node *n = &s->nodes[i];

		switch (n->state) {
		case FS_IDLE:
			if (n->next_dial_ms && now >= n->next_dial_ms)
				dial(s, n, now);
			break;
		case FS_READY:
			if (n->proto == 2 && now >= n->next_rec_ms) {
				send_rec(s, n, now);
			} else if (n->proto != 2 && now >= n->next_report_ms) {
				send_state(s, n, -1);
				schedule_report(s, n, now, 0);
			}
			if (now - n->last_ping_ms >= n->heartbeat_s * 1000LL) {
				n->last_ping_ms = now;
				msg_begin(&b);
				fsim_msg_ping(&b);
				msg_queue(n, &b, 0);
			}
			/* fall through */
		case FS_HELLO:
			if (now - n->last_rx_ms >= SILENT_MS && n->wsi)
				lws_set_timeout(n->wsi, PENDING_TIMEOUT_USER_OK,
						LWS_TO_KILL_ASYNC);
			break;
		default:
			break;
		}
	}
}

int fsim_conn_vhosts(fsim *s)
{
	for (int i = 0; i < s->o.nodes; i++) {
		fsim_node *n = &s->nodes[i];

		if (!n->vh && !(n->vh = node_vhost(s, n))) {
			fprintf(stderr, "fleetsim: %s: could not build its TLS client from %s\n",
				n->name, s->cert_dir);
			return -1;
		}
	}
	return 0;
}

void fsim_conn_tcp_bytes(fsim *s, int64_t *tx, int64_t *rx)
{
	for (int i = 0; i < s->o.nodes; i++)
		if (s->nodes[i].wsi && s->nodes[i].state >= FS_HELLO)
			fsim_tcp_bytes(lws_get_socket_fd(s->nodes[i].wsi), tx, rx);
}

void fsim_conn_free(fsim *s)
{
	for (int i = 0; s->nodes && i < s->o.nodes; i++) {
		queue_clear(&s->nodes[i]);
		es_ws_rx_free(&s->nodes[i].rx);
		free(s->nodes[i].wrote);
	}
}
