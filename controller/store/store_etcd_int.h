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
#include "es_log.h"
#include "es_proto.h"
#include "store/store_etcd.h"

typedef struct wop wop;
typedef struct sop sop;
typedef struct ncur ncur;
typedef struct nseen nseen;
typedef struct cwop cwop;
typedef struct nrd nrd;

/* The size of a prefix's range end buffer (est.npend, est.spend). */
#define STORE_ETCD_END_MAX 512

/* Most nodes in one cursor txn: etcd's --max-txn-ops (128 by default)
 * bounds the compares and each branch's ops, one of each per node. */
#define STORE_ETCD_TXN_NODES 128
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
	int64_t lease_ok_us; /* the last grant or keepalive etcd answered */
	int lease_gen;       /* counts leases, so a late answer is known */
	int reput_owed;      /* a new lease: the held sessions go under it */
	char *spfx;          /* <prefix>sessions/ */
	size_t splen;
	char spend[STORE_ETCD_END_MAX];
	size_t spendlen;
	es_etcd_watch *sw;   /* the sessions prefix */
	int swatch_owed;     /* start it (again) from the next tick */
	int leaving;         /* es_store_sessions_leave: the lease is revoked */
	/* store_etcd_cursor.c */
	int64_t file_id;     /* es_db_mirror_file_id */
	char *npfx;          /* <prefix>nodes/ */
	size_t nplen;
	char npend[STORE_ETCD_END_MAX];
	size_t npendlen;
	ncur *held;          /* nodes whose session this controller holds */
	nseen *seen;         /* the last record of other controllers' nodes */
	cwop *cws;           /* cursor writes in flight */
	es_etcd_watch *nw;
	int nlisting, nrelist_owed;
	store_etcd_enroll *enroll; /* store_etcd_enroll.c */
	nrd *reads;          /* store_etcd_nodes.c: node reads in flight */
	/* Repeated "failed; trying again" warnings (es_log_gated) */
	es_log_gate gate_list, gate_nlist, gate_grant, gate_keepalive;
} est;

/* The earlier report streams of a node a record remembers, newest first
 * (an agent whose database was made anew, or two agents with one node's
 * identity, switch the node's stream; each keeps its cursor). */
#define STORE_ETCD_EARLIER_MAX 4

/* One report stream's cursor in a record: seq the last committed, since
 * and file those of the tenure that committed it (as in the record). */
typedef struct store_etcd__stream {
	char id[ES_PROTO_STREAM_ID_MAX + 1];
	int64_t seq, since, file;
} store_etcd__stream;

/* A node's record <prefix>nodes/<node> as parsed. */
typedef struct store_etcd__rec {
	char stream[ES_PROTO_STREAM_ID_MAX + 1];
	char controller[320];
	int64_t seq, since, file, desired_ack;
	store_etcd__stream earlier[STORE_ETCD_EARLIER_MAX]; /* earlierStreams */
	size_t n_earlier;
} store_etcd__rec;

/* The JSON value of a node's record (caller frees), or NULL (memory):
 * c's stream and cursor, since, this controller and file, and the n
 * (at most STORE_ETCD_EARLIER_MAX) earlier streams' cursors. */
char *store_etcd__cursor_value(const char *controller, int64_t file_id,
			       const es_store_cursor *c, int64_t since,
			       const store_etcd__stream *earlier, size_t n);
/* Parses a record's value; ES_ERR_PROTO when it is not one (an
 * earlierStreams entry without streamId or seq is not one either; entries
 * past STORE_ETCD_EARLIER_MAX are ignored). */
es_err store_etcd__cursor_parse(const char *value, size_t len, store_etcd__rec *out);
/* The entry of stream id among n earlier streams, or NULL. */
const store_etcd__stream *store_etcd__earlier_find(const store_etcd__stream *e, size_t n,
						   const char *id);
/*
 * The earlier streams of a record written for stream `next` by the holder
 * of a record whose stream is cur (cur_seq, cur_since, file: that
 * record's; cur "" or NULL: none) with earlier streams e[0..n): unchanged
 * when next is cur, else cur first, then e without next, at most
 * STORE_ETCD_EARLIER_MAX (the oldest go). Into out; returns the count.
 */
size_t store_etcd__earlier_next(const char *cur, int64_t cur_seq, int64_t cur_since,
				int64_t file, const store_etcd__stream *e, size_t n,
				const char *next, store_etcd__stream out[STORE_ETCD_EARLIER_MAX]);
/* The txn writing n keys (compare mod_revision == mods[i], create_revision
 * == 0 where mods[i] is 0; put values[i]; on failure read each key), into
 * t (initialised here). Errors: ES_ERR_INVAL (n 0 or over
 * STORE_ETCD_TXN_NODES), ES_ERR_NOMEM. */
es_err store_etcd__cursor_txn(es_etcd_txn *t, char *const *keys, const size_t *klens,
			      const int64_t *mods, char *const *values, size_t n);

/* store_etcd_cursor.c: starts the list and watch of the nodes prefix.
 * Errors: ES_ERR_NOMEM, ES_ERR_INVAL (prefix too long). */
