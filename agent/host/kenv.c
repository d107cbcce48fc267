/*
 * kenv.c - what the host offers the kernel collectors (es_kenv_* of
 * kcollect.h): the probes, the tracefs and cgroup v2 mounts, libbpf's log.
 */
#define _GNU_SOURCE
#include "kcollect/kcollect.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <bpf/btf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "host/cgroot.h"
#include "es_log.h"
#include "es_mounts.h"

#define TRACEFS_MAIN "/sys/kernel/tracing"
#define TRACEFS_DEBUG "/sys/kernel/debug/tracing"
#define BTF_VMLINUX ES_KENV_BTF_VMLINUX

es_err es_kenv_btf_resolve(const char *btf_path, const char *release,
			   char *out, size_t outsz, char *err, size_t errsz)
{
	struct stat st;
	struct btf *btf;
	int n;

	if (!btf_path || !btf_path[0] || !release || !release[0] || !out ||
	    outsz == 0)
		return es_errf(ES_ERR_INVAL, err, errsz, "btf-path: missing argument");
	if (stat(btf_path, &st) != 0)
		return es_errf(ES_ERR_NOTFOUND, err, errsz, "btf-path %s: %s",
			       btf_path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		n = snprintf(out, outsz, "%s/%s.btf", btf_path, release);
	else
		n = snprintf(out, outsz, "%s", btf_path);
	if (n < 0 || (size_t)n >= outsz)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "btf-path %s: path too long", btf_path);
	if (access(out, R_OK) != 0)
		return es_errf(ES_ERR_NOTFOUND, err, errsz,
			       "btf-path %s: %s%s", out, strerror(errno),
			       S_ISDIR(st.st_mode) ? " (no BTF file for this "
			       "kernel release in the directory)" : "");
	btf = btf__parse(out, NULL);
	if (!btf) {
		char why[128];

		libbpf_strerror(errno, why, sizeof(why));
		out[0] = '\0';
		return es_errf(ES_ERR_PARSE, err, errsz, "btf-path %s: not BTF: %s",
			       btf_path, why);
	}
	btf__free(btf);
	return ES_OK;
}

struct bpf_object_open_opts *es_kenv_open_opts(const es_kenv *env,
					       struct bpf_object_open_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->sz = sizeof(*opts);
	if (env && env->btf_file[0])
		opts->btf_custom_path = env->btf_file;
	return opts;
}

/* env->btf and env->btf_file: the kernel's BTF when it has one, else the
 * file btf-path names; a btf-path that does not resolve is the reason. */
static void probe_btf(es_kenv *env, const char *btf_path, char *why,
		      size_t whysz)
{
	struct utsname u;

	env->btf = access(BTF_VMLINUX, R_OK) == 0;
	if (env->btf || !btf_path || !btf_path[0]) {
		snprintf(why, whysz, "no kernel BTF (" BTF_VMLINUX ": %s) and no "
			 "btf-path: CO-RE programs cannot be relocated",
			 strerror(ENOENT));
		return;
	}
	if (uname(&u) != 0) {
		snprintf(why, whysz, "uname: %s", strerror(errno));
		return;
	}
	if (es_kenv_btf_resolve(btf_path, u.release, env->btf_file,
				sizeof(env->btf_file), why, whysz) != ES_OK) {
		env->btf_file[0] = '\0';
		return;
	}
	env->btf = 1;
	es_log_info("kcollect", "the kernel has no BTF: using btf-path", "file",
		    env->btf_file, NULL);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	char msg[1024];
	size_t n;
	es_log_level l = level == LIBBPF_WARN ? ES_LOG_WARN
			 : level == LIBBPF_INFO ? ES_LOG_INFO
						: ES_LOG_DEBUG;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	if (strncmp(msg, "libbpf: ", 8) == 0)
		memmove(msg, msg + 8, n - 8 + 1);
	if (msg[0])
		es_log(l, "libbpf", msg, NULL);
	return 0;
}

void es_kenv_route_libbpf_log(void)
{
	libbpf_set_print(libbpf_print);
}

int es_kenv_find_tracefs(const char *mounts, char *where, size_t wsz)
{
	return es_mounts_find(mounts, "tracefs", TRACEFS_MAIN, NULL, where, wsz, NULL,
			      0) == ES_OK ||
	       es_mounts_find(mounts, "tracefs", TRACEFS_DEBUG, NULL, where, wsz, NULL,
			      0) == ES_OK;
}

/* Moves this process into a mount namespace of its own whose mounts do not
 * propagate back to the host's (what unshare(1) --mount does). Returns 0,
 * or -1 with errno set. */
static int private_mount_ns(void)
{
	if (unshare(CLONE_NEWNS) != 0)
		return -1;
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

int es_kenv_tracefs_usable(const char *dir)
{
	char path[PATH_MAX];
	int n;

	if (!dir) {
		errno = EINVAL;
		return 0;
	}
	n = snprintf(path, sizeof(path), "%s/" ES_KENV_TRACEFS_PROBE, dir);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return 0;
	}
	return access(path, R_OK) == 0;
}

