/*
 * store_etcd_nodes.c - what every controller on one etcd knows of a node
 * (store.h, es_store_nodes_read; docs/ARCHITECTURE.md "The store"): the
 * node's record <prefix>nodes/<node> (written by the controller serving
 * it, store_etcd_cursor.c) and its session key <prefix>sessions/<node>
 * (bound to that controller's lease, store_etcd_session.c), read in one
 * txn so both are of one revision.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_etcd_int.h"
#include "es_json.h"
#include "es_obj.h"
#include "es_time.h"

/* A read in flight: answered by its txn, or ES_ERR_IO when the store
 * closes first. */
struct nrd {
	est *s;
	nrd *next;
	es_store_nodes_cb cb;
	void *ud;
};

static void nrd_unlink(nrd *op)
{
	nrd **pp;

	for (pp = &op->s->reads; *pp && *pp != op; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = op->next;
}

static void nrd_fail(nrd *op, es_err rc, const char *error)
{
	es_store_nodes_result r = { .rc = rc, .error = error, .self = op->s->id };

	nrd_unlink(op);
	op->cb(op->ud, &r);
	free(op);
}

/* The name after prefix in kv's key, or NULL when it is not one. */
/* Parses a record's value into v: ES_OK, ES_ERR_PROTO (not a record: the
 * node is shown without one), ES_ERR_NOMEM. The value is read twice: its
 * members by store_etcd__cursor_parse's rules, then lastReport and
 * conditions, which the cursor code has no use for (a record is about
 * 500 bytes). */
static es_err view_parse(const es_etcd_kv *kv, store_etcd__nview *v)
{
	char perr[64];
	cJSON *o = NULL;
	const cJSON *lr;
	time_t t;
	es_err rc = store_etcd__cursor_parse(kv->value, kv->value_len, &v->rec);

	if (rc != ES_OK)
		return rc;
	if ((rc = es_json_parse(kv->value, kv->value_len, 8, &o, perr, sizeof(perr))) != ES_OK)
		return rc == ES_ERR_NOMEM ? rc : ES_ERR_PROTO;
	lr = cJSON_GetObjectItemCaseSensitive(o, "lastReport");
	if (cJSON_IsString(lr) && es_time_parse_rfc3339(lr->valuestring, &t) == 0)
		v->last_report = t;
	v->conditions = cJSON_DetachItemFromObjectCaseSensitive(o, "conditions");
	if (v->conditions && !cJSON_IsArray(v->conditions)) {
		cJSON_Delete(v->conditions);
		v->conditions = NULL;
	}
	cJSON_Delete(o);
	return ES_OK;
}

es_err store_etcd__nodes_join(const est *s, const es_etcd_resp *rn, const es_etcd_resp *rs,
			      es_store_node *out, store_etcd__nview *views, size_t *n)
{
	size_t i = 0, j = 0;
	es_err rc;

	*n = 0;
	/* Both lists come in key order, so one pass joins them by name. */
	while (i < rn->n_kvs || j < rs->n_kvs) {
		const char *a = i < rn->n_kvs ?
			store_etcd__key_node(s->npfx, s->nplen, &rn->kvs[i]) : NULL;
		const char *b = j < rs->n_kvs ?
			store_etcd__key_node(s->spfx, s->splen, &rs->kvs[j]) : NULL;
		int cmp;

		if ((i < rn->n_kvs && !a) || (j < rs->n_kvs && !b)) {
			i += i < rn->n_kvs && !a;
			j += j < rs->n_kvs && !b;
			continue; /* not a node's key */
		}
		cmp = !a ? 1 : !b ? -1 : strcmp(a, b);
		memset(&out[*n], 0, sizeof(out[*n]));
		memset(&views[*n], 0, sizeof(views[*n]));
		out[*n].node = cmp <= 0 ? a : b;
		if (cmp <= 0) {
			rc = view_parse(&rn->kvs[i++], &views[*n]);
			if (rc == ES_ERR_NOMEM) {
				cJSON_Delete(views[*n].conditions);
				return rc;
			}
			if (rc == ES_OK) { /* else shown without a record */
				out[*n].writer = views[*n].rec.controller;
				out[*n].conditions = views[*n].conditions;
				out[*n].desired_ack = views[*n].rec.desired_ack;
				out[*n].last_report = views[*n].last_report;
				out[*n].stream = views[*n].rec.stream;
				out[*n].seq = views[*n].rec.seq;
			}
		}
		if (cmp >= 0)
			out[*n].controller = rs->kvs[j++].value;
		(*n)++;
	}
	return ES_OK;
}

static void on_read(void *ud, const es_etcd_result *r)
{
	nrd *op = ud;
	est *s = op->s;
	const es_etcd_resp *rn, *rs;
	es_store_nodes_result res = { .rc = ES_OK, .error = "", .self = s->id };
	es_store_node *out = NULL;
	store_etcd__nview *views = NULL;
	size_t n = 0;
	es_err rc = ES_OK;

	if (r->rc != ES_OK) {
		nrd_fail(op, r->rc == ES_ERR_NOMEM ? r->rc : ES_ERR_IO, r->error);
		return;
	}
	if (r->resp->n_ops != 2) {
		nrd_fail(op, ES_ERR_PROTO, "etcd answered the read of the node records"
			 " with another number of results");
		return;
	}
	rn = &r->resp->ops[0];
	rs = &r->resp->ops[1];
	if (rn->n_kvs + rs->n_kvs &&
	    (!(out = calloc(rn->n_kvs + rs->n_kvs, sizeof(*out))) ||
	     !(views = calloc(rn->n_kvs + rs->n_kvs, sizeof(*views)))))
		rc = ES_ERR_NOMEM;
	if (rc == ES_OK && rn->n_kvs + rs->n_kvs)
		rc = store_etcd__nodes_join(s, rn, rs, out, views, &n);
	nrd_unlink(op);
	if (rc != ES_OK) {
		res.rc = rc;
		res.error = es_strerror(rc);
	} else {
		res.nodes = out;
		res.n = n;
	}
	op->cb(op->ud, &res);
	for (size_t k = 0; views && k < n; k++)
		cJSON_Delete(views[k].conditions);
	free(views);
	free(out);
	free(op);
}

es_err store_etcd__nodes_read(es_store *st, const char *node, es_store_nodes_cb cb,
			      void *ud)
{
	est *s = st->impl;
	size_t klen = s->splen + (node ? strlen(node) : 0) + 1;
	char *nkey = NULL, *skey = malloc(klen);
	size_t nklen = 0, sklen;
	nrd *op = NULL;
	es_etcd_txn t;
	es_err rc;

	if ((rc = es_etcd_txn_init(&t)) != ES_OK || !skey ||
	    !(op = calloc(1, sizeof(*op)))) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	if (node) {
		sklen = (size_t)snprintf(skey, klen, "%s%s", s->spfx, node);
		if (!(nkey = store_etcd__node_key(s, node, &nklen))) {
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
		es_etcd_txn_range(&t, 1, nkey, nklen, NULL, 0);
		rc = es_etcd_txn_range(&t, 1, skey, sklen, NULL, 0);
	} else {
		es_etcd_txn_range(&t, 1, s->npfx, s->nplen, s->npend, s->npendlen);
		rc = es_etcd_txn_range(&t, 1, s->spfx, s->splen, s->spend, s->spendlen);
	}
	if (rc != ES_OK)
		goto cleanup;
	op->s = s;
	op->cb = cb;
	op->ud = ud;
	if ((rc = es_etcd_txn_send(s->e, &t, on_read, op)) != ES_OK)
		goto cleanup;
	op->next = s->reads;
	s->reads = op;
	op = NULL;
cleanup:
	es_etcd_txn_free(&t);
	free(op);
	free(nkey);
	free(skey);
	return rc;
}

void store_etcd__nodes_close(est *s)
{
	while (s->reads)
		nrd_fail(s->reads, ES_ERR_IO, "the controller is stopping");
}
