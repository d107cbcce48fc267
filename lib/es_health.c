/*
 * es_health.c - HealthRule specs: metric catalogue, operators, durations,
 * validation, and metric values read from a Node status (es_health.h;
 * PROTOCOL.md "HealthRule").
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "es_cond.h"
#include "es_health.h"

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

/* *v = a / b; NOTFOUND (why: "<what> not collected or zero") when either
 * was not collected or b <= 0. */
static es_err ratio(double a, double b, double *v, const char *what, char *why,
		    size_t whysz)
{
	if (!es_sample_has(a) || !es_sample_has(b) || b <= 0)
		return missing(why, whysz, "%s not collected or zero", what);
	*v = a / b;
	return ES_OK;
}

static es_err mem_available_ratio(const es_sample *s, double *v, char *why,
				  size_t whysz)
{
	return ratio(s->mem_available, s->mem_total, v, "MemAvailable or MemTotal",
		     why, whysz);
}

static es_err root_fs(const es_sample *s, const es_sample_fs **fs, char *why,
		      size_t whysz)
{
	*fs = es_sample_root_fs(s);
	if (*fs == NULL)
		return missing(why, whysz, "%s", "no filesystem mounted at / was collected");
	return ES_OK;
}

static es_err fs_root_available_bytes(const es_sample *s, double *v, char *why,
				      size_t whysz)
{
	const es_sample_fs *fs;

	if (root_fs(s, &fs, why, whysz) != ES_OK)
		return ES_ERR_NOTFOUND;
	if (!es_sample_has(fs->avail_bytes))
		return missing(why, whysz, "%s", "availBytes of / not collected");
	*v = fs->avail_bytes;
	return ES_OK;
}

static es_err fs_root_available_ratio(const es_sample *s, double *v, char *why,
				      size_t whysz)
{
	const es_sample_fs *fs;

	if (root_fs(s, &fs, why, whysz) != ES_OK)
		return ES_ERR_NOTFOUND;
	return ratio(fs->avail_bytes, fs->size_bytes, v,
		     "availBytes or sizeBytes of /", why, whysz);
}

static es_err fs_root_inodes_free_ratio(const es_sample *s, double *v, char *why,
					size_t whysz)
{
	const es_sample_fs *fs;

	if (root_fs(s, &fs, why, whysz) != ES_OK)
		return ES_ERR_NOTFOUND;
	return ratio(fs->files_free, fs->files, v, "the inode counts of /", why, whysz);
}

static es_err fs_available_ratio(const es_sample *s, double *v, char *why,
				 size_t whysz)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nfs; i++) {
		double r = 0;

		if (ratio(s->fs[i].avail_bytes, s->fs[i].size_bytes, &r, "", NULL, 0) != ES_OK)
			continue;
		if (n++ == 0 || r < *v)
			*v = r;
	}
	if (n == 0)
		return missing(why, whysz, "%s", "no filesystem with a size was collected");
	return ES_OK;
}

static es_err net_interfaces(const es_sample *s, double *v, char *why, size_t whysz)
{
	if (!s->has_network)
		return missing(why, whysz, "%s", "usage.network not collected");
	*v = (double)es_sample_ifaces_besides_lo(s);
	return ES_OK;
}

static es_err pid_usage_ratio(const es_sample *s, double *v, char *why, size_t whysz)
{
	if (!es_sample_has(s->proc_count))
		return missing(why, whysz, "%s", "usage.processes.count not collected");
	if (s->pid_max <= 0)
		return missing(why, whysz, "%s", "kernel.pid_max could not be read");
	*v = s->proc_count / (double)s->pid_max;
	return ES_OK;
}

/* One catalogue entry: read is NULL for a metric that is the double at
 * offset field of es_sample, missing when it was not collected (why then
 * is absent_why, or "<source> not collected" when that is NULL). */
typedef struct metric_def {
	es_health_metric_info info;
	int collector; /* ES_SAMPLE_*; info.collector is its name */
	es_err (*read)(const es_sample *s, double *v, char *why, size_t whysz);
	size_t field;
	const char *absent_why;
} metric_def;

#define FIELD(name, col, idx, source, unit, member, absent)                  \
	{ { name, col, source, unit }, idx, NULL, offsetof(es_sample, member), absent }
#define COMPUTED(name, col, idx, source, unit, fn)                           \
	{ { name, col, source, unit }, idx, fn, 0, NULL }

