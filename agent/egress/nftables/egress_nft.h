/*
 * egress_nft.h - the nftables backend of EgressPolicy enforcement (egress.h,
 * PROTOCOL.md "EgressPolicy"): used where cgroup BPF does not work
 * (egress-backend auto) or when egress-backend is nftables.
 *
 * The agent owns one table, `inet edgesync_egress`: a base chain `output`
 * (type filter hook output priority 0, policy accept) that jumps, for each
 * policy, to the chain `p_<policy name>` (node-wide: unconditionally;
 * targeted: once per selected cgroup v2, `socket cgroupv2 level N "<path>"`,
 * which also covers its descendants), and a named counter `p_<policy name>`
 * of the refused packets. Only what opens an outbound connection is
 * matched, as the cgroup BPF hooks do: a TCP SYN (without ACK) and every
 * UDP datagram. Deny: a listed TCP destination is rejected with
 * `icmpx admin-prohibited` (connect() fails at once with EHOSTUNREACH),
 * a listed UDP one dropped (send fails with EPERM). Allow: listed
 * destinations return to `output` (other policies still decide), the
 * policy's other TCP SYNs are rejected and its other UDP datagrams dropped.
 * One kernel rule per spec rule, protocol and port range (no sets: nft
 * would merge overlapping ranges, and the rules read back would no longer
 * be the spec's). Every rule carries the comment "<uid> g<generation> <Deny|Allow>", with
 * " any" for both rules of a protocol Any rule and " rest" for the Allow
 * catch-alls, so that the rules read back from the kernel give the spec.
 *
 * A ruleset is written as one nft transaction that deletes and recreates
 * the table (no moment enforces nothing or a mix; counters carried over).
 * The table stays in the kernel while the agent is stopped or killed; a
 * restarted agent rewrites it (one table, never two). The drift check
 * lists the table (libnftables JSON output) and compares it with what the
 * agent listed right after its own write.
 *
 * The backend's operations (loading, writing, drift, counters, removal)
 * are es_egb_nft_ops (egress_backend.h, egress_nft.c); this header has the
 * text side: the ruleset and reading a listing back.
 *
 * Threading: the event-loop thread only (libnftables contexts are not
 * shared).
 */
#ifndef ES_AGENT_EGRESS_NFT_H
#define ES_AGENT_EGRESS_NFT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "es_egress.h"
#include "es_err.h"

#define ES_EGNFT_TABLE "edgesync_egress"  /* family inet */
#define ES_EGNFT_CHAIN "output"           /* the base chain */
/* nftables (1.0, SYSFS_CGROUPSV2_PATH) resolves a `socket cgroupv2` path
 * relative to this directory, whatever the cgroup v2 mount point is. */
#define ES_EGNFT_CGROUP_BASE "/sys/fs/cgroup"
#define ES_EGNFT_PATH_MAX 1024
/* The file in the state directory that says this agent wrote the table
 * (so that agents of other state directories never remove it). */
#define ES_EGNFT_MARKER "egress-nftables"

/* One selected cgroup as nft names it. */
typedef struct es_egnft_cgroup {
	char path[ES_EGNFT_PATH_MAX]; /* relative to ES_EGNFT_CGROUP_BASE */
	int level;                    /* depth below the cgroup v2 root (0: root) */
} es_egnft_cgroup;

/* One policy as the ruleset builder takes it (all borrowed). */
typedef struct es_egnft_input {
	const char *name;             /* metadata.name: [a-z0-9.-], 1..253 bytes */
	const char *uid;              /* metadata.uid: [A-Za-z0-9-], may be "" */
	int64_t generation;
	const es_egress_spec *spec;
	const es_egnft_cgroup *cgroups; /* ignored when spec->targets.node */
	size_t ncgroups;
	uint64_t packets, bytes;      /* the counter's starting values */
} es_egnft_input;

/*
 * The nft script (libnftables input) that replaces the table with the
 * rules of in[0..n) in one transaction: "add table", "delete table", then
 * the table block (counters, chain output, one chain per policy, in the
 * order of in). *out is a new NUL-terminated string (caller frees).
 * Errors: ES_ERR_INVAL (a name, uid or cgroup path that cannot be written
 * in nft syntax, or a comment over 128 bytes; err names it), ES_ERR_NOMEM.
 */
es_err es_egnft_ruleset(const es_egnft_input *in, size_t n, char **out,
			char *err, size_t errsz);

/*
 * The actual state of policy name (uid; "" or NULL accepts any) in listing,
 * the JSON of `list table inet edgesync_egress` (libnftables with
 * NFT_CTX_OUTPUT_JSON; NULL: no table): a new object {backend "nftables",
 * loaded, table, chain, generation, action, rules (the spec's shape, one
 * object per kernel rule, Any for a TCP and a UDP rule tagged " any" with
 * the same destination and ports), nodeWide, targetCgroups, violations}.
 * loaded is false (and only backend, loaded, table, chain are set) when no
 * rule of the policy's uid is in the table. NULL on allocation failure.
 */
cJSON *es_egnft_actual(const cJSON *listing, const char *name,
		       const char *uid);

/* Packets counted by the counter p_<name> in listing (a table or counters
 * listing); 0 when absent. *found (may be NULL) is set to 1 when present. */
uint64_t es_egnft_counter(const cJSON *listing, const char *name,
			  uint64_t *bytes, int *found);

/* The uid in the comments of the rules of policy name in listing, copied
 * into buf (sz bytes); "" when no rule of it is there. Returns buf. */
char *es_egnft_uid(const cJSON *listing, const char *name, char *buf,
		   size_t sz);

#endif
