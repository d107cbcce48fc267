/*
 * es_config.c - table-driven settings: defaults, config file, EDGESYNC_*
 * environment, command-line flags (es_config.h has the file format).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "es_config.h"

/* Room for a shown value: up to SHOW_MAX input bytes, each at most 4
 * output bytes ("\xNN"), and "..." and the NUL. */
#define SHOW_MAX 80
#define SHOW_SIZE (SHOW_MAX * 4 + 4)

/* Bytes of the UTF-8 sequence at s (RFC 3629 section 4) that is printable
 * text, or 0: a control character (C0, DEL, C1), a byte order mark
 * (U+FEFF), or bytes that are not UTF-8. */
static size_t text_seq(const unsigned char *s)
{
	size_t n, i;

	if (s[0] >= 0x20 && s[0] < 0x7f)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0; /* overlong, a surrogate, over U+10FFFF */
	if ((s[0] == 0xc2 && s[1] < 0xa0) ||
	    (s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf))
		return 0; /* C1 control, byte order mark */
	return n;
}

/* s as a message shows it, into buf (SHOW_SIZE bytes): at most SHOW_MAX
 * bytes of it ("..." after a cut), every byte that is not printable UTF-8
 * text as \xNN, so that a value cannot garble the terminal or hide. */
static const char *shown(const char *s, char *buf)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t in = 0, out = 0, n;

	while (p[in] && in < SHOW_MAX) {
		n = text_seq(p + in);
		if (n == 0) {
			out += (size_t)snprintf(buf + out, SHOW_SIZE - out, "\\x%02x", p[in]);
			in++;
			continue;
		}
		memcpy(buf + out, p + in, n);
		out += n;
		in += n;
	}
	if (p[in]) {
		memcpy(buf + out, "...", 3);
		out += 3;
	}
	buf[out] = '\0';
	return buf;
}

static const es_setting *by_key(const es_setting *t, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].key != NULL && strcmp(t[i].key, key) == 0)
			return &t[i];
	return NULL;
}

static const es_setting *by_flag(const es_setting *t, size_t n,
				 const char *flag, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].flag != NULL && strlen(t[i].flag) == len &&
		    strncmp(t[i].flag, flag, len) == 0)
			return &t[i];
	return NULL;
}

/* An ES_SET_INT with min == max == 0 has no bounds beyond int64_t. */
static void int_bounds(const es_setting *s, int64_t *min, int64_t *max)
{
	*min = s->min;
	*max = s->max;
	if (s->min == 0 && s->max == 0) {
		*min = INT64_MIN;
		*max = INT64_MAX;
	}
}

static int parse_bool(const char *v, int *out)
{
	static const char *const yes[] = {"true", "yes", "1", "on"};
	static const char *const no[] = {"false", "no", "0", "off"};

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

/* Index of value in the NULL-terminated names, ignoring ASCII case (every
 * enumeration, as booleans), or -1. */
static int enum_index(const es_setting *s, const char *value)
{
	for (int i = 0; s->names != NULL && s->names[i] != NULL; i++)
		if (strcasecmp(value, s->names[i]) == 0)
			return i;
	return -1;
}

/* Writes the names of s as "a, b or c" into buf. */
static void enum_list(const es_setting *s, const char *sep, const char *last,
		      char *buf, size_t sz)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; s->names != NULL && s->names[i] != NULL && n < sz; i++) {
		int w = snprintf(buf + n, sz - n, "%s%s",
				 i == 0 ? "" : s->names[i + 1] ? sep : last,
				 s->names[i]);

		n += w > 0 ? (size_t)w : 0;
	}
}

/* Stores value into cfg. On a bad value writes "<problem>" (without the
 * setting's name, which the caller prefixes) into err. */
