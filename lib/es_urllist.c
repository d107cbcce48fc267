/*
 * es_urllist.c - lists of server URLs gone through in turn (es_urllist.h).
 */
#include "es_urllist.h"

#include <stdlib.h>
#include <string.h>

#include "es_buf.h"

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

es_err es_urllist_split(const char *key, const char *list, es_urllist *out,
			char *err, size_t errsz)
{
	const char *p = list;
	es_err rc = ES_OK;

	memset(out, 0, sizeof(*out));
	if (!list || !*list)
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: empty", key);
	for (;;) {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
		const char *b = p, *e = end;

		while (b < e && is_space(*b))
			b++;
		while (e > b && is_space(e[-1]))
			e--;
		if (b == e) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s: \"%s\": an empty entry in the list", key, list);
			goto fail;
		}
		if (out->n == ES_URLLIST_MAX) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s: more than %d URLs", key, ES_URLLIST_MAX);
			goto fail;
		}
		out->items[out->n] = strndup(b, (size_t)(e - b));
		if (!out->items[out->n]) {
			rc = es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
			goto fail;
		}
		out->n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	return ES_OK;
fail:
	es_urllist_free(out);
	return rc;
}

void es_urllist_free(es_urllist *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->items[i]);
	memset(l, 0, sizeof(*l));
}

const char *es_urllist_current(const es_urllist *l)
{
	return l->n ? l->items[l->cur] : NULL;
}

int es_urllist_advance(es_urllist *l, size_t naddrs)
{
	if (l->addr + 1 < naddrs) {
		l->addr++;
		return 0;
	}
	l->addr = 0;
	if (!l->n)
		return 1;
	l->cur = (l->cur + 1) % l->n;
	return l->cur == 0;
}

/* FNV-1a 64 (draft-eastlake-fnv): offset basis and prime. */
#define FNV64_BASIS 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL

static uint64_t fnv1a(uint64_t h, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= FNV64_PRIME;
	}
	return h;
}

/* splitmix64's finaliser (Steele, Lea, Flood 2014). */
static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t es_urllist_weight(const char *node, const char *target)
{
	uint64_t h = FNV64_BASIS;

	node = node ? node : "";
	target = target ? target : "";
	h = fnv1a(h, node, strlen(node) + 1); /* with its NUL: the separator */
	h = fnv1a(h, target, strlen(target));
	return mix64(h);
}

void es_urllist_order(const char *node, const char *const *targets, size_t n,
		      size_t *order)
{
	/* Insertion sort, stable, weights computed as compared: n is a
	 * handful (a list, or the addresses of one name), and nothing is
	 * allocated. */
	for (size_t i = 0; i < n; i++) {
		uint64_t w = es_urllist_weight(node, targets[i]);
		size_t j = i;

		while (j > 0 && es_urllist_weight(node, targets[order[j - 1]]) < w) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
}

void es_urllist_order_for(es_urllist *l, const char *node, size_t *perm)
{
	size_t order[ES_URLLIST_MAX];
	char *items[ES_URLLIST_MAX];

	es_urllist_order(node, (const char *const *)l->items, l->n, order);
	for (size_t i = 0; i < l->n; i++)
		items[i] = l->items[order[i]];
	for (size_t i = 0; i < l->n; i++) {
		l->items[i] = items[i];
		if (perm)
			perm[i] = order[i];
	}
	l->cur = 0;
	l->addr = 0;
}

es_err es_urllist_join_flag(int argc, char **argv, int first, const char *flag,
			    char **out, char *err, size_t errsz)
{
	size_t fl = strlen(flag);
	es_buf b = { 0 };
	int count = 0;

	*out = NULL;
	for (int i = first; i < argc; i++) {
		const char *a = argv[i], *v;

		if (!strcmp(a, "--"))
			break;
		if (strncmp(a, "--", 2) || strncmp(a + 2, flag, fl))
			continue;
		if (a[2 + fl] == '=') {
			v = a + 3 + fl;
		} else if (a[2 + fl] == '\0') {
			if (i + 1 >= argc) {
				es_buf_free(&b);
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "--%s: missing value", flag);
			}
			v = argv[++i];
		} else {
			continue;
		}
		if (count++)
			es_buf_append_str(&b, ",");
		es_buf_append_str(&b, v);
	}
	if (b.err) {
		es_buf_free(&b);
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	}
	if (count > 1)
		*out = es_buf_detach(&b, NULL);
	es_buf_free(&b);
	if (count > 1 && !*out)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	return ES_OK;
}