es_err store_etcd__cursor_start(est *s);
void store_etcd__cursor_tick(est *s);
/* Answers every cursor write ES_ERR_IO and frees the tables. */
void store_etcd__cursor_close(est *s);
/* This controller took node's session at the session key's mod_revision
 * smod; kv is its record as read or written with the take (NULL: none).
 * Errors: ES_ERR_NOMEM. */
es_err store_etcd__cursor_held(est *s, const char *node, const es_etcd_kv *kv,
			       int64_t smod);
/* This controller gave node's session up (or lost it). */
void store_etcd__cursor_release(est *s, const char *node);
/* The session key's mod_revision of a held node when this controller last
 * took or put it (-1: not held); set_smod moves it forward. */
int64_t store_etcd__held_smod(est *s, const char *node);
void store_etcd__held_set_smod(est *s, const char *node, int64_t smod);
/* The value a take-over writes over another controller's record kv: the
 * same cursor, stream and status, naming this controller and its file,
 * its tenure beginning at the record's cursor (at its own since when the
 * record is this file's). Caller frees; NULL when kv is no record or out
 * of memory. */
char *store_etcd__cursor_takeover(est *s, const es_etcd_kv *kv);
/* <prefix><name> into *pfx (caller frees) and *len, its range end into
 * end and *endlen. Errors: ES_ERR_INVAL (too long), ES_ERR_NOMEM. */
es_err store_etcd__sub_prefix(const est *s, const char *name, char **pfx, size_t *len,
			      char end[STORE_ETCD_END_MAX], size_t *endlen);
/* The node name of kv's key under the prefix pfx (plen bytes), or NULL
 * when the key is not under it or the name is too long. Borrowed from kv. */
const char *store_etcd__key_node(const char *pfx, size_t plen, const es_etcd_kv *kv);
/* The key <prefix>nodes/<node> (caller frees) or NULL. */
char *store_etcd__node_key(const est *s, const char *node, size_t *len);
es_err store_etcd__cursors_put(es_store *st, const es_store_cursor *cur, size_t n,
			       es_store_cursors_cb cb, void *ud);
int store_etcd__cursor_get(es_store *st, const char *node, const char *stream,
			   int64_t *seq);
/* The node names of held sessions, for putting them under a new lease. */
ncur *store_etcd__held_first(est *s);
ncur *store_etcd__held_next(ncur *c);
const char *store_etcd__held_node(const ncur *c);


/* Starts the session half: the controller's id, its lease grant and (from
 * the first tick) the watch of <prefix>sessions/.
 * Errors: ES_ERR_NOMEM, ES_ERR_INVAL (prefix too long). */
es_err store_etcd__session_start(est *s);
/* From the store's timer: the lease grant again, the keepalive when due. */
void store_etcd__session_tick(est *s, int64_t now_us);
/* After es_etcd_destroy: answers every take still waiting ES_ERR_IO. */
void store_etcd__session_close(est *s);
/* Another controller serves node now (its newer session took the key or
 * the record): the cursor state is released, nothing is deleted, and the
 * store's lost callback is told why. */
void store_etcd__session_lost(est *s, const char *node, const char *why);

es_err store_etcd__session_take(es_store *st, const char *node, es_store_cb cb,
				void *ud, void **token);
void store_etcd__session_cancel(es_store *st, void *token);
void store_etcd__session_drop(es_store *st, const char *node);
es_err store_etcd__sessions_leave(es_store *st, es_store_cb cb, void *ud);

/* A node's record as es_store_nodes_read hands it back. */
typedef struct store_etcd__nview {
	store_etcd__rec rec;
	time_t last_report; /* 0: none */
	cJSON *conditions;  /* owned; NULL: none */
} store_etcd__nview;

/*
 * Joins a range of <prefix>nodes/ (rn) and one of <prefix>sessions/ (rs),
 * each in key order, by node name into out and views (each with room for
 * rn->n_kvs + rs->n_kvs entries; out's members point into rn, rs and
 * views): one entry per node with either key, in name order; a record
 * that is not one leaves the node without (writer NULL); keys not of a
 * node are skipped. *n gets the count. The caller frees each
 * views[i].conditions. Errors: ES_ERR_NOMEM (*n: the entries so far).
 */
es_err store_etcd__nodes_join(const est *s, const es_etcd_resp *rn, const es_etcd_resp *rs,
			      es_store_node *out, store_etcd__nview *views, size_t *n);

/* store_etcd_nodes.c: es_store_nodes_read (store.h); close (after
 * es_etcd_destroy) answers every read still in flight ES_ERR_IO. */
es_err store_etcd__nodes_read(es_store *st, const char *node, es_store_nodes_cb cb,
			      void *ud);
void store_etcd__nodes_close(est *s);

/* store_etcd_enroll.c (store_etcd_enroll.h): joining's records. start
 * lists them and watches; tick lists again when owed; close (before
 * es_etcd_destroy) ends the watches and answers every call ES_ERR_IO.
 * Errors: ES_ERR_NOMEM. */
es_err store_etcd__enroll_start(est *s);
void store_etcd__enroll_tick(est *s);
void store_etcd__enroll_close(est *s);
extern const struct es_store_enroll_ops store_etcd__enroll_ops;

#endif