static es_err set_value(const es_setting *s, void *cfg, const char *value,
			char *err, size_t errsz)
{
	char *field = (char *)cfg + s->offset;
	char show[SHOW_SIZE];

	switch (s->type) {
	case ES_SET_STRING: {
		char *dup = strdup(value);
		char **dst = (char **)(void *)field;

		if (dup == NULL)
			return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		free(*dst);
		*dst = dup;
		return ES_OK;
	}
	case ES_SET_INT: {
		int64_t min, max;
		long long v;
		char *end = NULL;

		int_bounds(s, &min, &max);
		errno = 0;
		v = strtoll(value, &end, 10);
		if (*value == '\0' || *end != '\0' || errno != 0 ||
		    (*value != '-' && (*value < '0' || *value > '9')) ||
		    v < min || v > max)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "expected an integer in %lld..%lld, got \"%s\"",
				       (long long)min, (long long)max, shown(value, show));
		*(int64_t *)(void *)field = (int64_t)v;
		return ES_OK;
	}
	case ES_SET_BOOL: {
		int b;

		if (parse_bool(value, &b) < 0)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "expected true/false, yes/no, on/off or 1/0, got \"%s\"",
				       shown(value, show));
		*(int *)(void *)field = b;
		return ES_OK;
	}
	case ES_SET_ENUM: {
		char list[256];
		int i = enum_index(s, value);

		if (s->names == NULL || s->names[0] == NULL)
			return es_errf(ES_ERR_INVAL, err, errsz, "setting has no allowed values");
		if (i < 0) {
			enum_list(s, ", ", " or ", list, sizeof(list));
			return es_errf(ES_ERR_INVAL, err, errsz, "\"%s\": expected %s",
				       shown(value, show), list);
		}
		*(int *)(void *)field = i;
		return ES_OK;
	}
	}
	return es_errf(ES_ERR_INVAL, err, errsz, "setting has an unknown type");
}

/* Rewrites err as "<prefix>: <err>". */
static es_err prefix_err(es_err rc, char *err, size_t errsz, const char *pre)
{
	char inner[256];

	if (err == NULL || errsz == 0)
		return rc;
	snprintf(inner, sizeof(inner), "%s", err);
	return es_errf(rc, err, errsz, "%s: %s", pre, inner);
}

es_err es_config_defaults(const es_setting *table, size_t n, void *cfg,
			  char *err, size_t errsz)
{
	for (size_t i = 0; i < n; i++) {
		es_err rc;

		if (table[i].def == NULL)
			continue;
		rc = set_value(&table[i], cfg, table[i].def, err, errsz);
		if (rc != ES_OK)
			return prefix_err(rc, err, errsz, table[i].key);
	}
	return ES_OK;
}

