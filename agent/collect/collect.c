/*
 * collect.c - the procfs backend of the agent's collectors (collect.h):
 * context, nodeInfo, capacity, one round of usage, collector health.
 *
 * Members whose source could not be read are left out rather than given a
 * made-up value: capacity.cpu needs <proc>/stat, capacity.memoryBytes
 * <proc>/meminfo; a usage member is absent when its collector is disabled
 * or its source failed (usage.filesystems keeps the mounts that could be
 * read). nodeInfo strings that cannot be read are "" (as Kubernetes leaves
 * unknown NodeSystemInfo fields) and logged once per distinct failure.
 */
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "collect/collect.h"
#include "collect/collect_usage.h"
#include "es_log.h"
#include "es_obj.h"
#include "es_sample.h"

#define ES_COLLECTORS 5
#define ES_MSG_MAX 512

struct es_collect {
	char *proc;
	char *sys;
	char *etc;
	char *mounts;
	char *agent_version;
	long user_hz;
	es_cu_stat prev;        /* /proc/stat of the previous round */
	int have_prev;
	char last_warn[ES_MSG_MAX]; /* last nodeInfo failure logged */
};

static char *dup_or(const char *s, const char *dflt)
{
	return strdup(s != NULL ? s : dflt);
}

es_err es_collect_new(const es_collect_roots *roots, const char *agent_version,
		      es_collect **out)
{
	es_collect_roots none = { 0 };
	es_collect *c;

	*out = NULL;
	if (roots == NULL)
		roots = &none;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return ES_ERR_NOMEM;
	c->proc = dup_or(roots->proc, "/proc");
	c->sys = dup_or(roots->sys, "/sys");
	c->etc = dup_or(roots->etc, "/etc");
	c->agent_version = dup_or(agent_version, "");
	if (c->proc != NULL && roots->mounts == NULL) {
		size_t n = strlen(c->proc) + sizeof("/self/mountinfo");

		c->mounts = malloc(n);
		if (c->mounts != NULL)
			snprintf(c->mounts, n, "%s/self/mountinfo", c->proc);
	} else {
		c->mounts = dup_or(roots->mounts, "");
	}
	if (c->proc == NULL || c->sys == NULL || c->etc == NULL ||
	    c->agent_version == NULL || c->mounts == NULL) {
		es_collect_free(c);
		return ES_ERR_NOMEM;
	}
	/* USER_HZ is 100 on every Linux ABI; sysconf only fails on a broken libc. */
	c->user_hz = sysconf(_SC_CLK_TCK);
	if (c->user_hz <= 0)
		c->user_hz = 100;
	*out = c;
	return ES_OK;
}

void es_collect_free(es_collect *c)
{
	if (c == NULL)
		return;
	free(c->proc);
	free(c->sys);
	free(c->etc);
	free(c->mounts);
	free(c->agent_version);
	free(c);
}

/*
 * uname(2) machine -> the GOARCH name Kubernetes reports in
 * nodeInfo.architecture (k8s.io/api NodeSystemInfo, runtime.GOARCH).
 * Linux reports "mips"/"mips64" for both byte orders; the agent runs on the
 * host it describes, so its own byte order decides. Unknown names pass
 * through unchanged.
 */
static const char *arch_name(const char *machine)
{
	static const struct { const char *uname, *goarch; } map[] = {
		{ "x86_64", "amd64" }, { "amd64", "amd64" },
		{ "i386", "386" }, { "i486", "386" }, { "i586", "386" }, { "i686", "386" },
		{ "aarch64", "arm64" }, { "arm64", "arm64" }, { "aarch64_be", "arm64be" },
		{ "armv8l", "arm" }, { "riscv64", "riscv64" },
		{ "ppc64le", "ppc64le" }, { "ppc64", "ppc64" }, { "ppc", "ppc" },
		{ "s390x", "s390x" }, { "loongarch64", "loong64" },
	};
	int le = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(machine, map[i].uname) == 0)
			return map[i].goarch;
	if (strncmp(machine, "arm", 3) == 0)
		return "arm";
	if (strcmp(machine, "mips") == 0)
		return le ? "mipsle" : "mips";
	if (strcmp(machine, "mips64") == 0)
		return le ? "mips64le" : "mips64";
	return machine;
}

