/*
 * es_kpatch.c - keyed changes of a reported Node (es_kpatch.h): diff and
 * apply of a strategic-merge-style patch with the merge keys of
 * es_kpatch_keys.
 *
 * Both build new trees from const inputs, so an allocation failure or a
 * bad patch leaves every input as it was.
 */
#include "es_kpatch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_json.h"

const es_kpatch_key es_kpatch_keys[] = {
	{"status.conditions", {"type"}},
	{"status.collectors", {"name"}},
	{"status.objects", {"kind", "name"}},
	{"status.objects[].conditions", {"type"}},
	{"status.usage.filesystems", {"mountpoint"}},
	{"status.usage.network", {"interface"}},
	{"status.activity.processes.byCgroup", {"cgroupId"}},
	{"status.activity.tcp.byCgroup", {"cgroupId"}},
	{"status.activity.tcp.topConnections", {"saddr", "sport", "daddr", "dport"}},
	{"status.activity.cgroupNetwork", {"cgroupId"}},
	{"status.activity.blockIO", {"device"}},
	{"status.activity.blockIO[].latencyMicroseconds.buckets", {"le"}},
	{NULL, {NULL}},
};

#define ORDER_PREFIX "$setElementOrder/"
#define ORDER_PREFIX_LEN (sizeof(ORDER_PREFIX) - 1)

/* ---- paths ------------------------------------------------------------- */

/* The path of the value being diffed or applied; too long a path is kept
 * as "over" and matches no key. */
typedef struct kpath {
	char s[256];
	size_t n;
	int over;
} kpath;

/* Appends ".name" (or "name" at the root), or "[]" when name is NULL.
 * Returns what path_pop needs to undo it. */
static size_t path_push(kpath *p, const char *name)
{
	size_t old = p->n | ((size_t)p->over << 30);
	int w;

	if (p->over)
		return old;
	if (name)
		w = snprintf(p->s + p->n, sizeof(p->s) - p->n, "%s%s", p->n ? "." : "",
			     name);
	else
		w = snprintf(p->s + p->n, sizeof(p->s) - p->n, "[]");
	if (w < 0 || (size_t)w >= sizeof(p->s) - p->n) {
		p->over = 1;
		p->s[p->n] = '\0';
		return old;
	}
	p->n += (size_t)w;
	return old;
}

static void path_pop(kpath *p, size_t old)
{
	p->over = (int)(old >> 30);
	p->n = old & ((1u << 30) - 1);
	p->s[p->n] = '\0';
}

static const es_kpatch_key *path_key(const kpath *p)
{
	const es_kpatch_key *k;

	if (p->over)
		return NULL;
	for (k = es_kpatch_keys; k->path; k++)
		if (strcmp(k->path, p->s) == 0)
			return k;
	return NULL;
}

const es_kpatch_key *es_kpatch_key_of(const char *path)
{
	kpath p = {{0}, 0, 0};

	if (!path || strlen(path) >= sizeof(p.s))
		return NULL;
	p.n = strlen(path);
	memcpy(p.s, path, p.n + 1);
	return path_key(&p);
}

/* ---- merge keys ----------------------------------------------------------- */

