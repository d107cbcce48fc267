// SPDX-License-Identifier: GPL-2.0
/*
 * tcp.bpf.c - TCP connections opened, accepted and closed (with 4-tuple,
 * duration and bytes) and retransmits, from the tracepoints
 * sock:inet_sock_set_state and tcp:tcp_retransmit_skb.
 *
 * The cgroup of a connection is the cgroup of its socket (the creator's,
 * inherited by accepted sockets from their listener), read at the first
 * state change seen: state changes often run in softirq context, where the
 * current task is unrelated.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "es_bpf_common.h"
#include "es_events.h"
#include "tcp.h"

#define ES_AF_INET 2
#define ES_AF_INET6 10
#define ES_IPPROTO_TCP 6
#define ES_EEXIST 17

enum {
	ES_ST_ESTABLISHED = 1, ES_ST_SYN_SENT, ES_ST_SYN_RECV, ES_ST_FIN_WAIT1,
	ES_ST_FIN_WAIT2, ES_ST_TIME_WAIT, ES_ST_CLOSE, ES_ST_CLOSE_WAIT,
	ES_ST_LAST_ACK, ES_ST_LISTEN, ES_ST_CLOSING, ES_ST_NEW_SYN_RECV,
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ES_TCP_MAX_SOCKS);
	__type(key, __u64);
	__type(value, struct es_tcp_sock);
} socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ES_TCP_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct es_tcp_cgstats);
} cgstats SEC(".maps");

ES_BPF_COUNTERS(ES_TCP_C_MAX);

ES_BPF_EVENTS();

static __always_inline __u64 sock_cgroup_id(const struct sock *sk)
{
	struct cgroup *cg;

	if (!bpf_core_field_exists(sk->sk_cgrp_data.cgroup))
		return 0;
	cg = BPF_CORE_READ(sk, sk_cgrp_data.cgroup);
	if (!cg)
		return 0;
	return BPF_CORE_READ(cg, kn, id);
}

static __always_inline struct es_tcp_cgstats *cgstats_of(__u64 id)
{
	struct es_tcp_cgstats zero = {}, *s;
	long rc;

	s = bpf_map_lookup_elem(&cgstats, &id);
	if (s)
		return s;
	rc = bpf_map_update_elem(&cgstats, &id, &zero, BPF_NOEXIST);
	if (rc && rc != -ES_EEXIST) {
		es_bpf_count(&counters, ES_TCP_C_LOST_CGROUPS);
		return NULL;
	}
	return bpf_map_lookup_elem(&cgstats, &id);
}

static __always_inline void read_bytes(const struct sock *sk, __u64 *sent, __u64 *received)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;

	*sent = BPF_CORE_READ(tp, bytes_acked);
	*received = BPF_CORE_READ(tp, bytes_received);
}

/* The verifier refuses loads through a moved ctx pointer: the address
 * arrays are copied with a helper. */
static __always_inline void copy_addrs(__u8 saddr[16], __u8 daddr[16],
				       const struct trace_event_raw_inet_sock_set_state *ctx)
{
	if (ctx->family == ES_AF_INET) {
		bpf_probe_read_kernel(saddr, 4, ctx->saddr);
		bpf_probe_read_kernel(daddr, 4, ctx->daddr);
	} else {
		bpf_probe_read_kernel(saddr, 16, ctx->saddr_v6);
		bpf_probe_read_kernel(daddr, 16, ctx->daddr_v6);
	}
}

static __always_inline void fill_tuple(struct es_tcp_sock *s,
				       const struct trace_event_raw_inet_sock_set_state *ctx)
{
	s->family = ctx->family;
	s->sport = ctx->sport;
	s->dport = ctx->dport;
	copy_addrs(s->saddr, s->daddr, ctx);
}

/* The tracked entry of sk, created when missing; NULL when the map is full
 * (counted). */
static __always_inline struct es_tcp_sock *track(__u64 key, const struct sock *sk,
						 const struct trace_event_raw_inet_sock_set_state *ctx,
						 int passive)
{
	struct es_tcp_sock *s, fresh = {};
	long rc;

	s = bpf_map_lookup_elem(&socks, &key);
	if (s)
		return s;
	fresh.start_ns = bpf_ktime_get_ns();
	fresh.cgroup_id = sock_cgroup_id(sk);
	if (!fresh.cgroup_id && ctx->newstate == ES_ST_SYN_SENT)
		fresh.cgroup_id = bpf_get_current_cgroup_id();
	fresh.passive = passive;
	fill_tuple(&fresh, ctx);
	rc = bpf_map_update_elem(&socks, &key, &fresh, BPF_NOEXIST);
	if (rc && rc != -ES_EEXIST) {
		es_bpf_count(&counters, ES_TCP_C_LOST_SOCKS);
		return NULL;
	}
	return bpf_map_lookup_elem(&socks, &key);
}

