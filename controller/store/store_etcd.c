/*
 * store_etcd.c - the etcd backend of the store (store_etcd.h): the mirror
 * fed by a list and a watch, and writes as compare-and-swap txns.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_etcd.h"
#include "store/store_etcd_int.h"
#include "store/store_enroll.h"
#include "es_json.h"
#include "es_log.h"
#include "es_proto.h"
#include "es_time.h"

#define RELIST_RETRY_US (1000 * LWS_US_PER_MS)
#define TICK_US (250 * LWS_US_PER_MS)

struct wop {
	est *s;
	wop *next;
	int is_delete, create_only, attempts, waiting;
	int resends;         /* sent again after an unknown outcome */
	es_kind kind;
	char name[ES_NAME_MAX + 1];
	char *key;
	size_t klen;
	cJSON *obj;          /* put: what was asked (a copy) */
	cJSON *cur;          /* the object as last known; NULL: absent */
	int64_t cur_mod;     /* its mod_revision; 0: absent */
	cJSON *next_obj;     /* put: what is written */
	char *value;         /* ... as the value sent */
	int created, changed;
	int64_t wait_rev, wait_until_us;
	es_store_cb cb;
	void *ud;
};

static void relist(est *s);
static void op_step(wop *op);

/* ---- objects and keys ---- */

static char *key_of(const est *s, es_kind kind, const char *name, size_t *len)
{
	size_t n = s->oplen + strlen(es_obj_kind_name(kind)) + 1 + strlen(name) + 1;
	char *k = malloc(n);

	if (k)
		*len = (size_t)snprintf(k, n, "%s%s/%s", s->opfx, es_obj_kind_name(kind), name);
	return k;
}

/* kind and name from a key under the objects prefix; 0 when it is not one. */
static int parse_key(const est *s, const char *key, size_t klen, es_kind *kind,
		     char *name, size_t namesz)
{
	char kbuf[64];
	const char *p, *slash;

	if (klen <= s->oplen || memcmp(key, s->opfx, s->oplen) != 0)
		return 0;
	p = key + s->oplen;
	slash = memchr(p, '/', klen - s->oplen);
	if (!slash || (size_t)(slash - p) >= sizeof(kbuf) ||
	    (size_t)(key + klen - slash - 1) >= namesz)
		return 0;
	memcpy(kbuf, p, (size_t)(slash - p));
	kbuf[slash - p] = '\0';
	*kind = es_obj_kind_parse(kbuf);
	memcpy(name, slash + 1, (size_t)(key + klen - slash - 1));
	name[key + klen - slash - 1] = '\0';
	return *kind >= ES_KIND_COLLECTOR_CONFIG && strcmp(es_obj_kind_name(*kind), kbuf) == 0;
}

/* Sets metadata.resourceVersion of a stored object. */
static es_err set_rv(cJSON *o, int64_t rv)
{
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");

	if (!cJSON_IsObject(meta))
		return ES_ERR_PROTO;
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
	return es_json_add_int(meta, "resourceVersion", rv) ? ES_OK : ES_ERR_NOMEM;
}

/* The stored object of kv (its value, resourceVersion its mod_revision);
 * ES_ERR_PROTO when it is not one of the key's kind and name. */
static es_err obj_of_kv(const est *s, const es_etcd_kv *kv, cJSON **out)
{
	char perr[256], name[ES_NAME_MAX + 1];
	es_kind kind;
	cJSON *o = NULL;
	es_err rc;

	*out = NULL;
	if (!parse_key(s, kv->key, kv->key_len, &kind, name, sizeof(name)))
		return ES_ERR_PROTO;
	rc = es_json_parse(kv->value, kv->value_len, ES_PROTO_MAX_OBJECT_DEPTH, &o, perr,
			   sizeof(perr));
	if (rc == ES_ERR_NOMEM)
		return rc;
	if (rc != ES_OK || es_obj_kind(o) != kind || !es_obj_name(o) ||
	    strcmp(es_obj_name(o), name) != 0 || !es_obj_uid(o)) {
		es_log_error("store", "etcd holds a value that is not a stored object",
			     "key", kv->key, NULL);
		cJSON_Delete(o);
		return ES_ERR_PROTO;
	}
	if ((rc = set_rv(o, kv->mod_revision)) != ES_OK) {
		cJSON_Delete(o);
		return rc;
	}
	*out = o;
	return ES_OK;
}

