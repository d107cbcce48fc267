/*
 * store_etcd_session.c - node sessions on etcd (store.h,
 * es_store_session_take): the key <prefix>sessions/<node> holds the id of
 * the controller serving the node, bound to that controller's lease
 * (ES_STORE_ETCD_SESSION_TTL seconds, kept alive from the store's timer).
 * The newest session of a node wins: a take finding the key held by
 * another controller takes it over (compare-and-swap of the key and the
 * node's record), and each controller watches <prefix>sessions/ and gives
 * up a node whose key names another controller now. A controller that
 * dies gives its nodes up when the lease expires, or at once when its
 * agents dial another controller; one that stops revokes its lease.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store_etcd_int.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_time.h"

/* Attempts of one take against other controllers' takes and writes. */
#define SOP_ATTEMPTS 4
/* Attempts of a take-over's record write once it holds the key: against
 * the older controller's cursor writes, until it saw the key move. */
#define SOP_REC_ATTEMPTS 16

/* What a take-over's txn in flight does (sop.takeover); TO_LEASE moves
 * this controller's own key from an earlier lease under the current one. */
enum { TO_NONE = 0, TO_BOTH, TO_KEY, TO_REC, TO_LEASE };

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
	int reput;        /* putting a held session under a new lease or back */
	int attempts;     /* txns answered that did not take it */
	int takeover;     /* TO_*: the txn in flight takes the key over */
	int rec_attempts; /* TO_REC txns answered that did not write */
	int64_t smod;     /* take-over: the key's and the record's */
	int64_t nmod;     /* mod_revision as read (nmod 0: no record) */
	char *nval;       /* take-over: the record it writes (NULL: none) */
	char from[320];   /* take-over: the controller it takes from */
};

static char *session_key(const est *s, const char *node, size_t *len)
{
	size_t n = s->splen + strlen(node) + 1;
	char *k = malloc(n);

	if (k)
		*len = (size_t)snprintf(k, n, "%s%s", s->spfx, node);
	return k;
}

/* Deletes a session key if it still names this controller (a txn
 * comparing its value); on_done (may be NULL) gets etcd's answer. */
static void delete_if_ours(est *s, const char *key, size_t klen, es_etcd_cb on_done)
{
	es_etcd_txn t;

	if (es_etcd_txn_init(&t) != ES_OK)
		return;
	es_etcd_txn_compare(&t, key, klen, ES_ETCD_CMP_VALUE, ES_ETCD_EQUAL, 0, s->id,
			    strlen(s->id));
	es_etcd_txn_delete(&t, 1, key, klen, NULL, 0);
	(void)es_etcd_txn_send(s->e, &t, on_done, NULL);
	es_etcd_txn_free(&t);
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
	free(op->nval);
	free(op);
}

void store_etcd__session_lost(est *s, const char *node, const char *why)
{
	es_store *st = s->store;

	if (store_etcd__held_smod(s, node) < 0)
		return; /* released already */
	store_etcd__cursor_release(s, node);
	es_log_info("store", "node session replaced by a newer one on another controller",
		    "node", node, "reason", why, NULL);
	if (st->lost)
		st->lost(st->lost_ud, node, why);
}

static void sop_send(sop *op);
static void put_back(est *s, const char *node);

typedef struct verify {
	est *s;
	char node[ES_NAME_MAX + 1];
} verify;

static void on_verify(void *ud, const es_etcd_result *r)
{
	verify *v = ud;
	est *s = v->s;
	int64_t smod = store_etcd__held_smod(s, v->node);
	const es_etcd_kv *kv = r->rc == ES_OK && r->resp->n_kvs ? &r->resp->kvs[0] : NULL;
	char why[ES_NAME_MAX + 400];

	if (r->rc != ES_OK || smod < 0) {
		free(v);
		return;
	}
	if (!kv) {
		if (!s->leaving)
			put_back(s, v->node);
	} else if (kv->mod_revision > smod && strcmp(kv->value, s->id) != 0) {
		snprintf(why, sizeof(why), "node %s is served by controller %.280s", v->node,
			 kv->value);
		store_etcd__session_lost(s, v->node, why);
	}
	free(v);
}

/* A take answered at revision rev after the sessions watch delivered later
 * ones, which it skipped (the node was not held yet): the key is read
 * again, and a newer session elsewhere closes this one. */