/* Appends "; msg" (or msg) to a collector's error text. */
static void add_msg(char *buf, const char *msg)
{
	size_t n = strlen(buf), m = strlen(msg);

	if (n > 0) {
		if (n + 2 >= ES_MSG_MAX)
			return;
		memcpy(buf + n, "; ", 2);
		n += 2;
	}
	if (m > ES_MSG_MAX - 1 - n)
		m = ES_MSG_MAX - 1 - n;
	memcpy(buf + n, msg, m);
	buf[n + m] = '\0';
}

/* Value of PRETTY_NAME in an os-release(5) file into buf: quotes removed,
 * backslash escapes resolved; "Linux" when the file has none (the default
 * os-release(5) gives). Returns ES_OK, or the es_fs_lines_* error with err. */
static es_err os_release_pretty(const char *path, char *buf, size_t bufsz,
				char *err, size_t errsz)
{
	es_fs_lines lf;
	es_err rc;
	int more = 0, found = 0;

	rc = es_fs_lines_open(&lf, path, err, errsz);
	if (rc != ES_OK)
		return rc;
	while (!found && (rc = es_fs_lines_next(&lf, &more, err, errsz)) == ES_OK && more) {
		const char *v = lf.line;
		char q = 0;
		size_t n = 0;

		if (lf.overlong || strncmp(v, "PRETTY_NAME=", 12) != 0)
			continue;
		v += 12;
		if (*v == '"' || *v == '\'')
			q = *v++;
		for (; *v && *v != q && n + 1 < bufsz; v++) {
			if (q == '"' && v[0] == '\\' && v[1] != '\0')
				v++;
			buf[n++] = *v;
		}
		while (!q && n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\r'))
			n--;
		buf[n] = '\0';
		found = 1;
	}
	if (rc == ES_OK && !found)
		snprintf(buf, bufsz, "Linux");
	es_fs_lines_close(&lf);
	return rc;
}

/* 1 when s has length len and only lower-case hex digits, except '-' at
 * the given positions (NULL: none). */
static int hex_shape(const char *s, size_t len, const int *dash)
{
	if (strlen(s) != len)
		return 0;
	for (size_t i = 0; i < len; i++) {
		int want_dash = 0;

		for (const int *d = dash; d != NULL && *d >= 0; d++)
			if ((size_t)*d == i)
				want_dash = 1;
		if (want_dash ? s[i] != '-' :
		    !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return 1;
}

/* Reads a one-line identifier that must match a hex shape; "" on failure,
 * with the reason appended to warn. */
static void read_id(const char *path, size_t len, const int *dash, char *buf,
		    size_t bufsz, char *warn)
{
	char e[ES_MSG_MAX];

	buf[0] = '\0';
	if (es_cu_read_first_line(path, buf, bufsz, e, sizeof(e)) != ES_OK) {
		buf[0] = '\0';
		add_msg(warn, e);
	} else if (!hex_shape(buf, len, dash)) {
		buf[0] = '\0';
		snprintf(e, sizeof(e), "%s: not a %zu-character hex identifier", path, len);
		add_msg(warn, e);
	}
}

static es_err add_node_info(es_collect *c, cJSON *status)
{
	static const int uuid_dashes[] = { 8, 13, 18, 23, -1 };
	char warn[ES_MSG_MAX] = "", e[ES_MSG_MAX];
	char os[256], machine_id[64], boot_id[64], path[4200];
	struct utsname u;
	cJSON *ni;

	memset(&u, 0, sizeof(u));
	if (uname(&u) != 0) {
		memset(&u, 0, sizeof(u));
		add_msg(warn, "uname failed");
	}
	os[0] = '\0';
	snprintf(path, sizeof(path), "%s/os-release", c->etc);
	if (os_release_pretty(path, os, sizeof(os), e, sizeof(e)) != ES_OK) {
		char e2[ES_MSG_MAX];

		/* os-release(5): /etc/os-release, else /usr/lib/os-release; a root
		 * such as /host/etc falls back to /host/usr/lib/os-release. */
		snprintf(path, sizeof(path), "%s/../usr/lib/os-release", c->etc);
		os[0] = '\0';
		if (os_release_pretty(path, os, sizeof(os), e2, sizeof(e2)) != ES_OK) {
			os[0] = '\0';
			add_msg(warn, e);
			add_msg(warn, e2);
		}
	}
	snprintf(path, sizeof(path), "%s/machine-id", c->etc);
	read_id(path, 32, NULL, machine_id, sizeof(machine_id), warn);
	snprintf(path, sizeof(path), "%s/sys/kernel/random/boot_id", c->proc);
	read_id(path, 36, uuid_dashes, boot_id, sizeof(boot_id), warn);

	if (strcmp(warn, c->last_warn) != 0) {
		if (warn[0] != '\0')
			es_log_warn("collect", "nodeInfo incomplete", "error", warn, NULL);
		memcpy(c->last_warn, warn, sizeof(warn));
	}

	ni = cJSON_AddObjectToObject(status, "nodeInfo");
	if (ni == NULL ||
	    cJSON_AddStringToObject(ni, "hostname", u.nodename) == NULL ||
	    cJSON_AddStringToObject(ni, "kernelVersion", u.release) == NULL ||
	    cJSON_AddStringToObject(ni, "osImage", os) == NULL ||
	    cJSON_AddStringToObject(ni, "operatingSystem", "linux") == NULL ||
	    cJSON_AddStringToObject(ni, "architecture", arch_name(u.machine)) == NULL ||
	    cJSON_AddStringToObject(ni, "machineID", machine_id) == NULL ||
	    cJSON_AddStringToObject(ni, "bootID", boot_id) == NULL ||
	    cJSON_AddStringToObject(ni, "agentVersion", c->agent_version) == NULL)
		return ES_ERR_NOMEM;
	return ES_OK;
}

/* /proc/loadavg -> *out = {load1, load5, load15}, also into s. Errors:
 * ES_ERR_IO, ES_ERR_PARSE, ES_ERR_NOMEM. */
static es_err read_loadavg(const char *path, cJSON **out, es_sample *s,
			   char *err, size_t errsz)
{
	static const char *const names[3] = { "load1", "load5", "load15" };
	char line[256];
	double v[3];
	const char *p;
	cJSON *obj = NULL;
	es_err rc;

	*out = NULL;
	rc = es_cu_read_first_line(path, line, sizeof(line), err, errsz);
	if (rc != ES_OK)
		return rc;
	p = line;
	for (int i = 0; i < 3; i++) {
		char *end = NULL;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return es_errf(ES_ERR_PARSE, err, errsz, "%s: %s: not a number",
				       path, names[i]);
		v[i] = strtod(p, &end); /* the agent keeps LC_NUMERIC "C" */
		if (end == p || !isfinite(v[i]) || v[i] < 0 ||
		    (*end != '\0' && *end != ' ' && *end != '\t'))
			return es_errf(ES_ERR_PARSE, err, errsz, "%s: %s: not a number",
				       path, names[i]);
		p = end;
	}
	obj = cJSON_CreateObject();
	if (obj == NULL)
		return ES_ERR_NOMEM;
	for (int i = 0; i < 3; i++) {
		if (cJSON_AddNumberToObject(obj, names[i], v[i]) == NULL) {
			cJSON_Delete(obj);
			return ES_ERR_NOMEM;
		}
	}
	*out = obj;
	s->load1 = v[0];
	s->load5 = v[1];
	s->load15 = v[2];
	return ES_OK;
}

/* Reads num_threads (field 20) of one <proc>/<pid>/stat. Returns ES_OK,
 * ES_ERR_NOTFOUND when the process is gone, ES_ERR_IO or ES_ERR_PARSE. */
static es_err pid_threads(const char *path, uint64_t *threads, char *err, size_t errsz)
{
	char line[1024];
	const char *p;
	es_err rc;

	rc = es_cu_read_first_line(path, line, sizeof(line), err, errsz);
	if (rc == ES_ERR_IO && (errno == ENOENT || errno == ESRCH))
		return ES_ERR_NOTFOUND;
	if (rc != ES_OK)
		return rc;
	p = strrchr(line, ')');
	if (p == NULL)
		return es_errf(ES_ERR_PARSE, err, errsz, "%s: no \")\" after comm", path);
	p++;
	for (int field = 3; field < 20; field++) {
		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		while (*p && *p != ' ')
			p++;
	}
	if (es_cu_take_u64(&p, threads) != 0)
		return es_errf(ES_ERR_PARSE, err, errsz,
			       "%s: field 20 (num_threads) missing or not a number", path);
	return ES_OK;
}

/*
 * Process summary: count = numeric directories of proc_root whose
 * <pid>/stat could still be read (a process that exits meanwhile is not
 * counted), threads = sum of their num_threads, so both describe the same
 * processes, also inside a PID namespace (loadavg's task count would be
 * host-wide); running/blocked from /proc/stat. Also into s.
 * Errors: ES_ERR_IO, ES_ERR_PARSE (a malformed pid stat, or st without
 * procs_running/procs_blocked), ES_ERR_NOMEM.
 */
static es_err read_processes(const char *proc_root, const es_cu_stat *st,
			     cJSON **out, es_sample *s, char *err, size_t errsz)
{
	DIR *d = NULL;
	struct dirent *de;
	uint64_t count = 0, threads = 0;
	cJSON *obj = NULL;
	es_err rc = ES_OK;

	*out = NULL;
	if (st->procs_running < 0 || st->procs_blocked < 0)
		return es_errf(ES_ERR_PARSE, err, errsz, "%s/stat: no %s line", proc_root,
			       st->procs_running < 0 ? "procs_running" : "procs_blocked");
	d = opendir(proc_root);
	if (d == NULL)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", proc_root, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		char path[4200];
		uint64_t t = 0;

		if (!es_cu_all_digits(de->d_name))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s/stat", proc_root,
				     de->d_name) >= sizeof(path)) {
			rc = es_errf(ES_ERR_IO, err, errsz, "%s: path too long", proc_root);
			goto cleanup;
		}
		rc = pid_threads(path, &t, err, errsz);
		if (rc == ES_ERR_NOTFOUND) {
			rc = ES_OK;
			continue;
		}
		if (rc != ES_OK)
			goto cleanup;
		count++;
		threads += t;
	}
	obj = cJSON_CreateObject();
	if (obj == NULL ||
	    cJSON_AddNumberToObject(obj, "count", (double)count) == NULL ||
	    cJSON_AddNumberToObject(obj, "threads", (double)threads) == NULL ||
	    cJSON_AddNumberToObject(obj, "running", (double)st->procs_running) == NULL ||
	    cJSON_AddNumberToObject(obj, "blocked", (double)st->procs_blocked) == NULL) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	*out = obj;
	obj = NULL;
	s->proc_count = (double)count;
	s->proc_threads = (double)threads;
	s->proc_running = (double)st->procs_running;
	s->proc_blocked = (double)st->procs_blocked;
cleanup:
	closedir(d);
	cJSON_Delete(obj);
	return rc;
}

