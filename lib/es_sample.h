/*
 * es_sample.h - one collection round of the node's state as C fields: what
 * the agent's collectors put into the Node status `usage` and `collectors`
 * members (proto/PROTOCOL.md "Node"), typed, so that the readers of the
 * round (HealthRule metrics in es_health.h, the node conditions, the
 * node_* families of /metrics) name fields the compiler checks instead of
 * JSON paths.
 *
 * A number that was not collected is ES_SAMPLE_NONE (a NaN; es_sample_has
 * tells), a string that was not collected is NULL. Numbers are doubles, the
 * values the JSON carries. The arrays and strings are owned by the sample.
 */
#ifndef ES_SAMPLE_H
#define ES_SAMPLE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "es_err.h"

/* A number that was not collected. */
#define ES_SAMPLE_NONE ((double)NAN)

/* The usage collectors, in the bit order of ES_COLLECT_* (es_obj.h):
 * index i is the collector es_collector_names[i]. */
enum {
	ES_SAMPLE_CPU = 0,
	ES_SAMPLE_MEMORY = 1,
	ES_SAMPLE_FILESYSTEM = 2,
	ES_SAMPLE_NETWORK = 3,
	ES_SAMPLE_PROCESSES = 4,
	ES_SAMPLE_COLLECTORS = 5,
};

/* One usage collector's entry of status.collectors. */
typedef struct es_sample_collector {
	int enabled;   /* 1: it ran this round */
	int healthy;   /* 1: its sources could be read */
	char *error;   /* why it is not healthy; NULL when none was given */
} es_sample_collector;

/* One /proc/meminfo field (usage.memory member). */
typedef struct es_sample_mem {
	char *name;    /* "MemTotal", "Active(anon)", "HugePages_Total" */
	double value;  /* bytes for kB fields, else as written */
} es_sample_mem;

/* One usage.filesystems entry. */
typedef struct es_sample_fs {
	char *device, *mountpoint, *fstype;
	double size_bytes, avail_bytes, free_bytes; /* bytes */
	double files, files_free;                   /* inodes */
} es_sample_fs;

/* One usage.network entry (/proc/net/dev counters since boot). */
typedef struct es_sample_iface {
	char *name;    /* "eth0"; loopback included */
	double receive_bytes, receive_packets, receive_errors, receive_drop;
	double transmit_bytes, transmit_packets, transmit_errors, transmit_drop;
} es_sample_iface;

typedef struct es_sample {
	es_sample_collector collectors[ES_SAMPLE_COLLECTORS];
	int has_cpu;             /* usage.cpu is present */
	double cpu_utilization;  /* busy share since the previous round, 0..1 */
	double load1, load5, load15; /* /proc/loadavg */
	int has_memory;          /* usage.memory is present */
	double mem_total, mem_available; /* MemTotal, MemAvailable, bytes */
	es_sample_mem *mem;      /* every usage.memory field, in order */
	size_t nmem;
	int has_filesystems;     /* usage.filesystems is present */
	es_sample_fs *fs;
	size_t nfs;
	int has_network;         /* usage.network is present */
	es_sample_iface *ifaces;
	size_t nifaces;
	double proc_count, proc_threads, proc_running, proc_blocked;
	int64_t pid_max;         /* kernel.pid_max; <= 0 when unknown */
} es_sample;

/* Makes s empty: nothing collected, no arrays. s must not own anything. */
void es_sample_init(es_sample *s);

/* Frees what s owns and makes it empty (es_sample_init). NULL-safe. */
void es_sample_clear(es_sample *s);

/* Hands src over to dst: dst's old contents are freed, src is left empty. */
void es_sample_move(es_sample *dst, es_sample *src);

/* 1 when v was collected (not ES_SAMPLE_NONE), else 0. */
int es_sample_has(double v);

/*
 * Replace s->mem, s->fs or s->ifaces (and their count) with n entries that
 * hold nothing yet (NULL strings, ES_SAMPLE_NONE numbers); n may be 0.
 * The old entries are freed. Errors: ES_ERR_NOMEM (s keeps no entries).
 */
es_err es_sample_mem_alloc(es_sample *s, size_t n);
es_err es_sample_fs_alloc(es_sample *s, size_t n);
es_err es_sample_ifaces_alloc(es_sample *s, size_t n);

/* Sets *dst (a string member of s, freed first) to a copy of src (NULL:
 * none). Errors: ES_ERR_NOMEM (*dst is then NULL). */
es_err es_sample_set_str(char **dst, const char *src);

/* The first filesystem mounted at "/", or NULL. */
const es_sample_fs *es_sample_root_fs(const es_sample *s);

/* Number of interfaces other than the loopback "lo" (entries without a
 * name are not counted). */
size_t es_sample_ifaces_besides_lo(const es_sample *s);

#endif