es_err es_config_set(const es_setting *table, size_t n, void *cfg,
		     const char *key, const char *value, char *err, size_t errsz)
{
	const es_setting *s;
	char show[SHOW_SIZE];
	es_err rc;

	if (key == NULL || value == NULL)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_config_set: key or value is NULL");
	s = by_key(table, n, key);
	if (s == NULL)
		return es_errf(ES_ERR_NOTFOUND, err, errsz, "unknown key \"%s\"",
			       shown(key, show));
	rc = set_value(s, cfg, value, err, errsz);
	if (rc != ES_OK)
		return prefix_err(rc, err, errsz, key);
	return ES_OK;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static char *trim(char *s)
{
	char *e;

	while (is_space(*s))
		s++;
	e = s + strlen(s);
	while (e > s && is_space(e[-1]))
		*--e = '\0';
	return s;
}

/* Removes surrounding double quotes in place, resolving \" and \\ inside.
 * Returns 0, or -1 when the quotes are unbalanced. */
static int unquote(char *v)
{
	size_t len = strlen(v);
	char *r, *w;

	if (len == 0 || v[0] != '"')
		return 0;
	r = v + 1;
	w = v;
	while (*r != '\0' && *r != '"') {
		if (*r == '\\' && (r[1] == '"' || r[1] == '\\'))
			r++;
		*w++ = *r++;
	}
	if (*r != '"' || r[1] != '\0')
		return -1;
	*w = '\0';
	return 0;
}

es_err es_config_load_file(const es_setting *table, size_t n, void *cfg,
			   const char *path, char *err, size_t errsz)
{
	FILE *f = NULL;
	char *line = NULL;
	size_t cap = 0;
	unsigned long lineno = 0, *seen = NULL; /* line of each key, 0: not yet */
	ssize_t len;
	es_err rc = ES_OK;

	if (path == NULL)
		return es_errf(ES_ERR_INVAL, err, errsz, "config file path is NULL");
	seen = calloc(n ? n : 1, sizeof(*seen));
	if (seen == NULL)
		return es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
	f = fopen(path, "re");
	if (f == NULL) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
		goto cleanup;
	}
	errno = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *p, *eq, *key, *value, show[SHOW_SIZE];
		const es_setting *s;

		lineno++;
		if ((size_t)len != strlen(line)) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s:%lu: NUL byte in line", path, lineno);
			goto cleanup;
		}
		p = trim(line);
		if (*p == '\0' || *p == '#')
			continue;
		eq = strchr(p, '=');
		if (eq == NULL) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s:%lu: expected \"key = value\"", path, lineno);
			goto cleanup;
		}
		*eq = '\0';
		key = trim(p);
		value = trim(eq + 1);
		if (*key == '\0') {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s:%lu: missing key before '='", path, lineno);
			goto cleanup;
		}
		s = by_key(table, n, key);
		if (s == NULL) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s:%lu: unknown key \"%s\"", path, lineno,
				     shown(key, show));
			goto cleanup;
		}
		if (seen[s - table]) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s:%lu: %s: set twice (first on line %lu)", path,
				     lineno, key, seen[s - table]);
			goto cleanup;
		}
		seen[s - table] = lineno;
		if (unquote(value) < 0) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s:%lu: %s: unbalanced double quotes", path,
				     lineno, key);
			goto cleanup;
		}
		rc = set_value(s, cfg, value, err, errsz);
		if (rc != ES_OK) {
			char where[512];

			snprintf(where, sizeof(where), "%s:%lu: %s", path, lineno, key);
			rc = prefix_err(rc, err, errsz, where);
			goto cleanup;
		}
		errno = 0;
	}
	if (ferror(f)) {
		rc = es_errf(ES_ERR_IO, err, errsz, "%s: %s", path,
			     strerror(errno ? errno : EIO));
		goto cleanup;
	}
	if (errno == ENOMEM) {
		rc = es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
		goto cleanup;
	}
cleanup:
	free(line);
	free(seen);
	if (f != NULL)
		fclose(f);
	return rc;
}

es_err es_config_load_env(const es_setting *table, size_t n, void *cfg,
			  char *err, size_t errsz)
{
	for (size_t i = 0; i < n; i++) {
		const char *v;
		es_err rc;

		if (table[i].env == NULL || (v = getenv(table[i].env)) == NULL)
			continue;
		/* "" is no integer, boolean or list value: such a variable set
		 * empty (VAR= in a unit file or a shell) is as if unset. A
		 * string's "" is a value (an empty controller-url: offline). */
		if (*v == '\0' && table[i].type != ES_SET_STRING)
			continue;
		rc = set_value(&table[i], cfg, v, err, errsz);
		if (rc != ES_OK)
			return prefix_err(rc, err, errsz, table[i].env);
	}
	return ES_OK;
}