/* Writes n in decimal at w; returns the end. */
static char *put_dec(char *w, size_t n)
{
	char t[24];
	size_t i = 0;

	do {
		t[i++] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	while (i)
		*w++ = t[--i];
	return w;
}

/* The text of item's merge key (each member's type and value, length
 * prefixed so no two keys share a text) in *out (malloc'd). Returns 0, 1
 * when item is not an object or a key member is missing or not a string or
 * number (*missing names it), -1 when out of memory. */
static int item_key(const cJSON *item, const es_kpatch_key *k, char **out,
		    const char **missing)
{
	size_t len = 1, i;
	char *s, *w;

	*out = NULL;
	*missing = k->keys[0];
	if (!cJSON_IsObject(item))
		return 1;
	for (i = 0; i < ES_KPATCH_MAX_KEYS && k->keys[i]; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, k->keys[i]);

		*missing = k->keys[i];
		if (cJSON_IsString(v))
			len += strlen(v->valuestring) + 24;
		else if (cJSON_IsNumber(v))
			len += ES_JSON_NUMBER_LEN + 2;
		else
			return 1;
	}
	if (!(s = malloc(len)))
		return -1;
	w = s;
	for (i = 0; i < ES_KPATCH_MAX_KEYS && k->keys[i]; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, k->keys[i]);
		char num[ES_JSON_NUMBER_LEN];
		size_t n;

		/* Without printf: this runs for every item of every keyed
		 * list a change touches. */
		if (cJSON_IsString(v)) {
			n = strlen(v->valuestring);
			*w++ = 's';
			w = put_dec(w, n);
			*w++ = ':';
			memcpy(w, v->valuestring, n);
			w += n;
		} else {
			const char *t = es_json_number_text(v->valuedouble, num) ? num : "null";

			n = strlen(t);
			*w++ = 'n';
			memcpy(w, t, n);
			w += n;
			*w++ = ';';
		}
	}
	*w = '\0';
	*out = s;
	return 0;
}

int es_kpatch_item_key(const cJSON *item, const es_kpatch_key *k, char **out)
{
	const char *missing;

	return item_key(item, k, out, &missing);
}

/* A new object holding item's merge key members; NULL when out of memory. */
static cJSON *key_members(const cJSON *item, const es_kpatch_key *k)
{
	cJSON *o = cJSON_CreateObject();
	size_t i;

	for (i = 0; o && i < ES_KPATCH_MAX_KEYS && k->keys[i]; i++) {
		cJSON *v = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(item,
					   k->keys[i]), 1);

		if (!v || !cJSON_AddItemToObject(o, k->keys[i], v)) {
			cJSON_Delete(v);
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

/* A list's items by merge key, sorted for lookups. */
typedef struct kent {
	char *key;
	const cJSON *item;
	size_t pos;
} kent;
typedef struct klist {
	kent *e;
	size_t n;
} klist;

static void klist_free(klist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].key);
	free(l->e);
	l->e = NULL;
	l->n = 0;
}

static int kent_cmp(const void *a, const void *b)
{
	return strcmp(((const kent *)a)->key, ((const kent *)b)->key);
}

/* Indexes arr (NULL: empty). Returns 0; 1 when an item has no key or two
 * share one (the list cannot be merged by key); -1 when out of memory. */
static int klist_build(klist *l, const cJSON *arr, const es_kpatch_key *k)
{
	const cJSON *it;
	const char *missing;
	size_t n = (size_t)cJSON_GetArraySize(arr), i;
	int r;

	l->e = NULL;
	l->n = 0;
	if (n == 0)
		return 0;
	if (!(l->e = calloc(n, sizeof(*l->e))))
		return -1;
	cJSON_ArrayForEach(it, arr) {
		if ((r = item_key(it, k, &l->e[l->n].key, &missing)) != 0) {
			klist_free(l);
			return r;
		}
		l->e[l->n].item = it;
		l->e[l->n].pos = l->n;
		l->n++;
	}
	qsort(l->e, l->n, sizeof(*l->e), kent_cmp);
	for (i = 1; i < l->n; i++)
		if (strcmp(l->e[i - 1].key, l->e[i].key) == 0) {
			klist_free(l);
			return 1;
		}
	return 0;
}

static const kent *klist_find(const klist *l, const char *key)
{
	kent probe = { (char *)key, NULL, 0 };

	if (!l->n)
		return NULL;
	return bsearch(&probe, l->e, l->n, sizeof(*l->e), kent_cmp);
}

/* ---- diff ----------------------------------------------------------------- */

