/*
 * store_etcd_int.h - what store_etcd.c (the mirror and object writes) and
 * store_etcd_session.c (node sessions bound to this controller's lease)
 * share. Private to the store_etcd module.
 */
#ifndef ES_CTRL_STORE_ETCD_INT_H
#define ES_CTRL_STORE_ETCD_INT_H

#include <stdint.h>
#include <libwebsockets.h>

#include "etcd/etcd_client.h"
#include "store/store_etcd.h"

typedef struct wop wop;
typedef struct sop sop;
typedef struct store_etcd_enroll store_etcd_enroll; /* store_etcd_enroll.c */

typedef struct est {
	es_store *store;
	struct lws_context *ctx;
	es_etcd *e;
	es_db *db;
	char *prefix;        /* etcd-prefix */
	size_t plen;
	char *opfx;          /* <prefix>objects/ */
	size_t oplen;
	char opend[512];     /* its range end */
	size_t opendlen;
	es_etcd_watch *w;
	int listing, synced, relist_owed;
	int followed;        /* the file mirrored etcd before this list */
	int64_t rev;         /* the mirror's revision */
	wop *ops;            /* writes in progress */
	lws_sorted_usec_list_t sul;
	/* store_etcd_session.c */
	char id[320];        /* this controller: <host>/<uuid> */
	int64_t lease;       /* 0: none yet */
	int lease_busy;      /* a grant or keepalive in flight */
	int64_t keepalive_due_us;
	sop *takes;          /* session takes waiting for the lease or etcd */
	store_etcd_enroll *enroll; /* store_etcd_enroll.c */
} est;

/* Starts the session half: the controller's id and its lease grant.
 * Errors: ES_ERR_NOMEM. */
es_err store_etcd__session_start(est *s);
/* From the store's timer: the lease grant again, the keepalive when due. */
void store_etcd__session_tick(est *s, int64_t now_us);
/* After es_etcd_destroy: answers every take still waiting ES_ERR_IO. */
void store_etcd__session_close(est *s);

es_err store_etcd__session_take(es_store *st, const char *node, es_store_cb cb,
				void *ud, void **token);
void store_etcd__session_cancel(es_store *st, void *token);
void store_etcd__session_drop(es_store *st, const char *node);

/* store_etcd_enroll.c (store_etcd_enroll.h): joining's records. start
 * lists them and watches; tick lists again when owed; close (before
 * es_etcd_destroy) ends the watches and answers every call ES_ERR_IO.
 * Errors: ES_ERR_NOMEM. */
es_err store_etcd__enroll_start(est *s);
void store_etcd__enroll_tick(est *s);
void store_etcd__enroll_close(est *s);
extern const struct es_store_enroll_ops store_etcd__enroll_ops;

#endif
