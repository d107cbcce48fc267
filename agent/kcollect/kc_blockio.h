/*
 * kc_blockio.h - what the blockio collector (kc_blockio.c) offers besides
 * its es_kc_blockio_ops: the sweep of requests that never completed.
 */
#ifndef ES_AGENT_KC_BLOCKIO_H
#define ES_AGENT_KC_BLOCKIO_H

#include <stdint.h>

/*
 * Deletes from the in-flight map fd (bpf/blockio.h, `start`: key __u64,
 * value struct es_blkio_req) the entries issued more than max_age_ns
 * before now_ns (both CLOCK_MONOTONIC nanoseconds, the clock of
 * bpf_ktime_get_ns). At most 1024 entries per call; the rest stay for the
 * next. Returns the number deleted. A bad fd deletes nothing.
 */
uint64_t es_kc_blockio_sweep(int fd, uint64_t now_ns, uint64_t max_age_ns);

#endif
