/*
 * kc_common.c - skeleton loading and per-cgroup map rows for the eBPF
 * collectors (kc_common.h).
 */
#include "kcollect/kc_common.h"

#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "es_buf.h"
#include "kcollect/kcollect.h"

es_err es_kc_skel_load(const es_kc_load *l, char *err, size_t errsz)
{
	int e;

	if (!l || !l->name || !l->skel)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_kc_skel_load: bad arguments");
	if (l->events && l->ring_fd < 0)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz, "%s: no event ring buffer",
			       l->name);
	if (l->events && (e = bpf_map__reuse_fd(l->events, l->ring_fd)) != 0)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "%s: event ring buffer: %s", l->name, strerror(-e));
	e = bpf_object__load_skeleton(l->skel);
	if (e)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "%s: loading the BPF program%s: %s", l->name,
			       l->skel->prog_cnt > 1 ? "s" : "", strerror(-e));
	if (l->hooks) {
		e = bpf_object__attach_skeleton(l->skel);
		if (e)
			return es_errf(ES_ERR_UNSUPPORTED, err, errsz, "%s: attaching %s: %s",
				       l->name, l->hooks, strerror(-e));
	}
	return ES_OK;
}

es_err es_kc_map_rows(int map_fd, size_t rowsz, size_t valoff,
		      int (*cmp)(const void *, const void *), void **rows,
		      size_t *n)
{
	uint64_t key, next, *kp = NULL;
	es_buf v = { 0 };
	unsigned char *row;
	size_t cnt;

	*rows = NULL;
	*n = 0;
	if (rowsz <= valoff || valoff < sizeof(uint64_t))
		return ES_ERR_INVAL;
	/* Room for 64 rows first, so *rows is never NULL. */
	if (es_buf_reserve(&v, 64 * rowsz) != ES_OK)
		return ES_ERR_NOMEM;
	while (bpf_map_get_next_key(map_fd, kp, &next) == 0) {
		key = next;
		kp = &key;
		if (es_buf_reserve(&v, rowsz) != ES_OK) {
			es_buf_free(&v);
			return ES_ERR_NOMEM;
		}
		row = (unsigned char *)v.p + v.len;
		memset(row, 0, rowsz);
		if (bpf_map_lookup_elem(map_fd, &key, row + valoff))
			continue;
		memcpy(row, &key, sizeof(key));
		es_buf_commit(&v, rowsz);
	}
	cnt = v.len / rowsz;
	if (cnt && cmp)
		qsort(v.p, cnt, rowsz, cmp);
	*rows = es_buf_detach(&v, NULL);
	*n = cnt;
	return ES_OK;
}

es_err es_kc_cgroup_rows_json(cJSON *parent, const char *member, es_cgname *names,
			      const void *rows, size_t n, size_t rowsz, size_t max,
			      int (*fill)(cJSON *o, const void *row))
{
	const unsigned char *row;
	cJSON *arr, *o;
	uint64_t id;
	size_t i;

	arr = cJSON_AddArrayToObject(parent, member);
	if (!arr)
		return ES_ERR_NOMEM;
	for (i = 0; i < n && i < max; i++) {
		row = (const unsigned char *)rows + i * rowsz;
		memcpy(&id, row, sizeof(id));
		o = cJSON_CreateObject();
		if (!o)
			return ES_ERR_NOMEM;
		cJSON_AddItemToArray(arr, o);
		if (es_cgname_add_json(names, id, o) || fill(o, row))
			return ES_ERR_NOMEM;
	}
	return ES_OK;
}
