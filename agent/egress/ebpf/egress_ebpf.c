/*
 * egress_ebpf.c - the cgroup BPF backend of EgressPolicy enforcement
 * (es_egb_ebpf_ops, egress_backend.h) over the pinned programs and maps of
 * egress_kern.h: policies keep their slot in the kernel's maps, the rule
 * set is written as a plan (egress_plan.h), drift is a pin or attachment
 * gone (repaired) or an active set that is not the one this agent wrote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/ebpf/egress_kern.h"
#include "egress/egress_backend.h"
#include "egress/egress_plan.h"
#include "es_json.h"
#include "es_log.h"

/* The backend's state. */
typedef struct ebpf {
	es_egk *k;
	es_eg_plan written;  /* the rule set this agent last wrote */
	int have_written;
	int reused;          /* open reused the maps an earlier run pinned */
} ebpf;

static int ebpf_leftover(const es_egb_env *env)
{
	return es_egk_pinned(env->pin_dir);
}

static es_err ebpf_open(const es_egb_env *env, void **out, char *err,
			size_t errsz)
{
	ebpf *b = calloc(1, sizeof(*b));
	es_err rc;

	*out = NULL;
	if (!b)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	rc = es_egk_open(env->pin_dir, env->cg_root, &b->k, &b->reused, err, errsz);
	if (rc != ES_OK) {
		free(b);
		return rc;
	}
	es_log_info("egress", b->reused ? "reusing pinned enforcement" :
		    "loaded and attached", "dir", env->pin_dir, "cgroup2",
		    env->cg_root, env->cg_mounted ? "mounted" : NULL, "yes", NULL);
	*out = b;
	return ES_OK;
}

static int ebpf_adopt_slots(void *p, es_egb_slots *out)
{
	ebpf *b = p;
	es_eg_plan cur;
	char err[200];

	if (!b->reused || es_egk_read(b->k, &cur, NULL, err, sizeof(err)) != ES_OK)
		return 0;
	for (int s = 0; s < ES_EG_MAX_POLICIES; s++) {
		snprintf(out->uid[s], sizeof(out->uid[s]), "%s",
			 cur.pol[s].used ? cur.pol[s].uid : "");
		out->count[s] = es_egk_violations(b->k, s);
	}
	es_eg_plan_free(&cur);
	return 1;
}

static void ebpf_reset_violations(void *p, int slot)
{
	es_egk_violations_reset(((ebpf *)p)->k, slot);
}

static void ebpf_apply(void *p, const es_eg_input *in, size_t n, char *drift,
		       size_t driftsz, int *ok, char *err, size_t errsz)
{
	ebpf *b = p;
	es_eg_plan plan, cur;
	char what[600] = "";

	memset(&cur, 0, sizeof(cur));
	*ok = 0;
	drift[0] = '\0';
	if (es_eg_plan_build(in, n, &plan, err, errsz) != ES_OK)
		return;
	if (es_egk_repair(b->k, what, sizeof(what), err, errsz) != ES_OK)
		goto cleanup;
	if (what[0])
		snprintf(drift, driftsz, "%s", what);
	if (es_egk_read(b->k, &cur, NULL, err, errsz) != ES_OK)
		goto cleanup;
	if (b->have_written && !es_eg_plan_equal(&cur, &b->written)) {
		size_t len = strlen(drift);

		snprintf(drift + len, driftsz - len, "%srule maps edited: the kernel's "
			 "active set differs from the one the agent wrote",
			 len ? "; " : "");
	}
	if (!es_eg_plan_equal(&cur, &plan) &&
	    es_egk_write(b->k, &plan, err, errsz) != ES_OK)
		goto cleanup;
	es_eg_plan_free(&b->written);
	b->written = plan;
	memset(&plan, 0, sizeof(plan));
	b->have_written = 1;
	*ok = 1;
cleanup:
	es_eg_plan_free(&plan);
	es_eg_plan_free(&cur);
}

static uint64_t ebpf_violations(void *p, const es_eg_input *pol)
{
	return es_egk_violations(((ebpf *)p)->k, pol->slot);
}

static void ebpf_describe(const es_eg_input *p, char *where, size_t sz)
{
	(void)p;
	snprintf(where, sz, "hooks connect4, connect6, sendmsg4, sendmsg6 at the "
		 "cgroup v2 root");
}

