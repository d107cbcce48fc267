/*
 * egress_plan.c - computing and comparing EgressPolicy rule sets (see
 * egress_plan.h).
 */
#include "egress/egress_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_json.h"

static void key_of(const es_egress_cidr *c, struct es_eg_key *k)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = 8 + (__u32)c->prefix;
	k->data[0] = (__u8)(c->family == 4 ? ES_EG_FAM4 : ES_EG_FAM6);
	memcpy(&k->data[1], c->addr, c->family == 4 ? 4 : 16);
}

static void cidr_of(const struct es_eg_key *k, es_egress_cidr *c)
{
	memset(c, 0, sizeof(*c));
	c->family = (k->data[0] & 0x0f) == ES_EG_FAM4 ? 4 : 6;
	c->prefix = (int)k->prefixlen - 8;
	memcpy(c->addr, &k->data[1], c->family == 4 ? 4 : 16);
}

static int cmp_lpm(const void *a, const void *b)
{
	return memcmp(&((const es_eg_plan_lpm *)a)->key,
		      &((const es_eg_plan_lpm *)b)->key, sizeof(struct es_eg_key));
}

static int cmp_tgt(const void *a, const void *b)
{
	uint64_t x = ((const es_eg_plan_tgt *)a)->cgid;
	uint64_t y = ((const es_eg_plan_tgt *)b)->cgid;

	return x < y ? -1 : x > y;
}

void es_eg_plan_sort(es_eg_plan *p)
{
	if (p->nlpm)
		qsort(p->lpm, p->nlpm, sizeof(*p->lpm), cmp_lpm);
	if (p->ntgt)
		qsort(p->tgt, p->ntgt, sizeof(*p->tgt), cmp_tgt);
}

static es_err add_prefix(es_eg_plan *p, const es_egress_cidr *c, size_t *cap,
			 char *err, size_t errsz)
{
	struct es_eg_key k;
	size_t i;

	key_of(c, &k);
	for (i = 0; i < p->nlpm; i++)
		if (!memcmp(&p->lpm[i].key, &k, sizeof(k)))
			return ES_OK;
	if (p->nlpm >= ES_EG_LPM_MAX / 2)
		return es_errf(ES_ERR_TOOBIG, err, errsz,
			       "more than %d distinct CIDRs on this node",
			       ES_EG_LPM_MAX / 2);
	if (p->nlpm == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		es_eg_plan_lpm *g = realloc(p->lpm, ncap * sizeof(*g));

		if (!g)
			return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		p->lpm = g;
		*cap = ncap;
	}
	memset(&p->lpm[p->nlpm], 0, sizeof(p->lpm[0]));
	p->lpm[p->nlpm++].key = k;
	return ES_OK;
}

static es_err fill_prefix(es_eg_plan_lpm *l, const es_eg_input *in, size_t n,
			  char *err, size_t errsz)
{
	es_egress_cidr pc;
	char buf[64];

	cidr_of(&l->key, &pc);
	for (size_t i = 0; i < n; i++) {
		const es_egress_spec *s = in[i].spec;

		for (size_t r = 0; r < s->nrules; r++) {
			const es_egress_rule *rule = &s->rules[r];
			size_t np = rule->nports ? rule->nports : 1;

			if (!es_egress_cidr_contains(&rule->cidr, &pc))
				continue;
			for (size_t k = 0; k < np; k++) {
				struct es_eg_ent *e;

				if (l->val.n >= ES_EG_MAX_ENTRIES)
					return es_errf(ES_ERR_TOOBIG, err, errsz,
						       "%s: more than %d rule entries "
						       "(port ranges) apply to it",
						       es_egress_cidr_format(&pc, buf, sizeof(buf)),
						       ES_EG_MAX_ENTRIES);
				e = &l->val.e[l->val.n++];
				e->slot = (__u8)in[i].slot;
				e->proto = (__u8)rule->proto;
				e->own = rule->cidr.prefix == pc.prefix;
				e->port_from = rule->nports ? rule->ports[k].from : 0;
				e->port_to = rule->nports ? rule->ports[k].to : 65535;
			}
		}
	}
	return ES_OK;
}

static es_err add_targets(es_eg_plan *p, const es_eg_input *in, size_t *cap,
			  char *err, size_t errsz)
{
	for (size_t c = 0; c < in->ncgids; c++) {
		size_t i;

		for (i = 0; i < p->ntgt; i++)
			if (p->tgt[i].cgid == in->cgids[c])
				break;
		if (i == p->ntgt) {
			if (p->ntgt >= ES_EG_TGT_MAX / 2)
				return es_errf(ES_ERR_TOOBIG, err, errsz,
					       "more than %d targeted cgroups",
					       ES_EG_TGT_MAX / 2);
			if (p->ntgt == *cap) {
				size_t ncap = *cap ? *cap * 2 : 16;
				es_eg_plan_tgt *g = realloc(p->tgt, ncap * sizeof(*g));

				if (!g)
					return es_errf(ES_ERR_NOMEM, err, errsz,
						       "out of memory");
				p->tgt = g;
				*cap = ncap;
			}
			p->tgt[i].cgid = in->cgids[c];
			p->tgt[i].mask = 0;
			p->ntgt++;
		}
		p->tgt[i].mask |= 1u << in->slot;
	}
	return ES_OK;
}

