/*
 * print.c - tables, JSON/YAML output and formatters (see print.h).
 */
#include "print.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_buf.h"
#include "es_json.h"
#include "es_time.h"
#include "yaml.h"

#define TABLE_MAX_COLS 32

struct es_print_table {
	int ncols;
	size_t nrows, cap;
	char **cells; /* nrows * ncols */
};

int es_print_fmt_parse(const char *s, es_print_fmt *out)
{
	if (!s)
		return -1;
	if (strcmp(s, "json") == 0)
		*out = ES_PRINT_JSON;
	else if (strcmp(s, "yaml") == 0)
		*out = ES_PRINT_YAML;
	else if (strcmp(s, "wide") == 0)
		*out = ES_PRINT_WIDE;
	else
		return -1;
	return 0;
}

char *es_print_age(int64_t s, char *buf, size_t bufsz)
{
	const int64_t m = 60, h = 3600, d = 86400, y = 365 * 86400;

	if (s < 0)
		s = 0;
	if (s < 2 * m)
		snprintf(buf, bufsz, "%llds", (long long)s);
	else if (s < 10 * m)
		snprintf(buf, bufsz, s % m ? "%lldm%llds" : "%lldm", (long long)(s / m),
			 (long long)(s % m));
	else if (s < 3 * h)
		snprintf(buf, bufsz, "%lldm", (long long)(s / m));
	else if (s < 8 * h)
		snprintf(buf, bufsz, (s % h) / m ? "%lldh%lldm" : "%lldh",
			 (long long)(s / h), (long long)((s % h) / m));
	else if (s < 2 * d)
		snprintf(buf, bufsz, "%lldh", (long long)(s / h));
	else if (s < 8 * d)
		snprintf(buf, bufsz, (s % d) / h ? "%lldd%lldh" : "%lldd",
			 (long long)(s / d), (long long)((s % d) / h));
	else if (s < 2 * y)
		snprintf(buf, bufsz, "%lldd", (long long)(s / d));
	else if (s < 8 * y)
		snprintf(buf, bufsz, (s % y) / d ? "%lldy%lldd" : "%lldy",
			 (long long)(s / y), (long long)((s % y) / d));
	else
		snprintf(buf, bufsz, "%lldy", (long long)(s / y));
	return buf;
}

char *es_print_age_of(const char *ts, time_t now, char *buf, size_t bufsz)
{
	time_t t;

	if (!ts || es_time_parse_rfc3339(ts, &t) != 0) {
		snprintf(buf, bufsz, "<unknown>");
		return buf;
	}
	return es_print_age((int64_t)now - (int64_t)t, buf, bufsz);
}

char *es_print_bytes(double b, char *buf, size_t bufsz)
{
	static const char *const units[] = { "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	int u = -1;

	if (!isfinite(b) || b < 0)
		b = 0;
	while (b >= 1024 && u < 5) {
		b /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, bufsz, "%.0f", b);
	else if (fabs(b - round(b)) < 0.05)
		snprintf(buf, bufsz, "%.0f%s", round(b), units[u]);
	else
		snprintf(buf, bufsz, "%.1f%s", b, units[u]);
	return buf;
}

es_print_table *es_print_table_new(int ncols)
{
	es_print_table *t;

	if (ncols < 1 || ncols > TABLE_MAX_COLS)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t)
		t->ncols = ncols;
	return t;
}

es_err es_print_table_add(es_print_table *t, const char *const *cells)
{
	int i;

	if (t->nrows == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 16;
		char **nc = realloc(t->cells, ncap * (size_t)t->ncols * sizeof(*nc));
		if (!nc)
			return ES_ERR_NOMEM;
		t->cells = nc;
		t->cap = ncap;
	}
	for (i = 0; i < t->ncols; i++) {
		char *c = strdup(cells[i] ? cells[i] : "<none>");
		if (!c) {
			while (i-- > 0)
				free(t->cells[t->nrows * (size_t)t->ncols + (size_t)i]);
			return ES_ERR_NOMEM;
		}
		t->cells[t->nrows * (size_t)t->ncols + (size_t)i] = c;
	}
	t->nrows++;
	return ES_OK;
}

