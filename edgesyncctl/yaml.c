/*
 * yaml.c - YAML/JSON manifests to cJSON (see yaml.h, es_yaml_load).
 */
#include "yaml.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "es_json.h"
#include "yaml_int.h"

/*
 * The tree is built from libyaml's event stream (yaml_parser_parse), not
 * from yaml_parser_load's node graph: nesting is refused at the first event
 * deeper than ES_YAML_MAX_DEPTH, before the rest of the input is scanned,
 * so a hostile document costs time in proportion to what was read.
 */

typedef struct anchor {
	struct anchor *next;
	char *name;
	const cJSON *node; /* a container in the document's tree (borrowed) */
	char *raw;         /* a scalar's text; aliases re-resolve it */
	size_t raw_len;
	int plain;         /* the scalar was plain (resolved by the core schema) */
	size_t count;      /* values in the node, aliases expanded */
	int height;        /* levels in the node: 1 for a scalar */
	int open;          /* 1 until the node's end event */
} anchor;

typedef struct frame {
	cJSON *v;     /* open sequence or mapping (owned by the tree) */
	char *key;    /* mapping: key whose value has not come yet */
	anchor *anc;  /* anchor of v, or NULL */
	size_t first; /* builder.nodes before v */
	int height;   /* tallest child so far */
} frame;

typedef struct builder {
	const char *what;
	char *err;
	size_t errsz;
	cJSON *root; /* the document being built */
	frame stack[ES_YAML_MAX_DEPTH];
	int depth;    /* open containers */
	size_t nodes; /* values of the manifest so far */
	anchor *anchors;
} builder;