/* usage.cpu from this round's /proc/stat and the previous one, also
 * into s. */
static es_err add_cpu(es_collect *c, cJSON *usage, const es_cu_stat *st,
		      es_sample *s)
{
	cJSON *cpu, *secs;
	double total = 0, idle = 0;

	cpu = cJSON_AddObjectToObject(usage, "cpu");
	secs = cpu ? cJSON_AddObjectToObject(cpu, "secondsTotal") : NULL;
	if (secs == NULL)
		return ES_ERR_NOMEM;
	for (int i = 0; i < ES_CU_CPU_MODES; i++) {
		if (cJSON_AddNumberToObject(secs, es_cu_cpu_mode_names[i],
					    (double)st->ticks[i] / (double)c->user_hz) == NULL)
			return ES_ERR_NOMEM;
		if (c->have_prev) {
			/* Counters can step back (iowait, CPU hot-unplug): count 0. */
			double d = st->ticks[i] > c->prev.ticks[i] ?
				(double)(st->ticks[i] - c->prev.ticks[i]) : 0;

			total += d;
			if (i == 3 || i == 4) /* idle, iowait */
				idle += d;
		}
	}
	/* Busy share of the ticks since the previous round; absent when no tick
	 * elapsed. */
	s->has_cpu = 1;
	if (c->have_prev && total > 0) {
		s->cpu_utilization = (total - idle) / total;
		if (cJSON_AddNumberToObject(cpu, "utilization", s->cpu_utilization) == NULL)
			return ES_ERR_NOMEM;
	}
	return ES_OK;
}