void es_print_table_write(const es_print_table *t, FILE *f, const char *indent)
{
	size_t w[TABLE_MAX_COLS] = { 0 }, r;
	int i;

	for (r = 0; r < t->nrows; r++)
		for (i = 0; i < t->ncols; i++) {
			size_t l = strlen(t->cells[r * (size_t)t->ncols + (size_t)i]);
			if (l > w[i])
				w[i] = l;
		}
	for (r = 0; r < t->nrows; r++) {
		fputs(indent ? indent : "", f);
		for (i = 0; i < t->ncols; i++) {
			const char *c = t->cells[r * (size_t)t->ncols + (size_t)i];
			if (i == t->ncols - 1)
				fprintf(f, "%s\n", c);
			else
				fprintf(f, "%-*s   ", (int)w[i], c);
		}
	}
}

void es_print_table_free(es_print_table *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

static const cJSON *path_get(const cJSON *v, const char *a, const char *b,
			     const char *c)
{
	const char *keys[3] = { a, b, c };
	int i;

	for (i = 0; i < 3 && keys[i] && v; i++)
		v = cJSON_GetObjectItemCaseSensitive(v, keys[i]);
	return v;
}

static const char *path_str(const cJSON *v, const char *a, const char *b,
			    const char *c)
{
	const cJSON *s = path_get(v, a, b, c);
	return cJSON_IsString(s) ? s->valuestring : NULL;
}

const char *es_print_node_ready(const cJSON *node)
{
	const cJSON *conds = path_get(node, "status", "conditions", NULL), *c;

	cJSON_ArrayForEach(c, conds) {
		const char *type = path_str(c, "type", NULL, NULL);
		const char *st = path_str(c, "status", NULL, NULL);
		if (type && strcmp(type, "Ready") == 0 && st) {
			if (strcmp(st, "True") == 0)
				return "Ready";
			if (strcmp(st, "False") == 0)
				return "NotReady";
			return "Unknown";
		}
	}
	return "Unknown";
}

/* The items to print: a List's items, an array, or v itself alone. */
static const cJSON *items_of(const cJSON *v, int *single)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(v, "items");

	*single = 0;
	if (cJSON_IsArray(v))
		return v;
	if (cJSON_IsObject(v) && cJSON_IsArray(items) &&
	    !cJSON_GetObjectItemCaseSensitive(v, "spec"))
		return items;
	*single = 1;
	return v;
}

static es_err print_rows(FILE *f, const cJSON *v, int ncols, const char *const *head,
			 es_err (*row)(es_print_table *, const cJSON *, time_t),
			 time_t now)
{
	es_print_table *t = es_print_table_new(ncols);
	const cJSON *items, *it;
	int single;
	es_err rc = ES_OK;

	if (!t)
		return ES_ERR_NOMEM;
	items = items_of(v, &single);
	if (!single && cJSON_GetArraySize(items) == 0) {
		fprintf(f, "No resources found.\n");
		goto cleanup;
	}
	rc = es_print_table_add(t, head);
	if (rc != ES_OK)
		goto cleanup;
	if (single) {
		rc = row(t, items, now);
	} else {
		cJSON_ArrayForEach(it, items) {
			rc = row(t, it, now);
			if (rc != ES_OK)
				break;
		}
	}
	if (rc == ES_OK)
		es_print_table_write(t, f, NULL);
cleanup:
	es_print_table_free(t);
	return rc;
}

