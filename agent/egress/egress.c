/*
 * egress.c - EgressPolicy enforcement in the agent (see egress.h): policy
 * slots, plans, conditions, drift repair, refusal events. The actual state
 * and freeing are in egress_view.c.
 */
#include "egress/egress.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libwebsockets.h>

#include "host/cgroot.h"
#include "egress/egress_cgroup.h"
#include "egress/egress_int.h"
#include "egress/ebpf/egress_kern.h"
#include "egress/egress_plan.h"
#include "es_cond.h"
#include "es_egress.h"
#include "es_json.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_proto.h"
#include "es_time.h"

es_err es_egress_new(const es_egress_opts *o, es_egress **out, char *err,
		     size_t errsz)
{
	es_egress *e;

	*out = NULL;
	if (!o || !o->pin_dir || !*o->pin_dir || o->pin_dir[0] != '/' ||
	    strlen(o->pin_dir) >= 400 || o->check_interval_s < 1)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "egress-pin-dir: expected an absolute path under 400 bytes");
	e = calloc(1, sizeof(*e));
	if (!e)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	snprintf(e->pin_dir, sizeof(e->pin_dir), "%s", o->pin_dir);
	snprintf(e->state_dir, sizeof(e->state_dir), "%s",
		 o->state_dir ? o->state_dir : "");
	snprintf(e->cg_conf, sizeof(e->cg_conf), "%s",
		 o->cgroup_root ? o->cgroup_root : "");
	e->check_interval_s = o->check_interval_s;
	if (o->backend != ES_EGRESS_BACKEND_AUTO &&
	    o->backend != ES_EGRESS_BACKEND_EBPF &&
	    o->backend != ES_EGRESS_BACKEND_NFTABLES) {
		free(e);
		return es_errf(ES_ERR_INVAL, err, errsz, "egress-backend: %d: "
			       "expected auto, ebpf or nftables", (int)o->backend);
	}
	e->backend = (int)o->backend;
	snprintf(e->node_name, sizeof(e->node_name), "%s",
		 o->node_name ? o->node_name : "");
	*out = e;
	return ES_OK;
}

void egress__pols_free(es_egress *e)
{
	for (size_t i = 0; i < e->npols; i++) {
		free(e->pols[i].spec);
		free(e->pols[i].cgids);
	}
	free(e->pols);
	e->pols = NULL;
	e->npols = 0;
}

static eg_pol *pol_find(es_egress *e, const char *uid, const char *name)
{
	for (size_t i = 0; i < e->npols; i++)
		if (!strcmp(e->pols[i].uid, uid ? uid : "") &&
		    !strcmp(e->pols[i].name, name ? name : ""))
			return &e->pols[i];
	return NULL;
}

/* The cached EgressPolicies as a new pols array; state (slot, counters)
 * carried over from the current one by uid. */
static es_err load_policies(es_egress *e, es_store *st, eg_pol **out,
			    size_t *nout)
{
	cJSON *list = NULL;
	const cJSON *o;
	eg_pol *p = NULL;
	size_t n = 0;
	es_err rc;

	*out = NULL;
	*nout = 0;
	rc = es_store_desired_list(st, &list);
	if (rc != ES_OK)
		return rc;
	p = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(*p));
	if (!p) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	cJSON_ArrayForEach(o, list) {
		eg_pol *np = &p[n], *old;
		char why[256];

		if (es_obj_kind(o) != ES_KIND_EGRESS_POLICY)
			continue;
		snprintf(np->uid, sizeof(np->uid), "%s", es_obj_uid(o) ? es_obj_uid(o) : "");
		snprintf(np->name, sizeof(np->name), "%s", es_obj_name(o) ? es_obj_name(o) : "");
		np->generation = es_obj_generation(o);
		np->slot = -1;
		n++;
		if (!(np->spec = calloc(1, sizeof(*np->spec)))) {
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
		if (es_egress_spec_parse(cJSON_GetObjectItemCaseSensitive(o, "spec"),
					 np->spec, why, sizeof(why)) != ES_OK) {
			free(np->spec);
			np->spec = NULL;
		}
		old = pol_find(e, np->uid, np->name);
		if (old) {
			np->slot = old->slot;
			np->reported = old->reported;
			np->last_event = old->last_event;
		}
	}
	*out = p;
	*nout = n;
	p = NULL;
cleanup:
	if (p) {
		for (size_t i = 0; i < n; i++)
			free(p[i].spec);
		free(p);
	}
	cJSON_Delete(list);
	return rc;
}

/* Gives every valid policy a slot: its own, the one the kernel holds for its
 * uid, or the lowest free one. New slots get their counter reset. */