/* kernel.pid_max from <proc>/sys/kernel/pid_max; 0 when unreadable. */
static int64_t read_pid_max(const es_collect *c)
{
	char path[4200];
	long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/sys/kernel/pid_max", c->proc);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%lld", &v) != 1)
		v = 0;
	fclose(f);
	return (int64_t)v;
}

/* A member of one object of a reader's JSON array and where it goes in
 * the sample's entry: a number into a double, a string into a char *. */
typedef struct entry_member {
	const char *key;
	size_t offset;
	int is_string;
} entry_member;

/* Copies the members m[0..n) of o into entry. Errors: ES_ERR_NOMEM. */
static es_err take_entry(const cJSON *o, const entry_member *m, size_t n, void *entry)
{
	for (size_t i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, m[i].key);
		char *field = (char *)entry + m[i].offset;

		if (m[i].is_string) {
			if (es_sample_set_str((char **)(void *)field,
					      cJSON_GetStringValue(v)) != ES_OK)
				return ES_ERR_NOMEM;
		} else if (cJSON_IsNumber(v)) {
			*(double *)(void *)field = v->valuedouble;
		}
	}
	return ES_OK;
}

/* usage.memory (the meminfo reader's object, every field) into s. */
static es_err sample_memory(es_sample *s, const cJSON *mem)
{
	const cJSON *it;
	size_t i = 0;

	if (mem == NULL)
		return ES_OK;
	s->has_memory = 1;
	if (es_sample_mem_alloc(s, (size_t)cJSON_GetArraySize(mem)) != ES_OK)
		return ES_ERR_NOMEM;
	cJSON_ArrayForEach(it, mem) {
		if (es_sample_set_str(&s->mem[i].name, it->string) != ES_OK)
			return ES_ERR_NOMEM;
		s->mem[i].value = it->valuedouble;
		if (strcmp(it->string, "MemTotal") == 0)
			s->mem_total = it->valuedouble;
		else if (strcmp(it->string, "MemAvailable") == 0)
			s->mem_available = it->valuedouble;
		i++;
	}
	return ES_OK;
}

