/*
 * es_health.c - HealthRule specs: metric catalogue, operators, durations,
 * validation, and metric values read from a Node status (es_health.h;
 * PROTOCOL.md "HealthRule").
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "es_cond.h"
#include "es_health.h"

enum {
	M_CPU_UTILIZATION,
	M_LOAD1,
	M_LOAD5,
	M_LOAD15,
	M_MEM_AVAILABLE_BYTES,
	M_MEM_AVAILABLE_RATIO,
	M_FS_ROOT_AVAILABLE_BYTES,
	M_FS_ROOT_AVAILABLE_RATIO,
	M_FS_ROOT_INODES_FREE_RATIO,
	M_FS_AVAILABLE_RATIO,
	M_NET_INTERFACES,
	M_PROC_COUNT,
	M_PROC_THREADS,
	M_PROC_RUNNING,
	M_PROC_BLOCKED,
	M_PROC_PID_USAGE_RATIO,
	M_COUNT
};

/* Indexed by the enum above. */
static const es_health_metric_info metrics[M_COUNT] = {
	{"cpu.utilization", "cpu", "usage.cpu.utilization", "ratio 0..1"},
	{"load.load1", "cpu", "usage.load.load1", "runnable tasks"},
	{"load.load5", "cpu", "usage.load.load5", "runnable tasks"},
	{"load.load15", "cpu", "usage.load.load15", "runnable tasks"},
	{"memory.availableBytes", "memory", "usage.memory.MemAvailable", "bytes"},
	{"memory.availableRatio", "memory",
	 "usage.memory.MemAvailable / usage.memory.MemTotal", "ratio 0..1"},
	{"filesystem.rootAvailableBytes", "filesystem",
	 "usage.filesystems[mountpoint \"/\"].availBytes", "bytes"},
	{"filesystem.rootAvailableRatio", "filesystem",
	 "usage.filesystems[mountpoint \"/\"].availBytes / sizeBytes", "ratio 0..1"},
	{"filesystem.rootInodesFreeRatio", "filesystem",
	 "usage.filesystems[mountpoint \"/\"].filesFree / files", "ratio 0..1"},
	{"filesystem.availableRatio", "filesystem",
	 "lowest availBytes / sizeBytes over usage.filesystems", "ratio 0..1"},
	{"network.interfaces", "network",
	 "number of usage.network entries other than lo", "count"},
	{"processes.count", "processes", "usage.processes.count", "count"},
	{"processes.threads", "processes", "usage.processes.threads", "count"},
	{"processes.running", "processes", "usage.processes.running", "count"},
	{"processes.blocked", "processes", "usage.processes.blocked", "count"},
	{"processes.pidUsageRatio", "processes",
	 "usage.processes.count / kernel.pid_max", "ratio 0..1"},
};

size_t es_health_metric_count(void)
{
	return M_COUNT;
}

const es_health_metric_info *es_health_metric_at(size_t i)
{
	return i < M_COUNT ? &metrics[i] : NULL;
}

int es_health_metric_find(const char *name)
{
	if (name == NULL)
		return -1;
	for (int i = 0; i < M_COUNT; i++)
		if (strcmp(name, metrics[i].name) == 0)
			return i;
	return -1;
}

static const char *const op_names[] = {NULL, "Gt", "Ge", "Lt", "Le", "Eq", "Ne"};
#define NOPS ((int)(sizeof(op_names) / sizeof(op_names[0])))

const char *es_health_op_name(es_health_op op)
{
	return (int)op > 0 && (int)op < NOPS ? op_names[op] : NULL;
}

es_health_op es_health_op_parse(const char *s)
{
	if (s == NULL)
		return 0;
	for (int i = 1; i < NOPS; i++)
		if (strcmp(s, op_names[i]) == 0)
			return (es_health_op)i;
	return 0;
}

int es_health_compare(es_health_op op, double value, double threshold)
{
	switch (op) {
	case ES_HEALTH_GT: return value > threshold;
	case ES_HEALTH_GE: return value >= threshold;
	case ES_HEALTH_LT: return value < threshold;
	case ES_HEALTH_LE: return value <= threshold;
	case ES_HEALTH_EQ: return value == threshold;
	case ES_HEALTH_NE: return value != threshold;
	}
	return 0;
}

