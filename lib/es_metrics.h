/*
 * es_metrics.h - a registry of counters, gauges and histograms with labels,
 * rendered in the Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/). Both
 * programs and every collector register their metrics through it.
 *
 * Names follow the Prometheus naming guide
 * (https://prometheus.io/docs/practices/naming/): base units in the name
 * (_seconds, _bytes), counters end in _total, and quantities that
 * node_exporter or cAdvisor already export keep those exporters' names.
 *
 * Output is deterministic: families sorted by name (byte order), series of
 * a family sorted by their label values (label by label, byte order),
 * histogram buckets in increasing `le` order ending with "+Inf", then _sum
 * and _count. A family is written as "# HELP", "# TYPE" and its samples; a
 * family with no series is left out. A family without labels gets its one
 * series at registration (value 0), so it is exported from the start.
 *
 * Escaping (format 0.0.4): in label values backslash, double quote and line
 * feed become \\ \" \n; in HELP text backslash and line feed become \\ \n.
 * Bytes that are not valid UTF-8 in a label value or HELP text are written
 * as U+FFFD, since Prometheus refuses a scrape with invalid UTF-8.
 *
 * Not thread-safe: a registry belongs to the thread of its event loop.
 */
#ifndef ES_METRICS_H
#define ES_METRICS_H

#include <stddef.h>
#include "es_err.h"

/* Most labels one family may have. */
#define ES_METRICS_MAX_LABELS 8
/* Most buckets (not counting +Inf) one histogram may have. */
#define ES_METRICS_MAX_BUCKETS 32

typedef enum es_metric_type {
	ES_METRIC_COUNTER = 0,
	ES_METRIC_GAUGE = 1,
	ES_METRIC_HISTOGRAM = 2,
} es_metric_type;

typedef struct es_metrics es_metrics; /* a registry */
typedef struct es_metric es_metric;   /* one family, owned by its registry */

/*
 * Called by es_metrics_render before anything is written, in registration
 * order, so a family can be set from its source at scrape time. Returning
 * anything but ES_OK fails the render with that code.
 */
typedef es_err (*es_metrics_collect_fn)(void *user);

/* Creates an empty registry. Errors: ES_ERR_NOMEM. */
es_err es_metrics_new(es_metrics **out);

/* Frees the registry and all its families. NULL-safe. */
void es_metrics_free(es_metrics *r);

/*
 * Registers a family. name: [a-zA-Z_:][a-zA-Z0-9_:]*; help: one line of
 * text (any bytes; escaped when rendered); labels: nlabels label names,
 * each [a-zA-Z_][a-zA-Z0-9_]* and not starting with "__", no duplicates
 * (labels may be NULL when nlabels is 0). For ES_METRIC_HISTOGRAM, buckets
 * holds nbuckets finite upper bounds in strictly increasing order (+Inf is
 * implicit) and "le" is not a label name; other types take no buckets.
 * Strings are copied. *out is owned by r and valid until es_metrics_free.
 * Errors: ES_ERR_INVAL (err names the bad name, label or bucket),
 * ES_ERR_EXISTS (a family already renders a sample of the same name:
 * histograms render name_bucket, name_sum and name_count), ES_ERR_NOMEM.
 */
es_err es_metrics_add(es_metrics *r, es_metric_type type, const char *name,
		      const char *help, const char *const *labels,
		      size_t nlabels, const double *buckets, size_t nbuckets,
		      es_metric **out, char *err, size_t errsz);

/* es_metrics_add for a counter, a gauge, a histogram. */
es_err es_metrics_counter(es_metrics *r, const char *name, const char *help,
			  const char *const *labels, size_t nlabels,
			  es_metric **out, char *err, size_t errsz);
es_err es_metrics_gauge(es_metrics *r, const char *name, const char *help,
			const char *const *labels, size_t nlabels,
			es_metric **out, char *err, size_t errsz);
es_err es_metrics_histogram(es_metrics *r, const char *name, const char *help,
			    const char *const *labels, size_t nlabels,
			    const double *buckets, size_t nbuckets,
			    es_metric **out, char *err, size_t errsz);

/* Adds fn to the functions run at the start of every render. user is
 * borrowed. Errors: ES_ERR_NOMEM. */
es_err es_metrics_on_render(es_metrics *r, es_metrics_collect_fn fn, void *user);

/*
 * Series operations. values: one value per label of the family, in the
 * order of registration (NULL when the family has no labels; a NULL value
 * is ""); copied on first use, which creates the series.
 *
 * es_metric_set: a gauge to v, or a counter to v when the counter mirrors
 *   a cumulative figure kept elsewhere (v must be >= 0 and not NaN).
 * es_metric_add: a gauge by delta, or a counter by delta >= 0.
 * es_metric_observe: one observation v (not NaN) into a histogram.
 * Errors: ES_ERR_INVAL (wrong family type, a negative or NaN counter value
 * or increment, a NaN observation), ES_ERR_NOMEM (the series could not be
 * created; the family is unchanged).
 */
es_err es_metric_set(es_metric *m, const char *const *values, double v);
es_err es_metric_add(es_metric *m, const char *const *values, double delta);
es_err es_metric_observe(es_metric *m, const char *const *values, double v);

/* Removes the series with these label values (NULL for a family without
 * labels). Errors: ES_ERR_NOTFOUND. */
es_err es_metric_remove(es_metric *m, const char *const *values);

/* Removes every series of the family, so it is left out of the output
 * until a series is set again: used before refilling a family from a
 * source whose label sets come and go (mounts, interfaces, cgroups) or
 * that may stop reporting (a disabled collector). NULL-safe. */
void es_metric_clear(es_metric *m);

/*
 * Runs the render functions, then writes every family. *out: malloc'd,
 * NUL-terminated text (caller frees), *len its length without the NUL.
 * Errors: ES_ERR_NOMEM, or what a render function returned (*out is then
 * NULL).
 */
es_err es_metrics_render(es_metrics *r, char **out, size_t *len);

/*
 * Formats v as a sample value or `le` bound: "NaN", "+Inf", "-Inf", or the
 * shortest of %.15g and %.17g that reads back as v. buf needs 32 bytes.
 * Returns buf.
 */
const char *es_metrics_format_value(double v, char buf[32]);

#endif
