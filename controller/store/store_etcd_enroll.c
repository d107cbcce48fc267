/*
 * store_etcd_enroll.c - joining on an etcd store (store_etcd_enroll.h):
 * the calls as read, decide, compare-and-swap; the db_enroll.h tables as
 * a copy fed by a list and a watch of each record prefix.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_json.h"
#include "es_log.h"
#include "store/store_etcd_enroll.h"
#include "store/store_etcd_int.h"

#define RELIST_RETRY_US (1000 * LWS_US_PER_MS)

enum { P_TOKENS, P_CERTS, P_NODES, P_REVOKED, P_N };
static const char *const pdirs[P_N] = { "tokens/", "certs/", "enrollments/", "revoked/" };

typedef struct eop eop;

struct store_etcd_enroll {
	est *s;
	char pfx[P_N][512], pend[P_N][512];
	size_t plen[P_N], pendlen[P_N];
	es_etcd_watch *w[P_N];
	int listing, relist_owed;
	es_log_gate gate_list; /* its repeated list warning */
	eop *ops;
	es_store_revoked_fn revoked;
	void *revoked_ud;
};

struct eop {
	store_etcd_enroll *en;
	eop *next;
	es_store_etcd_enroll_req r;
	es_store_etcd_enroll_reads rd;
	es_store_etcd_enroll_plan plan;
	int attempts, unknown_seen;
	es_store_enroll_cb cb;
	void *ud;
};

static void relist(store_etcd_enroll *en);

/* ---- the copy in the db_enroll.h tables ---- */

static void tell_revoked(store_etcd_enroll *en, const char *node)
{
	if (en->revoked)
		en->revoked(en->revoked_ud, node);
}

/* Applies one record (value NULL: deleted) of key to the copy. Returns
 * ES_OK also for a key or value that is not a record (logged, skipped). */
static es_err apply_kv(store_etcd_enroll *en, const char *key, size_t klen,
		       const char *value, size_t vlen)
{
	char a[256], b[256], perr[256];
	const char *rest, *slash;
	es_db *db = en->s->db;
	cJSON *o = NULL;
	const cJSON *it;
	es_err rc = ES_OK;
	int p;
	static const es_enr_rec recs[P_N] = { ES_ENR_TOKEN, ES_ENR_CERT, ES_ENR_NODE,
					      ES_ENR_REVOKED };

	for (p = 0; p < P_N; p++)
		if (klen > en->plen[p] && memcmp(key, en->pfx[p], en->plen[p]) == 0)
			break;
	if (p == P_N)
		return ES_OK;
	rest = key + en->plen[p];
	if ((size_t)(key + klen - rest) >= sizeof(a))
		return ES_OK;
	memcpy(a, rest, (size_t)(key + klen - rest));
	a[key + klen - rest] = '\0';
	b[0] = '\0';
	if (p == P_CERTS) {
		if (!(slash = strchr(a, '/')))
			return ES_OK;
		snprintf(b, sizeof(b), "%s", slash + 1);
		a[slash - a] = '\0';
	}
	if (value) {
		rc = es_store_etcd_enroll_parse(recs[p], value, vlen, &o, perr, sizeof(perr));
		if (rc == ES_ERR_NOMEM)
			return rc;
		if (rc != ES_OK) {
			es_log_error("store", "etcd holds a value that is not an enrollment"
				     " record", "key", key, "error", perr, NULL);
			return ES_OK;
		}
	}
	switch (p) {
	case P_TOKENS:
		if (!o) {
			rc = es_db_enroll_mirror_token_delete(db, a);
		} else {
			es_db_token t = {
				a, cJSON_GetStringValue(cJSON_GetObjectItem(o, "secretSha256")),
				(time_t)cJSON_GetObjectItem(o, "expires")->valuedouble,
				(int64_t)cJSON_GetObjectItem(o, "usages")->valuedouble,
				cJSON_GetObjectItem(o, "labels"),
				cJSON_GetStringValue(cJSON_GetObjectItem(o, "namePrefix")),
				(time_t)cJSON_GetObjectItem(o, "created")->valuedouble };

			rc = es_db_enroll_mirror_token(db, &t, (int64_t)cJSON_GetObjectItem(
							       o, "used")->valuedouble);
		}
		break;
	case P_CERTS:
		if (o)
			rc = es_db_enroll_mirror_cert(
				db, b, a, cJSON_GetStringValue(cJSON_GetObjectItem(o, "keyPin")),
				(time_t)cJSON_GetObjectItem(o, "notAfter")->valuedouble,
				(time_t)cJSON_GetObjectItem(o, "issued")->valuedouble);
		break;
	case P_NODES:
		rc = !o ? es_db_enroll_mirror_node_delete(db, a) :
		     es_db_enroll_mirror_node(db, a, cJSON_GetStringValue(cJSON_GetObjectItem(
						      o, "keyPin")),
					      cJSON_GetStringValue(cJSON_GetObjectItem(o, "tokenId")),
					      cJSON_GetObjectItem(o, "labels"),
					      (time_t)cJSON_GetObjectItem(o, "enrolled")->valuedouble);
		break;
	case P_REVOKED:
		if (!o)
			break;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "serials"))
			if (rc == ES_OK)
				rc = es_db_enroll_mirror_revoked(
					db, it->valuestring, a,
					(time_t)cJSON_GetObjectItem(o, "revoked")->valuedouble);
		if (rc == ES_OK)
			tell_revoked(en, a);
		break;
	}
	cJSON_Delete(o);
	return rc;
}

