/*
 * yaml.c - YAML/JSON manifests to cJSON and back (see yaml.h).
 */
#include "yaml.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "es_json.h"

enum scalar_kind {
	SK_STR = 0,
	SK_NULL,
	SK_TRUE,
	SK_FALSE,
	SK_NUM,
	SK_RANGE, /* looks like a number but JSON cannot carry it exactly */
};

static int all_in(const char *s, size_t len, const char *set)
{
	size_t i;

	if (!len)
		return 0;
	for (i = 0; i < len; i++)
		if (!s[i] || !strchr(set, s[i]))
			return 0;
	return 1;
}

static int is_one_of(const char *s, size_t len, const char *const *words)
{
	for (; *words; words++)
		if (strlen(*words) == len && memcmp(*words, s, len) == 0)
			return 1;
	return 0;
}

/* Matches [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE][-+]?[0-9]+ )? */
static int is_core_float(const char *s, size_t len)
{
	size_t i = 0, digits = 0;

	if (i < len && (s[i] == '-' || s[i] == '+'))
		i++;
	while (i < len && isdigit((unsigned char)s[i])) {
		i++;
		digits++;
	}
	if (i < len && s[i] == '.') {
		size_t frac = 0;
		i++;
		while (i < len && isdigit((unsigned char)s[i])) {
			i++;
			frac++;
		}
		if (!digits && !frac)
			return 0;
		digits += frac;
	}
	if (!digits)
		return 0;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t ed = 0;
		i++;
		if (i < len && (s[i] == '-' || s[i] == '+'))
			i++;
		while (i < len && isdigit((unsigned char)s[i])) {
			i++;
			ed++;
		}
		if (!ed)
			return 0;
	}
	return i == len;
}

/* Resolves a plain scalar with the YAML 1.2 core schema; *num gets numbers. */
static enum scalar_kind resolve_plain(const char *s, size_t len, double *num)
{
	static const char *const nulls[] = { "null", "Null", "NULL", "~", NULL };
	static const char *const trues[] = { "true", "True", "TRUE", NULL };
	static const char *const falses[] = { "false", "False", "FALSE", NULL };
	char tmp[64];
	size_t off = 0;

	if (len == 0 || is_one_of(s, len, nulls))
		return SK_NULL;
	if (is_one_of(s, len, trues))
		return SK_TRUE;
	if (is_one_of(s, len, falses))
		return SK_FALSE;
	if (len > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
		const char *set = s[1] == 'o' ? "01234567" : "0123456789abcdefABCDEF";
		unsigned long long v;
		if (!all_in(s + 2, len - 2, set))
			return SK_STR;
		if (len >= sizeof(tmp))
			return SK_RANGE;
		memcpy(tmp, s + 2, len - 2);
		tmp[len - 2] = '\0';
		errno = 0;
		v = strtoull(tmp, NULL, s[1] == 'o' ? 8 : 16);
		if (errno || v > (unsigned long long)ES_JSON_MAX_INT)
			return SK_RANGE;
		*num = (double)v;
		return SK_NUM;
	}
	if (s[0] == '-' || s[0] == '+')
		off = 1;
	if (all_in(s + off, len - off, "0123456789")) {
		long long v;
		if (len >= sizeof(tmp))
			return SK_RANGE;
		memcpy(tmp, s, len);
		tmp[len] = '\0';
		errno = 0;
		v = strtoll(tmp, NULL, 10);
		if (errno || v > ES_JSON_MAX_INT || v < -ES_JSON_MAX_INT)
			return SK_RANGE;
		*num = (double)v;
		return SK_NUM;
	}
	if (is_core_float(s, len)) {
		char *buf = malloc(len + 1);
		double d;
		if (!buf)
			return SK_RANGE;
		memcpy(buf, s, len);
		buf[len] = '\0';
		d = strtod(buf, NULL);
		free(buf);
		if (!isfinite(d))
			return SK_RANGE;
		*num = d;
		return SK_NUM;
	}
	return SK_STR;
}

typedef struct loader {
	yaml_document_t *doc;
	const char *what;
	size_t nodes;
	char *err;
	size_t errsz;
} loader;

static es_err node_err(loader *l, es_err code, const yaml_node_t *n, const char *msg)
{
	return es_errf(code, l->err, l->errsz, "%s:%zu:%zu: %s", l->what,
		       (size_t)n->start_mark.line + 1, (size_t)n->start_mark.column + 1, msg);
}