static __always_inline int was_established(int oldstate)
{
	return oldstate == ES_ST_ESTABLISHED || oldstate == ES_ST_FIN_WAIT1 ||
	       oldstate == ES_ST_FIN_WAIT2 || oldstate == ES_ST_CLOSE_WAIT ||
	       oldstate == ES_ST_LAST_ACK || oldstate == ES_ST_CLOSING ||
	       oldstate == ES_ST_TIME_WAIT;
}

static __always_inline void on_close(__u64 key, const struct sock *sk,
				     const struct trace_event_raw_inet_sock_set_state *ctx)
{
	struct es_tcp_sock *s = bpf_map_lookup_elem(&socks, &key);
	struct es_tcp_cgstats *cs;
	struct es_tcp_event *e;
	__u64 sent, received, cgid;
	int established;

	established = s ? s->established : was_established(ctx->oldstate);
	if (!established) {
		if (s)
			bpf_map_delete_elem(&socks, &key);
		return;
	}
	read_bytes(sk, &sent, &received);
	cgid = s ? s->cgroup_id : sock_cgroup_id(sk);
	es_bpf_count(&counters, ES_TCP_C_CLOSED);
	cs = cgstats_of(cgid);
	if (cs) {
		__sync_fetch_and_add(&cs->closed, 1);
		__sync_fetch_and_add(&cs->bytes_sent, sent);
		__sync_fetch_and_add(&cs->bytes_received, received);
	}
	e = es_bpf_reserve(&events, sizeof(*e), &counters, ES_TCP_C_LOST_RINGBUF);
	if (e) {
		__builtin_memset(e, 0, sizeof(*e));
		e->source = ES_EV_SRC_TCP;
		e->cgroup_id = cgid;
		e->bytes_sent = sent;
		e->bytes_received = received;
		if (s) {
			e->duration_ns = bpf_ktime_get_ns() - s->start_ns;
			e->passive = s->passive;
		}
		e->family = ctx->family;
		e->sport = ctx->sport;
		e->dport = ctx->dport;
		copy_addrs(e->saddr, e->daddr, ctx);
		bpf_ringbuf_submit(e, 0);
	}
	if (s)
		bpf_map_delete_elem(&socks, &key);
}

SEC("tracepoint/sock/inet_sock_set_state")
int es_tcp_state(struct trace_event_raw_inet_sock_set_state *ctx)
{
	const struct sock *sk = ctx->skaddr;
	__u64 key = (__u64)(unsigned long)sk;
	int oldstate = ctx->oldstate, newstate = ctx->newstate;
	struct es_tcp_cgstats *cs;
	struct es_tcp_sock *s;

	if (ctx->protocol != ES_IPPROTO_TCP)
		return 0;
	if (ctx->family != ES_AF_INET && ctx->family != ES_AF_INET6)
		return 0;

	if (newstate == ES_ST_SYN_SENT || newstate == ES_ST_SYN_RECV) {
		track(key, sk, ctx, newstate == ES_ST_SYN_RECV);
		return 0;
	}
	if (newstate == ES_ST_ESTABLISHED &&
	    (oldstate == ES_ST_SYN_SENT || oldstate == ES_ST_SYN_RECV)) {
		int passive = oldstate == ES_ST_SYN_RECV;

		es_bpf_count(&counters, passive ? ES_TCP_C_ACCEPTED : ES_TCP_C_OPENED);
		s = track(key, sk, ctx, passive);
		if (!s)
			return 0;
		/* An active open enters SYN_SENT before inet_hash_connect picks
		 * its source port: the 4-tuple is complete only now. */
		fill_tuple(s, ctx);
		s->established = 1;
		s->passive = passive;
		cs = cgstats_of(s->cgroup_id);
		if (cs) {
			if (passive)
				__sync_fetch_and_add(&cs->accepted, 1);
			else
				__sync_fetch_and_add(&cs->opened, 1);
		}
		return 0;
	}
	if (newstate == ES_ST_CLOSE) {
		on_close(key, sk, ctx);
		return 0;
	}
	s = bpf_map_lookup_elem(&socks, &key);
	if (s)
		read_bytes(sk, &s->bytes_sent, &s->bytes_received);
	return 0;
}

SEC("tracepoint/tcp/tcp_retransmit_skb")
int es_tcp_retransmit(void *ctx)
{
	es_bpf_count(&counters, ES_TCP_C_RETRANS);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
