/*
 * agent.c - the edgesync agent runtime (see agent.h): the event loop,
 * collection rounds, reconciling, and the hooks of the sync client and the
 * HTTP endpoint. The Node object and its conditions are in agent_node.c.
 */
#include "runtime/agent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libwebsockets.h>

#include "runtime/agent_int.h"
#include "collect/collect.h"
#include "es_fs.h"
#include "es_json.h"
#include "es_lockfile.h"
#include "es_log.h"
#include "es_notify.h"
#include "es_obj.h"
#include "es_proto.h"
#include "es_time.h"
#include "es_version.h"
#include "runtime/heap.h"
#include "endpoint/httpd.h"
#include "reconcile/reconcile.h"
#include "store/store.h"
#include "sync/sync.h"

static void collect_now(es_agent *a);
static void reconcile_now(es_agent *a);
static void store_timer(lws_sorted_usec_list_t *sul);

/* The store's retry timer (store.h, "Faults"): the first try after a
 * fault, doubling up to the last. */
#define STORE_RETRY_FIRST_MS 250
#define STORE_RETRY_MAX_MS 5000

static void read_boot_id(char *buf, size_t sz)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)sz, f))
		buf[strcspn(buf, "\r\n")] = '\0';
	fclose(f);
}

static void put_event(es_agent *a, const cJSON *ev)
{
	es_err rc = es_store_outbox_put_event(a->st, ev, time(NULL),
					      (size_t)a->cfg->max_events, NULL);

	if (rc != ES_OK)
		es_log_error("agent", "cannot queue an event", "error",
			     es_strerror(rc), NULL);
}

/* Queues every event of the array events (borrowed) in the outbox. */
static void queue_events(es_agent *a, const cJSON *events)
{
	const cJSON *ev;

	cJSON_ArrayForEach(ev, events)
		put_event(a, ev);
}

void agent__queue_event(es_agent *a, cJSON *ev)
{
	if (!ev)
		return;
	put_event(a, ev);
	cJSON_Delete(ev);
}

/* The StoreRebuilt event of the store's last rebuild. */
static void queue_rebuilt_event(es_agent *a)
{
	char t[ES_TIME_RFC3339_LEN], msg[600];
	es_store_health h;

	es_store_health_get(a->st, &h);
	snprintf(msg, sizeof(msg), "the agent database %s was damaged (%s): moved to"
		 " %s and replaced with a new empty one; the desired state is"
		 " fetched again from the controller", h.path, h.rebuilt_why,
		 h.moved_to);
	agent__queue_event(a, es_proto_event("Warning", "StoreRebuilt", msg, "Node",
					     a->cfg->node_name, NULL,
					     es_time_now_rfc3339(t)));
}

static void store_arm(es_agent *a, int64_t ms)
{
	a->store_armed = 1;
	lws_sul_schedule(a->ctx, 0, &a->sul_store, store_timer,
			 (lws_usec_t)ms * LWS_US_PER_MS);
}

/* es_store_notify_fn: a fault episode began or the file is damaged. Runs
 * inside a store call: only arms the timer. */
static void store_notify(void *user)
{
	es_agent *a = user;
	es_store_health h;

	es_store_health_get(a->st, &h);
	if (h.fault == ES_STORE_FAULT_CORRUPT) {
		store_arm(a, 0);
	} else if (!a->store_armed) {
		a->store_retry_ms = STORE_RETRY_FIRST_MS;
		store_arm(a, a->store_retry_ms);
	}
}

/* Ends the store's fault episode (es_store_flush), or replaces a damaged
 * file (es_store_rebuild: the StoreRebuilt event, the sync connection
 * restarted, the desired objects reconciled again), else tries again
 * later, the delay doubling up to STORE_RETRY_MAX_MS. */
