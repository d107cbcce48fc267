/*
 * kc_process_int.h - what kc_process.c (eBPF backend, report) and
 * kc_process_scan.c (the /proc scan fallback) share; not for other modules.
 */
#ifndef ES_AGENT_KC_PROCESS_INT_H
#define ES_AGENT_KC_PROCESS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "kcollect/cgroupname.h"
#include "kcollect/kcollect.h"
#include "process.h"

#define KCP_RECENT 32          /* recentExecs / recentExits kept */
#define KCP_TOP_CGROUPS 50     /* byCgroup entries reported */
#define KCP_DRAIN_MS 100       /* ring buffer drain period (wake-ups are batched) */
#define KCP_SCAN_MS 200        /* /proc scan period of the fallback */
#define KCP_SIGNAL_BASE 256    /* exit codes >= this are signals (code - base) */

typedef struct kcp_exec {
	int64_t wall_ms;
	uint32_t pid, ppid;
	uint64_t cgid;
	char comm[ES_PROC_COMM_LEN];
	char filename[ES_PROC_FILENAME_LEN];
} kcp_exec;

typedef struct kcp_exit {
	int64_t wall_ms;
	uint32_t pid, ppid;
	uint64_t cgid;
	char comm[ES_PROC_COMM_LEN];
	int has_code;       /* 0 on the fallback: /proc does not keep it */
	uint32_t status, signal;
	double lifetime_s;  /* < 0: unknown */
} kcp_exit;

typedef struct kcp_code {
	uint16_t code;      /* exit status 0..255, or KCP_SIGNAL_BASE + signal */
	uint32_t n;
} kcp_code;

typedef struct kcp_cg {
	uint64_t id;
	uint64_t execs, forks, exits;
	kcp_code *codes;
	uint32_t ncodes;
} kcp_cg;

typedef struct kcp_proc {
	uint32_t pid, ppid;
	uint64_t start;     /* starttime, clock ticks since boot */
	uint64_t cgid;
	char comm[ES_PROC_COMM_LEN];
} kcp_proc;

struct process_bpf;

typedef struct kc_process {
	struct process_bpf *skel;
	uint64_t execs, forks, exits;          /* totals */
	uint64_t ev_exec, ev_exit, ev_fork;    /* events delivered */
	uint64_t lost_exec, lost_exit, lost_fork, lost_cgmap, lost_table;
	kcp_exec recent_exec[KCP_RECENT];
	size_t nexec, exec_next;
	kcp_exit recent_exit[KCP_RECENT];
	size_t nexit, exit_next;
	kcp_cg *cg;                            /* sorted by id */
	size_t ncg, capcg;
	/* the /proc scan */
	kcp_proc *procs;                       /* sorted by pid */
	size_t nprocs;
	int scanned;
	long hz;
	char proc_root[256];  /* where /proc is; "" = "/proc" (tests use fixture trees) */
} kc_process;

/* The cgroup entry id, created when create (NULL when the table is full,
 * counted in lost_table, or on allocation failure). */
kcp_cg *kcp__cg(kc_process *p, uint64_t id, int create);
void kcp__note_exec(kc_process *p, const kcp_exec *e);
/* code: the exit status or KCP_SIGNAL_BASE + signal; ignored unless
 * e->has_code. */
void kcp__note_exit(kc_process *p, const kcp_exit *e);
void kcp__free(kc_process *p);

/* kc_process_scan.c */
es_err kcp__scan_start(es_kcollector *kc, const es_kenv *env, char *err,
		       size_t errsz);
/* One scan of <proc_root> (kc->priv a kc_process): counts and notes the
 * forks, execs and exits since the previous scan (the first scan only
 * learns the processes). Kernel threads are skipped. */
void kcp__scan(es_kcollector *kc);

#endif
