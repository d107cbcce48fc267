/*
 * health.c - HealthRules on the agent: Applied outcome and evaluation over
 * time (health.h; PROTOCOL.md "HealthRule").
 */
#include "node/health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_cond.h"
#include "es_obj.h"

typedef struct hrule {
	char name[ES_NAME_MAX + 1];
	char uid[64];
	int64_t generation;
	es_health_rule rule;
	int holding;        /* the comparison held on the last evaluation */
	int64_t since_ms;   /* since when it holds (mono ms) */
	int fresh;          /* not evaluated since it was loaded */
} hrule;

struct es_health_eval {
	hrule *rules;
	size_t n;
	es_health_result *res;
};

static const cJSON *spec_of(const cJSON *obj)
{
	return cJSON_GetObjectItemCaseSensitive(obj, "spec");
}

static void describe(const es_health_rule *r, char *buf, size_t sz)
{
	char th[32], d[32];

	snprintf(buf, sz, "sets condition %s when %s %s %s for %s (severity %s)",
		 r->condition_type, es_health_metric_at((size_t)r->metric)->name,
		 es_health_op_name(r->op), es_health_format_value(r->threshold, th, sizeof(th)),
		 es_health_duration_format(r->for_ms, d, sizeof(d)),
		 r->severity == ES_HEALTH_CRITICAL ? "Critical" : "Warning");
}

void es_health_applied_outcome(const cJSON *desired, const cJSON *obj,
			       es_health_applied *out)
{
	const char *name = es_obj_name(obj);
	const cJSON *o;
	es_health_rule r, other;
	char err[320];

	memset(out, 0, sizeof(*out));
	if (es_health_rule_parse(spec_of(obj), &r, err, sizeof(err)) != ES_OK) {
		out->reason = "InvalidSpec";
		out->event_type = "Warning";
		out->event_reason = "ApplyFailed";
		snprintf(out->message, sizeof(out->message), "invalid spec: %s", err);
		return;
	}
	cJSON_ArrayForEach(o, desired) {
		const char *oname = es_obj_name(o);

		if (o == obj || es_obj_kind(o) != ES_KIND_HEALTH_RULE || !oname ||
		    !name || strcmp(oname, name) >= 0 ||
		    es_health_rule_parse(spec_of(o), &other, NULL, 0) != ES_OK ||
		    strcmp(other.condition_type, r.condition_type) != 0)
			continue;
		out->reason = "Superseded";
		out->event_type = "Normal";
		out->event_reason = "Superseded";
		snprintf(out->message, sizeof(out->message),
			 "superseded by HealthRule %s, which sets the same conditionType "
			 "%s and whose name sorts first", oname, r.condition_type);
		return;
	}
	out->applied = 1;
	out->reason = "Applied";
	out->event_type = "Normal";
	out->event_reason = "Applied";
	describe(&r, out->message, sizeof(out->message));
}

es_err es_health_eval_new(es_health_eval **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? ES_OK : ES_ERR_NOMEM;
}

void es_health_eval_free(es_health_eval *he)
{
	if (!he)
		return;
	free(he->rules);
	free(he->res);
	free(he);
}

size_t es_health_eval_count(const es_health_eval *he)
{
	return he ? he->n : 0;
}

static const hrule *find_old(const es_health_eval *he, const hrule *r)
{
	for (size_t i = 0; i < he->n; i++)
		if (strcmp(he->rules[i].name, r->name) == 0 &&
		    strcmp(he->rules[i].uid, r->uid) == 0 &&
		    he->rules[i].generation == r->generation)
			return &he->rules[i];
	return NULL;
}

es_err es_health_eval_set_rules(es_health_eval *he, const cJSON *desired)
{
	hrule *rules = NULL;
	es_health_result *res = NULL;
	const cJSON *o;
	size_t n = 0, cap = 0;
	es_health_applied ha;

	cJSON_ArrayForEach(o, desired)
		if (es_obj_kind(o) == ES_KIND_HEALTH_RULE)
			cap++;
	if (cap > 0) {
		rules = calloc(cap, sizeof(*rules));
		res = calloc(cap, sizeof(*res));
		if (!rules || !res) {
			free(rules);
			free(res);
			return ES_ERR_NOMEM;
		}
	}
	cJSON_ArrayForEach(o, desired) {
		hrule *r = &rules[n];
		const hrule *old;

		if (es_obj_kind(o) != ES_KIND_HEALTH_RULE)
			continue;
		es_health_applied_outcome(desired, o, &ha);
		if (!ha.applied || !es_obj_name(o) ||
		    es_health_rule_parse(spec_of(o), &r->rule, NULL, 0) != ES_OK)
			continue;
		snprintf(r->name, sizeof(r->name), "%s", es_obj_name(o));
		snprintf(r->uid, sizeof(r->uid), "%s", es_obj_uid(o) ? es_obj_uid(o) : "");
		r->generation = es_obj_generation(o);
		old = find_old(he, r);
		if (old) {
			r->holding = old->holding;
			r->since_ms = old->since_ms;
			r->fresh = old->fresh;
		} else {
			r->fresh = 1;
		}
		n++;
	}
	free(he->rules);
	free(he->res);
	he->rules = rules;
	he->res = res;
	he->n = n;
	return ES_OK;
}

