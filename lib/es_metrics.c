/*
 * es_metrics.c - the metrics registry and its Prometheus text rendering
 * (see es_metrics.h). Families are kept sorted by name and series by label
 * values, so rendering is a walk and a lookup is a binary search.
 */
#include "es_metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_buf.h"

typedef struct series {
	char **values;      /* nlabels strings */
	double value;       /* counter, gauge */
	double sum;         /* histogram */
	uint64_t count;     /* histogram: observations */
	uint64_t *per_le;   /* histogram: observations per bucket, not cumulative */
} series;

struct es_metric {
	es_metric_type type;
	char *name, *help;
	char *labels[ES_METRICS_MAX_LABELS];
	size_t nlabels;
	double bounds[ES_METRICS_MAX_BUCKETS];
	size_t nbounds;
	series **s;
	size_t ns, cap;
};

typedef struct render_fn {
	es_metrics_collect_fn fn;
	void *user;
} render_fn;

struct es_metrics {
	es_metric **fam;
	size_t nf, capf;
	render_fn *fns;
	size_t nfns, capfns;
};

static const char *const type_names[] = { "counter", "gauge", "histogram" };

/* ---- series ---- */

static void series_free(series *s, size_t nlabels)
{
	if (!s)
		return;
	if (s->values)
		for (size_t i = 0; i < nlabels; i++)
			free(s->values[i]);
	free(s->values);
	free(s->per_le);
	free(s);
}

static int values_cmp(char *const *a, const char *const *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int c = strcmp(a[i], b && b[i] ? b[i] : "");

		if (c)
			return c;
	}
	return 0;
}

/* Index of the series with these values, or where it would be inserted
 * (*found 0). */
static size_t series_find(const es_metric *m, const char *const *values,
			  int *found)
{
	size_t lo = 0, hi = m->ns;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = values_cmp(m->s[mid]->values, values, m->nlabels);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static series *series_new(const es_metric *m, const char *const *values)
{
	series *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->values = calloc(m->nlabels ? m->nlabels : 1, sizeof(char *));
	if (!s->values)
		goto fail;
	for (size_t i = 0; i < m->nlabels; i++) {
		s->values[i] = strdup(values && values[i] ? values[i] : "");
		if (!s->values[i])
			goto fail;
	}
	if (m->type == ES_METRIC_HISTOGRAM) {
		s->per_le = calloc(m->nbounds ? m->nbounds : 1, sizeof(uint64_t));
		if (!s->per_le)
			goto fail;
	}
	return s;
fail:
	series_free(s, m->nlabels);
	return NULL;
}

/* The series of these values, created when missing; NULL when out of
 * memory. */
static series *series_get(es_metric *m, const char *const *values)
{
	int found;
	size_t at = series_find(m, values, &found);
	series *s;

	if (found)
		return m->s[at];
	if (m->ns == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 4;
		series **n = realloc(m->s, cap * sizeof(*n));

		if (!n)
			return NULL;
		m->s = n;
		m->cap = cap;
	}
	s = series_new(m, values);
	if (!s)
		return NULL;
	memmove(m->s + at + 1, m->s + at, (m->ns - at) * sizeof(*m->s));
	m->s[at] = s;
	m->ns++;
	return s;
}

/* ---- registry ---- */

es_err es_metrics_new(es_metrics **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? ES_OK : ES_ERR_NOMEM;
}

static void family_free(es_metric *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ns; i++)
		series_free(m->s[i], m->nlabels);
	for (size_t i = 0; i < m->nlabels; i++)
		free(m->labels[i]);
	free(m->s);
	free(m->name);
	free(m->help);
	free(m);
}

void es_metrics_free(es_metrics *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nf; i++)
		family_free(r->fam[i]);
	free(r->fam);
	free(r->fns);
	free(r);
}

static int name_ok(const char *s, int colon)
{
	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || (colon && *s == ':')))
			return 0;
	return 1;
}

/* The sample names a family writes: its name, and for a histogram the
 * three suffixed ones. */
