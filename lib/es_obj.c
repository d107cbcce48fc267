/*
 * es_obj.c - kinds, names, metadata accessors, node selectors and the
 * validation of desired objects (proto/PROTOCOL.md, "Objects"; Kubernetes
 * API conventions for names and labels).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>
#include <sys/random.h>

#include "es_obj.h"
#include "es_health.h"
#include "es_egress.h"
#include "es_json.h"
#include "es_time.h"

const char *const es_collector_names[5] = {
	"cpu", "memory", "filesystem", "network", "processes",
};

static es_err check_collector_spec(const cJSON *spec, char *err, size_t errsz);
static es_err check_health_spec(const cJSON *spec, char *err, size_t errsz);

/* One kind: its names and the check of its own spec members (NULL for a
 * kind that is reported by agents and never submitted). */
typedef struct kind_info {
	es_kind kind;
	const char *name;
	const char *plural;
	const char *shortname;
	es_err (*validate_spec)(const cJSON *spec, char *err, size_t errsz);
} kind_info;

static const kind_info kinds[] = {
	{ES_KIND_NODE, "Node", "nodes", "no", NULL},
	{ES_KIND_COLLECTOR_CONFIG, "CollectorConfig", "collectorconfigs", "cc",
	 check_collector_spec},
	{ES_KIND_HEALTH_RULE, "HealthRule", "healthrules", "hr", check_health_spec},
	{ES_KIND_EGRESS_POLICY, "EgressPolicy", "egresspolicies", "ep",
	 es_egress_spec_validate},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static const kind_info *kind_lookup(es_kind kind)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (kinds[i].kind == kind)
			return &kinds[i];
	return NULL;
}

/* The kind whose `kind` string is exactly s (case-sensitive). */
static es_kind kind_by_name(const char *s)
{
	for (size_t i = 0; s != NULL && i < NKINDS; i++)
		if (strcmp(s, kinds[i].name) == 0)
			return kinds[i].kind;
	return ES_KIND_UNKNOWN;
}

const char *es_obj_kind_name(es_kind kind)
{
	const kind_info *k = kind_lookup(kind);

	return k != NULL ? k->name : NULL;
}

const char *es_obj_kind_plural(es_kind kind)
{
	const kind_info *k = kind_lookup(kind);

	return k != NULL ? k->plural : NULL;
}

es_kind es_obj_kind_from_plural(const char *plural)
{
	for (size_t i = 0; plural != NULL && i < NKINDS; i++)
		if (strcmp(plural, kinds[i].plural) == 0)
			return kinds[i].kind;
	return ES_KIND_UNKNOWN;
}

es_kind es_obj_kind_parse(const char *s)
{
	if (s == NULL)
		return ES_KIND_UNKNOWN;
	for (size_t i = 0; i < NKINDS; i++)
		if (strcasecmp(s, kinds[i].name) == 0 ||
		    strcasecmp(s, kinds[i].plural) == 0 ||
		    strcasecmp(s, kinds[i].shortname) == 0)
			return kinds[i].kind;
	return ES_KIND_UNKNOWN;
}

static int is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* RFC 1123 DNS subdomain as Kubernetes checks it: dot-separated labels of
 * [a-z0-9-], each starting and ending alphanumeric, at most max bytes. */
static int subdomain_valid(const char *s, size_t len, size_t max)
{
	if (len == 0 || len > max)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		int edge = i == 0 || i + 1 == len || s[i - 1] == '.' || s[i + 1] == '.';

		if (c == '.') {
			if (i == 0 || i + 1 == len || s[i - 1] == '.')
				return 0;
		} else if (c == '-') {
			if (edge)
				return 0;
		} else if (!is_lower_alnum(c)) {
			return 0;
		}
	}
	return 1;
}

int es_obj_name_valid(const char *s)
{
	return s != NULL && subdomain_valid(s, strlen(s), ES_NAME_MAX);
}

/* Kubernetes "qualified name" part and label value syntax: at most 63 bytes
 * of [A-Za-z0-9-_.], starting and ending alphanumeric; empty only when
 * allow_empty. */