#define NUM(type, key, member) { key, offsetof(type, member), 0 }
#define STR(type, key, member) { key, offsetof(type, member), 1 }

/* usage.filesystems (the mount reader's array, collect_usage.h) into s. */
static es_err sample_filesystems(es_sample *s, const cJSON *arr)
{
	static const entry_member m[] = {
		STR(es_sample_fs, "device", device),
		STR(es_sample_fs, "mountpoint", mountpoint),
		STR(es_sample_fs, "fstype", fstype),
		NUM(es_sample_fs, "sizeBytes", size_bytes),
		NUM(es_sample_fs, "availBytes", avail_bytes),
		NUM(es_sample_fs, "freeBytes", free_bytes),
		NUM(es_sample_fs, "files", files),
		NUM(es_sample_fs, "filesFree", files_free),
	};
	const cJSON *it;
	size_t i = 0;

	if (arr == NULL)
		return ES_OK;
	s->has_filesystems = 1;
	if (es_sample_fs_alloc(s, (size_t)cJSON_GetArraySize(arr)) != ES_OK)
		return ES_ERR_NOMEM;
	cJSON_ArrayForEach(it, arr)
		if (take_entry(it, m, sizeof(m) / sizeof(m[0]), &s->fs[i++]) != ES_OK)
			return ES_ERR_NOMEM;
	return ES_OK;
}

