/*
 * egress_cgroup.h - the cgroup v2 side of EgressPolicy enforcement: cgroup
 * ids, and which cgroups a policy's targets select (the hierarchy is
 * cgroot.h's) (PROTOCOL.md "EgressPolicy", spec.targets).
 */
#ifndef ES_AGENT_EGRESS_CGROUP_H
#define ES_AGENT_EGRESS_CGROUP_H

#include <stddef.h>
#include <stdint.h>
#include "es_egress.h"
#include "es_err.h"

/*
 * The cgroup id of the cgroup directory path: the kernfs node id the
 * kernel's bpf_get_current_cgroup_id() returns (from name_to_handle_at,
 * falling back to the inode number). Errors: ES_ERR_IO (err names path).
 */
es_err es_egcg_id(const char *path, uint64_t *id, char *err, size_t errsz);

/*
 * Walks the cgroup v2 tree under root and appends to ids (growing *ids,
 * caller frees) the id of every cgroup that t selects and whose parent it
 * does not (the programs look at every ancestor, so a selected cgroup's
 * descendants are covered, including ones created later):
 * - cgroupPathPrefix: the cgroup's path from the root ("/a/b") starts with
 *   the prefix (a leading '/' is implied, a trailing one ignored);
 * - systemdUnit: the cgroup's directory name equals the unit name;
 * - podUID: the name contains "pod<uid>" (cgroupfs driver) or
 *   "pod<uid with '_' for '-'>" (systemd driver);
 * - containerID: the name contains the container id.
 * t->node set gives nothing. *n is the count; depth is bounded at 64.
 * Errors: ES_ERR_IO (root unreadable), ES_ERR_NOMEM.
 */
es_err es_egcg_resolve(const char *root, const es_egress_targets *t,
		       uint64_t **ids, size_t *n, char *err, size_t errsz);

#endif
