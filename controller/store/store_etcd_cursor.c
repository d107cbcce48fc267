/*
 * store_etcd_cursor.c - node report cursors and status on etcd
 * (store.h, es_store_cursors_put; docs/ARCHITECTURE.md "The store"): one
 * small key per node, <prefix>nodes/<node>, written with compare-and-swap
 * on its mod_revision by the controller serving the node, and a list and
 * watch of that prefix, through which a controller drops its provisional
 * report rows of a node that another controller now serves. The record's
 * value is store_etcd_record.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* uthash (Debian uthash-dev): the per-node tables are hash tables keyed by
 * the node's name, so that a controller holds 10 000s of nodes. An
 * allocation it fails is an error here, not an exit. */
static int cursor_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (cursor_oom = 1)
#include <uthash.h>

#include "store/store_etcd_int.h"
#include "es_json.h"
#include "es_log.h"

/* Attempts of one cursor write against its own earlier writes. */
#define CW_ATTEMPTS 4
#define NRELIST_US (1000 * LWS_US_PER_MS)

/* A node whose session this controller holds, and its record as last
 * written or read by this controller. */
struct ncur {
	UT_hash_handle hh; /* est.held, by node */
	char node[ES_NAME_MAX + 1];
	char stream[ES_PROTO_STREAM_ID_MAX + 1];
	int64_t mod;   /* the record's mod_revision; 0: no record */
	int64_t seq;   /* the cursor it holds */
	int64_t since; /* the cursor when this controller's tenure began */
	int64_t smod;  /* the session key's mod_revision when last taken */
	store_etcd__stream earlier[STORE_ETCD_EARLIER_MAX]; /* the record's */
	size_t n_earlier;
};

/* Another controller's last record of a node (its tenure). */
struct nseen {
	UT_hash_handle hh; /* est.seen, by node */
	char node[ES_NAME_MAX + 1];
	char controller[320];
	char stream[ES_PROTO_STREAM_ID_MAX + 1];
	int64_t since;
	int64_t bound; /* this controller's rows above it are provisional; -1:
			* no tenure of another seen since this one's */
	int64_t floor; /* the record's mod_revision when this controller last
			* took the node: older events are stale */
};

typedef struct cwitem {
	char node[ES_NAME_MAX + 1];
	char stream[ES_PROTO_STREAM_ID_MAX + 1];
	int64_t seq, since, mod;
	store_etcd__stream earlier[STORE_ETCD_EARLIER_MAX]; /* the record's */
	size_t n_earlier;
	char *key, *value;
	size_t klen;
	int done;
	size_t idx;        /* its place in the caller's order */
	es_store_cursor_result res;
	char error[ES_NAME_MAX + 320];
} cwitem;

/* One txn of at most STORE_ETCD_TXN_NODES items. */
typedef struct cwchunk {
	cwop *op;
	size_t first, n;
	int attempts;
} cwchunk;

struct cwop {
	est *s;
	cwop *next;
	cwitem *it;
	size_t n;
	cwchunk *chunks;
	size_t n_chunks, open_chunks;
	es_store_cursors_cb cb;
	void *ud;
};

/* ---- the held table ---- */

static ncur *held_find(est *s, const char *node)
{
	ncur *c = NULL;

	HASH_FIND_STR(s->held, node, c);
	return c;
}

ncur *store_etcd__held_first(est *s)
{
	return s->held;
}

ncur *store_etcd__held_next(ncur *c)
{
	return c ? c->hh.next : NULL;
}

const char *store_etcd__held_node(const ncur *c)
{
	return c->node;
}

/* 1 when rec was written by this controller or by this file's controller
 * before a restart. */
static int rec_ours(const est *s, const store_etcd__rec *rec)
{
	return strcmp(rec->controller, s->id) == 0 || (rec->file && rec->file == s->file_id);
}

/* Another controller's record rec: this controller's rows of the node
 * above the returned cursor are provisional (its tenure's start; the
 * cursor itself when the record is this file's, from before a restart). */
static int64_t rec_bound(const est *s, const store_etcd__rec *rec)
{
	return rec->file == s->file_id ? rec->seq : rec->since;
}

