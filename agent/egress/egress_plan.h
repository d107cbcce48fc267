/*
 * egress_plan.h - one rule set of the EgressPolicy maps (bpf/egress.h),
 * computed in user space from the policies, or read back from the kernel.
 * Keys carry no set number here (data[0] is the family only): a plan can be
 * compared with what the kernel holds in either set.
 */
#ifndef ES_AGENT_EGRESS_PLAN_H
#define ES_AGENT_EGRESS_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include <cjson/cJSON.h>
/* bpf/egress.h (the map layout); agent/egress/egress.h is the enforcer's API. */
#include "bpf/egress.h"
#include "es_egress.h"
#include "es_err.h"

typedef struct es_eg_plan_lpm {
	struct es_eg_key key;
	struct es_eg_val val;
} es_eg_plan_lpm;

typedef struct es_eg_plan_tgt {
	uint64_t cgid;
	uint32_t mask;
} es_eg_plan_tgt;

typedef struct es_eg_plan {
	es_eg_plan_lpm *lpm;   /* sorted by key */
	size_t nlpm;
	es_eg_plan_tgt *tgt;   /* sorted by cgid */
	size_t ntgt;
	struct es_eg_cfg cfg;
	struct es_eg_pol pol[ES_EG_MAX_POLICIES];
} es_eg_plan;

/* One policy as the plan builder takes it (all borrowed). */
typedef struct es_eg_input {
	int slot;                 /* 0..ES_EG_MAX_POLICIES-1, distinct */
	const es_egress_spec *spec;
	const char *uid, *name;
	int64_t generation;
	const uint64_t *cgids;    /* cgroups its targets selected */
	size_t ncgids;
} es_eg_input;

/*
 * Builds the plan of n policies into *out (zeroed first; free with
 * es_eg_plan_free). For each distinct rule CIDR it stores one prefix whose
 * value lists the (slot, protocol, port range) entries of every rule whose
 * CIDR contains it (own = 1 for the prefix's own rules); a rule without
 * ports gets the range 0-65535. Errors: ES_ERR_TOOBIG (a prefix collects
 * more than ES_EG_MAX_ENTRIES entries, or more than ES_EG_LPM_MAX / 2
 * prefixes or ES_EG_TGT_MAX / 2 cgroups; err names it), ES_ERR_INVAL (bad
 * slot), ES_ERR_NOMEM.
 */
es_err es_eg_plan_build(const es_eg_input *in, size_t n, es_eg_plan *out,
			char *err, size_t errsz);

/* Sorts lpm and tgt into the canonical order (after reading them back). */
void es_eg_plan_sort(es_eg_plan *p);

/* 1 when a and b (both sorted) hold the same set, else 0. */
int es_eg_plan_equal(const es_eg_plan *a, const es_eg_plan *b);

/*
 * The rules of slot as a JSON array in the spec's shape ([{cidr, protocol,
 * ports: [{from, to}]}], one port range per rule; no ports for 0-65535),
 * from the entries with own = 1. NULL on allocation failure.
 */
cJSON *es_eg_plan_rules_json(const es_eg_plan *p, int slot);

/* Number of targeted cgroups whose mask holds slot. */
size_t es_eg_plan_targets(const es_eg_plan *p, int slot);

/* Frees the arrays of p and zeroes it. NULL-safe. */
void es_eg_plan_free(es_eg_plan *p);

#endif