static size_t sample_names(es_metric_type t, const char *name, char out[4][256])
{
	static const char *const sfx[] = { "_bucket", "_sum", "_count" };
	size_t n = 0;

	snprintf(out[n++], 256, "%s", name);
	if (t == ES_METRIC_HISTOGRAM)
		for (size_t i = 0; i < 3; i++)
			snprintf(out[n++], 256, "%s%s", name, sfx[i]);
	return n;
}

static int names_clash(const es_metric *m, es_metric_type t, const char *name)
{
	char a[4][256], b[4][256];
	size_t na = sample_names(m->type, m->name, a), nb = sample_names(t, name, b);

	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			if (!strcmp(a[i], b[j]))
				return 1;
	return 0;
}

static es_err check_family(const es_metrics *r, es_metric_type type,
			   const char *name, const char *const *labels,
			   size_t nlabels, const double *buckets,
			   size_t nbuckets, char *err, size_t errsz)
{
	if ((unsigned)type > ES_METRIC_HISTOGRAM)
		return es_errf(ES_ERR_INVAL, err, errsz, "metric %s: unknown type",
			       name ? name : "");
	if (!name_ok(name, 1) || strlen(name) > 200)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "metric name \"%s\": not [a-zA-Z_:][a-zA-Z0-9_:]* "
			       "of at most 200 bytes", name ? name : "");
	if (nlabels > ES_METRICS_MAX_LABELS || (nlabels && !labels))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "metric %s: more than %d labels, or none given",
			       name, ES_METRICS_MAX_LABELS);
	for (size_t i = 0; i < nlabels; i++) {
		if (!name_ok(labels[i], 0) || !strncmp(labels[i], "__", 2))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "metric %s: label name \"%s\": not "
				       "[a-zA-Z_][a-zA-Z0-9_]*, or reserved (__)",
				       name, labels[i] ? labels[i] : "");
		if (type == ES_METRIC_HISTOGRAM && !strcmp(labels[i], "le"))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "metric %s: a histogram cannot have a label \"le\"",
				       name);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(labels[i], labels[j]))
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "metric %s: label \"%s\" twice",
					       name, labels[i]);
	}
	if (type != ES_METRIC_HISTOGRAM && nbuckets)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "metric %s: only a histogram has buckets", name);
	if (nbuckets > ES_METRICS_MAX_BUCKETS || (nbuckets && !buckets))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "metric %s: more than %d buckets, or none given",
			       name, ES_METRICS_MAX_BUCKETS);
	for (size_t i = 0; i < nbuckets; i++)
		if (!isfinite(buckets[i]) || (i && buckets[i] <= buckets[i - 1]))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "metric %s: bucket %zu: bounds must be finite "
				       "and strictly increasing", name, i);
	for (size_t i = 0; i < r->nf; i++)
		if (names_clash(r->fam[i], type, name))
			return es_errf(ES_ERR_EXISTS, err, errsz,
				       "metric %s: its samples clash with metric %s",
				       name, r->fam[i]->name);
	return ES_OK;
}

es_err es_metrics_add(es_metrics *r, es_metric_type type, const char *name,
		      const char *help, const char *const *labels,
		      size_t nlabels, const double *buckets, size_t nbuckets,
		      es_metric **out, char *err, size_t errsz)
{
	es_metric *m = NULL;
	size_t at = 0;
	es_err rc;

	if (out)
		*out = NULL;
	rc = check_family(r, type, name, labels, nlabels, buckets, nbuckets, err,
			  errsz);
	if (rc != ES_OK)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto oom;
	m->type = type;
	m->name = strdup(name);
	m->help = strdup(help ? help : "");
	if (!m->name || !m->help)
		goto oom;
	for (; m->nlabels < nlabels; m->nlabels++)
		if (!(m->labels[m->nlabels] = strdup(labels[m->nlabels])))
			goto oom;
	if (nbuckets)
		memcpy(m->bounds, buckets, nbuckets * sizeof(double));
	m->nbounds = nbuckets;
	if (nlabels == 0 && !series_get(m, NULL))
		goto oom;
	if (r->nf == r->capf) {
		size_t cap = r->capf ? r->capf * 2 : 16;
		es_metric **n = realloc(r->fam, cap * sizeof(*n));

		if (!n)
			goto oom;
		r->fam = n;
		r->capf = cap;
	}
	while (at < r->nf && strcmp(r->fam[at]->name, name) < 0)
		at++;
	memmove(r->fam + at + 1, r->fam + at, (r->nf - at) * sizeof(*r->fam));
	r->fam[at] = m;
	r->nf++;
	if (out)
		*out = m;
	return ES_OK;
oom:
	family_free(m);
	return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
}

