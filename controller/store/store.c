/*
 * store.c - the store interface (store.h) and its SQLite backend, which
 * completes every write before it returns.
 */
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

static void tell(es_store *s, const cJSON *prev, const cJSON *cur)
{
	if (s->changed)
		s->changed(s->changed_ud, prev, cur);
}

static es_err sqlite_put(es_store *s, const cJSON *obj, int create_only,
			 es_store_cb cb, void *ud)
{
	es_store_result r = { .error = "" };
	cJSON *stored = NULL, *prev = NULL, *existing = NULL;

	if (create_only) {
		r.rc = es_db_object_get(s->db, es_obj_kind(obj), es_obj_name(obj), &existing);
		if (r.rc == ES_OK) {
			r.rc = ES_ERR_EXISTS;
			r.object = existing;
			r.error = "the name is taken";
			goto done;
		}
		if (r.rc != ES_ERR_NOTFOUND)
			goto done;
	}
	r.rc = es_db_object_put(s->db, obj, &stored, &prev, &r.created, &r.changed);
	if (r.rc == ES_OK && r.changed)
		tell(s, prev, stored);
	r.object = stored;
	r.previous = prev;
done:
	if (r.rc != ES_OK && !*r.error)
		r.error = es_strerror(r.rc);
	cb(ud, &r);
	cJSON_Delete(stored);
	cJSON_Delete(prev);
	cJSON_Delete(existing);
	return ES_OK;
}

static es_err sqlite_del(es_store *s, es_kind kind, const char *name,
			 es_store_cb cb, void *ud)
{
	es_store_result r = { .error = "" };
	cJSON *obj = NULL;

	r.rc = es_db_object_delete(s->db, kind, name, &obj);
	if (r.rc == ES_OK)
		tell(s, obj, NULL);
	else
		r.error = es_strerror(r.rc);
	r.object = obj;
	cb(ud, &r);
	cJSON_Delete(obj);
	return ES_OK;
}

/* The file's rows: the session is the agent's connection here. */
static es_err sqlite_nodes_read(es_store *s, const char *node, es_store_nodes_cb cb,
				void *ud)
{
	es_store_nodes_result r = { .error = "", .self = "" };
	es_db_node_brief *b = NULL;
	es_store_node *v = NULL;
	size_t n = 0;

	r.rc = es_db_node_briefs(s->db, node, &b, &n);
	if (r.rc == ES_OK && n && !(v = calloc(n, sizeof(*v))))
		r.rc = ES_ERR_NOMEM;
	if (r.rc == ES_OK) {
		for (size_t i = 0; i < n; i++) {
			v[i].node = b[i].name;
			v[i].controller = b[i].connected ? "" : NULL;
			v[i].writer = "";
			v[i].conditions = b[i].conditions;
			v[i].desired_ack = b[i].desired_ack;
			v[i].last_report = b[i].last_seen;
			v[i].stream = b[i].stream;
			v[i].seq = b[i].seq;
		}
		r.nodes = v;
		r.n = n;
	} else {
		r.error = es_strerror(r.rc);
	}
	cb(ud, &r);
	free(v);
	es_db_node_briefs_free(b, n);
	return ES_OK;
}

static const es_store_ops sqlite_ops = {
	.name = "sqlite",
	.put = sqlite_put,
	.del = sqlite_del,
	.close = NULL,
	.session_take = NULL,
	.session_cancel = NULL,
	.session_drop = NULL,
	.sessions_leave = NULL,
	.cursors_put = NULL,
	.cursor_get = NULL,
	.nodes_read = sqlite_nodes_read,
};

void es_store_sqlite_init(es_store *s, es_db *db, es_store_changed_fn changed,
			  void *ud)
{
	memset(s, 0, sizeof(*s));
	s->ops = &sqlite_ops;
	s->db = db;
	s->changed = changed;
	s->changed_ud = ud;
}

es_err es_store_put(es_store *s, const cJSON *obj, int create_only,
		    es_store_cb cb, void *ud)
{
	if (!s || !s->ops || !cb || es_obj_kind(obj) < ES_KIND_COLLECTOR_CONFIG ||
	    !es_obj_name(obj))
		return ES_ERR_INVAL;
	return s->ops->put(s, obj, create_only, cb, ud);
}

es_err es_store_delete(es_store *s, es_kind kind, const char *name,
		       es_store_cb cb, void *ud)
{
	if (!s || !s->ops || !cb || kind < ES_KIND_COLLECTOR_CONFIG ||
	    !es_obj_kind_name(kind) || !name)
		return ES_ERR_INVAL;
	return s->ops->del(s, kind, name, cb, ud);
}

es_err es_store_session_take(es_store *s, const char *node, es_store_cb cb,
			     void *ud, void **token)
{
	*token = NULL;
	if (!s || !s->ops || !s->ops->session_take)
		return ES_ERR_UNSUPPORTED;
	if (!node || !*node || !cb)
		return ES_ERR_INVAL;
	return s->ops->session_take(s, node, cb, ud, token);
}

void es_store_session_cancel(es_store *s, void *token)
{
	if (s && s->ops && s->ops->session_cancel && token)
		s->ops->session_cancel(s, token);
}

void es_store_session_drop(es_store *s, const char *node)
{
	if (s && s->ops && s->ops->session_drop && node)
		s->ops->session_drop(s, node);
}

es_err es_store_sessions_leave(es_store *s, es_store_cb cb, void *ud)
{
	if (!s || !s->ops || !s->ops->sessions_leave)
		return ES_ERR_UNSUPPORTED;
	if (!cb)
		return ES_ERR_INVAL;
	return s->ops->sessions_leave(s, cb, ud);
}

es_err es_store_cursors_put(es_store *s, const es_store_cursor *cur, size_t n,
			    es_store_cursors_cb cb, void *ud)
{
	if (!s || !s->ops || !s->ops->cursors_put)
		return ES_ERR_UNSUPPORTED;
	if (!cb || (n && !cur))
		return ES_ERR_INVAL;
	return s->ops->cursors_put(s, cur, n, cb, ud);
}

int es_store_cursor_get(es_store *s, const char *node, const char *stream,
			int64_t *seq)
{
	if (!s || !s->ops || !s->ops->cursor_get || !node || !stream)
		return 0;
	return s->ops->cursor_get(s, node, stream, seq);
}

es_err es_store_nodes_read(es_store *s, const char *node, es_store_nodes_cb cb,
			   void *ud)
{
	if (!s || !s->ops || !s->ops->nodes_read || !cb ||
	    (node && (!*node || strlen(node) > ES_NAME_MAX)))
		return ES_ERR_INVAL;
	return s->ops->nodes_read(s, node, cb, ud);
}

void es_store_set_lost(es_store *s, es_store_lost_fn fn, void *ud)
{
	if (!s)
		return;
	s->lost = fn;
	s->lost_ud = ud;
}

const char *es_store_backend(const es_store *s)
{
	return s && s->ops ? s->ops->name : "";
}

void es_store_close(es_store *s)
{
	if (!s)
		return;
	if (s->ops && s->ops->close)
		s->ops->close(s);
	memset(s, 0, sizeof(*s));
}
