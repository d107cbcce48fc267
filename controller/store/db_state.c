/*
 * db_state.c - the reported state of nodes, stored as keyed rows: what a
 * report does to a node's state (db__state_apply on a parsed tree, the one
 * place that knows; db__rows_apply does the same to the rows, touching
 * only what the report names), the rows written from a tree and a tree
 * assembled from them, and the upgrade of a file that held the state as
 * one text (docs/ARCHITECTURE.md, "Durability").
 *
 * Rows (table node_state, one per node, parent, name): the members of the
 * objects on the way to a keyed list (the Node itself, status,
 * status.usage, status.activity, status.activity.processes,
 * status.activity.tcp: "containers") each have a row under parent = the
 * container's path ("" for the Node) and name = the member's name; a
 * member that is itself a container is kind 'o' (its members are rows
 * under its path), a keyed list (es_kpatch_keys, outside list items) whose
 * items all have distinct merge keys is kind 'l' (each item one row under
 * the list's path, name = the item's key text, es_kpatch_item_key), and
 * anything else is kind 'v' with the member's JSON text as body. A member
 * whose name is empty or holds "." or "[" is always 'v' (paths stay
 * unambiguous). ord orders rows under one parent. A node has state exactly
 * when its marker row (parent "#", name "") exists.
 *
 * A report changes the rows in the transaction (or batch savepoint) that
 * stores it, so it is durable when its batch is and nothing is held in
 * memory: no checkpoint, no replay after a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db_int.h"
#include "es_json.h"
#include "es_log.h"
#include "es_kpatch.h"
#include "es_mpatch.h"

#define MARKER_PARENT "#"

int db__report_is_change(const char *type)
{
	return strcmp(type, "patch") == 0 || strcmp(type, "delta") == 0;
}

int db__state_would_apply(const cJSON *state, int64_t state_seq, const db_report *r)
{
	if (strcmp(r->type, "snapshot") == 0)
		return 1;
	return db__report_is_change(r->type) && state && r->base_seq == state_seq;
}

/* A change report r of node that cannot be applied (why): stored and
 * acknowledged, not applied; the agent sends a snapshot (as for another
 * base). */
static void unapplied(const char *node, const db_report *r, const char *why,
		      int *need_resync)
{
	char seq[24];

	snprintf(seq, sizeof(seq), "%lld", (long long)r->seq);
	es_log_warn("store", "a delta report cannot be applied; asking "
		    "for a snapshot", "node", node ? node : "", "seq", seq,
		    "error", why, NULL);
	*need_resync = 1;
}

es_err db__state_apply(const char *node, cJSON **state, int64_t *state_seq,
		       const db_report *r, int *changed, int *need_resync)
{
	char why[256] = "";
	cJSON *next;
	es_err rc;

	*changed = 0;
	if (strcmp(r->type, "snapshot") == 0) {
		if (!(next = cJSON_Duplicate(r->body, 1)))
			return ES_ERR_NOMEM;
		cJSON_Delete(*state);
		*state = next;
	} else if (db__report_is_change(r->type)) {
		if (!db__state_would_apply(*state, *state_seq, r)) {
			*need_resync = 1;
			return ES_OK;
		}
		if (strcmp(r->type, "delta") == 0)
			rc = es_kpatch_apply(state, r->body, why, sizeof(why));
		else
			rc = es_mpatch_apply(state, r->body);
		if (rc == ES_ERR_INVAL) {
			unapplied(node, r, why, need_resync);
			return ES_OK;
		}
		if (rc != ES_OK)
			return rc;
	} else {
		return ES_OK;
	}
	*state_seq = r->seq;
	*changed = 1;
	return ES_OK;
}

/*
 * Applies the node's stored state reports of stream with from < seq <= upto
 * to *state (at seq *state_seq), in seq order, as db__state_apply did when
 * they arrived. Errors: ES_ERR_DB (a stored body does not parse),
 * ES_ERR_NOMEM.
 */
static es_err replay(es_db *db, const char *node, const char *stream, int64_t from,
		     int64_t upto, cJSON **state, int64_t *state_seq)
{
	sqlite3_stmt *st;
	es_err rc = db__stmt(db, DB_ST_STATE_REPLAY, &st);
	int s, changed, resync;

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, stream, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, from);
	sqlite3_bind_int64(st, 4, upto);
	while (rc == ES_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
		cJSON *body = NULL;
		db_report r = {
			.seq = sqlite3_column_int64(st, 0),
			.type = (const char *)sqlite3_column_text(st, 1),
			.base_seq = sqlite3_column_int64(st, 2),
		};

		if (!r.type)
			continue;
		if ((rc = es_sqlite_column_json(db->sq, st, 3, "state replay", &body)) != ES_OK)
			break;
		r.body = body;
		if (body)
			rc = db__state_apply(node, state, state_seq, &r, &changed, &resync);
		cJSON_Delete(body);
	}
	if (rc == ES_OK && s != SQLITE_DONE)
		rc = es_sqlite_fail(db->sq, "state replay");
	sqlite3_reset(st);
	return rc;
}


/* ---- paths ------------------------------------------------------------- */

/* 1 when name may be a path segment (a split member). */
static int name_splits(const char *name)
{
	return name[0] && !strchr(name, '.') && !strchr(name, '[');
}

/* The path of member name of the container at cpath (malloc'd), or NULL
 * (*oom 0) when name does not split; *oom 1 when out of memory. */