static es_err to_json(loader *l, yaml_node_t *n, int depth, cJSON **out)
{
	cJSON *v = NULL;
	es_err rc = ES_OK;

	*out = NULL;
	if (++l->nodes > ES_YAML_MAX_NODES)
		return node_err(l, ES_ERR_TOOBIG, n, "document expands to too many values (aliases?)");
	if (depth > ES_YAML_MAX_DEPTH)
		return node_err(l, ES_ERR_PARSE, n, "nesting deeper than 64");
	switch (n->type) {
	case YAML_SCALAR_NODE: {
		const char *s = (const char *)n->data.scalar.value;
		size_t len = n->data.scalar.length;
		double d = 0;
		enum scalar_kind k = SK_STR;
		if (memchr(s, '\0', len))
			return node_err(l, ES_ERR_PARSE, n, "NUL character in a scalar");
		if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			k = resolve_plain(s, len, &d);
		switch (k) {
		case SK_NULL: v = cJSON_CreateNull(); break;
		case SK_TRUE: v = cJSON_CreateTrue(); break;
		case SK_FALSE: v = cJSON_CreateFalse(); break;
		case SK_NUM: v = cJSON_CreateNumber(d); break;
		case SK_RANGE:
			return node_err(l, ES_ERR_PARSE, n,
					"number out of range (JSON integers are within +-2^53-1; quote it for a string)");
		case SK_STR: {
			char *tmp = malloc(len + 1);
			if (!tmp)
				return es_errf(ES_ERR_NOMEM, l->err, l->errsz, "out of memory");
			memcpy(tmp, s, len);
			tmp[len] = '\0';
			v = cJSON_CreateString(tmp);
			free(tmp);
			break;
		}
		}
		break;
	}
	case YAML_SEQUENCE_NODE: {
		yaml_node_item_t *it;
		v = cJSON_CreateArray();
		if (!v)
			break;
		for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
			cJSON *c = NULL;
			rc = to_json(l, yaml_document_get_node(l->doc, *it), depth + 1, &c);
			if (rc != ES_OK)
				goto fail;
			cJSON_AddItemToArray(v, c);
		}
		break;
	}
	case YAML_MAPPING_NODE: {
		yaml_node_pair_t *pr;
		v = cJSON_CreateObject();
		if (!v)
			break;
		for (pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
			yaml_node_t *kn = yaml_document_get_node(l->doc, pr->key);
			cJSON *c = NULL;
			char *key;
			if (kn->type != YAML_SCALAR_NODE) {
				rc = node_err(l, ES_ERR_PARSE, kn, "mapping key is not a scalar");
				goto fail;
			}
			key = strndup((const char *)kn->data.scalar.value, kn->data.scalar.length);
			if (!key) {
				rc = es_errf(ES_ERR_NOMEM, l->err, l->errsz, "out of memory");
				goto fail;
			}
			if (cJSON_GetObjectItemCaseSensitive(v, key)) {
				char msg[300];
				snprintf(msg, sizeof(msg), "duplicate key \"%.200s\"", key);
				free(key);
				rc = node_err(l, ES_ERR_PARSE, kn, msg);
				goto fail;
			}
			rc = to_json(l, yaml_document_get_node(l->doc, pr->value), depth + 1, &c);
			if (rc != ES_OK) {
				free(key);
				goto fail;
			}
			if (!cJSON_AddItemToObject(v, key, c)) {
				cJSON_Delete(c);
				free(key);
				rc = es_errf(ES_ERR_NOMEM, l->err, l->errsz, "out of memory");
				goto fail;
			}
			free(key);
		}
		break;
	}
	default:
		return node_err(l, ES_ERR_PARSE, n, "empty node");
	}
	if (!v)
		return es_errf(ES_ERR_NOMEM, l->err, l->errsz, "out of memory");
	*out = v;
	return ES_OK;
fail:
	cJSON_Delete(v);
	return rc;
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

static es_err load_yaml(const char *text, size_t len, const char *what,
			cJSON *out, char *err, size_t errsz)
{
	yaml_parser_t p;
	es_err rc = ES_OK;
	int docno = 0;

	if (!yaml_parser_initialize(&p))
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	for (;;) {
		yaml_document_t doc;
		yaml_node_t *root;
		loader l = { &doc, what, 0, err, errsz };
		cJSON *obj = NULL;

		if (!yaml_parser_load(&p, &doc)) {
			if (p.error == YAML_MEMORY_ERROR)
				rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
			else if (p.error == YAML_READER_ERROR)
				rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: byte %zu: %s", what,
					     p.problem_offset, p.problem ? p.problem : "unreadable");
			else
				rc = es_errf(ES_ERR_PARSE, err, errsz, "%s:%zu:%zu: %s%s%s", what,
					     (size_t)p.problem_mark.line + 1,
					     (size_t)p.problem_mark.column + 1,
					     p.problem ? p.problem : "syntax error",
					     p.context ? " " : "", p.context ? p.context : "");
			break;
		}
		root = yaml_document_get_root_node(&doc);
		if (!root) {
			yaml_document_delete(&doc);
			break;
		}
		docno++;
		rc = to_json(&l, root, 1, &obj);
		yaml_document_delete(&doc);
		if (rc == ES_OK)
			rc = add_doc(out, obj, what, docno, err, errsz);
		if (rc != ES_OK)
			break;
	}
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

/* ---- emitter ---- */

typedef struct obuf {
	char *p;
	size_t len, cap;
	int nomem;
} obuf;