es_err es_config_load_args(const es_setting *table, size_t n, void *cfg,
			   int argc, char **argv, int first,
			   const char **positional, int *npositional,
			   char *err, size_t errsz)
{
	int npos = 0, only_pos = 0;

	if (npositional != NULL)
		*npositional = 0;
	for (int i = first < 0 ? 0 : first; i < argc; i++) {
		const char *a = argv[i], *name, *eq, *value;
		char show[SHOW_SIZE], flag[SHOW_MAX + 1];
		const es_setting *s;
		size_t nlen;
		es_err rc;

		if (a == NULL)
			continue;
		if (!only_pos && strcmp(a, "--") == 0) {
			only_pos = 1;
			continue;
		}
		if (only_pos || a[0] != '-' || a[1] == '\0') {
			if (positional == NULL)
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "unexpected argument \"%s\"", shown(a, show));
			positional[npos++] = a;
			if (npositional != NULL)
				*npositional = npos;
			continue;
		}
		if (a[1] != '-')
			return es_errf(ES_ERR_INVAL, err, errsz, "unknown flag %s",
				       shown(a, show));
		name = a + 2;
		eq = strchr(name, '=');
		nlen = eq != NULL ? (size_t)(eq - name) : strlen(name);
		if (nlen == 6 && strncmp(name, "config", 6) == 0) {
			if (eq == NULL && ++i >= argc)
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "--config: missing value");
			continue;
		}
		s = by_flag(table, n, name, nlen);
		if (s == NULL) {
			snprintf(flag, sizeof(flag), "%.*s",
				 (int)(nlen > SHOW_MAX ? SHOW_MAX : nlen), name);
			return es_errf(ES_ERR_INVAL, err, errsz, "unknown flag --%s",
				       shown(flag, show));
		}
		if (eq != NULL) {
			value = eq + 1;
		} else if (s->type == ES_SET_BOOL) {
			value = "true";
		} else {
			if (i + 1 >= argc || argv[i + 1] == NULL)
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "--%s: missing value", s->flag);
			value = argv[++i];
		}
		rc = set_value(s, cfg, value, err, errsz);
		if (rc != ES_OK) {
			char pre[128];

			snprintf(pre, sizeof(pre), "--%s", s->flag);
			return prefix_err(rc, err, errsz, pre);
		}
	}
	return ES_OK;
}

const char *es_config_find_file(int argc, char **argv, int first,
				const char *env_var)
{
	const char *v;

	for (int i = first < 0 ? 0 : first; i < argc; i++) {
		const char *a = argv[i];

		if (a == NULL)
			continue;
		if (strcmp(a, "--") == 0)
			break;
		if (strcmp(a, "--config") == 0)
			return i + 1 < argc ? argv[i + 1] : NULL;
		if (strncmp(a, "--config=", 9) == 0)
			return a + 9;
	}
	if (env_var != NULL && (v = getenv(env_var)) != NULL && *v != '\0')
		return v;
	return NULL;
}

void es_config_free(const es_setting *table, size_t n, void *cfg)
{
	if (table == NULL || cfg == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		char **dst;

		if (table[i].type != ES_SET_STRING)
			continue;
		dst = (char **)(void *)((char *)cfg + table[i].offset);
		free(*dst);
		*dst = NULL;
	}
}

void es_config_print_help(const es_setting *table, size_t n, void *file)
{
	FILE *f = file != NULL ? file : stdout;

	for (size_t i = 0; i < n; i++) {
		const es_setting *s = &table[i];
		char left[128];

		if (s->flag != NULL)
			snprintf(left, sizeof(left), "--%s%s", s->flag,
				 s->type == ES_SET_INT ? " N" :
				 s->type == ES_SET_STRING ||
				 s->type == ES_SET_ENUM ? " VALUE" : "");
		else
			snprintf(left, sizeof(left), "(file: %s)", s->key);
		fprintf(f, "  %-28s %s", left, s->help != NULL ? s->help : "");
		if (s->type == ES_SET_INT && !(s->min == 0 && s->max == 0))
			fprintf(f, " (%lld..%lld)", (long long)s->min, (long long)s->max);
		if (s->type == ES_SET_ENUM) {
			char list[256];

			enum_list(s, "|", "|", list, sizeof(list));
			fprintf(f, " (%s)", list);
		}
		if (s->def != NULL)
			fprintf(f, " [default: %s]", s->def);
		if (s->env != NULL)
			fprintf(f, " [env: %s]", s->env);
		fputc('\n', f);
	}
}