static int label_part_valid(const char *s, size_t len, int allow_empty)
{
	if (len == 0)
		return allow_empty;
	if (len > 63 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return 0;
	return 1;
}

/* s without leading and trailing white space (changed in place). */
static char *trim_space(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Label key: [prefix/]name, prefix a DNS subdomain of at most 253 bytes. */
static int label_key_valid(const char *k)
{
	const char *slash = strchr(k, '/');

	if (slash == NULL)
		return label_part_valid(k, strlen(k), 0);
	return subdomain_valid(k, (size_t)(slash - k), 253) &&
	       label_part_valid(slash + 1, strlen(slash + 1), 0);
}

/* Why s (len bytes) is not a label name part or value: "" when it is. */
static const char *label_part_why(const char *s, size_t len, int allow_empty,
				  char *why, size_t whysz)
{
	why[0] = '\0';
	if (len == 0 && !allow_empty)
		snprintf(why, whysz, "empty");
	else if (len > 63)
		snprintf(why, whysz, "%zu characters, at most 63", len);
	else if (!label_part_valid(s, len, allow_empty))
		snprintf(why, whysz, "expected [A-Za-z0-9._-], starting and ending "
			 "alphanumeric");
	return why;
}

/* Writes the error for a bad label key k (what names the flag or
 * setting); ES_OK when k is a valid key. */
static es_err label_key_err(const char *what, const char *k, char *err, size_t errsz)
{
	const char *slash = strchr(k, '/'), *name = slash ? slash + 1 : k;
	char why[96];

	if (!*k)
		return es_errf(ES_ERR_INVAL, err, errsz, "%s: empty label key", what);
	if (slash && !subdomain_valid(k, (size_t)(slash - k), 253))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "%s: label key \"%.80s\": prefix \"%.*s\" is not a DNS "
			       "subdomain (RFC 1123: at most 253 characters of [a-z0-9.-], "
			       "dot-separated, each part starting and ending alphanumeric)",
			       what, k, (int)((slash - k) > 80 ? 80 : (slash - k)), k);
	if (*label_part_why(name, strlen(name), 0, why, sizeof(why)))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "%s: label key \"%.80s\": name \"%.80s\": %s", what, k,
			       name, why);
	return ES_OK;
}

es_err es_obj_labels_parse(const char *s, const char *what, cJSON **out, char *err,
			   size_t errsz)
{
	cJSON *obj = cJSON_CreateObject();
	char *copy = strdup(s ? s : ""), *item, *save = NULL, why[96];
	const cJSON *prev;
	es_err rc = ES_ERR_NOMEM;

	*out = NULL;
	if (!obj || !copy)
		goto cleanup;
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *kv = trim_space(item), *eq = strchr(kv, '='), *k, *v;

		if (!*kv)
			continue;
		if (!eq) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s: bad label \"%.80s\": expected key=value", what, kv);
			goto cleanup;
		}
		*eq = '\0';
		k = trim_space(kv);
		v = trim_space(eq + 1);
		if ((rc = label_key_err(what, k, err, errsz)) != ES_OK)
			goto cleanup;
		if (*label_part_why(v, strlen(v), 1, why, sizeof(why))) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s: label \"%s\": value \"%.80s\": %s", what, k, v, why);
			goto cleanup;
		}
		if ((prev = cJSON_GetObjectItemCaseSensitive(obj, k))) {
			rc = es_errf(ES_ERR_INVAL, err, errsz,
				     "%s: label key \"%s\" given twice (%s=%.80s, %s=%.80s)",
				     what, k, k, prev->valuestring, k, v);
			goto cleanup;
		}
		if (!cJSON_AddStringToObject(obj, k, v)) {
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
	}
	*out = obj;
	obj = NULL;
	rc = ES_OK;
cleanup:
	if (rc == ES_ERR_NOMEM)
		es_errf(rc, err, errsz, "%s: out of memory", what);
	cJSON_Delete(obj);
	free(copy);
	return rc;
}

es_err es_obj_labels_check(const cJSON *labels, const char *path, char *err,
			   size_t errsz)
{
	const cJSON *m;

	if (!cJSON_IsObject(labels))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "%s: expected an object of strings", path);
	cJSON_ArrayForEach(m, labels) {
		if (m->string == NULL || !label_key_valid(m->string))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "%s: invalid label key \"%.80s\" ([prefix/]name, "
				       "name at most 63 characters of [A-Za-z0-9-_.], "
				       "starting and ending alphanumeric)",
				       path, m->string != NULL ? m->string : "");
		if (!cJSON_IsString(m) || m->valuestring == NULL)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "%s.%s: expected a string", path, m->string);
		if (!label_part_valid(m->valuestring, strlen(m->valuestring), 1))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "%s.%s: invalid label value \"%.80s\" (at most 63 "
				       "characters of [A-Za-z0-9-_.], starting and "
				       "ending alphanumeric)",
				       path, m->string, m->valuestring);
	}
	return ES_OK;
}

