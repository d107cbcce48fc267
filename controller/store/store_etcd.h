/*
 * store_etcd.h - the etcd backend of the store interface (store.h) for
 * desired objects (docs/ARCHITECTURE.md, "The store"), over the
 * asynchronous etcd client (etcd/etcd_client.h) on the controller's loop.
 *
 * Keys: <prefix>objects/<Kind>/<name>, the value the stored object's JSON
 * without metadata.resourceVersion, which is the key's mod_revision: every
 * controller on the same etcd hands out the same resourceVersions.
 *
 * The controller's db.h file is a mirror (db.h, "The mirror of an etcd
 * store"): listed from etcd when it follows nothing yet or its revision
 * was compacted, then fed by one watch of the objects prefix from the
 * revision after the one it holds. Each change the watch brings is stored
 * in the mirror, then told to the store's changed callback (the server
 * pushes it to this controller's agents), whichever controller wrote it.
 *
 * A put or delete is one txn that compares the key's mod_revision with the
 * one last known (the mirror's; 0: absent), writes on success and reads
 * the key back on failure, then tries again from what it read (at most 8
 * times: ES_ERR_CONFLICT). A txn whose outcome is unknown (sent, then no
 * answer) is settled by reading the key: not applied, it is sent again
 * (ES_STORE_ETCD_RESENDS times, then ES_ERR_IO). A write that committed is
 * answered once the mirror holds its revision (a read after the answer
 * sees it), or after 3 s if the watch lags (the write stands).
 *
 * Node sessions (store.h, es_store_session_take): the key
 * <prefix>sessions/<node> holds "<host>/<uuid>" of the controller serving
 * the node, put with compare create_revision = 0 under this controller's
 * lease (ES_STORE_ETCD_SESSION_TTL, kept alive every third of it), deleted
 * with compare value = this controller's id when the session ends.
 */
#ifndef ES_CTRL_STORE_ETCD_H
#define ES_CTRL_STORE_ETCD_H

#include <stddef.h>
#include <libwebsockets.h>

#include "etcd/etcd_client.h"
#include "store/store.h"

/* Attempts of one write against concurrent writers of the same key. */
#define ES_STORE_ETCD_ATTEMPTS 8
/* Times a write whose outcome was unknown and that the key shows not
 * applied is sent again before it fails. */
#define ES_STORE_ETCD_RESENDS 2
/* How long a committed write waits for the mirror before it is answered. */
#define ES_STORE_ETCD_WAIT_MS 3000
/* Seconds of the controller's lease that node sessions are bound to: a
 * controller that stops answering gives its nodes up after this. */
#define ES_STORE_ETCD_SESSION_TTL 10
/* The default key prefix (etcd-prefix). */
#define ES_STORE_ETCD_PREFIX "/edgesync/"

typedef struct es_store_etcd_opts {
	const char *const *endpoints; /* etcd_client.h's; copied */
	size_t n_endpoints;
	const char *cert, *key, *ca;  /* PEM files for https endpoints */
	const char *prefix;           /* NULL: ES_STORE_ETCD_PREFIX; must end
				       * with '/'; copied */
	int request_timeout_ms;       /* 0: the client's default */
	es_etcd_observe_fn observe;   /* etcd_client.h's, for metrics; NULL: none */
	void *observe_ud;
} es_store_etcd_opts;

/*
 * Makes the backend into *out (the caller's storage, which must stay at
 * its address until es_store_close) over ctx (which must outlive it) and
 * the mirror db (borrowed), telling changed(ud, ...) of every change; the
 * first list or watch starts at once. Reads of db work from the start
 * (whatever the mirror held before), writes as soon as etcd answers.
 * Errors: ES_ERR_INVAL (a bad prefix, or es_etcd_new's: err names it),
 * ES_ERR_TLS, ES_ERR_DB, ES_ERR_NOMEM.
 */
es_err es_store_etcd_open(struct lws_context *ctx, const es_store_etcd_opts *o,
			  es_db *db, es_store_changed_fn changed, void *ud,
			  es_store *out, char *err, size_t errsz);

/* 1 once the mirror has caught up with etcd (a list or the watch's first
 * answer), else 0. */
int es_store_etcd_synced(const es_store *s);

/* 1 while this controller holds its session lease (granted, and etcd
 * answered a grant or keepalive within ES_STORE_ETCD_SESSION_TTL), else 0:
 * before the first grant, and from a lease lost until the next one.
 * Without it no hello can take a node's session. 0 for another backend. */
int es_store_etcd_leased(const es_store *s);

#endif
