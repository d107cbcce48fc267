/*
 * kc_oom.c - the OOM-kill collector (kcollect.h, "oom"): each victim's
 * pid, command and cgroup from bpf/oom.bpf.c (oom:mark_victim); or, as the
 * `procfs` fallback, the count of kills from the /proc/vmstat oom_kill
 * counter since the agent started.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kcollect/cgroupname.h"
#include "es_log.h"
#include "es_time.h"
#include "kcollect/kc_common.h"
#include "kcollect/kcollect.h"
#include "es_events.h"
#include "kcollect/kcprocfs.h"
#include "oom.h"
#include "oom.skel.h"

#define RECENT_MAX 16
#define VMSTAT "/proc/vmstat"
#define PROCFS_POLL_MS 5000

typedef struct victim {
	uint32_t pid;
	uint64_t cgroup_id;  /* 0: unknown */
	char comm[ES_OOM_COMM_LEN];
	time_t when;
} victim;

typedef struct kc_oom {
	struct oom_bpf *skel;
	victim recent[RECENT_MAX]; /* ring, newest at (next - 1) */
	size_t next, count;
	/* procfs */
	uint64_t base, kills;
	char error[160];
} kc_oom;

static void comm_of_pid(uint32_t pid, char comm[ES_OOM_COMM_LEN])
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, ES_OOM_COMM_LEN, f))
		comm[strcspn(comm, "\n")] = '\0';
	else
		comm[0] = '\0';
	fclose(f);
}

static void on_event(es_kcollector *kc, const void *data, size_t size)
{
	kc_oom *o = kc->priv;
	struct es_oom_event ev;
	struct timespec boot, real;
	char path[32];
	victim *v;

	if (size < sizeof(ev))
		return;
	memcpy(&ev, data, sizeof(ev));
	v = &o->recent[o->next];
	memset(v, 0, sizeof(*v));
	v->pid = ev.pid;
	v->cgroup_id = ev.cgroup_id;
	if (!v->cgroup_id) {
		snprintf(path, sizeof(path), "/proc/%u/cgroup", ev.pid);
		v->cgroup_id = es_cgname_proc_id(kc->names, AT_FDCWD, path);
	}
	if (ev.has_comm)
		memcpy(v->comm, ev.comm, sizeof(v->comm) - 1);
	else
		comm_of_pid(ev.pid, v->comm);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	clock_gettime(CLOCK_REALTIME, &real);
	v->when = real.tv_sec - (time_t)((((uint64_t)boot.tv_sec * 1000000000ull +
					    (uint64_t)boot.tv_nsec) - ev.time_ns) / 1000000000ull);
	o->next = (o->next + 1) % RECENT_MAX;
	if (o->count < RECENT_MAX)
		o->count++;
	kc->events++;
	{
		char pid[16];

		snprintf(pid, sizeof(pid), "%u", v->pid);
		es_log_warn("oom", "OOM kill", "pid", pid, "comm", v->comm, NULL);
	}
}

static void oom_free(kc_oom *o)
{
	if (!o)
		return;
	oom_bpf__destroy(o->skel);
	free(o);
}

static es_err oom_start_ebpf(es_kcollector *kc, const es_kenv *env, char *err,
			     size_t errsz)
{
	char reason[256];
	kc_oom *o = NULL;
	es_kc_load l = { 0 };
	es_err rc = ES_ERR_UNSUPPORTED;

	if (!es_kenv_ebpf_ok(env, 1, 0, reason, sizeof(reason)))
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz, "%s", reason);
	o = calloc(1, sizeof(*o));
	if (!o)
		return es_errf(ES_ERR_NOMEM, err, errsz, "oom: out of memory");
	o->skel = oom_bpf__open_opts(
		es_kenv_open_opts(env, &(struct bpf_object_open_opts){ 0 }));
	if (!o->skel) {
		es_errf(rc, err, errsz, "oom: opening the BPF object: %s", strerror(errno));
		goto cleanup;
	}
	l.name = "oom";
	l.skel = o->skel->skeleton;
	l.events = o->skel->maps.events;
	l.ring_fd = kc->ring_fd;
	l.hooks = "oom:mark_victim";
	rc = es_kc_skel_load(&l, err, errsz);
	if (rc)
		goto cleanup;
	kc->priv = o;
	return ES_OK;