es_err es_metrics_counter(es_metrics *r, const char *name, const char *help,
			  const char *const *labels, size_t nlabels,
			  es_metric **out, char *err, size_t errsz)
{
	return es_metrics_add(r, ES_METRIC_COUNTER, name, help, labels, nlabels,
			      NULL, 0, out, err, errsz);
}

es_err es_metrics_gauge(es_metrics *r, const char *name, const char *help,
			const char *const *labels, size_t nlabels,
			es_metric **out, char *err, size_t errsz)
{
	return es_metrics_add(r, ES_METRIC_GAUGE, name, help, labels, nlabels,
			      NULL, 0, out, err, errsz);
}

es_err es_metrics_histogram(es_metrics *r, const char *name, const char *help,
			    const char *const *labels, size_t nlabels,
			    const double *buckets, size_t nbuckets,
			    es_metric **out, char *err, size_t errsz)
{
	return es_metrics_add(r, ES_METRIC_HISTOGRAM, name, help, labels, nlabels,
			      buckets, nbuckets, out, err, errsz);
}

es_err es_metrics_on_render(es_metrics *r, es_metrics_collect_fn fn, void *user)
{
	if (r->nfns == r->capfns) {
		size_t cap = r->capfns ? r->capfns * 2 : 4;
		render_fn *n = realloc(r->fns, cap * sizeof(*n));

		if (!n)
			return ES_ERR_NOMEM;
		r->fns = n;
		r->capfns = cap;
	}
	r->fns[r->nfns].fn = fn;
	r->fns[r->nfns].user = user;
	r->nfns++;
	return ES_OK;
}

/* ---- series operations ---- */

es_err es_metric_set(es_metric *m, const char *const *values, double v)
{
	series *s;

	if (m->type == ES_METRIC_HISTOGRAM ||
	    (m->type == ES_METRIC_COUNTER && !(v >= 0)))
		return ES_ERR_INVAL;
	if (!(s = series_get(m, values)))
		return ES_ERR_NOMEM;
	s->value = v;
	return ES_OK;
}

es_err es_metric_add(es_metric *m, const char *const *values, double delta)
{
	series *s;

	if (m->type == ES_METRIC_HISTOGRAM || isnan(delta) ||
	    (m->type == ES_METRIC_COUNTER && delta < 0))
		return ES_ERR_INVAL;
	if (!(s = series_get(m, values)))
		return ES_ERR_NOMEM;
	s->value += delta;
	return ES_OK;
}

es_err es_metric_observe(es_metric *m, const char *const *values, double v)
{
	series *s;
	size_t i;

	if (m->type != ES_METRIC_HISTOGRAM || isnan(v))
		return ES_ERR_INVAL;
	if (!(s = series_get(m, values)))
		return ES_ERR_NOMEM;
	for (i = 0; i < m->nbounds && v > m->bounds[i]; i++)
		;
	if (i < m->nbounds)
		s->per_le[i]++;
	s->count++;
	s->sum += v;
	return ES_OK;
}

es_err es_metric_remove(es_metric *m, const char *const *values)
{
	int found;
	size_t at = series_find(m, values, &found);

	if (!found)
		return ES_ERR_NOTFOUND;
	series_free(m->s[at], m->nlabels);
	memmove(m->s + at, m->s + at + 1, (m->ns - at - 1) * sizeof(*m->s));
	m->ns--;
	return ES_OK;
}

void es_metric_clear(es_metric *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ns; i++)
		series_free(m->s[i], m->nlabels);
	m->ns = 0;
}

/* ---- rendering ---- */

