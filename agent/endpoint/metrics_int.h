/*
 * metrics_int.h - what metrics.c (the registry, the edgesync_agent_*
 * families and the sync hooks) and metrics_node.c (the node_* families)
 * share inside the agent's metrics module; not for other modules.
 */
#ifndef ES_AGENT_METRICS_INT_H
#define ES_AGENT_METRICS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_metrics.h"
#include "endpoint/metrics.h"

/* node_memory_* families are made as /proc/meminfo fields appear. */
#define METRICS_MEM_FIELDS_MAX 128

typedef struct mem_family {
	char field[64];  /* /proc/meminfo field name, "Active(anon)" */
	es_metric *m;    /* NULL when the field's name cannot be a metric name */
} mem_family;

typedef struct node_families {
	es_metric *cpu_seconds, *boot_time;
	es_metric *load[3];
	es_metric *fs_size, *fs_avail, *fs_free, *fs_files, *fs_files_free;
	es_metric *net[8];        /* receive bytes, packets, errs, drop; transmit ... */
	es_metric *procs_running, *procs_blocked, *pids, *threads;
	mem_family mem[METRICS_MEM_FIELDS_MAX];
	size_t nmem;
} node_families;

struct es_agent_metrics {
	es_metrics *reg;
	char *proc;
	long user_hz;
	es_metric *build_info, *queued, *sent, *acked, *dropped, *reconnects,
		*connected, *sync_state, *last_sync, *apply_duration,
		*events_lost, *collector_info, *collector_healthy;
	node_families node;
	/* Seqs written and not yet acknowledged, oldest first (a ring). */
	int64_t *inflight;
	size_t in_head, in_count, in_cap;
};

/* metrics_node.c */

/* Registers the node_* families with fixed names. Errors: ES_ERR_NOMEM. */
es_err metrics__node_register(es_agent_metrics *m, char *err, size_t errsz);

/* Clears every node_* family and refills it from sample (may be NULL:
 * nothing collected) and <proc>/stat. Errors: ES_ERR_NOMEM. */
es_err metrics__node_update(es_agent_metrics *m, const es_sample *sample);

#endif
