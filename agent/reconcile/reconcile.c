/*
 * reconcile.c - applies the cached desired objects and keeps their status
 * (reconcile.h; PROTOCOL.md, "Objects").
 *
 * Stored status of an object: {uid, generation, observedGeneration,
 * conditions}. A stored status whose uid differs from the object's belongs
 * to an earlier object of the same name and is ignored.
 */
#include "reconcile/reconcile.h"

#include <stdio.h>
#include <string.h>

#include "es_cond.h"
#include "es_egress.h"
#include "es_json.h"
#include "es_log.h"
#include "es_proto.h"
#include "es_time.h"
#include "node/health.h"

/* What reconciling one object decided; compared with the stored Applied
 * condition to tell whether the outcome changed. */
typedef struct rc_outcome {
	const char *status;       /* Applied condition status */
	const char *reason;       /* Applied condition reason */
	const char *event_type;   /* "Normal" or "Warning" */
	const char *event_reason;
	char message[512];
} rc_outcome;

static void outcome_set(rc_outcome *oc, const char *status, const char *reason,
			const char *event_type, const char *event_reason)
{
	oc->status = status;
	oc->reason = reason;
	oc->event_type = event_type;
	oc->event_reason = event_reason;
}

static void describe_cfg(const es_collector_cfg *cfg, char *buf, size_t sz)
{
	size_t i, n;
	int w;

	w = snprintf(buf, sz, "interval %ds, collectors ", cfg->interval_s);
	n = w < 0 ? 0 : (size_t)w;
	for (i = 0; i < 5 && n < sz; i++) {
		if (!(cfg->mask & (1u << i)))
			continue;
		w = snprintf(buf + n, sz - n, "%s%s",
			     n > 0 && buf[n - 1] != ' ' ? "," : "",
			     es_collector_names[i]);
		n += w < 0 ? 0 : (size_t)w;
	}
	if (n < sz && !(cfg->mask & ES_COLLECT_ALL))
		snprintf(buf + n, sz - n, "none");
}

/* Parses the winner's spec (a missing spec means all defaults). *ok is 0
 * with err set when the spec is invalid. */
static es_err winner_cfg(const cJSON *winner, es_collector_cfg *cfg, int *ok,
			 char *err, size_t errsz)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(winner, "spec");
	cJSON *empty = NULL;
	es_err rc;

	if (!spec) {
		empty = cJSON_CreateObject();
		if (!empty)
			return ES_ERR_NOMEM;
		spec = empty;
	}
	rc = es_obj_collector_cfg(spec, cfg, err, errsz);
	cJSON_Delete(empty);
	if (rc == ES_ERR_NOMEM)
		return rc;
	*ok = rc == ES_OK;
	return ES_OK;
}

static int str_eq(const cJSON *o, const char *key, const char *want)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) && want && strcmp(v->valuestring, want) == 0;
}

