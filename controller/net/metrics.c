/*
 * metrics.c - the controller's registry and families (metrics.h).
 */
#include "net/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "es_proto.h"

struct es_ctrl_metrics {
	es_metrics *reg;
	char *db_path;
	es_metric *build_info, *connected, *messages, *duplicates, *ack_latency,
		*store_size, *handshakes, *refused, *etcd_requests, *etcd_duration,
		*etcd_up;
};

es_err es_ctrl_metrics_new(const char *db_path, const char *version,
			   es_ctrl_metrics **out, char *err, size_t errsz)
{
	static const double buckets[] = ES_CTRL_METRICS_ACK_BUCKETS;
	static const double etcd_buckets[] = ES_CTRL_METRICS_ETCD_BUCKETS;
	es_ctrl_metrics *m;
	es_err rc;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m || es_metrics_new(&m->reg) != ES_OK ||
	    (db_path && !(m->db_path = strdup(db_path)))) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	if ((rc = es_metrics_gauge(m->reg, "edgesync_controller_build_info",
				   "Always 1; the version label is the controller's version.",
				   (const char *[]){ "version" }, 1, &m->build_info,
				   err, errsz)) != ES_OK ||
	    (rc = es_metrics_gauge(m->reg, "edgesync_controller_connected_agents",
				   "Agents whose hello was accepted and that are still connected.",
				   NULL, 0, &m->connected, err, errsz)) != ES_OK ||
	    (rc = es_metrics_counter(m->reg, "edgesync_controller_messages_received_total",
				     "Protocol messages received from agents and decoded, by type.",
				     (const char *[]){ "type" }, 1, &m->messages,
				     err, errsz)) != ES_OK ||
	    (rc = es_metrics_counter(m->reg, "edgesync_controller_reports_duplicate_total",
				     "Reports dropped as duplicates (their seq was already stored).",
				     NULL, 0, &m->duplicates, err, errsz)) != ES_OK ||
	    (rc = es_metrics_histogram(m->reg, "edgesync_controller_desired_ack_latency_seconds",
				       "Time from an object write to the desiredAck, covering it, of each connected agent it was pushed to.",
				       NULL, 0, buckets, sizeof(buckets) / sizeof(buckets[0]),
				       &m->ack_latency, err, errsz)) != ES_OK ||
	    (rc = es_metrics_counter(m->reg, "edgesync_controller_tls_handshakes_total",
				     "TLS handshakes on the agents' listener that reached the WebSocket upgrade; resumed=\"true\": abbreviated, from a session ticket.",
				     (const char *[]){ "resumed" }, 1, &m->handshakes,
				     err, errsz)) != ES_OK ||
	    (rc = es_metrics_counter(m->reg, "edgesync_controller_connections_refused_total",
				     "Agent connections the controller closed for load: reason=\"Overloaded\" (come back later) or \"HandshakeTimeout\".",
				     (const char *[]){ "reason" }, 1, &m->refused,
				     err, errsz)) != ES_OK ||
	    (rc = es_metrics_counter(m->reg, "edgesync_controller_etcd_requests_total",
				     "Requests to etcd (store = etcd) as they ended, after failover to other endpoints, by op and result; op=\"watch\": watch streams opened (ok) and broken or cancelled (error).",
				     (const char *[]){ "op", "result" }, 2, &m->etcd_requests,
				     err, errsz)) != ES_OK ||
	    (rc = es_metrics_histogram(m->reg, "edgesync_controller_etcd_request_duration_seconds",
				       "Time from the start of an etcd request to its end, by op; op=\"watch\": from the dial to the stream's first message.",
				       (const char *[]){ "op" }, 1, etcd_buckets,
				       sizeof(etcd_buckets) / sizeof(etcd_buckets[0]),
				       &m->etcd_duration, err, errsz)) != ES_OK ||
	    (rc = es_metrics_gauge(m->reg, "edgesync_controller_etcd_up",
				   "1 when the latest etcd request or watch message got an answer from etcd the controller can use, 0 when no endpoint answered or etcd refused the client.",
				   NULL, 0, &m->etcd_up, err, errsz)) != ES_OK ||
	    (rc = es_metrics_gauge(m->reg, "edgesync_controller_store_size_bytes",
				   "Bytes on disk of the SQLite store: the database file and its write-ahead log.",
				   NULL, 0, &m->store_size, err, errsz)) != ES_OK)
		goto cleanup;
	rc = es_metric_set(m->build_info, (const char *[]){ version ? version : "" }, 1);
	/* Every type an agent may send shows from the start, at 0. */
	for (int t = ES_MSG_HELLO; rc == ES_OK && t <= ES_MSG_LAST; t++) {
		const char *name = es_proto_type_name((es_msg_type)t);

		if (name)
			rc = es_metric_add(m->messages, (const char *[]){ name }, 0);
	}
	if (rc != ES_OK) {
		rc = es_errf(rc, err, errsz, "out of memory");
		goto cleanup;
	}
	if (!m->db_path)
		es_metric_clear(m->store_size);
	es_metric_clear(m->etcd_up); /* until etcd is used */
	*out = m;
	m = NULL;
