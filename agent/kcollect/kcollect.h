/*
 * kcollect.h - kernel-level collectors: each runs on an eBPF
 * backend (CO-RE skeleton, tracepoints / raw tracepoints / cgroup hooks
 * only) or, where the host cannot, on its /proc or /sys equivalent, or is
 * reported unavailable with the reason. The backend is chosen once at
 * start and said: in the log, in `edgesync-agent check`, and in the Node's
 * status.collectors (PROTOCOL.md "Node").
 *
 * Threading: everything here runs on the agent's one event-loop thread.
 *
 * Adding a collector (docs/HACKING.md, "Adding a collector"): write
 * `const es_kcollector_ops es_kc_<name>_ops` in agent/kcollect/kc_<name>.c,
 * declare it below and add one line to the registry in
 * agent/kcollect/kcollect.c.
 */
#ifndef ES_AGENT_KCOLLECT_H
#define ES_AGENT_KCOLLECT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include "kcollect/cgroupname.h"
#include "es_err.h"

struct bpf_object_open_opts; /* <bpf/libbpf.h> */

struct lws_context;

typedef enum es_kbackend {
	ES_KBACKEND_UNAVAILABLE = 0,
	ES_KBACKEND_EBPF = 1,
	ES_KBACKEND_PROCFS = 2,
} es_kbackend;

/* Size of the one event ring buffer the collectors share (setting
 * ringbuf-bytes; bpf/es_events.h), bytes. A BPF ring buffer's size is a
 * power of 2 and a multiple of the page size (the kernel's BPF ring
 * buffer documentation: max_entries of BPF_MAP_TYPE_RINGBUF). */
#define ES_KENV_RINGBUF_DEFAULT (128u * 1024)
#define ES_KENV_RINGBUF_MIN 4096u
#define ES_KENV_RINGBUF_MAX (64u * 1024 * 1024)

/* What the host offers, probed once at start (es_kenv_probe). */
typedef struct es_kenv {
	int bpf_syscall;   /* 1: BPF_MAP_CREATE works (root / CAP_BPF) */
	int btf;           /* 1: BTF for CO-RE: the kernel's or btf_file */
	char btf_file[PATH_MAX]; /* the BTF file libbpf relocates against when
				  * the kernel has none (setting btf-path,
				  * es_kenv_btf_resolve); "" = the kernel's */
	int ringbuf;       /* 1: BPF_MAP_TYPE_RINGBUF is supported */
	int tracepoint;    /* 1: BPF_PROG_TYPE_TRACEPOINT loads */
	int raw_tracepoint; /* 1: BPF_PROG_TYPE_RAW_TRACEPOINT loads */
	int cgroup_skb;    /* 1: BPF_PROG_TYPE_CGROUP_SKB loads */
	int tracefs;       /* 1: tracefs is mounted and shows its tracepoints
			    * (tracefs_path; es_kenv_tracefs_usable) */
	int cgroup_v2;     /* 1: a cgroup v2 hierarchy is mounted (cgroup2_path) */
	char tracefs_path[128];  /* where tracefs is (mounted by the agent when missing and allowed) */
	char cgroup2_path[256];  /* the cgroup v2 hierarchy: cgroup-root, the host's, or <state-dir>/cgroup2 */
	int mounted_tracefs, mounted_cgroup2; /* 1: the agent mounted it (logged, in check) */
	int private_tracefs;     /* 1: mounted_tracefs, in this process's own
				  * mount namespace (ES_KENV_MOUNT_PRIVATE) */
	char ebpf_reason[256];   /* why eBPF is not usable at all; "" when it is */
	char tracefs_reason[256]; /* why tracefs is missing; "" when present */
	char cgroup2_reason[160]; /* why cgroup v2 is missing; "" when present */
	/* Inputs, set by the caller before es_kenv_probe: */
	int force_procfs;        /* setting collector-backend=procfs */
	unsigned ringbuf_bytes;  /* setting ringbuf-bytes; 0 = ES_KENV_RINGBUF_DEFAULT */
	const char *cgroup_root; /* borrowed; setting cgroup-root; NULL or "" =
				  * find one (agent/host/cgroot.h) */
	const char *state_dir;   /* borrowed; where a cgroup2 mount goes; NULL = never mount one */
	const char *btf_path;    /* borrowed; setting btf-path: a BTF file, or a
				  * directory of <kernel release>.btf files;
				  * NULL or "" = the kernel's BTF only */
} es_kenv;