static char *member_path(const char *cpath, const char *name, int *oom)
{
	size_t a = strlen(cpath), b = strlen(name);
	char *p;

	*oom = 0;
	if (!name_splits(name))
		return NULL;
	if (!(p = malloc(a + b + 2))) {
		*oom = 1;
		return NULL;
	}
	if (a) {
		memcpy(p, cpath, a);
		p[a] = '.';
		memcpy(p + a + 1, name, b + 1);
	} else {
		memcpy(p, name, b + 1);
	}
	return p;
}

/* 1 when path ("" the Node) is a container: a proper prefix, at a ".",
 * of a keyed path outside list items. */
static int is_container(const char *path)
{
	size_t n = strlen(path);

	if (!n)
		return 1;
	for (const es_kpatch_key *k = es_kpatch_keys; k->path; k++)
		if (strncmp(k->path, path, n) == 0 && k->path[n] == '.' &&
		    !memchr(k->path, '[', n))
			return 1;
	return 0;
}

/* The keyed list at path (a path outside list items), or NULL. */
static const es_kpatch_key *list_at(const char *path)
{
	return strchr(path, '[') ? NULL : es_kpatch_key_of(path);
}

/* ---- rows ---------------------------------------------------------------- */

typedef struct srow {
	int kind;      /* 0: no row; 'o', 'l', 'v'; '?': not read */
	int64_t ord;
} srow;

static void bind3(sqlite3_stmt *st, const char *node, const char *parent,
		  const char *name)
{
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, parent, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
}

/* The row (node, parent, name) into *r; *body (may be NULL) its parsed
 * body (kind 'v'; caller owns). Errors: ES_ERR_DB, ES_ERR_NOMEM. */
static es_err row_get(es_db *db, const char *node, const char *parent,
		      const char *name, srow *r, cJSON **body)
{
	sqlite3_stmt *st;
	es_err rc = db__stmt(db, DB_ST_ROW_GET, &st);
	const unsigned char *k;
	int s;

	r->kind = 0;
	r->ord = 0;
	if (body)
		*body = NULL;
	if (rc != ES_OK)
		return rc;
	bind3(st, node, parent, name);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		k = sqlite3_column_text(st, 0);
		r->kind = k && (k[0] == 'o' || k[0] == 'l' || k[0] == 'v') ? k[0] : 'v';
		r->ord = sqlite3_column_int64(st, 1);
		if (body && r->kind == 'v')
			rc = es_sqlite_column_json(db->sq, st, 2, "node state", body);
	} else if (s != SQLITE_DONE) {
		rc = es_sqlite_fail(db->sq, "node state");
	}
	sqlite3_reset(st);
	return rc;
}

/* Inserts or replaces a row; body NULL for kinds 'o' and 'l'. */
static es_err row_put(es_db *db, const char *node, const char *parent, const char *name,
		      int64_t ord, int kind, const char *body)
{
	sqlite3_stmt *st;
	char k[2] = { (char)kind, 0 };
	es_err rc = db__stmt(db, DB_ST_ROW_PUT, &st);

	if (rc != ES_OK)
		return rc;
	bind3(st, node, parent, name);
	sqlite3_bind_int64(st, 4, ord);
	sqlite3_bind_text(st, 5, k, -1, SQLITE_TRANSIENT);
	if (body)
		sqlite3_bind_text(st, 6, body, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 6);
	rc = es_sqlite_step_done(db->sq, st, "node state write");
	sqlite3_reset(st);
	return rc;
}

/* Runs kept statement id bound with (node, a, b) (b may be NULL: unbound),
 * no rows expected. */
static es_err row_exec(es_db *db, enum db_stmt_id id, const char *node, const char *a,
		       const char *b)
{
	sqlite3_stmt *st;
	es_err rc = db__stmt(db, id, &st);

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	if (a)
		sqlite3_bind_text(st, 2, a, -1, SQLITE_STATIC);
	if (b)
		sqlite3_bind_text(st, 3, b, -1, SQLITE_STATIC);
	rc = es_sqlite_step_done(db->sq, st, "node state write");
	sqlite3_reset(st);
	return rc;
}

/* The next free ord under parent. */
static es_err next_ord(es_db *db, const char *node, const char *parent, int64_t *out)
{
	sqlite3_stmt *st;
	es_err rc = db__stmt(db, DB_ST_ROW_NEXT_ORD, &st);

	*out = 0;
	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, parent, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	else
		rc = es_sqlite_fail(db->sq, "node state");
	sqlite3_reset(st);
	return rc;
}

/* Removes member name of cpath (row r) with every row below it. */
static es_err member_delete(es_db *db, const char *node, const char *cpath,
			    const char *name, const srow *r)
{
	es_err rc = row_exec(db, DB_ST_ROW_DEL, node, cpath, name);
	char *path;
	int oom;

	if (rc != ES_OK || r->kind == 'v')
		return rc;
	if (!(path = member_path(cpath, name, &oom)))
		return oom ? ES_ERR_NOMEM : ES_OK;
	rc = row_exec(db, DB_ST_ROWS_DEL_UNDER, node, path, NULL);
	free(path);
	return rc;
}

/* Writes one row of kind 'v' with the text of v. */
static es_err put_text(es_db *db, const char *node, const char *parent, const char *name,
		       int64_t ord, const cJSON *v)
{
	char *text = es_json_print(v);
	es_err rc;

	if (!text)
		return ES_ERR_NOMEM;
	rc = row_put(db, node, parent, name, ord, 'v', text);
	free(text);
	return rc;
}