static void assign_slots(es_egress *e)
{
	uint32_t used = 0;

	for (size_t i = 0; i < e->npols; i++) {
		eg_pol *p = &e->pols[i];

		if (!p->spec) {
			p->slot = -1;
			continue;
		}
		if (p->slot < 0)
			for (int s = 0; s < ES_EG_MAX_POLICIES; s++)
				if (!strcmp(e->slot_uid[s], p->uid) && p->uid[0]) {
					p->slot = s;
					p->reported = e->slot_count[s];
					p->last_event = e->adopted_at;
				}
		if (p->slot >= 0 && !(used & (1u << p->slot)))
			used |= 1u << p->slot;
		else
			p->slot = -1;
	}
	for (size_t i = 0; i < e->npols; i++) {
		eg_pol *p = &e->pols[i];

		if (!p->spec || p->slot >= 0)
			continue;
		for (int s = 0; s < ES_EG_MAX_POLICIES; s++) {
			if (used & (1u << s))
				continue;
			used |= 1u << s;
			p->slot = s;
			p->reported = 0;
			snprintf(e->slot_uid[s], sizeof(e->slot_uid[s]), "%s", p->uid);
			es_egk_violations_reset(e->k, s);
			break;
		}
	}
}

/* Remembers which uid holds which slot in the kernel's active set, so a
 * restarted agent keeps slots and counters. */
static void adopt_kernel_slots(es_egress *e)
{
	es_eg_plan cur;
	char err[200];

	if (es_egk_read(e->k, &cur, NULL, err, sizeof(err)) != ES_OK)
		return;
	e->adopted_at = time(NULL);
	for (int s = 0; s < ES_EG_MAX_POLICIES; s++) {
		snprintf(e->slot_uid[s], sizeof(e->slot_uid[s]), "%s",
			 cur.pol[s].used ? cur.pol[s].uid : "");
		e->slot_count[s] = es_egk_violations(e->k, s);
	}
	es_eg_plan_free(&cur);
}

static es_err add_event(cJSON *events, const char *type, const char *reason,
			const char *msg, const char *kind, const char *name,
			const char *uid, time_t now)
{
	char t[ES_TIME_RFC3339_LEN];
	cJSON *ev;

	if (!events)
		return ES_OK;
	ev = es_proto_event(type, reason, msg, kind, name, uid && *uid ? uid : NULL,
			    es_time_rfc3339(now, t));
	if (!ev || !cJSON_AddItemToArray(events, ev)) {
		cJSON_Delete(ev);
		return ES_ERR_NOMEM;
	}
	return ES_OK;
}

/* What one policy's conditions become in this pass. */
typedef struct eg_outcome {
	const char *enf_status, *enf_reason;
	char enf_msg[600];
	int drifted;            /* 1: drift found this pass */
	const char *drift_reason;
	char drift_msg[700];
} eg_outcome;

/* Writes Enforced and Drifted into p's stored status (when it exists and is
 * of p's uid); events for changes. *changed is set when it wrote. */
static es_err write_status(es_store *st, const eg_pol *p, const eg_outcome *oc,
			   time_t now, cJSON *events, int *changed)
{
	cJSON *s = NULL, *conds;
	const cJSON *uid;
	char *before = NULL, *after = NULL, msg[900];
	int ch = 0;
	es_err rc;

	rc = es_store_status_get(st, "EgressPolicy", p->name, &s);
	if (rc == ES_ERR_NOTFOUND)
		return ES_OK;
	if (rc != ES_OK)
		return rc;
	uid = cJSON_GetObjectItemCaseSensitive(s, "uid");
	conds = cJSON_GetObjectItemCaseSensitive(s, "conditions");
	if ((p->uid[0] && (!cJSON_IsString(uid) || strcmp(uid->valuestring, p->uid))) ||
	    !cJSON_IsArray(conds))
		goto cleanup;
	before = cJSON_PrintUnformatted(s);
	rc = es_cond_set(conds, "Enforced", oc->enf_status, oc->enf_reason,
			 oc->enf_msg, p->generation, now, &ch);
	if (rc != ES_OK)
		goto cleanup;
	if (ch) {
		snprintf(msg, sizeof(msg), "Enforced=%s (%s): %s", oc->enf_status,
			 oc->enf_reason, oc->enf_msg);
		rc = add_event(events, strcmp(oc->enf_status, "True") ? "Warning" : "Normal",
			       strcmp(oc->enf_status, "True") ? "NotEnforced" : "Enforced",
			       msg, "EgressPolicy", p->name, p->uid, now);
		if (rc != ES_OK)
			goto cleanup;
	}
	if (oc->drifted) {
		rc = es_cond_set(conds, "Drifted", "True", "DriftDetected",
				 oc->drift_msg, p->generation, now, NULL);
		if (rc == ES_OK)
			rc = add_event(events, "Warning", "DriftDetected", oc->drift_msg,
				       "EgressPolicy", p->name, p->uid, now);
	}
	if (rc == ES_OK && (oc->drifted || !es_cond_find(conds, "Drifted")))
		rc = es_cond_set(conds, "Drifted", oc->drifted &&
				 strcmp(oc->drift_reason, "Repaired") ? "True" : "False",
				 oc->drifted ? oc->drift_reason : "NoDrift",
				 oc->drifted ? oc->drift_msg : "the kernel state matches the policy",
				 p->generation, now, NULL);
	if (rc == ES_OK && oc->drifted && !strcmp(oc->drift_reason, "Repaired"))
		rc = add_event(events, "Normal", "EnforcementRepaired", oc->drift_msg,
			       "EgressPolicy", p->name, p->uid, now);
	if (rc != ES_OK)
		goto cleanup;
	after = cJSON_PrintUnformatted(s);
	if (!before || !after) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	if (strcmp(before, after)) {
		rc = es_store_status_put(st, "EgressPolicy", p->name, s);
		if (rc == ES_OK)
			*changed = 1;
	}
cleanup:
	free(before);
	free(after);
	cJSON_Delete(s);
	return rc;
}

