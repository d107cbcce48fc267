/*
 * kc_process.c - the process lifecycle collector (kcollect.h):
 * exec, fork and exit at process level from bpf/process.bpf.c through a
 * ring buffer, per-cgroup counters from its hash map, and the report
 * status.activity.processes (PROTOCOL.md "Node"). The /proc fallback is in
 * kc_process_scan.c.
 */
#define _GNU_SOURCE
#include "kcollect/kc_process_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "es_json.h"
#include "es_time.h"
#include "es_events.h"
#include "kcollect/kc_common.h"
#include "process.skel.h"

static int cmp_cg(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = ((const kcp_cg *)b)->id;

	return x < y ? -1 : x > y;
}

kcp_cg *kcp__cg(kc_process *p, uint64_t id, int create)
{
	kcp_cg *e = p->ncg ? bsearch(&id, p->cg, p->ncg, sizeof(*p->cg), cmp_cg)
			   : NULL;
	size_t i;

	if (e || !create)
		return e;
	if (p->ncg >= ES_PROC_CGROUP_MAX) {
		p->lost_table++;
		return NULL;
	}
	if (p->ncg == p->capcg) {
		size_t cap = p->capcg ? p->capcg * 2 : 16;
		kcp_cg *v = realloc(p->cg, cap * sizeof(*v));

		if (!v) {
			p->lost_table++;
			return NULL;
		}
		p->cg = v;
		p->capcg = cap;
	}
	for (i = p->ncg; i > 0 && p->cg[i - 1].id > id; i--)
		;
	memmove(&p->cg[i + 1], &p->cg[i], (p->ncg - i) * sizeof(*p->cg));
	memset(&p->cg[i], 0, sizeof(p->cg[i]));
	p->cg[i].id = id;
	p->ncg++;
	return &p->cg[i];
}

void kcp__note_exec(kc_process *p, const kcp_exec *e)
{
	p->recent_exec[p->exec_next] = *e;
	p->exec_next = (p->exec_next + 1) % KCP_RECENT;
	if (p->nexec < KCP_RECENT)
		p->nexec++;
}

static void count_code(kc_process *p, uint64_t cgid, uint16_t code)
{
	kcp_cg *c = kcp__cg(p, cgid, 1);
	kcp_code *v;
	uint32_t i;

	if (!c)
		return;
	for (i = 0; i < c->ncodes; i++)
		if (c->codes[i].code == code) {
			c->codes[i].n++;
			return;
		}
	v = realloc(c->codes, (c->ncodes + 1) * sizeof(*v));
	if (!v) {
		p->lost_table++;
		return;
	}
	c->codes = v;
	c->codes[c->ncodes].code = code;
	c->codes[c->ncodes].n = 1;
	c->ncodes++;
}

void kcp__note_exit(kc_process *p, const kcp_exit *e)
{
	p->recent_exit[p->exit_next] = *e;
	p->exit_next = (p->exit_next + 1) % KCP_RECENT;
	if (p->nexit < KCP_RECENT)
		p->nexit++;
	if (e->has_code)
		count_code(p, e->cgid,
			   (uint16_t)(e->signal ? KCP_SIGNAL_BASE + e->signal
						: e->status));
}

void kcp__free(kc_process *p)
{
	size_t i;

	if (!p)
		return;
	process_bpf__destroy(p->skel);
	for (i = 0; i < p->ncg; i++)
		free(p->cg[i].codes);
	free(p->cg);
	free(p->procs);
	free(p);
}

static int64_t mono_to_wall_ms(uint64_t mono_ns)
{
	struct timespec rt, mo;
	int64_t now_rt, now_mo;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mo);
	now_rt = (int64_t)rt.tv_sec * 1000 + rt.tv_nsec / 1000000;
	now_mo = (int64_t)mo.tv_sec * 1000 + mo.tv_nsec / 1000000;
	return now_rt - (now_mo - (int64_t)(mono_ns / 1000000));
}

static void copy_str(char *dst, const char *src, size_t sz)
{
	memcpy(dst, src, sz);
	dst[sz - 1] = '\0';
}