/* The kernel's own BTF, which es_kenv_probe prefers to btf-path. */
#define ES_KENV_BTF_VMLINUX "/sys/kernel/btf/vmlinux"

/*
 * Resolves the setting btf-path for the kernel release `release` (uname -r)
 * into out (outsz bytes): a regular file is used as it is; in a directory
 * the file <dir>/<release>.btf is taken (the layout of BTFHub's archives,
 * unpacked). The file must parse as BTF (libbpf's btf__parse), so a wrong
 * file is named here and not as a load failure of every collector.
 * Returns ES_OK with out set; ES_ERR_NOTFOUND with err "btf-path <p>: <why>"
 * when the path, or the release's file in the directory, does not exist or
 * cannot be read; ES_ERR_PARSE with err "btf-path <f>: not BTF: <why>";
 * ES_ERR_INVAL (an argument NULL or empty, out too small).
 */
es_err es_kenv_btf_resolve(const char *btf_path, const char *release,
			   char *out, size_t outsz, char *err, size_t errsz);

/*
 * Fills opts (LIBBPF_OPTS-initialised by the caller, or zeroed here with
 * its sz set) for <name>_bpf__open_opts: btf_custom_path is env->btf_file
 * when set (borrowed from env, which must outlive the open), else NULL so
 * libbpf uses the kernel's BTF. Returns opts. env NULL: no custom path.
 */
struct bpf_object_open_opts *es_kenv_open_opts(const es_kenv *env,
					       struct bpf_object_open_opts *opts);

/* may_mount of es_kenv_probe: what to mount when it is missing. */
#define ES_KENV_MOUNT_NONE 0    /* nothing */
#define ES_KENV_MOUNT_HOST 1    /* `run`: tracefs and cgroup v2, for the host */
/* `check`: the tracefs `run` would mount, but in a mount namespace of this
 * process only (unshare(2) CLONE_NEWNS, mounts made private), so that the
 * collectors are tried as `run` would start them and the host is left as
 * it is; no cgroup v2 (`run` would mount that in its state directory). */
#define ES_KENV_MOUNT_PRIVATE 2

/*
 * Probes the host into env (its input members set by the caller, the rest
 * overwritten): the bpf() syscall (a tiny BPF_MAP_CREATE), BTF, the ring
 * buffer map type and the tracepoint, raw tracepoint and cgroup_skb program
 * types (libbpf_probe_bpf_*), tracefs (es_kenv_find_tracefs, then
 * es_kenv_tracefs_usable: a listed tracefs whose tracepoints cannot be seen
 * counts as missing) and cgroup v2
 * (env->cgroup_root when set, else /proc/self/mountinfo; es_cgroot_find in
 * cgroot.h). When the bpf() syscall works and collector-backend is not
 * procfs, may_mount (ES_KENV_MOUNT_*) says what is mounted when missing:
 * with ES_KENV_MOUNT_HOST tracefs at /sys/kernel/tracing and cgroup v2 at
 * <state_dir>/cgroup2 (created 0700), each logged at info; with
 * ES_KENV_MOUNT_PRIVATE tracefs only, privately. Also routes libbpf's log through es_log (component
 * "libbpf"; see es_kenv_route_libbpf_log). A host without eBPF is not an
 * error: the reasons are in env. env->ringbuf_bytes is rounded up to a power
 * of 2 within [ES_KENV_RINGBUF_MIN, ES_KENV_RINGBUF_MAX].
 * Errors: ES_ERR_INVAL (env NULL). Never fails for what the host lacks.
 */
es_err es_kenv_probe(es_kenv *env, int may_mount, char *err, size_t errsz);

/*
 * The one tracefs lookup of `run` and `check`: copies into where (wsz
 * bytes) the mount point of tracefs at /sys/kernel/tracing, else at
 * /sys/kernel/debug/tracing, as listed in the mount table at mounts (NULL:
 * /proc/self/mountinfo; es_mounts.h). Returns 1 when one is mounted, else 0
 * (also when the table cannot be read).
 */
int es_kenv_find_tracefs(const char *mounts, char *where, size_t wsz);

/* The tracepoint whose id file es_kenv_tracefs_usable looks for, relative
 * to the tracefs mount point (the process collector attaches to it). */
#define ES_KENV_TRACEFS_PROBE "events/sched/sched_process_exec/id"

