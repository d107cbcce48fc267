/*
 * cgroot.h - which cgroup v2 hierarchy the agent works on: the one the
 * kernel collectors resolve cgroup ids in and attach cgroup_skb to
 * (kcollect.h), and the one EgressPolicy targets and attaches
 * cgroup_sock_addr to (egress.h).
 */
#ifndef ES_AGENT_CGROOT_H
#define ES_AGENT_CGROOT_H

#include <stddef.h>
#include "es_err.h"

/*
 * Writes the path of the cgroup v2 hierarchy to use into path (pathsz
 * bytes), and sets *mounted to 1 when this call mounted it (else 0):
 * - configured (setting cgroup-root) not NULL or empty: that directory,
 *   which must be on a cgroup v2 file system (statfs f_type
 *   CGROUP2_SUPER_MAGIC, linux/magic.h); for a container, the host's
 *   /sys/fs/cgroup mounted into it, whose ids and paths are the host's;
 * - else the first cgroup2 mount in /proc/self/mountinfo whose root is the
 *   hierarchy's root ("/"; proc(5), mountinfo field 4);
 * - else, when may_mount is non-zero and state_dir is not NULL, a new
 *   cgroup v2 mount at <state_dir>/cgroup2 (created 0700), logged at info.
 * Errors: ES_ERR_INVAL (configured is missing or not cgroup v2: err names
 * it and says why; path too small), ES_ERR_UNSUPPORTED (nothing mounted
 * and nothing could be; err says why).
 */
es_err es_cgroot_find(const char *configured, const char *state_dir, int may_mount,
		      char *path, size_t pathsz, int *mounted, char *err,
		      size_t errsz);

#endif