cleanup:
	oom_free(o);
	return rc;
}

static es_err oom_start_procfs(es_kcollector *kc, const es_kenv *env, char *err,
			       size_t errsz)
{
	kc_oom *o;
	es_err rc;

	(void)env;
	o = calloc(1, sizeof(*o));
	if (!o)
		return es_errf(ES_ERR_NOMEM, err, errsz, "oom: out of memory");
	rc = es_kcprocfs_vmstat_oom_kill(VMSTAT, &o->base, err, errsz);
	if (rc) {
		free(o);
		return ES_ERR_UNSUPPORTED;
	}
	kc->priv = o;
	kc->poll_ms = PROCFS_POLL_MS;
	return ES_OK;
}

static void oom_poll(es_kcollector *kc)
{
	kc_oom *o = kc->priv;
	uint64_t v = 0;

	if (!o)
		return;
	if (o->skel) {
		if (!es_kc_map_sum_u64(bpf_map__fd(o->skel->maps.counters),
				       ES_OOM_C_LOST_RINGBUF, 1, &v))
			kc->lost = v;
		return;
	}
	if (es_kcprocfs_vmstat_oom_kill(VMSTAT, &v, o->error, sizeof(o->error)) == ES_OK) {
		o->kills = v >= o->base ? v - o->base : 0;
		kc->events = o->kills;
	}
}

static es_err oom_report(es_kcollector *kc, cJSON *activity)
{
	kc_oom *o = kc->priv;
	char ts[ES_TIME_RFC3339_LEN];
	uint64_t kills = 0;
	cJSON *oom, *arr, *it;
	size_t i;

	if (!o)
		return ES_OK;
	oom = cJSON_AddObjectToObject(activity, "oom");
	if (!oom)
		return ES_ERR_NOMEM;
	if (!o->skel)
		return cJSON_AddNumberToObject(oom, "kills", (double)o->kills) ? ES_OK : ES_ERR_NOMEM;
	if (es_kc_map_sum_u64(bpf_map__fd(o->skel->maps.counters), ES_OOM_C_KILLS, 1, &kills))
		kills = kc->events;
	if (!cJSON_AddNumberToObject(oom, "kills", (double)kills))
		return ES_ERR_NOMEM;
	arr = cJSON_AddArrayToObject(oom, "recent");
	if (!arr)
		return ES_ERR_NOMEM;
	for (i = 0; i < o->count; i++) {
		const victim *v = &o->recent[(o->next + RECENT_MAX - 1 - i) % RECENT_MAX];

		it = cJSON_CreateObject();
		if (!it)
			return ES_ERR_NOMEM;
		cJSON_AddItemToArray(arr, it);
		if (!cJSON_AddNumberToObject(it, "pid", v->pid) ||
		    !cJSON_AddStringToObject(it, "comm", v->comm) ||
		    !cJSON_AddStringToObject(it, "time", es_time_rfc3339(v->when, ts)))
			return ES_ERR_NOMEM;
		if (v->cgroup_id && es_cgname_add_json(kc->names, v->cgroup_id, it))
			return ES_ERR_NOMEM;
	}
	return ES_OK;
}

static void oom_stop(es_kcollector *kc)
{
	oom_free(kc->priv);
	kc->priv = NULL;
}

const es_kcollector_ops es_kc_oom_ops = {
	.name = "oom",
	.source = ES_EV_SRC_OOM,
	.on_event = on_event,
	.start_ebpf = oom_start_ebpf,
	.start_procfs = oom_start_procfs,
	.poll = oom_poll,
	.report = oom_report,
	.stop = oom_stop,
};