static void store_timer(lws_sorted_usec_list_t *sul)
{
	es_agent *a = lws_container_of(sul, es_agent, sul_store);
	es_store_health h;
	uint64_t rebuilds;
	char err[512];
	es_err rc;

	a->store_armed = 0;
	es_store_health_get(a->st, &h);
	rebuilds = h.rebuilds;
	rc = es_store_flush(a->st);
	if (rc == ES_ERR_STATE) {
		rc = es_store_rebuild(a->st, NULL, err, sizeof(err));
		if (rc != ES_OK)
			es_log_error("agent", "cannot replace the damaged database",
				     "error", err, NULL);
		else
			rc = es_store_flush(a->st);
	}
	es_store_health_get(a->st, &h);
	if (h.rebuilds != rebuilds) {
		/* What was derived from the old file goes with it. */
		queue_rebuilt_event(a);
		es_sync_restart(a->sync, "agent database replaced");
		a->reconcile_due = 1;
		if (rc == ES_OK)
			rc = es_store_flush(a->st);
	}
	if (rc != ES_OK) {
		a->store_retry_ms = a->store_retry_ms ? a->store_retry_ms * 2 :
							 STORE_RETRY_FIRST_MS;
		if (a->store_retry_ms > STORE_RETRY_MAX_MS)
			a->store_retry_ms = STORE_RETRY_MAX_MS;
		if (!a->store_armed)
			store_arm(a, a->store_retry_ms);
		return;
	}
	a->store_retry_ms = 0;
	if (a->reconcile_due)
		reconcile_now(a);
	es_sync_kick(a->sync);
}

static void collect_timer(lws_sorted_usec_list_t *sul)
{
	es_agent *a = lws_container_of(sul, es_agent, sul_collect);

	collect_now(a);
}

static void queue_current_state(es_agent *a)
{
	es_err rc;

	if (!a->reported_json)
		return;
	rc = es_store_outbox_put_state(a->st, a->reported_json, time(NULL), NULL);
	if (rc != ES_OK)
		es_log_error("agent", "cannot queue the node state", "error",
			     es_strerror(rc), NULL);
	es_sync_kick(a->sync);
}

/* One collection round; re-arms the timer with the effective interval. */
static void collect_now(es_agent *a)
{
	cJSON *status = NULL, *node;
	char *text = NULL, *rep;
	time_t now = time(NULL);
	es_sample round;
	es_err rc;

	lws_sul_cancel(&a->sul_collect);
	es_sample_init(&round);
	rc = es_collect_run(a->col, a->eff.mask, &status, &round);
	if (rc == ES_OK)
		agent__kc_report(a, status);
	if (rc != ES_OK) {
		es_log_error("agent", "collection failed", "error", es_strerror(rc), NULL);
	} else {
		agent__update_conditions(a, status, &round, now);
		agent__report_events(a, status, now);
		node = agent__build_node(a, status);
		/* Room for the report envelope around the Node. */
		text = node ? agent__node_text(node, ES_PROTO_MAX_MESSAGE - 16384) : NULL;
		rep = text ? agent__report_view(a, node, now) : NULL;
		cJSON_Delete(node);
		if (!rep) {
			free(text);
			es_log_error("agent", "cannot build the node object", "error",
				     "out of memory", NULL);
		} else {
			free(a->node_json);
			a->node_json = text;
			es_sample_move(&a->sample, &round);
			/* A round that changed nothing reported queues nothing. */
			if (a->reported_json && strcmp(a->reported_json, rep) == 0) {
				free(rep);
			} else {
				free(a->reported_json);
				a->reported_json = rep;
				queue_current_state(a);
			}
			a->ready = 1;
		}
	}
	es_sample_clear(&round);
	/* A round builds and frees the whole Node document, its merge patch
	 * and their JSON text; hand the freed heap back so the resident set
	 * between rounds is what the agent holds, not its last round's peak. */
	es_heap_trim();
	lws_sul_schedule(a->ctx, 0, &a->sul_collect, collect_timer,
			 (lws_usec_t)a->eff.interval_s * LWS_US_PER_SEC);
}

/* Reconciles the cached desired objects, applies the effective collector
 * configuration and collects at once. */