static es_err check_metadata(const cJSON *md, char *err, size_t errsz)
{
	const cJSON *it;
	const char *name = NULL, *s = NULL;
	int64_t n;
	time_t t;
	es_err rc;

	rc = es_json_get_str(md, "metadata", "name", 1, &name, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (!es_obj_name_valid(name))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "metadata.name: \"%.80s\" is not a valid name (RFC 1123 "
			       "DNS subdomain: at most 253 characters of [a-z0-9.-], "
			       "starting and ending alphanumeric)", name);
	it = cJSON_GetObjectItemCaseSensitive(md, "labels");
	if (it != NULL && (rc = es_obj_labels_check(it, "metadata.labels", err, errsz)) != ES_OK)
		return rc;
	rc = es_json_get_str(md, "metadata", "uid", 0, &s, err, errsz);
	if (rc == ES_ERR_INVAL)
		return rc;
	rc = es_json_get_int(md, "metadata", "generation", 0, 0, ES_JSON_MAX_INT,
			     &n, err, errsz);
	if (rc == ES_ERR_INVAL)
		return rc;
	rc = es_json_get_int(md, "metadata", "resourceVersion", 0, 0,
			     ES_JSON_MAX_INT, &n, err, errsz);
	if (rc == ES_ERR_INVAL)
		return rc;
	s = NULL;
	rc = es_json_get_str(md, "metadata", "creationTimestamp", 0, &s, err, errsz);
	if (rc == ES_ERR_INVAL)
		return rc;
	if (s != NULL && es_time_parse_rfc3339(s, &t) != 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "metadata.creationTimestamp: \"%.40s\" is not an RFC 3339 time", s);
	return ES_OK;
}

static es_err check_selector(const cJSON *spec, char *err, size_t errsz)
{
	const cJSON *sel = cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector");
	const cJSON *m;

	if (sel == NULL)
		return ES_OK;
	if (!cJSON_IsObject(sel))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.nodeSelector: expected an object");
	cJSON_ArrayForEach(m, sel) {
		if (m->string != NULL && strcmp(m->string, "matchLabels") == 0)
			continue;
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.nodeSelector.%.80s: unknown member (only "
			       "matchLabels is supported)", m->string ? m->string : "");
	}
	m = cJSON_GetObjectItemCaseSensitive(sel, "matchLabels");
	if (m == NULL)
		return ES_OK;
	return es_obj_labels_check(m, "spec.nodeSelector.matchLabels", err, errsz);
}

static int collector_index(const char *name)
{
	for (int i = 0; i < 5; i++)
		if (strcmp(name, es_collector_names[i]) == 0)
			return i;
	return -1;
}

/* Shared by validation and es_obj_collector_cfg: parses the CollectorConfig
 * members into cfg, with defaults for absent ones. */
static es_err parse_collector_spec(const cJSON *spec, es_collector_cfg *cfg,
				   char *err, size_t errsz)
{
	const cJSON *it;
	int i = 0;

	cfg->interval_s = ES_COLLECT_DEFAULT_INTERVAL;
	cfg->mask = ES_COLLECT_ALL;
	if (spec == NULL)
		return ES_OK;
	if (!cJSON_IsObject(spec))
		return es_errf(ES_ERR_INVAL, err, errsz, "spec: expected an object");
	it = cJSON_GetObjectItemCaseSensitive(spec, "intervalSeconds");
	if (it != NULL) {
		double d = cJSON_IsNumber(it) ? it->valuedouble : 0;

		if (!(d >= 1 && d <= 3600 && d == (double)(int)d))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.intervalSeconds: must be an integer in 1..3600");
		cfg->interval_s = (int)d;
	}
	it = cJSON_GetObjectItemCaseSensitive(spec, "collectors");
	if (it != NULL) {
		const cJSON *c;

		if (!cJSON_IsArray(it))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.collectors: expected an array of collector names");
		cfg->mask = 0;
		cJSON_ArrayForEach(c, it) {
			int idx;

			if (!cJSON_IsString(c) || c->valuestring == NULL)
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "spec.collectors[%d]: expected a string", i);
			idx = collector_index(c->valuestring);
			if (idx < 0)
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "spec.collectors[%d]: unknown collector \"%.40s\" "
					       "(expected cpu, memory, filesystem, network or "
					       "processes)", i, c->valuestring);
			if (cfg->mask & (1u << idx))
				return es_errf(ES_ERR_INVAL, err, errsz,
					       "spec.collectors[%d]: duplicate collector \"%s\"",
					       i, c->valuestring);
			cfg->mask |= 1u << idx;
			i++;
		}
	}
	return ES_OK;
}

static es_err check_collector_spec(const cJSON *spec, char *err, size_t errsz)
{
	static const char *const known[] = {"nodeSelector", "intervalSeconds",
					    "collectors"};
	es_collector_cfg cfg;
	const cJSON *m;

	cJSON_ArrayForEach(m, spec) {
		size_t i;

		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (m->string != NULL && strcmp(m->string, known[i]) == 0)
				break;
		if (i == sizeof(known) / sizeof(known[0]))
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.%.80s: unknown member of a CollectorConfig spec",
				       m->string != NULL ? m->string : "");
	}
	return parse_collector_spec(spec, &cfg, err, errsz);
}