static void on_event(es_kcollector *kc, const void *data, size_t size)
{
	kc_process *p = kc->priv;
	const struct es_proc_event *h = data;

	if (size < sizeof(*h))
		return;
	kc->events++;
	if (h->type == ES_PROC_EV_EXEC && size >= sizeof(struct es_proc_exec_event)) {
		const struct es_proc_exec_event *x = data;
		kcp_exec e;

		p->ev_exec++;
		e.wall_ms = mono_to_wall_ms(h->ts_ns);
		e.pid = h->pid;
		e.ppid = h->ppid;
		e.cgid = h->cgroup_id;
		copy_str(e.comm, h->comm, sizeof(e.comm));
		copy_str(e.filename, x->filename, sizeof(e.filename));
		kcp__note_exec(p, &e);
	} else if (h->type == ES_PROC_EV_EXIT) {
		kcp_exit e;

		p->ev_exit++;
		e.wall_ms = mono_to_wall_ms(h->ts_ns);
		e.pid = h->pid;
		e.ppid = h->ppid;
		e.cgid = h->cgroup_id;
		copy_str(e.comm, h->comm, sizeof(e.comm));
		e.has_code = 1;
		e.status = h->exit_status;
		e.signal = h->exit_signal;
		e.lifetime_s = (double)h->lifetime_ns / 1e9;
		kcp__note_exit(p, &e);
	} else if (h->type == ES_PROC_EV_FORK) {
		p->ev_fork++;
	}
}

/* Reads the totals and losses from the counters map. */
static void read_counters(es_kcollector *kc)
{
	kc_process *p = kc->priv;
	int fd = bpf_map__fd(p->skel->maps.counters);
	uint64_t v[ES_PROC_C_N];
	uint32_t k;

	for (k = 0; k < ES_PROC_C_N; k++)
		if (es_kc_map_sum_u64(fd, k, 1, &v[k]) != 0)
			return;
	p->execs = v[ES_PROC_C_EXECS];
	p->forks = v[ES_PROC_C_FORKS];
	p->exits = v[ES_PROC_C_EXITS];
	p->lost_exec = v[ES_PROC_C_LOST_EXEC];
	p->lost_exit = v[ES_PROC_C_LOST_EXIT];
	p->lost_fork = v[ES_PROC_C_LOST_FORK];
	p->lost_cgmap = v[ES_PROC_C_LOST_CGROUP];
}

static void update_lost(es_kcollector *kc)
{
	kc_process *p = kc->priv;

	kc->lost = p->lost_exec + p->lost_exit + p->lost_fork + p->lost_cgmap +
		   p->lost_table;
}

static void ebpf_poll(es_kcollector *kc)
{
	read_counters(kc);
	update_lost(kc);
}

static void poll_any(es_kcollector *kc)
{
	if (kc->backend == ES_KBACKEND_EBPF)
		ebpf_poll(kc);
	else
		kcp__scan(kc);
}

static es_err start_ebpf(es_kcollector *kc, const es_kenv *env, char *err,
			 size_t errsz)
{
	kc_process *p = NULL;
	char why[256];
	es_kc_load l = { 0 };
	es_err rc = ES_ERR_UNSUPPORTED;

	if (!es_kenv_ebpf_ok(env, 1, 0, why, sizeof(why)))
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz, "%s", why);
	if (!env->raw_tracepoint)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "the kernel cannot load raw tracepoint programs");
	p = calloc(1, sizeof(*p));
	if (!p)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	p->skel = process_bpf__open_opts(
		es_kenv_open_opts(env, &(struct bpf_object_open_opts){ 0 }));
	if (!p->skel) {
		es_errf(rc, err, errsz, "process: opening the BPF object: %s",
			strerror(errno));
		goto cleanup;
	}
	l.name = "process";
	l.skel = p->skel->skeleton;
	l.events = p->skel->maps.events;
	l.ring_fd = kc->ring_fd;
	l.hooks = "sched:sched_process_{exec,exit,fork}";
	rc = es_kc_skel_load(&l, err, errsz);
	if (rc)
		goto cleanup;
	kc->priv = p;
	kc->poll_ms = KCP_DRAIN_MS;
	p = NULL;
cleanup:
	kcp__free(p);
	return rc;
}

static void stop(es_kcollector *kc)
{
	if (!kc)
		return;
	kcp__free(kc->priv);
	kc->priv = NULL;
}

/* Copies the per-cgroup map into the cgroup table. When the map is three
 * quarters full, entries of cgroups that no longer exist are deleted from
 * both (their counts leave byCgroup; the totals keep them). */
