/*
 * check.c - host probes for `edgesync-agent check` (see check.h).
 */
#include "host/check.h"
#include "host/cgroot.h"
#include "kcollect/kcollect.h"

#include <errno.h>
#include <limits.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>

#include "es_pki.h"
#include "es_time.h"

#define RES_OK "ok"
#define RES_MISSING "missing"
#define RES_FAIL "fail"

static void row(FILE *out, const char *check, const char *result,
		const char *detail)
{
	fprintf(out, "%-24s %-8s %s\n", check, result, detail);
}

static int readable(const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[64];
	int ok;

	if (!f)
		return 0;
	ok = fread(buf, 1, sizeof(buf), f) > 0;
	fclose(f);
	return ok;
}

/* The row of a btf-path this kernel does not need (it has its own BTF):
 * whether it would serve, so a fleet's setting is checked on any host. */
static void check_btf_path(FILE *out, const char *btf_path)
{
	char file[PATH_MAX], why[PATH_MAX + 128], d[PATH_MAX + 192];
	struct utsname u;

	if (uname(&u) != 0) {
		snprintf(d, sizeof(d), "uname: %s", strerror(errno));
		row(out, "btf-path", RES_MISSING, d);
		return;
	}
	if (es_kenv_btf_resolve(btf_path, u.release, file, sizeof(file), why,
				sizeof(why)) != ES_OK) {
		snprintf(d, sizeof(d), "%s (unused here: the kernel has its own BTF)", why);
		row(out, "btf-path", RES_MISSING, d);
		return;
	}
	snprintf(d, sizeof(d), "%s parses as BTF (unused here: the kernel has its own)",
		 file);
	row(out, "btf-path", RES_OK, d);
}

/* Creates and closes a BPF map; returns 0 or the errno. */
static int bpf_map_probe(enum bpf_map_type type, unsigned key, unsigned val,
			 unsigned entries)
{
	union bpf_attr attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = type;
	attr.key_size = key;
	attr.value_size = val;
	attr.max_entries = entries;
	fd = syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

static void bpf_detail(int e, char *d, size_t dsz, const char *what)
{
	if (e == EPERM || e == EACCES)
		snprintf(d, dsz, "%s: not permitted (needs root or CAP_BPF)", what);
	else if (e == ENOSYS)
		snprintf(d, dsz, "%s: the kernel has no bpf() syscall", what);
	else
		snprintf(d, dsz, "%s: %s", what, strerror(e));
}

static void os_release(FILE *out)
{
	const char *paths[] = { "/etc/os-release", "/usr/lib/os-release" };
	char line[512], name[512] = "";
	size_t i;

	for (i = 0; i < 2; i++) {
		FILE *f = fopen(paths[i], "r");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char *v;

			if (strncmp(line, "PRETTY_NAME=", 12))
				continue;
			v = line + 12;
			v[strcspn(v, "\r\n")] = '\0';
			if (*v == '"') {
				v++;
				v[strcspn(v, "\"")] = '\0';
			}
			snprintf(name, sizeof(name), "%s", v);
		}
		fclose(f);
		row(out, "os-release", RES_OK, name[0] ? name : paths[i]);
		return;
	}
	row(out, "os-release", RES_MISSING,
	    "no /etc/os-release or /usr/lib/os-release (osImage will be empty)");
}

/* One row per credential file (es_pki_creds_check, as the sync client
 * reads them before each dial). Returns 1 when all are usable, or when a
 * token is set (`run` joins first). */
static int credentials(FILE *out, const es_agent_config *cfg)
{
	const char *const paths[ES_PKI_NFILES] = { cfg->cert, cfg->key, cfg->ca };
	char name[64], d[768], until[ES_TIME_RFC3339_LEN];
	es_pki_creds c;
	es_err rc;

	if (!cfg->controller_url || !*cfg->controller_url) {
		row(out, "controller", RES_OK, "controller-url empty: offline only, "
		    "no credentials needed");
		return 1;
	}
	rc = es_pki_creds_check(cfg->cert, cfg->key, cfg->ca, time(NULL), &c);
	if (rc == ES_ERR_NOMEM) {
		row(out, "credentials", RES_FAIL, "out of memory");
		return 0;
	}
	for (int i = 0; i < ES_PKI_NFILES; i++) {
		snprintf(name, sizeof(name), "credentials/%s", es_pki_file_names[i]);
		if (c.state[i] != ES_PKI_FILE_OK)
			snprintf(d, sizeof(d), "%s: %s", paths[i], c.why[i]);
		else if (i == ES_PKI_CERT)
			snprintf(d, sizeof(d), "%s (valid until %s)", paths[i],
				 es_time_rfc3339(c.cert_not_after, until));
		else
			snprintf(d, sizeof(d), "%s", paths[i]);
		row(out, name, es_pki_file_state_names[c.state[i]], d);
	}
	if (rc != ES_OK && cfg->token && *cfg->token) {
		/* `run` joins first (README "Joining"): not a failure. */
		snprintf(d, sizeof(d), "no usable certificate yet: run joins first with "
			 "the token at %s", cfg->join_url ? cfg->join_url : "");
		row(out, "controller", RES_OK, d);
		return 1;
	}
	if (rc != ES_OK)
		row(out, "controller", RES_FAIL, "the agent would run offline: it "
		    "cannot connect with these credentials");
	return rc == ES_OK;
}

