/*
 * egress_backend.h - the kernel mechanisms that enforce EgressPolicy
 * (egress.h), each behind one table of operations: cgroup BPF
 * (egress/ebpf/, es_egb_ebpf_ops) and nftables (egress/nftables/,
 * es_egb_nft_ops). The enforcer (egress.c) picks one per egress-backend,
 * keeps the policies, their slots, conditions and events, and calls a
 * backend only through its table; each backend owns its state (a void *,
 * opaque to the enforcer) and removes its own kernel objects, also those an
 * earlier run left when the enforcer settles on another backend.
 *
 * Threading: the agent's event-loop thread only.
 *
 * Adding a backend: write `const es_egress_backend_ops es_egb_<name>_ops`,
 * declare it below and add it to the list in egress.c.
 */
#ifndef ES_AGENT_EGRESS_BACKEND_H
#define ES_AGENT_EGRESS_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "egress/egress_plan.h"
#include "es_err.h"

/* What every backend may need from the enforcer (all borrowed). */
typedef struct es_egb_env {
	const char *pin_dir;   /* bpffs directory of the ebpf backend's pins */
	const char *state_dir; /* the agent's state directory ("": none) */
	const char *cg_root;   /* the cgroup v2 hierarchy ("": none found) */
	int cg_mounted;        /* 1: the agent mounted cg_root (open only) */
	int forced;            /* 1: egress-backend names one backend */
	const char *prior;     /* open: why the backend tried before this one
				  could not load ("" when none was) */
} es_egb_env;

/* The slots an earlier run left in the kernel (adopt_slots). */
typedef struct es_egb_slots {
	char uid[ES_EG_MAX_POLICIES][40];  /* owner of each slot, "" free */
	uint64_t count[ES_EG_MAX_POLICIES]; /* its refusal counter */
} es_egb_slots;

/* adopt_counts: the table holds no counter of this policy. */
#define ES_EGB_NOT_HELD UINT64_MAX

/*
 * One backend. The enforced policies are handed over as es_eg_input
 * (slot, spec, uid, name, generation, the cgroup ids their targets
 * selected; egress_plan.h), borrowed for the call. Optional members are
 * NULL when the backend has nothing to do there.
 */
typedef struct es_egress_backend_ops {
	const char *name;        /* egress-backend's value, and the backend the
				    Enforced message names: "ebpf", "nftables" */
	const char *unavailable; /* what the reason it cannot load starts
				    with: "cgroup BPF unavailable" */
	const char *unavailable_reason; /* Enforced reason when it is the one
				    backend tried and cannot load */
	const char *unenforced;  /* the backend member of the actual state of
				    a policy it does not enforce */
	const char *removed;     /* message of the event EgressEnforcementRemoved
				    (and the log line) once its objects are gone */
	int remove_best_effort;  /* 1: remove goes on past a failure (the rest
				    is gone), so the removal is still reported */

	/* 1 when an earlier run left this backend's objects (pins, a table it
	 * marked as written), else 0. */
	int (*leftover)(const es_egb_env *env);
	/* Probes and loads (env->cg_root is set), reusing what an earlier run
	 * left; logs at info what it loaded. *out: the state. Errors, with why
	 * in err: ES_ERR_UNSUPPORTED (this host cannot), ES_ERR_IO,
	 * ES_ERR_NOMEM. */
	es_err (*open)(const es_egb_env *env, void **out, char *err, size_t errsz);
	/* Optional. Right after open: 1 with *out filled when the kernel holds
	 * the slots of an earlier run (so that its policies keep slots and
	 * counters), else 0. */
	int (*adopt_slots)(void *b, es_egb_slots *out);
	/* Optional. Before the first apply after open: count[i] is the refusals
	 * an earlier run counted for in[i] (same name and uid), or
	 * ES_EGB_NOT_HELD. Errors: ES_ERR_IO (try again next time),
	 * ES_ERR_NOMEM. */
	es_err (*adopt_counts)(void *b, const es_eg_input *in, size_t n,
			       uint64_t *count, char *err, size_t errsz);
	/* Optional. Sets the refusal counter of a slot newly given to a
	 * policy to 0. */
	void (*reset_violations)(void *b, int slot);
	/*
	 * Brings the kernel to the n policies in[]: reads back what is there,
	 * repairs and reports in drift (driftsz bytes, "" when none) what
	 * differs from what this backend wrote or attached, and writes the
	 * rules when they differ from in[] or drifted. *ok 1 on success, else
	 * 0 with err.
	 */
	void (*apply)(void *b, const es_eg_input *in, size_t n, char *drift,
		      size_t driftsz, int *ok, char *err, size_t errsz);
	/* Optional. Reads the counters once per tick, for violations. */
	void (*poll)(void *b);
	/* Refusals counted for enforced policy p; 0 when unknown. */
	uint64_t (*violations)(void *b, const es_eg_input *p);
	/* Where an enforced policy is enforced, for the Enforced message
	 * ("hooks ... at the cgroup v2 root"), into where (sz bytes). */
	void (*describe)(const es_eg_input *p, char *where, size_t sz);
	/*
	 * The actual state read back from the kernel of n EgressPolicy
	 * entries: out[i] a new object (the members es_egress_annotate lists)
	 * for each enforced pol[i]; entries with pol[i] NULL are left to the
	 * caller. Errors (the caller frees what out[] holds): ES_ERR_IO (the
	 * kernel's state could not be read; err), ES_ERR_NOMEM.
	 */
	es_err (*actual)(void *b, const es_eg_input *const *pol, size_t n,
			 cJSON **out, char *err, size_t errsz);
	/*
	 * Removes every kernel object of this backend (also what an earlier
	 * run left) and frees *b (NULL: there is no state, only leftovers),
	 * setting it to NULL, once they are gone (with remove_best_effort:
	 * always). Errors: ES_ERR_IO, ES_ERR_UNSUPPORTED (err says what is
	 * left).
	 */
	es_err (*remove)(void **b, const es_egb_env *env, char *err, size_t errsz);
	/* Frees the state; the kernel objects stay (enforcement outlives the
	 * agent). NULL-safe. */
	void (*free)(void *b);
} es_egress_backend_ops;

extern const es_egress_backend_ops es_egb_ebpf_ops;
extern const es_egress_backend_ops es_egb_nft_ops;

#endif
