/*
 * agent_report.c - what a collection round reports (agent_int.h,
 * agent__report_view; proto/PROTOCOL.md "Usage figures" and "Activity
 * events"): usage figures held at the value last sent between usage
 * reports and while they moved less than usage-min-change, and, with
 * protocol version 2, the lists of recent execs, exits and OOM victims
 * turned into events instead of state.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/agent_int.h"
#include "es_json.h"
#include "es_kpatch.h"
#include "es_log.h"
#include "es_proto.h"
#include "es_time.h"

/* The activity lists that become events (PROTOCOL.md "Activity events"). */
static const struct {
	const char *group, *list; /* under status.activity */
	const char *reason;       /* the event's reason */
	int at_once;              /* 1: every round (a Warning); 0: with usage */
} activity_lists[] = {
	{"processes", "recentExecs", "ProcessesStarted", 0},
	{"processes", "recentExits", "ProcessesExited", 0},
	{"oom", "recent", "OOMKilling", 1},
};
#define N_ACTIVITY (sizeof(activity_lists) / sizeof(activity_lists[0]))

/* ---- usage figures --------------------------------------------------------- */

/* 1 when the value at path is a usage figure (PROTOCOL.md "Usage
 * figures"). */
static int usage_path(const char *path)
{
	return strncmp(path, "status.usage", 12) == 0 ||
	       strncmp(path, "status.activity", 15) == 0 ||
	       strcmp(path, "status.collectors[].events") == 0 ||
	       strcmp(path, "status.agent.outboxDepth") == 0;
}

static const es_kpatch_key *keyed(const char *path)
{
	for (const es_kpatch_key *k = es_kpatch_keys; k->path; k++)
		if (strcmp(k->path, path) == 0)
			return k;
	return NULL;
}

/* The item of prev with it's merge key k, or NULL. */
static const cJSON *match_item(const cJSON *prev, const cJSON *it, const es_kpatch_key *k)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, prev) {
		size_t i;

		for (i = 0; i < ES_KPATCH_MAX_KEYS && k->keys[i]; i++) {
			const cJSON *a = cJSON_GetObjectItemCaseSensitive(it, k->keys[i]);
			const cJSON *b = cJSON_GetObjectItemCaseSensitive(p, k->keys[i]);

			if (!a || !b || es_json_equal(a, b) != 1)
				break;
		}
		if (i == ES_KPATCH_MAX_KEYS || !k->keys[i])
			return p;
	}
	return NULL;
}

typedef struct damp_ctx {
	int due;         /* a usage report is due this round */
	double min_rel;  /* usage-min-change as a fraction */
	char path[256];
} damp_ctx;

/* A condition whose status and reason are as before keeps the message
 * last sent until a usage report: a message that only quotes a figure
 * ("68% of memory available") is a usage figure; a transition goes at
 * once. */
static void damp_condition(cJSON *cur, const cJSON *prev, const damp_ctx *d)
{
	const char *m[] = {"status", "reason"};
	const cJSON *pm;

	if (d->due)
		return;
	for (size_t i = 0; i < 2; i++) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(cur, m[i]);
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(prev, m[i]);

		if (!a || !b || es_json_equal(a, b) != 1)
			return;
	}
	pm = cJSON_GetObjectItemCaseSensitive(prev, "message");
	if (cJSON_IsString(pm) && cJSON_GetObjectItemCaseSensitive(cur, "message")) {
		cJSON *v = cJSON_CreateString(pm->valuestring);

		if (v)
			cJSON_ReplaceItemInObjectCaseSensitive(cur, "message", v);
	}
}

/* Holds the usage figures of cur (changed in place) at their values in
 * prev (the Node last reported) unless a usage report is due and they
 * moved by more than min_rel. d->path names cur. */