static void verify_take(est *s, const char *node, int64_t rev)
{
	size_t klen = 0;
	char *key;
	verify *v;

	if (!s->sw || es_etcd_watch_next_revision(s->sw) <= rev + 1 ||
	    !(v = calloc(1, sizeof(*v))))
		return;
	v->s = s;
	snprintf(v->node, sizeof(v->node), "%s", node);
	key = session_key(s, node, &klen);
	if (!key || es_etcd_range(s->e, key, klen, NULL, 0, 0, 0, on_verify, v) != ES_OK)
		free(v);
	free(key);
}

/* Gives a key taken for a take cancelled meanwhile up again (unless a
 * session of the node here holds it). */
static void drop_unheld(sop *op)
{
	if (store_etcd__held_smod(op->s, op->node) < 0)
		delete_if_ours(op->s, op->key, op->klen, NULL);
}

/* The take's txn answered and did not take the key: held by this
 * controller already (done), gone (created again) or another
 * controller's (taken over), a few times, then come back later. */
static void take_again(sop *op, const es_etcd_kv *held, const es_etcd_kv *rec)
{
	est *s = op->s;
	char msg[ES_NAME_MAX + 400];

	if (++op->attempts >= SOP_ATTEMPTS) {
		snprintf(msg, sizeof(msg), "node %s: its session kept moving between"
			 " controllers under the take (last %.280s)", op->node,
			 held ? held->value : "(gone)");
		if (op->reput)
			store_etcd__session_lost(s, op->node, msg);
		sop_finish(op, ES_ERR_EXISTS, msg);
		return;
	}
	free(op->nval);
	op->nval = NULL;
	op->takeover = held ? TO_BOTH : TO_NONE;
	if (held) {
		op->smod = held->mod_revision;
		op->nmod = rec ? rec->mod_revision : 0;
		snprintf(op->from, sizeof(op->from), "%s", held->value);
		/* An unreadable record is compared, not rewritten. */
		if (rec)
			op->nval = store_etcd__cursor_takeover(s, rec);
	}
	sop_send(op);
}

static void took_over(sop *op, const es_etcd_kv *rec, int64_t smod)
{
	es_err rc;

	es_log_info("store", "node session taken over from another controller"
		    " (a newer session of the node here)", "node", op->node,
		    "controller", op->from, NULL);
	rc = store_etcd__cursor_held(op->s, op->node, rec, smod);
	if (rc == ES_OK)
		verify_take(op->s, op->node, smod);
	sop_finish(op, rc, NULL);
}

/*
 * A take-over whose combined txn lost to the older controller's cursor
 * writes: TO_KEY puts the session key (compare its mod_revision) and reads
 * the record; TO_REC then rewrites the record (compare its mod_revision),
 * again until the older controller, seeing the key move, stops writing.
 * The welcome waits for the record, so its cursor is the older
 * controller's last commit, and a write of the older one after it fails.
 */
static void takeover_step(sop *op, const es_etcd_result *r)
{
	const es_etcd_resp *rr = r->resp->n_ops ? &r->resp->ops[0] : NULL;
	const es_etcd_resp *nr = r->resp->n_ops > 1 ? &r->resp->ops[1] : NULL;
	const es_etcd_kv *held = rr && rr->n_kvs ? &rr->kvs[0] : NULL;
	const es_etcd_kv *rec = nr && nr->n_kvs ? &nr->kvs[0] : NULL;
	char msg[ES_NAME_MAX + 400];

	if (op->takeover == TO_KEY && !r->resp->succeeded) {
		take_again(op, held, rec); /* the key moved too */
		return;
	}
	if (op->takeover == TO_REC && r->resp->succeeded) {
		es_etcd_kv kv = { .value = op->nval, .value_len = strlen(op->nval),
				  .mod_revision = r->resp->revision };

		took_over(op, &kv, op->smod);
		return;
	}
	if (op->takeover == TO_KEY) {
		op->smod = r->resp->revision; /* the key is this controller's */
	} else if (!held || strcmp(held->value, op->s->id) != 0 ||
		   held->mod_revision != op->smod) {
		/* A newer session elsewhere took it from this take meanwhile. */
		snprintf(msg, sizeof(msg), "node %s: its session was taken by controller"
			 " %.280s under the take", op->node, held ? held->value : "(gone)");
		sop_finish(op, ES_ERR_EXISTS, msg);
		return;
	}
	op->takeover = TO_REC;
	free(op->nval);
	op->nval = rec ? store_etcd__cursor_takeover(op->s, rec) : NULL;
	if (!op->nval) { /* no record, or none to rewrite: held as read */
		took_over(op, rec, op->smod);
		return;
	}
	op->nmod = rec->mod_revision;
	if (++op->rec_attempts > SOP_REC_ATTEMPTS) {
		snprintf(msg, sizeof(msg), "node %s: its record kept changing under the"
			 " take-over", op->node);
		drop_unheld(op);
		sop_finish(op, ES_ERR_EXISTS, msg);
		return;
	}
	sop_send(op);
}