/* Duration units of Go's time.ParseDuration, in nanoseconds. */
static const struct {
	const char *name;
	uint64_t ns;
} units[] = {
	{"ns", 1ULL},
	{"us", 1000ULL},
	{"\xc2\xb5s", 1000ULL}, /* U+00B5 micro sign */
	{"\xce\xbcs", 1000ULL}, /* U+03BC Greek small mu */
	{"ms", 1000000ULL},
	{"s", 1000000000ULL},
	{"m", 60ULL * 1000000000ULL},
	{"h", 3600ULL * 1000000000ULL},
};

es_err es_health_duration_parse(const char *s, int64_t *ms, char *err,
				size_t errsz)
{
	const uint64_t max_ns = (uint64_t)ES_HEALTH_FOR_MAX_MS * 1000000ULL;
	const char *p = s;
	uint64_t total = 0;
	int neg = 0;

	if (s == NULL || *s == '\0')
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "empty duration (write e.g. \"60s\", \"5m\" or \"1h30m\")");
	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if (strcmp(p, "0") == 0) {
		*ms = 0;
		return ES_OK;
	}
	if (*p == '\0')
		return es_errf(ES_ERR_INVAL, err, errsz, "invalid duration \"%.40s\"", s);
	while (*p != '\0') {
		uint64_t whole = 0, frac = 0, scale = 1, unit = 0;
		int digits = 0, too_big = 0;
		const char *u;
		size_t ulen, i;

		for (; *p >= '0' && *p <= '9'; p++, digits++) {
			if (whole > max_ns)
				too_big = 1;
			else
				whole = whole * 10 + (uint64_t)(*p - '0');
		}
		if (*p == '.') {
			for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
				if (scale < 1000000000000000000ULL) {
					frac = frac * 10 + (uint64_t)(*p - '0');
					scale *= 10;
				}
			}
		}
		if (digits == 0)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "invalid duration \"%.40s\" (expected a number at "
				       "\"%.20s\")", s, p);
		u = p;
		while (*p != '\0' && *p != '.' && !(*p >= '0' && *p <= '9'))
			p++;
		ulen = (size_t)(p - u);
		if (ulen == 0)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "missing unit in duration \"%.40s\" (use h, m, s, "
				       "ms, us or ns)", s);
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strlen(units[i].name) == ulen &&
			    memcmp(units[i].name, u, ulen) == 0)
				unit = units[i].ns;
		if (unit == 0)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "unknown unit \"%.*s\" in duration \"%.40s\" (use "
				       "h, m, s, ms, us or ns)", (int)(ulen > 10 ? 10 : ulen),
				       u, s);
		if (too_big || whole > max_ns / unit)
			goto too_long;
		total += whole * unit;
		total += (uint64_t)((double)frac / (double)scale * (double)unit);
		if (total > max_ns)
			goto too_long;
	}
	if (neg && total > 0)
		return es_errf(ES_ERR_INVAL, err, errsz, "negative duration \"%.40s\"", s);
	*ms = (int64_t)((total + 999999ULL) / 1000000ULL);
	return ES_OK;
too_long:
	if (neg)
		return es_errf(ES_ERR_INVAL, err, errsz, "negative duration \"%.40s\"", s);
	return es_errf(ES_ERR_INVAL, err, errsz,
		       "duration \"%.40s\" is longer than 8760h", s);
}

char *es_health_duration_format(int64_t ms, char *buf, size_t sz)
{
	int64_t h, m, s, rest;
	size_t n = 0;
	int w;

	if (sz == 0)
		return buf;
	buf[0] = '\0';
	if (ms <= 0) {
		snprintf(buf, sz, "0s");
		return buf;
	}
	if (ms < 1000) {
		snprintf(buf, sz, "%lldms", (long long)ms);
		return buf;
	}
	h = ms / 3600000;
	m = ms / 60000 % 60;
	s = ms / 1000 % 60;
	rest = ms % 1000;
	if (h > 0) {
		w = snprintf(buf + n, sz - n, "%lldh", (long long)h);
		n += w > 0 ? (size_t)w : 0;
	}
	if (m > 0 && n < sz) {
		w = snprintf(buf + n, sz - n, "%lldm", (long long)m);
		n += w > 0 ? (size_t)w : 0;
	}
	if ((s > 0 || rest > 0) && n < sz) {
		char frac[8] = "";

		if (rest > 0) {
			snprintf(frac, sizeof(frac), ".%03lld", (long long)rest);
			for (size_t i = strlen(frac) - 1; frac[i] == '0'; i--)
				frac[i] = '\0';
		}
		snprintf(buf + n, sz - n, "%lld%ss", (long long)s, frac);
	}
	return buf;
}

