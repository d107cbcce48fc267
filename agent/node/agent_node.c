/*
 * agent_node.c - the Node object the agent reports each round (agent.h;
 * PROTOCOL.md "Node") and its node conditions (Ready, MemoryPressure,
 * DiskPressure, PIDPressure, NetworkUnavailable) with kubelet's eviction
 * thresholds, which HealthRules (health.h) override and extend, and
 * StoreDegraded from the agent's own database (store.h, "Faults"); Ready
 * summarises them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/agent_int.h"
#include "es_cond.h"
#include "es_json.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_proto.h"
#include "es_sample.h"
#include "es_time.h"
#include "reconcile/reconcile.h"

/* 1 when the usage collector ran and is healthy; else 0 with why set. */
static int collector_ok(const es_sample *s, int collector, const char **why)
{
	const es_sample_collector *c = &s->collectors[collector];

	if (!c->enabled) {
		*why = "NotCollected";
		return 0;
	}
	if (!c->healthy) {
		*why = "CollectorFailed";
		return 0;
	}
	return 1;
}

/* Appends name to the comma-separated list (listsz bytes); a name that
 * does not fit is left out. */
static void append_name(char *list, size_t listsz, const char *name)
{
	size_t len = strlen(list);

	if (len + strlen(name) + 3 >= listsz)
		return;
	snprintf(list + len, listsz - len, "%s%s", len ? ", " : "", name);
}

/* The built-in conditions: Ready, the four defaults a HealthRule may
 * replace (1..4), StoreDegraded. */
#define N_BUILTIN 6

typedef struct cond_spec {
	const char *type, *status, *reason;
	char message[256];
	int64_t generation;  /* the HealthRule's, 0 for built-in defaults */
	int blocks_ready;    /* True makes Ready False */
} cond_spec;

/* Computes the five node conditions from one round: Ready from the
 * status.collectors entries (the kernel collectors' included), the others
 * from the sample (kernel.pid_max <= 0: unknown). */
