/*
 * es_json.c - strict JSON parsing (RFC 8259 with edgesync's limits from
 * PROTOCOL.md, "Limits") and typed member access.
 *
 * A pre-scan refuses what cJSON would accept or mishandle (raw NUL, \u0000,
 * invalid UTF-8, deep nesting, numbers outside RFC 8259's grammar) before
 * cJSON sees the text, so cJSON never recurses deeper than max_depth + 1.
 *
 * es_json_print has its own writer: cJSON 1.7.15 prints a double with 15
 * significant digits whenever that reads back within a relative epsilon, so
 * integers above about 10^15 (sequence numbers, resource versions) would
 * lose their last digits.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "es_buf.h"
#include "es_json.h"

/* Length of the well-formed UTF-8 sequence at p (RFC 3629 section 4: no
 * overlong forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_seq_len(const unsigned char *p, size_t avail)
{
	unsigned char c = p[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (avail < n)
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* Length of the RFC 8259 section 6 number at s (s[0] is '-' or a digit), or
 * 0 when the run of number characters there is not one (cJSON would accept
 * "01", "1." and "-.5"). */
static size_t number_len(const unsigned char *s, size_t avail)
{
	size_t i = 0, run = 0;

	while (run < avail && (is_digit(s[run]) || s[run] == '-' || s[run] == '+' ||
			       s[run] == '.' || s[run] == 'e' || s[run] == 'E'))
		run++;
	if (s[i] == '-')
		i++;
	if (i < run && s[i] == '0') {
		i++;
	} else if (i < run && is_digit(s[i])) {
		while (i < run && is_digit(s[i]))
			i++;
	} else {
		return 0;
	}
	if (i < run && s[i] == '.') {
		if (++i >= run || !is_digit(s[i]))
			return 0;
		while (i < run && is_digit(s[i]))
			i++;
	}
	if (i < run && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < run && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= run || !is_digit(s[i]))
			return 0;
		while (i < run && is_digit(s[i]))
			i++;
	}
	return i == run ? run : 0;
}

/* Whether the well-formed number of n bytes at s is one every JSON reader
 * in the fleet reads the same way: finite, and when written as an integer
 * (no fraction, no exponent) at most 2^53-1 in magnitude (RFC 7493 section
 * 2.2). Returns 1 when it is, 0 when not, -1 on allocation failure. */
