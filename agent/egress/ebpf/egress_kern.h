/*
 * egress_kern.h - the kernel half of EgressPolicy enforcement: the
 * bpf/egress.bpf.c programs and maps, pinned in bpffs so that enforcement
 * outlives the agent, attached once at the root of the cgroup v2 hierarchy
 * through bpf_links, rule sets written and switched atomically (egress.h),
 * and read back for the actual state and drift checks.
 *
 * Pins, under pin_dir (default /sys/fs/bpf/edgesync/egress): one per map
 * (eg_lpm, eg_tgt, eg_cfg, eg_pol, eg_active, eg_viol) and one per hook
 * link (link_connect4, link_connect6, link_sendmsg4, link_sendmsg6).
 */
#ifndef ES_AGENT_EGRESS_KERN_H
#define ES_AGENT_EGRESS_KERN_H

#include <stddef.h>
#include <stdint.h>
#include "egress/egress_plan.h"
#include "es_err.h"

#define ES_EGK_HOOKS 4

/* Hook names in the order of every per-hook array below. */
extern const char *const es_egk_hook_names[ES_EGK_HOOKS];

typedef struct es_egk es_egk;

/* The attachments of the hooks, as the kernel reports them. */
typedef struct es_egk_attach {
	int ours[ES_EGK_HOOKS];        /* programs named es_eg_<hook> using this
					  pin directory's maps, attached at the
					  root for that attach type (another
					  agent's, with its own pin directory,
					  are not counted) */
	int linked[ES_EGK_HOOKS];      /* 1: this agent's link is among them */
	uint32_t prog_id[ES_EGK_HOOKS]; /* the program of this agent's link */
} es_egk_attach;

/*
 * Loads the programs and maps. Mounts bpffs at /sys/fs/bpf when that is not
 * a bpffs and pin_dir is under it; creates pin_dir. Maps already pinned
 * there are reused (their rule sets and counters stay); pinned links are
 * opened and switched to the freshly loaded programs (one atomic link
 * update each: no second attachment, no gap). Hooks without a pinned link
 * are attached to cgroup_root and pinned. *reused is set to 1 when maps
 * were reused. Errors: ES_ERR_UNSUPPORTED (the kernel or the privileges do
 * not allow cgroup BPF: err says what failed), ES_ERR_IO, ES_ERR_NOMEM.
 */
es_err es_egk_open(const char *pin_dir, const char *cgroup_root, es_egk **out,
		   int *reused, char *err, size_t errsz);

/*
 * Checks pins and attachments and repairs them: a missing or foreign pin
 * is pinned again, a link that is no longer attached is replaced by a new
 * attachment. what (whatsz bytes) lists what was repaired ("" when
 * nothing). Errors: ES_ERR_IO with err (what could not be repaired).
 */
es_err es_egk_repair(es_egk *k, char *what, size_t whatsz, char *err,
		     size_t errsz);

/*
 * Writes plan into the inactive set (emptied first) and then switches
 * eg_active to it with one map update; the previous set stays untouched
 * until the next write. A write starts at least one second after the
 * previous switch, so no program run still reads the set being rewritten.
 * On error the active set is unchanged. Errors: ES_ERR_IO (err says which
 * map update failed), ES_ERR_NOMEM.
 */
es_err es_egk_write(es_egk *k, const es_eg_plan *plan, char *err, size_t errsz);

/* Reads the active set back into *out (sorted; free with es_eg_plan_free)
 * and its number into *set (may be NULL). Errors: ES_ERR_IO, ES_ERR_NOMEM. */
es_err es_egk_read(es_egk *k, es_eg_plan *out, int *set, char *err,
		   size_t errsz);

/* Queries the root cgroup's attachments (bpf_prog_query). Errors: ES_ERR_IO. */
es_err es_egk_attachments(es_egk *k, es_egk_attach *out, char *err,
			  size_t errsz);

/* Refusals counted for slot since its counter was last reset; 0 on error. */
uint64_t es_egk_violations(es_egk *k, int slot);

/* Sets slot's refusal counter to 0. */
void es_egk_violations_reset(es_egk *k, int slot);

/*
 * Removes enforcement: unpins and closes every link (detaching the
 * programs), unpins the maps, removes pin_dir, and frees k. Also used
 * with k NULL to clear whatever an earlier run left pinned in pin_dir.
 * Errors: ES_ERR_IO (something could not be removed; err says what; the
 * rest is still removed).
 */
es_err es_egk_remove(es_egk *k, const char *pin_dir, char *err, size_t errsz);

/* 1 when pin_dir holds any pinned link or map of ours, else 0. */
int es_egk_pinned(const char *pin_dir);

/* Closes k without touching pins: enforcement stays in the kernel.
 * NULL-safe. */
void es_egk_close(es_egk *k);

#endif