static es_err at(builder *b, es_err code, yaml_mark_t m, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static es_err at(builder *b, es_err code, yaml_mark_t m, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return es_errf(code, b->err, b->errsz, "%s:%zu:%zu: %s", b->what,
		       (size_t)m.line + 1, (size_t)m.column + 1, msg);
}

static es_err nomem(builder *b)
{
	return es_errf(ES_ERR_NOMEM, b->err, b->errsz, "out of memory");
}

/* Frees the document being built and its anchors. */
static void builder_reset(builder *b)
{
	anchor *a, *next;

	for (a = b->anchors; a; a = next) {
		next = a->next;
		free(a->name);
		free(a->raw);
		free(a);
	}
	b->anchors = NULL;
	while (b->depth > 0) {
		b->depth--;
		free(b->stack[b->depth].key);
		b->stack[b->depth].key = NULL;
	}
	cJSON_Delete(b->root);
	b->root = NULL;
}

static anchor *find_anchor(builder *b, const char *name)
{
	anchor *a;

	for (a = b->anchors; a; a = a->next)
		if (strcmp(a->name, name) == 0)
			return a;
	return NULL;
}

/* Registers anchor name (NULL: none) of a node starting at m. */
static es_err new_anchor(builder *b, const yaml_char_t *name, yaml_mark_t m,
			 anchor **out)
{
	anchor *a;

	*out = NULL;
	if (!name)
		return ES_OK;
	if (find_anchor(b, (const char *)name))
		return at(b, ES_ERR_PARSE, m, "duplicate anchor &%.200s", (const char *)name);
	a = calloc(1, sizeof(*a));
	if (!a || !(a->name = strdup((const char *)name))) {
		free(a);
		return nomem(b);
	}
	a->open = 1;
	a->next = b->anchors;
	b->anchors = a;
	*out = a;
	return ES_OK;
}

/* Admits a node of `height` levels and `count` values at the next level. */
static es_err room(builder *b, yaml_mark_t m, int height, size_t count)
{
	if (b->depth + height > ES_YAML_MAX_DEPTH)
		return at(b, ES_ERR_PARSE, m, "nesting deeper than %d levels",
			  ES_YAML_MAX_DEPTH);
	if (count > ES_YAML_MAX_NODES - b->nodes)
		return at(b, ES_ERR_TOOBIG, m, "document expands to more than %d values (aliases?)",
			  ES_YAML_MAX_NODES);
	b->nodes += count;
	return ES_OK;
}

/* The open mapping when it waits for a key, else NULL. */
static frame *wants_key(builder *b)
{
	frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;

	return f && cJSON_IsObject(f->v) && !f->key ? f : NULL;
}

static es_err take_key(builder *b, frame *f, const char *s, size_t len, yaml_mark_t m)
{
	char *key;

	if (memchr(s, '\0', len))
		return at(b, ES_ERR_PARSE, m, "NUL character in a mapping key");
	key = strndup(s, len);
	if (!key)
		return nomem(b);
	if (cJSON_GetObjectItemCaseSensitive(f->v, key)) {
		es_err rc = at(b, ES_ERR_PARSE, m, "duplicate key \"%.200s\"", key);
		free(key);
		return rc;
	}
	f->key = key;
	return ES_OK;
}

/* Puts v (taken) into the open container, or makes it the root. */
static es_err attach(builder *b, cJSON *v, int height)
{
	frame *f;

	if (b->depth == 0) {
		b->root = v;
		return ES_OK;
	}
	f = &b->stack[b->depth - 1];
	if (cJSON_IsArray(f->v)) {
		if (!cJSON_AddItemToArray(f->v, v)) {
			cJSON_Delete(v);
			return nomem(b);
		}
	} else {
		if (!cJSON_AddItemToObject(f->v, f->key, v)) {
			cJSON_Delete(v);
			return nomem(b);
		}
		free(f->key);
		f->key = NULL;
	}
	if (height > f->height)
		f->height = height;
	return ES_OK;
}

static es_err make_scalar(builder *b, const char *s, size_t len, int plain,
			  yaml_mark_t m, cJSON **out)
{
	enum es_yaml_scalar_kind k = SK_STR;
	double d = 0;
	char *tmp;

	*out = NULL;
	if (memchr(s, '\0', len))
		return at(b, ES_ERR_PARSE, m, "NUL character in a scalar");
	if (plain)
		k = es_yaml_resolve_plain(s, len, &d);
	switch (k) {
	case SK_NULL: *out = cJSON_CreateNull(); break;
	case SK_TRUE: *out = cJSON_CreateTrue(); break;
	case SK_FALSE: *out = cJSON_CreateFalse(); break;
	case SK_NUM: *out = cJSON_CreateNumber(d); break;
	case SK_RANGE:
		return at(b, ES_ERR_PARSE, m,
			  "number out of range (JSON integers are within +-2^53-1; quote it for a string)");
	case SK_STR:
		tmp = strndup(s, len);
		if (tmp)
			*out = cJSON_CreateString(tmp);
		free(tmp);
		break;
	}
	return *out ? ES_OK : nomem(b);
}

static es_err on_scalar(builder *b, const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	frame *kf = wants_key(b);
	anchor *a = NULL;
	cJSON *v = NULL;
	es_err rc;

	rc = new_anchor(b, ev->data.scalar.anchor, ev->start_mark, &a);
	if (rc != ES_OK)
		return rc;
	if (a) {
		a->raw = malloc(len + 1);
		if (!a->raw)
			return nomem(b);
		memcpy(a->raw, s, len);
		a->raw[len] = '\0';
		a->raw_len = len;
		a->plain = plain;
		a->count = 1;
		a->height = 1;
		a->open = 0;
	}
	if (kf)
		return take_key(b, kf, s, len, ev->start_mark);
	rc = room(b, ev->start_mark, 1, 1);
	if (rc == ES_OK)
		rc = make_scalar(b, s, len, plain, ev->start_mark, &v);
	return rc == ES_OK ? attach(b, v, 1) : rc;
}

static es_err on_alias(builder *b, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	anchor *a = find_anchor(b, name);
	frame *kf = wants_key(b);
	cJSON *v = NULL;
	es_err rc;

	if (!a)
		return at(b, ES_ERR_PARSE, ev->start_mark, "undefined alias *%.200s", name);
	if (a->open)
		return at(b, ES_ERR_PARSE, ev->start_mark,
			  "alias *%.200s refers to a node that contains it", name);
	if (kf) {
		if (!a->raw)
			return at(b, ES_ERR_PARSE, ev->start_mark, "mapping key is not a scalar");
		return take_key(b, kf, a->raw, a->raw_len, ev->start_mark);
	}
	rc = room(b, ev->start_mark, a->height, a->count);
	if (rc != ES_OK)
		return rc;
	if (a->raw) {
		rc = make_scalar(b, a->raw, a->raw_len, a->plain, ev->start_mark, &v);
		if (rc != ES_OK)
			return rc;
	} else if (!(v = cJSON_Duplicate(a->node, 1))) {
		return nomem(b);
	}
	return attach(b, v, a->height);
}

static es_err on_start(builder *b, const yaml_event_t *ev, int mapping)
{
	const yaml_char_t *name = mapping ? ev->data.mapping_start.anchor
					  : ev->data.sequence_start.anchor;
	anchor *a = NULL;
	cJSON *v;
	frame *f;
	es_err rc;

	if (wants_key(b))
		return at(b, ES_ERR_PARSE, ev->start_mark, "mapping key is not a scalar");
	rc = room(b, ev->start_mark, 1, 1);
	if (rc == ES_OK)
		rc = new_anchor(b, name, ev->start_mark, &a);
	if (rc != ES_OK)
		return rc;
	v = mapping ? cJSON_CreateObject() : cJSON_CreateArray();
	if (!v)
		return nomem(b);
	rc = attach(b, v, 1);
	if (rc != ES_OK)
		return rc;
	f = &b->stack[b->depth++];
	memset(f, 0, sizeof(*f));
	f->v = v;
	f->anc = a;
	f->first = b->nodes - 1;
	if (a)
		a->node = v;
	return ES_OK;
}

static void on_end(builder *b)
{
	frame *f;
	int h;

	if (b->depth == 0)
		return;
	f = &b->stack[--b->depth];
	h = f->height + 1;
	if (f->anc) {
		f->anc->open = 0;
		f->anc->height = h;
		f->anc->count = b->nodes - f->first;
	}
	free(f->key);
	f->key = NULL;
	if (b->depth && h > b->stack[b->depth - 1].height)
		b->stack[b->depth - 1].height = h;
}

/* Moves obj (or its items when it is a List / a JSON array) into out. */
static es_err add_doc(cJSON *out, cJSON *obj, const char *what, int docno,
		      char *err, size_t errsz)
{
	cJSON *items = NULL, *it;
	const cJSON *kind;

	if (cJSON_IsNull(obj)) {
		cJSON_Delete(obj);
		return ES_OK;
	}
	if (cJSON_IsArray(obj)) {
		items = obj;
	} else if (cJSON_IsObject(obj)) {
		kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
		if (cJSON_IsString(kind) && strcmp(kind->valuestring, "List") == 0) {
			items = cJSON_GetObjectItemCaseSensitive(obj, "items");
			if (items && !cJSON_IsArray(items) && !cJSON_IsNull(items)) {
				cJSON_Delete(obj);
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "%s: document %d: List.items must be a sequence", what, docno);
			}
			if (!items) {
				cJSON_Delete(obj);
				return ES_OK;
			}
		} else {
			cJSON_AddItemToArray(out, obj);
			return ES_OK;
		}
	} else {
		cJSON_Delete(obj);
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "%s: document %d is not a mapping (an object with kind, metadata, spec)",
			       what, docno);
	}
	while ((it = items->child)) {
		cJSON_DetachItemViaPointer(items, it);
		if (!cJSON_IsObject(it)) {
			cJSON_Delete(it);
			cJSON_Delete(obj);
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "%s: document %d: a list item is not a mapping", what, docno);
		}
		cJSON_AddItemToArray(out, it);
	}
	cJSON_Delete(obj);
	return ES_OK;
}

