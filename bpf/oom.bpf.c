// SPDX-License-Identifier: GPL-2.0
/*
 * oom.bpf.c - OOM kills from the tracepoint oom:mark_victim.
 *
 * The tracepoint runs in the task that triggered the kill, which is the
 * victim only sometimes: the victim's cgroup is taken from the current task
 * only when it is the victim, else user space resolves it from the pid.
 * comm is a tracepoint field on newer kernels only (checked with CO-RE).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "es_bpf_common.h"
#include "es_events.h"
#include "oom.h"

ES_BPF_COUNTERS(ES_OOM_C_MAX);

ES_BPF_EVENTS();

SEC("tracepoint/oom/mark_victim")
int es_oom_victim(struct trace_event_raw_mark_victim *ctx)
{
	struct es_oom_event *e;
	__u32 pid = ctx->pid;

	es_bpf_count(&counters, ES_OOM_C_KILLS);
	e = es_bpf_reserve(&events, sizeof(*e), &counters, ES_OOM_C_LOST_RINGBUF);
	if (!e)
		return 0;
	__builtin_memset(e, 0, sizeof(*e));
	e->source = ES_EV_SRC_OOM;
	e->time_ns = bpf_ktime_get_boot_ns();
	e->pid = pid;
	if ((bpf_get_current_pid_tgid() >> 32) == pid)
		e->cgroup_id = bpf_get_current_cgroup_id();
	if (bpf_core_field_exists(ctx->__data_loc_comm)) {
		__u32 loc = BPF_CORE_READ(ctx, __data_loc_comm);

		if (bpf_probe_read_kernel_str(e->comm, sizeof(e->comm),
					      (char *)ctx + (loc & 0xffff)) > 0)
			e->has_comm = 1;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