static void compute_conditions(const cJSON *status, const es_sample *s,
			       cond_spec c[5])
{
	const es_sample_fs *root = NULL;
	const cJSON *it;
	const char *why = "NotCollected";
	char failing[200] = "", unavailable[200] = "";
	long long pid_max = (long long)s->pid_max;

	/* Ready: a kernel collector without a backend on this host (backend
	 * "unavailable", with its reason) is not running, so it is not failing. */
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(status, "collectors")) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(it, "backend");
		int off = cJSON_IsString(b) && !strcmp(b->valuestring, "unavailable");

		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "enabled")) &&
		    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "healthy")) &&
		    cJSON_IsString(n))
			append_name(off ? unavailable : failing, sizeof(failing),
				    n->valuestring);
	}
	c[0].type = "Ready";
	if (failing[0]) {
		c[0].status = "False";
		c[0].reason = "CollectorsFailing";
		snprintf(c[0].message, sizeof(c[0].message),
			 "collectors failing: %s", failing);
	} else {
		c[0].status = "True";
		c[0].reason = "AgentReady";
		snprintf(c[0].message, sizeof(c[0].message), "edgesync-agent is collecting%s%s",
			 unavailable[0] ? "; unavailable on this host: " : "", unavailable);
	}
	/* MemoryPressure */
	c[1].type = "MemoryPressure";
	if (!collector_ok(s, ES_SAMPLE_MEMORY, &why) || !es_sample_has(s->mem_available)) {
		c[1].status = "Unknown";
		c[1].reason = es_sample_has(s->mem_available) ? why : "NotCollected";
		snprintf(c[1].message, sizeof(c[1].message), "MemAvailable not collected");
	} else {
		c[1].status = s->mem_available < ES_AGENT_MEM_PRESSURE_BYTES ? "True" : "False";
		c[1].reason = *c[1].status == 'T' ? "InsufficientMemory" : "SufficientMemory";
		snprintf(c[1].message, sizeof(c[1].message),
			 "MemAvailable %.0f bytes, threshold 104857600 (100Mi)",
			 s->mem_available);
	}
	/* DiskPressure: the first filesystem at / with a size */
	c[2].type = "DiskPressure";
	c[2].status = "Unknown";
	c[2].reason = "NotCollected";
	snprintf(c[2].message, sizeof(c[2].message), "root filesystem not collected");
	if (collector_ok(s, ES_SAMPLE_FILESYSTEM, &why)) {
		for (size_t i = 0; i < s->nfs && !root; i++) {
			const es_sample_fs *fs = &s->fs[i];

			if (fs->mountpoint && !strcmp(fs->mountpoint, "/") &&
			    es_sample_has(fs->size_bytes) &&
			    es_sample_has(fs->avail_bytes) && fs->size_bytes > 0)
				root = fs;
		}
		if (root) {
			double frac = root->avail_bytes / root->size_bytes;

			c[2].status = frac < ES_AGENT_DISK_PRESSURE_FRACTION ? "True" : "False";
			c[2].reason = *c[2].status == 'T' ? "InsufficientDisk" : "SufficientDisk";
			snprintf(c[2].message, sizeof(c[2].message),
				 "root filesystem %.1f%% available, threshold 10%%",
				 frac * 100.0);
		}
	} else {
		c[2].reason = why;
	}
	/* PIDPressure */
	c[3].type = "PIDPressure";
	if (!collector_ok(s, ES_SAMPLE_PROCESSES, &why) ||
	    !es_sample_has(s->proc_count) || pid_max <= 0) {
		c[3].status = "Unknown";
		c[3].reason = pid_max <= 0 ? "PidMaxUnknown" : why;
		snprintf(c[3].message, sizeof(c[3].message),
			 "process count or kernel.pid_max not available");
	} else {
		int p = s->proc_count > ES_AGENT_PID_PRESSURE_FRACTION * (double)pid_max;

		c[3].status = p ? "True" : "False";
		c[3].reason = p ? "InsufficientPID" : "SufficientPID";
		snprintf(c[3].message, sizeof(c[3].message),
			 "%.0f processes, kernel.pid_max %lld, threshold 90%%",
			 s->proc_count, pid_max);
	}
	/* NetworkUnavailable */
	c[4].type = "NetworkUnavailable";
	if (!collector_ok(s, ES_SAMPLE_NETWORK, &why)) {
		c[4].status = "Unknown";
		c[4].reason = why;
		snprintf(c[4].message, sizeof(c[4].message), "network not collected");
	} else {
		int n = (int)es_sample_ifaces_besides_lo(s);

		c[4].status = n ? "False" : "True";
		c[4].reason = n ? "InterfacesPresent" : "NoInterfaces";
		snprintf(c[4].message, sizeof(c[4].message),
			 "%d network interface(s) besides lo", n);
	}
}

/* What each fault episode is called, by es_store_fault. */
static const struct {
	const char *reason, *what;
} store_faults[] = {
	[ES_STORE_FAULT_NONE] = { "StoreWritable", "" },
	[ES_STORE_FAULT_BUSY] = { "StoreBusy", "another process holds its write lock" },
	[ES_STORE_FAULT_FULL] = { "StoreFull", "its filesystem is full" },
	[ES_STORE_FAULT_IO] = { "StoreIOError", "I/O errors" },
	[ES_STORE_FAULT_CORRUPT] = { "StoreCorrupt", "it is damaged; it is being replaced" },
};

/* StoreDegraded (PROTOCOL.md "Node conditions"): True while the agent's
 * database cannot be written, is damaged, or was replaced by an empty one
 * and the controller has not yet sent the full desired state; Unknown
 * without a store. */
