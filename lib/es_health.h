/*
 * es_health.h - HealthRule specs (proto/PROTOCOL.md, "HealthRule"): the
 * catalogue of metrics a rule may name, the operators, Go/Kubernetes
 * durations, spec parsing and validation, and reading a metric from the
 * sample of the node's state the agent collects (es_sample.h). Shared by the controller (validation at
 * apply time) and the agent (evaluation on each collection).
 */
#ifndef ES_HEALTH_H
#define ES_HEALTH_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "es_sample.h"

/* Longest conditionType a rule may set (a Kubernetes label name's bound). */
#define ES_HEALTH_TYPE_MAX 63
/* Longest `for` accepted: 8760h (one year), in milliseconds. */
#define ES_HEALTH_FOR_MAX_MS (8760LL * 3600 * 1000)

typedef enum es_health_op {
	ES_HEALTH_GT = 1, /* metric >  threshold */
	ES_HEALTH_GE = 2, /* metric >= threshold */
	ES_HEALTH_LT = 3, /* metric <  threshold */
	ES_HEALTH_LE = 4, /* metric <= threshold */
	ES_HEALTH_EQ = 5, /* metric == threshold */
	ES_HEALTH_NE = 6, /* metric != threshold */
} es_health_op;

typedef enum es_health_severity {
	ES_HEALTH_WARNING = 0,  /* default: the condition does not affect Ready */
	ES_HEALTH_CRITICAL = 1, /* the condition being True makes Ready False */
} es_health_severity;

/* One entry of the metric catalogue. */
typedef struct es_health_metric_info {
	const char *name;      /* "processes.count" */
	const char *collector; /* the collector that must run: "cpu", "memory", ... */
	const char *source;    /* the Node status member it is read from */
	const char *unit;      /* "bytes", "ratio 0..1", "count", ... */
} es_health_metric_info;

/* Number of metrics in the catalogue; indexes 0 .. count-1 are valid. */
size_t es_health_metric_count(void);
/* Catalogue entry i (static), or NULL when i is out of range. */
const es_health_metric_info *es_health_metric_at(size_t i);
/* Index of the metric called name (exact, case-sensitive), or -1. */
int es_health_metric_find(const char *name);

/* The operator's spec spelling ("Gt", "Ge", "Lt", "Le", "Eq", "Ne");
 * NULL for a value out of the enum. */
const char *es_health_op_name(es_health_op op);
/* Parses an operator spelling (exact); 0 when unknown. */
es_health_op es_health_op_parse(const char *s);
/* 1 when `value op threshold` holds, else 0 (0 for an unknown op). */
int es_health_compare(es_health_op op, double value, double threshold);

/*
 * Parses a duration as Go's time.ParseDuration and Kubernetes'
 * metav1.Duration write it: an optional sign, then one or more decimal
 * numbers, each with an optional fraction and a unit (ns, us, µs, ms, s, m,
 * h), e.g. "60s", "1.5m", "1h30m"; the lone "0" is zero. *ms gets the
 * duration in milliseconds, rounded up to a whole millisecond.
 * Errors (ES_ERR_INVAL, err says what, without a field name): empty, a
 * number without a unit, an unknown unit, "negative duration" for a
 * duration below zero, longer than ES_HEALTH_FOR_MAX_MS.
 */
es_err es_health_duration_parse(const char *s, int64_t *ms, char *err,
				size_t errsz);

/* Formats ms the Go way ("0s", "500ms", "2s", "1m30s", "1h0m0s" as "1h"
 * without zero parts: "1h", "1h30m", "2.5s") into buf; returns buf. */
char *es_health_duration_format(int64_t ms, char *buf, size_t sz);

/* A validated HealthRule spec. */
typedef struct es_health_rule {
	int metric;                 /* index into the catalogue */
	es_health_op op;
	double threshold;
	int64_t for_ms;             /* 0 when `for` is absent */
	char condition_type[ES_HEALTH_TYPE_MAX + 1];
	es_health_severity severity;
} es_health_rule;

/*
 * Parses and validates a HealthRule spec (PROTOCOL.md "HealthRule"):
 * members nodeSelector (checked by es_obj_validate_desired, ignored here),
 * metric (required, from the catalogue), operator (required), threshold
 * (required, a number), for (optional duration string, default "0s"),
 * conditionType (required, CamelCase, at most 63 characters, not "Ready"),
 * severity (optional, "Warning" (default) or "Critical"). Other members are
 * refused. out may be NULL (validation only).
 * Returns ES_OK, or ES_ERR_INVAL with err naming the field, e.g.
 * `spec.metric: unknown metric "foo"; known: cpu.utilization, ...`,
 * `spec.for: negative duration "-5s"`.
 */
es_err es_health_rule_parse(const cJSON *spec, es_health_rule *out, char *err,
			    size_t errsz);

/*
 * Reads catalogue metric `metric` from one round's sample (borrowed; see
 * es_sample.h; processes.pidUsageRatio also uses its pid_max). Each
 * catalogue entry maps the name to the es_sample field it reads, or to the
 * function that computes it from fields.
 * Returns ES_OK with *value set, ES_ERR_NOTFOUND when the value is missing
 * (why says why: its collector is not enabled or failed, the field was not
 * collected, a divisor is zero; a NULL sample has nothing collected),
 * ES_ERR_INVAL for a metric out of range.
 */
es_err es_health_metric_value(const es_sample *sample, int metric,
			      double *value, char *why, size_t whysz);

/* Formats a metric value or threshold compactly: integers as integers
 * ("104857600"), others with up to 4 significant digits ("0.1235",
 * "1.5e+20"). Returns buf. */
char *es_health_format_value(double v, char *buf, size_t sz);

/* 1 when type is one of the node conditions the agent computes itself
 * with default thresholds and that a rule may override (MemoryPressure,
 * DiskPressure, PIDPressure, NetworkUnavailable), else 0. */
int es_health_is_builtin(const char *type);

#endif
