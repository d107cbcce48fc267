// SPDX-License-Identifier: GPL-2.0
/*
 * egress.bpf.c - EgressPolicy enforcement (PROTOCOL.md "EgressPolicy"):
 * cgroup_sock_addr programs for connect(2) over IPv4 and IPv6 and for
 * sendmsg(2) on UDP, attached once at the root of the cgroup v2 hierarchy.
 * Each decides from the active rule set (egress.h): the policies that apply
 * to the caller's cgroup (the node-wide ones, and those targeting the cgroup
 * or one of its ancestors), then the rules whose CIDR contains the
 * destination (one LPM trie lookup). Deny policies refuse a match, Allow
 * policies refuse what does not match. Returning 0 makes the system call
 * fail with EPERM; refusals are counted per policy slot in eg_viol.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "egress.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, ES_EG_LPM_MAX);
	__type(key, struct es_eg_key);
	__type(value, struct es_eg_val);
} eg_lpm SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ES_EG_TGT_MAX);
	__type(key, struct es_eg_tkey);
	__type(value, __u32);
} eg_tgt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct es_eg_cfg);
} eg_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * ES_EG_MAX_POLICIES);
	__type(key, __u32);
	__type(value, struct es_eg_pol);
} eg_pol SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} eg_active SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ES_EG_MAX_POLICIES);
	__type(key, __u32);
	__type(value, __u64);
} eg_viol SEC(".maps");

/* The loops run through bpf_loop: each callback is verified once, where an
 * open-coded loop over unknown data makes the verifier explore every path. */

struct lvl_ctx {
	__u32 set;
	__u32 mask;
};

/* Level i of the caller's cgroup ancestry: adds the policies targeting it. */
static long lvl_cb(__u64 i, void *data)
{
	struct lvl_ctx *c = data;
	struct es_eg_tkey tk = {};
	__u32 *m;

	tk.cgid = bpf_get_current_ancestor_cgroup_id((int)i);
	if (!tk.cgid)
		return 1;
	tk.set = c->set;
	m = bpf_map_lookup_elem(&eg_tgt, &tk);
	if (m)
		c->mask |= *m;
	return 0;
}

struct ent_ctx {
	struct es_eg_val *v;
	__u32 matched;
	__u16 port;
	__u8 proto;
};

/* Entry i of the LPM value: adds its policy when protocol and port match. */
static long ent_cb(__u64 i, void *data)
{
	struct ent_ctx *c = data;
	struct es_eg_val *v = c->v;
	struct es_eg_ent *e;

	if (!v || i >= ES_EG_MAX_ENTRIES || i >= v->n)
		return 1;
	e = &v->e[i];
	if (e->proto && e->proto != c->proto)
		return 0;
	if (c->port < e->port_from || c->port > e->port_to)
		return 0;
	c->matched |= 1u << (e->slot & (ES_EG_MAX_POLICIES - 1));
	return 0;
}

/* Slot i: counts one refusal when it is in the denied mask (*data). */
static long viol_cb(__u64 i, void *data)
{
	__u32 denied = *(__u32 *)data, k = (__u32)i & (ES_EG_MAX_POLICIES - 1);
	__u64 *c;

	if (!(denied & (1u << k)))
		return 0;
	c = bpf_map_lookup_elem(&eg_viol, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
	return 0;
}

/* 1: allow, 0: refuse. addr is 16 bytes (IPv4 in the first 4). */
static __always_inline int decide(int fam, const __u8 *addr, __u16 port,
				  __u8 proto)
{
	struct es_eg_key k = {};
	struct es_eg_cfg *cfg;
	struct lvl_ctx lc = {};
	struct ent_ctx ec = {};
	__u32 zero = 0, set, applicable, denied, *act;

	act = bpf_map_lookup_elem(&eg_active, &zero);
	if (!act)
		return 1;
	set = *act & 1;
	cfg = bpf_map_lookup_elem(&eg_cfg, &set);
	if (!cfg)
		return 1;
	applicable = cfg->all;
	if (cfg->targeted) {
		lc.set = set;
		bpf_loop(ES_EG_MAX_LEVELS, lvl_cb, &lc, 0);
		applicable |= lc.mask;
	}
	applicable &= cfg->deny | cfg->allow;
	if (!applicable)
		return 1;
	k.data[0] = (__u8)(set << 4 | fam);
	if (fam == ES_EG_FAM4) {
		k.prefixlen = 8 + 32;
		__builtin_memcpy(&k.data[1], addr, 4);
	} else {
		k.prefixlen = 8 + 128;
		__builtin_memcpy(&k.data[1], addr, 16);
	}
	ec.v = bpf_map_lookup_elem(&eg_lpm, &k);
	ec.port = port;
	ec.proto = proto;
	if (ec.v)
		bpf_loop(ES_EG_MAX_ENTRIES, ent_cb, &ec, 0);
	denied = ((ec.matched & cfg->deny) | (cfg->allow & ~ec.matched)) & applicable;
	if (!denied)
		return 1;
	bpf_loop(ES_EG_MAX_POLICIES, viol_cb, &denied, 0);
	return 0;
}

static __always_inline int decide4(struct bpf_sock_addr *ctx)
{
	__u8 addr[16] = {};
	__u32 ip = ctx->user_ip4;

	__builtin_memcpy(addr, &ip, 4);
	return decide(ES_EG_FAM4, addr, bpf_ntohs((__u16)ctx->user_port),
		      (__u8)ctx->protocol);
}

static __always_inline int decide6(struct bpf_sock_addr *ctx)
{
	__u32 w[4];
	__u8 addr[16];

	w[0] = ctx->user_ip6[0];
	w[1] = ctx->user_ip6[1];
	w[2] = ctx->user_ip6[2];
	w[3] = ctx->user_ip6[3];
	__builtin_memcpy(addr, w, 16);
	/* ::ffff:a.b.c.d on a dual-stack socket is an IPv4 destination. */
	if (w[0] == 0 && w[1] == 0 && w[2] == bpf_htonl(0xffff)) {
		__u8 a4[16] = {};

		__builtin_memcpy(a4, &w[3], 4);
		return decide(ES_EG_FAM4, a4, bpf_ntohs((__u16)ctx->user_port),
			      (__u8)ctx->protocol);
	}
	return decide(ES_EG_FAM6, addr, bpf_ntohs((__u16)ctx->user_port),
		      (__u8)ctx->protocol);
}

SEC("cgroup/connect4")
int es_eg_connect4(struct bpf_sock_addr *ctx)
{
	return decide4(ctx);
}

SEC("cgroup/connect6")
int es_eg_connect6(struct bpf_sock_addr *ctx)
{
	return decide6(ctx);
}

SEC("cgroup/sendmsg4")
int es_eg_sendmsg4(struct bpf_sock_addr *ctx)
{
	return decide4(ctx);
}

SEC("cgroup/sendmsg6")
int es_eg_sendmsg6(struct bpf_sock_addr *ctx)
{
	return decide6(ctx);
}
