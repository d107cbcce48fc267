/*
 * egress.c - EgressPolicy enforcement in the agent (see egress.h): policy
 * slots, the choice of backend (egress_backend.h), conditions, drift
 * repair, refusal events. The actual state and freeing are in
 * egress_view.c.
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
#include "egress/egress_plan.h"
#include "es_cond.h"
#include "es_egress.h"
#include "es_json.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_proto.h"
#include "es_time.h"

/* The backends, in the order egress-backend auto tries them. */
static const es_egress_backend_ops *const backends[] = {
	&es_egb_ebpf_ops, &es_egb_nft_ops,
};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

/* The backend each egress-backend value names; NULL for auto. */
static const es_egress_backend_ops *const by_setting[] = {
	[ES_EGRESS_BACKEND_AUTO] = NULL,
	[ES_EGRESS_BACKEND_EBPF] = &es_egb_ebpf_ops,
	[ES_EGRESS_BACKEND_NFTABLES] = &es_egb_nft_ops,
};
#define NSETTINGS (sizeof(by_setting) / sizeof(by_setting[0]))

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
	if ((unsigned)o->backend >= NSETTINGS) {
		free(e);
		return es_errf(ES_ERR_INVAL, err, errsz, "egress-backend: %d: "
			       "expected auto, ebpf or nftables", (int)o->backend);
	}
	e->only = by_setting[o->backend];
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

void egress__pol_input(const eg_pol *p, es_eg_input *in)
{
	in->slot = p->slot;
	in->spec = p->spec;
	in->uid = p->uid;
	in->name = p->name;
	in->generation = p->generation;
	in->cgids = p->cgids;
	in->ncgids = p->ncgids;
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
			if (e->ops->reset_violations)
				e->ops->reset_violations(e->b, s);
			break;
		}
	}
}

/* Remembers which uid holds which slot in the kernel, so a restarted agent
 * keeps slots and counters (backends with slots: adopt_slots). */
