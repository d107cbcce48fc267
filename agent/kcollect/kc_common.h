/*
 * kc_common.h - what the eBPF halves of the kernel collectors
 * (agent/kc_<name>.c, kcollect.h) share: loading and attaching a CO-RE
 * skeleton onto the set's event ring buffer, and reading a per-cgroup BPF hash map into
 * rows reported busiest first. Each collector keeps its own event handling,
 * ordering and JSON members; these helpers hold only the mechanics.
 */
#ifndef ES_AGENT_KC_COMMON_H
#define ES_AGENT_KC_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <bpf/libbpf.h>
#include <cjson/cJSON.h>
#include "kcollect/cgroupname.h"
#include "es_err.h"

/* What es_kc_skel_load loads. Everything is borrowed. */
typedef struct es_kc_load {
	const char *name;                 /* collector name, prefixes messages ("tcp") */
	struct bpf_object_skeleton *skel; /* <name>_bpf__open()'s ->skeleton, not loaded */
	struct bpf_map *events;           /* the ring buffer map, or NULL (none) */
	int ring_fd;                      /* with events: the set's ring
					   * (es_kcollector.ring_fd) */
	const char *hooks;                /* the tracepoints attached, for messages;
					   * NULL = the caller attaches */
} es_kc_load;

/*
 * Loads l->skel: points l->events at the set's ring l->ring_fd before load
 * (bpf_map__reuse_fd; records are read and dispatched by the set,
 * kcollect.h), loads every program (bpf_object__load_skeleton) and attaches
 * them when l->hooks is set (bpf_object__attach_skeleton, undone by
 * <name>_bpf__destroy). On failure what was made stays for the caller's
 * destroy path.
 * Errors: ES_ERR_UNSUPPORTED with err "<name>: no event ring buffer",
 * "<name>: event ring buffer: <why>", "<name>: loading the BPF program(s):
 * <why>" or "<name>: attaching <hooks>: <why>"; ES_ERR_INVAL (l, l->name
 * or l->skel NULL).
 */
es_err es_kc_skel_load(const es_kc_load *l, char *err, size_t errsz);

/*
 * Reads every entry of the BPF hash map map_fd, keyed by a 64-bit cgroup
 * id, into a new array of rowsz-byte rows: the key as a uint64_t at offset
 * 0, the value (rowsz - valoff bytes, the map's value size) at valoff.
 * Entries deleted between key iteration and lookup are skipped. The rows
 * are sorted with cmp when it is not NULL. *rows (never NULL on success,
 * even when *n is 0) is the caller's to free.
 * Errors: ES_ERR_NOMEM (*rows NULL, *n 0); ES_ERR_INVAL (rowsz <= valoff
 * or valoff < sizeof(uint64_t)).
 */
es_err es_kc_map_rows(int map_fd, size_t rowsz, size_t valoff,
		      int (*cmp)(const void *, const void *), void **rows,
		      size_t *n);

/*
 * Adds the array member to parent with one object per row for the first
 * max of the n rows of rowsz bytes at rows (a uint64_t cgroup id first, as
 * es_kc_map_rows makes them): the cgroup's identity (es_cgname_add_json on
 * names) followed by what fill adds from the row (fill returns 0, or
 * non-zero when an add failed).
 * Errors: ES_ERR_NOMEM (what was added stays in parent, for the caller to
 * delete with it).
 */
es_err es_kc_cgroup_rows_json(cJSON *parent, const char *member, es_cgname *names,
			      const void *rows, size_t n, size_t rowsz, size_t max,
			      int (*fill)(cJSON *o, const void *row));

#endif
