/*
 * reconcile.h - applies the cached desired objects and keeps their status
 * (docs/ARCHITECTURE.md, "Object model"): skips an object whose
 * generation equals its observedGeneration, sets an `Applied` condition
 * with Kubernetes semantics, and says so for kinds this agent does not
 * support.
 */
#ifndef ES_AGENT_RECONCILE_H
#define ES_AGENT_RECONCILE_H

#include <time.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "es_obj.h"
#include "store/store.h"

/*
 * Reconciles every desired object in the store at time now.
 * - CollectorConfig: the one whose name sorts first wins; its spec becomes
 *   *effective (defaults when no CollectorConfig targets the node:
 *   10 s, all collectors); it gets Applied=True reason Applied; the others
 *   Applied=False reason Superseded, naming the winner.
 * - HealthRule: es_health_applied_outcome (health.h): Applied=True, or
 *   Applied=False reason InvalidSpec (naming the field) or Superseded.
 * - EgressPolicy: Applied=True when es_egress_spec_validate accepts its
 *   spec (condition Enforced, set by egress.h, says what is enforced), else
 *   Applied=False reason InvalidSpec.
 * - Any other kind: Applied=False reason KindNotSupported, message naming
 *   the kind and this agent's version.
 * Each kind's decision is one entry of a table of per-kind operations in
 * reconcile.c.
 * - An object is rewritten (status put, event queued) only when its
 *   generation differs from its stored observedGeneration or its outcome
 *   changed; otherwise it is skipped and *skipped is incremented.
 * Events (PROTOCOL.md "Event body") for every status change are appended to
 * events (a JSON array owned by the caller; may be NULL).
 * *applied / *skipped (may be NULL) count objects rewritten / skipped.
 * Errors: ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err es_reconcile_run(es_store *st, time_t now, const char *agent_version,
			es_collector_cfg *effective, cJSON *events,
			int *applied, int *skipped);

/*
 * Builds the Node `status.objects` array: for each cached object its kind,
 * name, uid, generation, and stored observedGeneration and conditions.
 * *out owned by the caller. Errors: ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err es_reconcile_objects_status(es_store *st, cJSON **out);

#endif