static void adopt_kernel_slots(es_egress *e)
{
	es_egb_slots sl;

	if (!e->ops->adopt_slots || !e->ops->adopt_slots(e->b, &sl))
		return;
	e->adopted_at = time(NULL);
	for (int s = 0; s < ES_EG_MAX_POLICIES; s++) {
		snprintf(e->slot_uid[s], sizeof(e->slot_uid[s]), "%s", sl.uid[s]);
		e->slot_count[s] = sl.count[s];
	}
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

/* What the backends are told about this host (egress_backend.h). */
static void env_of(const es_egress *e, es_egb_env *env)
{
	memset(env, 0, sizeof(*env));
	env->pin_dir = e->pin_dir;
	env->state_dir = e->state_dir;
	env->cg_root = e->cg_root;
	env->forced = e->only != NULL;
	env->prior = "";
}

/* Removes every kernel object of every backend (the loaded one's and what
 * earlier runs left); events for what was there. */
static void teardown(es_egress *e, time_t now, cJSON *events)
{
	es_egb_env env;

	env_of(e, &env);
	for (size_t i = 0; i < NBACKENDS; i++) {
		const es_egress_backend_ops *o = backends[i];
		void *none = NULL, **b = o == e->ops ? &e->b : &none;
		char err[300];
		es_err rc;

		if (!*b && !o->leftover(&env))
			continue;
		rc = o->remove(b, &env, err, sizeof(err));
		if (rc != ES_OK)
			es_log_error("egress", "removing enforcement", "backend",
				     o->name, "error", err, NULL);
		if (o == e->ops && !e->b)
			e->ops = NULL;
		/* The slots were this backend's. */
		if (o->adopt_slots)
			memset(e->slot_uid, 0, sizeof(e->slot_uid));
		if (rc != ES_OK && !o->remove_best_effort)
			continue;
		es_log_info("egress", o->removed, "backend", o->name, NULL);
		add_event(events, "Normal", "EgressEnforcementRemoved", o->removed,
			  "Node", e->node_name, NULL, now);
	}
}

/* Loads a backend when none is: the one egress-backend names, or the
 * first of backends[] that loads; removes the other backends' leftovers.
 * Returns 1 when one is loaded, else 0 with why set. */
static int ensure_loaded(es_egress *e, char *why, size_t whysz)
{
	const es_egress_backend_ops *tried[NBACKENDS];
	char errs[NBACKENDS][400], cgerr[400] = "";
	size_t n = 0, off;
	int mounted = 0;
	es_egb_env env;

	if (e->ops)
		return 1;
	if (es_cgroot_find(e->cg_conf, e->state_dir, 1, e->cg_root, sizeof(e->cg_root),
			   &mounted, cgerr, sizeof(cgerr)) != ES_OK)
		e->cg_root[0] = '\0';
	env_of(e, &env);
	env.cg_mounted = mounted;
	for (size_t i = 0; i < NBACKENDS && !e->ops; i++) {
		const es_egress_backend_ops *o = backends[i];

		if (e->only && e->only != o)
			continue;
		env.prior = n ? errs[n - 1] : "";
		snprintf(errs[n], sizeof(errs[n]), "%s", cgerr);
		if (e->cg_root[0] && o->open(&env, &e->b, errs[n],
					     sizeof(errs[n])) == ES_OK)
			e->ops = o;
		tried[n++] = o;
	}
	if (!e->ops) {
		e->unavail_reason = n == 1 ? tried[0]->unavailable_reason :
			"EnforcementUnavailable";
		off = n == 1 ? 0 : (size_t)snprintf(why, whysz, "no enforcement backend: ");
		for (size_t i = 0; i < n && off < whysz; i++)
			off += (size_t)snprintf(why + off, whysz - off, "%s%s (%s)",
						i ? "; " : "", tried[i]->unavailable,
						errs[i]);
		if (strcmp(e->unavailable, why))
			es_log_error("egress", "cannot enforce EgressPolicy", "error",
				     why, NULL);
		snprintf(e->unavailable, sizeof(e->unavailable), "%s", why);
		return 0;
	}
	e->unavailable[0] = '\0';
	e->adopt_owed = e->ops->adopt_counts != NULL;
	env.prior = "";
	for (size_t i = 0; i < NBACKENDS; i++) {
		const es_egress_backend_ops *o = backends[i];
		void *none = NULL;
		char err[400];

		if (o != e->ops && o->leftover(&env) &&
		    o->remove(&none, &env, err, sizeof(err)) != ES_OK)
			es_log_error("egress", "removing the enforcement of an earlier run",
				     "backend", o->name, "error", err, NULL);
	}
	adopt_kernel_slots(e);
	return 1;
}

/* Resolves the targets of every enforced policy (slot >= 0) to cgroup ids
 * anew (each policy's cgids/ncgids; agent/egress/egress_cgroup.h).
 * Errors: as es_egcg_resolve. */
static es_err resolve_targets(es_egress *e, char *err, size_t errsz)
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

/* Resolves targets; in[0..*n) (ES_EG_MAX_POLICIES room) get the enforced
 * policies, owner[] the policy of each. */
static es_err build_inputs(es_egress *e, es_eg_input *in, eg_pol **owner,
			   size_t *n, char *err, size_t errsz)
{
	es_err rc = resolve_targets(e, err, errsz);

	*n = 0;
	if (rc != ES_OK)
		return rc;
	for (size_t i = 0; i < e->npols; i++) {
		if (e->pols[i].slot < 0)
			continue;
		egress__pol_input(&e->pols[i], &in[*n]);
		owner[(*n)++] = &e->pols[i];
	}
	return ES_OK;
}

/* After loading: the refusals an earlier run counted count as reported
 * (backends without slots: adopt_counts). */
static void adopt_counts(es_egress *e, const es_eg_input *in, eg_pol **owner,
			 size_t n)
{
	uint64_t count[ES_EG_MAX_POLICIES];
	time_t now = time(NULL);
	char err[300];

	if (e->ops->adopt_counts(e->b, in, n, count, err, sizeof(err)) != ES_OK)
		return;
	e->adopt_owed = 0;
	for (size_t i = 0; i < n; i++) {
		if (count[i] == ES_EGB_NOT_HELD)
			continue;
		owner[i]->reported = count[i];
		owner[i]->last_event = now;
	}
}

/* Brings the kernel to the enforced policies through the backend; drift
 * (what differed from what it wrote or attached) described in drift. *ok
 * 0 with err when it failed. */
static void enforce(es_egress *e, char *drift, size_t driftsz, int *ok,
		    char *err, size_t errsz)
{
	es_eg_input in[ES_EG_MAX_POLICIES];
	eg_pol *owner[ES_EG_MAX_POLICIES];
	size_t n = 0;

	*ok = 0;
	drift[0] = '\0';
	if (build_inputs(e, in, owner, &n, err, errsz) != ES_OK)
		return;
	if (e->adopt_owed)
		adopt_counts(e, in, owner, n);
	e->ops->apply(e->b, in, n, drift, driftsz, ok, err, errsz);
}

static void describe_enforced(const es_egress *e, const eg_pol *p, char *buf,
			      size_t sz)
{
	char tg[64], where[320];
	es_eg_input in;

	if (p->spec->targets.node)
		snprintf(tg, sizeof(tg), "whole node");
	else
		snprintf(tg, sizeof(tg), "%zu cgroup(s) targeted", p->ncgids);
	egress__pol_input(p, &in);
	e->ops->describe(&in, where, sizeof(where));
	snprintf(buf, sz, "%s: %zu rule(s), action %s, %s; %s", e->ops->name,
		 p->spec->nrules, p->spec->action == ES_EGRESS_ALLOW ? "Allow" :
		 "Deny", tg, where);
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
	if (!e->ops)
		return;
	if (e->ops->poll)
		e->ops->poll(e->b);
	for (size_t i = 0; i < e->npols; i++) {
		eg_pol *p = &e->pols[i];
		es_eg_input in;
		uint64_t c;
		char msg[480];

		if (p->slot < 0)
			continue;
		egress__pol_input(p, &in);
		c = e->ops->violations(e->b, &in);
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
