// SPDX-License-Identifier: GPL-2.0
/*
 * cgroupnet.bpf.c - bytes and packets in and out per cgroup v2, counted by
 * cgroup_skb programs attached to the root of the hierarchy. Both programs
 * always allow the packet (return 1): they observe, never filter.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "es_bpf_common.h"
#include "cgroupnet.h"

#define ES_EEXIST 17

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ES_CGNET_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct es_cgnet_stats);
} stats SEC(".maps");

ES_BPF_COUNTERS(ES_CGNET_C_MAX);

static __always_inline void account(struct __sk_buff *skb, int egress)
{
	struct es_cgnet_stats zero = {}, *s;
	__u64 id = bpf_skb_cgroup_id(skb);
	long rc;

	s = bpf_map_lookup_elem(&stats, &id);
	if (!s) {
		rc = bpf_map_update_elem(&stats, &id, &zero, BPF_NOEXIST);
		if (!rc || rc == -ES_EEXIST)
			s = bpf_map_lookup_elem(&stats, &id);
	}
	if (!s) {
		es_bpf_count(&counters, ES_CGNET_C_LOST);
		return;
	}
	if (egress) {
		__sync_fetch_and_add(&s->tx_bytes, skb->len);
		__sync_fetch_and_add(&s->tx_packets, 1);
	} else {
		__sync_fetch_and_add(&s->rx_bytes, skb->len);
		__sync_fetch_and_add(&s->rx_packets, 1);
	}
}

SEC("cgroup_skb/ingress")
int es_cgnet_ingress(struct __sk_buff *skb)
{
	account(skb, 0);
	return 1;
}

SEC("cgroup_skb/egress")
int es_cgnet_egress(struct __sk_buff *skb)
{
	account(skb, 1);
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