char *es_health_format_value(double v, char *buf, size_t sz)
{
	if (v > -1e15 && v < 1e15 && v == (double)(long long)v)
		snprintf(buf, sz, "%lld", (long long)v);
	else
		snprintf(buf, sz, "%.4g", v);
	return buf;
}

static const char *const builtin_types[] = {
	"MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable",
};

int es_health_is_builtin(const char *type)
{
	if (type == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(builtin_types) / sizeof(builtin_types[0]); i++)
		if (strcmp(type, builtin_types[i]) == 0)
			return 1;
	return 0;
}

static const char *const spec_members[] = {
	"nodeSelector", "metric", "operator", "threshold", "for",
	"conditionType", "severity",
};

/* spec.<key> as a string: ES_ERR_NOTFOUND when absent (and not required),
 * ES_ERR_INVAL with err when of another type or required and absent. */
static es_err get_string(const cJSON *spec, const char *key, int required,
			 const char *expect, const char **out, char *err,
			 size_t errsz)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(spec, key);

	if (it == NULL && !required)
		return ES_ERR_NOTFOUND;
	if (it == NULL)
		return es_errf(ES_ERR_INVAL, err, errsz, "spec.%s: required (%s)", key,
			       expect);
	if (!cJSON_IsString(it) || it->valuestring == NULL)
		return es_errf(ES_ERR_INVAL, err, errsz, "spec.%s: expected %s", key,
			       expect);
	*out = it->valuestring;
	return ES_OK;
}

static es_err metric_error(const char *name, char *err, size_t errsz)
{
	char known[512];
	size_t n = 0;

	known[0] = '\0';
	for (int i = 0; i < M_COUNT && n < sizeof(known); i++) {
		int w = snprintf(known + n, sizeof(known) - n, "%s%s",
				 i ? ", " : "", metrics[i].name);

		n += w > 0 ? (size_t)w : 0;
	}
	return es_errf(ES_ERR_INVAL, err, errsz,
		       "spec.metric: unknown metric \"%.60s\"; known: %s", name, known);
}

