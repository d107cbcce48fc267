/*
 * egress_int.h - what egress.c (policies, conditions, drift) shares with
 * egress_view.c (the actual state, teardown of the module). Private to the
 * egress module.
 */
#ifndef ES_AGENT_EGRESS_INT_H
#define ES_AGENT_EGRESS_INT_H

#include <stdint.h>
#include <time.h>
#include <libwebsockets.h>
#include "egress/egress.h"
#include "egress/ebpf/egress_kern.h"
#include "egress/nftables/egress_nft.h"
#include "egress/egress_plan.h"
#include "es_egress.h"

typedef struct eg_pol {
	char uid[40], name[256];
	int64_t generation;
	int slot;                /* -1: none (not enforced) */
	es_egress_spec *spec;    /* NULL: invalid spec */
	uint64_t *cgids;
	size_t ncgids;
	uint64_t reported;       /* refusals already reported in events */
	time_t last_event;
} eg_pol;

/* egress-backend: which kernel mechanism enforces. */
enum {
	EG_BACKEND_AUTO = ES_EGRESS_BACKEND_AUTO,
	EG_BACKEND_EBPF = ES_EGRESS_BACKEND_EBPF,
	EG_BACKEND_NFT = ES_EGRESS_BACKEND_NFTABLES,
};

struct es_egress {
	char pin_dir[512], state_dir[512], node_name[256];
	char cg_conf[512];   /* setting cgroup-root, "" = find one */
	int check_interval_s;
	int backend;             /* EG_BACKEND_* asked for */
	es_egk *k;
	es_egnft *nft;           /* the nftables backend, when it enforces */
	const char *unavail_reason; /* Enforced reason while nothing is loaded */
	char cg_root[512];
	char unavailable[512];   /* why the kernel side is not loaded */
	eg_pol *pols;
	size_t npols;
	uint64_t slot_count[ES_EG_MAX_POLICIES]; /* counter value seen at adoption */
	char slot_uid[ES_EG_MAX_POLICIES][40];   /* slot owners, from the kernel */
	time_t adopted_at;       /* when the kernel's slots were adopted */
	es_eg_plan written;
	int have_written;
	struct lws_context *ctx;
	lws_sorted_usec_list_t sul;
	es_store *st;
	es_egress_notify_fn fn;
	void *user;
	time_t next_check;
};

/* Frees the policies of e. */
void egress__pols_free(es_egress *e);

/* Resolves the targets of every enforced policy (slot >= 0) to cgroup ids
 * anew (each policy's cgids/ncgids; agent/egress/egress_cgroup.h), for either
 * backend. Errors: as es_egcg_resolve. */
es_err egress__resolve_targets(es_egress *e, char *err, size_t errsz);

#endif