static int write_cb(void *data, unsigned char *buf, size_t size)
{
	obuf *b = data;

	if (b->len + size + 1 > b->cap) {
		size_t ncap = b->cap ? b->cap : 1024;
		char *np;
		while (ncap < b->len + size + 1)
			ncap *= 2;
		np = realloc(b->p, ncap);
		if (!np) {
			b->nomem = 1;
			return 0;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, buf, size);
	b->len += size;
	b->p[b->len] = '\0';
	return 1;
}

/* Style for a string: plain when it reads back as the same string. */
static yaml_scalar_style_t str_style(const char *s)
{
	static const char *const yaml11[] = { "y", "Y", "yes", "Yes", "YES", "n", "N",
					      "no", "No", "NO", "on", "On", "ON", "off",
					      "Off", "OFF", ".inf", ".Inf", ".INF", "-.inf",
					      ".nan", ".NaN", ".NAN", "=", "<<", NULL };
	size_t len = strlen(s);
	double d;
	const unsigned char *u;

	for (u = (const unsigned char *)s; *u; u++)
		if (*u < 0x20 || *u == 0x7f)
			return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	if (resolve_plain(s, len, &d) != SK_STR || is_one_of(s, len, yaml11))
		return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	return YAML_ANY_SCALAR_STYLE;
}

static int emit_scalar(yaml_emitter_t *em, const char *s, yaml_scalar_style_t st)
{
	yaml_event_t ev;

	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s,
					  (int)strlen(s), 1, 1, st))
		return 0;
	return yaml_emitter_emit(em, &ev);
}

static int format_number(double d, char *buf, size_t bufsz)
{
	int prec;

	if (!isfinite(d))
		return 0;
	if (d == trunc(d) && fabs(d) <= (double)ES_JSON_MAX_INT) {
		snprintf(buf, bufsz, "%.0f", d);
		return 1;
	}
	for (prec = 15; prec <= 17; prec++) {
		snprintf(buf, bufsz, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	if (!strpbrk(buf, ".eE"))
		strncat(buf, ".0", bufsz - strlen(buf) - 1);
	return 1;
}

static int emit_value(yaml_emitter_t *em, const cJSON *v, char *err, size_t errsz)
{
	yaml_event_t ev;
	const cJSON *c;
	char num[64];

	if (cJSON_IsObject(v)) {
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) ||
		    !yaml_emitter_emit(em, &ev))
			return 0;
		for (c = v->child; c; c = c->next) {
			if (!emit_scalar(em, c->string ? c->string : "", str_style(c->string ? c->string : "")) ||
			    !emit_value(em, c, err, errsz))
				return 0;
		}
		return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev);
	}
	if (cJSON_IsArray(v)) {
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE) ||
		    !yaml_emitter_emit(em, &ev))
			return 0;
		for (c = v->child; c; c = c->next)
			if (!emit_value(em, c, err, errsz))
				return 0;
		return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev);
	}
	if (cJSON_IsString(v))
		return emit_scalar(em, v->valuestring, str_style(v->valuestring));
	if (cJSON_IsNumber(v)) {
		if (!format_number(v->valuedouble, num, sizeof(num))) {
			es_errf(ES_ERR_INVAL, err, errsz, "number is not finite");
			return 0;
		}
		return emit_scalar(em, num, YAML_PLAIN_SCALAR_STYLE);
	}
	if (cJSON_IsTrue(v))
		return emit_scalar(em, "true", YAML_PLAIN_SCALAR_STYLE);
	if (cJSON_IsFalse(v))
		return emit_scalar(em, "false", YAML_PLAIN_SCALAR_STYLE);
	return emit_scalar(em, "null", YAML_PLAIN_SCALAR_STYLE);
}

char *es_yaml_emit(const cJSON *v, char *err, size_t errsz)
{
	yaml_emitter_t em;
	yaml_event_t ev;
	obuf b = { 0 };
	int ok;

	if (err && errsz)
		err[0] = '\0';
	if (!yaml_emitter_initialize(&em)) {
		es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		return NULL;
	}
	yaml_emitter_set_output(&em, write_cb, &b);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_indent(&em, 2);
	ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
	     yaml_emitter_emit(&em, &ev) &&
	     yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
	     yaml_emitter_emit(&em, &ev) &&
	     emit_value(&em, v, err, errsz) &&
	     yaml_document_end_event_initialize(&ev, 1) &&
	     yaml_emitter_emit(&em, &ev) &&
	     yaml_stream_end_event_initialize(&ev) &&
	     yaml_emitter_emit(&em, &ev) &&
	     yaml_emitter_flush(&em);
	if (!ok && err && errsz && !err[0])
		es_errf(b.nomem || em.error == YAML_MEMORY_ERROR ? ES_ERR_NOMEM : ES_ERR_INVAL,
			err, errsz, "YAML output failed: %s",
			em.problem ? em.problem : "out of memory");
	yaml_emitter_delete(&em);
	if (!ok) {
		free(b.p);
		return NULL;
	}
	if (!b.p)
		b.p = strdup("");
	return b.p;
}