static int add_owned(cJSON *obj, const char *key, cJSON *item)
{
	if (!item)
		return -1;
	if (!cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

static int push_owned(cJSON *arr, cJSON *item)
{
	if (!item)
		return -1;
	if (!cJSON_AddItemToArray(arr, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

static cJSON *diff_obj(const cJSON *from, const cJSON *to, kpath *path);

/* [{"$patch": "replace"}, items of to...]; NULL when out of memory. */
static cJSON *list_replace(const cJSON *to)
{
	cJSON *out = cJSON_CreateArray(), *d;
	const cJSON *it;

	if (!out)
		return NULL;
	d = cJSON_CreateObject();
	if (!d || !cJSON_AddStringToObject(d, "$patch", "replace")) {
		cJSON_Delete(d);
		cJSON_Delete(out);
		return NULL;
	}
	if (push_owned(out, d) < 0) {
		cJSON_Delete(out);
		return NULL;
	}
	cJSON_ArrayForEach(it, to)
		if (push_owned(out, cJSON_Duplicate(it, 1)) < 0) {
			cJSON_Delete(out);
			return NULL;
		}
	return out;
}

/* The keyed list change from `from` (NULL: none) to `to` at path, in *val,
 * and in *order the final order when applying would give another. Returns
 * 0 or -1 (out of memory; nothing set). */
static int list_diff(const cJSON *from, const cJSON *to, const es_kpatch_key *k,
		     kpath *path, cJSON **val, cJSON **order)
{
	klist fl = {0}, tl = {0};
	cJSON *out = NULL, *ord = NULL;
	const cJSON *it;
	const char *missing;
	char *key = NULL;
	int r, same_order = 1, rv = -1;
	size_t old, pos = 0;
	const kent **natural = NULL;

	*val = *order = NULL;
	if (cJSON_GetArraySize(to) == 0 ||
	    (r = klist_build(&tl, to, k)) == 1 ||
	    (r = klist_build(&fl, from, k)) == 1) {
		klist_free(&tl);
		*val = list_replace(to);
		return *val ? 0 : -1;
	}
	if (r < 0 || !(out = cJSON_CreateArray()))
		goto cleanup;
	/* Removed items, in from's order. */
	cJSON_ArrayForEach(it, from) {
		cJSON *d;

		if (item_key(it, k, &key, &missing) != 0)
			goto cleanup;
		if (!klist_find(&tl, key)) {
			d = key_members(it, k);
			if (!d || !cJSON_AddStringToObject(d, "$patch", "delete")) {
				cJSON_Delete(d);
				goto cleanup;
			}
			if (push_owned(out, d) < 0)
				goto cleanup;
		}
		free(key);
		key = NULL;
	}
	/* Changed and new items, in to's order; what applying gives is from's
	 * kept items in from's order, then the new ones. */
	natural = calloc(tl.n ? tl.n : 1, sizeof(*natural));
	if (!natural)
		goto cleanup;
	cJSON_ArrayForEach(it, from) {
		const kent *e;

		if (item_key(it, k, &key, &missing) != 0)
			goto cleanup;
		if ((e = klist_find(&tl, key)) != NULL)
			natural[pos++] = e;
		free(key);
		key = NULL;
	}
	old = path_push(path, NULL);
	cJSON_ArrayForEach(it, to) {
		const kent *f;
		cJSON *sub;

		if (item_key(it, k, &key, &missing) != 0) {
			path_pop(path, old);
			goto cleanup;
		}
		f = klist_find(&fl, key);
		if (!f) {
			natural[pos++] = klist_find(&tl, key);
			sub = diff_obj(NULL, it, path);
		} else {
			sub = diff_obj(f->item, it, path);
			if (sub && sub->child) {
				cJSON *km = key_members(it, k), *m;

				/* The key members first, in the key's order, as a
				 * reader expects: the last one prepended first. */
				while (km && (m = km->child ? km->child->prev : NULL) != NULL) {
					cJSON_DetachItemViaPointer(km, m);
					if (cJSON_GetObjectItemCaseSensitive(sub, m->string))
						cJSON_DeleteItemFromObjectCaseSensitive(sub, m->string);
					m->next = sub->child;
					m->prev = sub->child->prev;
					sub->child->prev = m;
					sub->child = m;
				}
				if (!km) {
					cJSON_Delete(sub);
					sub = NULL;
				}
				cJSON_Delete(km);
			} else if (sub) {
				cJSON_Delete(sub);
				free(key);
				key = NULL;
				continue;
			}
		}
		free(key);
		key = NULL;
		if (push_owned(out, sub) < 0) {
			path_pop(path, old);
			goto cleanup;
		}
	}
	path_pop(path, old);
	pos = 0;
	cJSON_ArrayForEach(it, to) {
		const kent *e = natural[pos++];

		if (!e || e->item != it)
			same_order = 0;
	}
	if (!same_order) {
		if (!(ord = cJSON_CreateArray()))
			goto cleanup;
		cJSON_ArrayForEach(it, to)
			if (push_owned(ord, key_members(it, k)) < 0)
				goto cleanup;
	}
	*val = out;
	*order = ord;
	out = ord = NULL;
	rv = 0;
cleanup:
	free(key);
	free(natural);
	klist_free(&fl);
	klist_free(&tl);
	cJSON_Delete(out);
	cJSON_Delete(ord);
	return rv;
}

/* Adds to out, under name, the change of member from f (NULL: absent) to t
 * (not NULL) at path (already naming the member). Returns 0 or -1. */
static int diff_member(cJSON *out, const char *name, const cJSON *f, const cJSON *t,
		       kpath *path)
{
	const es_kpatch_key *k;

	if (cJSON_IsObject(t)) {
		cJSON *sub = diff_obj(cJSON_IsObject(f) ? f : NULL, t, path);

		if (!sub)
			return -1;
		if (cJSON_IsObject(f) && !sub->child) {
			cJSON_Delete(sub);
			return 0;
		}
		return add_owned(out, name, sub);
	}
	if (cJSON_IsArray(t) && (k = path_key(path)) != NULL) {
		cJSON *val = NULL, *order = NULL;
		char oname[300];

		if (list_diff(cJSON_IsArray(f) ? f : NULL, t, k, path, &val, &order) < 0)
			return -1;
		if (add_owned(out, name, val) < 0) {
			cJSON_Delete(order);
			return -1;
		}
		if (!order)
			return 0;
		snprintf(oname, sizeof(oname), ORDER_PREFIX "%s", name);
		return add_owned(out, oname, order);
	}
	return add_owned(out, name, cJSON_Duplicate(t, 1));
}

/* What diff_obj's walk carries: the change being built and the path. */
typedef struct {
	cJSON *out;
	kpath *path;
} dctx;

/* es_json_diff_members callback: one member's change into d->out. */
static int diff_one(const char *name, const cJSON *f, const cJSON *t, void *ctx)
{
	dctx *d = ctx;
	size_t old;
	int r;

	if (!t)
		return add_owned(d->out, name, cJSON_CreateNull());
	old = path_push(d->path, name);
	r = diff_member(d->out, name, f, t, d->path);
	path_pop(d->path, old);
	return r;
}

/* The change from the object from (NULL: absent) to the object to at path;
 * NULL when out of memory. */
static cJSON *diff_obj(const cJSON *from, const cJSON *to, kpath *path)
{
	dctx d = {cJSON_CreateObject(), path};

	if (d.out && es_json_diff_members(from, to, diff_one, &d) < 0) {
		cJSON_Delete(d.out);
		return NULL;
	}
	return d.out;
}

int es_kpatch_has_directive(const cJSON *v)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, v) {
		if ((m->string && m->string[0] == '$') || es_kpatch_has_directive(m))
			return 1;
	}
	return 0;
}

es_err es_kpatch_diff(const cJSON *from, const cJSON *to, cJSON **out)
{
	kpath path = {{0}, 0, 0};

	if (!out)
		return ES_ERR_INVAL;
	*out = NULL;
	if (!cJSON_IsObject(to) || es_kpatch_has_directive(to) || es_kpatch_has_directive(from))
		return ES_ERR_INVAL;
	*out = diff_obj(cJSON_IsObject(from) ? from : NULL, to, &path);
	return *out ? ES_OK : ES_ERR_NOMEM;
}

/* ---- apply ---------------------------------------------------------------- */

/* What apply's helpers share: the error of the first failure. */
typedef struct actx {
	kpath path;
	es_err rc;
	char *err;
	size_t errsz;
} actx;

static cJSON *apply_obj(const cJSON *t, const cJSON *p, actx *a);

__attribute__((format(printf, 2, 3)))
static void bad(actx *a, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	a->rc = ES_ERR_INVAL;
	snprintf(a->err, a->errsz, "%s: ", a->path.s[0] ? a->path.s : "body");
	n = strlen(a->err);
	va_start(ap, fmt);
	vsnprintf(a->err + n, a->errsz - n, fmt, ap);
	va_end(ap);
}

static cJSON *nomem(actx *a)
{
	if (a->rc == ES_OK) {
		a->rc = ES_ERR_NOMEM;
		if (a->err && a->errsz)
			snprintf(a->err, a->errsz, "out of memory");
	}
	return NULL;
}

/* A list being built: items owned, keys (NULL: an item without a key,
 * never matched). */
typedef struct wlist {
	cJSON **item;
	char **key;
	size_t n, cap;
} wlist;

static void wlist_free(wlist *w)
{
	for (size_t i = 0; i < w->n; i++) {
		cJSON_Delete(w->item[i]);
		free(w->key[i]);
	}
	free(w->item);
	free(w->key);
	memset(w, 0, sizeof(*w));
}

/* Appends item and key (both taken, freed on failure). Returns 0 or -1. */
static int wlist_push(wlist *w, cJSON *item, char *key)
{
	if (!item) {
		free(key);
		return -1;
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 8;
		cJSON **ni = realloc(w->item, cap * sizeof(*ni));
		char **nk;

		if (ni)
			w->item = ni;
		nk = ni ? realloc(w->key, cap * sizeof(*nk)) : NULL;
		if (!nk) {
			cJSON_Delete(item);
			free(key);
			return -1;
		}
		w->key = nk;
		w->cap = cap;
	}
	w->item[w->n] = item;
	w->key[w->n] = key;
	w->n++;
	return 0;
}

static size_t wlist_find(const wlist *w, const char *key)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->key[i] && strcmp(w->key[i], key) == 0)
			return i;
	return (size_t)-1;
}

/* The first element of patch is {"$patch": "replace"} alone. */
static int is_replace(const cJSON *patch)
{
	const cJSON *d = patch ? patch->child : NULL;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, "$patch");

	return cJSON_IsObject(d) && cJSON_IsString(v) &&
	       strcmp(v->valuestring, "replace") == 0 && d->child == v && !v->next;
}