static void on_watch(void *ud, const es_etcd_watch_ev *ev)
{
	store_etcd_enroll *en = ud;
	const es_etcd_event *e;

	switch (ev->kind) {
	case ES_ETCD_WATCH_EVENTS:
		for (size_t i = 0; i < ev->n_events; i++) {
			e = &ev->events[i];
			if (apply_kv(en, e->kv.key, e->kv.key_len,
				     e->type == ES_ETCD_EV_DELETE ? NULL : e->kv.value,
				     e->kv.value_len) != ES_OK) {
				es_log_error("store", "the copy of enrollment could not take"
					     " an etcd change; listing again", "key",
					     e->kv.key, NULL);
				en->relist_owed = 1; /* from the store's tick */
				break;
			}
		}
		break;
	case ES_ETCD_WATCH_PROGRESS:
	case ES_ETCD_WATCH_DOWN:
		break;
	case ES_ETCD_WATCH_COMPACTED:
	case ES_ETCD_WATCH_FAILED:
		es_log_warn("store", "etcd watch of enrollment ended; listing again",
			    "error", ev->error, NULL);
		en->relist_owed = 1;
		break;
	}
}

static void on_list(void *ud, const es_etcd_result *r)
{
	store_etcd_enroll *en = ud;
	char rv[32], n[32];
	size_t total = 0;
	es_err rc;

	en->listing = 0;
	if (r->rc != ES_OK || r->resp->n_ops != P_N) {
		es_log_gated(&en->gate_list, ES_LOG_WARN, "store",
			     "etcd list of enrollment failed; trying again",
			     "error", r->rc != ES_OK ? r->error : "a short answer", NULL);
		en->relist_owed = 1;
		return;
	}
	es_log_gate_reset(&en->gate_list);
	if ((rc = es_db_enroll_mirror_clear(en->s->db)) != ES_OK)
		goto retry;
	/* Revocations last: the certificates they mark are in by then. */
	for (int p = 0; p < P_N; p++) {
		const es_etcd_resp *op = &r->resp->ops[p];

		for (size_t i = 0; i < op->n_kvs; i++, total++)
			if ((rc = apply_kv(en, op->kvs[i].key, op->kvs[i].key_len,
					   op->kvs[i].value, op->kvs[i].value_len)) != ES_OK)
				goto retry;
	}
	for (int p = 0; p < P_N; p++)
		if (es_etcd_watch_start(en->s->e, en->pfx[p], en->plen[p], en->pend[p],
					en->pendlen[p], r->resp->revision + 1, on_watch, en,
					&en->w[p]) != ES_OK)
			goto retry;
	snprintf(rv, sizeof(rv), "%" PRId64, r->resp->revision);
	snprintf(n, sizeof(n), "%zu", total);
	es_log_info("store", "enrollment listed from etcd", "revision", rv, "records", n,
		    NULL);
	return;
retry:
	es_log_error("store", "the copy of enrollment could not take etcd's list;"
		     " trying again", "error", es_strerror(rc), NULL);
	en->relist_owed = 1;
}

/* Lists every prefix in one txn (one revision), then watches each. */
static void relist(store_etcd_enroll *en)
{
	es_etcd_txn t;
	es_err rc;

	en->relist_owed = 0;
	for (int p = 0; p < P_N; p++) {
		es_etcd_watch_cancel(en->w[p]);
		en->w[p] = NULL;
	}
	if ((rc = es_etcd_txn_init(&t)) == ES_OK) {
		for (int p = 0; p < P_N; p++)
			es_etcd_txn_range(&t, 1, en->pfx[p], en->plen[p], en->pend[p],
					  en->pendlen[p]);
		rc = es_etcd_txn_send(en->s->e, &t, on_list, en);
	}
	es_etcd_txn_free(&t);
	if (rc == ES_OK)
		en->listing = 1;
	else
		en->relist_owed = 1;
}

