/*
 * metrics.c - the agent's registry, its edgesync_agent_* families and the
 * sync client's hooks (metrics.h). The node_* families are metrics_node.c's.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "es_log.h"
#include "endpoint/metrics_int.h"

static const char *const sync_states[] = {
	"disabled", "idle", "connecting", "handshaking", "ready"
};

typedef struct fam_spec {
	es_metric **slot;
	es_metric_type type;
	const char *name, *help;
	const char *labels[2];
	size_t nlabels;
} fam_spec;

es_err es_agent_metrics_new(const char *proc_root, const char *version,
			    es_agent_metrics **out, char *err, size_t errsz)
{
	static const double apply_buckets[] = ES_AGENT_METRICS_APPLY_BUCKETS;
	es_agent_metrics *m;
	es_err rc;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	{
		const fam_spec specs[] = {
			{ &m->build_info, ES_METRIC_GAUGE, "edgesync_agent_build_info",
			  "Always 1; the version label is the agent's version.",
			  { "version" }, 1 },
			{ &m->queued, ES_METRIC_GAUGE, "edgesync_agent_reports_queued",
			  "Reports in the outbox that the controller has not acknowledged.",
			  { NULL }, 0 },
			{ &m->sent, ES_METRIC_COUNTER, "edgesync_agent_reports_sent_total",
			  "Report messages written to the controller connection, resends after a reconnect included.",
			  { NULL }, 0 },
			{ &m->acked, ES_METRIC_COUNTER,
			  "edgesync_agent_reports_acknowledged_total",
			  "Report messages sent and then covered by the controller's acknowledgement.",
			  { NULL }, 0 },
			{ &m->dropped, ES_METRIC_COUNTER, "edgesync_agent_reports_dropped_total",
			  "Events dropped from the full outbox (oldest first), since the state directory was created.",
			  { NULL }, 0 },
			{ &m->reconnects, ES_METRIC_COUNTER, "edgesync_agent_reconnects_total",
			  "Connection attempts to the controller after the first.",
			  { NULL }, 0 },
			{ &m->connected, ES_METRIC_GAUGE, "edgesync_agent_connected",
			  "1 when the sync connection is up (the controller's welcome arrived), else 0.",
			  { NULL }, 0 },
			{ &m->sync_state, ES_METRIC_GAUGE, "edgesync_agent_sync_state",
			  "1 for the sync client's current state, 0 for the others.",
			  { "state" }, 1 },
			{ &m->last_sync, ES_METRIC_GAUGE,
			  "edgesync_agent_last_sync_timestamp_seconds",
			  "Unix time of the last welcome, ack or desired change set from the controller; 0 when none arrived since the agent started.",
			  { NULL }, 0 },
			{ &m->events_lost, ES_METRIC_COUNTER,
			  "edgesync_agent_bpf_events_lost_total",
			  "Events a collector's BPF ring buffer could not take (0 for collectors on procfs).",
			  { "collector" }, 1 },
			{ &m->collector_info, ES_METRIC_GAUGE, "edgesync_agent_collector_info",
			  "Always 1; the backend label says where the collector reads from (ebpf or procfs).",
			  { "collector", "backend" }, 2 },
			{ &m->collector_healthy, ES_METRIC_GAUGE,
			  "edgesync_agent_collector_healthy",
			  "1 when an enabled collector's last round succeeded, else 0.",
			  { "collector" }, 1 },
		};

		if (es_metrics_new(&m->reg) != ES_OK) {
			rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
			goto cleanup;
		}
		for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
			rc = es_metrics_add(m->reg, specs[i].type, specs[i].name,
					    specs[i].help, specs[i].labels,
					    specs[i].nlabels, NULL, 0, specs[i].slot,
					    err, errsz);
			if (rc != ES_OK)
				goto cleanup;
		}
	}
	rc = es_metrics_histogram(m->reg, "edgesync_agent_policy_apply_duration_seconds",
				  "Time to reconcile the cached desired objects (one run of the reconciler over every kind).",
				  NULL, 0, apply_buckets,
				  sizeof(apply_buckets) / sizeof(apply_buckets[0]),
				  &m->apply_duration, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	rc = metrics__node_register(m, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	m->proc = strdup(proc_root ? proc_root : "/proc");
	if (!m->proc ||
	    es_metric_set(m->build_info, (const char *[]){ version ? version : "" },
			  1) != ES_OK) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	m->user_hz = sysconf(_SC_CLK_TCK);
	if (m->user_hz <= 0)
		m->user_hz = 100;
	*out = m;
	m = NULL;
cleanup:
	es_agent_metrics_free(m);
	return rc;
}

void es_agent_metrics_free(es_agent_metrics *m)
{
	if (!m)
		return;
	es_metrics_free(m->reg);
	free(m->inflight);
	free(m->proc);
	free(m);
}

es_metrics *es_agent_metrics_registry(es_agent_metrics *m)
{
	return m->reg;
}

/* ---- sync hooks ---- */