static void store_condition(const es_store *st, cond_spec *c)
{
	char t[ES_TIME_RFC3339_LEN];
	es_store_health h;

	c->type = "StoreDegraded";
	c->blocks_ready = 1;
	if (!st) {
		c->status = "Unknown";
		c->reason = "StoreNotOpen";
		snprintf(c->message, sizeof(c->message), "the agent database is not open");
		return;
	}
	es_store_health_get(st, &h);
	if (h.fault != ES_STORE_FAULT_NONE) {
		c->status = "True";
		c->reason = store_faults[h.fault].reason;
		snprintf(c->message, sizeof(c->message),
			 "%s cannot be written since %s: %s (%s); %zu report(s) held in"
			 " memory, %lld dropped from memory", h.path,
			 es_time_rfc3339(h.since, t), store_faults[h.fault].what,
			 h.error, h.held_events + (h.held_state ? 1 : 0),
			 (long long)h.held_dropped);
	} else if (h.rebuilt) {
		c->status = "True";
		c->reason = "StoreRebuilt";
		snprintf(c->message, sizeof(c->message),
			 "%s was damaged (%s) and was moved to %s at %s; the new empty"
			 " database holds no desired object until the controller sends"
			 " them", h.path, h.rebuilt_why, h.moved_to,
			 es_time_rfc3339(h.rebuilt_at, t));
	} else {
		c->status = "False";
		c->reason = "StoreWritable";
		snprintf(c->message, sizeof(c->message), "%s takes writes", h.path);
	}
}

/* Applies HealthRule results (health.h) over the built-in defaults in c[1..4]
 * (a rule of the same type replaces its default) and after the built-in
 * conditions; returns the number of entries of c in use. */
static size_t apply_rules(cond_spec *c, const es_health_result *res, size_t nres)
{
	size_t n = N_BUILTIN, i, j;

	for (i = 1; i < 5; i++)
		c[i].blocks_ready = 1;
	for (j = 0; j < nres; j++) {
		cond_spec *s = NULL;

		for (i = 1; i < 5 && !s; i++)
			if (strcmp(c[i].type, res[j].type) == 0)
				s = &c[i];
		if (!s) {
			s = &c[n++];
			s->blocks_ready = res[j].critical;
		}
		s->type = res[j].type;
		s->status = res[j].status;
		s->reason = res[j].reason;
		s->generation = res[j].generation;
		snprintf(s->message, sizeof(s->message), "%s", res[j].message);
	}
	return n;
}

/* Ready (c[0]) is False while a built-in condition or a Critical rule's
 * condition is True. */
static void summarise_ready(cond_spec *c, size_t n)
{
	char list[200] = "";
	size_t i;

	if (strcmp(c[0].status, "True") != 0)
		return;
	for (i = 1; i < n; i++) {
		if (c[i].blocks_ready && strcmp(c[i].status, "True") == 0)
			append_name(list, sizeof(list), c[i].type);
	}
	if (!list[0])
		return;
	c[0].status = "False";
	c[0].reason = "UnhealthyConditions";
	snprintf(c[0].message, sizeof(c[0].message), "conditions True: %s", list);
}

void agent__condition_event(es_agent *a, const char *type, const char *status,
			    const char *reason, const char *message, int bad,
			    time_t now)
{
	char t[ES_TIME_RFC3339_LEN], msg[400];

	snprintf(msg, sizeof(msg), "%s is now %s (%s): %s", type, status, reason,
		 message);
	es_log_info("agent", "condition changed", "type", type, "status", status,
		    "reason", reason, NULL);
	agent__queue_event(a, es_proto_event(bad ? "Warning" : "Normal",
					     "ConditionChanged", msg, "Node",
					     a->cfg->node_name, NULL,
					     es_time_rfc3339(now, t)));
}