/*
 * 1 when the tracefs at dir shows its tracepoints: dir/ES_KENV_TRACEFS_PROBE
 * is readable, so libbpf can resolve tracepoint ids there. A mount table
 * entry alone does not say so: a mount over a parent directory hides the
 * tracefs it lists (systemd-nspawn mounts sysfs over /sys/kernel). Else 0,
 * with errno set by access(2) (ENOENT: nothing there).
 */
int es_kenv_tracefs_usable(const char *dir);

/*
 * Unmounts what es_kenv_probe mounted in the host's mount namespace
 * (ES_KENV_MOUNT_HOST): tracefs at /sys/kernel/tracing and the cgroup2
 * under the state directory (removing its directory), lazily (MNT_DETACH).
 * What was mounted before the agent stays. Call after the collectors
 * stopped. NULL-safe.
 */
void es_kenv_release(es_kenv *env);

/*
 * 1 when eBPF collectors can be tried on this host with the listed needs
 * (need_tracefs: classic tracepoints; need_cgroup2: cgroup hooks; ringbuf
 * and BTF are always needed). Otherwise 0 with the first missing thing in
 * reason ("forced by collector-backend=procfs", "no BTF: ...", ...).
 */
int es_kenv_ebpf_ok(const es_kenv *env, int need_tracefs, int need_cgroup2,
		    char *reason, size_t reasonsz);

/* Routes libbpf's print callback through es_log with component "libbpf":
 * LIBBPF_WARN→warn, LIBBPF_INFO→info, LIBBPF_DEBUG→debug (printed only at
 * log-level debug), without libbpf's "libbpf: " prefix. Idempotent. */
void es_kenv_route_libbpf_log(void);

/* Prints the probe results as "name result detail" rows, one per line, in
 * the format of `edgesync-agent check`. */
void es_kenv_print(const es_kenv *env, FILE *out);

typedef struct es_kcollector es_kcollector;

typedef struct es_kcollector_ops {
	const char *name;  /* "process", "tcp", "cgroup-network", "oom", "blockio" */
	/* The ES_EV_SRC_* of the records this collector's eBPF side writes into
	 * the set's event ring (bpf/es_events.h); 0 when it writes none. */
	uint32_t source;
	/* Handles one ring record of this source (size bytes at data, borrowed
	 * for the call); on the eBPF backend only. NULL when source is 0. */
	void (*on_event)(es_kcollector *kc, const void *data, size_t size);
	/* Loads and attaches the eBPF side (its ring buffer map is
	 * kc->ring_fd, es_kc_skel_load). ES_ERR_UNSUPPORTED with the reason in
	 * err when this kernel can't; never aborts; leaves kc->priv freed or
	 * NULL on failure (stop is not called after a failed start). May set
	 * kc->poll_ms. */
	es_err (*start_ebpf)(es_kcollector *kc, const es_kenv *env, char *err,
			     size_t errsz);
	/* The /proc or /sys fallback; NULL when there is none. Same rules. */
	es_err (*start_procfs)(es_kcollector *kc, const es_kenv *env, char *err,
			       size_t errsz);
	/* Reads what the eBPF side counts (after the set has drained the ring
	 * into on_event), or scans /proc. Called every kc->poll_ms when set and
	 * before each report. */
	void (*poll)(es_kcollector *kc);
	/* Adds this collector's member to status.activity (e.g. "processes").
	 * Errors: ES_ERR_NOMEM. */
	es_err (*report)(es_kcollector *kc, cJSON *activity);
	/* Detaches and frees kc->priv; NULL-safe on a never-started kc. */
	void (*stop)(es_kcollector *kc);
} es_kcollector_ops;

struct es_kcollector {
	const es_kcollector_ops *ops;
	es_kbackend backend;
	char reason[256];   /* why not ebpf (or why unavailable); "" on ebpf */
	int ring_fd;        /* the set's event ring buffer map, or -1 (none);
			     * borrowed */
	unsigned poll_ms;   /* call poll this often (ms) regardless of fd; 0 = never */
	uint64_t events;    /* events handled */
	uint64_t lost;      /* events lost (ring-buffer reservation failures, full maps) */
	const es_kenv *env; /* borrowed from the set */
	es_cgname *names;   /* borrowed from the set: the one cgroup id → path
			     * cache of its collectors (over env's cgroup v2
			     * mount; every lookup misses without one) */
	void *priv;
};

/* The registry, in agent/kcollect/kcollect.c. */
extern const es_kcollector_ops es_kc_process_ops;
extern const es_kcollector_ops es_kc_tcp_ops;
extern const es_kcollector_ops es_kc_cgroupnet_ops;
extern const es_kcollector_ops es_kc_oom_ops;
extern const es_kcollector_ops es_kc_blockio_ops;

