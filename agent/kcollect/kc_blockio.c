/*
 * kc_blockio.c - the block I/O collector (kcollect.h, "blockio"): latency
 * per device from issue to completion as a log2 histogram in microseconds,
 * from bpf/blockio.bpf.c; or, as the `procfs` fallback, the average latency
 * per device from /proc/diskstats (time spent / requests completed, since
 * the agent started; no histogram).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "blockio.h"
#include "blockio.skel.h"
#include "es_log.h"
#include "kcollect/kc_blockio.h"
#include "kcollect/kc_common.h"
#include "kcollect/kcollect.h"
#include "kcollect/kcprocfs.h"

#define DISKSTATS "/proc/diskstats"
#define NAME_CACHE 64

typedef struct devname {
	uint32_t dev;
	char name[32];
} devname;

typedef struct kc_blockio {
	struct blockio_bpf *skel;
	uint64_t stale; /* requests swept from `start` as never completed */
	devname names[NAME_CACHE];
	size_t nnames;
	/* procfs */
	es_kcprocfs_disk *base;
	size_t nbase;
} kc_blockio;

/* DEVNAME of /sys/dev/block/M:m/uevent (cached); "" when unknown. */
static const char *dev_name(kc_blockio *b, unsigned major, unsigned minor, uint32_t dev)
{
	char path[64], line[128];
	devname *d = NULL;
	size_t i;
	FILE *f;

	for (i = 0; i < b->nnames; i++)
		if (b->names[i].dev == dev)
			return b->names[i].name;
	if (b->nnames < NAME_CACHE)
		d = &b->names[b->nnames];
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major, minor);
	f = fopen(path, "re");
	if (!f)
		return "";
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "DEVNAME=", 8) != 0)
			continue;
		line[8 + strcspn(line + 8, "\n")] = '\0';
		if (d) {
			d->dev = dev;
			snprintf(d->name, sizeof(d->name), "%.31s", line + 8);
			b->nnames++;
			fclose(f);
			return d->name;
		}
	}
	fclose(f);
	return "";
}

static void blockio_free(kc_blockio *b)
{
	if (!b)
		return;
	blockio_bpf__destroy(b->skel);
	free(b->base);
	free(b);
}

static es_err blockio_start_ebpf(es_kcollector *kc, const es_kenv *env, char *err,
				 size_t errsz)
{
	char reason[256];
	kc_blockio *b;
	es_kc_load l = { 0 };
	es_err rc = ES_ERR_UNSUPPORTED;

	if (!es_kenv_ebpf_ok(env, 0, 0, reason, sizeof(reason)))
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz, "%s", reason);
	b = calloc(1, sizeof(*b));
	if (!b)
		return es_errf(ES_ERR_NOMEM, err, errsz, "blockio: out of memory");
	b->skel = blockio_bpf__open_opts(
		es_kenv_open_opts(env, &(struct bpf_object_open_opts){ 0 }));
	if (!b->skel) {
		es_errf(rc, err, errsz, "blockio: opening the BPF object: %s", strerror(errno));
		goto cleanup;
	}
	l.name = "blockio";
	l.skel = b->skel->skeleton;
	l.hooks = "raw tracepoints block_rq_issue, block_rq_complete";
	rc = es_kc_skel_load(&l, err, errsz);
	if (rc)
		goto cleanup;
	kc->priv = b;
	return ES_OK;
cleanup:
	blockio_free(b);
	return rc;
}

static es_err blockio_start_procfs(es_kcollector *kc, const es_kenv *env, char *err,
				   size_t errsz)
{
	kc_blockio *b;

	(void)env;
	b = calloc(1, sizeof(*b));
	if (!b)
		return es_errf(ES_ERR_NOMEM, err, errsz, "blockio: out of memory");
	if (es_kcprocfs_diskstats_read(DISKSTATS, &b->base, &b->nbase, err, errsz)) {
		free(b);
		return ES_ERR_UNSUPPORTED;
	}
	kc->priv = b;
	return ES_OK;
}

/* Most stale keys removed per sweep; the rest go at the next poll. */
#define SWEEP_BATCH 1024

uint64_t es_kc_blockio_sweep(int fd, uint64_t now_ns, uint64_t max_age_ns)
{
	uint64_t keys[SWEEP_BATCH], key, next, *kp = NULL, removed = 0;
	struct es_blkio_req v;
	size_t n = 0;

	while (n < SWEEP_BATCH && bpf_map_get_next_key(fd, kp, &next) == 0) {
		key = next;
		kp = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) == 0 && now_ns > v.ts_ns &&
		    now_ns - v.ts_ns > max_age_ns)
			keys[n++] = key;
	}
	for (size_t i = 0; i < n; i++)
		if (bpf_map_delete_elem(fd, &keys[i]) == 0)
			removed++;
	return removed;
}

static void blockio_poll(es_kcollector *kc)
{
	kc_blockio *b = kc->priv;
	uint64_t a = 0, c = 0;
	struct timespec ts;
	int fd;

	if (!b || !b->skel)
		return;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
		b->stale += es_kc_blockio_sweep(bpf_map__fd(b->skel->maps.start),
						(uint64_t)ts.tv_sec * 1000000000ull +
							(uint64_t)ts.tv_nsec,
						ES_BLKIO_STALE_NS);
	fd = bpf_map__fd(b->skel->maps.counters);
	if (!es_kc_map_sum_u64(fd, ES_BLKIO_C_LOST_INFLIGHT, 1, &a) &&
	    !es_kc_map_sum_u64(fd, ES_BLKIO_C_LOST_HIST, 1, &c))
		kc->lost = a + c + b->stale;
}

