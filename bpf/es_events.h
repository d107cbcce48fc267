/*
 * es_events.h - the agent's one event ring buffer, shared by bpf/<name>.bpf.c
 * and agent/kcollect/kcollect.c (fixed-width types only).
 *
 * The kernel collectors that stream events (process, tcp, oom) write into
 * one BPF_MAP_TYPE_RINGBUF that user space creates (ringbuf-bytes) and
 * hands to each skeleton before load (bpf_map__reuse_fd). One ring costs
 * its size once, where one ring per collector cost it per collector: a
 * ring is mapped whole into the reader, data pages twice (libbpf
 * ringbuf.c), so each is resident. Every record starts with a __u32 source
 * (ES_EV_SRC_*), which user space dispatches on; a full ring is counted as
 * a loss by the collector whose reservation failed.
 */
#ifndef ES_BPF_EVENTS_H
#define ES_BPF_EVENTS_H

/* The first __u32 of every ring record: the collector that wrote it. */
#define ES_EV_SRC_PROCESS 1
#define ES_EV_SRC_TCP 2
#define ES_EV_SRC_OOM 3

#endif
