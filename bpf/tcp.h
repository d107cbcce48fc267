/*
 * tcp.h - types shared by bpf/tcp.bpf.c and agent/kcollect/kc_tcp.c.
 */
#ifndef ES_BPF_TCP_H
#define ES_BPF_TCP_H

#define ES_TCP_MAX_SOCKS   16384 /* connections tracked at once */
#define ES_TCP_MAX_CGROUPS 4096

/* Indexes of the `counters` array map. */
enum es_tcp_counter {
	ES_TCP_C_OPENED = 0,     /* active opens: SYN_SENT -> ESTABLISHED */
	ES_TCP_C_ACCEPTED,       /* passive opens: SYN_RECV -> ESTABLISHED */
	ES_TCP_C_CLOSED,         /* established connections that reached CLOSE */
	ES_TCP_C_RETRANS,        /* tcp:tcp_retransmit_skb */
	ES_TCP_C_LOST_SOCKS,     /* `socks` map full: the connection's start is not tracked */
	ES_TCP_C_LOST_CGROUPS,   /* `cgstats` map full: a cgroup's counts were not kept */
	ES_TCP_C_LOST_RINGBUF,   /* ring-buffer reservation failures */
	ES_TCP_C_MAX
};

/* Value of the `socks` map (key: the struct sock address). */
struct es_tcp_sock {
	__u64 start_ns;      /* bpf_ktime_get_ns at the first state seen */
	__u64 cgroup_id;     /* cgroup v2 id of the socket (its creator's cgroup) */
	__u64 bytes_sent;    /* tcp_sock.bytes_acked at the latest state change */
	__u64 bytes_received;/* tcp_sock.bytes_received at the latest state change */
	__u16 family;        /* AF_INET or AF_INET6 */
	__u16 sport;         /* host byte order; the 4-tuple is (re)read at ESTABLISHED */
	__u16 dport;
	__u8 passive;        /* 1: accepted */
	__u8 established;    /* 1: reached ESTABLISHED */
	__u8 saddr[16];      /* IPv4 in the first 4 bytes */
	__u8 daddr[16];
};

/* Value of the `cgstats` map (key: cgroup id). */
struct es_tcp_cgstats {
	__u64 opened;
	__u64 accepted;
	__u64 closed;
	__u64 bytes_sent;
	__u64 bytes_received;
};

/* Ring-buffer record: one closed connection. */
struct es_tcp_event {
	__u32 source;        /* ES_EV_SRC_TCP (es_events.h) */
	__u32 pad0;
	__u64 duration_ns;   /* 0 when the start was not seen */
	__u64 cgroup_id;
	__u64 bytes_sent;
	__u64 bytes_received;
	__u16 family;
	__u16 sport;
	__u16 dport;
	__u8 passive;
	__u8 pad;
	__u8 saddr[16];
	__u8 daddr[16];
};

#endif
