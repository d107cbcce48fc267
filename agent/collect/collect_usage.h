/*
 * collect_usage.h - internal to the procfs collectors (collect.c): one
 * parser per /proc source, each reading with es_fs_lines (es_fs.h). Not a
 * public interface.
 *
 * Every reader returns ES_OK, ES_ERR_NOMEM (the round fails), or another
 * code (ES_ERR_IO, ES_ERR_PARSE, ES_ERR_TOOBIG) with err naming the file and
 * what was wrong; the caller then marks the collector unhealthy.
 * Formats: proc(5), Documentation/filesystems/proc.rst of the kernel.
 */
#ifndef ES_AGENT_COLLECT_USAGE_H
#define ES_AGENT_COLLECT_USAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include "es_err.h"
#include "es_fs.h"

/* Reads the first line of a small file (boot_id, machine-id) into buf,
 * without its newline and trailing blanks. Errors: ES_ERR_IO (errno kept,
 * so ENOENT/ESRCH tell a vanished file), ES_ERR_PARSE
 * (empty file, or a first line longer than bufsz-1). */
es_err es_cu_read_first_line(const char *path, char *buf, size_t bufsz,
			     char *err, size_t errsz);

/* Parses an unsigned decimal after optional blanks at *p; it must end at a
 * blank or the end of the string. Advances *p past it. Returns 0, or -1
 * (no digits, another character after them, overflow). */
int es_cu_take_u64(const char **p, uint64_t *out);
/* 1 when s is non-empty and only ASCII digits. */
int es_cu_all_digits(const char *s);

/* CPU modes of /proc/stat's "cpu" line, in the kernel's order. guest and
 * guest_nice are already included in user and nice, so they are not kept. */
#define ES_CU_CPU_MODES 8
extern const char *const es_cu_cpu_mode_names[ES_CU_CPU_MODES];

typedef struct es_cu_stat {
	uint64_t ticks[ES_CU_CPU_MODES]; /* USER_HZ ticks since boot, all CPUs */
	int ncpu;                        /* number of "cpuN" lines (online CPUs) */
	int64_t procs_running;           /* -1 when the line is absent */
	int64_t procs_blocked;           /* -1 when the line is absent */
} es_cu_stat;

/* Parses /proc/stat. The aggregate "cpu" line must have at least the eight
 * modes above; other lines (intr, softirq, ...) are skipped, overlong or not.
 * Errors: ES_ERR_IO, ES_ERR_PARSE (no "cpu" line, a short or non-numeric
 * one, no cpuN line). */
es_err es_cu_read_stat(const char *path, es_cu_stat *st, char *err, size_t errsz);

/* Parses /proc/meminfo into *out: a new object of every field name ->
 * value, in bytes for "kB" fields (kB x 1024), as is for fields without a
 * unit (HugePages_Total). *memtotal_bytes gets MemTotal in bytes.
 * Errors: ES_ERR_IO, ES_ERR_PARSE (a line not "Name: number [kB]", an
 * unknown unit, a value that overflows, no MemTotal), ES_ERR_NOMEM. */
es_err es_cu_read_meminfo(const char *path, cJSON **out, uint64_t *memtotal_bytes,
			  char *err, size_t errsz);

/* Parses /proc/net/dev into *out: an array, one object per interface
 * (loopback included) with its bytes, packets, errors and drop counters in
 * each direction (PROTOCOL.md "Node"). Errors: ES_ERR_IO, ES_ERR_PARSE (a line
 * without "name:" and 16 counters), ES_ERR_NOMEM. */
es_err es_cu_read_netdev(const char *path, cJSON **out, char *err, size_t errsz);

/*
 * Reads a mount table (es_mounts.h), in either /proc/<pid>/mountinfo or
 * /proc/mounts format (detected per line), keeps the filesystems of
 * es_cu_fs_type_kept(), one per device (mountinfo: major:minor; mounts format: the source when it
 * is a path, otherwise no dedupe), first mount wins, and calls statvfs(3) on
 * each mountpoint as written in the table. *out: an array of {device,
 * mountpoint, fstype, sizeBytes, availBytes, freeBytes, files, filesFree}.
 * A line that is not a mount entry, or a mount whose statvfs fails, is left
 * out and the others are still reported: the first such failure is then
 * returned (ES_ERR_PARSE or ES_ERR_IO, err naming the line or mountpoint)
 * with *out set. Errors with *out NULL: ES_ERR_IO or ES_ERR_TOOBIG (table
 * unreadable), ES_ERR_NOMEM.
 */
es_err es_cu_read_mounts(const char *path, cJSON **out, char *err, size_t errsz);

/* 1 when fstype is reported in usage.filesystems; see collect_usage.c for
 * the list and why. */
int es_cu_fs_type_kept(const char *fstype);

#endif