static cJSON *device_json(kc_blockio *b, unsigned major, unsigned minor, uint32_t dev,
			  const char *name)
{
	char id[32];
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	snprintf(id, sizeof(id), "%u:%u", major, minor);
	if (!name)
		name = dev_name(b, major, minor, dev);
	if (!cJSON_AddStringToObject(o, "device", id) ||
	    (name[0] && !cJSON_AddStringToObject(o, "name", name))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static es_err report_ebpf(es_kcollector *kc, kc_blockio *b, cJSON *arr)
{
	int dfd = bpf_map__fd(b->skel->maps.devs), hfd = bpf_map__fd(b->skel->maps.hist);
	uint32_t key, next, *kp = NULL;
	struct es_blkio_slot sk;
	struct es_blkio_dev d;
	cJSON *o, *lat, *buckets, *bk;
	uint64_t cnt, total = 0;
	unsigned slot;

	while (bpf_map_get_next_key(dfd, kp, &next) == 0) {
		key = next;
		kp = &key;
		if (bpf_map_lookup_elem(dfd, &key, &d))
			continue;
		total += d.ios;
		o = device_json(b, key >> 20, key & 0xfffff, key, NULL);
		if (!o)
			return ES_ERR_NOMEM;
		cJSON_AddItemToArray(arr, o);
		if (!cJSON_AddNumberToObject(o, "ios", (double)d.ios) ||
		    !(lat = cJSON_AddObjectToObject(o, "latencyMicroseconds")) ||
		    !cJSON_AddNumberToObject(lat, "sum", (double)d.sum_us) ||
		    !(buckets = cJSON_AddArrayToObject(lat, "buckets")))
			return ES_ERR_NOMEM;
		for (slot = 0; slot < ES_BLKIO_SLOTS; slot++) {
			sk.dev = key;
			sk.slot = slot;
			if (bpf_map_lookup_elem(hfd, &sk, &cnt) || !cnt)
				continue;
			bk = cJSON_CreateObject();
			if (!bk)
				return ES_ERR_NOMEM;
			cJSON_AddItemToArray(buckets, bk);
			if (!cJSON_AddNumberToObject(bk, "le", (double)(1ull << slot)) ||
			    !cJSON_AddNumberToObject(bk, "count", (double)cnt))
				return ES_ERR_NOMEM;
		}
	}
	kc->events = total;
	return ES_OK;
}

static const es_kcprocfs_disk *find_base(const kc_blockio *b, const es_kcprocfs_disk *d)
{
	size_t i;

	for (i = 0; i < b->nbase; i++)
		if (b->base[i].major == d->major && b->base[i].minor == d->minor)
			return &b->base[i];
	return NULL;
}

static es_err report_procfs(es_kcollector *kc, kc_blockio *b, cJSON *arr)
{
	static const es_kcprocfs_disk zero;
	es_kcprocfs_disk *cur = NULL;
	const es_kcprocfs_disk *p;
	uint64_t ios, ms, total = 0;
	es_err rc = ES_OK;
	cJSON *o, *lat;
	char err[160];
	size_t n = 0, i;

	if (es_kcprocfs_diskstats_read(DISKSTATS, &cur, &n, err, sizeof(err))) {
		es_log_warn("blockio", "reading diskstats failed", "error", err, NULL);
		return ES_OK;
	}
	for (i = 0; i < n; i++) {
		p = find_base(b, &cur[i]);
		if (!p)
			p = &zero;
		ios = (cur[i].reads - p->reads) + (cur[i].writes - p->writes);
		ms = (cur[i].read_ms - p->read_ms) + (cur[i].write_ms - p->write_ms);
		if (!ios || cur[i].reads < p->reads || cur[i].writes < p->writes)
			continue;
		total += ios;
		o = device_json(b, cur[i].major, cur[i].minor, 0, cur[i].name);
		if (!o) {
			rc = ES_ERR_NOMEM;
			break;
		}
		cJSON_AddItemToArray(arr, o);
		if (!cJSON_AddNumberToObject(o, "ios", (double)ios) ||
		    !(lat = cJSON_AddObjectToObject(o, "latencyMicroseconds")) ||
		    !cJSON_AddNumberToObject(lat, "average", (double)ms * 1000.0 / (double)ios)) {
			rc = ES_ERR_NOMEM;
			break;
		}
	}
	kc->events = total;
	free(cur);
	return rc;
}

static es_err blockio_report(es_kcollector *kc, cJSON *activity)
{
	kc_blockio *b = kc->priv;
	cJSON *arr;

	if (!b)
		return ES_OK;
	arr = cJSON_AddArrayToObject(activity, "blockIO");
	if (!arr)
		return ES_ERR_NOMEM;
	return b->skel ? report_ebpf(kc, b, arr) : report_procfs(kc, b, arr);
}

static void blockio_stop(es_kcollector *kc)
{
	blockio_free(kc->priv);
	kc->priv = NULL;
}

const es_kcollector_ops es_kc_blockio_ops = {
	.name = "blockio",
	.start_ebpf = blockio_start_ebpf,
	.start_procfs = blockio_start_procfs,
	.poll = blockio_poll,
	.report = blockio_report,
	.stop = blockio_stop,
};