es_err es_health_rule_parse(const cJSON *spec, es_health_rule *out, char *err,
			    size_t errsz)
{
	es_health_rule r;
	const cJSON *m;
	const char *s = NULL;
	char derr[160];
	es_err rc;

	memset(&r, 0, sizeof(r));
	if (!cJSON_IsObject(spec))
		return es_errf(ES_ERR_INVAL, err, errsz, "spec: expected an object");
	cJSON_ArrayForEach(m, spec) {
		size_t i, n = sizeof(spec_members) / sizeof(spec_members[0]);

		for (i = 0; i < n; i++)
			if (m->string != NULL && strcmp(m->string, spec_members[i]) == 0)
				break;
		if (i == n)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.%.80s: unknown member of a HealthRule spec "
				       "(known: nodeSelector, metric, operator, threshold, "
				       "for, conditionType, severity)",
				       m->string != NULL ? m->string : "");
	}

	rc = get_string(spec, "metric", 1, "a metric name such as \"processes.count\"",
			&s, err, errsz);
	if (rc != ES_OK)
		return rc;
	r.metric = es_health_metric_find(s);
	if (r.metric < 0)
		return metric_error(s, err, errsz);

	rc = get_string(spec, "operator", 1, "one of Gt, Ge, Lt, Le, Eq, Ne", &s,
			err, errsz);
	if (rc != ES_OK)
		return rc;
	r.op = es_health_op_parse(s);
	if (r.op == 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.operator: unknown operator \"%.20s\" (expected Gt, "
			       "Ge, Lt, Le, Eq or Ne: metric >, >=, <, <=, == or != "
			       "threshold)", s);

	m = cJSON_GetObjectItemCaseSensitive(spec, "threshold");
	if (m == NULL)
		return es_errf(ES_ERR_INVAL, err, errsz, "spec.threshold: required (a number)");
	if (!cJSON_IsNumber(m))
		return es_errf(ES_ERR_INVAL, err, errsz, "spec.threshold: expected a number");
	r.threshold = m->valuedouble;

	rc = get_string(spec, "for", 0, "a duration string such as \"60s\", \"5m\" or "
			"\"1h30m\"", &s, err, errsz);
	if (rc == ES_OK) {
		if (es_health_duration_parse(s, &r.for_ms, derr, sizeof(derr)) != ES_OK)
			return es_errf(ES_ERR_INVAL, err, errsz, "spec.for: %s", derr);
	} else if (rc != ES_ERR_NOTFOUND) {
		return rc;
	}

	rc = get_string(spec, "conditionType", 1, "a CamelCase condition type such "
			"as \"ManyProcesses\"", &s, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (!es_cond_is_camel(s) || strlen(s) > ES_HEALTH_TYPE_MAX)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.conditionType: \"%.80s\" is not a CamelCase condition "
			       "type (an upper-case letter, then letters and digits, at "
			       "most %d characters)", s, ES_HEALTH_TYPE_MAX);
	if (strcmp(s, "Ready") == 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.conditionType: Ready summarises the other conditions "
			       "and cannot be set by a rule");
	snprintf(r.condition_type, sizeof(r.condition_type), "%s", s);

	rc = get_string(spec, "severity", 0, "Warning or Critical", &s, err, errsz);
	if (rc == ES_OK) {
		if (strcmp(s, "Critical") == 0)
			r.severity = ES_HEALTH_CRITICAL;
		else if (strcmp(s, "Warning") == 0)
			r.severity = ES_HEALTH_WARNING;
		else
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "spec.severity: unknown severity \"%.40s\" (expected "
				       "Warning or Critical)", s);
	} else if (rc != ES_ERR_NOTFOUND) {
		return rc;
	}
	if (out != NULL)
		*out = r;
	return ES_OK;
}

/* The entry of status.collectors called name, or NULL. */
static const cJSON *collector(const cJSON *status, const char *name)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "collectors")) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");

		if (cJSON_IsString(n) && n->valuestring && strcmp(n->valuestring, name) == 0)
			return c;
	}
	return NULL;
}

static es_err missing(char *why, size_t whysz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static es_err missing(char *why, size_t whysz, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && whysz > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whysz, fmt, ap);
		va_end(ap);
	}
	return ES_ERR_NOTFOUND;
}

/* A number member of obj, or NULL. */
static const cJSON *num(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(it) ? it : NULL;
}

/* The usage.filesystems entry mounted at "/", or NULL. */
static const cJSON *root_fs(const cJSON *usage)
{
	const cJSON *fs;

	cJSON_ArrayForEach(fs, cJSON_GetObjectItemCaseSensitive(usage, "filesystems")) {
		const cJSON *mp = cJSON_GetObjectItemCaseSensitive(fs, "mountpoint");

		if (cJSON_IsString(mp) && mp->valuestring && strcmp(mp->valuestring, "/") == 0)
			return fs;
	}
	return NULL;
}

/* *v = a / b of two number members of obj; NOTFOUND when absent or b <= 0. */
static es_err ratio(const cJSON *obj, const char *a, const char *b, double *v,
		    const char *what, char *why, size_t whysz)
{
	const cJSON *x = num(obj, a), *y = num(obj, b);

	if (x == NULL || y == NULL || y->valuedouble <= 0)
		return missing(why, whysz, "%s not collected or zero", what);
	*v = x->valuedouble / y->valuedouble;
	return ES_OK;
}