static int number_in_range(const unsigned char *s, size_t n)
{
	char small[64], *buf = small;
	int integer = 1, ok;
	double d;

	for (size_t i = 0; i < n; i++)
		if (s[i] == '.' || s[i] == 'e' || s[i] == 'E')
			integer = 0;
	if (integer && n - (s[0] == '-') > 16)
		return 0;
	if (n >= sizeof(small)) {
		buf = malloc(n + 1);
		if (buf == NULL)
			return -1;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	d = strtod(buf, NULL);
	ok = isfinite(d) && (!integer || fabs(d) <= (double)ES_JSON_MAX_INT);
	if (buf != small)
		free(buf);
	return ok;
}

static es_err prescan(const char *text, size_t len, int max_depth, char *err,
		      size_t errsz)
{
	const unsigned char *s = (const unsigned char *)text;
	int depth = 0, in_str = 0;
	size_t i = 0;

	if (len >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
		return es_errf(ES_ERR_PARSE, err, errsz,
			       "byte-order mark at offset 0 (RFC 8259 section 8.1 forbids one)");
	while (i < len) {
		unsigned char c = s[i];
		size_t n;

		if (c == 0)
			return es_errf(ES_ERR_PARSE, err, errsz,
				       "NUL byte at offset %zu", i);
		/* RFC 8259: control characters must be escaped in strings, and
		 * outside strings only space, tab, LF and CR are white space
		 * (cJSON would skip any byte below 0x20). */
		if (c < 0x20 && (in_str || (c != '\t' && c != '\n' && c != '\r')))
			return es_errf(ES_ERR_PARSE, err, errsz,
				       "raw control character 0x%02x at offset %zu%s", c, i,
				       in_str ? " (escape it in a string)" : "");
		if (c >= 0x80) {
			n = utf8_seq_len(s + i, len - i);
			if (n == 0)
				return es_errf(ES_ERR_PARSE, err, errsz,
					       "invalid UTF-8 at offset %zu", i);
			i += n;
			continue;
		}
		if (in_str) {
			if (c == '"') {
				in_str = 0;
			} else if (c == '\\' && i + 1 < len) {
				if (s[i + 1] == 'u' && i + 6 <= len &&
				    memcmp(s + i + 2, "0000", 4) == 0)
					return es_errf(ES_ERR_PARSE, err, errsz,
						       "escaped NUL (\\u0000) at offset %zu", i);
				/* Skip the escaped character (never a NUL or
				 * non-ASCII byte in valid JSON; the checks above
				 * still see it if it is). */
				if (s[i + 1] != 0 && s[i + 1] < 0x80)
					i++;
			}
		} else if (c == '"') {
			in_str = 1;
		} else if (c == '-' || is_digit(c)) {
			n = number_len(s + i, len - i);
			if (n == 0)
				return es_errf(ES_ERR_PARSE, err, errsz,
					       "invalid number at offset %zu", i);
			switch (number_in_range(s + i, n)) {
			case 0:
				return es_errf(ES_ERR_PARSE, err, errsz,
					       "number at offset %zu is out of range "
					       "(not finite, or an integer past 2^53-1)", i);
			case -1:
				return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
			default:
				break;
			}
			i += n;
			continue;
		} else if (c == '[' || c == '{') {
			if (++depth > max_depth)
				return es_errf(ES_ERR_PARSE, err, errsz,
					       "nesting deeper than %d at offset %zu",
					       max_depth, i);
		} else if (c == ']' || c == '}') {
			if (depth > 0)
				depth--;
		}
		i++;
	}
	return ES_OK;
}

static int cmp_entries(const void *a, const void *b)
{
	const es_json_index_entry *x = a, *y = b;
	int c = strcmp(x->item->string, y->item->string);

	if (c != 0)
		return c;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

es_err es_json_index_init(es_json_index *ix, const cJSON *obj)
{
	const cJSON *m;
	size_t n = 0, i = 0;

	ix->obj = obj;
	ix->sorted = NULL;
	ix->n = 0;
	if (!cJSON_IsObject(obj))
		return ES_OK;
	cJSON_ArrayForEach(m, obj)
		if (m->string != NULL)
			n++;
	ix->n = n;
	if (n <= ES_JSON_INDEX_MIN)
		return ES_OK;
	ix->sorted = malloc(n * sizeof(*ix->sorted));
	if (ix->sorted == NULL) {
		ix->n = 0;
		return ES_ERR_NOMEM;
	}
	cJSON_ArrayForEach(m, obj)
		if (m->string != NULL) {
			ix->sorted[i].item = m;
			ix->sorted[i].pos = i;
			i++;
		}
	qsort(ix->sorted, n, sizeof(*ix->sorted), cmp_entries);
	return ES_OK;
}

const cJSON *es_json_index_find(const es_json_index *ix, const char *key)
{
	size_t lo = 0, hi;

	if (ix == NULL || key == NULL || ix->n == 0)
		return NULL;
	if (ix->sorted == NULL)
		return cJSON_GetObjectItemCaseSensitive(ix->obj, key);
	hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ix->sorted[mid].item->string, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ix->n && strcmp(ix->sorted[lo].item->string, key) == 0)
		return ix->sorted[lo].item;
	return NULL;
}

void es_json_index_free(es_json_index *ix)
{
	if (ix == NULL)
		return;
	free(ix->sorted);
	ix->sorted = NULL;
	ix->n = 0;
}

/* Objects for es_json_equal: every member of x has an equal one in y
 * (eq) or at least a name in y (names only); 1, 0 or -1 as es_json_equal. */
static int members_in(const cJSON *x, const es_json_index *y, int names_only)
{
	const cJSON *m, *o;
	int eq;

	cJSON_ArrayForEach(m, x) {
		if (m->string == NULL)
			continue;
		if ((o = es_json_index_find(y, m->string)) == NULL)
			return 0;
		if (!names_only && (eq = es_json_equal(m, o)) != 1)
			return eq;
	}
	return 1;
}

int es_json_equal(const cJSON *a, const cJSON *b)
{
	const cJSON *x, *y;
	es_json_index ia = {0}, ib = {0};
	int eq;

	if (a == NULL || b == NULL)
		return a == b;
	if ((a->type & 0xff) != (b->type & 0xff))
		return 0;
	if (cJSON_IsNumber(a))
		return a->valuedouble == b->valuedouble;
	if (cJSON_IsString(a) || cJSON_IsRaw(a))
		return a->valuestring != NULL && b->valuestring != NULL ?
		       strcmp(a->valuestring, b->valuestring) == 0 :
		       a->valuestring == b->valuestring;
	if (cJSON_IsArray(a)) {
		for (x = a->child, y = b->child; x != NULL && y != NULL;
		     x = x->next, y = y->next)
			if ((eq = es_json_equal(x, y)) != 1)
				return eq;
		return x == NULL && y == NULL;
	}
	if (!cJSON_IsObject(a))
		return 1; /* null, true, false */
	if (es_json_index_init(&ia, a) != ES_OK || es_json_index_init(&ib, b) != ES_OK) {
		eq = -1;
	} else if (ia.n != ib.n) {
		eq = 0;
	} else {
		eq = members_in(a, &ib, 0);
		if (eq == 1)
			eq = members_in(b, &ia, 1);
	}
	es_json_index_free(&ia);
	es_json_index_free(&ib);
	return eq;
}

int es_json_int_value(const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return -1;
	if (min < -ES_JSON_MAX_INT)
		min = -ES_JSON_MAX_INT;
	if (max > ES_JSON_MAX_INT)
		max = ES_JSON_MAX_INT;
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max)
		return -1;
	*out = (int64_t)d;
	return 0;
}

/* Finds the first object in the tree at v that holds one member name twice
 * (RFC 7493 section 2.3); its name in *dup, NULL when there is none. The
 * recursion is as deep as the tree, which es_json_parse has bounded.
 * Errors: ES_ERR_NOMEM. */
static es_err find_duplicate(const cJSON *v, const char **dup)
{
	const cJSON *m;

	*dup = NULL;
	if (cJSON_IsObject(v) && v->child != NULL && v->child->next != NULL) {
		es_json_index ix;
		size_t n = 0;

		cJSON_ArrayForEach(m, v)
			n++;
		if (n <= ES_JSON_INDEX_MIN) {
			for (const cJSON *a = v->child; a != NULL; a = a->next)
				for (const cJSON *b = a->next; b != NULL; b = b->next)
					if (strcmp(a->string, b->string) == 0) {
						*dup = a->string;
						return ES_OK;
					}
		} else {
			if (es_json_index_init(&ix, v) != ES_OK)
				return ES_ERR_NOMEM;
			for (size_t i = 1; i < ix.n; i++)
				if (strcmp(ix.sorted[i - 1].item->string,
					   ix.sorted[i].item->string) == 0) {
					*dup = ix.sorted[i].item->string;
					break;
				}
			es_json_index_free(&ix);
			if (*dup != NULL)
				return ES_OK;
		}
	}
	if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
		cJSON_ArrayForEach(m, v) {
			es_err rc = find_duplicate(m, dup);

			if (rc != ES_OK || *dup != NULL)
				return rc;
		}
	}
	return ES_OK;
}