/* The keyed list l (NULL: none) with the list patch p (NULL: none) and the
 * order (NULL: none) applied; NULL on failure (a->rc set). */
static cJSON *apply_list(const cJSON *l, const cJSON *p, const cJSON *order,
			 const es_kpatch_key *k, actx *a)
{
	wlist w = {0};
	cJSON *out = NULL;
	const cJSON *it;
	const char *missing;
	char *key = NULL, idx[32];
	size_t old, i;
	int r;

	if (p && !cJSON_IsArray(p)) {
		bad(a, "expected an array (a keyed list)");
		return NULL;
	}
	if (is_replace(p)) {
		/* The list becomes the other elements (an order may follow). */
		l = NULL;
		for (it = p->child->next; it; it = it->next) {
			if ((r = item_key(it, k, &key, &missing)) < 0)
				goto oom;
			if (r == 0 && wlist_find(&w, key) != (size_t)-1) {
				free(key);
				key = NULL;
			}
			if (wlist_push(&w, cJSON_Duplicate(it, 1), r ? NULL : key) < 0) {
				key = NULL;
				goto oom;
			}
			key = NULL;
		}
		p = NULL;
	}
	cJSON_ArrayForEach(it, l) {
		r = item_key(it, k, &key, &missing);
		if (r < 0)
			goto oom;
		if (r == 0 && wlist_find(&w, key) != (size_t)-1) {
			free(key);
			key = NULL; /* a second item of one key: never matched */
		}
		if (wlist_push(&w, cJSON_Duplicate(it, 1), key) < 0) {
			key = NULL;
			goto oom;
		}
		key = NULL;
	}
	i = 0;
	old = path_push(&a->path, NULL);
	cJSON_ArrayForEach(it, p) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(it, "$patch");
		size_t at;

		snprintf(idx, sizeof(idx), "element %zu: ", i++);
		r = item_key(it, k, &key, &missing);
		if (r < 0) {
			path_pop(&a->path, old);
			goto oom;
		}
		if (r) {
			path_pop(&a->path, old);
			a->rc = ES_ERR_INVAL;
			snprintf(a->err, a->errsz, "%s: %sexpected an object with the "
				 "merge key member \"%s\" (a string or number)",
				 a->path.s, idx, missing);
			goto fail;
		}
		at = wlist_find(&w, key);
		if (d) {
			if (!cJSON_IsString(d) || strcmp(d->valuestring, "delete") != 0) {
				path_pop(&a->path, old);
				a->rc = ES_ERR_INVAL;
				snprintf(a->err, a->errsz, "%s: %s$patch: expected \"delete\" "
					 "(\"replace\" only as the first element, alone)",
					 a->path.s, idx);
				goto fail;
			}
			if (at != (size_t)-1) {
				cJSON_Delete(w.item[at]);
				free(w.key[at]);
				memmove(w.item + at, w.item + at + 1,
					(w.n - at - 1) * sizeof(*w.item));
				memmove(w.key + at, w.key + at + 1,
					(w.n - at - 1) * sizeof(*w.key));
				w.n--;
			}
			free(key);
			key = NULL;
			continue;
		}
		{
			cJSON *v = apply_obj(at != (size_t)-1 ? w.item[at] : NULL, it, a);

			if (!v) {
				path_pop(&a->path, old);
				goto fail;
			}
			if (at != (size_t)-1) {
				cJSON_Delete(w.item[at]);
				w.item[at] = v;
				free(key);
			} else if (wlist_push(&w, v, key) < 0) {
				key = NULL;
				path_pop(&a->path, old);
				goto oom;
			}
			key = NULL;
		}
	}
	path_pop(&a->path, old);
	if (!(out = cJSON_CreateArray()))
		goto oom;
	if (order) {
		i = 0;
		cJSON_ArrayForEach(it, order) {
			size_t at;

			r = item_key(it, k, &key, &missing);
			if (r < 0)
				goto oom;
			if (r) {
				a->rc = ES_ERR_INVAL;
				snprintf(a->err, a->errsz, "%s: " ORDER_PREFIX " element %zu: "
					 "expected an object with the merge key member \"%s\"",
					 a->path.s, i, missing);
				goto fail;
			}
			i++;
			at = wlist_find(&w, key);
			free(key);
			key = NULL;
			if (at == (size_t)-1)
				continue;
			if (!cJSON_AddItemToArray(out, w.item[at]))
				goto oom;
			free(w.key[at]);
			memmove(w.item + at, w.item + at + 1, (w.n - at - 1) * sizeof(*w.item));
			memmove(w.key + at, w.key + at + 1, (w.n - at - 1) * sizeof(*w.key));
			w.n--;
		}
	}
	for (i = 0; i < w.n; i++) {
		if (!cJSON_AddItemToArray(out, w.item[i]))
			goto oom;
		w.item[i] = NULL;
	}
	wlist_free(&w);
	return out;