static const metric_def metrics[] = {
	FIELD("cpu.utilization", "cpu", ES_SAMPLE_CPU, "usage.cpu.utilization",
	      "ratio 0..1", cpu_utilization,
	      "usage.cpu.utilization not collected yet (it needs two rounds)"),
	FIELD("load.load1", "cpu", ES_SAMPLE_CPU, "usage.load.load1",
	      "runnable tasks", load1, NULL),
	FIELD("load.load5", "cpu", ES_SAMPLE_CPU, "usage.load.load5",
	      "runnable tasks", load5, NULL),
	FIELD("load.load15", "cpu", ES_SAMPLE_CPU, "usage.load.load15",
	      "runnable tasks", load15, NULL),
	FIELD("memory.availableBytes", "memory", ES_SAMPLE_MEMORY,
	      "usage.memory.MemAvailable", "bytes", mem_available, NULL),
	COMPUTED("memory.availableRatio", "memory", ES_SAMPLE_MEMORY,
		 "usage.memory.MemAvailable / usage.memory.MemTotal", "ratio 0..1",
		 mem_available_ratio),
	COMPUTED("filesystem.rootAvailableBytes", "filesystem", ES_SAMPLE_FILESYSTEM,
		 "usage.filesystems[mountpoint \"/\"].availBytes", "bytes",
		 fs_root_available_bytes),
	COMPUTED("filesystem.rootAvailableRatio", "filesystem", ES_SAMPLE_FILESYSTEM,
		 "usage.filesystems[mountpoint \"/\"].availBytes / sizeBytes",
		 "ratio 0..1", fs_root_available_ratio),
	COMPUTED("filesystem.rootInodesFreeRatio", "filesystem", ES_SAMPLE_FILESYSTEM,
		 "usage.filesystems[mountpoint \"/\"].filesFree / files", "ratio 0..1",
		 fs_root_inodes_free_ratio),
	COMPUTED("filesystem.availableRatio", "filesystem", ES_SAMPLE_FILESYSTEM,
		 "lowest availBytes / sizeBytes over usage.filesystems", "ratio 0..1",
		 fs_available_ratio),
	COMPUTED("network.interfaces", "network", ES_SAMPLE_NETWORK,
		 "number of usage.network entries other than lo", "count",
		 net_interfaces),
	FIELD("processes.count", "processes", ES_SAMPLE_PROCESSES,
	      "usage.processes.count", "count", proc_count, NULL),
	FIELD("processes.threads", "processes", ES_SAMPLE_PROCESSES,
	      "usage.processes.threads", "count", proc_threads, NULL),
	FIELD("processes.running", "processes", ES_SAMPLE_PROCESSES,
	      "usage.processes.running", "count", proc_running, NULL),
	FIELD("processes.blocked", "processes", ES_SAMPLE_PROCESSES,
	      "usage.processes.blocked", "count", proc_blocked, NULL),
	COMPUTED("processes.pidUsageRatio", "processes", ES_SAMPLE_PROCESSES,
		 "usage.processes.count / kernel.pid_max", "ratio 0..1",
		 pid_usage_ratio),
};
#undef FIELD
#undef COMPUTED
#define M_COUNT ((int)(sizeof(metrics) / sizeof(metrics[0])))

size_t es_health_metric_count(void)
{
	return (size_t)M_COUNT;
}

const es_health_metric_info *es_health_metric_at(size_t i)
{
	return i < (size_t)M_COUNT ? &metrics[i].info : NULL;
}

int es_health_metric_find(const char *name)
{
	if (name == NULL)
		return -1;
	for (int i = 0; i < M_COUNT; i++)
		if (strcmp(name, metrics[i].info.name) == 0)
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
				 i ? ", " : "", metrics[i].info.name);

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
	if (strcmp(s, "StoreDegraded") == 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "spec.conditionType: StoreDegraded is the agent's own "
			       "database and cannot be set by a rule");
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

es_err es_health_metric_value(const es_sample *sample, int metric,
			      double *value, char *why, size_t whysz)
{
	const es_sample_collector *col;
	const metric_def *m;
	double v = 0;

	if (metric < 0 || metric >= M_COUNT)
		return ES_ERR_INVAL;
	m = &metrics[metric];
	col = sample != NULL ? &sample->collectors[m->collector] : NULL;
	if (col == NULL || !col->enabled)
		return missing(why, whysz, "collector %s is not enabled",
			       m->info.collector);
	if (!col->healthy)
		return missing(why, whysz, "collector %s failed: %s", m->info.collector,
			       col->error ? col->error : "no reason given");
	if (m->read != NULL) {
		if (m->read(sample, &v, why, whysz) != ES_OK)
			return ES_ERR_NOTFOUND;
	} else {
		v = *(const double *)(const void *)((const char *)sample + m->field);
		if (!es_sample_has(v)) {
			if (m->absent_why != NULL)
				return missing(why, whysz, "%s", m->absent_why);
			return missing(why, whysz, "%s not collected", m->info.source);
		}
	}
	*value = v;
	return ES_OK;
}