int agent__credentials_condition(es_agent *a, time_t now)
{
	const char *reason = "", *message = "";
	char msg[1200];
	cJSON *old = es_cond_find(a->conditions, ES_AGENT_COND_CREDENTIALS);
	int ok, changed = 0;

	if (!a->sync) {
		/* Offline only: no credentials (one seeded from an earlier
		 * run with a controller goes). */
		if (old)
			cJSON_Delete(cJSON_DetachItemViaPointer(a->conditions, old));
		return 0;
	}
	ok = es_sync_credentials(a->sync, &reason, &message);
	if (ok < 0)
		return 0;
	if (ok)
		snprintf(msg, sizeof(msg), "%s", message);
	else
		snprintf(msg, sizeof(msg), "%s; the agent runs offline and reads the "
			 "files again every %d s", message, ES_SYNC_CREDS_RETRY_S);
	if (es_cond_set(a->conditions, ES_AGENT_COND_CREDENTIALS, ok ? "True" : "False",
			reason, msg, 0, now, &changed) != ES_OK) {
		es_log_error("agent", "cannot set a condition", "type",
			     ES_AGENT_COND_CREDENTIALS, NULL);
		return 0;
	}
	/* A new condition is news only when it starts False (a problem). */
	if (changed && (old || !ok))
		agent__condition_event(a, ES_AGENT_COND_CREDENTIALS, ok ? "True" : "False",
				reason, msg, !ok, now);
	return changed;
}

void agent__update_conditions(es_agent *a, const cJSON *status,
			      const es_sample *sample, time_t now)
{
	const es_health_result *res = NULL;
	cond_spec *c;
	size_t i, n, nres;
	int changed;

	nres = es_health_eval_run(a->health, sample, es_time_mono_ms(),
				  a->conditions, &res);
	c = calloc(N_BUILTIN + nres, sizeof(*c));
	if (!c) {
		es_log_error("agent", "cannot compute the node conditions", "error",
			     "out of memory", NULL);
		return;
	}
	compute_conditions(status, sample, c);
	store_condition(a->st, &c[5]);
	n = apply_rules(c, res, nres);
	summarise_ready(c, n);
	for (i = 0; i < n; i++) {
		int existed = es_cond_find(a->conditions, c[i].type) != NULL;
		int bad;

		changed = 0;
		if (es_cond_set(a->conditions, c[i].type, c[i].status, c[i].reason,
				c[i].message, c[i].generation, now, &changed) != ES_OK) {
			es_log_error("agent", "cannot set a condition", "type",
				     c[i].type, NULL);
			continue;
		}
		bad = i == 0 ? strcmp(c[i].status, "True") != 0
			     : strcmp(c[i].status, "False") != 0;
		/* A new condition is news only when it starts True (a problem). */
		if (!changed || (!existed && (i == 0 || strcmp(c[i].status, "True") != 0)))
			continue;
		agent__condition_event(a, c[i].type, c[i].status, c[i].reason,
				c[i].message, bad, now);
	}
	agent__credentials_condition(a, now);
	agent__cert_condition(a, now);
	es_health_eval_prune(a->health, a->conditions);
	free(c);
}

/* status.objects as stored (without the EgressPolicy actual state), a new
 * tree: read from the database again only after the desired objects or
 * their statuses changed, else parsed from the text kept since; an empty
 * array when they cannot be read. NULL on allocation failure. */
static cJSON *objects_status(es_agent *a)
{
	uint64_t at = es_store_changes(a->st);
	cJSON *objs = NULL;

	if (a->objects_json && a->objects_at == at)
		return cJSON_Parse(a->objects_json);
	free(a->objects_json);
	a->objects_json = NULL;
	if (es_reconcile_objects_status(a->st, &objs) != ES_OK || !objs)
		return cJSON_CreateArray();
	a->objects_json = es_json_print(objs);
	if (a->objects_json)
		a->objects_at = at;
	return objs;
}