static es_err check_health_spec(const cJSON *spec, char *err, size_t errsz)
{
	return es_health_rule_parse(spec, NULL, err, errsz);
}

es_err es_obj_validate_desired(const cJSON *obj, char *err, size_t errsz)
{
	const cJSON *md = NULL, *spec = NULL;
	const char *s = NULL;
	const kind_info *k;
	es_err rc;

	if (!cJSON_IsObject(obj))
		return es_errf(ES_ERR_INVAL, err, errsz, "object: expected a JSON object");
	rc = es_json_get_str(obj, NULL, "apiVersion", 1, &s, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (strcmp(s, ES_API_VERSION) != 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "apiVersion: must be \"%s\", got \"%.80s\"",
			       ES_API_VERSION, s);
	rc = es_json_get_str(obj, NULL, "kind", 1, &s, err, errsz);
	if (rc != ES_OK)
		return rc;
	k = kind_lookup(kind_by_name(s));
	if (k == NULL)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "kind: unknown kind \"%.80s\" (expected CollectorConfig, "
			       "HealthRule or EgressPolicy)", s);
	if (k->validate_spec == NULL)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "kind: %s is reported by agents and cannot be submitted",
			       k->name);
	rc = es_json_get_obj(obj, NULL, "metadata", 1, &md, err, errsz);
	if (rc != ES_OK)
		return rc;
	rc = check_metadata(md, err, errsz);
	if (rc != ES_OK)
		return rc;
	rc = es_json_get_obj(obj, NULL, "spec", 1, &spec, err, errsz);
	if (rc != ES_OK)
		return rc;
	rc = check_selector(spec, err, errsz);
	if (rc != ES_OK)
		return rc;
	return k->validate_spec(spec, err, errsz);
}

static const cJSON *metadata(const cJSON *obj)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

	return cJSON_IsObject(md) ? md : NULL;
}

static const char *str_member(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static int64_t int_member(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	double d;

	if (!cJSON_IsNumber(it))
		return 0;
	d = it->valuedouble;
	if (!(d >= -(double)ES_JSON_MAX_INT && d <= (double)ES_JSON_MAX_INT))
		return 0;
	return (int64_t)d;
}

const char *es_obj_name(const cJSON *obj)
{
	return str_member(metadata(obj), "name");
}

const char *es_obj_kind_str(const cJSON *obj)
{
	return str_member(obj, "kind");
}

es_kind es_obj_kind(const cJSON *obj)
{
	return kind_by_name(es_obj_kind_str(obj));
}

const char *es_obj_uid(const cJSON *obj)
{
	return str_member(metadata(obj), "uid");
}

int64_t es_obj_generation(const cJSON *obj)
{
	return int_member(metadata(obj), "generation");
}

int64_t es_obj_resource_version(const cJSON *obj)
{
	return int_member(metadata(obj), "resourceVersion");
}

int es_obj_selects(const cJSON *obj, const cJSON *labels)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	const cJSON *sel = cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector");
	const cJSON *ml, *m;

	if (sel == NULL)
		return 1;
	if (!cJSON_IsObject(sel))
		return 0;
	ml = cJSON_GetObjectItemCaseSensitive(sel, "matchLabels");
	if (ml == NULL)
		return 1;
	if (!cJSON_IsObject(ml))
		return 0;
	cJSON_ArrayForEach(m, ml) {
		const cJSON *l;

		if (m->string == NULL || !cJSON_IsString(m) || m->valuestring == NULL)
			return 0;
		l = cJSON_GetObjectItemCaseSensitive(labels, m->string);
		if (!cJSON_IsString(l) || l->valuestring == NULL ||
		    strcmp(l->valuestring, m->valuestring) != 0)
			return 0;
	}
	return 1;
}

es_err es_obj_collector_cfg(const cJSON *spec, es_collector_cfg *cfg,
			    char *err, size_t errsz)
{
	es_collector_cfg tmp;
	es_err rc;

	if (cfg == NULL)
		return es_errf(ES_ERR_INVAL, err, errsz, "es_obj_collector_cfg: cfg is NULL");
	rc = parse_collector_spec(spec, &tmp, err, errsz);
	if (rc == ES_OK)
		*cfg = tmp;
	return rc;
}

es_err es_obj_new_uid(char buf[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[16];
	size_t got = 0;
	char *p = buf;

	while (got < sizeof(r)) {
		ssize_t n = getrandom(r + got, sizeof(r) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return ES_ERR_IO;
		got += (size_t)n;
	}
	/* RFC 4122 section 4.4: version 4, variant 10x. */
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[r[i] >> 4];
		*p++ = hex[r[i] & 0xf];
	}
	*p = '\0';
	return ES_OK;
}
