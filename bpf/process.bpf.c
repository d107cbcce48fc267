// SPDX-License-Identifier: GPL-2.0
/*
 * process.bpf.c - process lifecycle at process level (not per thread):
 * exec (tracepoint sched:sched_process_exec), fork (raw tracepoint
 * sched_process_fork, new thread groups only) and exit (tracepoint
 * sched:sched_process_exit, thread-group leaders only). Totals and losses
 * in a per-CPU array, per-cgroup counts in a hash map, events in a ring
 * buffer (types in process.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "es_bpf_common.h"
#include "es_events.h"
#include "process.h"

#define E2BIG 7
#define ENOMEM 12
#define EEXIST 17

char LICENSE[] SEC("license") = "GPL";

ES_BPF_EVENTS();

ES_BPF_COUNTERS(ES_PROC_C_N);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ES_PROC_CGROUP_MAX);
	__type(key, __u64);
	__type(value, struct es_proc_cgroup_counts);
} cgroups SEC(".maps");

static __always_inline void count_cgroup(__u64 cgid, int type)
{
	struct es_proc_cgroup_counts zero = {}, *c;
	long rc;

	c = bpf_map_lookup_elem(&cgroups, &cgid);
	if (!c) {
		rc = bpf_map_update_elem(&cgroups, &cgid, &zero, BPF_NOEXIST);
		if (rc && rc != -EEXIST) {
			if (rc == -E2BIG || rc == -ENOMEM)
				es_bpf_count(&counters, ES_PROC_C_LOST_CGROUP);
			return;
		}
		c = bpf_map_lookup_elem(&cgroups, &cgid);
		if (!c)
			return;
	}
	if (type == ES_PROC_EV_EXEC)
		__sync_fetch_and_add(&c->execs, 1);
	else if (type == ES_PROC_EV_FORK)
		__sync_fetch_and_add(&c->forks, 1);
	else
		__sync_fetch_and_add(&c->exits, 1);
}

/* Wakes the reader only when the ring is filling up; it drains on a timer
 * otherwise (fewer wake-ups under a steady stream). */
static __always_inline __u64 wakeup_flag(void)
{
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);

	return avail > size / ES_PROC_WAKEUP_DIV ? BPF_RB_FORCE_WAKEUP
						 : BPF_RB_NO_WAKEUP;
}

static __always_inline void fill(struct es_proc_event *e, __u32 type,
				 struct task_struct *task, __u64 cgid)
{
	e->source = ES_EV_SRC_PROCESS;
	e->type = type;
	e->pid = BPF_CORE_READ(task, tgid);
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->exit_status = 0;
	e->exit_signal = 0;
	e->cgroup_id = cgid;
	e->ts_ns = bpf_ktime_get_ns();
	e->lifetime_ns = 0;
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
}

SEC("tracepoint/sched/sched_process_exec")
int es_proc_exec(struct trace_event_raw_sched_process_exec *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 cgid = bpf_get_current_cgroup_id();
	struct es_proc_exec_event *e;
	unsigned off = ctx->__data_loc_filename & 0xFFFF;

	es_bpf_count(&counters, ES_PROC_C_EXECS);
	count_cgroup(cgid, ES_PROC_EV_EXEC);
	e = es_bpf_reserve(&events, sizeof(*e), &counters, ES_PROC_C_LOST_EXEC);
	if (!e)
		return 0;
	fill(&e->h, ES_PROC_EV_EXEC, task, cgid);
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename),
				  (void *)ctx + off);
	bpf_ringbuf_submit(e, wakeup_flag());
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int es_proc_exit(struct trace_event_raw_sched_process_template *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid(), cgid, start;
	struct es_proc_event *e;
	int code;

	if ((__u32)id != (__u32)(id >> 32))
		return 0;
	cgid = bpf_get_current_cgroup_id();
	es_bpf_count(&counters, ES_PROC_C_EXITS);
	count_cgroup(cgid, ES_PROC_EV_EXIT);
	e = es_bpf_reserve(&events, sizeof(*e), &counters, ES_PROC_C_LOST_EXIT);
	if (!e)
		return 0;
	fill(e, ES_PROC_EV_EXIT, task, cgid);
	code = BPF_CORE_READ(task, exit_code);
	if (code & 0x7f)
		e->exit_signal = code & 0x7f;
	else
		e->exit_status = (code >> 8) & 0xff;
	start = BPF_CORE_READ(task, start_time);
	e->lifetime_ns = e->ts_ns > start ? e->ts_ns - start : 0;
	bpf_ringbuf_submit(e, wakeup_flag());
	return 0;
}

/* args[0]: parent, args[1]: child (the tracepoint's TP_PROTO). */
SEC("raw_tracepoint/sched_process_fork")
int es_proc_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u64 cgid;
	struct es_proc_event *e;

	if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid))
		return 0;
	cgid = bpf_get_current_cgroup_id();
	es_bpf_count(&counters, ES_PROC_C_FORKS);
	count_cgroup(cgid, ES_PROC_EV_FORK);
	e = es_bpf_reserve(&events, sizeof(*e), &counters, ES_PROC_C_LOST_FORK);
	if (!e)
		return 0;
	fill(e, ES_PROC_EV_FORK, child, cgid);
	bpf_ringbuf_submit(e, wakeup_flag());
	return 0;
}