static void damp(cJSON *cur, const cJSON *prev, damp_ctx *d)
{
	size_t n = strlen(d->path);
	const es_kpatch_key *k;
	cJSON *it;

	if (!prev)
		return;
	/* Activity changes on every round, its lists too (connections that
	 * closed, cgroups that ran something): between usage reports it
	 * stays as last sent, whole. */
	if (!d->due && strcmp(d->path, "status.activity") == 0 &&
	    cJSON_IsObject(cur) && cJSON_IsObject(prev)) {
		cJSON *keep = cJSON_Duplicate(prev, 1);

		if (keep) {
			/* Swap the members: cur stays the member of status. */
			cJSON *c = cur->child;

			cur->child = keep->child;
			keep->child = c;
			cJSON_Delete(keep);
		}
		return;
	}
	if (cJSON_IsNumber(cur) && cJSON_IsNumber(prev)) {
		double o = prev->valuedouble, v = cur->valuedouble;

		if (!usage_path(d->path))
			return;
		if (!d->due || fabs(v - o) <= d->min_rel * fabs(o))
			cJSON_SetNumberValue(cur, o);
		return;
	}
	if (cJSON_IsObject(cur) && cJSON_IsObject(prev)) {
		if (n >= 12 && strcmp(d->path + n - 12, "conditions[]") == 0)
			damp_condition(cur, prev, d);
		cJSON_ArrayForEach(it, cur) {
			if (!it->string || n + strlen(it->string) + 2 >= sizeof(d->path))
				continue;
			snprintf(d->path + n, sizeof(d->path) - n, "%s%s", n ? "." : "",
				 it->string);
			damp(it, cJSON_GetObjectItemCaseSensitive(prev, it->string), d);
			d->path[n] = '\0';
		}
		return;
	}
	if (!cJSON_IsArray(cur) || !cJSON_IsArray(prev) || n + 3 >= sizeof(d->path))
		return;
	k = keyed(d->path);
	if (!k && cJSON_GetArraySize(cur) != cJSON_GetArraySize(prev))
		return;
	{
		const cJSON *p = prev->child;

		snprintf(d->path + n, sizeof(d->path) - n, "[]");
		cJSON_ArrayForEach(it, cur) {
			damp(it, k ? match_item(prev, it, k) : p, d);
			if (p)
				p = p->next;
		}
		d->path[n] = '\0';
	}
}

/* ---- activity events --------------------------------------------------------- */

/* 1 when arr holds an item equal to it. */
static int holds(const cJSON *arr, const cJSON *it)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, arr)
		if (es_json_equal(p, it) == 1)
			return 1;
	return 0;
}

/* Queues the events of the entries of list (status.activity.<group>.<list>
 * of this round) that seen (the list when it was last looked at) does not
 * hold: one event with them all, or one per entry for OOM victims. */
static void list_events(es_agent *a, size_t li, const cJSON *list, const cJSON *seen)
{
	cJSON *records = cJSON_CreateArray(), *ev = NULL;
	const cJSON *it;
	char t[ES_TIME_RFC3339_LEN], msg[512];
	size_t len = 0;
	int n = 0;

	if (!records)
		return;
	msg[0] = '\0';
	cJSON_ArrayForEach(it, list) {
		const char *comm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it,
							"comm"));
		cJSON *dup;

		if (holds(seen, it))
			continue;
		if (activity_lists[li].at_once) {
			int64_t pid = 0;
			cJSON *one = cJSON_CreateArray();

			es_json_int_value(cJSON_GetObjectItemCaseSensitive(it, "pid"), 0,
					  ES_JSON_MAX_INT, &pid);
			snprintf(msg, sizeof(msg), "process %s (pid %lld) was killed by "
				 "the kernel's OOM killer", comm ? comm : "?", (long long)pid);
			ev = es_proto_event("Warning", activity_lists[li].reason, msg, "Node",
					    a->cfg->node_name, NULL, es_time_now_rfc3339(t));
			if (one && ev && cJSON_AddItemToArray(one, cJSON_Duplicate(it, 1)) &&
			    cJSON_AddItemToObject(ev, "records", one))
				one = NULL;
			cJSON_Delete(one);
			agent__queue_event(a, ev);
			continue;
		}
		n++;
		if (comm && len + strlen(comm) + 3 < sizeof(msg) - 64)
			len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s%s",
						len ? ", " : "", comm);
		dup = cJSON_Duplicate(it, 1);
		if (!dup || !cJSON_AddItemToArray(records, dup))
			cJSON_Delete(dup);
	}
	if (n > 0) {
		char full[600];

		snprintf(full, sizeof(full), "%d process%s %s: %s", n, n == 1 ? "" : "es",
			 li == 0 ? "started" : "exited", msg);
		ev = es_proto_event("Normal", activity_lists[li].reason, full, "Node",
				    a->cfg->node_name, NULL, es_time_now_rfc3339(t));
		if (ev && cJSON_AddItemToObject(ev, "records", records))
			records = NULL;
		agent__queue_event(a, ev);
	}
	cJSON_Delete(records);
}

