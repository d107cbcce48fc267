/* SPDX-License-Identifier: GPL-2.0 */
/*
 * es_bpf_common.h - helpers shared by the kernel side of the collectors
 * (bpf/<name>.bpf.c only; include after vmlinux.h and <bpf/bpf_helpers.h>).
 * Every helper is static __always_inline: a map passed by address stays a
 * constant the verifier can see after inlining.
 *
 * The counters convention: each program has a BPF_MAP_TYPE_PERCPU_ARRAY
 * (key __u32, value __u64) whose indices are the ES_<NAME>_C_* constants of
 * its <name>.h; user space sums the CPUs (es_kc_map_sum_u64 in
 * agent/kcollect/kcollect.h).
 */
#ifndef ES_BPF_COMMON_H
#define ES_BPF_COMMON_H

/* Declares the program's counters map (see above) with n slots. */
#define ES_BPF_COUNTERS(n)                                                   \
	struct {                                                             \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                     \
		__uint(max_entries, n);                                      \
		__type(key, __u32);                                          \
		__type(value, __u64);                                        \
	} counters SEC(".maps")

/* Declares the program's event ring. Its size here is a placeholder: the
 * agent hands every collector the one ring they share (bpf/es_events.h)
 * with bpf_map__reuse_fd before load. */
#define ES_BPF_EVENTS()                                                      \
	struct {                                                             \
		__uint(type, BPF_MAP_TYPE_RINGBUF);                          \
		__uint(max_entries, 4096);                                   \
	} events SEC(".maps")

/* Adds 1 to this CPU's slot idx of the per-CPU counters map; an idx out of
 * the map's range is ignored. */
static __always_inline void es_bpf_count(void *counters, __u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(counters, &idx);

	if (v)
		(*v)++;
}

/*
 * Reserves size bytes in the ring buffer map ringbuf. When the ring is full
 * returns NULL and counts the lost event at lost_idx of counters (see
 * es_bpf_count). The caller submits or discards what it got.
 */
static __always_inline void *es_bpf_reserve(void *ringbuf, __u64 size,
					    void *counters, __u32 lost_idx)
{
	void *e = bpf_ringbuf_reserve(ringbuf, size, 0);

	if (!e)
		es_bpf_count(counters, lost_idx);
	return e;
}

#endif
