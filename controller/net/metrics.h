/*
 * metrics.h - the controller's Prometheus metrics (served at the admin
 * listener's /metrics; README.md "Metrics" lists them with types, labels
 * and units):
 *
 *   edgesync_controller_build_info{version}            gauge, always 1
 *   edgesync_controller_connected_agents               gauge
 *   edgesync_controller_messages_received_total{type}  counter
 *   edgesync_controller_reports_duplicate_total        counter
 *   edgesync_controller_desired_ack_latency_seconds    histogram
 *   edgesync_controller_store_size_bytes               gauge
 *   edgesync_controller_tls_handshakes_total{resumed}  counter
 *   edgesync_controller_connections_refused_total{reason} counter
 *   edgesync_controller_etcd_requests_total{op,result}  counter
 *   edgesync_controller_etcd_request_duration_seconds{op} histogram
 *   edgesync_controller_etcd_up                        gauge
 *
 * The etcd families (store = etcd) come from the etcd client's observer
 * (etcd/etcd_client.h, es_etcd_observe_fn): one count per request as it
 * ended (after its failover), and per watch stream opened (ok) or broken
 * (error); up is whether the latest of them reached etcd. They show once
 * the controller has talked to etcd, so a SQLite controller has none.
 *
 * The ack latency is the time from an object write through the admin API
 * to the desiredAck of each connected agent the write was pushed to that
 * covers it (a resourceVersion at or above the pushed one). Objects an
 * agent gets in the sync after its hello are not measured: the write time
 * of those is not known, and the figure would be the agent's time offline.
 *
 * Everything runs on the server's event-loop thread.
 */
#ifndef ES_CTRL_METRICS_H
#define ES_CTRL_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "es_err.h"
#include "es_metrics.h"

/* Upper bounds, seconds, of the ack latency histogram: a push on loopback
 * is milliseconds; a busy or distant agent takes seconds. */
#define ES_CTRL_METRICS_ACK_BUCKETS \
	{ 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 }

/* Upper bounds, seconds, of the etcd request duration histogram: etcd
 * answers in about a millisecond on loopback, tens across a network;
 * the client gives an endpoint 5 s. */
#define ES_CTRL_METRICS_ETCD_BUCKETS \
	{ 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 }

/* Pushed writes one connection remembers until acknowledged; past it the
 * oldest is forgotten (not measured). */
#define ES_CTRL_METRICS_PENDING_MAX 64

typedef struct es_ctrl_metrics es_ctrl_metrics;

/* Writes pushed to one agent connection and not yet acknowledged, oldest
 * first. Lives in the connection; zeroed means empty. The entries are
 * allocated while some are pending and freed when the last is
 * acknowledged, so an idle connection holds none (README "Performance"). */
typedef struct es_ctrl_pending {
	int64_t *rv;    /* n resourceVersions pushed (cap allocated), or NULL */
	int64_t *at_us; /* ... the monotonic time of each write (same block) */
	size_t n, cap;
} es_ctrl_pending;

/*
 * Creates the registry. db_path: the SQLite database file (its size, and
 * its "-wal" file's, is edgesync_controller_store_size_bytes; NULL leaves
 * the metric out); version: for build_info. Both copied.
 * Errors: ES_ERR_NOMEM.
 */
es_err es_ctrl_metrics_new(const char *db_path, const char *version,
			   es_ctrl_metrics **out, char *err, size_t errsz);

/* Frees m. NULL-safe. */
void es_ctrl_metrics_free(es_ctrl_metrics *m);

/* One message of this type (es_proto_type_name) was received and decoded.
 * m may be NULL (no-op), as in every hook below. */
void es_ctrl_metrics_message(es_ctrl_metrics *m, const char *type);

/* A report was dropped as a duplicate (its seq was already stored). */
void es_ctrl_metrics_duplicate(es_ctrl_metrics *m);

/* A TLS handshake on the agents' listener reached the WebSocket upgrade;
 * resumed: 1 when it was abbreviated (a session ticket, RFC 5077). */
void es_ctrl_metrics_handshake(es_ctrl_metrics *m, int resumed);

/* An agent connection was closed for load; reason: "Overloaded" or
 * "HandshakeTimeout" (borrowed). */
void es_ctrl_metrics_refused(es_ctrl_metrics *m, const char *reason);

/* One etcd request ended, or a watch stream opened or broke (the
 * arguments of es_etcd_observe_fn: op borrowed; ok 1 for result="ok";
 * reached sets edgesync_controller_etcd_up; seconds < 0: no duration
 * observed). */
void es_ctrl_metrics_etcd(es_ctrl_metrics *m, const char *op, int ok, int reached,
			  double seconds);

/* A write at monotonic time at_us (es_time_mono_us) was pushed to a
 * connection in a desired message of resourceVersion rv. When the entries
 * cannot grow (out of memory) the write is not measured. */
void es_ctrl_metrics_pushed(es_ctrl_pending *p, int64_t rv, int64_t at_us);

/* Forgets every pending write of p (unmeasured) and frees its entries; p is
 * empty and usable again. NULL-safe. */
void es_ctrl_pending_free(es_ctrl_pending *p);

/* The connection's agent sent desiredAck rv at monotonic time now_us
 * (es_time_mono_us): every pending write with a resourceVersion <= rv is
 * observed and forgotten. */
void es_ctrl_metrics_acked(es_ctrl_metrics *m, es_ctrl_pending *p, int64_t rv,
			   int64_t now_us);

/*
 * Sets the scrape-time gauges (connected_agents; the store size from
 * stat(2), left out when the file cannot be stat'ed) and renders the
 * registry (es_metrics_render). *out malloc'd, caller frees.
 * Errors: ES_ERR_NOMEM.
 */
es_err es_ctrl_metrics_render(es_ctrl_metrics *m, int connected_agents,
			      char **out, size_t *len);

#endif
