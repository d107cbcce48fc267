// SPDX-License-Identifier: GPL-2.0
/*
 * blockio.bpf.c - block I/O latency per device, issue to completion, as a
 * log2 histogram in microseconds, from the tracepoints block:block_rq_issue
 * and block:block_rq_complete. A request is identified by (dev, sector).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "es_bpf_common.h"
#include "blockio.h"

#define ES_EEXIST 17

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ES_BLKIO_MAX_INFLIGHT);
	__type(key, struct es_blkio_req);
	__type(value, __u64);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ES_BLKIO_MAX_DEVS * ES_BLKIO_SLOTS);
	__type(key, struct es_blkio_slot);
	__type(value, __u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ES_BLKIO_MAX_DEVS);
	__type(key, __u32);
	__type(value, struct es_blkio_dev);
} devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ES_BLKIO_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 slot = 0;

	while (v && slot < ES_BLKIO_SLOTS - 1) {
		v >>= 1;
		slot++;
	}
	return slot;
}

SEC("tracepoint/block/block_rq_issue")
int es_blkio_issue(struct trace_event_raw_block_rq *ctx)
{
	struct es_blkio_req key = { .sector = ctx->sector, .dev = ctx->dev };
	__u64 ts = bpf_ktime_get_ns();

	if (!key.dev)
		return 0;
	if (bpf_map_update_elem(&start, &key, &ts, BPF_ANY))
		es_bpf_count(&counters, ES_BLKIO_C_LOST_INFLIGHT);
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int es_blkio_complete(struct trace_event_raw_block_rq_completion *ctx)
{
	struct es_blkio_req key = { .sector = ctx->sector, .dev = ctx->dev };
	struct es_blkio_slot sk = {};
	struct es_blkio_dev zero = {}, *d;
	__u64 *tsp, us, one = 1, *c;
	long rc;

	tsp = bpf_map_lookup_elem(&start, &key);
	if (!tsp)
		return 0;
	us = (bpf_ktime_get_ns() - *tsp) / 1000;
	bpf_map_delete_elem(&start, &key);

	sk.dev = key.dev;
	sk.slot = log2_slot(us);
	c = bpf_map_lookup_elem(&hist, &sk);
	if (c) {
		__sync_fetch_and_add(c, 1);
	} else {
		rc = bpf_map_update_elem(&hist, &sk, &one, BPF_NOEXIST);
		if (rc == -ES_EEXIST) {
			c = bpf_map_lookup_elem(&hist, &sk);
			if (c)
				__sync_fetch_and_add(c, 1);
		} else if (rc) {
			es_bpf_count(&counters, ES_BLKIO_C_LOST_HIST);
			return 0;
		}
	}
	d = bpf_map_lookup_elem(&devs, &key.dev);
	if (!d) {
		rc = bpf_map_update_elem(&devs, &key.dev, &zero, BPF_NOEXIST);
		if (!rc || rc == -ES_EEXIST)
			d = bpf_map_lookup_elem(&devs, &key.dev);
	}
	if (!d) {
		es_bpf_count(&counters, ES_BLKIO_C_LOST_HIST);
		return 0;
	}
	__sync_fetch_and_add(&d->ios, 1);
	__sync_fetch_and_add(&d->sum_us, us);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