es_err es_json_parse(const char *text, size_t len, int max_depth, cJSON **out,
		     char *err, size_t errsz)
{
	char *copy = NULL;
	const char *end = NULL;
	cJSON *root = NULL;
	es_err rc;

	if (out != NULL)
		*out = NULL;
	if (out == NULL || (text == NULL && len > 0))
		return es_errf(ES_ERR_INVAL, err, errsz, "es_json_parse: bad arguments");
	if (max_depth < 0)
		max_depth = 0;
	if (len == 0)
		return es_errf(ES_ERR_PARSE, err, errsz, "empty input");
	rc = prescan(text, len, max_depth, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	/* cJSON gets a NUL-terminated copy and the length including that NUL,
	 * so it never reads past the buffer and refuses trailing bytes. */
	copy = malloc(len + 1);
	if (copy == NULL) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		goto cleanup;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	root = cJSON_ParseWithLengthOpts(copy, len + 1, &end, 1);
	if (root == NULL) {
		size_t off = end != NULL && end >= copy && end <= copy + len ?
			     (size_t)(end - copy) : 0;

		if (off >= len)
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "truncated JSON: input ends at offset %zu", len);
		else
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "invalid JSON at offset %zu", off);
		goto cleanup;
	}
	{
		const char *dup = NULL;

		rc = find_duplicate(root, &dup);
		if (rc != ES_OK) {
			rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
			goto cleanup;
		}
		if (dup != NULL) {
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "duplicate member name \"%.64s\" in one object", dup);
			goto cleanup;
		}
	}
	*out = root;
	root = NULL;
	rc = ES_OK;
