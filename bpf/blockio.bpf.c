// SPDX-License-Identifier: GPL-2.0
/*
 * blockio.bpf.c - block I/O latency per device, issue to completion, as a
 * log2 histogram in microseconds, from the raw tracepoints block_rq_issue
 * and block_rq_complete (their TP_PROTO, as
 * /sys/kernel/tracing/events/block/ lists them: args[0] is the struct
 * request). A request is identified by the address of its struct
 * request, which stays the same from issue to completion; (dev, sector)
 * need not be the same at both ends, and requests whose completion did not
 * match stayed in the map for good. Raw tracepoints need no tracefs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "es_bpf_common.h"
#include "blockio.h"

#define ES_EEXIST 17

/* LRU: when full (requests that never complete, beyond what the agent's
 * sweep of stale entries removes), the least recently issued entry makes
 * room, so timing goes on. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ES_BLKIO_MAX_INFLIGHT);
	__type(key, __u64);
	__type(value, struct es_blkio_req);
} start SEC(".maps");

/* Kernels before 5.16 named the disk in the request itself. */
struct request___rq_disk {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* The disk's dev_t as the block tracepoints print it, 0 when none. */
static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk;

	if (bpf_core_field_exists(((struct request___rq_disk *)rq)->rq_disk))
		disk = BPF_CORE_READ((struct request___rq_disk *)rq, rq_disk);
	else
		disk = BPF_CORE_READ(rq, q, disk);
	if (!disk)
		return 0;
	return ((__u32)BPF_CORE_READ(disk, major) << 20) |
	       (__u32)BPF_CORE_READ(disk, first_minor);
}

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

ES_BPF_COUNTERS(ES_BLKIO_C_MAX);

static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 slot = 0;

	while (v && slot < ES_BLKIO_SLOTS - 1) {
		v >>= 1;
		slot++;
	}
	return slot;
}

SEC("raw_tracepoint/block_rq_issue")
int es_blkio_issue(struct bpf_raw_tracepoint_args *ctx)
{
	struct request *rq = (struct request *)ctx->args[0];
	__u64 key = (__u64)rq;
	struct es_blkio_req v = { .ts_ns = bpf_ktime_get_ns() };

	v.dev = rq_dev(rq);
	if (!v.dev)
		return 0;
	if (bpf_map_update_elem(&start, &key, &v, BPF_ANY))
		es_bpf_count(&counters, ES_BLKIO_C_LOST_INFLIGHT);
	return 0;
}

/* A partial completion (args[2], bytes, less than the request) ends the
 * timing too: the entry is gone, later completions of it find nothing. */
SEC("raw_tracepoint/block_rq_complete")
int es_blkio_complete(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 key = (__u64)ctx->args[0];
	struct es_blkio_slot sk = {};
	struct es_blkio_dev zero = {}, *d;
	struct es_blkio_req *r;
	__u64 us, one = 1, *c;
	__u32 dev;
	long rc;

	r = bpf_map_lookup_elem(&start, &key);
	if (!r)
		return 0;
	us = (bpf_ktime_get_ns() - r->ts_ns) / 1000;
	dev = r->dev;
	bpf_map_delete_elem(&start, &key);

	sk.dev = dev;
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
	d = bpf_map_lookup_elem(&devs, &dev);
	if (!d) {
		rc = bpf_map_update_elem(&devs, &dev, &zero, BPF_NOEXIST);
		if (!rc || rc == -ES_EEXIST)
			d = bpf_map_lookup_elem(&devs, &dev);
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