static void on_take(void *ud, const es_etcd_result *r)
{
	sop *op = ud;
	est *s = op->s;
	const es_etcd_resp *rr, *nr;
	const es_etcd_kv *held, *rec;
	char msg[ES_NAME_MAX + 400];
	es_err rc;

	if (!op->cb && !op->reput) { /* cancelled */
		if (op->takeover == TO_REC || (r->rc == ES_OK && r->resp->succeeded))
			drop_unheld(op);
		sop_finish(op, ES_OK, NULL);
		return;
	}
	if (r->rc != ES_OK) {
		if (op->reput) /* tried again at the next lease */
			s->reput_owed = 1;
		if (op->takeover == TO_REC) /* the key without its record */
			drop_unheld(op);
		sop_finish(op, ES_ERR_IO, r->error);
		return;
	}
	rr = r->resp->n_ops ? &r->resp->ops[0] : NULL;
	nr = r->resp->n_ops > 1 ? &r->resp->ops[1] : NULL;
	if (op->takeover == TO_KEY || op->takeover == TO_REC) {
		takeover_step(op, r);
		return;
	}
	if (r->resp->succeeded) {
		es_etcd_kv kv = { .value = op->nval, .value_len = op->nval ? strlen(op->nval) : 0,
				  .mod_revision = r->resp->revision };

		if (op->reput) {
			if (store_etcd__held_smod(s, op->node) < 0)
				drop_unheld(op); /* given up meanwhile */
			store_etcd__held_set_smod(s, op->node, r->resp->revision);
			rc = ES_OK;
		} else if (op->takeover == TO_BOTH) {
			es_log_info("store", "node session taken over from another controller"
				    " (a newer session of the node here)", "node", op->node,
				    "controller", op->from, NULL);
			rc = store_etcd__cursor_held(s, op->node, op->nval ? &kv : NULL,
						     r->resp->revision);
		} else {
			rc = store_etcd__cursor_held(s, op->node, nr && nr->n_kvs ?
						     &nr->kvs[0] : NULL, r->resp->revision);
		}
		if (rc == ES_OK && !op->reput)
			verify_take(s, op->node, r->resp->revision);
		sop_finish(op, rc, NULL);
		return;
	}
	held = rr && rr->n_kvs ? &rr->kvs[0] : NULL;
	rec = nr && nr->n_kvs ? &nr->kvs[0] : NULL;
	if (held && strcmp(held->value, s->id) == 0 && held->lease != s->lease &&
	    ++op->attempts < SOP_ATTEMPTS) {
		/* Ours, under an earlier lease: an etcd restarted from its data
		 * brings a lost lease back with a fresh TTL, and the key would go
		 * when that lease expires. Moved under this one (compare its
		 * mod_revision). */
		op->takeover = TO_LEASE;
		op->smod = held->mod_revision;
		sop_send(op);
		return;
	}
	if (op->takeover == TO_LEASE)
		op->takeover = TO_NONE;
	if (held && strcmp(held->value, s->id) == 0) {
		/* Ours already. A session put back keeps the record this
		 * controller holds. */
		if (op->reput) {
			store_etcd__held_set_smod(s, op->node, held->mod_revision);
			rc = ES_OK;
		} else {
			rc = store_etcd__cursor_held(s, op->node, rec, held->mod_revision);
			if (rc == ES_OK)
				verify_take(s, op->node, r->resp->revision);
		}
		sop_finish(op, rc, NULL);
		return;
	}
	if (op->reput && held) {
		/* Another controller took it meanwhile: its session is newer. */
		snprintf(msg, sizeof(msg), "node %s is served by controller %.280s",
			 op->node, held->value);
		store_etcd__session_lost(s, op->node, msg);
		sop_finish(op, ES_ERR_EXISTS, msg);
		return;
	}
	if (op->takeover == TO_BOTH && held && held->mod_revision == op->smod) {
		/* Only the record moved: the older controller is writing its
		 * cursor. The key first, then the record (takeover_step). */
		es_log_info("store", "take-over: the older controller is writing the"
			    " node's record; the key first, then the record", "node",
			    op->node, "controller", op->from, NULL);
		op->takeover = TO_KEY;
		sop_send(op);
		return;
	}
	take_again(op, held, rec);
}