static es_err node_row(es_print_table *t, const cJSON *n, time_t now, int wide)
{
	char age[32], seen[32], cpu[32] = "<unknown>", mem[32] = "<unknown>";
	const cJSON *conn = path_get(n, "status", "sync", "connected");
	const cJSON *c = path_get(n, "status", "capacity", "cpu");
	const cJSON *m = path_get(n, "status", "capacity", "memoryBytes");
	const char *ver = path_str(n, "status", "nodeInfo", "agentVersion");
	const char *ctrl = path_str(n, "status", "sync", "controller");
	const char *cells[11];

	if (!ver)
		ver = path_str(n, "status", "sync", "agentVersion");
	if (cJSON_IsNumber(c))
		snprintf(cpu, sizeof(cpu), "%.0f", c->valuedouble);
	if (cJSON_IsNumber(m))
		es_print_bytes(m->valuedouble, mem, sizeof(mem));
	es_print_age_of(path_str(n, "metadata", "creationTimestamp", NULL), now, age,
			sizeof(age));
	es_print_age_of(path_str(n, "status", "sync", "lastSeen"), now, seen, sizeof(seen));
	cells[0] = path_str(n, "metadata", "name", NULL);
	cells[1] = es_print_node_ready(n);
	cells[2] = cJSON_IsBool(conn) ? (cJSON_IsTrue(conn) ? "true" : "false") : "<unknown>";
	cells[3] = age;
	cells[4] = ver ? ver : "<unknown>";
	cells[5] = path_str(n, "status", "nodeInfo", "kernelVersion");
	cells[6] = path_str(n, "status", "nodeInfo", "osImage");
	cells[7] = cpu;
	cells[8] = mem;
	cells[9] = seen;
	/* The serving controller (store = etcd); "<none>" when no controller
	 * holds the node's session, "-" where the store names none (SQLite). */
	if (!ctrl)
		ctrl = (path_str(n, "status", "sync", "stateController") ||
			path_str(n, "status", "sync", "recordController")) ? "<none>" : "-";
	cells[10] = ctrl;
	(void)wide;
	return es_print_table_add(t, cells);
}

static es_err node_row_narrow(es_print_table *t, const cJSON *n, time_t now)
{
	return node_row(t, n, now, 0);
}

static es_err node_row_wide(es_print_table *t, const cJSON *n, time_t now)
{
	return node_row(t, n, now, 1);
}

es_err es_print_nodes(FILE *f, const cJSON *v, int wide, time_t now)
{
	static const char *const head[] = { "NAME", "STATUS", "CONNECTED", "AGE", "VERSION",
					    "KERNEL-VERSION", "OS-IMAGE", "CPU", "MEMORY",
					    "LAST-SEEN", "CONTROLLER" };

	return print_rows(f, v, wide ? 11 : 5, head, wide ? node_row_wide : node_row_narrow,
			  now);
}

static es_err obj_row(es_print_table *t, const cJSON *o, time_t now, int wide)
{
	char age[32], gen[32] = "<unknown>";
	const cJSON *g = path_get(o, "metadata", "generation", NULL);
	const cJSON *ml = path_get(o, "spec", "nodeSelector", "matchLabels"), *l;
	const char *cells[4];
	es_buf sel = { 0 };
	es_err rc;

	if (cJSON_IsNumber(g))
		snprintf(gen, sizeof(gen), "%.0f", g->valuedouble);
	es_print_age_of(path_str(o, "metadata", "creationTimestamp", NULL), now, age,
			sizeof(age));
	if (wide) {
		cJSON_ArrayForEach(l, ml) {
			if (cJSON_IsString(l) && l->string)
				es_buf_appendf(&sel, "%s%s=%s", sel.len ? "," : "",
					       l->string, l->valuestring);
		}
		if (sel.err != ES_OK) {
			es_buf_free(&sel);
			return ES_ERR_NOMEM;
		}
	}
	cells[0] = path_str(o, "metadata", "name", NULL);
	cells[1] = gen;
	cells[2] = age;
	cells[3] = sel.len ? sel.p : NULL;
	rc = es_print_table_add(t, cells);
	es_buf_free(&sel);
	return rc;
}