static void set_all(eg_outcome *oc, const char *status, const char *reason,
		    const char *msg)
{
	oc->enf_status = status;
	oc->enf_reason = reason;
	snprintf(oc->enf_msg, sizeof(oc->enf_msg), "%s", msg);
}

/* Removes every kernel object of ours; events when something was there. */
static void teardown(es_egress *e, time_t now, cJSON *events)
{
	char err[300];

	if (es_egnft_owned(e)) {
		if (es_egnft_remove(e, err, sizeof(err)) != ES_OK)
			es_log_error("egress", "removing the nftables table", "error",
				     err, NULL);
		else
			add_event(events, "Normal", "EgressEnforcementRemoved",
				  "no EgressPolicy remains: the nftables table inet "
				  ES_EGNFT_TABLE " is deleted", "Node", e->node_name,
				  NULL, now);
	}
	if (!e->k && !es_egk_pinned(e->pin_dir))
		return;
	if (es_egk_remove(e->k, e->pin_dir, err, sizeof(err)) != ES_OK)
		es_log_error("egress", "removing enforcement", "error", err, NULL);
	e->k = NULL;
	es_eg_plan_free(&e->written);
	e->have_written = 0;
	memset(e->slot_uid, 0, sizeof(e->slot_uid));
	es_log_info("egress", "no EgressPolicy left: programs detached and unpinned",
		    "dir", e->pin_dir, NULL);
	add_event(events, "Normal", "EgressEnforcementRemoved",
		  "no EgressPolicy remains: the cgroup programs are detached and "
		  "their pins removed", "Node", e->node_name, NULL, now);
}

/* Loads the kernel side when it is not; *why set when it cannot. */
static int ensure_loaded(es_egress *e, char *why, size_t whysz)
{
	int mounted = 0, reused = 0, ok = 0;
	char err[400] = "";

	if (e->k || e->nft)
		return 1;
	if (es_cgroot_find(e->cg_conf, e->state_dir, 1, e->cg_root, sizeof(e->cg_root),
			   &mounted, err, sizeof(err)) != ES_OK)
		e->cg_root[0] = '\0';
	else if (e->backend != EG_BACKEND_NFT)
		ok = es_egk_open(e->pin_dir, e->cg_root, &e->k, &reused, err,
				 sizeof(err)) == ES_OK;
	if (!ok && e->backend != EG_BACKEND_EBPF &&
	    es_egnft_load(e, err, why, whysz) == ES_OK)
		return 1;
	if (!ok) {
		if (e->backend == EG_BACKEND_EBPF) {
			snprintf(why, whysz, "cgroup BPF unavailable (%s)", err);
			e->unavail_reason = "CgroupBPFUnavailable";
		}
		if (strcmp(e->unavailable, why))
			es_log_error("egress", "cannot enforce EgressPolicy", "error",
				     why, NULL);
		snprintf(e->unavailable, sizeof(e->unavailable), "%s", why);
		return 0;
	}
	e->unavailable[0] = '\0';
	if (es_egnft_owned(e) && es_egnft_remove(e, err, sizeof(err)) != ES_OK)
		es_log_error("egress", "removing the nftables table of an earlier run",
			     "error", err, NULL);
	es_log_info("egress", reused ? "reusing pinned enforcement" :
		    "loaded and attached", "dir", e->pin_dir, "cgroup2", e->cg_root,
		    mounted ? "mounted" : NULL, "yes", NULL);
	if (reused)
		adopt_kernel_slots(e);
	return 1;
}

