/*
 * kcprocfs.h - /proc parsers behind the `procfs` fallbacks of the kernel
 * collectors (kc_tcp.c, kc_oom.c, kc_blockio.c). Paths are arguments so
 * tests run them on fixtures (tests/fixtures/procfs/kc/).
 */
#ifndef ES_AGENT_KCPROCFS_H
#define ES_AGENT_KCPROCFS_H

#include <stddef.h>
#include <stdint.h>
#include "es_err.h"

/* TCP states as numbered in /proc/net/tcp's "st" column (the kernel's
 * TCP_ESTABLISHED .. TCP_CLOSING, as tcp_info.tcpi_state reports them). */
enum {
	ES_KCP_TCP_ESTABLISHED = 1,
	ES_KCP_TCP_TIME_WAIT = 6,
	ES_KCP_TCP_CLOSE = 7,
	ES_KCP_TCP_LISTEN = 10,
	ES_KCP_TCP_STATE_MAX = 12,
};

/* One row of /proc/net/tcp or /proc/net/tcp6. */
typedef struct es_kcprocfs_tcp_conn {
	uint8_t family;      /* 4 or 6 */
	uint8_t state;       /* 1..12, see tcp_states.h */
	uint16_t sport;      /* local port, host order */
	uint16_t dport;      /* remote port, host order */
	uint8_t saddr[16];   /* local address, network order (IPv4: first 4) */
	uint8_t daddr[16];   /* remote address */
} es_kcprocfs_tcp_conn;

/* A growable array of connections; zero-initialise, free with
 * es_kcprocfs_tcp_set_clear. */
typedef struct es_kcprocfs_tcp_set {
	es_kcprocfs_tcp_conn *v;
	size_t n, cap;
} es_kcprocfs_tcp_set;

void es_kcprocfs_tcp_set_clear(es_kcprocfs_tcp_set *s); /* NULL-safe; frees v */

/*
 * Appends the rows of path, a /proc/net/tcp (family 4) or /proc/net/tcp6
 * (family 6) file, to set. The header line is skipped; addresses are the
 * kernel's "%08X" words of the address in host byte order (proc(5),
 * /proc/net/tcp: local_address and rem_address).
 * Errors: ES_ERR_IO (cannot open: err names the path), ES_ERR_PARSE (a
 * malformed row: err names path and line; set keeps the rows before it),
 * ES_ERR_INVAL (family not 4 or 6), ES_ERR_NOMEM.
 */
es_err es_kcprocfs_tcp_read(const char *path, int family, es_kcprocfs_tcp_set *set,
			    char *err, size_t errsz);

/* Connection counts between two scans. */
typedef struct es_kcprocfs_tcp_delta {
	uint64_t opened;   /* new connections whose local port does not listen */
	uint64_t accepted; /* new connections on a listening local port */
	uint64_t closed;   /* connections of prev that are gone or in TIME_WAIT/CLOSE */
	uint64_t states[ES_KCP_TCP_STATE_MAX + 1]; /* rows of cur per state */
} es_kcprocfs_tcp_delta;

/*
 * Compares two scans. A connection is its 4-tuple; it counts as live in
 * every state but LISTEN, TIME_WAIT and CLOSE. Sorts both sets in place.
 * Connections opened and closed between the scans are not seen: that is
 * the limit of this fallback.
 */
void es_kcprocfs_tcp_diff(es_kcprocfs_tcp_set *prev, es_kcprocfs_tcp_set *cur,
			  es_kcprocfs_tcp_delta *d);

/* "ESTABLISHED", "SYN_SENT", ... for 1..12; "UNKNOWN" otherwise. */
const char *es_kcprocfs_tcp_state_str(unsigned state);

/*
 * Reads the `oom_kill` counter (OOM kills since boot) from path, a
 * /proc/vmstat file. Errors: ES_ERR_IO (cannot open), ES_ERR_NOTFOUND (no
 * oom_kill line: kernels before 4.13), ES_ERR_PARSE (its value is not a
 * number); err says which.
 */
es_err es_kcprocfs_vmstat_oom_kill(const char *path, uint64_t *out, char *err,
				   size_t errsz);

/* One row of /proc/diskstats (Documentation/admin-guide/iostats.rst). */
typedef struct es_kcprocfs_disk {
	unsigned major, minor;
	char name[32];
	uint64_t reads;      /* reads completed */
	uint64_t read_ms;    /* milliseconds spent reading */
	uint64_t writes;     /* writes completed */
	uint64_t write_ms;   /* milliseconds spent writing */
} es_kcprocfs_disk;

/*
 * Reads every row of path, a /proc/diskstats file, into a new array
 * (*out, *n; free() it). Rows need the 14 fields of Linux 2.6.25+; later
 * fields (discards, flushes) are ignored.
 * Errors: ES_ERR_IO (cannot open), ES_ERR_PARSE (a malformed row: err
 * names path and line), ES_ERR_NOMEM. *out is NULL on error.
 */
es_err es_kcprocfs_diskstats_read(const char *path, es_kcprocfs_disk **out,
				  size_t *n, char *err, size_t errsz);

#endif