cleanup:
	es_ctrl_metrics_free(m);
	return rc;
}

void es_ctrl_metrics_free(es_ctrl_metrics *m)
{
	if (!m)
		return;
	es_metrics_free(m->reg);
	free(m->db_path);
	free(m);
}

void es_ctrl_metrics_message(es_ctrl_metrics *m, const char *type)
{
	if (m && type)
		es_metric_add(m->messages, (const char *[]){ type }, 1);
}

void es_ctrl_metrics_handshake(es_ctrl_metrics *m, int resumed)
{
	if (m)
		es_metric_add(m->handshakes,
			      (const char *[]){ resumed ? "true" : "false" }, 1);
}

void es_ctrl_metrics_refused(es_ctrl_metrics *m, const char *reason)
{
	if (m && reason)
		es_metric_add(m->refused, (const char *[]){ reason }, 1);
}

void es_ctrl_metrics_duplicate(es_ctrl_metrics *m)
{
	if (m)
		es_metric_add(m->duplicates, NULL, 1);
}

void es_ctrl_metrics_etcd(es_ctrl_metrics *m, const char *op, int ok, int reached,
			  double seconds)
{
	if (!m || !op)
		return;
	es_metric_add(m->etcd_requests, (const char *[]){ op, ok ? "ok" : "error" }, 1);
	if (seconds >= 0)
		es_metric_observe(m->etcd_duration, (const char *[]){ op }, seconds);
	es_metric_set(m->etcd_up, NULL, reached ? 1 : 0);
}

/* Makes room for cap entries in p (cap >= p->n). Returns 0, or -1 when
 * memory ran out (p unchanged). */
static int pending_grow(es_ctrl_pending *p, size_t cap)
{
	int64_t *blk = malloc(2 * cap * sizeof(*blk));

	if (!blk)
		return -1;
	if (p->n) {
		memcpy(blk, p->rv, p->n * sizeof(*blk));
		memcpy(blk + cap, p->at_us, p->n * sizeof(*blk));
	}
	free(p->rv);
	p->rv = blk;
	p->at_us = blk + cap;
	p->cap = cap;
	return 0;
}

void es_ctrl_pending_free(es_ctrl_pending *p)
{
	if (!p)
		return;
	free(p->rv); /* at_us is in the same block */
	memset(p, 0, sizeof(*p));
}

void es_ctrl_metrics_pushed(es_ctrl_pending *p, int64_t rv, int64_t at_us)
{
	if (!p)
		return;
	if (p->n == p->cap && p->cap < ES_CTRL_METRICS_PENDING_MAX) {
		size_t cap = p->cap ? 2 * p->cap : 4;

		if (pending_grow(p, cap < ES_CTRL_METRICS_PENDING_MAX
					    ? cap : ES_CTRL_METRICS_PENDING_MAX) != 0)
			return;
	}
	if (p->n == ES_CTRL_METRICS_PENDING_MAX) {
		memmove(p->rv, p->rv + 1, (p->n - 1) * sizeof(p->rv[0]));
		memmove(p->at_us, p->at_us + 1, (p->n - 1) * sizeof(p->at_us[0]));
		p->n--;
	}
	p->rv[p->n] = rv;
	p->at_us[p->n] = at_us;
	p->n++;
}

void es_ctrl_metrics_acked(es_ctrl_metrics *m, es_ctrl_pending *p, int64_t rv,
			   int64_t now_us)
{
	size_t keep = 0;

	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		if (p->rv[i] <= rv) {
			int64_t d = now_us - p->at_us[i];

			if (m)
				es_metric_observe(m->ack_latency, NULL,
						  (double)(d > 0 ? d : 0) / 1e6);
			continue;
		}
		p->rv[keep] = p->rv[i];
		p->at_us[keep] = p->at_us[i];
		keep++;
	}
	p->n = keep;
	if (!keep)
		es_ctrl_pending_free(p);
}

es_err es_ctrl_metrics_render(es_ctrl_metrics *m, int connected_agents,
			      char **out, size_t *len)
{
	es_err rc;

	*out = NULL;
	*len = 0;
	rc = es_metric_set(m->connected, NULL, connected_agents);
	if (rc == ES_OK && m->db_path) {
		char wal[4200];
		struct stat st;
		double size;

		es_metric_clear(m->store_size);
		if (stat(m->db_path, &st) == 0) {
			size = (double)st.st_size;
			snprintf(wal, sizeof(wal), "%s-wal", m->db_path);
			if (stat(wal, &st) == 0)
				size += (double)st.st_size;
			rc = es_metric_set(m->store_size, NULL, size);
		}
	}
	if (rc != ES_OK)
		return rc;
	return es_metrics_render(m->reg, out, len);
}