static void reconcile_now(es_agent *a)
{
	es_collector_cfg eff = { ES_COLLECT_DEFAULT_INTERVAL, ES_COLLECT_ALL };
	cJSON *events = cJSON_CreateArray(), *list = NULL, *o;
	int applied = 0, skipped = 0;
	char na[16], ns[16], iv[16];
	struct timespec t0, t1;
	es_err rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = es_reconcile_run(a->st, time(NULL), ES_VERSION, &eff, events,
			      &applied, &skipped);
	if (rc == ES_OK && es_egress_reconcile(a->egress, a->st, time(NULL),
					       events) != ES_OK)
		es_log_error("agent", "EgressPolicy reconcile failed", NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	es_agent_metrics_apply_duration(a->metrics,
					(double)(t1.tv_sec - t0.tv_sec) +
					(double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (rc != ES_OK) {
		es_store_health h;

		es_log_error("agent", "reconcile failed", "error", es_strerror(rc), NULL);
		/* Once the store takes writes again (store_timer). */
		es_store_health_get(a->st, &h);
		a->reconcile_due = h.fault != ES_STORE_FAULT_NONE;
	} else {
		a->reconcile_due = 0;
		queue_events(a, events);
		a->has_cc = 0;
		if (es_store_desired_list(a->st, &list) == ES_OK) {
			cJSON_ArrayForEach(o, list)
				if (es_obj_kind(o) == ES_KIND_COLLECTOR_CONFIG)
					a->has_cc = 1;
			if (es_health_eval_set_rules(a->health, list) != ES_OK)
				es_log_error("agent", "cannot load the health rules",
					     "error", "out of memory", NULL);
		}
		if (a->has_cc) {
			a->eff = eff;
		} else {
			a->eff.interval_s = (int)a->cfg->interval;
			a->eff.mask = ES_COLLECT_ALL;
		}
		snprintf(na, sizeof(na), "%d", applied);
		snprintf(ns, sizeof(ns), "%d", skipped);
		snprintf(iv, sizeof(iv), "%d", a->eff.interval_s);
		es_log_info("agent", "reconciled", "applied", na, "skipped", ns,
			    "intervalSeconds", iv, NULL);
	}
	cJSON_Delete(list);
	cJSON_Delete(events);
	collect_now(a);
}

/* After an EgressPolicy check changed a status or made events. */
static void hook_egress(void *user, const cJSON *events)
{
	queue_events(user, events);
	collect_now(user);
}

/* After a welcome or a resync. A welcome may follow credentials that were
 * fixed since the last round: then the state sent first says so. */
static void hook_queue_state(void *user)
{
	es_agent *a = user;

	if (agent__credentials_condition(a, time(NULL)))
		collect_now(a);
	else
		queue_current_state(a);
}

static void hook_desired(void *user)
{
	reconcile_now(user);
}

static int src_ready(void *user, char *why, size_t whysz)
{
	es_agent *a = user;
	es_store_health h;

	if (!a->st) {
		snprintf(why, whysz, "the agent database is not open");
		return 0;
	}
	es_store_health_get(a->st, &h);
	if (h.fault != ES_STORE_FAULT_NONE) {
		snprintf(why, whysz, "the agent database %s cannot be written (%s)",
			 h.path, h.error);
		return 0;
	}
	if (!a->ready) {
		snprintf(why, whysz, "the first collection has not finished");
		return 0;
	}
	return 1;
}

/* A Kubernetes Status object (the admin API's error shape): 503, reason
 * StoreUnavailable, the message naming the database and its fault. */
static cJSON *store_unavailable(es_agent *a)
{
	cJSON *st = cJSON_CreateObject();
	es_store_health h;
	char msg[600];

	es_store_health_get(a->st, &h);
	snprintf(msg, sizeof(msg), "the agent database %s cannot be read: %s", h.path,
		 *h.error ? h.error : "a query failed (see the agent's log)");
	if (!st || !cJSON_AddStringToObject(st, "kind", "Status") ||
	    !cJSON_AddStringToObject(st, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(st, "status", "Failure") ||
	    !cJSON_AddStringToObject(st, "reason", "StoreUnavailable") ||
	    !cJSON_AddStringToObject(st, "message", msg) ||
	    !es_json_add_int(st, "code", 503)) {
		cJSON_Delete(st);
		return NULL;
	}
	return st;
}

static int src_state(void *user, cJSON **doc)
{
	es_agent *a = user;
	es_err rc = es_agent_state_json(a, doc);

	if (rc == ES_OK)
		return 200;
	if (rc != ES_ERR_DB)
		return -1;
	*doc = store_unavailable(a);
	return *doc ? 503 : -1;
}

static int src_metrics(void *user, char **body, size_t *len)
{
	es_agent *a = user;
	es_agent_metrics_input in = { NULL, 0, 0, "disabled", 0, NULL };
	cJSON *node = a->node_json ? cJSON_Parse(a->node_json) : NULL;
	int rc = -1;

	if (a->node_json && !node)
		return -1;
	in.node = node;
	in.sample = a->node_json ? &a->sample : NULL;
	if (es_store_outbox_depth(a->st, &in.reports_queued) != ES_OK ||
	    es_store_dropped(a->st, &in.reports_dropped) != ES_OK)
		goto done;
	if (a->sync) {
		es_sync_info si;

		es_sync_get_info(a->sync, &si);
		in.sync_state = si.state;
		in.reconnects = si.reconnects;
	}
	rc = es_agent_metrics_render(a->metrics, &in, body, len) == ES_OK ? 0 : -1;
done:
	cJSON_Delete(node);
	return rc;
}

es_err es_agent_state_json(es_agent *a, cJSON **out)
{
	cJSON *root = cJSON_CreateObject(), *list = NULL, *o, *s = NULL, *tmp;
	int64_t acked = 0, next = 1, depth = 0, dropped = 0;
	es_err rc = ES_ERR_NOMEM, r;

	*out = NULL;
	if (!root)
		return ES_ERR_NOMEM;
	tmp = a->node_json ? cJSON_Parse(a->node_json) : cJSON_CreateNull();
	if (!tmp || !cJSON_AddItemToObject(root, "node", tmp))
		goto fail;
	if ((rc = es_store_desired_list(a->st, &list)) != ES_OK)
		goto fail;
	rc = ES_ERR_NOMEM;
	cJSON_ArrayForEach(o, list) {
		r = es_store_status_get(a->st, es_obj_kind_str(o), es_obj_name(o), &s);
		if (r != ES_OK && r != ES_ERR_NOTFOUND) {
			rc = r;
			goto fail;
		}
		if (s) {
			cJSON_DeleteItemFromObjectCaseSensitive(o, "status");
			cJSON_AddItemToObject(o, "status", s);
			s = NULL;
		}
	}
	cJSON_AddItemToObject(root, "desired", list);
	list = NULL;
	if (a->sync) {
		tmp = es_sync_info_json(a->sync);
	} else {
		tmp = cJSON_CreateObject();
		if (tmp && (!cJSON_AddBoolToObject(tmp, "connected", 0) ||
			    !cJSON_AddStringToObject(tmp, "state", "disabled") ||
			    !cJSON_AddStringToObject(tmp, "url", ""))) {
			cJSON_Delete(tmp);
			tmp = NULL;
		}
	}
	if (!tmp || !cJSON_AddItemToObject(root, "sync", tmp))
		goto fail;
	if ((rc = es_store_get_int(a->st, "acked_seq", 0, &acked)) != ES_OK ||
	    (rc = es_store_get_int(a->st, "next_seq", 1, &next)) != ES_OK ||
	    (rc = es_store_outbox_depth(a->st, &depth)) != ES_OK ||
	    (rc = es_store_dropped(a->st, &dropped)) != ES_OK)
		goto fail;
	rc = ES_ERR_NOMEM;
	if (!es_json_add_int(tmp, "ackedSeq", acked) ||
	    !es_json_add_int(tmp, "nextSeq", next) ||
	    !es_json_add_int(tmp, "outboxDepth", depth) ||
	    !es_json_add_int(tmp, "reportsDropped", dropped))
		goto fail;
	*out = root;
	return ES_OK;
fail:
	cJSON_Delete(list);
	cJSON_Delete(root);
	return rc;
}

es_err es_agent_new(const es_agent_config *cfg, es_agent **out, char *err,
		    size_t errsz)
{
	struct lws_context_creation_info info;
	es_agent *a;
	char path[4200];
	es_err rc;

	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	es_sample_init(&a->sample);
	a->cfg = cfg;
	a->lock_fd = -1;
	a->eff.interval_s = (int)cfg->interval;
	a->eff.mask = ES_COLLECT_ALL;
	read_boot_id(a->boot_id, sizeof(a->boot_id));
	rc = es_agent_labels_parse(cfg->labels, &a->labels, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	a->conditions = cJSON_CreateArray();
	if (!a->conditions || es_health_eval_new(&a->health) != ES_OK) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	rc = es_fs_mkdir_p(cfg->state_dir, 0700, path, sizeof(path));
	if (rc != ES_OK) {
		es_errf(rc, err, errsz, "state-dir: %s", path);
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/agent.lock", cfg->state_dir);
	rc = es_lockfile_acquire(path, &a->lock_fd, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	snprintf(path, sizeof(path), "%s/agent.db", cfg->state_dir);
	rc = es_store_open_repair(path, &a->st, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	agent__seed_conditions(a);
	rc = es_collect_new(NULL, ES_VERSION, &a->col);
	if (rc != ES_OK) {
		es_errf(rc, err, errsz, "collectors: %s", es_strerror(rc));
		goto cleanup;
	}
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS |
		       LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.user = a;
	/* Bound what libwebsockets watches (the sync connection, the local
	 * endpoint's listeners and clients, the kernel collectors' ring
	 * buffers): otherwise it sizes two zeroed tables from ulimit -n, 8
	 * bytes per possible descriptor each (320 KiB at 20000), and keeps
	 * them resident. The documentation of
	 * lws_context_creation_info.fd_limit_per_thread says so: a smaller
	 * bound means smaller lookup tables; past the bound, new local
	 * connections are refused. */
	info.fd_limit_per_thread = ES_AGENT_LWS_FDS;
	a->ctx = lws_create_context(&info);
	if (!a->ctx) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "cannot create the event loop");
		goto cleanup;
	}
	es_store_set_notify(a->st, store_notify, a);
	/* What can stop `run` (the local endpoint's address, the controller
	 * URL) and what an operator looks for first (the first look at the
	 * credential files) come before the kernel collectors and egress
	 * enforcement, which load eBPF programs. */
	rc = es_agent_metrics_new(NULL, ES_VERSION, &a->metrics, err, errsz);
	if (rc == ES_OK)
		rc = agent__kc_metrics(a, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	if (cfg->http_listen && *cfg->http_listen) {
		es_httpd_source src = { a, src_ready, src_state, src_metrics };

		rc = es_httpd_new(a->ctx, cfg->http_listen, &src, &a->httpd, err, errsz);
		if (rc != ES_OK)
			goto cleanup;
	}
	if (cfg->controller_url && *cfg->controller_url) {
		es_sync_opts so;
		es_sync_hooks hooks = { a, hook_queue_state, hook_desired };

		memset(&so, 0, sizeof(so));
		so.url = cfg->controller_url;
		so.listed = cfg->controller_order == ES_AGENT_ORDER_LISTED;
		so.cert = cfg->cert;
		so.key = cfg->key;
		so.ca = cfg->ca;
		so.node = cfg->node_name;
		so.agent_version = ES_VERSION;
		so.boot_id = a->boot_id;
		so.labels = a->labels;
		so.metrics = a->metrics;
		so.protocol_version = (int)cfg->protocol_version;
		so.deflate = cfg->compress;
		so.renew_percent = (int)cfg->renew_percent;
		rc = es_sync_new(a->ctx, a->st, &so, &hooks, &a->sync, err, errsz);
		if (rc != ES_OK)
			goto cleanup;
	}
	agent__kc_start(a);
	{
		es_egress_opts eo = { cfg->egress_pin_dir, cfg->state_dir,
				      cfg->cgroup_root,
				      (int)cfg->egress_check_interval,
				      cfg->node_name,
				      (es_egress_backend)cfg->egress_backend };

		rc = es_egress_new(&eo, &a->egress, err, errsz);
		if (rc == ES_OK)
			rc = es_egress_start(a->egress, a->ctx, a->st, hook_egress, a);
		if (rc != ES_OK)
			goto cleanup;
	}
	*out = a;
	a = NULL;
cleanup:
	es_agent_free(a);
	return rc;
}

es_err es_agent_run(es_agent *a, volatile sig_atomic_t *stop)
{
	es_log_info("agent", "starting", "node", a->cfg->node_name, "version",
		    ES_VERSION, "controller",
		    a->sync ? a->cfg->controller_url : "(offline only)",
		    "http", a->httpd ? a->cfg->http_listen : "(disabled)", NULL);
	{
		char t[ES_TIME_RFC3339_LEN], msg[200];

		snprintf(msg, sizeof(msg), "edgesync-agent %s started (boot ID %s)",
			 ES_VERSION, a->boot_id[0] ? a->boot_id : "unknown");
		agent__queue_event(a, es_proto_event("Normal", "AgentStarted", msg,
						     "Node", a->cfg->node_name, NULL,
						     es_time_now_rfc3339(t)));
	}
	{
		es_store_health h;

		/* es_store_open_repair replaced a damaged file. */
		es_store_health_get(a->st, &h);
		if (h.rebuilt)
			queue_rebuilt_event(a);
		if (h.fault != ES_STORE_FAULT_NONE)
			store_notify(a);
	}
	reconcile_now(a);
	es_sync_start(a->sync);
	agent__cert_start(a);
	{
		char e[160];

		if (es_notify_watchdog_start(a->ctx, NULL, e, sizeof(e)) != ES_OK)
			es_log_warn("agent", "systemd watchdog not started", "error", e, NULL);
		es_notify_ready(a->ready ? "serving" : "serving; the first collection failed");
	}
	while (!*stop)
		if (lws_service(a->ctx, 0) < 0) {
			es_notify_stopping();
			return ES_ERR_IO;
		}
	es_notify_stopping();
	es_log_info("agent", "stopping", NULL);
	return ES_OK;
}

void es_agent_free(es_agent *a)
{
	if (!a)
		return;
	agent__cert_stop(a);
	es_sync_stop(a->sync);
	agent__kc_stop(a);
	es_egress_free(a->egress);
	if (a->ctx) {
		lws_sul_cancel(&a->sul_collect);
		lws_sul_cancel(&a->sul_store);
		lws_context_destroy(a->ctx);
	}
	/* What the store holds in memory gets one last chance, with no timer
	 * left to arm. */
	es_store_set_notify(a->st, NULL, NULL);
	if (a->st && es_store_flush(a->st) == ES_ERR_STATE)
		es_log_warn("agent", "the agent database is damaged; it is replaced at"
			    " the next start", NULL);
	es_sync_free(a->sync);
	es_httpd_free(a->httpd);
	es_agent_metrics_free(a->metrics);
	es_collect_free(a->col);
	es_store_close(a->st);
	es_lockfile_release(a->lock_fd);
	cJSON_Delete(a->labels);
	cJSON_Delete(a->conditions);
	es_health_eval_free(a->health);
	free(a->node_json);
	agent__report_free(a);
	es_sample_clear(&a->sample);
	free(a->objects_json);
	free(a);
}