/* A tracefs that the mount table lists and that shows its tracepoints,
 * else one mounted as may_mount allows. A listed one whose tracepoints are
 * hidden counts as missing: libbpf would find no tracepoint ids there. */
static void probe_tracefs(es_kenv *env, int may_mount)
{
	char hidden[200] = "";

	if (es_kenv_find_tracefs(NULL, env->tracefs_path, sizeof(env->tracefs_path))) {
		if (es_kenv_tracefs_usable(env->tracefs_path)) {
			env->tracefs = 1;
			return;
		}
		snprintf(hidden, sizeof(hidden), "tracefs at %s shows no tracepoints ("
			 ES_KENV_TRACEFS_PROBE ": %s)", env->tracefs_path,
			 strerror(errno));
		env->tracefs_path[0] = '\0';
	}
	if (may_mount == ES_KENV_MOUNT_NONE) {
		if (hidden[0])
			snprintf(env->tracefs_reason, sizeof(env->tracefs_reason),
				 "%s", hidden);
		else
			snprintf(env->tracefs_reason, sizeof(env->tracefs_reason),
				 "tracefs is not mounted (the agent mounts it at "
				 TRACEFS_MAIN " when it runs as root)");
		return;
	}
	if ((may_mount == ES_KENV_MOUNT_PRIVATE && private_mount_ns() != 0) ||
	    mount("tracefs", TRACEFS_MAIN, "tracefs", 0, NULL) != 0) {
		snprintf(env->tracefs_reason, sizeof(env->tracefs_reason),
			 "%s and mounting it at " TRACEFS_MAIN " failed: %s",
			 hidden[0] ? hidden : "tracefs is not mounted",
			 strerror(errno));
		return;
	}
	if (!es_kenv_tracefs_usable(TRACEFS_MAIN)) {
		snprintf(env->tracefs_reason, sizeof(env->tracefs_reason),
			 "tracefs mounted at " TRACEFS_MAIN " shows no tracepoints ("
			 ES_KENV_TRACEFS_PROBE ": %s)", strerror(errno));
		umount2(TRACEFS_MAIN, MNT_DETACH);
		return;
	}
	env->tracefs = 1;
	env->mounted_tracefs = 1;
	env->private_tracefs = may_mount == ES_KENV_MOUNT_PRIVATE;
	snprintf(env->tracefs_path, sizeof(env->tracefs_path), TRACEFS_MAIN);
	if (!env->private_tracefs)
		es_log_info("kcollect", hidden[0] ? "mounted tracefs (the one listed "
			    "shows no tracepoints)" : "mounted tracefs (it was not mounted)",
			    "path", TRACEFS_MAIN, NULL);
}

static void probe_cgroup2(es_kenv *env, int may_mount)
{
	int mounted = 0;

	if (es_cgroot_find(env->cgroup_root, env->state_dir, may_mount,
			   env->cgroup2_path, sizeof(env->cgroup2_path), &mounted,
			   env->cgroup2_reason, sizeof(env->cgroup2_reason)) != ES_OK)
		return;
	env->cgroup_v2 = 1;
	env->mounted_cgroup2 = mounted;
}

static unsigned ringbuf_size(unsigned want, long page)
{
	unsigned sz = ES_KENV_RINGBUF_MIN;

	if (want == 0)
		want = ES_KENV_RINGBUF_DEFAULT;
	if (page > 0 && (unsigned long)page > sz)
		sz = (unsigned)page;
	while (sz < want && sz < ES_KENV_RINGBUF_MAX)
		sz <<= 1;
	return sz;
}

static void probe_bpf(es_kenv *env)
{
	int fd, e;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "es_probe", 4, 4, 1, NULL);
	if (fd < 0) {
		e = errno;
		snprintf(env->ebpf_reason, sizeof(env->ebpf_reason),
			 "bpf() BPF_MAP_CREATE failed: %s%s", strerror(e),
			 e == EPERM || e == EACCES ? " (needs root or CAP_BPF)" : "");
		return;
	}
	close(fd);
	env->bpf_syscall = 1;
	env->ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
	env->tracepoint =
		libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACEPOINT, NULL) == 1;
	env->raw_tracepoint =
		libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL) == 1;
	env->cgroup_skb =
		libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_CGROUP_SKB, NULL) == 1;
}