es_err egress__resolve_targets(es_egress *e, char *err, size_t errsz)
{
	for (size_t i = 0; i < e->npols; i++) {
		eg_pol *p = &e->pols[i];
		es_err rc;

		if (p->slot < 0)
			continue;
		free(p->cgids);
		p->cgids = NULL;
		p->ncgids = 0;
		rc = es_egcg_resolve(e->cg_root, &p->spec->targets, &p->cgids,
				     &p->ncgids, err, errsz);
		if (rc != ES_OK)
			return rc;
	}
	return ES_OK;
}

/* Resolves targets and builds the plan of the enforced policies. */
static es_err build_plan(es_egress *e, es_eg_plan *plan, char *err, size_t errsz)
{
	es_eg_input in[ES_EG_MAX_POLICIES];
	size_t n = 0;
	es_err rc = egress__resolve_targets(e, err, errsz);

	if (rc != ES_OK)
		return rc;
	for (size_t i = 0; i < e->npols; i++) {
		eg_pol *p = &e->pols[i];

		if (p->slot < 0)
			continue;
		in[n].slot = p->slot;
		in[n].spec = p->spec;
		in[n].uid = p->uid;
		in[n].name = p->name;
		in[n].generation = p->generation;
		in[n].cgids = p->cgids;
		in[n].ncgids = p->ncgids;
		n++;
	}
	return es_eg_plan_build(in, n, plan, err, errsz);
}

/* Brings the kernel to the plan; drift (what differed from what this agent
 * wrote or pinned) described in drift. *ok 0 with err when it failed. */
static void enforce(es_egress *e, char *drift, size_t driftsz, int *ok,
		    char *err, size_t errsz)
{
	es_eg_plan plan, cur;
	char what[600] = "";

	memset(&cur, 0, sizeof(cur));
	*ok = 0;
	drift[0] = '\0';
	if (build_plan(e, &plan, err, errsz) != ES_OK)
		return;
	if (es_egk_repair(e->k, what, sizeof(what), err, errsz) != ES_OK)
		goto cleanup;
	if (what[0])
		snprintf(drift, driftsz, "%s", what);
	if (es_egk_read(e->k, &cur, NULL, err, errsz) != ES_OK)
		goto cleanup;
	if (e->have_written && !es_eg_plan_equal(&cur, &e->written)) {
		size_t n = strlen(drift);

		snprintf(drift + n, driftsz - n, "%srule maps edited: the kernel's "
			 "active set differs from the one the agent wrote",
			 n ? "; " : "");
	}
	if (!es_eg_plan_equal(&cur, &plan) &&
	    es_egk_write(e->k, &plan, err, errsz) != ES_OK)
		goto cleanup;
	es_eg_plan_free(&e->written);
	e->written = plan;
	memset(&plan, 0, sizeof(plan));
	e->have_written = 1;
	*ok = 1;
cleanup:
	es_eg_plan_free(&plan);
	es_eg_plan_free(&cur);
}

static void describe_enforced(const es_egress *e, const eg_pol *p, char *buf,
			      size_t sz)
{
	char tg[64];

	if (p->spec->targets.node)
		snprintf(tg, sizeof(tg), "whole node");
	else
		snprintf(tg, sizeof(tg), "%zu cgroup(s) targeted", p->ncgids);
	snprintf(buf, sz, "%s: %zu rule(s), action %s, %s; %s%s", e->nft ? "nftables" :
		 "ebpf", p->spec->nrules, p->spec->action == ES_EGRESS_ALLOW ?
		 "Allow" : "Deny", tg, e->nft ? "table inet " ES_EGNFT_TABLE
		 ", chain p_" : "hooks connect4, connect6, sendmsg4, sendmsg6 at "
		 "the cgroup v2 root", e->nft ? p->name : "");
}

