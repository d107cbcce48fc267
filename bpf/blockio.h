/*
 * blockio.h - types shared by bpf/blockio.bpf.c and agent/kcollect/kc_blockio.c.
 */
#ifndef ES_BPF_BLOCKIO_H
#define ES_BPF_BLOCKIO_H

#define ES_BLKIO_MAX_INFLIGHT 16384 /* requests timed at once */
#define ES_BLKIO_MAX_DEVS 256
#define ES_BLKIO_SLOTS 32           /* log2 buckets: slot k counts latencies < 2^k us */

/* Indexes of the `counters` array map. */
enum es_blkio_counter {
	ES_BLKIO_C_LOST_INFLIGHT = 0, /* issues not timed: `start` map full */
	ES_BLKIO_C_LOST_HIST,         /* completions not counted: `hist` or `devs` map full */
	ES_BLKIO_C_MAX
};

/* Key of the `start` map. */
struct es_blkio_req {
	__u64 sector;
	__u32 dev;   /* kernel dev_t: major << 20 | minor */
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
