/*
 * store_etcd_session.c - node sessions on etcd (store.h,
 * es_store_session_take): the key <prefix>sessions/<node> holds the id of
 * the controller serving the node, bound to that controller's lease
 * (ES_STORE_ETCD_SESSION_TTL seconds, kept alive from the store's timer),
 * so a controller that dies gives its nodes up when the lease expires.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store_etcd_int.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_time.h"

struct sop {
	est *s;
	sop *next;
	char node[ES_NAME_MAX + 1];
	char *key;
	size_t klen;
	char *nkey;       /* the node's record, read with the take */
	size_t nklen;
	es_store_cb cb;   /* NULL: cancelled while its txn is in flight */
	void *ud;
	int sent;
	int reput;        /* putting a held session under a new lease */
};

static char *session_key(const est *s, const char *node, size_t *len)
{
	size_t n = s->plen + sizeof("sessions/") + strlen(node);
	char *k = malloc(n);

	if (k)
		*len = (size_t)snprintf(k, n, "%ssessions/%s", s->prefix, node);
	return k;
}

static void unlink_sop(sop *op)
{
	sop **pp;

	for (pp = &op->s->takes; *pp && *pp != op; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = op->next;
}

static void sop_finish(sop *op, es_err rc, const char *error)
{
	es_store_result r = { .rc = rc, .error = error ? error : "" };

	unlink_sop(op);
	if (rc != ES_OK && !*r.error)
		r.error = es_strerror(rc);
	if (op->cb)
		op->cb(op->ud, &r);
	free(op->key);
	free(op->nkey);
	free(op);
}

/* A held session whose key could not be put under the new lease. */
static void reput_lost(sop *op, const char *why)
{
	est *s = op->s;
	es_store *st = s->store;

	store_etcd__cursor_release(s, op->node);
	es_log_warn("store", "a node session was lost with the lease", "node", op->node,
		    "reason", why, NULL);
	if (st->lost)
		st->lost(st->lost_ud, op->node, why);
}

static void on_take(void *ud, const es_etcd_result *r)
{
	sop *op = ud;
	const es_etcd_resp *rr, *nr;
	char msg[ES_NAME_MAX + 400];
	es_err rc;

	if (!op->cb && !op->reput) { /* cancelled */
		sop_finish(op, ES_OK, NULL);
		return;
	}
	if (r->rc != ES_OK) {
		if (op->reput) /* tried again at the next lease */
			op->s->reput_owed = 1;
		sop_finish(op, ES_ERR_IO, r->error);
		return;
	}
	rr = r->resp->n_ops ? &r->resp->ops[0] : NULL;
	nr = r->resp->n_ops > 1 ? &r->resp->ops[1] : NULL;
	if (r->resp->succeeded ||
	    (rr && rr->n_kvs && strcmp(rr->kvs[0].value, op->s->id) == 0)) {
		/* Taken, or ours already. A session put back under a new lease
		 * keeps the record this controller holds. */
		rc = op->reput ? ES_OK : store_etcd__cursor_held(op->s, op->node, nr);
		sop_finish(op, rc, NULL);
		return;
	}
	snprintf(msg, sizeof(msg), "node %s is served by controller %.280s", op->node,
		 rr && rr->n_kvs ? rr->kvs[0].value : "(gone meanwhile)");
	if (op->reput)
		reput_lost(op, msg);
	sop_finish(op, ES_ERR_EXISTS, msg);
}

/* The take's txn: create the key under the lease, else read it. */
static void sop_send(sop *op)
{
	est *s = op->s;
	es_etcd_txn t;
	es_err rc;

	op->sent = 1;
	if ((rc = es_etcd_txn_init(&t)) == ES_OK) {
		es_etcd_txn_compare(&t, op->key, op->klen, ES_ETCD_CMP_CREATE, ES_ETCD_EQUAL,
				    0, NULL, 0);
		es_etcd_txn_put(&t, 1, op->key, op->klen, s->id, strlen(s->id), s->lease);
		es_etcd_txn_range(&t, 1, op->nkey, op->nklen, NULL, 0);
		es_etcd_txn_range(&t, 0, op->key, op->klen, NULL, 0);
		es_etcd_txn_range(&t, 0, op->nkey, op->nklen, NULL, 0);
		rc = es_etcd_txn_send(s->e, &t, on_take, op);
	}
	es_etcd_txn_free(&t);
	if (rc != ES_OK)
		sop_finish(op, rc, NULL);
}

static sop *sop_new(est *s, const char *node, es_store_cb cb, void *ud)
{
	sop *op = calloc(1, sizeof(*op));

	if (!op || !(op->key = session_key(s, node, &op->klen)) ||
	    !(op->nkey = store_etcd__node_key(s, node, &op->nklen))) {
		if (op)
			free(op->key);
		free(op);
		return NULL;
	}
	op->s = s;
	op->cb = cb;
	op->ud = ud;
	snprintf(op->node, sizeof(op->node), "%s", node);
	op->next = s->takes;
	s->takes = op;
	return op;
}

/* A new lease: every session this controller holds is put under it again
 * (compare create_revision 0); one another controller took meanwhile is
 * lost (the store's lost callback closes it here). */
static void reput_sessions(est *s)
{
	sop *op;

	s->reput_owed = 0;
	for (ncur *c = store_etcd__held_first(s); c; c = store_etcd__held_next(c)) {
		if (!(op = sop_new(s, store_etcd__held_node(c), NULL, NULL))) {
			s->reput_owed = 1;
			return;
		}
		op->reput = 1;
	}
}

/* The lease is gone (expired, revoked, or etcd unreachable past its TTL):
 * a new one is granted from the next tick. */
static void lease_lost(est *s, const char *why)
{
	es_log_error("store", "the controller's etcd lease is lost: its node sessions"
		     " are put under a new lease", "reason", why, NULL);
	s->lease = 0;
	s->lease_gen++;
	s->keepalive_due_us = 0;
	s->lease_busy = 0;
	if (store_etcd__held_first(s))
		s->reput_owed = 1;
}

static void on_keepalive(void *ud, const es_etcd_result *r);

static void on_grant(void *ud, const es_etcd_result *r)
{
	est *s = ud;
	sop *op, *next;
	char id[32];

	s->lease_busy = 0;
	if (r->rc != ES_OK) {
		es_log_warn("store", "etcd lease grant failed; trying again", "error",
			    r->error, NULL);
		return;
	}
	s->lease = r->resp->lease_id;
	s->lease_gen++;
	s->lease_ok_us = es_time_mono_us();
	snprintf(id, sizeof(id), "%llx", (unsigned long long)s->lease);
	es_log_info("store", "etcd lease for node sessions", "lease", id,
		    "controller", s->id, NULL);
	if (s->reput_owed)
		reput_sessions(s);
	for (op = s->takes; op; op = next) {
		next = op->next;
		if (!op->sent)
			sop_send(op);
	}
}

typedef struct ka {
	est *s;
	int gen;
} ka;

static void on_keepalive(void *ud, const es_etcd_result *r)
{
	ka *k = ud;
	est *s = k->s;
	int stale = k->gen != s->lease_gen;

	free(k);
	if (stale)
		return; /* an answer about a lease given up meanwhile */
	s->lease_busy = 0;
	if (r->rc == ES_ERR_NOTFOUND || (r->rc == ES_OK && r->resp->ttl <= 0)) {
		lease_lost(s, "etcd says the lease expired or was revoked");
		return;
	}
	if (r->rc != ES_OK) {
		es_log_warn("store", "etcd lease keepalive failed; trying again", "error",
			    r->error, NULL);
		return;
	}
	s->lease_ok_us = es_time_mono_us();
}

void store_etcd__session_tick(est *s, int64_t now_us)
{
	es_err rc;
	ka *k;

	if (s->lease && s->lease_ok_us &&
	    now_us - s->lease_ok_us > (int64_t)ES_STORE_ETCD_SESSION_TTL * 1000000)
		lease_lost(s, "etcd did not answer for longer than the lease's TTL");
	if (s->lease_busy || now_us < s->keepalive_due_us)
		return;
	s->keepalive_due_us = now_us + (int64_t)ES_STORE_ETCD_SESSION_TTL * 1000000 / 3;
	if (!s->lease) {
		rc = es_etcd_lease_grant(s->e, ES_STORE_ETCD_SESSION_TTL, on_grant, s);
	} else if (!(k = malloc(sizeof(*k)))) {
		rc = ES_ERR_NOMEM;
	} else {
		k->s = s;
		k->gen = s->lease_gen;
		rc = es_etcd_lease_keepalive(s->e, s->lease, on_keepalive, k);
		if (rc != ES_OK)
			free(k);
	}
	s->lease_busy = rc == ES_OK;
}

es_err store_etcd__session_start(est *s)
{
	char host[256] = "", uid[37];
	es_err rc = es_obj_new_uid(uid);

	if (rc != ES_OK)
		return rc;
	(void)gethostname(host, sizeof(host) - 1);
	snprintf(s->id, sizeof(s->id), "%s/%s", host[0] ? host : "controller", uid);
	store_etcd__session_tick(s, 0);
	return ES_OK;
}

void store_etcd__session_close(est *s)
{
	while (s->takes)
		sop_finish(s->takes, ES_ERR_IO, "the controller is stopping");
}

es_err store_etcd__session_take(es_store *st, const char *node, es_store_cb cb,
				void *ud, void **token)
{
	est *s = st->impl;
	sop *op;

	if (strlen(node) > ES_NAME_MAX)
		return ES_ERR_INVAL;
	if (!(op = sop_new(s, node, cb, ud)))
		return ES_ERR_NOMEM;
	*token = op;
	if (s->lease)
		sop_send(op); /* else sent when the lease is granted */
	return ES_OK;
}

void store_etcd__session_cancel(es_store *st, void *token)
{
	sop *op = token;

	(void)st;
	if (op->sent) {
		op->cb = NULL; /* freed when its txn answers */
		return;
	}
	op->cb = NULL;
	sop_finish(op, ES_OK, NULL);
}

static void on_drop(void *ud, const es_etcd_result *r)
{
	(void)ud;
	if (r->rc != ES_OK)
		es_log_warn("store", "could not give a node session up; it goes with the"
			    " lease", "error", r->error, NULL);
}

void store_etcd__session_drop(es_store *st, const char *node)
{
	est *s = st->impl;
	es_etcd_txn t;
	size_t klen = 0;
	char *key = session_key(s, node, &klen);

	store_etcd__cursor_release(s, node);
	if (!key || es_etcd_txn_init(&t) != ES_OK) {
		free(key);
		return;
	}
	es_etcd_txn_compare(&t, key, klen, ES_ETCD_CMP_VALUE, ES_ETCD_EQUAL, 0, s->id,
			    strlen(s->id));
	es_etcd_txn_delete(&t, 1, key, klen, NULL, 0);
	(void)es_etcd_txn_send(s->e, &t, on_drop, NULL);
	es_etcd_txn_free(&t);
	free(key);
}
