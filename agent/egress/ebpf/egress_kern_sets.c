/*
 * egress_kern_sets.c - the EgressPolicy rule sets in the kernel maps:
 * writing the inactive set and switching, reading the active set back,
 * refusal counters (egress_kern.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "egress/ebpf/egress_kern_int.h"

static void grace(es_egk *k)
{
	struct timespec now, left;
	long long ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = (now.tv_sec - k->last_switch.tv_sec) * 1000000000LL +
	     (now.tv_nsec - k->last_switch.tv_nsec);
	if (ns >= 1000000000LL || ns < 0)
		return;
	ns = 1000000000LL - ns;
	left.tv_sec = (time_t)(ns / 1000000000LL);
	left.tv_nsec = (long)(ns % 1000000000LL);
	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
}

static es_err active_set(es_egk *k, __u32 *set, char *err, size_t errsz)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(k->maps[MAP_ACTIVE]), &zero, set) != 0)
		return es_errf(ES_ERR_IO, err, errsz, "cannot read eg_active: %s",
			       strerror(errno));
	*set &= 1;
	return ES_OK;
}

/* Deletes every key of set s from the LPM and target maps. */
static es_err clear_set(es_egk *k, __u32 s, char *err, size_t errsz)
{
	int lfd = bpf_map__fd(k->maps[MAP_LPM]);
	int tfd = bpf_map__fd(k->maps[MAP_TGT]);
	struct es_eg_key lk, *lkeys = NULL;
	struct es_eg_tkey tk, *tkeys = NULL;
	size_t nl = 0, nt = 0;
	es_err rc = ES_OK;

	lkeys = calloc(ES_EG_LPM_MAX, sizeof(*lkeys));
	tkeys = calloc(ES_EG_TGT_MAX, sizeof(*tkeys));
	if (!lkeys || !tkeys) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	for (int r = bpf_map_get_next_key(lfd, NULL, &lk); r == 0 && nl < ES_EG_LPM_MAX;
	     r = bpf_map_get_next_key(lfd, &lk, &lk))
		if ((__u32)(lk.data[0] >> 4) == s)
			lkeys[nl++] = lk;
	for (int r = bpf_map_get_next_key(tfd, NULL, &tk); r == 0 && nt < ES_EG_TGT_MAX;
	     r = bpf_map_get_next_key(tfd, &tk, &tk))
		if (tk.set == s)
			tkeys[nt++] = tk;
	for (size_t i = 0; i < nl; i++)
		if (bpf_map_delete_elem(lfd, &lkeys[i]) != 0 && errno != ENOENT) {
			rc = es_errf(ES_ERR_IO, err, errsz, "eg_lpm delete: %s",
				     strerror(errno));
			goto cleanup;
		}
	for (size_t i = 0; i < nt; i++)
		if (bpf_map_delete_elem(tfd, &tkeys[i]) != 0 && errno != ENOENT) {
			rc = es_errf(ES_ERR_IO, err, errsz, "eg_tgt delete: %s",
				     strerror(errno));
			goto cleanup;
		}
cleanup:
	free(lkeys);
	free(tkeys);
	return rc;
}

es_err es_egk_write(es_egk *k, const es_eg_plan *plan, char *err, size_t errsz)
{
	__u32 cur, s, zero = 0, idx;
	es_err rc;

	rc = active_set(k, &cur, err, errsz);
	if (rc != ES_OK)
		return rc;
	s = cur ^ 1;
	grace(k);
	rc = clear_set(k, s, err, errsz);
	if (rc != ES_OK)
		return rc;
	for (size_t i = 0; i < plan->nlpm; i++) {
		struct es_eg_key key = plan->lpm[i].key;

		key.data[0] = (__u8)(s << 4 | (key.data[0] & 0x0f));
		if (bpf_map_update_elem(bpf_map__fd(k->maps[MAP_LPM]), &key,
					&plan->lpm[i].val, BPF_ANY) != 0)
			return es_errf(ES_ERR_IO, err, errsz, "eg_lpm update: %s",
				       strerror(errno));
	}
	for (size_t i = 0; i < plan->ntgt; i++) {
		struct es_eg_tkey tk;

		memset(&tk, 0, sizeof(tk));
		tk.cgid = plan->tgt[i].cgid;
		tk.set = s;
		if (bpf_map_update_elem(bpf_map__fd(k->maps[MAP_TGT]), &tk,
					&plan->tgt[i].mask, BPF_ANY) != 0)
			return es_errf(ES_ERR_IO, err, errsz, "eg_tgt update: %s",
				       strerror(errno));
	}
	for (int i = 0; i < ES_EG_MAX_POLICIES; i++) {
		idx = s * ES_EG_MAX_POLICIES + (__u32)i;
		if (bpf_map_update_elem(bpf_map__fd(k->maps[MAP_POL]), &idx,
					&plan->pol[i], BPF_ANY) != 0)
			return es_errf(ES_ERR_IO, err, errsz, "eg_pol update: %s",
				       strerror(errno));
	}
	if (bpf_map_update_elem(bpf_map__fd(k->maps[MAP_CFG]), &s, &plan->cfg,
				BPF_ANY) != 0)
		return es_errf(ES_ERR_IO, err, errsz, "eg_cfg update: %s",
			       strerror(errno));
	if (bpf_map_update_elem(bpf_map__fd(k->maps[MAP_ACTIVE]), &zero, &s,
				BPF_ANY) != 0)
		return es_errf(ES_ERR_IO, err, errsz, "eg_active update: %s",
			       strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &k->last_switch);
	return ES_OK;
}

