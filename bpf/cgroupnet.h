/*
 * cgroupnet.h - types shared by bpf/cgroupnet.bpf.c and
 * agent/kcollect/kc_cgroupnet.c.
 */
#ifndef ES_BPF_CGROUPNET_H
#define ES_BPF_CGROUPNET_H

#define ES_CGNET_MAX_CGROUPS 4096

/* Indexes of the `counters` array map. */
enum es_cgnet_counter {
	ES_CGNET_C_LOST = 0, /* packets not counted: the `stats` map was full */
	ES_CGNET_C_MAX
};

/* Value of the `stats` map (key: cgroup v2 id of the packet's socket).
 * Bytes are skb->len at the cgroup hook: the IP packet with its headers. */
struct es_cgnet_stats {
	__u64 rx_bytes;
	__u64 rx_packets;
	__u64 tx_bytes;
	__u64 tx_packets;
};

#endif