es_err es_kenv_probe(es_kenv *env, int may_mount, char *err, size_t errsz)
{
	int force;
	unsigned rb;
	const char *sd, *root, *btf_path;
	char btf_why[sizeof(env->ebpf_reason)];

	if (!env)
		return es_errf(ES_ERR_INVAL, err, errsz, "kenv: no environment");
	force = env->force_procfs;
	rb = env->ringbuf_bytes;
	sd = env->state_dir;
	root = env->cgroup_root;
	btf_path = env->btf_path;
	memset(env, 0, sizeof(*env));
	env->btf_path = btf_path;
	env->force_procfs = force;
	env->state_dir = sd;
	env->cgroup_root = root;
	env->ringbuf_bytes = ringbuf_size(rb, sysconf(_SC_PAGESIZE));
	es_kenv_route_libbpf_log();

	probe_btf(env, btf_path, btf_why, sizeof(btf_why));
	probe_bpf(env);
	if (!env->bpf_syscall || force)
		may_mount = ES_KENV_MOUNT_NONE;
	probe_tracefs(env, may_mount);
	probe_cgroup2(env, may_mount == ES_KENV_MOUNT_HOST);
	if (force)
		snprintf(env->ebpf_reason, sizeof(env->ebpf_reason),
			 "forced by collector-backend=procfs");
	if (env->ebpf_reason[0])
		return ES_OK;
	if (!env->btf)
		snprintf(env->ebpf_reason, sizeof(env->ebpf_reason), "%s", btf_why);
	else if (!env->ringbuf)
		snprintf(env->ebpf_reason, sizeof(env->ebpf_reason),
			 "the kernel has no BPF ring buffer (BPF_MAP_TYPE_RINGBUF, "
			 "Linux 5.8)");
	return ES_OK;
}

void es_kenv_release(es_kenv *env)
{
	if (!env)
		return;
	/* Lazily (MNT_DETACH): a tool that started using the agent's tracefs
	 * meanwhile keeps it until it lets go. */
	if (env->mounted_tracefs && !env->private_tracefs) {
		if (umount2(TRACEFS_MAIN, MNT_DETACH) != 0)
			es_log_warn("kcollect", "cannot unmount the tracefs the agent "
				    "mounted", "path", TRACEFS_MAIN, "error",
				    strerror(errno), NULL);
		else
			es_log_info("kcollect", "unmounted tracefs (the agent had "
				    "mounted it)", "path", TRACEFS_MAIN, NULL);
		env->mounted_tracefs = 0;
	}
	if (!env->mounted_cgroup2)
		return;
	if (umount2(env->cgroup2_path, MNT_DETACH) != 0)
		es_log_warn("kcollect", "cannot unmount the agent's cgroup v2 mount",
			    "path", env->cgroup2_path, "error", strerror(errno),
			    NULL);
	else
		rmdir(env->cgroup2_path);
	env->mounted_cgroup2 = 0;
}

int es_kenv_ebpf_ok(const es_kenv *env, int need_tracefs, int need_cgroup2,
		    char *reason, size_t reasonsz)
{
	const char *why = NULL;

	if (env->ebpf_reason[0])
		why = env->ebpf_reason;
	else if (need_tracefs && !env->tracepoint)
		why = "the kernel cannot load tracepoint programs";
	else if (need_tracefs && !env->tracefs)
		why = env->tracefs_reason;
	else if (need_cgroup2 && !env->cgroup_skb)
		why = "the kernel cannot load cgroup_skb programs";
	else if (need_cgroup2 && !env->cgroup_v2)
		why = env->cgroup2_reason;
	if (!why)
		return 1;
	snprintf(reason, reasonsz, "%s", why);
	return 0;
}

static void row(FILE *out, const char *check, int ok, const char *detail)
{
	fprintf(out, "%-24s %-8s %s\n", check, ok ? "ok" : "missing", detail);
}

void es_kenv_print(const es_kenv *env, FILE *out)
{
	char d[512];

	row(out, "bpf-tracepoint", env->tracepoint,
	    env->tracepoint ? "BPF_PROG_TYPE_TRACEPOINT loads"
			    : "BPF_PROG_TYPE_TRACEPOINT does not load");
	row(out, "bpf-raw-tracepoint", env->raw_tracepoint,
	    env->raw_tracepoint ? "BPF_PROG_TYPE_RAW_TRACEPOINT loads"
				: "BPF_PROG_TYPE_RAW_TRACEPOINT does not load");
	row(out, "bpf-cgroup-skb", env->cgroup_skb,
	    env->cgroup_skb ? "BPF_PROG_TYPE_CGROUP_SKB loads"
			    : "BPF_PROG_TYPE_CGROUP_SKB does not load");
	if (env->tracefs)
		snprintf(d, sizeof(d), "%s%s", env->tracefs_path,
			 env->private_tracefs ? " (not mounted: run mounts it; check "
						"did so in a private mount namespace)"
			 : env->mounted_tracefs ? " (mounted by the agent)" : "");
	else
		snprintf(d, sizeof(d), "%s", env->tracefs_reason);
	row(out, "kernel-tracefs", env->tracefs, d);
	if (env->cgroup_v2)
		snprintf(d, sizeof(d), "%s%s", env->cgroup2_path,
			 env->mounted_cgroup2 ? " (mounted by the agent)" : "");
	else
		snprintf(d, sizeof(d), "%s", env->cgroup2_reason);
	row(out, "kernel-cgroup-v2", env->cgroup_v2, d);
	snprintf(d, sizeof(d), "%s", env->ebpf_reason[0] ? env->ebpf_reason
		 : "bpf(), BTF and ring buffers usable");
	row(out, "ebpf", !env->ebpf_reason[0], d);
}