oom:
	nomem(a);
fail:
	free(key);
	wlist_free(&w);
	cJSON_Delete(out);
	return NULL;
}

/* The patch value pv of member name applied to tv (NULL: absent) at
 * a->path (naming the member); order is the member's $setElementOrder.
 * NULL on failure. */
static cJSON *apply_member(const cJSON *tv, const cJSON *pv, const cJSON *order,
			   actx *a)
{
	const es_kpatch_key *k = path_key(&a->path);
	cJSON *v;

	if (k && (cJSON_IsArray(pv) || (!pv && order))) {
		if (order && !cJSON_IsArray(order)) {
			bad(a, ORDER_PREFIX ": expected an array");
			return NULL;
		}
		return apply_list(cJSON_IsArray(tv) ? tv : NULL, pv, order, k, a);
	}
	if (cJSON_IsObject(pv))
		return apply_obj(cJSON_IsObject(tv) ? tv : NULL, pv, a);
	if (!(v = cJSON_Duplicate(pv ? pv : tv, 1)))
		return nomem(a);
	return v;
}

/* The object t (NULL: absent) with the object patch p applied; NULL on
 * failure (a->rc set). */
static cJSON *apply_obj(const cJSON *t, const cJSON *p, actx *a)
{
	cJSON *out = NULL;
	const cJSON *m;
	es_json_index pix = {0}, tix = {0};
	char oname[300];

	if (es_json_index_init(&pix, p) != ES_OK || es_json_index_init(&tix, t) != ES_OK)
		goto oom;
	if (!(out = cJSON_CreateObject()))
		goto oom;
	cJSON_ArrayForEach(m, t) {
		const cJSON *order;
		cJSON *v;
		size_t old;

		if (!m->string || es_json_index_find(&pix, m->string) != NULL)
			continue;
		snprintf(oname, sizeof(oname), ORDER_PREFIX "%s", m->string);
		order = es_json_index_find(&pix, oname);
		if (!order) {
			if (add_owned(out, m->string, cJSON_Duplicate(m, 1)) < 0)
				goto oom;
			continue;
		}
		old = path_push(&a->path, m->string);
		v = apply_member(m, NULL, order, a);
		path_pop(&a->path, old);
		if (!v)
			goto fail;
		if (add_owned(out, m->string, v) < 0)
			goto oom;
	}
	cJSON_ArrayForEach(m, p) {
		const cJSON *order = NULL;
		cJSON *v;
		size_t old;

		if (!m->string || es_json_index_find(&pix, m->string) != m)
			continue;
		if (m->string[0] == '$') {
			if (strncmp(m->string, ORDER_PREFIX, ORDER_PREFIX_LEN) != 0) {
				bad(a, "unknown directive \"%.64s\"", m->string);
				goto fail;
			}
			if (!cJSON_IsArray(m)) {
				bad(a, "\"%.64s\": expected an array", m->string);
				goto fail;
			}
			continue;
		}
		if (cJSON_IsNull(m))
			continue;
		if (strlen(m->string) < sizeof(oname) - ORDER_PREFIX_LEN) {
			snprintf(oname, sizeof(oname), ORDER_PREFIX "%s", m->string);
			order = es_json_index_find(&pix, oname);
		}
		old = path_push(&a->path, m->string);
		v = apply_member(es_json_index_find(&tix, m->string), m, order, a);
		path_pop(&a->path, old);
		if (!v)
			goto fail;
		if (add_owned(out, m->string, v) < 0)
			goto oom;
	}
	es_json_index_free(&pix);
	es_json_index_free(&tix);
	return out;
oom:
	nomem(a);
fail:
	es_json_index_free(&pix);
	es_json_index_free(&tix);
	cJSON_Delete(out);
	return NULL;
}

es_err es_kpatch_apply(cJSON **target, const cJSON *patch, char *err, size_t errsz)
{
	char dummy[1];
	actx a;
	cJSON *res;

	memset(&a, 0, sizeof(a));
	a.err = err && errsz ? err : dummy;
	a.errsz = err && errsz ? errsz : sizeof(dummy);
	a.err[0] = '\0';
	if (!target)
		return ES_ERR_INVAL;
	if (!cJSON_IsObject(patch)) {
		snprintf(a.err, a.errsz, "body: expected an object (a keyed change)");
		return ES_ERR_INVAL;
	}
	res = apply_obj(cJSON_IsObject(*target) ? *target : NULL, patch, &a);
	if (!res)
		return a.rc != ES_OK ? a.rc : ES_ERR_NOMEM;
	cJSON_Delete(*target);
	*target = res;
	return ES_OK;
}