cleanup:
	cJSON_Delete(root);
	free(copy);
	return rc;
}

/* Writes "what.key: <problem>" (or "key: <problem>" without what). */
static es_err member_err(const char *what, const char *key, char *err,
			 size_t errsz, const char *problem)
{
	if (what != NULL && *what != '\0')
		return es_errf(ES_ERR_INVAL, err, errsz, "%s.%s: %s", what, key,
			       problem);
	return es_errf(ES_ERR_INVAL, err, errsz, "%s: %s", key, problem);
}

/* Finds the member; returns ES_OK with *item, ES_ERR_NOTFOUND (optional and
 * absent) or ES_ERR_INVAL (required and absent, or obj not an object). */
static es_err find_member(const cJSON *obj, const char *what, const char *key,
			  int required, const cJSON **item, char *err,
			  size_t errsz)
{
	if (key == NULL)
		return es_errf(ES_ERR_INVAL, err, errsz, "member name missing");
	if (!cJSON_IsObject(obj))
		return member_err(what, key, err, errsz,
				  "cannot read a member of a non-object");
	*item = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (*item != NULL)
		return ES_OK;
	if (required)
		return member_err(what, key, err, errsz, "required member missing");
	return ES_ERR_NOTFOUND;
}

/* find_member, then ES_ERR_INVAL "expected <type>" unless is(*item). */
static es_err find_typed(const cJSON *obj, const char *what, const char *key,
			 int required, cJSON_bool (*is)(const cJSON *),
			 const char *type, const cJSON **item, char *err,
			 size_t errsz)
{
	es_err rc = find_member(obj, what, key, required, item, err, errsz);
	char problem[48];

	if (rc != ES_OK || is(*item))
		return rc;
	snprintf(problem, sizeof(problem), "expected %s", type);
	return member_err(what, key, err, errsz, problem);
}

static cJSON_bool is_string(const cJSON *it)
{
	return cJSON_IsString(it) && it->valuestring != NULL;
}

es_err es_json_get_str(const cJSON *obj, const char *what, const char *key,
		       int required, const char **out, char *err, size_t errsz)
{
	const cJSON *it = NULL;
	es_err rc = find_typed(obj, what, key, required, is_string, "a string",
			       &it, err, errsz);

	if (rc == ES_OK)
		*out = it->valuestring;
	return rc;
}

static void fmt_bound(char *buf, size_t sz, int64_t v)
{
	if (v == ES_JSON_MAX_INT)
		snprintf(buf, sz, "2^53-1");
	else if (v == -ES_JSON_MAX_INT)
		snprintf(buf, sz, "-(2^53-1)");
	else
		snprintf(buf, sz, "%lld", (long long)v);
}

es_err es_json_get_int(const cJSON *obj, const char *what, const char *key,
		       int required, int64_t min, int64_t max, int64_t *out,
		       char *err, size_t errsz)
{
	const cJSON *it = NULL;
	es_err rc = find_member(obj, what, key, required, &it, err, errsz);
	char lo[32], hi[32], problem[96];
	double d;

	if (rc != ES_OK)
		return rc;
	if (min < -ES_JSON_MAX_INT)
		min = -ES_JSON_MAX_INT;
	if (max > ES_JSON_MAX_INT)
		max = ES_JSON_MAX_INT;
	d = cJSON_IsNumber(it) ? it->valuedouble : NAN;
	if (isfinite(d) && d == floor(d) && d >= (double)min && d <= (double)max) {
		*out = (int64_t)d;
		return ES_OK;
	}
	fmt_bound(lo, sizeof(lo), min);
	fmt_bound(hi, sizeof(hi), max);
	snprintf(problem, sizeof(problem), "expected an integer in %s..%s", lo, hi);
	return member_err(what, key, err, errsz, problem);
}

es_err es_json_get_bool(const cJSON *obj, const char *what, const char *key,
			int required, int *out, char *err, size_t errsz)
{
	const cJSON *it = NULL;
	es_err rc = find_typed(obj, what, key, required, cJSON_IsBool,
			       "a boolean", &it, err, errsz);

	if (rc == ES_OK)
		*out = cJSON_IsTrue(it) ? 1 : 0;
	return rc;
}