/* Makes room for one more element of size sz in *arr (n used, *cap
 * allocated). Returns 0, or -1 on allocation failure (*arr unchanged). */
static int grow(void **arr, size_t n, size_t *cap, size_t sz)
{
	void *g;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	g = realloc(*arr, ncap * sz);
	if (!g)
		return -1;
	*arr = g;
	*cap = ncap;
	return 0;
}

es_err es_egk_read(es_egk *k, es_eg_plan *out, int *set, char *err,
		   size_t errsz)
{
	int lfd = bpf_map__fd(k->maps[MAP_LPM]);
	int tfd = bpf_map__fd(k->maps[MAP_TGT]);
	struct es_eg_key lk;
	struct es_eg_tkey tk;
	size_t lcap = 0, tcap = 0;
	__u32 s, idx;
	es_err rc;

	memset(out, 0, sizeof(*out));
	rc = active_set(k, &s, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (set)
		*set = (int)s;
	for (int r = bpf_map_get_next_key(lfd, NULL, &lk); r == 0 && out->nlpm < ES_EG_LPM_MAX;
	     r = bpf_map_get_next_key(lfd, &lk, &lk)) {
		es_eg_plan_lpm *l;

		if ((__u32)(lk.data[0] >> 4) != s)
			continue;
		if (grow((void **)&out->lpm, out->nlpm, &lcap, sizeof(*out->lpm)) != 0) {
			es_eg_plan_free(out);
			return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		}
		l = &out->lpm[out->nlpm];
		memset(l, 0, sizeof(*l));
		if (bpf_map_lookup_elem(lfd, &lk, &l->val) != 0)
			continue;
		l->key = lk;
		l->key.data[0] &= 0x0f;
		out->nlpm++;
	}
	for (int r = bpf_map_get_next_key(tfd, NULL, &tk); r == 0 && out->ntgt < ES_EG_TGT_MAX;
	     r = bpf_map_get_next_key(tfd, &tk, &tk)) {
		if (tk.set != s)
			continue;
		if (grow((void **)&out->tgt, out->ntgt, &tcap, sizeof(*out->tgt)) != 0) {
			es_eg_plan_free(out);
			return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		}
		if (bpf_map_lookup_elem(tfd, &tk, &out->tgt[out->ntgt].mask) != 0)
			continue;
		out->tgt[out->ntgt++].cgid = tk.cgid;
	}
	for (int i = 0; i < ES_EG_MAX_POLICIES; i++) {
		idx = s * ES_EG_MAX_POLICIES + (__u32)i;
		if (bpf_map_lookup_elem(bpf_map__fd(k->maps[MAP_POL]), &idx,
					&out->pol[i]) != 0) {
			es_eg_plan_free(out);
			return es_errf(ES_ERR_IO, err, errsz, "eg_pol read: %s",
				       strerror(errno));
		}
	}
	if (bpf_map_lookup_elem(bpf_map__fd(k->maps[MAP_CFG]), &s, &out->cfg) != 0) {
		es_eg_plan_free(out);
		return es_errf(ES_ERR_IO, err, errsz, "eg_cfg read: %s", strerror(errno));
	}
	es_eg_plan_sort(out);
	return ES_OK;
}

uint64_t es_egk_violations(es_egk *k, int slot)
{
	__u32 key = (__u32)slot;
	__u64 v = 0;

	if (!k || bpf_map_lookup_elem(bpf_map__fd(k->maps[MAP_VIOL]), &key, &v))
		return 0;
	return v;
}

void es_egk_violations_reset(es_egk *k, int slot)
{
	__u32 key = (__u32)slot;
	__u64 v = 0;

	if (k)
		bpf_map_update_elem(bpf_map__fd(k->maps[MAP_VIOL]), &key, &v, BPF_ANY);
}