/* usage.network (the netdev reader's array) into s. */
static es_err sample_network(es_sample *s, const cJSON *arr)
{
	static const entry_member m[] = {
		STR(es_sample_iface, "interface", name),
		NUM(es_sample_iface, "receiveBytes", receive_bytes),
		NUM(es_sample_iface, "receivePackets", receive_packets),
		NUM(es_sample_iface, "receiveErrors", receive_errors),
		NUM(es_sample_iface, "receiveDrop", receive_drop),
		NUM(es_sample_iface, "transmitBytes", transmit_bytes),
		NUM(es_sample_iface, "transmitPackets", transmit_packets),
		NUM(es_sample_iface, "transmitErrors", transmit_errors),
		NUM(es_sample_iface, "transmitDrop", transmit_drop),
	};
	const cJSON *it;
	size_t i = 0;

	if (arr == NULL)
		return ES_OK;
	s->has_network = 1;
	if (es_sample_ifaces_alloc(s, (size_t)cJSON_GetArraySize(arr)) != ES_OK)
		return ES_ERR_NOMEM;
	cJSON_ArrayForEach(it, arr)
		if (take_entry(it, m, sizeof(m) / sizeof(m[0]), &s->ifaces[i++]) != ES_OK)
			return ES_ERR_NOMEM;
	return ES_OK;
}
#undef NUM
#undef STR

/* Adds *item to parent under key, taking ownership; NULL item adds nothing. */
static es_err attach(cJSON *parent, const char *key, cJSON **item)
{
	if (*item == NULL)
		return ES_OK;
	if (!cJSON_AddItemToObject(parent, key, *item))
		return ES_ERR_NOMEM;
	*item = NULL;
	return ES_OK;
}

/* Maps a reader's result: NOMEM fails the round, any other failure is the
 * collector's error text. */
static es_err note(es_err rc, const char *e, char *msg)
{
	if (rc == ES_ERR_NOMEM)
		return rc;
	if (rc != ES_OK)
		add_msg(msg, e);
	return ES_OK;
}