/* The take's txn. A plain take creates the key under the lease, else
 * reads it and the node's record. A take-over (TO_BOTH) compares the
 * key's and the record's mod_revision with what was read, puts the key
 * under this controller's lease and the record naming this controller (so
 * the one it took from loses its next cursor write), else reads both;
 * TO_KEY and TO_REC are its two halves (takeover_step). */
static void sop_send(sop *op)
{
	est *s = op->s;
	es_etcd_txn t;
	es_err rc;

	if (!s->lease) { /* lost meanwhile: sent when the next is granted */
		op->sent = 0;
		return;
	}
	op->sent = 1;
	if ((rc = es_etcd_txn_init(&t)) != ES_OK)
		goto done;
	/* The compares: the key's, the record's. */
	if (op->takeover == TO_NONE)
		es_etcd_txn_compare(&t, op->key, op->klen, ES_ETCD_CMP_CREATE, ES_ETCD_EQUAL,
				    0, NULL, 0);
	else if (op->takeover != TO_REC)
		es_etcd_txn_compare(&t, op->key, op->klen, ES_ETCD_CMP_MOD, ES_ETCD_EQUAL,
				    op->smod, NULL, 0);
	if (op->takeover == TO_BOTH || op->takeover == TO_REC)
		es_etcd_txn_compare(&t, op->nkey, op->nklen,
				    op->nmod ? ES_ETCD_CMP_MOD : ES_ETCD_CMP_CREATE,
				    ES_ETCD_EQUAL, op->nmod, NULL, 0);
	/* Success: the key under the lease, the record rewritten or read. */
	if (op->takeover != TO_REC)
		es_etcd_txn_put(&t, 1, op->key, op->klen, s->id, strlen(s->id), s->lease);
	if (op->takeover == TO_BOTH || op->takeover == TO_REC) {
		if (op->nval)
			es_etcd_txn_put(&t, 1, op->nkey, op->nklen, op->nval,
					strlen(op->nval), 0);
	} else {
		es_etcd_txn_range(&t, 1, op->nkey, op->nklen, NULL, 0);
	}
	/* Failure: both read. */
	es_etcd_txn_range(&t, 0, op->key, op->klen, NULL, 0);
	es_etcd_txn_range(&t, 0, op->nkey, op->nklen, NULL, 0);
	rc = es_etcd_txn_send(s->e, &t, on_take, op);
done:
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
 * lost (the store's lost callback closes it here). Sent once the lease is
 * there (on_grant, or at once by the caller when it is). */
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
		es_log_gated(&s->gate_grant, ES_LOG_WARN, "store",
			     "etcd lease grant failed; trying again",
			     "error", r->error, NULL);
		return;
	}
	es_log_gate_reset(&s->gate_grant);
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
		es_log_gated(&s->gate_keepalive, ES_LOG_WARN, "store",
			     "etcd lease keepalive failed; trying again",
			     "error", r->error, NULL);
		return;
	}
	es_log_gate_reset(&s->gate_keepalive);
	s->lease_ok_us = es_time_mono_us();
}

/* A held node's key deleted behind this controller's back (etcdctl del,
 * or a drop racing a take here): put back under the lease. */
static void put_back(est *s, const char *node)
{
	sop *op;

	if (!s->lease) {
		s->reput_owed = 1; /* with the next lease */
		return;
	}
	if (!(op = sop_new(s, node, NULL, NULL))) {
		s->reput_owed = 1;
		return;
	}
	op->reput = 1;
	es_log_warn("store", "a node session's key was deleted while this controller"
		    " serves the node; it is put back", "node", node, NULL);
	sop_send(op);
}

/* The sessions prefix changed: a held node's key naming another
 * controller (later than this one's take) is lost, a deleted one is put
 * back. */