/* Bits of the enabled mask: bit i enables registry entry i. */
#define ES_KC_ALL (~0u)

/* The registry: *n gets its length. */
const es_kcollector_ops *const *es_kcollectors_registry(size_t *n);

/*
 * Parses a comma-separated list of collector names ("process,tcp"; "" or
 * "all" = ES_KC_ALL) into a mask. Errors: ES_ERR_INVAL naming the unknown
 * collector.
 */
es_err es_kcollectors_mask(const char *names, unsigned *mask, char *err,
			   size_t errsz);

typedef struct es_kcollectors es_kcollectors;

/*
 * Starts every registry collector whose bit is in mask: eBPF when
 * es_kenv_ebpf_ok and start_ebpf succeed, else the fallback, else
 * unavailable; each outcome logged at info (name, backend, reason). env is
 * borrowed and must outlive the set. The collectors share one cgroup name
 * cache (es_kcollector.names) and one event ring buffer of
 * env->ringbuf_bytes (es_kcollector.ring_fd; bpf/es_events.h), both owned
 * by the set; the ring is created only when eBPF is usable and kept only
 * while a collector writes into it. Collectors outside mask are kept,
 * disabled, so that they are reported (enabled: false). Failures of one
 * collector (or of the ring) never fail the set. Calls es_heap_trim
 * afterwards (agent/runtime/heap.h): the kernel BTF libbpf parsed is freed after
 * load.
 * Errors: ES_ERR_NOMEM only.
 */
es_err es_kcollectors_start(const es_kenv *env, unsigned mask,
			    es_kcollectors **out, char *err, size_t errsz);

/* Polls every running collector (see es_kcollector_ops.poll). NULL-safe. */
void es_kcollectors_poll(es_kcollectors *set);

/*
 * Adds status.activity (an object, one member per running collector's
 * report) and appends one entry per kernel collector to status.collectors
 * (created when absent): {name, backend: "ebpf"|"procfs"|"unavailable",
 * enabled, healthy, reason (when not ebpf), events, eventsLost}. Polls
 * first. set may be NULL (nothing added). Errors: ES_ERR_NOMEM.
 */
es_err es_kcollectors_report(es_kcollectors *set, cJSON *status);

/* Number of collectors in the set and the i-th (borrowed). */
size_t es_kcollectors_count(const es_kcollectors *set);
es_kcollector *es_kcollectors_get(es_kcollectors *set, size_t i);

/* "ebpf", "procfs" or "unavailable". */
const char *es_kbackend_str(es_kbackend b);

/*
 * Hooks the set into the agent's event loop: the event ring's epoll fd is
 * adopted as a raw file descriptor (LWS_ADOPT_RAW_FILE_DESC, on a vhost of
 * its own without a listener) and the ring drained into the collectors'
 * on_event on LWS_CALLBACK_RAW_RX_FILE; collectors with poll_ms get an
 * lws_sul timer that drains the ring and polls them. Call once after
 * es_kcollectors_start; es_kcollectors_stop undoes it.
 * Errors: ES_ERR_NOMEM, ES_ERR_IO (the vhost or an adoption failed; err
 * says which; the collectors stay usable by es_kcollectors_report).
 */
es_err es_kcollectors_watch(es_kcollectors *set, struct lws_context *ctx,
			    char *err, size_t errsz);

/* Stops every collector, frees the set. Call before the lws context is
 * destroyed when watched. NULL-safe. */
void es_kcollectors_stop(es_kcollectors *set);

/*
 * `edgesync-agent check`: with env, probed by the caller (es_kenv_probe
 * with ES_KENV_MOUNT_PRIVATE, so that a tracefs `run` would mount is there;
 * borrowed), starts every kernel collector as `run` would (attaching its
 * programs), prints the probe rows and one row per collector
 * ("collector/<name>  ebpf|procfs|unavailable  reason"), and stops them.
 * Returns the number of collectors that are unavailable.
 */
int es_kcollectors_check(FILE *out, const es_kenv *env);

/* Sums the 64-bit value at key of an array or per-CPU array map (per-CPU
 * when percpu). Returns 0 on success, -errno otherwise. For collectors'
 * `lost` counters. */
int es_kc_map_sum_u64(int map_fd, uint32_t key, int percpu, uint64_t *out);

#endif