int es_check_run(FILE *out, const es_agent_config *cfg)
{
	static const struct {
		const char *name, *source;
	} collectors[] = {
		{ "cpu", "/proc/stat" },
		{ "memory", "/proc/meminfo" },
		{ "filesystem", "/proc/self/mountinfo" },
		{ "network", "/proc/net/dev" },
		{ "processes", "/proc/loadavg" },
	};
	char d[768], where[512];
	struct stat sb;
	es_kenv in;
	int mnt = 0;
	int procfs_ok, creds_ok, e;
	size_t i;
	DIR *dir;

	fprintf(out, "%-24s %-8s %s\n", "CHECK", "RESULT", "DETAIL");
	procfs_ok = readable("/proc/stat") && readable("/proc/meminfo");
	row(out, "procfs", procfs_ok ? RES_OK : RES_FAIL,
	    procfs_ok ? "/proc/stat and /proc/meminfo readable"
		      : "/proc/stat or /proc/meminfo unreadable: the agent cannot collect");

	dir = opendir("/sys/class/net");
	row(out, "sysfs", dir ? RES_OK : RES_MISSING,
	    dir ? "/sys/class/net readable" : "/sys/class/net unreadable");
	if (dir)
		closedir(dir);

	os_release(out);

	e = bpf_map_probe(BPF_MAP_TYPE_ARRAY, 4, 4, 1);
	if (e)
		bpf_detail(e, d, sizeof(d), "BPF_MAP_CREATE");
	else
		snprintf(d, sizeof(d), "BPF_MAP_CREATE of an array map works");
	row(out, "bpf-syscall", e ? RES_FAIL : RES_OK, d);

	e = bpf_map_probe(BPF_MAP_TYPE_RINGBUF, 0, 0, (unsigned)sysconf(_SC_PAGESIZE));
	if (e)
		bpf_detail(e, d, sizeof(d), "ring buffer map");
	else
		snprintf(d, sizeof(d), "BPF_MAP_TYPE_RINGBUF maps work");
	row(out, "bpf-ringbuf", e ? RES_FAIL : RES_OK, d);

	/* The probe of `run`, mounting what `run` would mount privately. */
	memset(&in, 0, sizeof(in));
	in.force_procfs = cfg->collector_backend == ES_AGENT_KC_PROCFS;
	in.ringbuf_bytes = (unsigned)cfg->ringbuf_bytes;
	in.cgroup_root = cfg->cgroup_root;
	in.btf_path = cfg->btf_path;
	es_kenv_probe(&in, ES_KENV_MOUNT_PRIVATE, NULL, 0);
	if (stat(ES_KENV_BTF_VMLINUX, &sb) == 0 && access(ES_KENV_BTF_VMLINUX, R_OK) == 0) {
		snprintf(d, sizeof(d), ES_KENV_BTF_VMLINUX " (%lld bytes)",
			 (long long)sb.st_size);
		row(out, "btf", RES_OK, d);
		if (cfg->btf_path && cfg->btf_path[0])
			check_btf_path(out, cfg->btf_path);
	} else if (in.btf_file[0]) {
		snprintf(d, sizeof(d), "%.600s (btf-path; the kernel has none)",
			 in.btf_file);
		row(out, "btf", RES_OK, d);
	} else {
		snprintf(d, sizeof(d), ES_KENV_BTF_VMLINUX ": %s%s%s",
			 strerror(ENOENT), cfg->btf_path[0] ? "; " : "",
			 cfg->btf_path[0] ? in.ebpf_reason : "");
		row(out, "btf", RES_MISSING, d);
	}
	if (in.tracefs) {
		snprintf(d, sizeof(d), "%s %s", in.private_tracefs ?
			 "not mounted: run mounts it at" : "mounted at", in.tracefs_path);
		row(out, "tracefs", RES_OK, d);
	} else {
		snprintf(d, sizeof(d), "%s (mount -t tracefs tracefs "
			 "/sys/kernel/tracing)", in.tracefs_reason);
		row(out, "tracefs", RES_MISSING, d);
	}

	if (es_cgroot_find(cfg->cgroup_root, NULL, 0, where, sizeof(where), &mnt, d,
			   sizeof(d)) == ES_OK) {
		snprintf(d, sizeof(d), "%s %s", cfg->cgroup_root && *cfg->cgroup_root ?
			 "cgroup-root" : "mounted at", where);
		row(out, "cgroup-v2", RES_OK, d);
	} else {
		row(out, "cgroup-v2", RES_MISSING, d);
	}

	for (i = 0; i < sizeof(collectors) / sizeof(collectors[0]); i++) {
		char name[64];
		int ok = readable(collectors[i].source);

		snprintf(name, sizeof(name), "collector/%s", collectors[i].name);
		snprintf(d, sizeof(d), "procfs%s%s",
			 ok ? "" : ": cannot read ", ok ? "" : collectors[i].source);
		row(out, name, ok ? RES_OK : RES_FAIL, d);
	}
	es_kcollectors_check(out, &in);
	creds_ok = credentials(out, cfg);
	return procfs_ok && creds_ok ? 0 : 1;
}