es_err es_eg_plan_build(const es_eg_input *in, size_t n, es_eg_plan *out,
			char *err, size_t errsz)
{
	size_t lcap = 0, tcap = 0, i;
	es_err rc = ES_OK;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < n && rc == ES_OK; i++) {
		const es_egress_spec *s = in[i].spec;
		__u32 bit;

		if (in[i].slot < 0 || in[i].slot >= ES_EG_MAX_POLICIES ||
		    (out->pol[in[i].slot].used)) {
			rc = es_errf(ES_ERR_INVAL, err, errsz, "bad policy slot %d",
				     in[i].slot);
			break;
		}
		bit = 1u << in[i].slot;
		out->pol[in[i].slot].used = 1;
		out->pol[in[i].slot].action = s->action == ES_EGRESS_ALLOW ?
			ES_EG_ACTION_ALLOW : ES_EG_ACTION_DENY;
		out->pol[in[i].slot].generation = (__u64)in[i].generation;
		snprintf(out->pol[in[i].slot].uid, sizeof(out->pol[0].uid), "%s",
			 in[i].uid ? in[i].uid : "");
		snprintf(out->pol[in[i].slot].name, sizeof(out->pol[0].name), "%s",
			 in[i].name ? in[i].name : "");
		if (s->action == ES_EGRESS_ALLOW)
			out->cfg.allow |= bit;
		else
			out->cfg.deny |= bit;
		if (s->targets.node) {
			out->cfg.all |= bit;
		} else {
			out->cfg.targeted |= bit;
			rc = add_targets(out, &in[i], &tcap, err, errsz);
		}
		for (size_t r = 0; r < s->nrules && rc == ES_OK; r++)
			rc = add_prefix(out, &s->rules[r].cidr, &lcap, err, errsz);
	}
	for (i = 0; i < out->nlpm && rc == ES_OK; i++)
		rc = fill_prefix(&out->lpm[i], in, n, err, errsz);
	if (rc != ES_OK) {
		es_eg_plan_free(out);
		return rc;
	}
	es_eg_plan_sort(out);
	return ES_OK;
}

int es_eg_plan_equal(const es_eg_plan *a, const es_eg_plan *b)
{
	if (a->nlpm != b->nlpm || a->ntgt != b->ntgt ||
	    memcmp(&a->cfg, &b->cfg, sizeof(a->cfg)) ||
	    memcmp(a->pol, b->pol, sizeof(a->pol)))
		return 0;
	for (size_t i = 0; i < a->nlpm; i++)
		if (memcmp(&a->lpm[i], &b->lpm[i], sizeof(a->lpm[i])))
			return 0;
	for (size_t i = 0; i < a->ntgt; i++)
		if (a->tgt[i].cgid != b->tgt[i].cgid || a->tgt[i].mask != b->tgt[i].mask)
			return 0;
	return 1;
}

cJSON *es_eg_plan_rules_json(const es_eg_plan *p, int slot)
{
	cJSON *arr = cJSON_CreateArray();
	char buf[64];

	if (!arr)
		return NULL;
	for (size_t i = 0; i < p->nlpm; i++) {
		const struct es_eg_val *v = &p->lpm[i].val;
		es_egress_cidr c;

		cidr_of(&p->lpm[i].key, &c);
		for (__u32 k = 0; k < v->n && k < ES_EG_MAX_ENTRIES; k++) {
			const struct es_eg_ent *e = &v->e[k];
			cJSON *r, *ports, *pr;

			if (!e->own || e->slot != slot)
				continue;
			if (!(r = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, r) ||
			    !cJSON_AddStringToObject(r, "cidr",
						     es_egress_cidr_format(&c, buf, sizeof(buf))) ||
			    !cJSON_AddStringToObject(r, "protocol",
						     es_egress_proto_name((es_egress_proto)e->proto)))
				goto fail;
			if (e->port_from == 0 && e->port_to == 65535)
				continue;
			if (!(ports = cJSON_AddArrayToObject(r, "ports")) ||
			    !(pr = cJSON_CreateObject()) || !cJSON_AddItemToArray(ports, pr) ||
			    !es_json_add_int(pr, "from", e->port_from) ||
			    !es_json_add_int(pr, "to", e->port_to))
				goto fail;
		}
	}
	return arr;
fail:
	cJSON_Delete(arr);
	return NULL;
}

size_t es_eg_plan_targets(const es_eg_plan *p, int slot)
{
	size_t n = 0;

	for (size_t i = 0; i < p->ntgt; i++)
		if (p->tgt[i].mask & (1u << slot))
			n++;
	return n;
}

void es_eg_plan_free(es_eg_plan *p)
{
	if (!p)
		return;
	free(p->lpm);
	free(p->tgt);
	memset(p, 0, sizeof(*p));
}