/* rec_bound for this controller's rows of stream: by the record's own
 * stream, or its entry of stream among the earlier ones; -1 when the
 * record says nothing of stream (nothing is provisional by it). */
static int64_t rec_stream_bound(const est *s, const store_etcd__rec *rec,
				const char *stream)
{
	const store_etcd__stream *e;

	if (strcmp(rec->stream, stream) == 0)
		return rec_bound(s, rec);
	e = store_etcd__earlier_find(rec->earlier, rec->n_earlier, stream);
	if (!e)
		return -1;
	return e->file == s->file_id ? e->seq : e->since;
}

/* c's earlier streams become the n of e (copied). */
static void held_set_earlier(ncur *c, const store_etcd__stream *e, size_t n)
{
	c->n_earlier = n < STORE_ETCD_EARLIER_MAX ? n : STORE_ETCD_EARLIER_MAX;
	if (c->n_earlier)
		memcpy(c->earlier, e, c->n_earlier * sizeof(*e));
}

static nseen *seen_get(est *s, const char *node, int make);

es_err store_etcd__cursor_held(est *s, const char *node, const es_etcd_kv *kv,
			       int64_t smod)
{
	ncur *c = held_find(s, node);
	store_etcd__rec rec;
	nseen *n;

	if (!c) {
		if (!(c = calloc(1, sizeof(*c))))
			return ES_ERR_NOMEM;
		snprintf(c->node, sizeof(c->node), "%s", node);
		cursor_oom = 0;
		HASH_ADD_STR(s->held, node, c);
		if (cursor_oom) {
			free(c);
			return ES_ERR_NOMEM;
		}
	}
	c->mod = c->seq = c->since = 0;
	c->smod = smod;
	c->stream[0] = '\0';
	held_set_earlier(c, NULL, 0);
	/* Another controller's tenure seen before is over: its bound must
	 * not be taken for this one's, nor its events that the watch still
	 * delivers. */
	if ((n = seen_get(s, node, 1)) != NULL) {
		n->bound = n->since = -1;
		n->controller[0] = n->stream[0] = '\0';
		if (kv && kv->mod_revision > n->floor)
			n->floor = kv->mod_revision;
	}
	if (!kv)
		return ES_OK;
	c->mod = kv->mod_revision;
	if (store_etcd__cursor_parse(kv->value, kv->value_len, &rec) != ES_OK) {
		es_log_error("store", "etcd holds a node record that is not one; it is"
			     " overwritten", "node", node, NULL);
		return ES_OK;
	}
	snprintf(c->stream, sizeof(c->stream), "%s", rec.stream);
	c->seq = rec.seq;
	/* A tenure of this file's controller goes on; another one's ends. */
	c->since = rec_ours(s, &rec) ? rec.since : rec.seq;
	held_set_earlier(c, rec.earlier, rec.n_earlier);
	return ES_OK;
}

int64_t store_etcd__held_smod(est *s, const char *node)
{
	ncur *c = held_find(s, node);

	return c ? c->smod : -1;
}

void store_etcd__held_set_smod(est *s, const char *node, int64_t smod)
{
	ncur *c = held_find(s, node);

	if (c && smod > c->smod)
		c->smod = smod;
}

char *store_etcd__cursor_takeover(est *s, const es_etcd_kv *kv)
{
	store_etcd__rec rec;
	char fid[24], perr[64];
	cJSON *o = NULL;
	char *out = NULL;

	if (store_etcd__cursor_parse(kv->value, kv->value_len, &rec) != ES_OK ||
	    es_json_parse(kv->value, kv->value_len, 8, &o, perr, sizeof(perr)) != ES_OK)
		return NULL;
	snprintf(fid, sizeof(fid), "%" PRId64, s->file_id);
	cJSON_DeleteItemFromObject(o, "controller");
	cJSON_DeleteItemFromObject(o, "file");
	cJSON_DeleteItemFromObject(o, "since");
	/* A tenure of this file's controller goes on; another one's ends at
	 * its cursor, which this one's begins with. */
	if (cJSON_AddStringToObject(o, "controller", s->id) &&
	    cJSON_AddStringToObject(o, "file", fid) &&
	    es_json_add_int(o, "since", rec_ours(s, &rec) ? rec.since : rec.seq))
		out = es_json_print(o);
	cJSON_Delete(o);
	return out;
}

