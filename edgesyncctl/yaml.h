/*
 * yaml.h - YAML and JSON manifests to cJSON objects, and cJSON to YAML, for
 * edgesyncctl's `apply -f` and `-o yaml`.
 *
 * Scalars are resolved with the YAML 1.2 core schema (YAML 1.2.2, section
 * 10.3): a plain scalar that is null (`null`, `Null`, `NULL`, `~`, empty),
 * a boolean (`true`/`True`/`TRUE`, `false`/...), an integer (decimal,
 * `0o` octal, `0x` hex) or a float (decimal with fraction/exponent) takes
 * that type; every quoted or block scalar, and every other plain scalar
 * (including `.inf` and `.nan`, which JSON cannot carry), is a string.
 */
#ifndef ES_CTL_YAML_H
#define ES_CTL_YAML_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "es_err.h"

/* Largest manifest accepted by es_yaml_load (bytes). */
#define ES_YAML_MAX_INPUT (8u * 1024u * 1024u)
/* Deepest nesting of mappings and sequences accepted. */
#define ES_YAML_MAX_DEPTH 64
/* Most JSON values one manifest may expand to (bounds alias expansion). */
#define ES_YAML_MAX_NODES 1000000

/*
 * Parses a manifest of len bytes into *out, a new JSON array of objects the
 * caller frees with cJSON_Delete. Text whose first non-space character is
 * '{' or '[' is parsed as JSON with es_json_parse; anything else as a YAML
 * stream of one or more documents separated by "---". Empty documents are
 * skipped. A top-level object of kind "List" (Kubernetes `v1 List`) and a
 * top-level JSON array contribute their items instead of themselves.
 * `what` names the input in messages (a file name or "stdin").
 * Errors (*out NULL):
 *   ES_ERR_PARSE  not YAML/JSON: err gives what:line:column and the
 *                 problem ("what:3:5: mapping values are not allowed...");
 *                 also duplicate or non-scalar mapping keys, nesting over
 *                 ES_YAML_MAX_DEPTH, an integer beyond +-2^53-1.
 *   ES_ERR_INVAL  a document or list item that is not a mapping/object
 *   ES_ERR_TOOBIG more than ES_YAML_MAX_INPUT bytes or ES_YAML_MAX_NODES
 *                 values
 *   ES_ERR_NOMEM
 */
es_err es_yaml_load(const char *text, size_t len, const char *what,
		    cJSON **out, char *err, size_t errsz);

/*
 * Emits v as one block-style YAML document (no "---" marker), indented by
 * two spaces, sequences in mappings not indented (kubectl's layout); empty
 * objects and arrays as {} and []. A string is quoted when plain style
 * would change its meaning (it would resolve to another type under the core
 * schema or YAML 1.1, e.g. "true", "yes", "10", "null", or it has
 * characters plain style cannot carry). Integral numbers within +-2^53 are
 * written without a fraction; other numbers with the shortest text that
 * reads back as the same double. es_yaml_load of the result gives back a
 * tree equal to v (cJSON_Compare) when v is an object; for an object of
 * kind List, as for every document, it gives back the items instead.
 * Returns a malloc'd NUL-terminated string the caller frees, or NULL when
 * allocation fails or v holds a non-finite number (err says which).
 */
char *es_yaml_emit(const cJSON *v, char *err, size_t errsz);

#endif
