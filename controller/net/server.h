/*
 * server.h - the controller's network side: one libwebsockets context
 * serviced by one thread, with two TLS vhosts.
 *
 *   "agents"  the sync endpoint: WebSocket subprotocol edgesync.v1 at
 *             /v1/sync (proto/PROTOCOL.md), no WebSocket extension;
 *             every peer must present a certificate that verifies against
 *             the client CA and carries a node SPIFFE ID.
 *   "admin"   HTTPS: the REST API (admin.h), /metrics (Prometheus text
 *             format 0.0.4) and /healthz; every peer must present a
 *             certificate that verifies against the admin CA and carries an
 *             admin SPIFFE ID, else 403.
 *
 * libwebsockets 4.3 on mbedTLS completes the handshake without a valid
 * client certificate and only records whether it verified
 * (lws_tls_peer_cert_info, LWS_TLS_CERT_INFO_VERIFIED), so identities are
 * checked here, per connection, before any request or message is trusted.
 *
 * A second agent connection for a node replaces the first: the old one is
 * closed with code 4000 ("replaced"). A connection that sends nothing for
 * ES_PROTO_CONTROLLER_DEAD_S seconds is closed with 1001. One that has not
 * finished TLS, the WebSocket upgrade and its hello handshake_timeout_s
 * after it was accepted is cut (slowloris). A hello past max_sessions is
 * answered with the come-back-later `error` Overloaded and close 1013.
 * Outgoing messages are shared buffers (es_ws_buf): a change fanned out to
 * many agents is serialised once.
 */
#ifndef ES_CTRL_SERVER_H
#define ES_CTRL_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "es_proto.h"
#include "store/db.h"
#include "store/store.h"

/* WebSocket close code for a connection replaced by a newer one of the same
 * node (es_proto.h). */
#define ES_SERVER_CLOSE_REPLACED ES_PROTO_CLOSE_REPLACED

struct lws_context;
typedef struct es_server es_server;

typedef struct es_server_opts {
	const char *listen_host;  /* IP literal or interface name */
	int listen_port;
	const char *admin_host;
	int admin_port;
	const char *cert, *key;   /* controller certificate and key, PEM files */
	const char *client_ca;    /* verifies agents' certificates */
	const char *admin_ca;     /* verifies admin certificates */
	const char *trust_domain; /* SPIFFE trust domain of both identities */
	const char *db_path;      /* the store's file, for /metrics (may be NULL) */
	struct es_ca *ca;         /* signing CA for joins and renewals (borrowed,
				   * outlives the server); NULL: both refused */
	int64_t cert_lifetime;    /* seconds a signed certificate is valid */
	int64_t renewal_grace;    /* seconds past notAfter an expired
				   * certificate may be renewed; 0 never */
	const char *advertise_url; /* wss:// URL agents dial (join commands) */
	const char *join_host;    /* the join listener (PROTOCOL.md "Joining") */
	int join_port;            /* 0: no join listener */
	const char *trust_bundle; /* PEM file of the CAs agents should trust for
				   * this controller, served to joining nodes
				   * (NULL: the signing CA's certificate) */
	/* Load limits (PROTOCOL.md "Errors", `Overloaded`); 0 is no limit. */
	int max_handshakes;       /* TLS handshakes in progress at once, both
				   * listeners; more connections wait in the
				   * listen backlog (libwebsockets'
				   * simultaneous_ssl_handshake_restriction) */
	int max_sessions;         /* agent sessions; a hello past it is
				   * answered `Overloaded` */
	int handshake_timeout_s;  /* TCP accept to hello, else closed; 0: 10 */
	int overload_retry_s;     /* retryAfterSeconds of `Overloaded`; 0: 30 */
	/* The event loop. NULL: libwebsockets' own, poll() over every socket.
	 * Else the context is made with LWS_SERVER_OPTION_LIBUV (lws makes
	 * and owns a libuv loop: epoll on Linux) and es_server_run calls
	 * uv_run_once(ctx) per turn instead of lws_service; it must run one
	 * turn of the context's libuv loop (lws_uv_getloop), waiting for at
	 * least one event. Only a program linked with libwebsockets' libuv
	 * build can give it (controller/evloop_uv.h); lws_create_context fails
	 * on the other build. */
	void (*uv_run_once)(struct lws_context *ctx);
} es_server_opts;

