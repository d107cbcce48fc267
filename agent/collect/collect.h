/*
 * collect.h - the agent's /proc and /sys collectors (the `procfs` backend).
 *
 * Paths are relative to configurable roots so tests run them against
 * fixture trees (tests/fixtures/procfs/...).
 */
#ifndef ES_AGENT_COLLECT_H
#define ES_AGENT_COLLECT_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "es_sample.h"

typedef struct es_collect es_collect;

typedef struct es_collect_roots {
	const char *proc;       /* "/proc" */
	const char *sys;        /* "/sys" */
	const char *etc;        /* "/etc" (os-release, machine-id) */
	const char *mounts;     /* mount table, normally "<proc>/self/mountinfo" or "<proc>/mounts"; NULL = derive */
} es_collect_roots;

/* Creates a collector context. roots may be NULL (the real host). The
 * strings are copied. Errors: ES_ERR_NOMEM. */
es_err es_collect_new(const es_collect_roots *roots, const char *agent_version,
		      es_collect **out);
void es_collect_free(es_collect *c); /* NULL-safe */

/*
 * Collects one round into a new JSON object shaped as the Node `status`
 * members nodeInfo, capacity, usage and collectors (PROTOCOL.md "Node",
 * proto/schemas/node.json). mask (ES_COLLECT_* of es_obj.h) selects the
 * usage collectors; nodeInfo and capacity are always collected. CPU
 * utilisation is computed from the /proc/stat delta since the previous call
 * (absent on the first). A collector whose source cannot be read is
 * reported in `collectors` with `"healthy": false` and `error`, and the
 * round still succeeds. *out owned by the caller.
 * sample (may be NULL) is cleared and gets the same round as C fields
 * (es_sample.h): what usage and collectors say, and kernel.pid_max from
 * <proc>/sys/kernel/pid_max (0 when unreadable); on an error it may hold a
 * part of the round. Owned by the caller (es_sample_clear).
 * Errors: ES_ERR_NOMEM only.
 */
es_err es_collect_run(es_collect *c, unsigned mask, cJSON **out,
		      es_sample *sample);

#endif