static es_err parse_failed(const yaml_parser_t *p, const char *what, char *err,
			   size_t errsz)
{
	if (p->error == YAML_MEMORY_ERROR)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	if (p->error == YAML_READER_ERROR)
		return es_errf(ES_ERR_PARSE, err, errsz, "%s: byte %zu: %s", what,
			       p->problem_offset, p->problem ? p->problem : "unreadable");
	return es_errf(ES_ERR_PARSE, err, errsz, "%s:%zu:%zu: %s%s%s", what,
		       (size_t)p->problem_mark.line + 1, (size_t)p->problem_mark.column + 1,
		       p->problem ? p->problem : "syntax error",
		       p->context ? " " : "", p->context ? p->context : "");
}

static es_err load_yaml(const char *text, size_t len, const char *what,
			cJSON *out, char *err, size_t errsz)
{
	yaml_parser_t p;
	builder b;
	es_err rc = ES_OK;
	int docno = 0, done = 0;

	memset(&b, 0, sizeof(b));
	b.what = what;
	b.err = err;
	b.errsz = errsz;
	if (!yaml_parser_initialize(&p))
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (rc == ES_OK && !done) {
		yaml_event_t ev;

		if (!yaml_parser_parse(&p, &ev)) {
			rc = parse_failed(&p, what, err, errsz);
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			docno++;
			break;
		case YAML_DOCUMENT_END_EVENT:
			if (b.root)
				rc = add_doc(out, b.root, what, docno, err, errsz);
			b.root = NULL;
			builder_reset(&b);
			break;
		case YAML_SCALAR_EVENT:
			rc = on_scalar(&b, &ev);
			break;
		case YAML_ALIAS_EVENT:
			rc = on_alias(&b, &ev);
			break;
		case YAML_SEQUENCE_START_EVENT:
			rc = on_start(&b, &ev, 0);
			break;
		case YAML_MAPPING_START_EVENT:
			rc = on_start(&b, &ev, 1);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			on_end(&b);
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	builder_reset(&b);
	yaml_parser_delete(&p);
	return rc;
}

es_err es_yaml_load(const char *text, size_t len, const char *what,
		    cJSON **out, char *err, size_t errsz)
{
	cJSON *arr = NULL, *obj = NULL;
	size_t i = 0;
	es_err rc;

	*out = NULL;
	if (!what)
		what = "input";
	if (len > ES_YAML_MAX_INPUT)
		return es_errf(ES_ERR_TOOBIG, err, errsz, "%s: larger than %u bytes", what,
			       ES_YAML_MAX_INPUT);
	arr = cJSON_CreateArray();
	if (!arr)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	while (i < len && isspace((unsigned char)text[i]))
		i++;
	if (i < len && (text[i] == '{' || text[i] == '[')) {
		char jerr[256] = "";
		rc = es_json_parse(text, len, ES_JSON_MAX_DEPTH, &obj, jerr, sizeof(jerr));
		if (rc != ES_OK) {
			es_errf(rc, err, errsz, "%s: %s", what, jerr);
			goto cleanup;
		}
		rc = add_doc(arr, obj, what, 1, err, errsz);
	} else {
		rc = load_yaml(text, len, what, arr, err, errsz);
	}
cleanup:
	if (rc != ES_OK) {
		cJSON_Delete(arr);
		return rc;
	}
	*out = arr;
	return ES_OK;
}