static es_err reconcile(es_egress *e, es_store *st, time_t now, cJSON *events,
			int *changed)
{
	eg_pol *np = NULL;
	size_t nn = 0, nvalid = 0;
	char why[600] = "", drift[700] = "", err[400] = "";
	int ok = 0;
	es_err rc;

	rc = load_policies(e, st, &np, &nn);
	if (rc != ES_OK)
		return rc;
	egress__pols_free(e);
	e->pols = np;
	e->npols = nn;
	for (size_t i = 0; i < nn; i++)
		nvalid += np[i].spec != NULL;
	if (nvalid == 0) {
		teardown(e, now, events);
	} else if (ensure_loaded(e, why, sizeof(why))) {
		assign_slots(e);
		if (e->nft)
			es_egnft_enforce(e, drift, sizeof(drift), &ok, err, sizeof(err));
		else
			enforce(e, drift, sizeof(drift), &ok, err, sizeof(err));
		if (!ok)
			es_log_error("egress", "enforcing failed", "error", err, NULL);
		if (drift[0])
			es_log_warn("egress", "drift found", "what", drift,
				    "repaired", ok ? "yes" : "no", NULL);
	}
	for (size_t i = 0; i < nn && rc == ES_OK; i++) {
		eg_pol *p = &np[i];
		eg_outcome oc;

		memset(&oc, 0, sizeof(oc));
		if (!p->spec)
			set_all(&oc, "False", "InvalidSpec",
				"not enforced: the spec is invalid (see Applied)");
		else if (why[0])
			set_all(&oc, "False", e->unavail_reason, why);
		else if (p->slot < 0)
			set_all(&oc, "False", "TooManyPolicies",
				"not enforced: at most 32 EgressPolicies per node");
		else if (!ok)
			set_all(&oc, "False", "EnforcementFailed", err);
		else {
			oc.enf_status = "True";
			oc.enf_reason = "Enforced";
			describe_enforced(e, p, oc.enf_msg, sizeof(oc.enf_msg));
		}
		if (drift[0] && p->slot >= 0) {
			oc.drifted = 1;
			oc.drift_reason = ok ? "Repaired" : "RepairFailed";
			snprintf(oc.drift_msg, sizeof(oc.drift_msg), "%s: %s", drift,
				 ok ? "repaired" : err);
		}
		rc = write_status(st, p, &oc, now, events, changed);
	}
	return rc;
}

es_err es_egress_reconcile(es_egress *e, es_store *st, time_t now,
			   cJSON *events)
{
	int changed = 0;

	if (!e || !st)
		return ES_ERR_INVAL;
	return reconcile(e, st, now, events, &changed);
}

static void poll_violations(es_egress *e, time_t now, cJSON *events)
{
	if (e->nft)
		es_egnft_poll(e);
	for (size_t i = 0; (e->k || e->nft) && i < e->npols; i++) {
		eg_pol *p = &e->pols[i];
		uint64_t c;
		char msg[480];

		if (p->slot < 0)
			continue;
		c = e->nft ? es_egnft_violations(e, p->name) :
			     es_egk_violations(e->k, p->slot);
		if (c < p->reported)
			p->reported = 0;
		if (c == p->reported || now - p->last_event < ES_EGRESS_EVENT_SECONDS)
			continue;
		snprintf(msg, sizeof(msg), "%" PRIu64 " outbound connection(s) or "
			 "datagram(s) refused by EgressPolicy %s since the last report "
			 "(%" PRIu64 " in total)", c - p->reported, p->name, c);
		add_event(events, "Warning", "EgressDenied", msg, "EgressPolicy",
			  p->name, p->uid, now);
		p->reported = c;
		p->last_event = now;
	}
}

static void tick(lws_sorted_usec_list_t *sul)
{
	es_egress *e = lws_container_of(sul, es_egress, sul);
	cJSON *events = cJSON_CreateArray();
	time_t now = time(NULL);
	int changed = 0;

	if (events) {
		poll_violations(e, now, events);
		if (now >= e->next_check) {
			e->next_check = now + e->check_interval_s;
			if (reconcile(e, e->st, now, events, &changed) != ES_OK)
				es_log_error("egress", "drift check failed", NULL);
		}
		if (cJSON_GetArraySize(events) > 0 || changed)
			e->fn(e->user, events);
		cJSON_Delete(events);
	}
	lws_sul_schedule(e->ctx, 0, &e->sul, tick, LWS_US_PER_SEC);
}

es_err es_egress_start(es_egress *e, struct lws_context *ctx, es_store *st,
		       es_egress_notify_fn fn, void *user)
{
	if (!e || !ctx || !st || !fn)
		return ES_ERR_INVAL;
	e->ctx = ctx;
	e->st = st;
	e->fn = fn;
	e->user = user;
	e->next_check = time(NULL) + e->check_interval_s;
	lws_sul_schedule(ctx, 0, &e->sul, tick, LWS_US_PER_SEC);
	return ES_OK;
}
