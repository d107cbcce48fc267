/*
 * kc_process_scan.c - the /proc fallback of the process collector: a scan
 * every KCP_SCAN_MS that diffs the set of processes (proc(5): /proc/<pid>/
 * stat fields comm, ppid, starttime). A new pid (or a pid with a new
 * starttime) is a fork, and also an exec when its comm differs from its
 * parent's; a comm change of a known process is an exec; a pid that is
 * gone is an exit. Processes that live shorter than a scan period are not
 * seen, and exit codes are unknown. Kernel threads (PF_KTHREAD in the stat
 * flags: kthreadd and its children) are left out: a kworker renaming itself
 * is not an exec.
 */
#define _GNU_SOURCE
#include "kcollect/kc_process_int.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "es_log.h"

/* PF_KTHREAD, the bit of kernel threads in task->flags (the flags field
 * of /proc/pid/stat, proc(5)): kthreadd and every thread it starts carry
 * it. Pid 2 / ppid 2 are not tested: in a pid namespace (a /proc mounted
 * inside a container) they are user processes. */
#define KCP_PF_KTHREAD 0x00200000u

/* Parses /proc/<pid>/stat text. Returns 0, 1 for a kernel thread
 * (PF_KTHREAD in flags), or -1. */
static int parse_stat(const char *buf, kcp_proc *out)
{
	const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	unsigned long long start = 0;
	unsigned ppid = 0, flags = 0;
	size_t n;
	int i;
	const char *p;

	if (!open || !close || close < open)
		return -1;
	n = (size_t)(close - open - 1);
	if (n >= sizeof(out->comm))
		n = sizeof(out->comm) - 1;
	memcpy(out->comm, open + 1, n);
	out->comm[n] = '\0';
	/* after ")": state(3) ppid(4) pgrp session tty_nr tpgid flags(9) ...
	 * starttime(22) */
	p = close + 1;
	if (sscanf(p, " %*c %u %*d %*d %*d %*d %u", &ppid, &flags) != 2)
		return -1;
	for (i = 3; i < 22 && p; i++) {
		p = strchr(p + 1, ' ');
	}
	if (!p || sscanf(p, " %llu", &start) != 1)
		return -1;
	out->ppid = ppid;
	out->start = start;
	return (flags & KCP_PF_KTHREAD) != 0;
}

static int read_small(int dirfd, const char *path, char *buf, size_t sz)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sz - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	uint32_t x = ((const kcp_proc *)a)->pid, y = ((const kcp_proc *)b)->pid;

	return x < y ? -1 : x > y;
}

static const kcp_proc *find(const kcp_proc *v, size_t n, uint32_t pid)
{
	kcp_proc key;

	memset(&key, 0, sizeof(key));
	key.pid = pid;
	return n ? bsearch(&key, v, n, sizeof(*v), cmp_pid) : NULL;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double uptime_ticks(long hz)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9) * (double)hz;
}

static void count(kc_process *p, es_kcollector *kc, uint64_t cgid, int type)
{
	kcp_cg *c = kcp__cg(p, cgid, 1);

	kc->events++;
	if (type == ES_PROC_EV_EXEC) {
		p->execs++;
		p->ev_exec++;
		if (c)
			c->execs++;
	} else if (type == ES_PROC_EV_FORK) {
		p->forks++;
		p->ev_fork++;
		if (c)
			c->forks++;
	} else {
		p->exits++;
		p->ev_exit++;
		if (c)
			c->exits++;
	}
	kc->lost = p->lost_table;
}

static void note_exec(kc_process *p, int procfd, const kcp_proc *q)
{
	char path[64];
	kcp_exec e;
	ssize_t n;

	memset(&e, 0, sizeof(e));
	e.wall_ms = wall_ms();
	e.pid = q->pid;
	e.ppid = q->ppid;
	e.cgid = q->cgid;
	memcpy(e.comm, q->comm, sizeof(e.comm));
	snprintf(path, sizeof(path), "%u/exe", q->pid);
	n = readlinkat(procfd, path, e.filename, sizeof(e.filename) - 1);
	e.filename[n > 0 ? n : 0] = '\0';
	kcp__note_exec(p, &e);
}