void store_etcd__enroll_tick(est *s)
{
	store_etcd_enroll *en = s->enroll;

	if (en && en->relist_owed && !en->listing)
		relist(en);
}

/* ---- calls ---- */

static void op_finish(eop *op, es_store_enroll_result *res)
{
	store_etcd_enroll *en = op->en;
	eop **pp;

	for (pp = &en->ops; *pp && *pp != op; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = op->next;
	if (!res->error)
		res->error = res->rc == ES_OK ? "" : es_strerror(res->rc);
	op->cb(op->ud, res);
	es_store_etcd_enroll_plan_free(&op->plan);
	es_store_etcd_enroll_reads_free(&op->rd);
	es_store_etcd_enroll_req_free(&op->r);
	free(op);
}

static void op_fail(eop *op, es_err rc, const char *error)
{
	es_store_enroll_result res = { .rc = rc, .error = error };

	op_finish(op, &res);
}

/* Takes the answers of the op's ranges (resp->ops from first) as what
 * the records hold now. */
static es_err take_reads(eop *op, const es_etcd_resp *ops, size_t n)
{
	static const es_enr_rec recs[ES_ENR_N] = { ES_ENR_TOKEN, ES_ENR_NODE, ES_ENR_CERT,
						   ES_ENR_CERT, ES_ENR_REVOKED, ES_ENR_CERT };
	char perr[256];
	size_t j = 0;
	es_err rc;

	es_store_etcd_enroll_reads_free(&op->rd);
	for (int k = 0; k < ES_ENR_N; k++) {
		const es_etcd_resp *a;

		if (!op->r.key[k])
			continue;
		if (j >= n)
			return ES_ERR_PROTO;
		a = &ops[j++];
		if (k == ES_ENR_CERTS) {
			if (!(op->rd.certs = cJSON_CreateArray()))
				return ES_ERR_NOMEM;
			for (size_t i = 0; i < a->n_kvs; i++) {
				const char *ser = a->kvs[i].key + strlen(op->r.key[k]);

				if (*ser && !cJSON_AddItemToArray(op->rd.certs,
								  cJSON_CreateString(ser)))
					return ES_ERR_NOMEM;
			}
			continue;
		}
		if (a->n_kvs == 0)
			continue;
		rc = es_store_etcd_enroll_parse(recs[k], a->kvs[0].value, a->kvs[0].value_len,
						&op->rd.rec[k], perr, sizeof(perr));
		if (rc != ES_OK) {
			if (rc == ES_ERR_PROTO)
				es_log_error("store", "etcd holds a value that is not an"
					     " enrollment record", "key", op->r.key[k],
					     "error", perr, NULL);
			return rc;
		}
		op->rd.mod[k] = a->kvs[0].mod_revision;
	}
	return ES_OK;
}

static void op_read(eop *op);

static void on_write(void *ud, const es_etcd_result *r)
{
	eop *op = ud;
	es_store_enroll_result res = { 0 };
	int write = 0;
	es_err rc;

	if (r->rc != ES_OK && r->unknown && !op->unknown_seen) {
		op->unknown_seen = 1; /* the next read says whether it was applied */
		op_read(op);
		return;
	}
	if (r->rc != ES_OK) {
		op_fail(op, r->rc == ES_ERR_NOMEM ? r->rc : ES_ERR_IO, r->error);
		return;
	}
	if (r->resp->succeeded) {
		/* Into the copy now: a read after the answer sees it. */
		for (size_t i = 0; i < op->plan.n_w; i++)
			(void)apply_kv(op->en, op->plan.w_key[i], strlen(op->plan.w_key[i]),
				       op->plan.w_value[i], op->plan.w_value[i] ?
				       strlen(op->plan.w_value[i]) : 0);
		es_store_etcd_enroll_plan_free(&op->plan);
		/* The answer: what was decided on the reads the write compared. */
		rc = es_store_etcd_enroll_decide(&op->r, &op->rd, &write, &res, &op->plan);
		es_store_etcd_enroll_plan_free(&op->plan);
		if (rc != ES_OK) {
			op_fail(op, rc, NULL);
			return;
		}
		res.rc = ES_OK;
		op_finish(op, &res);
		return;
	}
	if (++op->attempts >= ES_STORE_ETCD_ATTEMPTS) {
		op_fail(op, ES_ERR_CONFLICT, "the enrollment records kept changing under"
			" the write");
		return;
	}
	if ((rc = take_reads(op, r->resp->ops, r->resp->n_ops)) != ES_OK) {
		op_fail(op, rc, NULL);
		return;
	}
	es_store_etcd_enroll_plan_free(&op->plan);
	op_read(op); /* decide again: reuse the path with a fresh read */
}

/* Decides on what op->rd holds: answers, or sends the write. */
static void op_decide(eop *op)
{
	es_store_enroll_result res = { 0 };
	es_etcd_txn t;
	int write = 0;
	es_err rc;

	es_store_etcd_enroll_plan_free(&op->plan);
	rc = es_store_etcd_enroll_decide(&op->r, &op->rd, &write, &res, &op->plan);
	if (rc != ES_OK) {
		op_fail(op, rc, NULL);
		return;
	}
	if (!write) {
		if (op->unknown_seen && res.rc == ES_ERR_NOTFOUND &&
		    op->r.op == ES_ENR_OP_TOKEN_DELETE)
			res.rc = ES_OK; /* the delete whose answer was lost */
		op_finish(op, &res);
		return;
	}
	if ((rc = es_etcd_txn_init(&t)) == ES_OK &&
	    (rc = es_store_etcd_enroll_plan_txn(&op->r, &op->plan, &t)) == ES_OK)
		rc = es_etcd_txn_send(op->en->s->e, &t, on_write, op);
	es_etcd_txn_free(&t);
	if (rc != ES_OK)
		op_fail(op, rc, NULL);
}

static void on_read(void *ud, const es_etcd_result *r)
{
	eop *op = ud;
	es_err rc;

	if (r->rc != ES_OK) {
		op_fail(op, r->rc == ES_ERR_NOMEM ? r->rc : ES_ERR_IO, r->error);
		return;
	}
	if ((rc = take_reads(op, r->resp->ops, r->resp->n_ops)) != ES_OK) {
		op_fail(op, rc, NULL);
		return;
	}
	op_decide(op);
}

/* Reads every record the op looks at (one txn: one revision). After a
 * failed compare the failure branch read them already: decide at once. */
static void op_read(eop *op)
{
	es_etcd_txn t;
	es_err rc;

	if (op->attempts > 0 && !op->unknown_seen) {
		op_decide(op);
		return;
	}
	if ((rc = es_etcd_txn_init(&t)) == ES_OK &&
	    (rc = es_store_etcd_enroll_reads_add(&op->r, &t, 1)) == ES_OK)
		rc = es_etcd_txn_send(op->en->s->e, &t, on_read, op);
	es_etcd_txn_free(&t);
	if (rc != ES_OK)
		op_fail(op, rc, NULL);
}

static int dup_to(char **dst, const char *src)
{
	return (*dst = strdup(src ? src : "")) != NULL;
}

/* A call: its op made from r (strings copied) and started. */
static es_err op_start(es_store *st, const es_store_etcd_enroll_req *in,
		       es_store_enroll_cb cb, void *ud)
{
	est *s = st->impl;
	eop *op = calloc(1, sizeof(*op));
	es_err rc;

	if (!op)
		return ES_ERR_NOMEM;
	op->en = s->enroll;
	op->cb = cb;
	op->ud = ud;
	op->r.op = in->op;
	op->r.not_after = in->not_after;
	op->r.now = in->now;
	if (!dup_to(&op->r.node, in->node) || !dup_to(&op->r.token_id, in->token_id) ||
	    !dup_to(&op->r.secret_sha256, in->secret_sha256) ||
	    !dup_to(&op->r.key_pin, in->key_pin) || !dup_to(&op->r.serial, in->serial) ||
	    !dup_to(&op->r.old_serial, in->old_serial) || !dup_to(&op->r.extra, in->extra) ||
	    (in->token && !(op->r.token = cJSON_Duplicate(in->token, 1)))) {
		rc = ES_ERR_NOMEM;
		goto fail;
	}
	if ((rc = es_store_etcd_enroll_keys(&op->r, s->prefix)) != ES_OK)
		goto fail;
	op->next = op->en->ops;
	op->en->ops = op;
	op_read(op);
	return ES_OK;
fail:
	es_store_etcd_enroll_req_free(&op->r);
	free(op);
	return rc;
}

static es_err e_token_create(es_store *st, const es_db_token *t, es_store_enroll_cb cb,
			     void *ud)
{
	es_store_etcd_enroll_req r = { .op = ES_ENR_OP_TOKEN_CREATE, .token_id = (char *)t->id,
				       .secret_sha256 = (char *)t->secret_sha256 };
	es_err rc;

	if (!(r.token = es_store_etcd_enroll_token_rec(t, 0)))
		return ES_ERR_NOMEM;
	rc = op_start(st, &r, cb, ud);
	cJSON_Delete(r.token);
	return rc;
}

static es_err e_token_delete(es_store *st, const char *id, es_store_enroll_cb cb, void *ud)
{
	es_store_etcd_enroll_req r = { .op = ES_ENR_OP_TOKEN_DELETE, .token_id = (char *)id };

	return op_start(st, &r, cb, ud);
}

static es_err e_join(es_store *st, const es_db_join *j, time_t now, es_store_enroll_cb cb,
		     void *ud)
{
	es_store_etcd_enroll_req r = {
		.op = ES_ENR_OP_JOIN, .node = (char *)j->node, .token_id = (char *)j->token_id,
		.secret_sha256 = (char *)j->secret_sha256, .key_pin = (char *)j->key_pin,
		.serial = (char *)j->serial, .not_after = (int64_t)j->not_after,
		.now = (int64_t)now };

	return op_start(st, &r, cb, ud);
}

static es_err renew_start(es_store *st, es_enr_op k, const es_db_renew *rn, time_t now,
			  es_store_enroll_cb cb, void *ud)
{
	es_store_etcd_enroll_req r = {
		.op = k, .node = (char *)rn->node, .key_pin = (char *)rn->key_pin,
		.serial = (char *)rn->serial, .old_serial = (char *)rn->old_serial,
		.not_after = (int64_t)rn->not_after, .now = (int64_t)now };

	return op_start(st, &r, cb, ud);
}

static es_err e_renew(es_store *st, const es_db_renew *rn, time_t now,
		      es_store_enroll_cb cb, void *ud)
{
	return renew_start(st, ES_ENR_OP_RENEW, rn, now, cb, ud);
}

static es_err e_cert_renew(es_store *st, const es_db_renew *rn, time_t now,
			   es_store_enroll_cb cb, void *ud)
{
	return renew_start(st, ES_ENR_OP_CERT_RENEW, rn, now, cb, ud);
}

static es_err e_revoke(es_store *st, const char *node, const char *extra, time_t now,
		       es_store_enroll_cb cb, void *ud)
{
	est *s = st->impl;
	es_db_cert_status cs = ES_DB_CERT_UNKNOWN;
	es_store_etcd_enroll_req r = { .op = ES_ENR_OP_REVOKE, .node = (char *)node,
				       .now = (int64_t)now };

	/* A serial of the session's certificate is recorded only when the
	 * signing CA did not issue it (to this node or another one). */
	if (extra && *extra && es_db_cert_state(s->db, extra, node, &cs) == ES_OK &&
	    cs == ES_DB_CERT_UNKNOWN)
		r.extra = (char *)extra;
	return op_start(st, &r, cb, ud);
}

static void e_on_revoked(es_store *st, es_store_revoked_fn fn, void *ud)
{
	est *s = st->impl;

	if (s && s->enroll) {
		s->enroll->revoked = fn;
		s->enroll->revoked_ud = ud;
	}
}

const struct es_store_enroll_ops store_etcd__enroll_ops = {
	.token_create = e_token_create,
	.token_delete = e_token_delete,
	.join = e_join,
	.renew = e_renew,
	.cert_renew = e_cert_renew,
	.revoke = e_revoke,
	.on_revoked = e_on_revoked,
};

es_err store_etcd__enroll_start(est *s)
{
	store_etcd_enroll *en = calloc(1, sizeof(*en));

	if (!en)
		return ES_ERR_NOMEM;
	en->s = s;
	for (int p = 0; p < P_N; p++) {
		en->plen[p] = (size_t)snprintf(en->pfx[p], sizeof(en->pfx[p]), "%s%s",
					       s->prefix, pdirs[p]);
		en->pendlen[p] = es_etcd_prefix_end(en->pfx[p], en->plen[p], en->pend[p]);
	}
	s->enroll = en;
	relist(en);
	return ES_OK;
}

void store_etcd__enroll_close(est *s)
{
	store_etcd_enroll *en = s->enroll;

	if (!en)
		return;
	for (int p = 0; p < P_N; p++)
		es_etcd_watch_cancel(en->w[p]);
	/* Before es_etcd_destroy, which calls none of the ops' callbacks. */
	while (en->ops)
		op_fail(en->ops, ES_ERR_IO, "the controller is stopping");
	free(en);
	s->enroll = NULL;
}