static int cond_is_true(const cJSON *conds, const char *type)
{
	const cJSON *c = es_cond_find(conds, type);
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "status");

	return cJSON_IsString(s) && s->valuestring && strcmp(s->valuestring, "True") == 0;
}

/* Evaluates one rule into res. */
static void eval_one(hrule *h, const es_sample *sample, int64_t mono_ms,
		     const cJSON *conds, es_health_result *res)
{
	const es_health_rule *r = &h->rule;
	const char *mname = es_health_metric_at((size_t)r->metric)->name;
	const char *op = es_health_op_name(r->op);
	char why[200], val[32], th[32], held[32], dur[32];
	double v = 0;
	int64_t held_ms;

	res->type = r->condition_type;
	res->generation = h->generation;
	res->critical = r->severity == ES_HEALTH_CRITICAL;
	if (es_health_metric_value(sample, r->metric, &v, why, sizeof(why)) != ES_OK) {
		h->holding = 0;
		h->fresh = 0;
		res->status = "Unknown";
		res->reason = ES_HEALTH_REASON_UNAVAILABLE;
		snprintf(res->message, sizeof(res->message), "%s unavailable: %s", mname, why);
		return;
	}
	es_health_format_value(v, val, sizeof(val));
	es_health_format_value(r->threshold, th, sizeof(th));
	es_health_duration_format(r->for_ms, dur, sizeof(dur));
	if (!es_health_compare(r->op, v, r->threshold)) {
		h->holding = 0;
		h->fresh = 0;
		res->status = "False";
		res->reason = ES_HEALTH_REASON_NOT_MET;
		snprintf(res->message, sizeof(res->message), "%s is %s, not %s %s",
			 mname, val, op, th);
		return;
	}
	if (!h->holding) {
		h->holding = 1;
		h->since_ms = mono_ms;
		if (h->fresh && cond_is_true(conds, r->condition_type))
			h->since_ms = mono_ms - r->for_ms;
	}
	h->fresh = 0;
	held_ms = mono_ms - h->since_ms;
	es_health_duration_format(held_ms, held, sizeof(held));
	if (held_ms >= r->for_ms) {
		res->status = "True";
		res->reason = ES_HEALTH_REASON_MET;
		snprintf(res->message, sizeof(res->message), "%s is %s, %s %s for %s "
			 "(rule: for %s)", mname, val, op, th, held, dur);
	} else {
		res->status = "False";
		res->reason = ES_HEALTH_REASON_PENDING;
		snprintf(res->message, sizeof(res->message), "%s is %s, %s %s for %s, "
			 "not yet for %s", mname, val, op, th, held, dur);
	}
}

size_t es_health_eval_run(es_health_eval *he, const es_sample *sample,
			  int64_t mono_ms, const cJSON *conds,
			  const es_health_result **results)
{
	*results = he ? he->res : NULL;
	if (!he)
		return 0;
	for (size_t i = 0; i < he->n; i++)
		eval_one(&he->rules[i], sample, mono_ms, conds, &he->res[i]);
	return he->n;
}

static int is_rule_reason(const char *s)
{
	return s && (strcmp(s, ES_HEALTH_REASON_MET) == 0 ||
		     strcmp(s, ES_HEALTH_REASON_PENDING) == 0 ||
		     strcmp(s, ES_HEALTH_REASON_NOT_MET) == 0 ||
		     strcmp(s, ES_HEALTH_REASON_UNAVAILABLE) == 0);
}

size_t es_health_eval_prune(const es_health_eval *he, cJSON *conds)
{
	cJSON *c = conds ? conds->child : NULL, *next;
	size_t removed = 0;

	for (; c; c = next) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(c, "reason");
		const char *type = cJSON_IsString(t) ? t->valuestring : NULL;
		int current = 0;

		next = c->next;
		if (!type || es_health_is_builtin(type) || strcmp(type, "Ready") == 0 ||
		    !cJSON_IsString(r) || !is_rule_reason(r->valuestring))
			continue;
		for (size_t i = 0; he && i < he->n && !current; i++)
			current = strcmp(he->rules[i].rule.condition_type, type) == 0;
		if (current)
			continue;
		cJSON_Delete(cJSON_DetachItemViaPointer(conds, c));
		removed++;
	}
	return removed;
}