static void tell(est *s, const cJSON *prev, const cJSON *cur)
{
	if (s->store->changed)
		s->store->changed(s->store->changed_ud, prev, cur);
}

/* ---- writes ---- */

static void op_finish(wop *op, es_err rc, const char *error)
{
	est *s = op->s;
	es_store_result r = { .rc = rc, .error = error ? error : "" };
	wop **pp;

	for (pp = &s->ops; *pp && *pp != op; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = op->next;
	if (rc == ES_OK) {
		r.object = op->is_delete ? op->cur : op->next_obj;
		r.previous = op->is_delete ? NULL : op->cur;
		r.created = op->created;
		r.changed = op->changed;
	} else if (rc == ES_ERR_EXISTS) {
		r.object = op->cur;
	}
	if (rc != ES_OK && !*r.error)
		r.error = es_strerror(rc);
	op->cb(op->ud, &r);
	free(op->key);
	free(op->value);
	cJSON_Delete(op->obj);
	cJSON_Delete(op->cur);
	cJSON_Delete(op->next_obj);
	free(op);
}

/* The write committed at rev: answered once the mirror holds rev. */
static void op_committed(wop *op, int64_t rev)
{
	op->wait_rev = rev;
	if (op->s->rev >= rev) {
		op_finish(op, ES_OK, NULL);
		return;
	}
	op->waiting = 1;
	op->wait_until_us = es_time_mono_us() + (int64_t)ES_STORE_ETCD_WAIT_MS * 1000;
}

/* Answers the writes the mirror has caught up with, or that waited long
 * enough by now_us (0: only those the mirror holds). */
static void ops_release(est *s, int64_t now_us)
{
	wop *op = s->ops, *next;

	for (; op; op = next) {
		next = op->next;
		if (!op->waiting)
			continue;
		if (s->rev >= op->wait_rev) {
			op_finish(op, ES_OK, NULL);
		} else if (now_us && now_us >= op->wait_until_us) {
			char rv[32];

			snprintf(rv, sizeof(rv), "%" PRId64, op->wait_rev);
			es_log_warn("store", "the etcd watch lags: a write is answered before"
				    " the mirror holds it", "name", op->name,
				    "resourceVersion", rv, NULL);
			op_finish(op, ES_OK, NULL);
		}
	}
}

/* Takes what a read of the key found as the current object. */
static es_err op_take_current(wop *op, const es_etcd_resp *rr)
{
	cJSON *o = NULL;
	es_err rc = ES_OK;

	if (rr && rr->n_kvs > 0 && (rc = obj_of_kv(op->s, &rr->kvs[0], &o)) != ES_OK)
		return rc;
	cJSON_Delete(op->cur);
	op->cur = o;
	op->cur_mod = o ? rr->kvs[0].mod_revision : 0;
	return ES_OK;
}

/* A write whose outcome was unknown: what the key holds now settles it. */
static void on_readback(void *ud, const es_etcd_result *r)
{
	wop *op = ud;
	const es_etcd_kv *kv;
	char msg[400];
	es_err rc;

	if (r->rc != ES_OK) {
		snprintf(msg, sizeof(msg), "etcd answered neither a write nor the read"
			 " that settles it, so it may or may not be applied: %.300s",
			 r->error);
		op_finish(op, ES_ERR_IO, msg);
		return;
	}
	kv = r->resp->n_kvs ? &r->resp->kvs[0] : NULL;
	if (op->is_delete ? kv == NULL :
	    kv && kv->value_len == strlen(op->value) &&
	    memcmp(kv->value, op->value, kv->value_len) == 0) {
		if (!op->is_delete && set_rv(op->next_obj, kv->mod_revision) != ES_OK) {
			op_finish(op, ES_ERR_NOMEM, NULL);
			return;
		}
		op_committed(op, op->is_delete ? r->resp->revision : kv->mod_revision);
		return;
	}
	/* Not applied (a proposal etcd dropped, as while it elects a leader):
	 * send it again from what the key holds. The txn's compare keeps it to
	 * one commit should the first one still land. */
	if (op->resends < ES_STORE_ETCD_RESENDS) {
		op->resends++;
		if ((rc = op_take_current(op, r->resp)) != ES_OK) {
			op_finish(op, rc, NULL);
			return;
		}
		op_step(op);
		return;
	}
	op_finish(op, ES_ERR_IO, "etcd did not answer a write, and the key does not"
		  " hold it: it was not applied");
}

static void on_txn(void *ud, const es_etcd_result *r)
{
	wop *op = ud;
	const es_etcd_resp *resp = r->resp;
	es_err rc;

	if (r->rc != ES_OK && r->unknown) {
		if (es_etcd_range(op->s->e, op->key, op->klen, NULL, 0, 0, 0, on_readback,
				  op) != ES_OK)
			op_finish(op, ES_ERR_NOMEM, NULL);
		return;
	}
	if (r->rc != ES_OK) {
		op_finish(op, r->rc == ES_ERR_NOMEM ? r->rc : ES_ERR_IO, r->error);
		return;
	}
	if (resp->succeeded) {
		if (op->is_delete) {
			if (!op->cur) {
				op_finish(op, ES_ERR_NOTFOUND, NULL);
				return;
			}
			op_committed(op, resp->revision);
			return;
		}
		if ((rc = set_rv(op->next_obj, resp->revision)) != ES_OK) {
			op_finish(op, rc, NULL);
			return;
		}
		op->created = op->cur == NULL;
		op->changed = 1;
		op_committed(op, resp->revision);
		return;
	}
	/* Someone else wrote the key: go on from what it holds now. */
	rc = op_take_current(op, resp->n_ops ? &resp->ops[0] : NULL);
	if (rc != ES_OK) {
		op_finish(op, rc, NULL);
		return;
	}
	if (++op->attempts >= ES_STORE_ETCD_ATTEMPTS) {
		op_finish(op, ES_ERR_CONFLICT, "the object kept changing under the write");
		return;
	}
	op_step(op);
}

static void op_step(wop *op)
{
	es_etcd_txn t;
	cJSON *text_obj = NULL, *meta;
	int differs = 1;
	es_err rc;

	if (!op->is_delete) {
		if (op->cur && op->create_only) {
			op_finish(op, ES_ERR_EXISTS, "the name is taken");
			return;
		}
		cJSON_Delete(op->next_obj);
		op->next_obj = NULL;
		if ((rc = es_db_object_next(op->obj, op->cur, &op->next_obj, &differs)) != ES_OK) {
			op_finish(op, rc, NULL);
			return;
		}
		if (!differs) {
			cJSON_Delete(op->next_obj);
			op->next_obj = cJSON_Duplicate(op->cur, 1);
			op->changed = 0;
			op_finish(op, op->next_obj ? ES_OK : ES_ERR_NOMEM, NULL);
			return;
		}
		/* The value: the object without resourceVersion (the key's
		 * mod_revision is it). */
		free(op->value);
		op->value = NULL;
		if ((text_obj = cJSON_Duplicate(op->next_obj, 1)) != NULL &&
		    (meta = cJSON_GetObjectItemCaseSensitive(text_obj, "metadata")) != NULL)
			cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
		op->value = text_obj ? es_json_print(text_obj) : NULL;
		cJSON_Delete(text_obj);
		if (!op->value) {
			op_finish(op, ES_ERR_NOMEM, NULL);
			return;
		}
	}
	if ((rc = es_etcd_txn_init(&t)) == ES_OK) {
		es_etcd_txn_compare(&t, op->key, op->klen, ES_ETCD_CMP_MOD, ES_ETCD_EQUAL,
				    op->cur_mod, NULL, 0);
		if (op->is_delete)
			es_etcd_txn_delete(&t, 1, op->key, op->klen, NULL, 0);
		else
			es_etcd_txn_put(&t, 1, op->key, op->klen, op->value,
					strlen(op->value), 0);
		es_etcd_txn_range(&t, 0, op->key, op->klen, NULL, 0);
		rc = es_etcd_txn_send(op->s->e, &t, on_txn, op);
	}
	es_etcd_txn_free(&t);
	if (rc != ES_OK)
		op_finish(op, rc, NULL);
}

/* A write: its op starts from what the mirror holds. */
static es_err op_start(es_store *st, es_kind kind, const char *name, const cJSON *obj,
		       int create_only, es_store_cb cb, void *ud)
{
	est *s = st->impl;
	wop *op;
	es_err rc;

	if (strlen(name) > ES_NAME_MAX)
		return ES_ERR_INVAL;
	if (!(op = calloc(1, sizeof(*op))))
		return ES_ERR_NOMEM;
	op->s = s;
	op->kind = kind;
	op->is_delete = obj == NULL;
	op->create_only = create_only;
	op->cb = cb;
	op->ud = ud;
	snprintf(op->name, sizeof(op->name), "%s", name);
	rc = es_db_object_get(s->db, kind, name, &op->cur);
	if (rc == ES_OK)
		op->cur_mod = es_obj_resource_version(op->cur);
	else if (rc != ES_ERR_NOTFOUND)
		op->cur = NULL; /* the txn finds out */
	if (!(op->key = key_of(s, kind, name, &op->klen)) ||
	    (obj && !(op->obj = cJSON_Duplicate(obj, 1)))) {
		free(op->key);
		cJSON_Delete(op->cur);
		free(op);
		return ES_ERR_NOMEM;
	}
	op->next = s->ops;
	s->ops = op;
	op_step(op);
	return ES_OK;
}

static es_err etcd_put(es_store *st, const cJSON *obj, int create_only,
		       es_store_cb cb, void *ud)
{
	return op_start(st, es_obj_kind(obj), es_obj_name(obj), obj, create_only, cb, ud);
}

static es_err etcd_del(es_store *st, es_kind kind, const char *name, es_store_cb cb,
		       void *ud)
{
	return op_start(st, kind, name, NULL, 0, cb, ud);
}

/* ---- the mirror: list and watch ---- */

static void schedule(est *s, lws_usec_t us);

/* One event of the watch into the mirror, then told. Returns 0, or -1
 * when the mirror could not take it (a list is owed). */
static int apply_event(est *s, const es_etcd_event *ev)
{
	char name[ES_NAME_MAX + 1];
	cJSON *obj = NULL, *prev = NULL;
	es_kind kind;
	es_err rc;

	if (!parse_key(s, ev->kv.key, ev->kv.key_len, &kind, name, sizeof(name)))
		return 0; /* not an object key: not ours */
	if (ev->type == ES_ETCD_EV_DELETE) {
		rc = es_db_mirror_delete(s->db, kind, name, ev->kv.mod_revision, &prev);
		if (rc == ES_OK && prev)
			tell(s, prev, NULL);
	} else {
		rc = obj_of_kv(s, &ev->kv, &obj);
		if (rc == ES_ERR_PROTO) /* logged; nothing an agent could use */
			rc = es_db_mirror_progress(s->db, ev->kv.mod_revision);
		else if (rc == ES_OK &&
			 (rc = es_db_mirror_put(s->db, obj, ev->kv.mod_revision, &prev)) == ES_OK)
			tell(s, prev, obj);
	}
	cJSON_Delete(obj);
	cJSON_Delete(prev);
	if (rc != ES_OK) {
		es_log_error("store", "the mirror could not take an etcd change; listing again",
			     "name", name, "error", es_strerror(rc), NULL);
		return -1;
	}
	s->rev = ev->kv.mod_revision > s->rev ? ev->kv.mod_revision : s->rev;
	return 0;
}

static void on_watch(void *ud, const es_etcd_watch_ev *ev)
{
	est *s = ud;
	char rv[32];

	switch (ev->kind) {
	case ES_ETCD_WATCH_EVENTS:
		for (size_t i = 0; i < ev->n_events; i++)
			if (apply_event(s, &ev->events[i]) != 0) {
				s->relist_owed = 1;
				schedule(s, 1);
				return;
			}
		s->synced = 1;
		break;
	case ES_ETCD_WATCH_PROGRESS:
		if (ev->revision < s->rev) {
			/* etcd is behind the mirror: not the etcd it followed. */
			snprintf(rv, sizeof(rv), "%" PRId64, ev->revision);
			es_log_warn("store", "etcd's revision is older than the mirror's;"
				    " listing again", "revision", rv, NULL);
			s->relist_owed = 1;
			schedule(s, 1);
			return;
		}
		if (es_db_mirror_progress(s->db, ev->revision) == ES_OK)
			s->rev = ev->revision;
		s->synced = 1;
		break;
	case ES_ETCD_WATCH_COMPACTED:
		snprintf(rv, sizeof(rv), "%" PRId64, ev->compact_revision);
		es_log_info("store", "etcd compacted past the mirror; listing again",
			    "compactRevision", rv, NULL);
		s->relist_owed = 1;
		schedule(s, 1);
		return;
	case ES_ETCD_WATCH_DOWN:
		es_log_warn("store", "etcd watch down, resuming", "endpoint", ev->endpoint,
			    "error", ev->error, NULL);
		return;
	case ES_ETCD_WATCH_FAILED:
		es_log_error("store", "etcd watch failed; listing again", "endpoint",
			     ev->endpoint, "error", ev->error, NULL);
		s->relist_owed = 1;
		schedule(s, RELIST_RETRY_US);
		return;
	}
	ops_release(s, 0);
}

static void watch_from(est *s, int64_t rev)
{
	if (es_etcd_watch_start(s->e, s->opfx, s->oplen, s->opend, s->opendlen, rev,
				on_watch, s, &s->w) != ES_OK) {
		s->relist_owed = 1;
		schedule(s, RELIST_RETRY_US);
	}
}

/* 1 when a and b are the same object (kind, name and uid). */
static int same_obj(const cJSON *a, const cJSON *b)
{
	const char *ua = es_obj_uid(a), *ub = es_obj_uid(b);

	return es_obj_kind(a) == es_obj_kind(b) && es_obj_name(a) && es_obj_name(b) &&
	       strcmp(es_obj_name(a), es_obj_name(b)) == 0 && ua && ub &&
	       strcmp(ua, ub) == 0;
}

/* The first item of list that is the same object as o, or NULL. */
static const cJSON *find_same(const cJSON *list, const cJSON *o)
{
	const cJSON *n;

	cJSON_ArrayForEach(n, list)
		if (same_obj(n, o))
			return n;
	return NULL;
}

/* Every object of a full range at one revision, told as changes against
 * what the mirror held (old, borrowed). */
static void tell_diff(est *s, const cJSON *old, const cJSON *cur)
{
	const cJSON *o, *n;

	cJSON_ArrayForEach(o, old) {
		n = find_same(cur, o);
		if (!n)
			tell(s, o, NULL);
		else if (es_obj_resource_version(n) != es_obj_resource_version(o))
			tell(s, o, n);
	}
	cJSON_ArrayForEach(n, cur)
		if (!find_same(old, n))
			tell(s, NULL, n);
}

static void on_list(void *ud, const es_etcd_result *r)
{
	est *s = ud;
	cJSON *objs = NULL, *old = NULL, *o;
	char rv[32], n[32];
	es_err rc = r->rc;

	s->listing = 0;
	if (rc != ES_OK) {
		es_log_gated(&s->gate_list, ES_LOG_WARN, "store",
			     "etcd list failed; trying again",
			     "error", r->error, NULL);
		goto retry;
	}
	es_log_gate_reset(&s->gate_list);
	if (!(objs = cJSON_CreateArray())) {
		rc = ES_ERR_NOMEM;
		goto retry;
	}
	for (size_t i = 0; i < r->resp->n_kvs; i++) {
		rc = obj_of_kv(s, &r->resp->kvs[i], &o);
		if (rc == ES_ERR_PROTO)
			continue; /* logged */
		if (rc != ES_OK)
			goto retry;
		cJSON_AddItemToArray(objs, o);
	}
	if ((rc = es_db_object_list(s->db, ES_KIND_UNKNOWN, &old)) != ES_OK ||
	    (rc = es_db_mirror_reset(s->db, objs, r->resp->revision)) != ES_OK)
		goto retry;
	if (!s->followed && cJSON_GetArraySize(old) > 0) {
		snprintf(n, sizeof(n), "%d", cJSON_GetArraySize(old));
		es_log_warn("store", "the desired objects this file held as a SQLite store"
			    " are replaced by etcd's; apply them again to keep them",
			    "objects", n, NULL);
	}
	s->followed = 1;
	s->rev = r->resp->revision;
	snprintf(rv, sizeof(rv), "%" PRId64, s->rev);
	snprintf(n, sizeof(n), "%d", cJSON_GetArraySize(objs));
	es_log_info("store", "mirror listed from etcd", "revision", rv, "objects", n,
		    "endpoint", r->endpoint, NULL);
	tell_diff(s, old, objs);
	s->synced = 1;
	watch_from(s, s->rev + 1);
	ops_release(s, 0);
	cJSON_Delete(objs);
	cJSON_Delete(old);
	return;
retry:
	cJSON_Delete(objs);
	cJSON_Delete(old);
	s->relist_owed = 1;
	schedule(s, RELIST_RETRY_US);
}

static void relist(est *s)
{
	s->relist_owed = 0;
	es_etcd_watch_cancel(s->w);
	s->w = NULL;
	s->listing = 1;
	if (es_etcd_range(s->e, s->opfx, s->oplen, s->opend, s->opendlen, 0, 0, on_list,
			  s) != ES_OK) {
		s->listing = 0;
		s->relist_owed = 1;
	}
}

static void on_tick(lws_sorted_usec_list_t *sul)
{
	est *s = lws_container_of(sul, est, sul);

	if (s->relist_owed && !s->listing)
		relist(s);
	ops_release(s, es_time_mono_us());
	store_etcd__session_tick(s, es_time_mono_us());
	store_etcd__cursor_tick(s);
	store_etcd__enroll_tick(s);
	schedule(s, s->relist_owed ? RELIST_RETRY_US : TICK_US);
}

static void schedule(est *s, lws_usec_t us)
{
	lws_sul_schedule(s->ctx, 0, &s->sul, on_tick, us);
}

/* ---- the backend ---- */

static void etcd_close(es_store *st)
{
	est *s = st->impl;

	if (!s)
		return;
	lws_sul_cancel(&s->sul);
	es_etcd_watch_cancel(s->w);
	es_etcd_watch_cancel(s->nw);
	es_etcd_watch_cancel(s->sw);
	store_etcd__enroll_close(s);
	es_etcd_destroy(s->e); /* no callback runs after this */
	store_etcd__session_close(s);
	store_etcd__cursor_close(s);
	store_etcd__nodes_close(s);
	while (s->ops)
		op_finish(s->ops, ES_ERR_IO, "the controller is stopping");
	free(s->opfx);
	free(s->prefix);
	free(s);
	st->impl = NULL;
}

static const es_store_ops etcd_ops = {
	.name = "etcd",
	.put = etcd_put,
	.del = etcd_del,
	.close = etcd_close,
	.session_take = store_etcd__session_take,
	.session_cancel = store_etcd__session_cancel,
	.session_drop = store_etcd__session_drop,
	.sessions_leave = store_etcd__sessions_leave,
	.cursors_put = store_etcd__cursors_put,
	.cursor_get = store_etcd__cursor_get,
	.nodes_read = store_etcd__nodes_read,
	.enroll = &store_etcd__enroll_ops,
};

es_err es_store_etcd_open(struct lws_context *ctx, const es_store_etcd_opts *o,
			  es_db *db, es_store_changed_fn changed, void *ud,
			  es_store *out, char *err, size_t errsz)
{
	const char *prefix = o->prefix && *o->prefix ? o->prefix : ES_STORE_ETCD_PREFIX;
	es_etcd_opts eo = { .endpoints = o->endpoints, .n_endpoints = o->n_endpoints,
			    .cert = o->cert, .key = o->key, .ca = o->ca,
			    .request_timeout_ms = o->request_timeout_ms,
			    .observe = o->observe, .observe_ud = o->observe_ud };
	size_t plen = strlen(prefix);
	int following = 0;
	est *s;
	es_err rc;

	memset(out, 0, sizeof(*out));
	if (plen + sizeof("objects/") > sizeof(s->opend) || prefix[plen - 1] != '/')
		return es_errf(ES_ERR_INVAL, err, errsz, "etcd-prefix: \"%s\" must end with"
			       " '/' and be shorter than %zu bytes", prefix,
			       sizeof(s->opend) - sizeof("objects/"));
	if (!(s = calloc(1, sizeof(*s))) || !(s->opfx = malloc(plen + sizeof("objects/"))) ||
	    !(s->prefix = strdup(prefix))) {
		if (s)
			free(s->opfx);
		free(s);
		return es_errf(ES_ERR_NOMEM, err, errsz, "etcd store: out of memory");
	}
	s->plen = plen;
	s->oplen = (size_t)sprintf(s->opfx, "%sobjects/", prefix);
	s->opendlen = es_etcd_prefix_end(s->opfx, s->oplen, s->opend);
	s->ctx = ctx;
	s->db = db;
	s->store = out;
	out->ops = &etcd_ops;
	out->impl = s;
	out->db = db;
	out->changed = changed;
	out->changed_ud = ud;
	if ((rc = es_etcd_new(ctx, &eo, &s->e, err, errsz)) != ES_OK)
		goto fail;
	if ((rc = store_etcd__session_start(s)) != ES_OK) {
		es_errf(rc, err, errsz, "etcd store: the node sessions could not be set up"
			" (%s)", es_strerror(rc));
		goto fail;
	}
	if ((rc = store_etcd__cursor_start(s)) != ES_OK) {
		es_errf(rc, err, errsz, "etcd store: the node records could not be set up"
			" (%s)", es_strerror(rc));
		goto fail;
	}
	if ((rc = store_etcd__enroll_start(s)) != ES_OK) {
		es_errf(rc, err, errsz, "etcd store: out of memory");
		goto fail;
	}
	if ((rc = es_db_mirror_state(db, &following, &s->rev)) != ES_OK) {
		es_errf(rc, err, errsz, "the store's mirror could not be read");
		goto fail;
	}
	/* Listed at every start, even when the file follows etcd already: a
	 * watch resumed from the file's revision would not know it had caught
	 * up until an event or a progress notification came (etcd sends none
	 * without --experimental-watch-progress-notify-interval), and /readyz
	 * would wait for it. The list's revision is current at once; what
	 * changed while the controller was away is told as a relist tells it. */
	s->followed = following;
	relist(s);
	schedule(s, TICK_US);
	return ES_OK;
fail:
	es_store_close(out);
	return rc;
}

int es_store_etcd_synced(const es_store *st)
{
	const est *s = st && st->ops == &etcd_ops ? st->impl : NULL;

	return s && s->synced;
}

int es_store_etcd_leased(const es_store *st)
{
	const est *s = st && st->ops == &etcd_ops ? st->impl : NULL;

	return s && s->lease != 0;
}
