/*
 * egress.h - types and constants shared by bpf/egress.bpf.c and the agent's
 * EgressPolicy enforcer (agent/egress/ebpf/egress_kern.c). Fixed-width types only.
 *
 * Two rule sets (0 and 1) live side by side in the same maps; eg_active
 * holds the set the programs use. The agent writes the inactive set
 * completely, then switches eg_active with one map update: a connection is
 * decided by one set, never a mix, and never by none.
 */
#ifndef ES_BPF_EGRESS_H
#define ES_BPF_EGRESS_H

#define ES_EG_MAX_POLICIES 32   /* policy slots: bit i of a mask is slot i */
#define ES_EG_MAX_ENTRIES 64    /* rule entries in one LPM value */
#define ES_EG_LPM_MAX 4096      /* prefixes, both sets together */
#define ES_EG_TGT_MAX 8192      /* targeted cgroups, both sets together */
#define ES_EG_MAX_LEVELS 32     /* cgroup ancestor levels looked at */
#define ES_EG_KEY_BYTES 20      /* LPM key data: 1 set/family byte + 16 + pad */

#define ES_EG_FAM4 4
#define ES_EG_FAM6 6

#define ES_EG_ACTION_DENY 0
#define ES_EG_ACTION_ALLOW 1

/* LPM trie key. data[0] = set << 4 | family (always matched: every stored
 * prefixlen is at least 8); data[1..] the address in network byte order;
 * prefixlen = 8 + the CIDR's prefix length. */
struct es_eg_key {
	__u32 prefixlen;
	__u8 data[ES_EG_KEY_BYTES];
};

/* One (policy, protocol, port range) entry of an LPM value. A value holds
 * the entries of its own prefix (own = 1) and of every stored prefix that
 * contains it (own = 0), so one longest-prefix lookup finds every rule
 * whose CIDR contains the destination. */
struct es_eg_ent {
	__u8 slot;       /* policy slot, < ES_EG_MAX_POLICIES */
	__u8 proto;      /* 0 any, 6 TCP, 17 UDP */
	__u8 own;
	__u8 pad;
	__u16 port_from; /* host byte order, inclusive */
	__u16 port_to;
};

struct es_eg_val {
	__u32 n;
	__u32 pad;
	struct es_eg_ent e[ES_EG_MAX_ENTRIES];
};

/* Targeted cgroup (its id, as bpf_get_current_ancestor_cgroup_id gives)
 * in one set; the value is the mask of policy slots that target it and so
 * every cgroup below it. */
struct es_eg_tkey {
	__u64 cgid;
	__u32 set;
	__u32 pad;
};

/* Per set (eg_cfg[set]): masks of policy slots. */
struct es_eg_cfg {
	__u32 all;       /* policies for the whole node */
	__u32 deny;      /* action Deny */
	__u32 allow;     /* action Allow (only the listed destinations) */
	__u32 targeted;  /* policies with targets (non-zero: look at cgroups) */
};

/* Per set and slot (eg_pol[set * ES_EG_MAX_POLICIES + slot]): what the
 * slot holds, for the agent's read-back; the programs do not read it. */
struct es_eg_pol {
	__u64 generation;
	__u32 used;
	__u32 action;
	char uid[40];
	char name[256];
};

#endif