/* The writers below ignore the result of each append: es_buf keeps the
 * first error, checked once in es_metrics_render. */

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms,
 * no surrogates, at most U+10FFFF), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *p)
{
	size_t n, i;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Escapes s for a label value (quote 1) or HELP text (quote 0). */
static void put_escaped(es_buf *b, const char *s, int quote)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_len(p);

		if (*p == '\\')
			es_buf_append_str(b, "\\\\");
		else if (*p == '\n')
			es_buf_append_str(b, "\\n");
		else if (quote && *p == '"')
			es_buf_append_str(b, "\\\"");
		else if (n == 0)
			es_buf_append_str(b, "\xef\xbf\xbd");
		else
			es_buf_append(b, (const char *)p, n);
		p += n ? n : 1;
	}
}

const char *es_metrics_format_value(double v, char buf[32])
{
	if (isnan(v))
		return strcpy(buf, "NaN");
	if (isinf(v))
		return strcpy(buf, v > 0 ? "+Inf" : "-Inf");
	snprintf(buf, 32, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, 32, "%.17g", v);
	return buf;
}

/* name{labels[,le="x"]} value\n */
static void put_sample(es_buf *b, const es_metric *m, const series *s,
		       const char *suffix, const char *le, double v)
{
	char num[32];

	es_buf_append_str(b, m->name);
	es_buf_append_str(b, suffix);
	if (m->nlabels || le) {
		es_buf_append_str(b, "{");
		for (size_t i = 0; i < m->nlabels; i++) {
			if (i)
				es_buf_append_str(b, ",");
			es_buf_append_str(b, m->labels[i]);
			es_buf_append_str(b, "=\"");
			put_escaped(b, s->values[i], 1);
			es_buf_append_str(b, "\"");
		}
		if (le) {
			es_buf_append_str(b, m->nlabels ? ",le=\"" : "le=\"");
			es_buf_append_str(b, le);
			es_buf_append_str(b, "\"");
		}
		es_buf_append_str(b, "}");
	}
	es_buf_append_str(b, " ");
	es_buf_append_str(b, es_metrics_format_value(v, num));
	es_buf_append_str(b, "\n");
}

static void put_family(es_buf *b, const es_metric *m)
{
	char le[32];

	if (m->ns == 0)
		return;
	es_buf_append_str(b, "# HELP ");
	es_buf_append_str(b, m->name);
	es_buf_append_str(b, " ");
	put_escaped(b, m->help, 0);
	es_buf_append_str(b, "\n# TYPE ");
	es_buf_append_str(b, m->name);
	es_buf_append_str(b, " ");
	es_buf_append_str(b, type_names[m->type]);
	es_buf_append_str(b, "\n");
	for (size_t i = 0; i < m->ns; i++) {
		const series *s = m->s[i];
		uint64_t cum = 0;

		if (m->type != ES_METRIC_HISTOGRAM) {
			put_sample(b, m, s, "", NULL, s->value);
			continue;
		}
		for (size_t j = 0; j < m->nbounds; j++) {
			cum += s->per_le[j];
			put_sample(b, m, s, "_bucket",
				   es_metrics_format_value(m->bounds[j], le),
				   (double)cum);
		}
		put_sample(b, m, s, "_bucket", "+Inf", (double)s->count);
		put_sample(b, m, s, "_sum", NULL, s->sum);
		put_sample(b, m, s, "_count", NULL, (double)s->count);
	}
}

es_err es_metrics_render(es_metrics *r, char **out, size_t *len)
{
	es_buf b = { 0 };
	es_err rc;

	*out = NULL;
	*len = 0;
	for (size_t i = 0; i < r->nfns; i++) {
		rc = r->fns[i].fn(r->fns[i].user);
		if (rc != ES_OK)
			return rc;
	}
	es_buf_append_str(&b, "");
	for (size_t i = 0; i < r->nf; i++)
		put_family(&b, r->fam[i]);
	if (b.err != ES_OK) {
		es_buf_free(&b);
		return ES_ERR_NOMEM;
	}
	*out = es_buf_detach(&b, len);
	return ES_OK;
}