static void read_cgroup_map(kc_process *p, es_cgname *names)
{
	int fd = bpf_map__fd(p->skel->maps.cgroups);
	struct es_proc_cgroup_counts v;
	uint64_t key, next, *gone = NULL;
	size_t ngone = 0, n = 0, i;
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) != 0)
			continue;
		n++;
		kcp_cg *c = kcp__cg(p, key, 1);

		if (c) {
			c->execs = v.execs;
			c->forks = v.forks;
			c->exits = v.exits;
		}
	}
	if (n < ES_PROC_CGROUP_MAX / 4 * 3 || !p->ncg)
		return;
	gone = calloc(p->ncg, sizeof(*gone));
	if (!gone)
		return;
	for (i = 0; i < p->ncg; i++)
		if (!es_cgname_path(names, p->cg[i].id))
			gone[ngone++] = p->cg[i].id;
	for (i = 0; i < ngone; i++) {
		kcp_cg *c = kcp__cg(p, gone[i], 0);

		bpf_map_delete_elem(fd, &gone[i]);
		if (c) {
			size_t at = (size_t)(c - p->cg);

			free(c->codes);
			memmove(c, c + 1, (p->ncg - at - 1) * sizeof(*c));
			p->ncg--;
		}
	}
	free(gone);
}

static int cmp_activity(const void *a, const void *b)
{
	const kcp_cg *x = *(const kcp_cg *const *)a, *y = *(const kcp_cg *const *)b;
	uint64_t ax = x->execs + x->forks + x->exits;
	uint64_t ay = y->execs + y->forks + y->exits;

	return ax > ay ? -1 : ax < ay;
}

static int add_time(cJSON *o, int64_t wall_ms)
{
	char t[ES_TIME_RFC3339_LEN];

	return cJSON_AddStringToObject(o, "time",
				       es_time_rfc3339((time_t)(wall_ms / 1000), t)) != NULL;
}

static es_err report_recent(kc_process *p, cJSON *procs)
{
	cJSON *ex = cJSON_AddArrayToObject(procs, "recentExecs");
	cJSON *ew = cJSON_AddArrayToObject(procs, "recentExits");
	size_t i;

	if (!ex || !ew)
		return ES_ERR_NOMEM;
	for (i = 0; i < p->nexec; i++) {
		const kcp_exec *e = &p->recent_exec[(p->exec_next + KCP_RECENT -
						     p->nexec + i) % KCP_RECENT];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(ex, o)) {
			cJSON_Delete(o);
			return ES_ERR_NOMEM;
		}
		if (!add_time(o, e->wall_ms) || !es_json_add_int(o, "pid", e->pid) ||
		    !es_json_add_int(o, "ppid", e->ppid) ||
		    !es_json_add_int(o, "cgroupId", (int64_t)e->cgid) ||
		    !cJSON_AddStringToObject(o, "comm", e->comm) ||
		    (e->filename[0] &&
		     !cJSON_AddStringToObject(o, "filename", e->filename)))
			return ES_ERR_NOMEM;
	}
	for (i = 0; i < p->nexit; i++) {
		const kcp_exit *e = &p->recent_exit[(p->exit_next + KCP_RECENT -
						     p->nexit + i) % KCP_RECENT];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(ew, o)) {
			cJSON_Delete(o);
			return ES_ERR_NOMEM;
		}
		if (!add_time(o, e->wall_ms) || !es_json_add_int(o, "pid", e->pid) ||
		    !es_json_add_int(o, "ppid", e->ppid) ||
		    !es_json_add_int(o, "cgroupId", (int64_t)e->cgid) ||
		    !cJSON_AddStringToObject(o, "comm", e->comm))
			return ES_ERR_NOMEM;
		if (e->has_code && e->signal &&
		    !es_json_add_int(o, "signal", e->signal))
			return ES_ERR_NOMEM;
		if (e->has_code && !e->signal &&
		    !es_json_add_int(o, "exitCode", e->status))
			return ES_ERR_NOMEM;
		if (e->lifetime_s >= 0 &&
		    !cJSON_AddNumberToObject(o, "lifetimeSeconds", e->lifetime_s))
			return ES_ERR_NOMEM;
	}
	return ES_OK;
}