/* Writes member name of cpath as one row of the text of v, in its
 * place when it has a row, else after the last. */
static es_err put_upsert(es_db *db, const char *node, const char *cpath,
			 const char *name, const cJSON *v)
{
	sqlite3_stmt *st;
	char *text = es_json_print(v);
	es_err rc;

	if (!text)
		return ES_ERR_NOMEM;
	if ((rc = db__stmt(db, DB_ST_ROW_UPSERT, &st)) == ES_OK) {
		bind3(st, node, cpath, name);
		sqlite3_bind_text(st, 4, text, -1, SQLITE_STATIC);
		rc = es_sqlite_step_done(db->sq, st, "node state write");
		sqlite3_reset(st);
	}
	free(text);
	return rc;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys of arr's items under k (*keys, n of them, caller frees each
 * and the array) when every item has one and no two share one; else
 * *keys NULL. Returns 0 or -1 (out of memory). */
static int list_keys(const cJSON *arr, const es_kpatch_key *k, char ***keys)
{
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0, j;
	char **out = calloc(n ? n : 1, sizeof(*out)), **sorted = NULL;
	const cJSON *it;
	int r, ok = 1;

	*keys = NULL;
	if (!out)
		return -1;
	cJSON_ArrayForEach(it, arr) {
		if ((r = es_kpatch_item_key(it, k, &out[i])) < 0)
			goto oom;
		if (r) {
			ok = 0;
			break;
		}
		i++;
	}
	if (ok && n > 1) {
		if (!(sorted = malloc(n * sizeof(*sorted))))
			goto oom;
		memcpy(sorted, out, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), key_cmp);
		for (j = 1; j < n && ok; j++)
			ok = strcmp(sorted[j - 1], sorted[j]) != 0;
		free(sorted);
	}
	if (ok) {
		*keys = out;
		return 0;
	}
	for (j = 0; j < n; j++)
		free(out[j]);
	free(out);
	return 0;
oom:
	for (j = 0; j < n; j++)
		free(out[j]);
	free(out);
	return -1;
}

static void keys_free(char **keys, size_t n)
{
	if (!keys)
		return;
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

/* Writes member name of the container at cpath, value v, at ord: split
 * into rows where it is a container or a keyed list (see the top). */
static es_err store_value(es_db *db, const char *node, const char *cpath,
			  const char *name, int64_t ord, const cJSON *v)
{
	const es_kpatch_key *k;
	const cJSON *m;
	char *path, **keys = NULL;
	int64_t i = 0;
	int oom;
	es_err rc = ES_OK;

	path = member_path(cpath, name, &oom);
	if (oom)
		return ES_ERR_NOMEM;
	if (path && cJSON_IsObject(v) && is_container(path)) {
		rc = row_put(db, node, cpath, name, ord, 'o', NULL);
		cJSON_ArrayForEach(m, v) {
			if (rc != ES_OK)
				break;
			if (m->string)
				rc = store_value(db, node, path, m->string, i++, m);
		}
	} else if (path && cJSON_IsArray(v) && (k = list_at(path)) != NULL) {
		if (list_keys(v, k, &keys) < 0) {
			rc = ES_ERR_NOMEM;
		} else if (!keys) {
			rc = put_text(db, node, cpath, name, ord, v);
		} else {
			rc = row_put(db, node, cpath, name, ord, 'l', NULL);
			cJSON_ArrayForEach(m, v) {
				if (rc != ES_OK)
					break;
				rc = put_text(db, node, path, keys[i], i, m);
				i++;
			}
			keys_free(keys, (size_t)cJSON_GetArraySize(v));
		}
	} else {
		rc = put_text(db, node, cpath, name, ord, v);
	}
	free(path);
	return rc;
}

/* ---- assembling ------------------------------------------------------------ */

typedef struct arow {
	char *parent, *name, *body;
	int kind;
} arow;

typedef struct arows {
	arow *r;
	size_t n, cap;
} arows;

static void arows_free(arows *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->r[i].parent);
		free(a->r[i].name);
		free(a->r[i].body);
	}
	free(a->r);
	memset(a, 0, sizeof(*a));
}

static char *col_dup(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	return t ? strdup((const char *)t) : NULL;
}

/* Reads the rows st returns (parent, name, ord, kind, body; ordered by
 * parent then ord) into *a. */
static es_err arows_read(es_db *db, sqlite3_stmt *st, arows *a)
{
	int s;

	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		arow *r;
		const unsigned char *k = sqlite3_column_text(st, 3);

		if (a->n == a->cap) {
			size_t cap = a->cap ? a->cap * 2 : 64;
			arow *nr = realloc(a->r, cap * sizeof(*nr));

			if (!nr)
				return ES_ERR_NOMEM;
			a->r = nr;
			a->cap = cap;
		}
		r = &a->r[a->n];
		memset(r, 0, sizeof(*r));
		r->kind = k ? k[0] : 'v';
		if (!(r->parent = col_dup(st, 0)) || !(r->name = col_dup(st, 1)) ||
		    (sqlite3_column_type(st, 4) != SQLITE_NULL && !(r->body = col_dup(st, 4)))) {
			free(r->parent);
			free(r->name);
			return ES_ERR_NOMEM;
		}
		a->n++;
	}
	return s == SQLITE_DONE ? ES_OK : es_sqlite_fail(db->sq, "node state read");
}