/* Object or array member (is, type: which), borrowed into *out. */
static es_err get_container(const cJSON *obj, const char *what, const char *key,
			    int required, cJSON_bool (*is)(const cJSON *),
			    const char *type, const cJSON **out, char *err,
			    size_t errsz)
{
	const cJSON *it = NULL;
	es_err rc = find_typed(obj, what, key, required, is, type, &it, err, errsz);

	if (rc == ES_OK)
		*out = it;
	return rc;
}

es_err es_json_get_obj(const cJSON *obj, const char *what, const char *key,
		       int required, const cJSON **out, char *err, size_t errsz)
{
	return get_container(obj, what, key, required, cJSON_IsObject, "an object",
			     out, err, errsz);
}

es_err es_json_get_arr(const cJSON *obj, const char *what, const char *key,
		       int required, const cJSON **out, char *err, size_t errsz)
{
	return get_container(obj, what, key, required, cJSON_IsArray, "an array",
			     out, err, errsz);
}

/* The writers below ignore the result of each append: es_buf keeps the
 * first error, checked once in es_json_print. */

char *es_json_number_text(double d, char buf[ES_JSON_NUMBER_LEN])
{
	char b[ES_JSON_NUMBER_LEN];
	int prec;

	if (!isfinite(d))
		return NULL;
	if (d == floor(d) && fabs(d) <= (double)ES_JSON_MAX_INT) {
		/* What "%lld" writes, without printf (the common case). */
		unsigned long long u = (unsigned long long)fabs(d);
		char t[24];
		size_t n = 0, i = 0;

		do {
			t[n++] = (char)('0' + u % 10);
			u /= 10;
		} while (u);
		if (d < 0)
			b[i++] = '-';
		while (n)
			b[i++] = t[--n];
		b[i] = '\0';
	} else {
		for (prec = 15; prec < 17; prec++) {
			snprintf(b, sizeof(b), "%.*g", prec, d);
			if (strtod(b, NULL) == d)
				break;
		}
		if (prec == 17)
			snprintf(b, sizeof(b), "%.17g", d);
		/* Past 2^53-1 every double is an integer, and an integer
		 * literal there is refused (RFC 7493 section 2.2): "%.17g"
		 * writes 2^53 + 2 as "9007199254740994". */
		if (strpbrk(b, ".eE") == NULL)
			strcat(b, ".0");
	}
	memcpy(buf, b, sizeof(b));
	return buf;
}

static void out_number(es_buf *o, double d)
{
	char b[ES_JSON_NUMBER_LEN];

	/* NaN and infinities (not JSON) as null, as cJSON does. */
	es_buf_append_str(o, es_json_number_text(d, b) ? b : "null");
}

/* RFC 8259 section 7: quote, backslash and control characters escaped,
 * everything else (UTF-8) as is. */
static void out_quoted(es_buf *o, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s;

	es_buf_append(o, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[7] = "\\u00";
		const char *e = NULL;

		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		default:
			if (c < 0x20) {
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 0xf];
				esc[6] = '\0';
				e = esc;
			}
		}
		if (e == NULL)
			continue;
		es_buf_append(o, run, (size_t)(s - run));
		es_buf_append_str(o, e);
		run = s + 1;
	}
	es_buf_append(o, run, (size_t)(s - run));
	es_buf_append(o, "\"", 1);
}

static void out_value(es_buf *o, const cJSON *v)
{
	const cJSON *c;
	int first = 1;

	if (cJSON_IsNull(v)) {
		es_buf_append_str(o, "null");
	} else if (cJSON_IsFalse(v)) {
		es_buf_append_str(o, "false");
	} else if (cJSON_IsTrue(v)) {
		es_buf_append_str(o, "true");
	} else if (cJSON_IsNumber(v)) {
		out_number(o, v->valuedouble);
	} else if (cJSON_IsString(v)) {
		out_quoted(o, v->valuestring != NULL ? v->valuestring : "");
	} else if (cJSON_IsRaw(v)) {
		es_buf_append_str(o, v->valuestring != NULL ? v->valuestring : "null");
	} else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
		int obj = cJSON_IsObject(v);

		es_buf_append(o, obj ? "{" : "[", 1);
		cJSON_ArrayForEach(c, v) {
			if (!first)
				es_buf_append(o, ",", 1);
			first = 0;
			if (obj) {
				out_quoted(o, c->string != NULL ? c->string : "");
				es_buf_append(o, ":", 1);
			}
			out_value(o, c);
		}
		es_buf_append(o, obj ? "}" : "]", 1);
	} else {
		es_buf_append_str(o, "null");
	}
}