static int64_t int_member(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* The stored status of obj, or NULL when none or of another uid. */
static es_err status_load(es_store *st, const cJSON *obj, cJSON **out)
{
	const char *uid = es_obj_uid(obj);
	es_err rc = es_store_status_get(st, es_obj_kind_str(obj),
					es_obj_name(obj), out);

	if (rc == ES_ERR_NOTFOUND) {
		*out = NULL;
		return ES_OK;
	}
	if (rc != ES_OK)
		return rc;
	if (uid ? !str_eq(*out, "uid", uid)
		: cJSON_HasObjectItem(*out, "uid")) {
		cJSON_Delete(*out);
		*out = NULL;
	}
	return ES_OK;
}

static es_err event_add(cJSON *events, const cJSON *obj, const rc_outcome *oc,
			int64_t gen, time_t now)
{
	char msg[640], when[ES_TIME_RFC3339_LEN];
	cJSON *ev;

	if (!events)
		return ES_OK;
	snprintf(msg, sizeof(msg), "%s %s generation %lld: %s",
		 es_obj_kind_str(obj), es_obj_name(obj), (long long)gen,
		 oc->message);
	ev = es_proto_event(oc->event_type, oc->event_reason, msg,
			    es_obj_kind_str(obj), es_obj_name(obj),
			    es_obj_uid(obj), es_time_rfc3339(now, when));
	if (!ev)
		return ES_ERR_NOMEM;
	if (!cJSON_AddItemToArray(events, ev)) {
		cJSON_Delete(ev);
		return ES_ERR_NOMEM;
	}
	return ES_OK;
}

/* Writes obj's status for outcome oc unless nothing changed; *rewritten
 * says which. */
static es_err reconcile_one(es_store *st, const cJSON *obj,
			    const rc_outcome *oc, time_t now, cJSON *events,
			    int *rewritten)
{
	const char *kind = es_obj_kind_str(obj), *name = es_obj_name(obj);
	const char *uid = es_obj_uid(obj);
	int64_t gen = es_obj_generation(obj);
	cJSON *old = NULL, *status = NULL, *conds = NULL;
	const cJSON *prev, *cond;
	int transition;
	es_err rc;

	*rewritten = 0;
	rc = status_load(st, obj, &old);
	if (rc != ES_OK)
		goto cleanup;
	prev = cJSON_GetObjectItemCaseSensitive(old, "conditions");
	cond = cJSON_IsArray(prev) ? es_cond_find(prev, "Applied") : NULL;
	if (old && int_member(old, "observedGeneration") == gen && cond &&
	    str_eq(cond, "status", oc->status) &&
	    str_eq(cond, "reason", oc->reason) &&
	    str_eq(cond, "message", oc->message))
		goto cleanup;
	/* An event records a transition: a new object or generation, or a
	 * new status or reason. A message alone changing (another object
	 * now supersedes it) rewrites the status without one. */
	transition = !old || int_member(old, "observedGeneration") != gen || !cond ||
		     !str_eq(cond, "status", oc->status) ||
		     !str_eq(cond, "reason", oc->reason);

	conds = cJSON_IsArray(prev) ? cJSON_Duplicate(prev, 1)
				    : cJSON_CreateArray();
	status = cJSON_CreateObject();
	if (!conds || !status ||
	    (uid && !cJSON_AddStringToObject(status, "uid", uid)) ||
	    !es_json_add_int(status, "generation", gen) ||
	    !es_json_add_int(status, "observedGeneration", gen)) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	rc = es_cond_set(conds, "Applied", oc->status, oc->reason, oc->message,
			 gen, now, NULL);
	if (rc != ES_OK)
		goto cleanup;
	if (!cJSON_AddItemToObject(status, "conditions", conds)) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	conds = NULL;
	rc = es_store_status_put(st, kind, name, status);
	if (rc != ES_OK)
		goto cleanup;
	*rewritten = 1;
	es_log_info("reconcile", "status written", "kind", kind, "name", name,
		    "applied", oc->status, "reason", oc->reason, NULL);
	if (transition)
		rc = event_add(events, obj, oc, gen, now);
cleanup:
	cJSON_Delete(old);
	cJSON_Delete(status);
	cJSON_Delete(conds);
	return rc;
}

/* What the outcome hooks of one run share. */
typedef struct rc_run {
	const cJSON *list;        /* every cached desired object */
	const char *agent_version;
	const cJSON *winner;      /* the CollectorConfig that applies, or NULL */
	int winner_ok;            /* its spec is valid */
	es_collector_cfg eff;     /* the effective collector configuration */
	char cfg_err[256];        /* why the winner's spec is invalid */
} rc_run;

/* One kind the agent reconciles: prepare (may be NULL) runs once before
 * any object's outcome; outcome decides one object of the kind. */
typedef struct rc_kind_ops {
	es_kind kind;
	es_err (*prepare)(rc_run *run);
	void (*outcome)(const rc_run *run, const cJSON *obj, rc_outcome *oc);
} rc_kind_ops;

/* The list is ordered by kind then name: the first CollectorConfig is the
 * one whose name sorts first. */
static es_err collector_prepare(rc_run *run)
{
	es_collector_cfg cfg = run->eff;
	const cJSON *obj;
	es_err rc;

	cJSON_ArrayForEach(obj, run->list) {
		if (es_obj_kind(obj) == ES_KIND_COLLECTOR_CONFIG) {
			run->winner = obj;
			break;
		}
	}
	if (!run->winner)
		return ES_OK;
	rc = winner_cfg(run->winner, &cfg, &run->winner_ok, run->cfg_err,
			sizeof(run->cfg_err));
	if (rc == ES_OK && run->winner_ok)
		run->eff = cfg;
	return rc;
}

static void collector_outcome(const rc_run *run, const cJSON *obj,
			      rc_outcome *oc)
{
	if (obj == run->winner && run->winner_ok) {
		outcome_set(oc, "True", "Applied", "Normal", "Applied");
		describe_cfg(&run->eff, oc->message, sizeof(oc->message));
	} else if (obj == run->winner) {
		outcome_set(oc, "False", "InvalidSpec", "Warning", "ApplyFailed");
		snprintf(oc->message, sizeof(oc->message), "invalid spec: %s",
			 run->cfg_err);
	} else {
		outcome_set(oc, "False", "Superseded", "Normal", "Superseded");
		snprintf(oc->message, sizeof(oc->message),
			 "superseded by CollectorConfig %s", es_obj_name(run->winner));
	}
}

static void health_outcome(const rc_run *run, const cJSON *obj, rc_outcome *oc)
{
	es_health_applied ha;

	es_health_applied_outcome(run->list, obj, &ha);
	outcome_set(oc, ha.applied ? "True" : "False", ha.reason, ha.event_type,
		    ha.event_reason);
	snprintf(oc->message, sizeof(oc->message), "%s", ha.message);
}

static void egress_outcome(const rc_run *run, const cJSON *obj, rc_outcome *oc)
{
	char why[400];

	(void)run;
	if (es_egress_spec_validate(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
				    why, sizeof(why)) == ES_OK) {
		outcome_set(oc, "True", "Applied", "Normal", "Applied");
		snprintf(oc->message, sizeof(oc->message), "accepted; "
			 "condition Enforced says what the kernel enforces");
	} else {
		outcome_set(oc, "False", "InvalidSpec", "Warning", "ApplyFailed");
		snprintf(oc->message, sizeof(oc->message), "invalid spec: %s", why);
	}
}

/* Any kind without an entry in rc_kinds. */
static void unsupported_outcome(const rc_run *run, const cJSON *obj,
				rc_outcome *oc)
{
	outcome_set(oc, "False", "KindNotSupported", "Warning", "KindNotSupported");
	snprintf(oc->message, sizeof(oc->message),
		 "kind %s is not supported by edgesync-agent %s",
		 es_obj_kind_str(obj),
		 run->agent_version ? run->agent_version : "(unknown version)");
}

static const rc_kind_ops rc_kinds[] = {
	{ ES_KIND_COLLECTOR_CONFIG, collector_prepare, collector_outcome },
	{ ES_KIND_HEALTH_RULE, NULL, health_outcome },
	{ ES_KIND_EGRESS_POLICY, NULL, egress_outcome },
};
#define RC_NKINDS (sizeof(rc_kinds) / sizeof(rc_kinds[0]))

static const rc_kind_ops *kind_ops(es_kind kind)
{
	for (size_t i = 0; i < RC_NKINDS; i++)
		if (rc_kinds[i].kind == kind)
			return &rc_kinds[i];
	return NULL;
}

es_err es_reconcile_run(es_store *st, time_t now, const char *agent_version,
			es_collector_cfg *effective, cJSON *events,
			int *applied, int *skipped)
{
	rc_run run = { NULL, agent_version, NULL, 0,
		       { ES_COLLECT_DEFAULT_INTERVAL, ES_COLLECT_ALL }, "" };
	const rc_kind_ops *ops;
	const cJSON *obj;
	cJSON *list = NULL;
	int rewritten, n_applied = 0, n_skipped = 0;
	rc_outcome oc;
	size_t i;
	es_err rc;

	if (!st)
		return ES_ERR_INVAL;
	rc = es_store_desired_list(st, &list);
	if (rc != ES_OK)
		goto cleanup;
	run.list = list;
	for (i = 0; i < RC_NKINDS; i++) {
		if (rc_kinds[i].prepare &&
		    (rc = rc_kinds[i].prepare(&run)) != ES_OK)
			goto cleanup;
	}
	cJSON_ArrayForEach(obj, list) {
		memset(&oc, 0, sizeof(oc));
		ops = kind_ops(es_obj_kind(obj));
		if (ops)
			ops->outcome(&run, obj, &oc);
		else
			unsupported_outcome(&run, obj, &oc);
		rc = reconcile_one(st, obj, &oc, now, events, &rewritten);
		if (rc != ES_OK)
			goto cleanup;
		if (rewritten)
			n_applied++;
		else
			n_skipped++;
	}
	if (effective)
		*effective = run.eff;
cleanup:
	if (applied)
		*applied = n_applied;
	if (skipped)
		*skipped = n_skipped;
	cJSON_Delete(list);
	return rc;
}

static es_err object_status(es_store *st, const cJSON *obj, cJSON **out)
{
	const char *uid = es_obj_uid(obj);
	cJSON *o = cJSON_CreateObject(), *status = NULL, *conds = NULL;
	const cJSON *c;
	es_err rc = ES_ERR_NOMEM;

	*out = NULL;
	if (!o || !cJSON_AddStringToObject(o, "kind", es_obj_kind_str(obj)) ||
	    !cJSON_AddStringToObject(o, "name", es_obj_name(obj)) ||
	    (uid && !cJSON_AddStringToObject(o, "uid", uid)) ||
	    !es_json_add_int(o, "generation", es_obj_generation(obj)))
		goto cleanup;
	rc = status_load(st, obj, &status);
	if (rc != ES_OK)
		goto cleanup;
	rc = ES_ERR_NOMEM;
	if (!es_json_add_int(o, "observedGeneration",
			     int_member(status, "observedGeneration")))
		goto cleanup;
	c = cJSON_GetObjectItemCaseSensitive(status, "conditions");
	conds = cJSON_IsArray(c) ? cJSON_Duplicate(c, 1) : cJSON_CreateArray();
	if (!conds || !cJSON_AddItemToObject(o, "conditions", conds))
		goto cleanup;
	conds = NULL;
	*out = o;
	o = NULL;
	rc = ES_OK;
cleanup:
	cJSON_Delete(conds);
	cJSON_Delete(status);
	cJSON_Delete(o);
	return rc;
}

es_err es_reconcile_objects_status(es_store *st, cJSON **out)
{
	cJSON *list = NULL, *arr = NULL, *o = NULL;
	const cJSON *obj;
	es_err rc;

	if (!st || !out)
		return ES_ERR_INVAL;
	*out = NULL;
	rc = es_store_desired_list(st, &list);
	if (rc != ES_OK)
		goto cleanup;
	arr = cJSON_CreateArray();
	if (!arr) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	cJSON_ArrayForEach(obj, list) {
		rc = object_status(st, obj, &o);
		if (rc != ES_OK)
			goto cleanup;
		if (!cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
	}
	*out = arr;
	arr = NULL;
cleanup:
	cJSON_Delete(list);
	cJSON_Delete(arr);
	return rc;
}
