/*
 * describe.h - `edgesyncctl describe node NAME`: a node's reported state,
 * conditions, the desired objects that target it beside what the agent
 * reported for them, and its sync state, laid out like `kubectl describe`.
 */
#ifndef ES_CTL_DESCRIBE_H
#define ES_CTL_DESCRIBE_H

#include <stdio.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "es_err.h"

/*
 * Prints node (GET nodes/NAME: a Node with status.sync) and desc (GET
 * nodes/NAME/describe, may be NULL when unavailable; desc_err then says
 * why, or NULL) to f. Sections: Name, Labels, Node Info, Capacity, Usage
 * (its title giving the age at now and the time of status.usage.timestamp,
 * "Usage (as of 12s ago, 2026-12-01T20:55:03Z):", or saying the agent did
 * not report it; CPU utilization, load, memory available, processes,
 * filesystems, interfaces), Collectors, Conditions (TYPE STATUS REASON MESSAGE
 * LAST-TRANSITION), Objects, Sync (connected, last seen, acked seq, state
 * seq, desired resource version). Absent members print as "<unknown>".
 *
 * desc is read as {objects: [entry...]} (or {items: [...]}, or a bare
 * array), each entry with kind, name, generation (desired) and
 * observedGeneration (reported), conditions (for Applied), differs (bool)
 * and differences (strings, or objects {path|field, desired, reported|actual,
 * message}); an entry may instead nest those in {desired: object, reported:
 * status}. Without desc the objects come from node.status.objects.
 * Errors: ES_ERR_NOMEM.
 */
es_err es_describe_node(FILE *f, const cJSON *node, const cJSON *desc,
			const char *desc_err, time_t now);

#endif