char *es_json_print(const cJSON *v)
{
	es_buf o = { 0 };

	if (v == NULL)
		return NULL;
	out_value(&o, v);
	if (o.err != ES_OK) {
		es_buf_free(&o);
		return NULL;
	}
	return es_buf_detach(&o, NULL);
}

cJSON *es_json_add_int(cJSON *obj, const char *key, int64_t v)
{
	return cJSON_AddNumberToObject(obj, key, (double)v);
}

cJSON *es_json_object_member(cJSON *parent, const char *key)
{
	cJSON *m = cJSON_GetObjectItemCaseSensitive(parent, key);

	if (cJSON_IsObject(m))
		return m;
	cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
	return cJSON_AddObjectToObject(parent, key);
}

es_err es_json_load_file(const char *path, size_t max_bytes, cJSON **out,
			 char *err, size_t errsz)
{
	int fd = -1;
	es_buf buf;
	es_err rc;

	if (out != NULL)
		*out = NULL;
	if (path == NULL || out == NULL)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_json_load_file: bad arguments");
	if (max_bytes > SIZE_MAX / 4)
		max_bytes = SIZE_MAX / 4;
	/* One byte over the limit is read to tell a larger file. */
	es_buf_init(&buf, max_bytes + 1);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
		goto cleanup;
	}
	for (;;) {
		size_t want = buf.max - buf.len;
		ssize_t n;

		if (want == 0) {
			rc = es_errf(ES_ERR_TOOBIG, err, errsz,
				     "%s: larger than %zu bytes", path, max_bytes);
			goto cleanup;
		}
		if (want > 65536)
			want = 65536;
		if (es_buf_reserve(&buf, want) != ES_OK) {
			rc = es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
			goto cleanup;
		}
		n = read(fd, buf.p + buf.len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
			goto cleanup;
		}
		if (n == 0)
			break;
		es_buf_commit(&buf, (size_t)n);
	}
	if (buf.len > max_bytes) {
		rc = es_errf(ES_ERR_TOOBIG, err, errsz, "%s: larger than %zu bytes",
			     path, max_bytes);
		goto cleanup;
	}
	rc = es_json_parse(buf.p, buf.len, ES_JSON_MAX_DEPTH, out, err, errsz);
	if (rc != ES_OK && err != NULL && errsz > 0) {
		char inner[256];

		snprintf(inner, sizeof(inner), "%s", err);
		es_errf(rc, err, errsz, "%s: %s", path, inner);
	}
cleanup:
	if (fd >= 0)
		close(fd);
	es_buf_free(&buf);
	return rc;
}

int es_json_diff_members(const cJSON *from, const cJSON *to,
			 es_json_member_fn fn, void *ctx)
{
	es_json_index fix = {0}, tix = {0};
	const cJSON *m;
	int r = -1;

	if (es_json_index_init(&fix, from) != ES_OK ||
	    es_json_index_init(&tix, to) != ES_OK)
		goto done;
	r = 0;
	if (cJSON_IsObject(from)) {
		cJSON_ArrayForEach(m, from) {
			const cJSON *t;

			if (!m->string || es_json_index_find(&fix, m->string) != m)
				continue;
			t = es_json_index_find(&tix, m->string);
			if (t && !cJSON_IsNull(t)) {
				int eq = es_json_equal(m, t);

				if (eq < 0) {
					r = -1;
					goto done;
				}
				if (eq)
					continue;
			} else {
				t = NULL;
			}
			if ((r = fn(m->string, m, t, ctx)) < 0)
				goto done;
		}
	}
	if (cJSON_IsObject(to)) {
		cJSON_ArrayForEach(m, to) {
			if (!m->string || cJSON_IsNull(m) ||
			    es_json_index_find(&tix, m->string) != m ||
			    es_json_index_find(&fix, m->string))
				continue;
			if ((r = fn(m->string, NULL, m, ctx)) < 0)
				goto done;
		}
	}
done:
	es_json_index_free(&fix);
	es_json_index_free(&tix);
	return r < 0 ? r : 0;
}
