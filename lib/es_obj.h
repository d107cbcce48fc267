/*
 * es_obj.h - the edgesync object model (Kubernetes API conventions): kinds,
 * metadata, validation, node selectors. Objects are cJSON trees shaped as in
 * proto/PROTOCOL.md, "Objects", and proto/schemas/.
 */
#ifndef ES_OBJ_H
#define ES_OBJ_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_err.h"

#define ES_API_VERSION "edgesync.io/v1alpha1"
#define ES_API_GROUP "edgesync.io"
#define ES_NAME_MAX 253

typedef enum es_kind {
	ES_KIND_UNKNOWN = 0,
	ES_KIND_NODE = 1,
	ES_KIND_COLLECTOR_CONFIG = 2,
	ES_KIND_HEALTH_RULE = 3,
	ES_KIND_EGRESS_POLICY = 4,
} es_kind;

/* Kind name as in `kind` ("CollectorConfig"); NULL for ES_KIND_UNKNOWN. */
const char *es_obj_kind_name(es_kind kind);
/* Lower-case plural resource name used in REST paths ("collectorconfigs",
 * "healthrules", "egresspolicies", "nodes"); NULL for unknown. */
const char *es_obj_kind_plural(es_kind kind);
/* The kind whose plural resource name is exactly plural (case-sensitive,
 * as a REST path segment: "healthrules"); ES_KIND_UNKNOWN for none or NULL. */
es_kind es_obj_kind_from_plural(const char *plural);
/*
 * Resolves what a user or a path names a kind by, case-insensitively: the
 * kind ("CollectorConfig"), its singular lower-case form ("collectorconfig"),
 * its plural ("collectorconfigs"), or its short name ("cc", "hr", "ep",
 * "no"). Returns ES_KIND_UNKNOWN when none match.
 */
es_kind es_obj_kind_parse(const char *s);

/* 1 when s is an RFC 1123 DNS subdomain (lower-case alphanumerics, '-' and
 * '.', starts and ends alphanumeric, at most 253 bytes), else 0. */
int es_obj_name_valid(const char *s);

/*
 * Validates a desired object as a client submits it (before the controller
 * sets uid, generation, resourceVersion, creationTimestamp, which may be
 * absent or present). Checks apiVersion, kind (one of the desired kinds),
 * metadata.name, metadata.labels (object of strings; keys and values at most
 * 63 bytes for the name part), spec (an object), spec.nodeSelector.matchLabels
 * (object of strings), and the kind's own spec members (CollectorConfig:
 * intervalSeconds 1..3600, collectors from the known names, no duplicates;
 * HealthRule: es_health_rule_parse of es_health.h).
 * Unknown top-level spec members are refused, naming them.
 * Returns ES_OK, or ES_ERR_INVAL with err naming the field, e.g.
 * "spec.intervalSeconds: must be an integer in 1..3600".
 */
es_err es_obj_validate_desired(const cJSON *obj, char *err, size_t errsz);

/* Validates labels, an object of label key -> value strings (Kubernetes
 * label syntax), naming path in the error. Errors: ES_ERR_INVAL. */
es_err es_obj_labels_check(const cJSON *labels, const char *path, char *err,
			   size_t errsz);

/*
 * Parses labels written "k=v,k2=v2" (a flag or setting; what names it in
 * errors, "--labels") into a new JSON object of strings (*out, caller
 * owns). Kubernetes label syntax (API conventions, "Labels and
 * Selectors"): key = [prefix "/"] name, prefix an RFC 1123 DNS subdomain
 * of at most 253 characters, name and value at most 63 characters of
 * [A-Za-z0-9._-] starting and ending alphanumeric, the value possibly
 * empty. White space around items, keys and values is dropped; empty
 * items are skipped; "" and NULL give {}. Errors: ES_ERR_INVAL with err
 * naming what and the label: an item without '=' ("--labels: bad label
 * \"ab\": expected key=value"), an empty key, a bad prefix, name or
 * value (and why: too long, a bad character), a key given twice
 * ("--labels: label key \"a\" given twice (a=b, a=c)"); ES_ERR_NOMEM.
 */
es_err es_obj_labels_parse(const char *s, const char *what, cJSON **out, char *err,
			   size_t errsz);

/* Borrowed metadata accessors; NULL / 0 when absent or of another type. */
const char *es_obj_name(const cJSON *obj);
const char *es_obj_kind_str(const cJSON *obj);
es_kind es_obj_kind(const cJSON *obj);
const char *es_obj_uid(const cJSON *obj);
int64_t es_obj_generation(const cJSON *obj);
int64_t es_obj_resource_version(const cJSON *obj);

/*
 * 1 when the object's spec.nodeSelector.matchLabels is absent/empty or every
 * entry equals the value of the same key in labels (a JSON object of
 * strings, may be NULL meaning no labels); else 0.
 */
int es_obj_selects(const cJSON *obj, const cJSON *labels);

/* Collector bits for CollectorConfig.spec.collectors. */
enum {
	ES_COLLECT_CPU = 1u << 0,
	ES_COLLECT_MEMORY = 1u << 1,
	ES_COLLECT_FILESYSTEM = 1u << 2,
	ES_COLLECT_NETWORK = 1u << 3,
	ES_COLLECT_PROCESSES = 1u << 4,
	ES_COLLECT_ALL = (1u << 5) - 1,
};
#define ES_COLLECT_DEFAULT_INTERVAL 10

/* Names of the collector bits in bit order ("cpu", "memory", "filesystem",
 * "network", "processes"); index i names bit 1<<i. */
extern const char *const es_collector_names[5];

typedef struct es_collector_cfg {
	int interval_s;   /* seconds between collections, 1..3600 */
	unsigned mask;    /* ES_COLLECT_* bits */
} es_collector_cfg;

/* Parses a validated CollectorConfig spec into cfg, applying defaults
 * (interval 10 s, all collectors). Errors: ES_ERR_INVAL with err. */
es_err es_obj_collector_cfg(const cJSON *spec, es_collector_cfg *cfg,
			    char *err, size_t errsz);

/* Generates a random RFC 4122 version 4 UUID into buf (37 bytes).
 * Returns ES_OK or ES_ERR_IO when no randomness is available. */
es_err es_obj_new_uid(char buf[37]);

#endif
