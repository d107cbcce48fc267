/*
 * metrics.h - the agent's Prometheus metrics (served at /metrics by
 * httpd.c; README.md "Metrics" lists them with types, labels and units).
 *
 * Host quantities keep node_exporter's names, units and labels where they
 * are the same quantity (node_memory_<Field>_bytes, node_filesystem_*,
 * node_network_*, node_load*, node_procs_*, node_cpu_seconds_total per CPU
 * and mode, node_boot_time_seconds). They come from the latest collection
 * round's Node status, so they follow the CollectorConfig in force: a
 * collector that is disabled or failing exports nothing. Two are read from
 * <proc>/stat at scrape time, as node_exporter does, because the Node object
 * has no per-CPU figures: node_cpu_seconds_total{cpu,mode} (only while the
 * cpu collector is enabled and healthy) and node_boot_time_seconds.
 *
 * The agent's own metrics are edgesync_agent_*. Collectors add theirs to
 * the same registry (es_agent_metrics_registry), e.g. the cgroup network
 * collector's container_network_{receive,transmit}_{bytes,packets}_total{id}
 * with cAdvisor's names (kc_cgroupnet.h, registered by agent_kc.c), setting
 * them from an es_metrics_on_render function or as their events arrive.
 *
 * Everything runs on the agent's event-loop thread.
 */
#ifndef ES_AGENT_METRICS_H
#define ES_AGENT_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "es_metrics.h"
#include "es_sample.h"

typedef struct es_agent_metrics es_agent_metrics;

/* Upper bounds, seconds, of edgesync_agent_policy_apply_duration_seconds:
 * one reconcile is SQLite reads and writes on the local disk. */
#define ES_AGENT_METRICS_APPLY_BUCKETS \
	{ 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5 }

/* Transmissions remembered until acknowledged (edgesync_agent_reports_*);
 * past it the oldest is forgotten and never counted as acknowledged. */
#define ES_AGENT_METRICS_INFLIGHT_MAX 65536

/* What a scrape shows beside the registry's own counters. */
typedef struct es_agent_metrics_input {
	const cJSON *node;       /* the latest Node object; NULL before the first round */
	int64_t reports_queued;  /* outbox rows not yet acknowledged */
	int64_t reports_dropped; /* events dropped from the full outbox, ever */
	const char *sync_state;  /* "disabled" (offline only), "idle",
				  * "connecting", "handshaking" or "ready" */
	int64_t reconnects;      /* connection attempts after the first */
	/* The latest round's sample, read by the node_* families; NULL before
	 * the first round. */
	const es_sample *sample;
} es_agent_metrics_input;

/*
 * Creates the registry with every edgesync_agent_* and node_* family.
 * proc_root: where /proc is ("/proc"; tests use fixture trees), copied.
 * version: the agent's version for edgesync_agent_build_info, copied.
 * Errors: ES_ERR_NOMEM.
 */
es_err es_agent_metrics_new(const char *proc_root, const char *version,
			    es_agent_metrics **out, char *err, size_t errsz);

/* Frees m and its registry. NULL-safe. */
void es_agent_metrics_free(es_agent_metrics *m);

/* The registry, for collectors to add families to (owned by m). */
es_metrics *es_agent_metrics_registry(es_agent_metrics *m);

/*
 * Hooks of the sync client; m may be NULL (no-op).
 * report_sent: a report message with this seq was written to the
 *   connection (a resend after a reconnect counts again).
 * acked: the controller acknowledged every report up to seq (an ack, or a
 *   welcome's ackedSeq); each remembered transmission with seq <= it counts
 *   once in edgesync_agent_reports_acknowledged_total.
 * synced: a welcome, an ack or a desired change set arrived at now (Unix
 *   seconds): edgesync_agent_last_sync_timestamp_seconds.
 */
void es_agent_metrics_report_sent(es_agent_metrics *m, int64_t seq);
void es_agent_metrics_acked(es_agent_metrics *m, int64_t seq);
void es_agent_metrics_synced(es_agent_metrics *m, time_t now);

/* One reconcile of the desired objects took seconds (m may be NULL). */
void es_agent_metrics_apply_duration(es_agent_metrics *m, double seconds);

/*
 * Sets the scrape-time families from in and the latest Node, reads
 * <proc>/stat for node_cpu_seconds_total and node_boot_time_seconds (left
 * out when it cannot be read), and renders the registry (es_metrics_render).
 * *out malloc'd, caller frees.
 * Errors: ES_ERR_NOMEM, or what a collector's render function returned.
 */
es_err es_agent_metrics_render(es_agent_metrics *m,
			       const es_agent_metrics_input *in, char **out,
			       size_t *len);

#endif
