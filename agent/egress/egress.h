/*
 * egress.h - EgressPolicy enforcement in the agent (PROTOCOL.md
 * "EgressPolicy"): compiles the cached policies into the kernel
 * maps of bpf/egress.bpf.c (egress_kern.h), keeps the per-policy
 * conditions Enforced and Drifted in the stored status, checks the kernel
 * state on a timer and repairs drift (a pin removed, a map edited, an
 * attachment gone), reports refusals as rate-limited events, and gives the
 * actual state (the rules read back from the kernel) for the Node's
 * status.objects.
 *
 * Threading: everything runs on the agent's event-loop thread.
 */
#ifndef ES_AGENT_EGRESS_H
#define ES_AGENT_EGRESS_H

#include <time.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "store/store.h"

struct lws_context;

#define ES_EGRESS_PIN_DIR_DEFAULT "/sys/fs/bpf/edgesync/egress"
#define ES_EGRESS_EVENT_SECONDS 10  /* at most one refusal event per policy per this */

typedef struct es_egress es_egress;

/* Setting egress-backend: what enforces EgressPolicies. */
typedef enum es_egress_backend {
	ES_EGRESS_BACKEND_AUTO = 0,     /* "auto": cgroup BPF where it works,
					 * else nftables (egress_nft.h) */
	ES_EGRESS_BACKEND_EBPF = 1,     /* "ebpf": cgroup BPF only */
	ES_EGRESS_BACKEND_NFTABLES = 2, /* "nftables": nftables only */
} es_egress_backend;

typedef struct es_egress_opts {
	const char *pin_dir;     /* bpffs directory of the pins (copied) */
	const char *state_dir;   /* where a cgroup v2 hierarchy is mounted when
				    the host has none (copied) */
	const char *cgroup_root; /* setting cgroup-root (copied): the cgroup v2
				    hierarchy to use; NULL or "" = find one
				    (cgroot.h) */
	int check_interval_s;    /* seconds between drift checks, >= 1 */
	const char *node_name;   /* involvedObject of node-level events (copied) */
	es_egress_backend backend; /* setting egress-backend */
} es_egress_opts;

/* Called on the loop after a timer tick that changed a stored status or
 * produced events; events (a JSON array, borrowed) holds the events. */
typedef void (*es_egress_notify_fn)(void *user, const cJSON *events);

/* Creates the enforcer; touches no kernel state until es_egress_reconcile.
 * Errors: ES_ERR_INVAL (bad opts, e.g. an unknown backend; err names the
 * setting), ES_ERR_NOMEM. */
es_err es_egress_new(const es_egress_opts *o, es_egress **out, char *err,
		     size_t errsz);

/*
 * Brings the kernel to the EgressPolicy objects cached in st at time now:
 * loads and attaches on the first policy (reusing what an earlier run
 * pinned), writes the rule set atomically when it differs from the kernel's,
 * repairs drift, removes everything when no policy remains (also what an
 * earlier run left pinned, or its nftables table when this state directory
 * wrote it). With backend nftables (or auto without cgroup BPF) the same
 * happens to the table of egress_nft.h. Sets Enforced (True reason
 * Enforced, message naming the backend ebpf or nftables; False with reason
 * CgroupBPFUnavailable (backend ebpf), NftablesUnavailable (backend
 * nftables), EnforcementUnavailable (auto: neither works),
 * EnforcementFailed, TooManyPolicies or InvalidSpec) and Drifted on each
 * policy's stored status, and appends events to events (a JSON array, may
 * be NULL).
 * Errors: ES_ERR_DB, ES_ERR_NOMEM (kernel failures are reported in the
 * conditions, not as errors).
 */
es_err es_egress_reconcile(es_egress *e, es_store *st, time_t now,
			   cJSON *events);

/*
 * Starts a 1 s timer on ctx: refusal counters are read every tick (events
 * EgressDenied, at most one per policy per ES_EGRESS_EVENT_SECONDS), and
 * es_egress_reconcile runs every check_interval_s seconds. fn(user, events)
 * is called after a tick that changed something. Errors: ES_ERR_INVAL.
 */
es_err es_egress_start(es_egress *e, struct lws_context *ctx, es_store *st,
		       es_egress_notify_fn fn, void *user);

/*
 * Adds member "actual" to every EgressPolicy entry of objects (a Node's
 * status.objects array): {backend ("ebpf" or "none"), loaded, reason?,
 * activeSet, generation, action, rules (read back from the kernel, in the
 * spec's shape), targetCgroups, nodeWide, attachments {hook: count},
 * programIds {hook: id}, violations}; with the nftables backend the
 * members of es_egnft_actual (egress_nft.h). Returns 0, or -1 on
 * allocation failure.
 */
int es_egress_annotate(es_egress *e, cJSON *objects);

/* Stops the timer and closes the kernel objects; enforcement stays pinned.
 * Call before the lws context is destroyed. NULL-safe. */
void es_egress_free(es_egress *e);

#endif
