/*
 * process.h - types and constants shared by bpf/process.bpf.c and
 * agent/kcollect/kc_process.c (fixed-width types only).
 */
#ifndef ES_BPF_PROCESS_H
#define ES_BPF_PROCESS_H

#define ES_PROC_COMM_LEN 16      /* TASK_COMM_LEN */
#define ES_PROC_FILENAME_LEN 256 /* longer exec filenames are truncated */
#define ES_PROC_CGROUP_MAX 4096  /* entries of the per-cgroup counter map */

/* es_proc_event.type */
#define ES_PROC_EV_EXEC 1
#define ES_PROC_EV_EXIT 2
#define ES_PROC_EV_FORK 3

/* Keys of the `counters` per-CPU array: totals that never lose anything,
 * and the losses by kind. */
#define ES_PROC_C_EXECS 0
#define ES_PROC_C_FORKS 1
#define ES_PROC_C_EXITS 2
#define ES_PROC_C_LOST_EXEC 3     /* ring buffer full: exec event dropped */
#define ES_PROC_C_LOST_EXIT 4
#define ES_PROC_C_LOST_FORK 5
#define ES_PROC_C_LOST_CGROUP 6   /* per-cgroup map full (E2BIG/ENOMEM) */
#define ES_PROC_C_N 7

/* Submissions wake the reader only once the ring holds more than
 * 1/ES_PROC_WAKEUP_DIV of its size; the reader also drains on a timer. */
#define ES_PROC_WAKEUP_DIV 2

/* Value of the per-cgroup `cgroups` hash map (key: __u64 cgroup id). */
struct es_proc_cgroup_counts {
	__u64 execs;
	__u64 forks;
	__u64 exits;
};

/* Every ring buffer record of this collector starts with this; exec
 * records carry a filename after it (struct es_proc_exec_event). */
struct es_proc_event {
	__u32 source;        /* ES_EV_SRC_PROCESS (es_events.h) */
	__u32 type;          /* ES_PROC_EV_* */
	__u32 pid;           /* tgid of the process (child for fork) */
	__u32 ppid;          /* tgid of the real parent */
	__u32 exit_status;   /* exit: (exit_code >> 8) & 0xff when not signalled */
	__u32 exit_signal;   /* exit: the terminating signal, 0 when none */
	__u64 cgroup_id;     /* cgroup v2 id of the task (parent for fork) */
	__u64 ts_ns;         /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u64 lifetime_ns;   /* exit: now - task->start_time */
	char comm[ES_PROC_COMM_LEN];
};

struct es_proc_exec_event {
	struct es_proc_event h;
	char filename[ES_PROC_FILENAME_LEN];
};

#endif