static void on_swatch(void *ud, const es_etcd_watch_ev *ev)
{
	est *s = ud;
	char why[ES_NAME_MAX + 400];

	switch (ev->kind) {
	case ES_ETCD_WATCH_EVENTS:
		for (size_t i = 0; i < ev->n_events; i++) {
			const es_etcd_kv *kv = &ev->events[i].kv;
			const char *node = store_etcd__key_node(s->spfx, s->splen, kv);
			int64_t smod = node ? store_etcd__held_smod(s, node) : -1;

			if (smod < 0 || kv->mod_revision <= smod)
				continue; /* not served here, or from before the take */
			if (ev->events[i].type == ES_ETCD_EV_DELETE) {
				if (!s->leaving)
					put_back(s, node);
			} else if (strcmp(kv->value, s->id) == 0) {
				store_etcd__held_set_smod(s, node, kv->mod_revision);
			} else {
				snprintf(why, sizeof(why), "node %s is served by controller"
					 " %.280s", node, kv->value);
				store_etcd__session_lost(s, node, why);
			}
		}
		break;
	case ES_ETCD_WATCH_COMPACTED:
	case ES_ETCD_WATCH_FAILED:
		s->swatch_owed = 2; /* events may be missed: check every held one */
		break;
	default:
		break;
	}
}

/* (Re)starts the sessions watch from now; after a broken one, every held
 * session is checked as with a new lease. */
static void swatch_start(est *s)
{
	int check = s->swatch_owed == 2;
	sop *op;

	es_etcd_watch_cancel(s->sw);
	s->sw = NULL;
	if (es_etcd_watch_start(s->e, s->spfx, s->splen, s->spend, s->spendlen, 0,
				on_swatch, s, &s->sw) != ES_OK)
		return; /* again at the next tick */
	s->swatch_owed = 0;
	if (!check || !store_etcd__held_first(s))
		return;
	if (!s->lease) {
		s->reput_owed = 1;
		return;
	}
	reput_sessions(s);
	for (op = s->takes; op; op = op->next)
		if (!op->sent)
			sop_send(op);
}

void store_etcd__session_tick(est *s, int64_t now_us)
{
	es_err rc;
	ka *k;

	if (s->leaving)
		return; /* the lease is revoked: no new one */
	if (s->swatch_owed)
		swatch_start(s);

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
	if ((rc = store_etcd__sub_prefix(s, "sessions/", &s->spfx, &s->splen, s->spend,
					 &s->spendlen)) != ES_OK)
		return rc;
	s->swatch_owed = 1;
	store_etcd__session_tick(s, 0);
	return ES_OK;
}

void store_etcd__session_close(est *s)
{
	while (s->takes)
		sop_finish(s->takes, ES_ERR_IO, "the controller is stopping");
	free(s->spfx);
	s->spfx = NULL;
}

typedef struct leave_op {
	es_store_cb cb;
	void *ud;
} leave_op;

static void on_revoke(void *ud, const es_etcd_result *r)
{
	leave_op *l = ud;
	es_store_result res = { .rc = r->rc, .error = r->rc == ES_OK ? "" : r->error };

	if (r->rc == ES_OK)
		es_log_info("store", "etcd lease revoked: this controller's node sessions"
			    " are free for the others", NULL, NULL);
	l->cb(l->ud, &res);
	free(l);
}

es_err store_etcd__sessions_leave(es_store *st, es_store_cb cb, void *ud)
{
	est *s = st->impl;
	leave_op *l;
	es_err rc;

	/* No lease is granted from here: a take waiting for one waits until
	 * it is cancelled or the store closes. */
	s->leaving = 1;
	if (!s->lease)
		return ES_ERR_NOTFOUND;
	if (!(l = malloc(sizeof(*l))))
		return ES_ERR_NOMEM;
	l->cb = cb;
	l->ud = ud;
	rc = es_etcd_lease_revoke(s->e, s->lease, on_revoke, l);
	if (rc != ES_OK)
		free(l);
	s->lease = 0;
	s->lease_gen++; /* a keepalive answering late is stale */
	return rc;
}

es_err store_etcd__session_take(es_store *st, const char *node, es_store_cb cb,
				void *ud, void **token)
{
	est *s = st->impl;
	sop *op;

	if (strlen(node) > ES_NAME_MAX)
		return ES_ERR_INVAL;
	if (s->leaving)
		return ES_ERR_IO;
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
	size_t klen = 0;
	char *key = session_key(s, node, &klen);

	store_etcd__cursor_release(s, node);
	if (key)
		delete_if_ours(s, key, klen, on_drop);
	free(key);
}
