/*
 * server_int.h - what server.c (context, vhosts, agent connections: peer
 * check, framing, outgoing queue, closing, liveness), server_sync.c (the
 * agent protocol's messages and desired-state pushes) and server_admin.c
 * (the admin HTTPS vhost and /metrics) share, with the parts each
 * section below names. Private to the server module: nothing outside
 * controller/net includes it.
 */
#ifndef ES_CTRL_SERVER_INT_H
#define ES_CTRL_SERVER_INT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <libwebsockets.h>

#include "api/admin.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_pki.h"
#include "es_proto.h"
#include "es_buf.h"
#include "es_json.h"
#include "es_ws.h"
#include "net/metrics.h"
#include "net/server.h"

/* Largest admin response piece written per LWS_CALLBACK_HTTP_WRITEABLE. */
#define SERVER_HTTP_CHUNK 16384

enum conn_state { CS_NONE = 0, CS_HELLO, CS_READY, CS_CLOSING };

/* Per-session data of an agent connection (allocated zeroed by lws). */
typedef struct conn {
	es_server *srv;
	struct lws *wsi;
	struct conn *prev, *next;
	enum conn_state state;
	int linked, helloed, replaced;
	char node[ES_NAME_MAX + 1];
	cJSON *labels;
	es_ws_queue q;        /* outgoing messages, ES_WS_SEND_QUEUE_MAX bytes */
	es_ws_rx rx;          /* the message being received (es_ws.h) */
	int close_code;
	char close_reason[32];
	int64_t last_rx_ms;
	es_ctrl_pending acks; /* writes pushed, awaiting desiredAck (metrics.h) */
	int full_owed;        /* 1: the full list sent after a label change is
			       * not acknowledged yet (es_db_node_full_done) */
	int64_t full_rv;      /* ... its resourceVersion */
	/* server_sync.c: reports stored in the open batch, acknowledged when
	 * it commits (server__batch_forget unlinks a closing connection). */
	struct conn *batch_next;
	int in_batch, resync_owed;
	int64_t ack_owed;     /* highest seq to acknowledge, 0: none */
	int cursor_wait;      /* entries in cursor groups (server_sync.c) */
	char serial[41];      /* its certificate's serial, hex (server_join.c) */
	int renewed;          /* a certificateRequest was answered with a certificate */
	struct renew_wait *renew_wait; /* one the store has not answered yet (etcd) */
	/* server_session.c: the node's session in the store. */
	void *session_wait;   /* a take in flight (es_store_session_take) */
	cJSON *hello_msg;     /* ... and the hello it holds back */
	int session_held;     /* this connection counts as holding it */
	/* server_wait.c: the last resourceVersion pushed in a desired message
	 * (the sync after the hello included) and the last desiredAck. */
	int64_t pushed_rv, acked_rv;
} conn;

/* An agent connection accepted and not yet past its hello (the
 * handshake timeout); the wsi's opaque user data points to it. */
typedef struct pending_conn {
	struct pending_conn *prev, *next;
	struct lws *wsi;
	int64_t deadline_ms;  /* monotonic */
	int killed;
} pending_conn;

struct es_server {
	struct lws_context *ctx;
	es_log_gate cursor_gate; /* "report cursors not committed" while etcd is away */
	es_db *db;
	char *trust_domain;
	conn *conns;
	int n_ready;
	es_ctrl_metrics *metrics;
	volatile sig_atomic_t stop;
	void (*uv_run_once)(struct lws_context *ctx); /* NULL: poll loop */
	lws_sorted_usec_list_t sweep;
	es_admin_hooks hooks;
	es_store *store;       /* es_server_set_store; NULL: SQLite over db */
	int etcd_up;           /* the latest etcd request reached etcd */
	/* server_sync.c: the open batch of the store (es_db_batch_begin). */
	conn *batch;           /* connections owed acks when it commits */
	lws_sorted_usec_list_t batch_sul;
	size_t batch_reports;
	int64_t batch_done_us;  /* es_time_mono_us when the last batch commit ended */
	int batch_idle;         /* the open batch began on an idle store */
	int64_t debug_exit_after; /* EDGESYNC_DEBUG_EXIT_AFTER_COMMIT; 0 off, -1 unread */
	int store_lost_set;    /* server_session.c: es_store_set_lost done */
	int leaving;           /* es_server_leave: no session is taken */
	int leave_done;        /* its lease revoke answered */
	struct cursor_group *cursor_groups; /* server_sync.c: batches committed
					     * here whose cursors etcd has not
					     * answered yet */
	int stopping;          /* es_server_destroy: the open batch is
				* committed but not acknowledged */
	struct es_ca *ca;      /* es_server_opts.ca */
	int64_t cert_lifetime; /* es_server_opts.cert_lifetime */
	int64_t renewal_grace; /* es_server_opts.renewal_grace */
	char *advertise_url;   /* es_server_opts.advertise_url (copied) */
	char *trust_bundle;    /* PEM text of es_server_opts.trust_bundle, or NULL */
	pending_conn *pend_head, *pend_tail;
	int max_sessions, handshake_timeout_s, overload_retry_s;
	int closed_since_trim; /* connections released since the last
				* malloc_trim */
	int sweeps_since_trim; /* sweeps since the heap was last looked at
				* (server.c trim_heap) */
	struct node_wait *waits; /* server_wait.c: admin requests waiting */
	unsigned char chunk[LWS_PRE + SERVER_HTTP_CHUNK];
};