/* The first row under parent (rows sorted by parent), or a->n. */
static size_t arows_first(const arows *a, const char *parent)
{
	size_t lo = 0, hi = a->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(a->r[mid].parent, parent) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The value of the container (list 0) or keyed list (list 1) at path
 * built from a's rows into *out. */
static es_err build(es_db *db, const arows *a, const char *path, int list, int depth,
		    cJSON **out)
{
	cJSON *v = list ? cJSON_CreateArray() : cJSON_CreateObject(), *c = NULL;
	es_err rc = ES_OK;
	size_t i;

	*out = NULL;
	if (!v)
		return ES_ERR_NOMEM;
	for (i = arows_first(a, path); i < a->n && strcmp(a->r[i].parent, path) == 0; i++) {
		const arow *r = &a->r[i];
		char msg[160];

		c = NULL;
		if (r->kind == 'v' || list) {
			if (!r->body) {
				rc = ES_ERR_DB;
			} else if ((rc = es_json_parse(r->body, strlen(r->body), ES_JSON_MAX_DEPTH,
						       &c, msg, sizeof(msg))) == ES_ERR_PARSE) {
				es_log_error("db", "stored node state is corrupt", "parent",
					     r->parent, "name", r->name, "error", msg, NULL);
				rc = ES_ERR_DB;
			}
		} else {
			int oom;
			char *sub = member_path(path, r->name, &oom);

			if (!sub || depth > 8)
				rc = oom ? ES_ERR_NOMEM : ES_ERR_DB;
			else
				rc = build(db, a, sub, r->kind == 'l', depth + 1, &c);
			free(sub);
		}
		if (rc != ES_OK)
			break;
		if (!(list ? cJSON_AddItemToArray(v, c) : cJSON_AddItemToObject(v, r->name, c))) {
			rc = ES_ERR_NOMEM;
			break;
		}
	}
	if (rc != ES_OK) {
		cJSON_Delete(c);
		cJSON_Delete(v);
		return rc;
	}
	*out = v;
	return ES_OK;
}

/* The whole value below path (a container, list 0, or a keyed list,
 * list 1) assembled from its rows. */
static es_err assemble_under(es_db *db, const char *node, const char *path, int list,
			     cJSON **out)
{
	sqlite3_stmt *st;
	arows a = {0};
	es_err rc = db__stmt(db, DB_ST_ROWS_UNDER, &st);

	*out = NULL;
	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
	rc = arows_read(db, st, &a);
	sqlite3_reset(st);
	if (rc == ES_OK)
		rc = build(db, &a, path, list, 0, out);
	arows_free(&a);
	return rc;
}

/* The value of member name of cpath, whose row is r (not 0). */
static es_err member_value(es_db *db, const char *node, const char *cpath,
			   const char *name, const srow *r, cJSON **out)
{
	char *path;
	int oom;
	es_err rc;
	srow again;

	*out = NULL;
	if (r->kind == 'v')
		return row_get(db, node, cpath, name, &again, out);
	if (!(path = member_path(cpath, name, &oom)))
		return oom ? ES_ERR_NOMEM : ES_ERR_DB;
	rc = assemble_under(db, node, path, r->kind == 'l', out);
	free(path);
	return rc;
}

es_err db__rows_member(es_db *db, const char *node, const char *cpath,
		       const char *name, cJSON **out)
{
	srow r;
	es_err rc = row_get(db, node, cpath, name, &r, NULL);

	*out = NULL;
	if (rc != ES_OK || !r.kind)
		return rc;
	return member_value(db, node, cpath, name, &r, out);
}

static es_err has_state(es_db *db, const char *node, int *has)
{
	srow r;
	es_err rc = row_get(db, node, MARKER_PARENT, "", &r, NULL);

	*has = r.kind != 0;
	return rc;
}

es_err db__rows_get(es_db *db, const char *node, cJSON **out)
{
	sqlite3_stmt *st;
	arows a = {0};
	int has;
	es_err rc;

	*out = NULL;
	if ((rc = has_state(db, node, &has)) != ES_OK || !has)
		return rc;
	if ((rc = db__stmt(db, DB_ST_ROWS_NODE, &st)) != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	rc = arows_read(db, st, &a);
	sqlite3_reset(st);
	if (rc == ES_OK)
		rc = build(db, &a, "", 0, 0, out);
	arows_free(&a);
	return rc;
}

es_err db__rows_put(es_db *db, const char *node, const cJSON *state)
{
	const cJSON *m;
	int64_t i = 0;
	es_err rc = row_exec(db, DB_ST_ROWS_DEL_NODE, node, NULL, NULL);

	if (rc != ES_OK || !state)
		return rc;
	if (!cJSON_IsObject(state))
		return ES_ERR_INVAL;
	rc = row_put(db, node, MARKER_PARENT, "", 0, 'o', NULL);
	cJSON_ArrayForEach(m, state) {
		if (rc != ES_OK)
			break;
		if (m->string)
			rc = store_value(db, node, "", m->string, i++, m);
	}
	return rc;
}

/* ---- applying a change to the rows ----------------------------------------- */

#define ORDER_PREFIX "$setElementOrder/"
#define ORDER_PREFIX_LEN (sizeof(ORDER_PREFIX) - 1)

/* The members of a change object, one per member name it touches. */
typedef struct touch {
	const char *name;
	const cJSON *pm;     /* the change of the member, NULL: none */
	const cJSON *order;  /* its $setElementOrder (keyed changes), NULL: none */
} touch;

/* Lists in *t (n) what change p touches: keyed (1, es_kpatch) or a merge
 * patch (0, RFC 7386). Caller frees *t. Returns 0 or -1. */
static int touches(const cJSON *p, int keyed, touch **t, size_t *n)
{
	size_t cap = (size_t)cJSON_GetArraySize(p), i;
	const cJSON *m;

	*n = 0;
	if (!(*t = calloc(cap ? cap : 1, sizeof(**t))))
		return -1;
	cJSON_ArrayForEach(m, p) {
		const char *name = m->string;
		int order = 0;

		if (!name)
			continue;
		if (keyed && name[0] == '$') {
			if (strncmp(name, ORDER_PREFIX, ORDER_PREFIX_LEN) != 0)
				continue; /* es_kpatch_apply refuses it */
			name += ORDER_PREFIX_LEN;
			order = 1;
		}
		for (i = 0; i < *n && strcmp((*t)[i].name, name) != 0; i++)
			;
		if (i == *n) {
			(*t)[i].name = name;
			(*n)++;
		}
		if (order && !(*t)[i].order)
			(*t)[i].order = m;
		else if (!order && !(*t)[i].pm)
			(*t)[i].pm = m;
	}
	return 0;
}

/* 1 when the member's new value depends on its old one. */
static int needs_old(const touch *t)
{
	return cJSON_IsObject(t->pm) || cJSON_IsArray(t->pm) || (!t->pm && t->order);
}

/* A keyed list change that names its items (no "$patch": "replace" and
 * no order): only those items are read and written. */
static int list_partial(const touch *t)
{
	const cJSON *d = cJSON_IsArray(t->pm) ? t->pm->child : NULL;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, "$patch");

	if (!cJSON_IsArray(t->pm) || t->order)
		return 0;
	return !(cJSON_IsString(v) && strcmp(v->valuestring, "replace") == 0);
}

typedef struct litem {
	int64_t ord;
	cJSON *item;
} litem;

static int litem_cmp(const void *a, const void *b)
{
	int64_t x = ((const litem *)a)->ord, y = ((const litem *)b)->ord;

	return x < y ? -1 : x > y;
}

/* Reads the items of the list at path named by the sorted keys want (nw
 * of them, distinct) in one scan of the list's rows into it (*got of
 * them); *next gets the list's next free ord. */
static es_err scan_items(es_db *db, const char *node, const char *path, char **want,
			 size_t nw, litem *it, size_t *got, int64_t *next)
{
	sqlite3_stmt *st;
	int64_t top = -1;
	es_err rc = db__stmt(db, DB_ST_ROWS_LIST, &st);
	int s;

	if (rc != ES_OK)
		return rc;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		int64_t ord = sqlite3_column_int64(st, 1);

		if (ord > top)
			top = ord;
		if (!name || *got == nw || !bsearch(&name, want, nw, sizeof(*want), key_cmp))
			continue;
		if ((rc = es_sqlite_column_json(db->sq, st, 2, "node state",
						&it[*got].item)) != ES_OK)
			break;
		it[(*got)++].ord = ord;
	}
	if (rc == ES_OK && s != SQLITE_DONE)
		rc = es_sqlite_fail(db->sq, "node state");
	sqlite3_reset(st);
	if (rc == ES_OK)
		*next = top + 1;
	return rc;
}

