/*
 * blockio.h - types shared by bpf/blockio.bpf.c and agent/kcollect/kc_blockio.c.
 */
#ifndef ES_BPF_BLOCKIO_H
#define ES_BPF_BLOCKIO_H

#define ES_BLKIO_MAX_INFLIGHT 16384 /* requests timed at once */
/* A request in the `start` map longer than this was never completed (a
 * request freed without a completion): the agent removes it and counts it
 * as lost. */
#define ES_BLKIO_STALE_NS (30ull * 1000000000ull)
#define ES_BLKIO_MAX_DEVS 256
#define ES_BLKIO_SLOTS 32           /* log2 buckets: slot k counts latencies < 2^k us */

/* Indexes of the `counters` array map. */
enum es_blkio_counter {
	ES_BLKIO_C_LOST_INFLIGHT = 0, /* issues not timed: `start` map full */
	ES_BLKIO_C_LOST_HIST,         /* completions not counted: `hist` or `devs` map full */
	ES_BLKIO_C_MAX
};

/* The `start` map: key __u64, the address of the kernel's struct request
 * (the same object from issue to completion, whatever its sector does on
 * a partial completion or a merge); value: */
struct es_blkio_req {
	__u64 ts_ns;  /* bpf_ktime_get_ns() at issue (CLOCK_MONOTONIC) */
	__u32 dev;    /* kernel dev_t of the disk: major << 20 | minor */
	__u32 pad;
};

/* Key of the `hist` map (value: __u64 count). */
struct es_blkio_slot {
	__u32 dev;
	__u32 slot;
};

/* Value of the `devs` map (key: __u32 dev). */
struct es_blkio_dev {
	__u64 ios;
	__u64 sum_us;
};

#endif