es_err es_health_metric_value(const cJSON *status, int metric, int64_t pid_max,
			      double *value, char *why, size_t whysz)
{
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(status, "usage");
	const cJSON *col, *it, *o;
	double v = 0;
	int n;

	if (metric < 0 || metric >= M_COUNT)
		return ES_ERR_INVAL;
	col = collector(status, metrics[metric].collector);
	if (col == NULL || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(col, "enabled")))
		return missing(why, whysz, "collector %s is not enabled",
			       metrics[metric].collector);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(col, "healthy"))) {
		it = cJSON_GetObjectItemCaseSensitive(col, "error");
		if (why != NULL && whysz > 0)
			snprintf(why, whysz, "collector %s failed: %s",
				 metrics[metric].collector,
				 cJSON_IsString(it) && it->valuestring ? it->valuestring
								       : "no reason given");
		return ES_ERR_NOTFOUND;
	}
	switch (metric) {
	case M_CPU_UTILIZATION:
		o = num(cJSON_GetObjectItemCaseSensitive(usage, "cpu"), "utilization");
		if (o == NULL)
			return missing(why, whysz, "%s",
				       "usage.cpu.utilization not collected yet (it needs "
				       "two rounds)");
		v = o->valuedouble;
		break;
	case M_LOAD1:
	case M_LOAD5:
	case M_LOAD15:
	case M_PROC_COUNT:
	case M_PROC_THREADS:
	case M_PROC_RUNNING:
	case M_PROC_BLOCKED:
		o = num(cJSON_GetObjectItemCaseSensitive(
				usage, metric <= M_LOAD15 ? "load" : "processes"),
			strrchr(metrics[metric].source, '.') + 1);
		if (o == NULL)
			return missing(why, whysz, "%s not collected",
				       metrics[metric].source);
		v = o->valuedouble;
		break;
	case M_MEM_AVAILABLE_BYTES:
		o = num(cJSON_GetObjectItemCaseSensitive(usage, "memory"), "MemAvailable");
		if (o == NULL)
			return missing(why, whysz, "%s not collected",
				       metrics[metric].source);
		v = o->valuedouble;
		break;
	case M_MEM_AVAILABLE_RATIO:
		if (ratio(cJSON_GetObjectItemCaseSensitive(usage, "memory"), "MemAvailable",
			  "MemTotal", &v, "MemAvailable or MemTotal", why, whysz) != ES_OK)
			return ES_ERR_NOTFOUND;
		break;
	case M_FS_ROOT_AVAILABLE_BYTES:
	case M_FS_ROOT_AVAILABLE_RATIO:
	case M_FS_ROOT_INODES_FREE_RATIO:
		o = root_fs(usage);
		if (o == NULL)
			return missing(why, whysz, "%s",
				       "no filesystem mounted at / was collected");
		if (metric == M_FS_ROOT_AVAILABLE_BYTES) {
			it = num(o, "availBytes");
			if (it == NULL)
				return missing(why, whysz, "%s", "availBytes of / not collected");
			v = it->valuedouble;
		} else if (metric == M_FS_ROOT_AVAILABLE_RATIO) {
			if (ratio(o, "availBytes", "sizeBytes", &v, "availBytes or sizeBytes of /",
				  why, whysz) != ES_OK)
				return ES_ERR_NOTFOUND;
		} else if (ratio(o, "filesFree", "files", &v, "the inode counts of /",
				 why, whysz) != ES_OK) {
			return ES_ERR_NOTFOUND;
		}
		break;
	case M_FS_AVAILABLE_RATIO:
		n = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(usage, "filesystems")) {
			double r;

			if (ratio(it, "availBytes", "sizeBytes", &r, "", NULL, 0) != ES_OK)
				continue;
			if (n++ == 0 || r < v)
				v = r;
		}
		if (n == 0)
			return missing(why, whysz, "%s", "no filesystem with a size was collected");
		break;
	case M_NET_INTERFACES:
		it = cJSON_GetObjectItemCaseSensitive(usage, "network");
		if (!cJSON_IsArray(it))
			return missing(why, whysz, "%s", "usage.network not collected");
		n = 0;
		cJSON_ArrayForEach(o, it) {
			const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "interface");

			if (cJSON_IsString(name) && name->valuestring &&
			    strcmp(name->valuestring, "lo") != 0)
				n++;
		}
		v = n;
		break;
	case M_PROC_PID_USAGE_RATIO:
		o = num(cJSON_GetObjectItemCaseSensitive(usage, "processes"), "count");
		if (o == NULL)
			return missing(why, whysz, "%s", "usage.processes.count not collected");
		if (pid_max <= 0)
			return missing(why, whysz, "%s", "kernel.pid_max could not be read");
		v = o->valuedouble / (double)pid_max;
		break;
	}
	*value = v;
	return ES_OK;
}