static void note_exit(kc_process *p, const kcp_proc *q, double now_ticks)
{
	kcp_exit e;

	memset(&e, 0, sizeof(e));
	e.wall_ms = wall_ms();
	e.pid = q->pid;
	e.ppid = q->ppid;
	e.cgid = q->cgid;
	memcpy(e.comm, q->comm, sizeof(e.comm));
	e.lifetime_s = p->hz > 0 && now_ticks >= (double)q->start
			       ? (now_ticks - (double)q->start) / (double)p->hz
			       : -1;
	kcp__note_exit(p, &e);
}

/* Reads every process into a new array sorted by pid; NULL on failure. */
static kcp_proc *read_all(int procfd, size_t *nout)
{
	DIR *d = fdopendir(dup(procfd));
	struct dirent *de;
	kcp_proc *v = NULL, *t;
	size_t n = 0, cap = 0;
	char path[300], buf[1024];

	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		kcp_proc q;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		memset(&q, 0, sizeof(q));
		q.pid = (uint32_t)strtoul(de->d_name, NULL, 10);
		snprintf(path, sizeof(path), "%s/stat", de->d_name);
		if (read_small(procfd, path, buf, sizeof(buf)) != 0 ||
		    parse_stat(buf, &q) != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			t = realloc(v, cap * sizeof(*v));
			if (!t) {
				free(v);
				closedir(d);
				return NULL;
			}
			v = t;
		}
		v[n++] = q;
	}
	closedir(d);
	qsort(v, n, sizeof(*v), cmp_pid);
	*nout = n;
	if (!v)
		v = calloc(1, sizeof(*v));
	return v;
}

void kcp__scan(es_kcollector *kc)
{
	kc_process *p = kc->priv;
	int procfd = open(p->proc_root[0] ? p->proc_root : "/proc",
			  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	double now_ticks = uptime_ticks(p->hz);
	kcp_proc *cur;
	size_t n = 0, i;
	char path[32];

	if (procfd < 0)
		return;
	cur = read_all(procfd, &n);
	if (!cur) {
		close(procfd);
		return;
	}
	for (i = 0; i < n; i++) {
		kcp_proc *q = &cur[i];
		const kcp_proc *old = find(p->procs, p->nprocs, q->pid);
		const kcp_proc *parent;

		if (old && old->start == q->start) {
			q->cgid = old->cgid;
			if (p->scanned && strcmp(old->comm, q->comm) != 0) {
				count(p, kc, q->cgid, ES_PROC_EV_EXEC);
				note_exec(p, procfd, q);
			}
			continue;
		}
		snprintf(path, sizeof(path), "%u/cgroup", q->pid);
		q->cgid = es_cgname_proc_id(kc->names, procfd, path);
		if (!p->scanned)
			continue;
		if (old) {
			count(p, kc, old->cgid, ES_PROC_EV_EXIT);
			note_exit(p, old, now_ticks);
		}
		count(p, kc, q->cgid, ES_PROC_EV_FORK);
		parent = find(cur, n, q->ppid);
		if (!parent || strcmp(parent->comm, q->comm) != 0) {
			count(p, kc, q->cgid, ES_PROC_EV_EXEC);
			note_exec(p, procfd, q);
		}
	}
	for (i = 0; p->scanned && i < p->nprocs; i++)
		if (!find(cur, n, p->procs[i].pid)) {
			count(p, kc, p->procs[i].cgid, ES_PROC_EV_EXIT);
			note_exit(p, &p->procs[i], now_ticks);
		}
	free(p->procs);
	p->procs = cur;
	p->nprocs = n;
	p->scanned = 1;
	close(procfd);
}

es_err kcp__scan_start(es_kcollector *kc, const es_kenv *env, char *err,
		       size_t errsz)
{
	kc_process *p;

	(void)env;
	if (access("/proc/self/stat", R_OK) != 0)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "/proc/self/stat: %s", strerror(errno));
	p = calloc(1, sizeof(*p));
	if (!p)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	p->hz = sysconf(_SC_CLK_TCK);
	kc->priv = p;
	kc->poll_ms = KCP_SCAN_MS;
	kcp__scan(kc);
	return ES_OK;
}