/* The actual state of enforced policy p from the kernel's active set cur. */
static cJSON *actual_of(const ebpf *b, const es_eg_input *p,
			const es_eg_plan *cur, int set, const es_egk_attach *at)
{
	const struct es_eg_pol *kp = &cur->pol[p->slot];
	int loaded = kp->used && !strncmp(kp->uid, p->uid, sizeof(kp->uid));
	cJSON *a, *o, *rules;

	if (!(a = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(a, "backend", "ebpf") ||
	    !cJSON_AddBoolToObject(a, "loaded", loaded) ||
	    !es_json_add_int(a, "activeSet", set) ||
	    !es_json_add_int(a, "slot", p->slot))
		goto fail;
	if (loaded) {
		if (!es_json_add_int(a, "generation", (int64_t)kp->generation) ||
		    !cJSON_AddStringToObject(a, "action", kp->action == ES_EG_ACTION_ALLOW ?
					     "Allow" : "Deny") ||
		    !(rules = es_eg_plan_rules_json(cur, p->slot)) ||
		    !cJSON_AddItemToObject(a, "rules", rules) ||
		    !cJSON_AddBoolToObject(a, "nodeWide", (cur->cfg.all >> p->slot) & 1) ||
		    !es_json_add_int(a, "targetCgroups",
				     (int64_t)es_eg_plan_targets(cur, p->slot)))
			goto fail;
	}
	if (!(o = cJSON_AddObjectToObject(a, "attachments")))
		goto fail;
	for (int h = 0; h < ES_EGK_HOOKS; h++)
		if (!es_json_add_int(o, es_egk_hook_names[h], at->ours[h]))
			goto fail;
	if (!(o = cJSON_AddObjectToObject(a, "programIds")))
		goto fail;
	for (int h = 0; h < ES_EGK_HOOKS; h++)
		if (!es_json_add_int(o, es_egk_hook_names[h], at->prog_id[h]))
			goto fail;
	if (!es_json_add_int(a, "violations",
			     (int64_t)es_egk_violations(b->k, p->slot)))
		goto fail;
	return a;
fail:
	cJSON_Delete(a);
	return NULL;
}

static es_err ebpf_actual(void *p, const es_eg_input *const *pol, size_t n,
			  cJSON **out, char *err, size_t errsz)
{
	ebpf *b = p;
	es_eg_plan cur;
	es_egk_attach at;
	int set = 0;
	es_err rc;

	memset(&cur, 0, sizeof(cur));
	memset(&at, 0, sizeof(at));
	rc = es_egk_read(b->k, &cur, &set, err, errsz);
	if (rc == ES_OK)
		rc = es_egk_attachments(b->k, &at, err, errsz);
	for (size_t i = 0; rc == ES_OK && i < n; i++)
		if (pol[i] && !(out[i] = actual_of(b, pol[i], &cur, set, &at)))
			rc = ES_ERR_NOMEM;
	es_eg_plan_free(&cur);
	return rc;
}

static es_err ebpf_remove(void **p, const es_egb_env *env, char *err,
			  size_t errsz)
{
	ebpf *b = *p;
	es_err rc = es_egk_remove(b ? b->k : NULL, env->pin_dir, err, errsz);

	if (b) {
		es_eg_plan_free(&b->written);
		free(b);
	}
	*p = NULL;
	return rc;
}

static void ebpf_free(void *p)
{
	ebpf *b = p;

	if (!b)
		return;
	es_egk_close(b->k);
	es_eg_plan_free(&b->written);
	free(b);
}

const es_egress_backend_ops es_egb_ebpf_ops = {
	.name = "ebpf",
	.unavailable = "cgroup BPF unavailable",
	.unavailable_reason = "CgroupBPFUnavailable",
	.unenforced = "none",
	.removed = "no EgressPolicy remains: the cgroup programs are detached "
		   "and their pins removed",
	/* es_egk_remove removes what it can and says what it could not. */
	.remove_best_effort = 1,
	.leftover = ebpf_leftover,
	.open = ebpf_open,
	.adopt_slots = ebpf_adopt_slots,
	.reset_violations = ebpf_reset_violations,
	.apply = ebpf_apply,
	.violations = ebpf_violations,
	.describe = ebpf_describe,
	.actual = ebpf_actual,
	.remove = ebpf_remove,
	.free = ebpf_free,
};