void store_etcd__cursor_release(est *s, const char *node)
{
	ncur *c = held_find(s, node);

	if (c) {
		HASH_DEL(s->held, c);
		free(c);
	}
}

int store_etcd__cursor_get(es_store *st, const char *node, const char *stream,
			   int64_t *seq)
{
	ncur *c = held_find(st->impl, node);
	const store_etcd__stream *e;

	if (!c || !c->mod)
		return 0;
	if (strcmp(c->stream, stream) == 0)
		*seq = c->seq;
	else if ((e = store_etcd__earlier_find(c->earlier, c->n_earlier, stream)) != NULL)
		*seq = e->seq;
	else
		*seq = 0; /* a new stream, or one older than the record keeps */
	return 1;
}

/* ---- writes ---- */

static void cw_finish(cwop *op)
{
	est *s = op->s;
	es_store_cursor_result *res = calloc(op->n ? op->n : 1, sizeof(*res));
	cwop **pp;

	for (pp = &s->cws; *pp && *pp != op; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = op->next;
	/* The errors are the items' own: answer before freeing them. */
	for (size_t i = 0; i < op->n; i++) {
		if (res) {
			res[op->it[i].idx] = op->it[i].res;
			res[op->it[i].idx].error = op->it[i].error;
		}
		free(op->it[i].key);
		free(op->it[i].value);
	}
	if (res)
		op->cb(op->ud, res, op->n);
	else
		es_log_error("store", "out of memory answering cursor writes; their"
			     " reports are not acknowledged", NULL, NULL);
	free(res);
	free(op->it);
	free(op->chunks);
	free(op);
}

static void item_done(cwitem *it, es_err rc, int64_t committed, const char *error)
{
	it->done = 1;
	it->res.rc = rc;
	it->res.committed = committed;
	snprintf(it->error, sizeof(it->error), "%s", error ? error : "");
}

static void chunk_send(cwchunk *ch);

static void chunk_end(cwchunk *ch)
{
	cwop *op = ch->op;

	if (--op->open_chunks == 0)
		cw_finish(op);
}

/* The committed write of it at mod: the held record moves. */
static void item_committed(est *s, cwitem *it, int64_t mod)
{
	ncur *c = held_find(s, it->node);

	if (c && it->seq >= c->seq) {
		c->mod = mod;
		c->seq = it->seq;
		c->since = it->since;
		snprintf(c->stream, sizeof(c->stream), "%s", it->stream);
		held_set_earlier(c, it->earlier, it->n_earlier);
	}
	item_done(it, ES_OK, it->seq, NULL);
}

/*
 * What a read of it's key (kv, NULL: absent) says after its write did not
 * hold or its outcome was unknown: written (our value), not written yet
 * (the key is as expected, or holds our own newer or older write), or
 * another controller's (lost). Returns 1 when it is to be sent again.
 */
static int item_settle(est *s, cwitem *it, const es_etcd_kv *kv)
{
	ncur *c = held_find(s, it->node);
	int64_t committed = c ? c->seq : -1;
	store_etcd__rec rec;
	char msg[ES_NAME_MAX + 320];

	if (kv && kv->value_len == strlen(it->value) &&
	    memcmp(kv->value, it->value, kv->value_len) == 0) {
		item_committed(s, it, kv->mod_revision);
		return 0;
	}
	if ((kv ? kv->mod_revision : 0) == it->mod)
		return 1; /* not applied: the key is as it was */
	if (!kv) {
		snprintf(msg, sizeof(msg), "the record of node %s was deleted from etcd",
			 it->node);
		item_done(it, ES_ERR_EXISTS, committed, msg);
		return 0;
	}
	if (store_etcd__cursor_parse(kv->value, kv->value_len, &rec) == ES_OK &&
	    strcmp(rec.controller, s->id) == 0) {
		/* Our own write, answered out of order: the cursor never goes
		 * back, so a newer one covers this. */
		if (c && kv->mod_revision > c->mod && rec.seq >= c->seq) {
			c->mod = kv->mod_revision;
			c->seq = rec.seq;
		}
		it->mod = kv->mod_revision;
		if (rec.seq >= it->seq && strcmp(rec.stream, it->stream) == 0) {
			item_done(it, ES_OK, it->seq, NULL);
			return 0;
		}
		return 1;
	}
	snprintf(msg, sizeof(msg), "node %.100s is served by controller %.200s", it->node,
		 rec.controller[0] ? rec.controller : "(unknown)");
	/* What this controller committed is what the other's tenure began
	 * with (its take compared the record this one last wrote): not
	 * c->seq, which trails a write whose outcome was unknown, nor
	 * nothing when the session was released while this write flew. Of
	 * this write's stream: the other's record may be of another one. */
	if (rec.controller[0])
		committed = rec_stream_bound(s, &rec, it->stream);
	item_done(it, ES_ERR_EXISTS, committed, msg);
	return 0;
}

/* After a failed compare or a read-back: settles each item from the read
 * of its key (resps[i] for item first + i), then sends what is left. */
static void chunk_settle(cwchunk *ch, const es_etcd_resp *resps, size_t n_resps)
{
	cwop *op = ch->op;
	int again = 0;

	for (size_t i = 0; i < ch->n; i++) {
		cwitem *it = &op->it[ch->first + i];
		const es_etcd_resp *rr = i < n_resps ? &resps[i] : NULL;

		if (it->done)
			continue;
		again |= item_settle(op->s, it, rr && rr->n_kvs ? &rr->kvs[0] : NULL);
	}
	if (again && ++ch->attempts < CW_ATTEMPTS) {
		chunk_send(ch);
		return;
	}
	for (size_t i = 0; i < ch->n; i++)
		if (!op->it[ch->first + i].done)
			item_done(&op->it[ch->first + i], ES_ERR_IO, 0,
				  "the node's record kept changing under the write");
	chunk_end(ch);
}

static void chunk_fail(cwchunk *ch, const char *error)
{
	for (size_t i = 0; i < ch->n; i++)
		if (!ch->op->it[ch->first + i].done)
			item_done(&ch->op->it[ch->first + i], ES_ERR_IO, 0, error);
	chunk_end(ch);
}

static void on_readback(void *ud, const es_etcd_result *r)
{
	cwchunk *ch = ud;

	if (r->rc != ES_OK) {
		chunk_fail(ch, r->error);
		return;
	}
	chunk_settle(ch, r->resp->ops, r->resp->n_ops);
}

/* A write whose outcome is unknown: one txn reading every key settles it. */
static void chunk_readback(cwchunk *ch)
{
	cwop *op = ch->op;
	es_etcd_txn t;
	es_err rc = es_etcd_txn_init(&t);

	/* Every item of the chunk gets a range, so the answer lines up. */
	for (size_t i = 0; rc == ES_OK && i < ch->n; i++)
		rc = es_etcd_txn_range(&t, 1, op->it[ch->first + i].key,
				       op->it[ch->first + i].klen, NULL, 0);
	if (rc == ES_OK)
		rc = es_etcd_txn_send(op->s->e, &t, on_readback, ch);
	es_etcd_txn_free(&t);
	if (rc != ES_OK)
		chunk_fail(ch, es_strerror(rc));
}

static void on_chunk(void *ud, const es_etcd_result *r)
{
	cwchunk *ch = ud;
	cwop *op = ch->op;

	if (r->rc != ES_OK && r->unknown) {
		chunk_readback(ch);
		return;
	}
	if (r->rc != ES_OK) {
		chunk_fail(ch, r->error);
		return;
	}
	if (r->resp->succeeded) {
		for (size_t i = 0; i < ch->n; i++)
			if (!op->it[ch->first + i].done)
				item_committed(op->s, &op->it[ch->first + i], r->resp->revision);
		chunk_end(ch);
		return;
	}
	chunk_settle(ch, r->resp->ops, r->resp->n_ops);
}

/* The chunk's items not done yet, as one txn. */
static void chunk_send(cwchunk *ch)
{
	cwop *op = ch->op;
	char *keys[STORE_ETCD_TXN_NODES], *values[STORE_ETCD_TXN_NODES];
	size_t klens[STORE_ETCD_TXN_NODES], n = 0;
	int64_t mods[STORE_ETCD_TXN_NODES];
	es_etcd_txn t;
	es_err rc;

	for (size_t i = 0; i < ch->n; i++) {
		cwitem *it = &op->it[ch->first + i];

		if (it->done)
			continue;
		keys[n] = it->key;
		klens[n] = it->klen;
		mods[n] = it->mod;
		values[n] = it->value;
		n++;
	}
	if (n == 0) {
		chunk_end(ch);
		return;
	}
	/* The answer's failure ops line up with the items not done: move
	 * those first. */
	if (n != ch->n) {
		size_t j = 0;

		for (size_t i = 0; i < ch->n; i++)
			if (!op->it[ch->first + i].done) {
				cwitem tmp = op->it[ch->first + j];

				op->it[ch->first + j] = op->it[ch->first + i];
				op->it[ch->first + i] = tmp;
				j++;
			}
		for (size_t i = 0; i < n; i++) {
			keys[i] = op->it[ch->first + i].key;
			klens[i] = op->it[ch->first + i].klen;
			mods[i] = op->it[ch->first + i].mod;
			values[i] = op->it[ch->first + i].value;
		}
		ch->n = n;
	}
	rc = store_etcd__cursor_txn(&t, keys, klens, mods, values, n);
	if (rc == ES_OK)
		rc = es_etcd_txn_send(op->s->e, &t, on_chunk, ch);
	es_etcd_txn_free(&t);
	if (rc != ES_OK)
		chunk_fail(ch, es_strerror(rc));
}

es_err store_etcd__cursors_put(es_store *st, const es_store_cursor *cur, size_t n,
			       es_store_cursors_cb cb, void *ud)
{
	est *s = st->impl;
	cwop *op = calloc(1, sizeof(*op));
	size_t nch = (n + STORE_ETCD_TXN_NODES - 1) / STORE_ETCD_TXN_NODES;

	if (!op || !(op->it = calloc(n ? n : 1, sizeof(*op->it))) ||
	    !(op->chunks = calloc(nch ? nch : 1, sizeof(*op->chunks)))) {
		if (op)
			free(op->it);
		free(op);
		return ES_ERR_NOMEM;
	}
	op->s = s;
	op->n = n;
	op->cb = cb;
	op->ud = ud;
	for (size_t i = 0; i < n; i++) {
		cwitem *it = &op->it[i];
		ncur *c = held_find(s, cur[i].node);
		const char *stream = cur[i].stream ? cur[i].stream : "";
		const store_etcd__stream *e;

		it->idx = i;
		snprintf(it->node, sizeof(it->node), "%s", cur[i].node);
		snprintf(it->stream, sizeof(it->stream), "%s", stream);
		it->seq = cur[i].seq;
		if (!c) {
			nseen *sn = NULL;

			/* Released (lost, or its connection ended): only a
			 * tenure seen since bounds what is provisional here. */
			HASH_FIND_STR(s->seen, cur[i].node, sn);
			item_done(it, ES_ERR_EXISTS, sn && sn->bound >= 0 ? sn->bound : -1,
				  "this controller does not hold the node's session");
			continue;
		}
		it->mod = c->mod;
		/* Another stream than the record's: its tenure begins at the
		 * cursor the record keeps of it, else from nothing (a new
		 * stream); the record's stream joins the earlier ones. */
		if (strcmp(c->stream, stream) == 0)
			it->since = c->since;
		else if ((e = store_etcd__earlier_find(c->earlier, c->n_earlier, stream)))
			it->since = e->seq;
		else
			it->since = 0;
		it->n_earlier = store_etcd__earlier_next(c->mod ? c->stream : NULL, c->seq,
							 c->since, s->file_id, c->earlier,
							 c->n_earlier, stream, it->earlier);
		if (!(it->key = store_etcd__node_key(s, it->node, &it->klen)) ||
		    !(it->value = store_etcd__cursor_value(s->id, s->file_id, &cur[i],
							   it->since, it->earlier,
							   it->n_earlier))) {
			for (size_t j = 0; j <= i; j++) {
				free(op->it[j].key);
				free(op->it[j].value);
			}
			free(op->it);
			free(op->chunks);
			free(op);
			return ES_ERR_NOMEM;
		}
	}
	op->next = s->cws;
	s->cws = op;
	op->n_chunks = op->open_chunks = nch ? nch : 1;
	if (nch == 0) {
		op->chunks[0].op = op;
		chunk_end(&op->chunks[0]);
		return ES_OK;
	}
	for (size_t k = 0; k < nch; k++) {
		op->chunks[k].op = op;
		op->chunks[k].first = k * STORE_ETCD_TXN_NODES;
		op->chunks[k].n = n - op->chunks[k].first < STORE_ETCD_TXN_NODES ?
				  n - op->chunks[k].first : STORE_ETCD_TXN_NODES;
	}
	for (size_t k = 0; k < nch; k++)
		chunk_send(&op->chunks[k]);
	return ES_OK;
}

/* ---- other controllers' nodes: list and watch ---- */

static nseen *seen_get(est *s, const char *node, int make)
{
	nseen *n = NULL;

	HASH_FIND_STR(s->seen, node, n);
	if (n || !make || !(n = calloc(1, sizeof(*n))))
		return n;
	snprintf(n->node, sizeof(n->node), "%s", node);
	n->since = n->bound = -1;
	cursor_oom = 0;
	HASH_ADD_STR(s->seen, node, n);
	if (cursor_oom) {
		free(n);
		return NULL;
	}
	return n;
}

/*
 * A record of node read from etcd (a list or the watch). When another
 * controller's tenure began (or, listing, whatever it is): this
 * controller's reports of the node above what it committed are
 * provisional and go. Its own tenure's record (this file's controller
 * before a restart) bounds them at its cursor, another's at its start,
 * each for the stream this file holds of the node (the record's own, or
 * one of its earlier streams; one it does not name bounds nothing).
 */
static void node_record(est *s, const char *node, const es_etcd_kv *kv)
{
	store_etcd__rec rec;
	ncur *c = held_find(s, node);
	nseen *n;
	int64_t dropped = 0, bound, lseq, lack;
	char d[24], why[ES_NAME_MAX + 400], local[ES_PROTO_STREAM_ID_MAX + 1];

	if (store_etcd__cursor_parse(kv->value, kv->value_len, &rec) != ES_OK ||
	    strcmp(rec.controller, s->id) == 0)
		return;
	if (c && kv->mod_revision <= c->mod)
		return; /* from before this controller's tenure: the watch trails */
	if (c) {
		/* Another controller took the node's session and its record
		 * from this one (a newer session of the node there). */
		snprintf(why, sizeof(why), "node %.100s is served by controller %.280s",
			 node, rec.controller);
		store_etcd__session_lost(s, node, why);
	}
	if (!(n = seen_get(s, node, 1)) || kv->mod_revision <= n->floor)
		return; /* from before this controller last took the node */
	if (n->since == rec.since && strcmp(n->controller, rec.controller) == 0 &&
	    strcmp(n->stream, rec.stream) == 0)
		return; /* the same tenure: nothing new for this controller */
	n->since = rec.since;
	snprintf(n->controller, sizeof(n->controller), "%s", rec.controller);
	snprintf(n->stream, sizeof(n->stream), "%s", rec.stream);
	/* The bound is of the file's stream, which changes only with a hello
	 * here (a take, which resets n). */
	n->bound = -1;
	if (es_db_node_cursor_get(s->db, node, local, sizeof(local), &lseq, &lack) != ES_OK ||
	    (bound = rec_stream_bound(s, &rec, local)) < 0)
		return;
	n->bound = bound;
	if (es_db_node_cursor_set(s->db, node, local, bound, 1, &dropped) == ES_OK &&
	    dropped > 0) {
		snprintf(d, sizeof(d), "%" PRId64, dropped);
		es_log_info("store", "provisional reports dropped: another controller"
			    " stored the node's reports from there", "node", node,
			    "controller", rec.controller, "streamId", local, "reports", d,
			    NULL);
	}
}

es_err store_etcd__sub_prefix(const est *s, const char *name, char **pfx, size_t *len,
			      char end[STORE_ETCD_END_MAX], size_t *endlen)
{
	size_t n = s->plen + strlen(name) + 1;

	if (n > STORE_ETCD_END_MAX)
		return ES_ERR_INVAL;
	if (!(*pfx = malloc(n)))
		return ES_ERR_NOMEM;
	*len = (size_t)snprintf(*pfx, n, "%s%s", s->prefix, name);
	*endlen = es_etcd_prefix_end(*pfx, *len, end);
	return ES_OK;
}

const char *store_etcd__key_node(const char *pfx, size_t plen, const es_etcd_kv *kv)
{
	if (kv->key_len <= plen || memcmp(kv->key, pfx, plen) != 0 ||
	    kv->key_len - plen > ES_NAME_MAX)
		return NULL;
	return kv->key + plen;
}

static const char *node_of_key(const est *s, const es_etcd_kv *kv)
{
	return store_etcd__key_node(s->npfx, s->nplen, kv);
}

static void nrelist(est *s);

static void on_nwatch(void *ud, const es_etcd_watch_ev *ev)
{
	est *s = ud;
	const char *node;

	switch (ev->kind) {
	case ES_ETCD_WATCH_EVENTS:
		for (size_t i = 0; i < ev->n_events; i++)
			if (ev->events[i].type == ES_ETCD_EV_PUT &&
			    (node = node_of_key(s, &ev->events[i].kv)) != NULL)
				node_record(s, node, &ev->events[i].kv);
		break;
	case ES_ETCD_WATCH_COMPACTED:
	case ES_ETCD_WATCH_FAILED:
		s->nrelist_owed = 1;
		break;
	default:
		break;
	}
}

static void on_nlist(void *ud, const es_etcd_result *r)
{
	est *s = ud;
	const char *node;

	s->nlisting = 0;
	if (r->rc != ES_OK) {
		es_log_gated(&s->gate_nlist, ES_LOG_WARN, "store",
			     "etcd list of node records failed; trying again",
			     "error", r->error, NULL);
		s->nrelist_owed = 1;
		return;
	}
	es_log_gate_reset(&s->gate_nlist);
	for (size_t i = 0; i < r->resp->n_kvs; i++)
		if ((node = node_of_key(s, &r->resp->kvs[i])) != NULL)
			node_record(s, node, &r->resp->kvs[i]);
	if (es_etcd_watch_start(s->e, s->npfx, s->nplen, s->npend, s->npendlen,
				r->resp->revision + 1, on_nwatch, s, &s->nw) != ES_OK)
		s->nrelist_owed = 1;
}

static void nrelist(est *s)
{
	s->nrelist_owed = 0;
	es_etcd_watch_cancel(s->nw);
	s->nw = NULL;
	s->nlisting = 1;
	if (es_etcd_range(s->e, s->npfx, s->nplen, s->npend, s->npendlen, 0, 0, on_nlist,
			  s) != ES_OK) {
		s->nlisting = 0;
		s->nrelist_owed = 1;
	}
}

void store_etcd__cursor_tick(est *s)
{
	if (s->nrelist_owed && !s->nlisting)
		nrelist(s);
}

es_err store_etcd__cursor_start(est *s)
{
	es_err rc;

	if ((rc = store_etcd__sub_prefix(s, "nodes/", &s->npfx, &s->nplen, s->npend,
					 &s->npendlen)) != ES_OK)
		return rc;
	if ((rc = es_db_mirror_file_id(s->db, &s->file_id)) != ES_OK)
		return rc;
	nrelist(s);
	return ES_OK;
}

void store_etcd__cursor_close(est *s)
{
	ncur *c, *ctmp;
	nseen *n, *ntmp;

	while (s->cws) {
		cwop *op = s->cws;

		for (size_t i = 0; i < op->n; i++)
			if (!op->it[i].done)
				item_done(&op->it[i], ES_ERR_IO, 0, "the controller is stopping");
		cw_finish(op);
	}
	HASH_ITER(hh, s->held, c, ctmp) {
		HASH_DEL(s->held, c);
		free(c);
	}
	HASH_ITER(hh, s->seen, n, ntmp) {
		HASH_DEL(s->seen, n);
		free(n);
	}
	free(s->npfx);
	s->npfx = NULL;
}