void es_agent_metrics_report_sent(es_agent_metrics *m, int64_t seq)
{
	if (!m)
		return;
	es_metric_add(m->sent, NULL, 1);
	if (m->in_count == m->in_cap && m->in_cap < ES_AGENT_METRICS_INFLIGHT_MAX) {
		size_t cap = m->in_cap ? m->in_cap * 2 : 64;
		int64_t *n = calloc(cap, sizeof(*n));

		if (n) {
			for (size_t i = 0; i < m->in_count; i++)
				n[i] = m->inflight[(m->in_head + i) % m->in_cap];
			free(m->inflight);
			m->inflight = n;
			m->in_cap = cap;
			m->in_head = 0;
		}
	}
	if (m->in_cap == 0)
		return;
	if (m->in_count == m->in_cap) {
		m->in_head = (m->in_head + 1) % m->in_cap;
		m->in_count--;
	}
	m->inflight[(m->in_head + m->in_count) % m->in_cap] = seq;
	m->in_count++;
}

void es_agent_metrics_acked(es_agent_metrics *m, int64_t seq)
{
	size_t keep = 0, n;

	if (!m || !m->in_count)
		return;
	/* Resends after a reconnect make the ring not sorted: count every
	 * entry at or below seq, keep the rest in order. */
	n = m->in_count;
	for (size_t i = 0; i < n; i++) {
		int64_t s = m->inflight[(m->in_head + i) % m->in_cap];

		if (s <= seq)
			es_metric_add(m->acked, NULL, 1);
		else
			m->inflight[(m->in_head + keep++) % m->in_cap] = s;
	}
	m->in_count = keep;
}

void es_agent_metrics_synced(es_agent_metrics *m, time_t now)
{
	if (m)
		es_metric_set(m->last_sync, NULL, (double)now);
}

void es_agent_metrics_apply_duration(es_agent_metrics *m, double seconds)
{
	if (m)
		es_metric_observe(m->apply_duration, NULL, seconds < 0 ? 0 : seconds);
}

/* ---- scrape ---- */

static es_err set_collectors(es_agent_metrics *m, const cJSON *node)
{
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(node, "status");
	const cJSON *it;
	es_err rc = ES_OK;

	es_metric_clear(m->events_lost);
	es_metric_clear(m->collector_info);
	es_metric_clear(m->collector_healthy);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(status, "collectors")) {
		const char *name = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, "name"));
		const char *backend = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(it, "backend"));
		const cJSON *lost = cJSON_GetObjectItemCaseSensitive(it, "eventsLost");

		if (!name || !backend)
			continue;
		rc = es_metric_set(m->collector_info, (const char *[]){ name, backend }, 1);
		if (rc == ES_OK && cJSON_IsNumber(lost) && lost->valuedouble >= 0)
			rc = es_metric_set(m->events_lost, (const char *[]){ name },
					   lost->valuedouble);
		if (rc == ES_OK &&
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "enabled")))
			rc = es_metric_set(m->collector_healthy, (const char *[]){ name },
					   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
						   it, "healthy")) ? 1 : 0);
		if (rc == ES_ERR_NOMEM)
			return rc;
	}
	return ES_OK;
}

es_err es_agent_metrics_render(es_agent_metrics *m,
			       const es_agent_metrics_input *in, char **out,
			       size_t *len)
{
	const char *state = in->sync_state ? in->sync_state : "disabled";
	int known = 0;
	es_err rc = ES_OK;

	*out = NULL;
	*len = 0;
	for (size_t i = 0; i < sizeof(sync_states) / sizeof(sync_states[0]); i++) {
		int cur = !strcmp(state, sync_states[i]);

		known |= cur;
		if (rc == ES_OK)
			rc = es_metric_set(m->sync_state,
					   (const char *[]){ sync_states[i] }, cur);
	}
	if (rc == ES_OK && !known)
		rc = es_metric_set(m->sync_state, (const char *[]){ state }, 1);
	if (rc == ES_OK)
		rc = es_metric_set(m->connected, NULL, !strcmp(state, "ready"));
	if (rc == ES_OK && in->reports_queued >= 0)
		rc = es_metric_set(m->queued, NULL, (double)in->reports_queued);
	if (rc == ES_OK && in->reports_dropped >= 0)
		rc = es_metric_set(m->dropped, NULL, (double)in->reports_dropped);
	if (rc == ES_OK && in->reconnects >= 0)
		rc = es_metric_set(m->reconnects, NULL, (double)in->reconnects);
	if (rc == ES_OK)
		rc = set_collectors(m, in->node);
	if (rc == ES_OK)
		rc = metrics__node_update(m, in->sample);
	if (rc != ES_OK) {
		es_log_error("metrics", "cannot update the metrics", "error",
			     es_strerror(rc), NULL);
		return rc;
	}
	return es_metrics_render(m->reg, out, len);
}
