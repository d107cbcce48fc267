/*
 * health.h - HealthRules on the agent (PROTOCOL.md "HealthRule"): which
 * cached rules apply, and their evaluation over time into node conditions.
 *
 * A rule's condition is True once `metric operator threshold` has held on
 * every collection for at least `for`, False while it does not hold (or has
 * not held long enough yet), Unknown while the metric is missing. Among
 * valid rules setting the same conditionType, the one whose name sorts
 * first applies; the others are Superseded.
 */
#ifndef ES_AGENT_HEALTH_H
#define ES_AGENT_HEALTH_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "es_health.h"

/* Reasons of the conditions rules set (CamelCase). */
#define ES_HEALTH_REASON_MET "ThresholdMet"         /* True */
#define ES_HEALTH_REASON_PENDING "ThresholdPending" /* False: holds, not yet for `for` */
#define ES_HEALTH_REASON_NOT_MET "ThresholdNotMet"  /* False */
#define ES_HEALTH_REASON_UNAVAILABLE "MetricUnavailable" /* Unknown */

/* The Applied outcome of one HealthRule (reconcile.h). */
typedef struct es_health_applied {
	int applied;              /* 1: Applied=True */
	const char *reason;       /* "Applied", "InvalidSpec" or "Superseded" */
	const char *event_type;   /* "Normal" or "Warning" */
	const char *event_reason; /* "Applied", "ApplyFailed" or "Superseded" */
	char message[400];
} es_health_applied;

/*
 * Decides the Applied outcome of HealthRule obj (borrowed) among the cached
 * desired objects desired (a JSON array, borrowed; the other kinds are
 * ignored): InvalidSpec with the message naming the field when its spec
 * does not validate (es_health_rule_parse); Superseded, naming the winner,
 * when a valid rule of another name that sorts first sets the same
 * conditionType; else Applied, describing the rule.
 */
void es_health_applied_outcome(const cJSON *desired, const cJSON *obj,
			       es_health_applied *out);

/* One rule's condition from the last es_health_eval_run. */
typedef struct es_health_result {
	const char *type;      /* conditionType; owned by the evaluator */
	const char *status;    /* "True", "False" or "Unknown" */
	const char *reason;    /* one of ES_HEALTH_REASON_* */
	char message[256];     /* the observed value and the threshold */
	int64_t generation;    /* the rule's metadata.generation */
	int critical;          /* severity Critical */
} es_health_result;

typedef struct es_health_eval es_health_eval;

/* Creates an evaluator with no rules. Errors: ES_ERR_NOMEM. */
es_err es_health_eval_new(es_health_eval **out);
/* NULL-safe. */
void es_health_eval_free(es_health_eval *he);

/*
 * Replaces the rule set with the applied HealthRules of desired (the cached
 * desired objects, borrowed). A rule whose uid and generation are
 * unchanged keeps how long its comparison has held; a new or changed rule
 * starts afresh. Errors: ES_ERR_NOMEM (the old set is kept).
 */
es_err es_health_eval_set_rules(es_health_eval *he, const cJSON *desired);

/* Number of rules in the set. */
size_t es_health_eval_count(const es_health_eval *he);

/*
 * Evaluates every rule against one round's sample (borrowed; see
 * es_health_metric_value) at monotonic time mono_ms (milliseconds; only
 * differences matter). conds:
 * the node's current conditions (borrowed, may be NULL): a rule that has
 * just been (re)loaded, whose condition is already True and whose
 * comparison holds, stays True without waiting `for` again (so that a
 * restart of the agent does not flap it). *results (owned by the
 * evaluator, valid until the next call of a function of this module)
 * gets one result per rule, in rule order; returns their number.
 */
size_t es_health_eval_run(es_health_eval *he, const es_sample *sample,
			  int64_t mono_ms, const cJSON *conds,
			  const es_health_result **results);

/*
 * Removes from conds (a JSON array of conditions) every condition set by a
 * rule that is no longer in the set: its type is not built in
 * (es_health_is_builtin), not Ready, not the conditionType of a current
 * rule, and its reason is one of ES_HEALTH_REASON_*. Returns how many were
 * removed.
 */
size_t es_health_eval_prune(const es_health_eval *he, cJSON *conds);

#endif