static es_err report_codes(const kcp_cg *c, cJSON *o)
{
	cJSON *codes = NULL, *sigs = NULL;
	char k[16];
	uint32_t i;

	for (i = 0; i < c->ncodes; i++) {
		int sig = c->codes[i].code >= KCP_SIGNAL_BASE;
		cJSON **m = sig ? &sigs : &codes;

		if (!*m) {
			*m = cJSON_AddObjectToObject(o, sig ? "signals" : "exitCodes");
			if (!*m)
				return ES_ERR_NOMEM;
		}
		snprintf(k, sizeof(k), "%u",
			 sig ? c->codes[i].code - KCP_SIGNAL_BASE : c->codes[i].code);
		if (!es_json_add_int(*m, k, c->codes[i].n))
			return ES_ERR_NOMEM;
	}
	return ES_OK;
}

static es_err report_cgroups(kc_process *p, es_cgname *names, cJSON *procs)
{
	cJSON *list = cJSON_AddArrayToObject(procs, "byCgroup");
	const kcp_cg **v;
	size_t i, n = 0;
	es_err rc = ES_OK;

	if (!list)
		return ES_ERR_NOMEM;
	if (!p->ncg)
		return ES_OK;
	v = calloc(p->ncg, sizeof(*v));
	if (!v)
		return ES_ERR_NOMEM;
	for (i = 0; i < p->ncg; i++)
		if (p->cg[i].execs || p->cg[i].forks || p->cg[i].exits)
			v[n++] = &p->cg[i];
	qsort(v, n, sizeof(*v), cmp_activity);
	for (i = 0; i < n && i < KCP_TOP_CGROUPS && rc == ES_OK; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(list, o)) {
			cJSON_Delete(o);
			rc = ES_ERR_NOMEM;
			break;
		}
		rc = es_cgname_add_json(names, v[i]->id, o);
		if (rc == ES_OK &&
		    (!es_json_add_int(o, "execs", (int64_t)v[i]->execs) ||
		     !es_json_add_int(o, "forks", (int64_t)v[i]->forks) ||
		     !es_json_add_int(o, "exits", (int64_t)v[i]->exits)))
			rc = ES_ERR_NOMEM;
		if (rc == ES_OK)
			rc = report_codes(v[i], o);
	}
	free(v);
	return rc;
}

static es_err report(es_kcollector *kc, cJSON *activity)
{
	kc_process *p = kc->priv;
	cJSON *procs, *o;
	es_err rc;

	if (kc->backend == ES_KBACKEND_EBPF)
		read_cgroup_map(p, kc->names);
	update_lost(kc);
	procs = cJSON_AddObjectToObject(activity, "processes");
	if (!procs || !es_json_add_int(procs, "execs", (int64_t)p->execs) ||
	    !es_json_add_int(procs, "forks", (int64_t)p->forks) ||
	    !es_json_add_int(procs, "exits", (int64_t)p->exits))
		return ES_ERR_NOMEM;
	o = cJSON_AddObjectToObject(procs, "events");
	if (!o || !es_json_add_int(o, "exec", (int64_t)p->ev_exec) ||
	    !es_json_add_int(o, "exit", (int64_t)p->ev_exit) ||
	    !es_json_add_int(o, "fork", (int64_t)p->ev_fork))
		return ES_ERR_NOMEM;
	o = cJSON_AddObjectToObject(procs, "lost");
	if (!o || !es_json_add_int(o, "exec", (int64_t)p->lost_exec) ||
	    !es_json_add_int(o, "exit", (int64_t)p->lost_exit) ||
	    !es_json_add_int(o, "fork", (int64_t)p->lost_fork) ||
	    !es_json_add_int(o, "cgroupMap", (int64_t)p->lost_cgmap) ||
	    !es_json_add_int(o, "cgroupTable", (int64_t)p->lost_table))
		return ES_ERR_NOMEM;
	rc = report_recent(p, procs);
	if (rc == ES_OK)
		rc = report_cgroups(p, kc->names, procs);
	return rc;
}

const es_kcollector_ops es_kc_process_ops = {
	.name = "process",
	.source = ES_EV_SRC_PROCESS,
	.on_event = on_event,
	.start_ebpf = start_ebpf,
	.start_procfs = kcp__scan_start,
	.poll = poll_any,
	.report = report,
	.stop = stop,
};
