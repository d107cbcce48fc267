/*
 * print.h - edgesyncctl's output: kubectl-style tables for `get`, JSON and
 * YAML output, and the small formatters (ages, byte sizes) describe.c uses.
 */
#ifndef ES_CTL_PRINT_H
#define ES_CTL_PRINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "es_err.h"

typedef enum es_print_fmt {
	ES_PRINT_TABLE = 0,
	ES_PRINT_WIDE = 1,
	ES_PRINT_JSON = 2,
	ES_PRINT_YAML = 3,
} es_print_fmt;

/* Parses the value of -o ("json", "yaml", "wide"). Returns 0 and sets *out,
 * or -1 when s is none of them. */
int es_print_fmt_parse(const char *s, es_print_fmt *out);

/*
 * Formats a duration of seconds as kubectl does for AGE: "45s" under two
 * minutes, "5m30s" under ten minutes, "42m" under three hours, "3h20m"
 * under eight hours, "30h" under two days, "3d4h" under eight days, "120d"
 * under two years, "2y30d" under eight years, then "9y". Negative durations
 * (clock skew) print as "0s". Returns buf (at least 16 bytes).
 */
char *es_print_age(int64_t seconds, char *buf, size_t bufsz);

/* Age of an RFC 3339 time at now into buf; "<unknown>" when ts is NULL or
 * not RFC 3339. Returns buf. */
char *es_print_age_of(const char *ts, time_t now, char *buf, size_t bufsz);

/* Formats a byte count with binary units as Kubernetes quantities do: "512",
 * "1.5Ki", "15.6Gi" (one decimal, dropped when it is 0). Returns buf. */
char *es_print_bytes(double bytes, char *buf, size_t bufsz);

/* A table of string cells printed with columns padded to their widest cell
 * plus three spaces (kubectl's layout). */
typedef struct es_print_table es_print_table;

/* New table of ncols (1..32) columns; NULL on allocation failure. */
es_print_table *es_print_table_new(int ncols);
/* Appends a row of ncols cells (copied; a NULL cell prints as "<none>").
 * Errors: ES_ERR_NOMEM. */
es_err es_print_table_add(es_print_table *t, const char *const *cells);
/* Writes every row, each line starting with indent (may be NULL). */
void es_print_table_write(const es_print_table *t, FILE *f, const char *indent);
void es_print_table_free(es_print_table *t); /* NULL-safe */

/* "True" -> "Ready", "False" -> "NotReady", else "Unknown", from the Ready
 * condition of node's status.conditions. */
const char *es_print_node_ready(const cJSON *node);

/*
 * Prints nodes as a table. v is a NodeList ({items: [...]}), an array of
 * Node objects, or one Node. Columns: NAME STATUS CONNECTED AGE VERSION;
 * wide adds KERNEL-VERSION OS-IMAGE CPU MEMORY LAST-SEEN. now is the
 * reference time for ages. With no nodes prints "No resources found." to
 * f. Errors: ES_ERR_NOMEM.
 */
es_err es_print_nodes(FILE *f, const cJSON *v, int wide, time_t now);

/*
 * Prints desired objects (a List, an array, or one object) as a table:
 * NAME GENERATION AGE; wide adds SELECTOR (spec.nodeSelector.matchLabels as
 * "k=v,k2=v2", "<none>" when empty). Errors: ES_ERR_NOMEM.
 */
es_err es_print_objects(FILE *f, const cJSON *v, int wide, time_t now);

/*
 * Prints v as indented JSON (four spaces per level) or YAML (es_yaml_emit),
 * followed by a newline. Errors: ES_ERR_NOMEM, ES_ERR_INVAL (a number YAML
 * cannot carry; err says so).
 */
es_err es_print_value(FILE *f, const cJSON *v, es_print_fmt fmt, char *err,
		      size_t errsz);

/*
 * Prints an error response of the admin API to f the way kubectl does, one
 * line: "Error from server (REASON): MESSAGE" from a Kubernetes Status body
 * (reason and message members; "Error from server: MESSAGE" without a
 * reason), e.g. `Error from server (NotFound): collectorconfigs "x" not
 * found`. A body that is not a Status gives "Error from server (HTTP
 * STATUS): what: not an answer of the edgesync admin API (is the server
 * URL the controller's admin-listen address?): BODY" with at most 400
 * bytes of the body, control characters as spaces (no ": BODY" when
 * empty). body may be NULL; what names the request's object.
 */
void es_print_server_error(FILE *f, const char *what, int status,
			   const char *body, size_t len);

/*
 * Writes a filesystem's use as df(1) computes it (GNU coreutils df, "Use%"):
 * used = size - free, percent = used / (used + avail), rounded up, so
 * blocks reserved for root count neither as used nor as available. Sizes
 * are bytes (JSON numbers, 0..2^53). Writes "-" when used + avail is 0 and
 * "<unknown>" when a size is missing, negative, not whole or free exceeds
 * size. Returns buf.
 */
const char *es_print_fs_use(const cJSON *size, const cJSON *avail,
			    const cJSON *free_bytes, char *buf, size_t bufsz);

#endif
