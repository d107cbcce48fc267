/*
 * egress_int.h - what egress.c (policies, slots, conditions, drift, the
 * choice of backend) shares with egress_view.c (the actual state, freeing
 * the enforcer). Private to the egress module; the backends see only
 * egress_backend.h.
 */
#ifndef ES_AGENT_EGRESS_INT_H
#define ES_AGENT_EGRESS_INT_H

#include <stdint.h>
#include <time.h>
#include <libwebsockets.h>
#include "egress/egress.h"
#include "egress/egress_backend.h"
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

struct es_egress {
	char pin_dir[512], state_dir[512], node_name[256];
	char cg_conf[512];   /* setting cgroup-root, "" = find one */
	int check_interval_s;
	const es_egress_backend_ops *only; /* egress-backend names it; NULL: auto */
	const es_egress_backend_ops *ops;  /* the backend loaded, NULL: none */
	void *b;                 /* its state (egress_backend.h) */
	int adopt_owed;          /* 1: ops->adopt_counts is still to run */
	const char *unavail_reason; /* Enforced reason while nothing is loaded */
	char cg_root[512];
	char unavailable[512];   /* why the kernel side is not loaded */
	eg_pol *pols;
	size_t npols;
	uint64_t slot_count[ES_EG_MAX_POLICIES]; /* counter value seen at adoption */
	char slot_uid[ES_EG_MAX_POLICIES][40];   /* slot owners, from the kernel */
	time_t adopted_at;       /* when the kernel's slots were adopted */
	struct lws_context *ctx;
	lws_sorted_usec_list_t sul;
	es_store *st;
	es_egress_notify_fn fn;
	void *user;
	time_t next_check;
};

/* Frees the policies of e. */
void egress__pols_free(es_egress *e);

/* p as the backends take it (borrowing p's members). */
void egress__pol_input(const eg_pol *p, es_eg_input *in);

#endif