/*
 * Creates the context and both listeners (the sockets are bound before
 * this returns). db is borrowed and must outlive the server; it is used
 * only from the thread that calls es_server_run. Strings of opts are
 * copied. With opts->uv_run_once, libwebsockets installs libuv handlers
 * for SIGINT and SIGTERM while making the context (only those two:
 * LWS_SERVER_OPTION_UV_NO_SIGSEGV_SIGFPE_SPIN); the caller's own handlers
 * (es_cli_signals, installed after this returns) replace them. Errors:
 * ES_ERR_INVAL (missing option), ES_ERR_TLS (the context or a vhost could
 * not be created: libwebsockets built without libuv for uv_run_once, an
 * unreadable certificate, key or CA, or the address is in use; err names
 * both listeners' addresses and files), ES_ERR_NOMEM.
 */
es_err es_server_new(const es_server_opts *opts, es_db *db, es_server **out,
		     char *err, size_t errsz);

/*
 * Services connections until es_server_stop is called. Returns ES_OK after
 * a stop, ES_ERR_IO when the service loop failed.
 */
es_err es_server_run(es_server *srv);

/* The server's libwebsockets context (owned by srv), for timers that must
 * run on its event loop (the systemd watchdog, lib/es_notify.h). */
struct lws_context *es_server_context(es_server *srv);

/* Asks es_server_run to return. Async-signal-safe: may be called from a
 * signal handler (it sets a flag and wakes the loop with
 * lws_cancel_service, a write to the context's pipe, which both loops
 * watch). */
void es_server_stop(es_server *srv);

/*
 * After es_server_run returned, before the store is closed: commits the
 * open batch of reports and runs the loop until the store (etcd) answered
 * the report cursors of every committed batch, or bound_ms (milliseconds)
 * passed, so that those reports are acknowledged. What etcd has not
 * answered by then is not acknowledged: es_store_close fails it, and the
 * agents send those reports again (dedupe-safe; proto/PROTOCOL.md). Does
 * nothing without a store or a context. NULL-safe.
 */
void es_server_drain(es_server *srv, int bound_ms);

/*
 * After es_server_drain, before the store is closed: gives this
 * controller's node sessions up at once, so that its agents are served by
 * another controller now rather than when its etcd lease expires. Each
 * agent session is closed with 1001 "going away" (the agent dials its next
 * controller), the store's lease is revoked (es_store_sessions_leave) and
 * the loop runs until etcd answered or bound_ms (milliseconds) passed,
 * then 100 ms more to write the closes out. A hello from here on is told
 * to come back later (1 s). Does nothing without a store (sqlite: no
 * sessions to give up) or a context; a revoke that failed is logged (the
 * sessions then go with the lease). NULL-safe.
 */
void es_server_leave(es_server *srv, int bound_ms);

/* Closes every connection (agents are marked disconnected in the store)
 * and frees the server. A batch of reports still open is committed to the
 * db but, with a store (es_server_set_store), not acknowledged: its
 * cursors never reached the store (es_server_drain). NULL-safe. */
void es_server_destroy(es_server *srv);

/*
 * The admin hook (admin.h, es_admin_hooks.object_changed; ud is the
 * es_server): pushes a `desired` change set to every connected agent the
 * write concerns: {objects:[cur]} when cur targets the node, else a deleted
 * ref when prev targeted it or cur is NULL and prev targeted it. The
 * message's resourceVersion is the store's current one.
 */
void es_server_object_changed(void *ud, const cJSON *prev, const cJSON *cur);

/*
 * Sends the admin API's object writes to store (borrowed; store.h, the
 * etcd backend) instead of SQLite over the server's db: an apply or delete
 * is then answered when the store answers, and the store, not the admin
 * API, tells es_server_object_changed of every change. Before
 * es_server_run; the store must be closed before es_server_destroy.
 */
void es_server_set_store(es_server *srv, es_store *store);

/*
 * The admin hook es_admin_hooks.node_revoked (ud is the es_server), after
 * the store revoked node's certificates: each open session of node has its
 * certificate's serial recorded revoked too (a certificate the signing CA
 * did not issue), then gets an IdentityMismatch error and is closed.
 */
void es_server_node_revoked(void *ud, const char *node);

/*
 * The etcd client's observer (etcd_client.h, es_etcd_observe_fn; ud is
 * the es_server; es_store_etcd_opts.observe): counts the request in
 * /metrics (metrics.h, the etcd families) and keeps whether etcd was
 * reached, for /readyz (server_health.c).
 */
void es_server_etcd_observed(void *ud, const char *op, es_err rc, int reached,
			     double seconds);

#endif