/* 1 when this round sends usage figures (usage-report-interval). */
static int usage_due(const es_agent *a, time_t now)
{
	return !a->reported_json ||
	       now - a->usage_sent_at >= (time_t)a->cfg->usage_report_interval ||
	       now < a->usage_sent_at;
}

void agent__report_events(es_agent *a, const cJSON *status, time_t now)
{
	const cJSON *act = cJSON_GetObjectItemCaseSensitive(status, "activity");
	int due = usage_due(a, now);

	if (a->cfg->protocol_version != 2)
		return;
	for (size_t i = 0; i < N_ACTIVITY; i++) {
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(act, activity_lists[i].group);
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(g, activity_lists[i].list);
		cJSON *copy;

		if (!list || (!activity_lists[i].at_once && !due))
			continue;
		if (!(copy = cJSON_Duplicate(list, 1)))
			continue;
		list_events(a, i, list, a->activity_seen[i]);
		cJSON_Delete(a->activity_seen[i]);
		a->activity_seen[i] = copy;
	}
}

/* Sets status.usage.timestamp (PROTOCOL.md "Usage figures"): the time of
 * the round of the last usage report, when every figure sent was within
 * usage-min-change of the host's; kept from prev (the Node last reported)
 * between usage reports, so it moves only when the figures are checked. */
static void stamp_usage(cJSON *node, const cJSON *prev, int due, time_t now)
{
	cJSON *u = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(node, "status"), "usage");
	const cJSON *pt = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(prev, "status"), "usage"),
		"timestamp");
	char t[ES_TIME_RFC3339_LEN];

	if (!cJSON_IsObject(u))
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(u, "timestamp");
	/* Out of memory: the report goes without it, as an older agent's. */
	(void)cJSON_AddStringToObject(u, "timestamp", !due && cJSON_IsString(pt)
				      ? pt->valuestring : es_time_rfc3339(now, t));
}

char *agent__report_view(es_agent *a, cJSON *node, time_t now)
{
	cJSON *prev = NULL;
	damp_ctx d;
	char *text;

	memset(&d, 0, sizeof(d));
	d.due = usage_due(a, now);
	d.min_rel = (double)a->cfg->usage_min_change / 100.0;
	if (a->cfg->protocol_version == 2) {
		/* The activity lists went as events (agent__report_events). */
		cJSON *act = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
			node, "status"), "activity");

		for (size_t i = 0; i < N_ACTIVITY; i++)
			cJSON_DeleteItemFromObjectCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(act, activity_lists[i].group),
				activity_lists[i].list);
	}
	if (a->reported_json)
		prev = cJSON_Parse(a->reported_json);
	damp(node, prev, &d);
	stamp_usage(node, prev, d.due, now);
	cJSON_Delete(prev);
	text = es_json_print(node);
	if (text && d.due)
		a->usage_sent_at = now;
	return text;
}

void agent__report_free(es_agent *a)
{
	for (size_t i = 0; i < N_ACTIVITY; i++) {
		cJSON_Delete(a->activity_seen[i]);
		a->activity_seen[i] = NULL;
	}
	free(a->reported_json);
	a->reported_json = NULL;
}