/* ---- server.c ---- */

/* The es_server that owns wsi's context. */
es_server *server__from_wsi(struct lws *wsi);

/*
 * The identity check of PROTOCOL.md "Transport": a certificate that
 * verified against the vhost's CA, then es_pki_check_peer's rules.
 * Returns 0 and fills name, or -1 with why set.
 */
int server__check_peer(es_server *s, struct lws *wsi, es_identity_kind want,
		       char *name, size_t namesz, char *why, size_t whysz);

/* Moves c to CS_CLOSING: the queue drains, then the connection closes with
 * code and reason (truncated to 31 bytes), cut after CLOSE_GRACE_S seconds.
 * No-op when already closing. */
void server__start_close(conn *c, int code, const char *reason);

/* Drops every queued outgoing message of c. */
void server__queue_clear(conn *c);

/* Serialises m (taken; NULL is ES_ERR_NOMEM) onto the connection's queue.
 * A message over ES_PROTO_MAX_MESSAGE is logged and dropped (ES_OK); a
 * queue over its limit is cleared and the connection closed with an
 * internal error. Errors: ES_ERR_NOMEM. */
es_err server__queue_msg(conn *c, cJSON *m);

/* Queues b (borrowed; the queue takes its own reference) on c, with
 * server__queue_msg's limits. Errors: ES_ERR_NOMEM. */
es_err server__queue_buf(conn *c, es_ws_buf *b);

/* Sends `error` then closes with the code's close code (PROTOCOL.md
 * "Errors"). */
void server__queue_error(conn *c, es_proto_code code, const char *text);

/* The connection on wsi passed its hello: no handshake timeout any more.
 * No-op when it was not pending. */
void server__pending_done(struct lws *wsi);

/* ---- server_sync.c ---- */

/* Decodes and handles one complete message of c (buf, len bytes, borrowed);
 * any failure is answered on the connection (server__queue_error). */
void server__handle_message(conn *c, const char *buf, size_t len);

/* c is going away: it is owed no acknowledgement any more (the batch's
 * reports stay and commit; the agent sends them again and they count as
 * duplicates). */
void server__batch_forget(conn *c);

/* Frees the batches whose cursors etcd has not answered (at destroy: their
 * acks are never sent; the agents send those reports again). */
void server__cursor_groups_free(es_server *s);

/* Commits the open batch now and sends what it owes (at shutdown). */
void server__batch_flush(es_server *s);
/* server_session.c: this controller lost node's session to another one
 * (es_store_set_lost): its connections here are told to come back later. */
void server__session_lost(void *ud, const char *node, const char *why);
/* Goes on with a hello held back for the node's session (server_session.c
 * calls it when the store gave it). */
void server__hello_resume(conn *c, const cJSON *msg);

/* ---- server_session.c ---- */

/* At hello, after the load limit: takes the node's session from the
 * store when it has sessions (store = etcd). Returns 0 to go on now, 1
 * when the hello waits (server__hello_resume follows) or was answered
 * (refused: the controller is stopping, the session kept moving between
 * controllers, or an error). */
int server__session_take(conn *c, const cJSON *msg);
/* c's node is served by a newer session on another controller (why says
 * which): c closes with 4000 "replaced" and does not drop the session. */
void server__session_replaced(conn *c, const char *why);

/* c is going away: a take in flight is forgotten; the session is given up
 * when no other connection of the node here holds it. */
void server__session_release(conn *c);

/* ---- server_wait.c ---- */

/* The query parameter of a node GET that waits (README, "edgesyncctl"),
 * and the bounds of its timeoutSeconds (default, largest). */
#define SERVER_WAIT_PARAM "waitForDesiredResourceVersion"
#define SERVER_WAIT_TIMEOUT_PARAM "timeoutSeconds"
#define SERVER_WAIT_DEFAULT_S 30
#define SERVER_WAIT_MAX_S 600

typedef struct node_wait node_wait;

/* How a wait ended: status 200 (in sync; reason NULL) or 504 (reason
 * Timeout); message says what, naming the node (borrowed for the call). */
typedef void (*server_wait_fn)(void *ud, int status, const char *reason,
			       const char *message);

/*
 * Reads waitForDesiredResourceVersion (an integer of 1 to ES_JSON_MAX_INT)
 * and timeoutSeconds (0..SERVER_WAIT_MAX_S; SERVER_WAIT_DEFAULT_S when
 * absent) from query ("a=1&b=2", may be NULL; other parameters are
 * ignored). Returns 1 when the wait parameter is present, 0 when neither
 * is, -1 when a value is malformed or missing, one is given twice, or
 * timeoutSeconds comes without the wait parameter (why names the
 * parameter and the value).
 */