es_err es_collect_run(es_collect *c, unsigned mask, cJSON **out,
		      es_sample *sample)
{
	es_sample own, *smp = sample ? sample : &own;
	char msg[ES_COLLECTORS][ES_MSG_MAX];
	char st_err[ES_MSG_MAX] = "", mem_err[ES_MSG_MAX] = "", e[ES_MSG_MAX];
	char path[4200];
	cJSON *status = NULL, *usage = NULL, *cap, *list, *mem = NULL, *item = NULL;
	es_cu_stat st;
	uint64_t memtotal = 0;
	es_err st_rc = ES_ERR_IO, mem_rc, rc;

	*out = NULL;
	if (sample)
		es_sample_clear(sample);
	else
		es_sample_init(&own);
	memset(msg, 0, sizeof(msg));
	status = cJSON_CreateObject();
	if (status == NULL)
		return ES_ERR_NOMEM;
	rc = add_node_info(c, status);
	if (rc != ES_OK)
		goto cleanup;

	snprintf(path, sizeof(path), "%s/stat", c->proc);
	st_rc = es_cu_read_stat(path, &st, st_err, sizeof(st_err));
	snprintf(path, sizeof(path), "%s/meminfo", c->proc);
	mem_rc = es_cu_read_meminfo(path, &mem, &memtotal, mem_err, sizeof(mem_err));
	rc = ES_ERR_NOMEM;
	if (mem_rc == ES_ERR_NOMEM)
		goto cleanup;
	cap = cJSON_AddObjectToObject(status, "capacity");
	if (cap == NULL ||
	    (st_rc == ES_OK && cJSON_AddNumberToObject(cap, "cpu", st.ncpu) == NULL) ||
	    (mem_rc == ES_OK &&
	     cJSON_AddNumberToObject(cap, "memoryBytes", (double)memtotal) == NULL))
		goto cleanup;
	usage = cJSON_AddObjectToObject(status, "usage");
	if (usage == NULL)
		goto cleanup;

	if (mask & ES_COLLECT_CPU) {
		if (st_rc == ES_OK)
			rc = add_cpu(c, usage, &st, smp);
		else
			rc = note(st_rc, st_err, msg[0]);
		if (rc != ES_OK)
			goto cleanup;
		snprintf(path, sizeof(path), "%s/loadavg", c->proc);
		rc = note(read_loadavg(path, &item, smp, e, sizeof(e)), e, msg[0]);
		if (rc != ES_OK || (rc = attach(usage, "load", &item)) != ES_OK)
			goto cleanup;
	}
	if (mask & ES_COLLECT_MEMORY) {
		rc = note(mem_rc, mem_err, msg[1]);
		if (rc == ES_OK)
			rc = sample_memory(smp, mem);
		if (rc != ES_OK || (rc = attach(usage, "memory", &mem)) != ES_OK)
			goto cleanup;
	}
	if (mask & ES_COLLECT_FILESYSTEM) {
		rc = note(es_cu_read_mounts(c->mounts, &item, e, sizeof(e)), e, msg[2]);
		if (rc == ES_OK)
			rc = sample_filesystems(smp, item);
		if (rc != ES_OK || (rc = attach(usage, "filesystems", &item)) != ES_OK)
			goto cleanup;
	}
	if (mask & ES_COLLECT_NETWORK) {
		snprintf(path, sizeof(path), "%s/net/dev", c->proc);
		rc = note(es_cu_read_netdev(path, &item, e, sizeof(e)), e, msg[3]);
		if (rc == ES_OK)
			rc = sample_network(smp, item);
		if (rc != ES_OK || (rc = attach(usage, "network", &item)) != ES_OK)
			goto cleanup;
	}
	if (mask & ES_COLLECT_PROCESSES) {
		if (st_rc == ES_OK)
			rc = note(read_processes(c->proc, &st, &item, smp, e,
						 sizeof(e)), e, msg[4]);
		else
			rc = note(st_rc, st_err, msg[4]);
		if (rc != ES_OK || (rc = attach(usage, "processes", &item)) != ES_OK)
			goto cleanup;
	}

	rc = ES_ERR_NOMEM;
	list = cJSON_AddArrayToObject(status, "collectors");
	if (list == NULL)
		goto cleanup;
	for (int i = 0; i < ES_COLLECTORS; i++) {
		int enabled = (int)((mask >> i) & 1u);
		cJSON *o = cJSON_CreateObject();

		if (o == NULL || !cJSON_AddItemToArray(list, o)) {
			cJSON_Delete(o);
			goto cleanup;
		}
		/* A disabled collector reads nothing, so nothing of it failed. */
		smp->collectors[i].enabled = enabled;
		smp->collectors[i].healthy = msg[i][0] == '\0';
		if ((msg[i][0] != '\0' &&
		     es_sample_set_str(&smp->collectors[i].error, msg[i]) != ES_OK) ||
		    cJSON_AddStringToObject(o, "name", es_collector_names[i]) == NULL ||
		    cJSON_AddStringToObject(o, "backend", "procfs") == NULL ||
		    cJSON_AddBoolToObject(o, "enabled", enabled) == NULL ||
		    cJSON_AddBoolToObject(o, "healthy", msg[i][0] == '\0') == NULL ||
		    (msg[i][0] != '\0' &&
		     cJSON_AddStringToObject(o, "error", msg[i]) == NULL) ||
		    cJSON_AddNumberToObject(o, "eventsLost", 0) == NULL)
			goto cleanup;
	}
	smp->pid_max = read_pid_max(c);
	rc = ES_OK;
cleanup:
	if (!sample)
		es_sample_clear(&own);
	if (st_rc == ES_OK && rc == ES_OK) {
		c->prev = st;
		c->have_prev = 1;
	}
	cJSON_Delete(mem);
	cJSON_Delete(item);
	if (rc != ES_OK) {
		cJSON_Delete(status);
		return rc;
	}
	*out = status;
	return ES_OK;
}