static es_err obj_row_narrow(es_print_table *t, const cJSON *o, time_t now)
{
	return obj_row(t, o, now, 0);
}

static es_err obj_row_wide(es_print_table *t, const cJSON *o, time_t now)
{
	return obj_row(t, o, now, 1);
}

es_err es_print_objects(FILE *f, const cJSON *v, int wide, time_t now)
{
	static const char *const head[] = { "NAME", "GENERATION", "AGE", "SELECTOR" };

	return print_rows(f, v, wide ? 4 : 3, head, wide ? obj_row_wide : obj_row_narrow,
			  now);
}

es_err es_print_value(FILE *f, const cJSON *v, es_print_fmt fmt, char *err,
		      size_t errsz)
{
	char *s;
	const char *p;

	if (fmt == ES_PRINT_YAML) {
		s = es_yaml_emit(v, err, errsz);
		if (!s)
			return err && *err && strstr(err, "memory") == NULL ? ES_ERR_INVAL
									    : ES_ERR_NOMEM;
		fputs(s, f);
		free(s);
		return ES_OK;
	}
	s = cJSON_Print(v);
	if (!s)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	/* cJSON indents with tabs and writes ":\t"; strings escape their tabs. */
	for (p = s; *p; p++) {
		if (*p != '\t')
			fputc(*p, f);
		else if (p == s || p[-1] == '\n' || p[-1] == '\t')
			fputs("    ", f);
		else
			fputc(' ', f);
	}
	fputc('\n', f);
	free(s);
	return ES_OK;
}

void es_print_server_error(FILE *f, const char *what, int status,
			   const char *body, size_t len)
{
	const cJSON *m = NULL, *rs = NULL;
	cJSON *st = NULL;

	if (body && len &&
	    es_json_parse(body, len, ES_JSON_MAX_DEPTH, &st, NULL, 0) == ES_OK) {
		m = cJSON_GetObjectItemCaseSensitive(st, "message");
		rs = cJSON_GetObjectItemCaseSensitive(st, "reason");
	}
	if (cJSON_IsString(m) && m->valuestring[0]) {
		if (cJSON_IsString(rs) && rs->valuestring[0])
			fprintf(f, "Error from server (%s): %s\n", rs->valuestring, m->valuestring);
		else
			fprintf(f, "Error from server: %s\n", m->valuestring);
	} else {
		/* Not a Status: a proxy's page, or a server that is no admin
		 * API (the agents' listener answers HTML). One line. */
		size_t n = body ? (len > 400 ? 400 : len) : 0;

		fprintf(f, "Error from server (HTTP %d): %s: not an answer of the edgesync admin "
			"API (is the server URL the controller's admin-listen address?)%s",
			status, what ? what : "request", n ? ": " : "");
		for (size_t i = 0; i < n; i++)
			fputc((unsigned char)body[i] < 0x20 || body[i] == 0x7f ? ' ' : body[i], f);
		fputc('\n', f);
	}
	cJSON_Delete(st);
}

static int whole_bytes(const cJSON *v, unsigned long long *out)
{
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > (double)ES_JSON_MAX_INT || v->valuedouble != floor(v->valuedouble))
		return 0;
	*out = (unsigned long long)v->valuedouble;
	return 1;
}

const char *es_print_fs_use(const cJSON *size, const cJSON *avail,
			    const cJSON *free_bytes, char *buf, size_t bufsz)
{
	unsigned long long sz, av, fr, used, total;

	if (!whole_bytes(size, &sz) || !whole_bytes(avail, &av) ||
	    !whole_bytes(free_bytes, &fr) || fr > sz) {
		snprintf(buf, bufsz, "<unknown>");
		return buf;
	}
	used = sz - fr;
	total = used + av;
	if (total == 0) {
		snprintf(buf, bufsz, "-");
		return buf;
	}
	/* both below 2^53, so used * 100 fits in 64 bits */
	snprintf(buf, bufsz, "%llu%%", (used * 100 + total - 1) / total);
	return buf;
}