int server__wait_params(const char *query, int64_t *rv, int *timeout_s,
			char *why, size_t whysz);

/*
 * Starts waiting until node is in sync as of rv (server_wait.c's head
 * comment), for at most timeout_s seconds (0: answer at once). Decided at
 * once (msg says what): 200 in sync now, 404 a node this controller does
 * not know (SQLite store only), 409 no session of the node here (store =
 * etcd only), 504 not in sync and timeout_s 0, 500 out of memory; nothing
 * is waited and done
 * never runs. Else 0 with *out set: done(ud, ...) runs once, later on the
 * event loop, unless server__wait_cancel(*out) comes first.
 */
int server__wait_start(es_server *s, const char *node, int64_t rv, int timeout_s,
		       server_wait_fn done, void *ud, node_wait **out,
		       char *msg, size_t msgsz);

/* Forgets w without calling its done (the request went away). NULL-safe. */
void server__wait_cancel(node_wait *w);

/* Ends the waits of node (NULL: every node) that are in sync now (200);
 * returns how many ended. Called after a desiredAck and a push. */
int server__wait_check(es_server *s, const char *node);

/* ---- server_health.c ---- */

/* 1 when this controller can serve: always with SQLite; with store =
 * etcd once the mirror caught up, while etcd answers (the latest request
 * or watch message reached it) and while it holds the lease of its node
 * sessions (es_store_etcd_leased). Else 0, with why (one phrase). */
int server__ready(const es_server *s, char *why, size_t whysz);

/* ---- server_join.c ---- */

/* Per-session data of a join request (server_join.c's). */
typedef struct join_req {
	int is_post, want_body, too_big, responding;
	char path[32];
	char peer[64];
	es_buf body;
	char *resp;
	size_t resp_len, resp_off;
	struct join_wait *wait; /* the store's answer is awaited (etcd) */
	int owed_status;        /* that answer came: headers owed (status) */
} join_req;

/* Creates the "join" vhost on o->join_host:o->join_port: HTTPS with the
 * controller's certificate and no client certificate (PROTOCOL.md
 * "Joining"). Errors: ES_ERR_TLS (err names the address). */
es_err server__join_vhost(es_server *s, const es_server_opts *o, char *err,
			  size_t errsz);

/* The store joining's writes go to (store_enroll.h): the server's, or
 * the SQLite backend over its file made in *local. */
es_store *server__enroll_store(es_server *s, es_store *local);

/* At hello: reads c's certificate serial into c->serial and refuses (an
 * IdentityMismatch error, then the close) a revoked one or one the store
 * issued to another node. Returns 0, or -1 when refused. */
int server__enroll_check(conn *c);

/* At hello, after c->labels holds the hello's labels: adds the labels of
 * the token the node joined with (es_db_enroll_labels) where the hello
 * names no value for the key (the agent's own labels win). Errors:
 * ES_ERR_NOMEM, ES_ERR_DB. */
es_err server__enroll_labels(conn *c);

/* ---- server_renew.c (PROTOCOL.md "Renewal") ---- */

/* c is going away: the store's answer to a renewal in flight is dropped. */
void server__renew_forget(conn *c);

/* At hello, on the welcome w being built: when c's certificate is one the
 * signing CA issued to c's node (c->serial set by server__enroll_check),
 * adds the capability ES_PROTO_CAP_RENEWAL and trustBundle. Errors:
 * ES_ERR_NOMEM (w may then hold part of it: delete it); a store failure
 * only leaves them out. */
es_err server__renew_welcome(conn *c, cJSON *w);

/* A certificateRequest on c (decoded, borrowed): answered with
 * `certificate` after the store recorded it, or `certificateRefused`. */
void server__on_cert_request(conn *c, const cJSON *msg);

/* ---- server_admin.c ---- */

/* Writes an HTTP response's status line and headers on wsi (both
 * listeners): status, Content-Type ctype, Content-Length len, and
 * "Connection: close" when close_now. Returns 0, or -1 when they do not
 * fit or cannot be written (close the connection). */
int server__http_headers(struct lws *wsi, int status, const char *ctype,
			 size_t len, int close_now);

/* Writes the next piece (at most SERVER_HTTP_CHUNK bytes) of an HTTP
 * response body of len bytes from *off (moved on), asking for another
 * LWS_CALLBACK_HTTP_WRITEABLE when more is left. Returns 1 after the last
 * piece, 0 when more follows, -1 when the write failed. */
int server__http_write_body(struct lws *wsi, es_server *s, const char *body,
			    size_t len, size_t *off);

/* The admin vhost's protocol list (HTTP only, per-session data private to
 * server_admin.c). */
extern const struct lws_protocols server__admin_protocols[];

#endif