/* Into the array out: the stored items of the list at path that the item
 * changes of pm name, in their order; not those it removes. More than one
 * is read in one scan of the list's rows, which also gives *next, the
 * list's next free ord (else *next is -1: not known). */
static es_err load_items(es_db *db, const char *node, const char *path,
			 const es_kpatch_key *k, const cJSON *pm, cJSON *out, int64_t *next)
{
	size_t n = (size_t)cJSON_GetArraySize(pm), nw = 0, got = 0, i, j;
	litem *it = calloc(n ? n : 1, sizeof(*it));
	char **want = calloc(n ? n : 1, sizeof(*want));
	const cJSON *c;
	es_err rc = ES_OK;

	*next = -1;
	if (!it || !want) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	cJSON_ArrayForEach(c, pm) {
		char *key = NULL;
		int x = es_kpatch_item_key(c, k, &key);

		if (x < 0) {
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
		if (x)
			continue; /* es_kpatch_apply refuses it */
		if (cJSON_GetObjectItemCaseSensitive(c, "$patch")) {
			/* A removal needs nothing of the item (write_items
			 * removes its row). */
			free(key);
			continue;
		}
		want[nw++] = key;
	}
	qsort(want, nw, sizeof(*want), key_cmp);
	for (i = j = 0; i < nw; i++) {
		if (j && strcmp(want[j - 1], want[i]) == 0)
			free(want[i]);
		else
			want[j++] = want[i];
	}
	nw = j;
	if (nw == 1) {
		srow r;

		if ((rc = row_get(db, node, path, want[0], &r, &it[0].item)) != ES_OK)
			goto cleanup;
		if (r.kind) {
			it[0].ord = r.ord;
			got = 1;
		} else {
			cJSON_Delete(it[0].item);
			it[0].item = NULL;
		}
	} else if (nw > 1 &&
		   (rc = scan_items(db, node, path, want, nw, it, &got, next)) != ES_OK) {
		goto cleanup;
	}
	qsort(it, got, sizeof(*it), litem_cmp);
	for (i = 0; i < got; i++) {
		if (!cJSON_AddItemToArray(out, it[i].item)) {
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
		it[i].item = NULL;
	}
cleanup:
	for (i = 0; it && i < n; i++)
		cJSON_Delete(it[i].item);
	for (i = 0; want && i < nw; i++)
		free(want[i]);
	free(it);
	free(want);
	return rc;
}

/* What load_obj found of one container, for write_obj: the members the
 * change touches, their rows, and the same for the containers it goes
 * into. */
typedef struct plan {
	touch *t;
	srow *r;
	int64_t *next; /* a keyed list's next free ord, -1: not known */
	struct plan **sub;
	size_t n;
} plan;

static void plan_free(plan *pl)
{
	if (!pl)
		return;
	for (size_t i = 0; i < pl->n; i++)
		plan_free(pl->sub[i]);
	free(pl->t);
	free(pl->r);
	free(pl->next);
	free(pl->sub);
	free(pl);
}

/* Into the object out: what the change p (keyed or not) of the container
 * at cpath needs of its stored members: a container member the change
 * goes into as an object of what it needs, a keyed list as the items the
 * change names, any other member whose new value depends on the old one
 * whole. *pl (caller frees, plan_free) gets the rows it read. */
static es_err load_obj(es_db *db, const char *node, const char *cpath, const cJSON *p,
		       int keyed, cJSON *out, plan **pl)
{
	plan *q = calloc(1, sizeof(*q));
	size_t i;
	es_err rc = ES_OK;

	*pl = q;
	if (!q || touches(p, keyed, &q->t, &q->n) < 0 ||
	    !(q->r = calloc(q->n ? q->n : 1, sizeof(*q->r))) ||
	    !(q->next = malloc((q->n ? q->n : 1) * sizeof(*q->next))) ||
	    !(q->sub = calloc(q->n ? q->n : 1, sizeof(*q->sub))))
		return ES_ERR_NOMEM;
	for (i = 0; i < q->n; i++)
		q->next[i] = -1;
	for (i = 0; i < q->n && rc == ES_OK; i++) {
		const es_kpatch_key *k;
		const touch *t = &q->t[i];
		cJSON *v = NULL;
		char *path;
		int oom;

		if (!needs_old(t)) {
			q->r[i].kind = '?'; /* replaced or removed: not read */
			continue;
		}
		if ((rc = row_get(db, node, cpath, t->name, &q->r[i], NULL)) != ES_OK)
			break;
		if (!q->r[i].kind)
			continue;
		path = member_path(cpath, t->name, &oom);
		if (oom) {
			rc = ES_ERR_NOMEM;
			break;
		}
		if (q->r[i].kind == 'o' && path && cJSON_IsObject(t->pm)) {
			if (!(v = cJSON_CreateObject()))
				rc = ES_ERR_NOMEM;
			else
				rc = load_obj(db, node, path, t->pm, keyed, v, &q->sub[i]);
		} else if (keyed && q->r[i].kind == 'l' && path && list_partial(t) &&
			   (k = list_at(path)) != NULL) {
			if (!(v = cJSON_CreateArray()))
				rc = ES_ERR_NOMEM;
			else
				rc = load_items(db, node, path, k, t->pm, v, &q->next[i]);
		} else {
			rc = member_value(db, node, cpath, t->name, &q->r[i], &v);
		}
		free(path);
		if (rc == ES_OK && v && !cJSON_AddItemToObject(out, t->name, v))
			rc = ES_ERR_NOMEM;
		else if (rc == ES_OK)
			v = NULL;
		cJSON_Delete(v);
	}
	return rc;
}

/* Writes the keyed list at path from its loaded items b to a (what
 * applying the list change pm made of them): changed items updated, new
 * ones after the last (from ord, the list's next free ord; -1: read it
 * first), loaded ones gone removed, and the items pm removes that were
 * not loaded (load_items reads none of them) removed. */
static es_err write_items(es_db *db, const char *node, const char *path,
			  const es_kpatch_key *k, const cJSON *pm, const cJSON *b,
			  const cJSON *a, int64_t ord)
{
	size_t nb = (size_t)cJSON_GetArraySize(b), na = (size_t)cJSON_GetArraySize(a), i, j;
	char **bk = calloc(nb ? nb : 1, sizeof(*bk)), **ak = calloc(na ? na : 1, sizeof(*ak));
	char *key = NULL;
	unsigned char *kept = calloc(nb ? nb : 1, 1);
	const cJSON *x, *y;
	es_err rc = ES_OK;

	if (!bk || !ak || !kept) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	i = 0;
	cJSON_ArrayForEach(x, b) {
		if (es_kpatch_item_key(x, k, &bk[i]) != 0) {
			rc = ES_ERR_NOMEM; /* stored items have keys */
			goto cleanup;
		}
		i++;
	}
	i = 0;
	cJSON_ArrayForEach(y, a) {
		int r = es_kpatch_item_key(y, k, &ak[i]);

		if (r != 0) {
			rc = r < 0 ? ES_ERR_NOMEM : ES_ERR_INVAL;
			goto cleanup;
		}
		for (j = 0, x = b ? b->child : NULL; j < nb && strcmp(bk[j], ak[i]) != 0;
		     j++, x = x->next)
			;
		if (j < nb) {
			kept[j] = 1;
			if (es_json_equal(x, y) != 1) {
				sqlite3_stmt *st;
				char *text = es_json_print(y);

				if (!text) {
					rc = ES_ERR_NOMEM;
					goto cleanup;
				}
				if ((rc = db__stmt(db, DB_ST_ROW_BODY, &st)) == ES_OK) {
					bind3(st, node, path, ak[i]);
					sqlite3_bind_text(st, 4, text, -1, SQLITE_STATIC);
					rc = es_sqlite_step_done(db->sq, st, "node state write");
					sqlite3_reset(st);
				}
				free(text);
			}
		} else {
			/* New, or removed and made again by the same change
			 * (then it goes after the last, as applying puts it). */
			if (ord < 0 && (rc = next_ord(db, node, path, &ord)) != ES_OK)
				goto cleanup;
			rc = put_text(db, node, path, ak[i], ord++, y);
		}
		i++;
		if (rc != ES_OK)
			goto cleanup;
	}
	for (j = 0; j < nb && rc == ES_OK; j++)
		if (!kept[j])
			rc = row_exec(db, DB_ST_ROW_DEL, node, path, bk[j]);
	cJSON_ArrayForEach(x, pm) {
		if (rc != ES_OK)
			break;
		if (!cJSON_GetObjectItemCaseSensitive(x, "$patch"))
			continue;
		if (es_kpatch_item_key(x, k, &key) != 0) {
			rc = ES_ERR_INVAL; /* es_kpatch_apply refused it already */
			break;
		}
		for (j = 0; j < na && strcmp(ak[j], key) != 0; j++)
			;
		if (j == na) {
			for (j = 0; j < nb && strcmp(bk[j], key) != 0; j++)
				;
			if (j == nb)
				rc = row_exec(db, DB_ST_ROW_DEL, node, path, key);
		}
		free(key);
		key = NULL;
	}
cleanup:
	free(key);
	keys_free(bk, nb);
	keys_free(ak, na);
	free(kept);
	return rc;
}

/* Writes the container at cpath as the change made it: pl what load_obj
 * found, b what it read (NULL: nothing), a what applying made of b (NULL:
 * nothing). */
static es_err write_obj(es_db *db, const char *node, const char *cpath, const plan *pl,
			int keyed, const cJSON *b, const cJSON *a)
{
	size_t i;
	int64_t ord;
	es_err rc = ES_OK;

	for (i = 0; i < pl->n && rc == ES_OK; i++) {
		const touch *t = &pl->t[i];
		const srow *r = &pl->r[i];
		const cJSON *av = cJSON_GetObjectItemCaseSensitive(a, t->name);
		const cJSON *bv = cJSON_GetObjectItemCaseSensitive(b, t->name);
		const es_kpatch_key *k;
		char *path;
		int oom;

		path = member_path(cpath, t->name, &oom);
		if (oom) {
			rc = ES_ERR_NOMEM;
			break;
		}
		if (r->kind == '?') {
			/* A value (or null) whose row was not read: written
			 * in one statement; rows below it only where a
			 * container or keyed list may have been. */
			if (av)
				rc = put_upsert(db, node, cpath, t->name, av);
			else
				rc = row_exec(db, DB_ST_ROW_DEL, node, cpath, t->name);
			if (rc == ES_OK && path && (is_container(path) || list_at(path)))
				rc = row_exec(db, DB_ST_ROWS_DEL_UNDER, node, path, NULL);
		} else if (!av) {
			if (r->kind)
				rc = member_delete(db, node, cpath, t->name, r);
		} else if (pl->sub[i] && cJSON_IsObject(av)) {
			rc = write_obj(db, node, path, pl->sub[i], keyed, bv, av);
		} else if (keyed && r->kind == 'l' && path && list_partial(t) &&
			   cJSON_IsArray(av) && (k = list_at(path)) != NULL) {
			rc = write_items(db, node, path, k, t->pm, bv, av, pl->next[i]);
		} else if (!(bv && es_json_equal(bv, av) == 1)) {
			/* Replaced whole, in its place (a row of text is
			 * replaced by the new rows in one write). */
			ord = r->ord;
			if (r->kind == 'o' || r->kind == 'l')
				rc = member_delete(db, node, cpath, t->name, r);
			else if (!r->kind)
				rc = next_ord(db, node, cpath, &ord);
			if (rc == ES_OK)
				rc = store_value(db, node, cpath, t->name, ord, av);
		}
		free(path);
	}
	return rc;
}

es_err db__rows_apply(es_db *db, const char *node, int64_t *state_seq,
		      const db_report *r, int *changed, int *need_resync)
{
	char why[256] = "";
	cJSON *before = NULL, *after = NULL;
	plan *pl = NULL;
	int has, keyed;
	es_err rc;

	*changed = 0;
	if (strcmp(r->type, "snapshot") == 0) {
		if ((rc = db__rows_put(db, node, r->body)) != ES_OK)
			return rc;
		goto applied;
	}
	if (!db__report_is_change(r->type))
		return ES_OK;
	if ((rc = has_state(db, node, &has)) != ES_OK)
		return rc;
	if (!has || r->base_seq != *state_seq) {
		*need_resync = 1;
		return ES_OK;
	}
	keyed = strcmp(r->type, "delta") == 0;
	if (!(before = cJSON_CreateObject())) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	if ((rc = load_obj(db, node, "", r->body, keyed, before, &pl)) != ES_OK)
		goto cleanup;
	/* es_kpatch_apply builds its result from a const target: it reads
	 * before through a reference (no copy), which it frees on success. */
	if (!(after = keyed ? cJSON_CreateObjectReference(before->child) :
		      cJSON_Duplicate(before, 1))) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	rc = keyed ? es_kpatch_apply(&after, r->body, why, sizeof(why)) :
		     es_mpatch_apply(&after, r->body);
	if (rc == ES_ERR_INVAL) {
		unapplied(node, r, why, need_resync);
		rc = ES_OK;
		goto cleanup;
	}
	if (rc != ES_OK || (rc = write_obj(db, node, "", pl, keyed, before, after)) != ES_OK)
		goto cleanup;
	cJSON_Delete(before);
	cJSON_Delete(after);
	plan_free(pl);
applied:
	*state_seq = r->seq;
	*changed = 1;
	return ES_OK;
cleanup:
	cJSON_Delete(before);
	cJSON_Delete(after);
	plan_free(pl);
	return rc;
}

/* ---- the upgrade of a file that held the state as one text --------------- */

es_err db__state_upgrade(es_db *db)
{
	sqlite3_stmt *st = NULL;
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	es_err rc;
	int s;

	if ((rc = es_sqlite_prepare(db->sq, "SELECT 1 FROM meta WHERE key ="
				    " 'state_rows_pending'", &st)) != ES_OK)
		return rc;
	s = sqlite3_step(st);
	sqlite3_finalize(st);
	st = NULL;
	if (s == SQLITE_DONE)
		return ES_OK;
	if (s != SQLITE_ROW)
		return es_sqlite_fail(db->sq, "state upgrade");
	if ((rc = es_sqlite_begin(db->sq)) != ES_OK)
		return rc;
	if ((rc = es_sqlite_prepare(db->sq, "SELECT name FROM nodes WHERE state IS NOT NULL",
				    &st)) != ES_OK)
		goto cleanup;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			char **nn = realloc(names, nc * sizeof(*nn));

			if (!nn) {
				rc = ES_ERR_NOMEM;
				goto cleanup;
			}
			names = nn;
			cap = nc;
		}
		if (!(names[n] = col_dup(st, 0))) {
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
		n++;
	}
	if (s != SQLITE_DONE) {
		rc = es_sqlite_fail(db->sq, "state upgrade");
		goto cleanup;
	}
	sqlite3_finalize(st);
	st = NULL;
	for (i = 0; i < n && rc == ES_OK; i++) {
		cJSON *state = NULL;
		char stream[ES_PROTO_STREAM_ID_MAX + 1];
		int64_t ckpt, row_seq, acked, seq;

		if ((rc = es_sqlite_prepare(db->sq, "SELECT state_ckpt, state_seq, acked_seq,"
					    " stream_id, state FROM nodes WHERE name = ?",
					    &st)) != ES_OK)
			break;
		sqlite3_bind_text(st, 1, names[i], -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_ROW) {
			rc = es_sqlite_fail(db->sq, "state upgrade");
			break;
		}
		ckpt = seq = sqlite3_column_int64(st, 0);
		row_seq = sqlite3_column_int64(st, 1);
		acked = sqlite3_column_int64(st, 2);
		snprintf(stream, sizeof(stream), "%s", sqlite3_column_text(st, 3) ?
			 (const char *)sqlite3_column_text(st, 3) : "");
		rc = es_sqlite_column_json(db->sq, st, 4, "state upgrade", &state);
		sqlite3_finalize(st);
		st = NULL;
		/* The reports stored past the last checkpoint (a crash). */
		if (rc == ES_OK && row_seq != ckpt)
			rc = replay(db, names[i], stream, ckpt, acked, &state, &seq);
		if (rc == ES_OK && cJSON_IsObject(state))
			rc = db__rows_put(db, names[i], state);
		cJSON_Delete(state);
		if (rc == ES_OK && seq != row_seq) {
			es_log_warn("db", "node state replay ended at another seq than "
				    "stored; keeping the replayed one", "node", names[i], NULL);
			rc = es_sqlite_prepare(db->sq, "UPDATE nodes SET state_seq = ?"
					       " WHERE name = ?", &st);
			if (rc == ES_OK) {
				sqlite3_bind_int64(st, 1, seq);
				sqlite3_bind_text(st, 2, names[i], -1, SQLITE_STATIC);
				rc = es_sqlite_step_done(db->sq, st, "state upgrade");
			}
			sqlite3_finalize(st);
			st = NULL;
		}
	}
	if (rc == ES_OK)
		rc = es_sqlite_exec(db->sq, "UPDATE nodes SET state = NULL,"
				    " state_ckpt = state_seq;"
				    "DELETE FROM meta WHERE key = 'state_rows_pending';");
	if (rc == ES_OK)
		rc = es_sqlite_commit(db->sq);
	if (rc == ES_OK && n) {
		char cnt[24];

		snprintf(cnt, sizeof(cnt), "%zu", n);
		es_log_info("db", "node states moved into keyed rows", "nodes", cnt, NULL);
	}
cleanup:
	sqlite3_finalize(st);
	es_sqlite_rollback(db->sq);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}
