/*
 * oom.h - types shared by bpf/oom.bpf.c and agent/kcollect/kc_oom.c.
 */
#ifndef ES_BPF_OOM_H
#define ES_BPF_OOM_H

#define ES_OOM_COMM_LEN 16

/* Indexes of the `counters` array map. */
enum es_oom_counter {
	ES_OOM_C_KILLS = 0,   /* oom:mark_victim hits */
	ES_OOM_C_LOST_RINGBUF,/* kills whose details were not delivered */
	ES_OOM_C_MAX
};

/* Ring-buffer record: one OOM victim. */
struct es_oom_event {
	__u32 source;        /* ES_EV_SRC_OOM (es_events.h) */
	__u32 pid;           /* the victim (thread-group id) */
	__u64 time_ns;       /* bpf_ktime_get_boot_ns: since boot, suspend included */
	__u64 cgroup_id;     /* the victim's cgroup v2 id; 0 when not known in the kernel */
	__u32 has_comm;      /* 1: comm came from the tracepoint */
	__u32 pad;
	char comm[ES_OOM_COMM_LEN];
};

#endif