cJSON *agent__build_node(es_agent *a, cJSON *status)
{
	cJSON *node = NULL, *md, *objs = NULL, *ag, *tmp;
	int64_t dropped = 0, depth = 0, rv = 0;

	node = cJSON_CreateObject();
	if (!node)
		goto fail;
	if (!cJSON_AddStringToObject(node, "apiVersion", ES_API_VERSION) ||
	    !cJSON_AddStringToObject(node, "kind", "Node") ||
	    !(md = cJSON_AddObjectToObject(node, "metadata")) ||
	    !cJSON_AddStringToObject(md, "name", a->cfg->node_name) ||
	    !(tmp = cJSON_Duplicate(a->labels, 1)) ||
	    !cJSON_AddItemToObject(md, "labels", tmp))
		goto fail;
	if (!cJSON_AddItemToObject(node, "status", status)) {
		cJSON_Delete(status);
		status = NULL;
		goto fail;
	}
	if (!(tmp = cJSON_Duplicate(a->conditions, 1)) ||
	    !cJSON_AddItemToObject(status, "conditions", tmp))
		goto fail;
	objs = objects_status(a);
	if (!objs)
		goto fail;
	if (es_egress_annotate(a->egress, objs) != 0)
		es_log_error("agent", "cannot add the EgressPolicy actual state", NULL);
	if (!cJSON_AddItemToObject(status, "objects", objs)) {
		cJSON_Delete(objs);
		goto fail;
	}
	es_store_dropped(a->st, &dropped);
	es_store_outbox_depth(a->st, &depth);
	es_store_get_int(a->st, "desired_rv", 0, &rv);
	if (!(ag = cJSON_AddObjectToObject(status, "agent")) ||
	    !es_json_add_int(ag, "reportsDropped", dropped) ||
	    !es_json_add_int(ag, "outboxDepth", depth) ||
	    !es_json_add_int(ag, "desiredResourceVersion", rv) ||
	    !es_json_add_int(ag, "intervalSeconds", a->eff.interval_s))
		goto fail;
	return node;
fail:
	if (!node)
		cJSON_Delete(status);
	cJSON_Delete(node);
	return NULL;
}

void agent__seed_conditions(es_agent *a)
{
	cJSON *doc = NULL, *conds;

	es_store_state_latest(a->st, &doc);
	conds = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(doc, "status"), "conditions");
	if (cJSON_IsArray(conds)) {
		cJSON *dup = cJSON_Duplicate(conds, 1);

		if (dup) {
			cJSON_Delete(a->conditions);
			a->conditions = dup;
		}
	}
	cJSON_Delete(doc);
}

char *agent__node_text(cJSON *node, size_t max)
{
	cJSON *st = cJSON_GetObjectItemCaseSensitive(node, "status");
	cJSON *objs = cJSON_GetObjectItemCaseSensitive(st, "objects");
	cJSON *ag = cJSON_GetObjectItemCaseSensitive(st, "agent");
	char *text = es_json_print(node), n_omitted[24];
	int64_t omitted = 0;
	size_t len;
	int n, drop;

	while (text && (len = strlen(text)) > max &&
	       (n = cJSON_GetArraySize(objs)) > 0) {
		/* Objects make up most of an oversized Node: leave out their
		 * share of the excess, at least one. */
		drop = (int)((double)n * (double)(len - max) / (double)len) + 1;
		if (drop > n)
			drop = n;
		omitted += drop;
		/* cJSON keeps the last item at child->prev. */
		while (drop-- > 0)
			cJSON_Delete(cJSON_DetachItemViaPointer(objs, objs->child->prev));
		cJSON_DeleteItemFromObjectCaseSensitive(ag, "objectsOmitted");
		if (ag && !es_json_add_int(ag, "objectsOmitted", omitted)) {
			free(text);
			return NULL;
		}
		free(text);
		text = es_json_print(node);
	}
	if (omitted) {
		snprintf(n_omitted, sizeof(n_omitted), "%lld", (long long)omitted);
		es_log_warn("agent", "status.objects shortened to fit one message",
			    "objectsOmitted", n_omitted, NULL);
	}
	return text;
}
