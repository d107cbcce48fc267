/*
 * cgroupname.h - cgroup id → readable name for the kernel collectors.
 *
 * A cgroup v2 id (bpf_get_current_cgroup_id, the kernfs node id) is the
 * inode number of the cgroup's directory in any cgroup v2 mount. The cache
 * walks the mount, maps inode numbers to paths relative to its root
 * ("/system.slice/ssh.service"; "/" for the root), and re-walks on a miss
 * at most once per ES_CGNAME_RESCAN_S seconds.
 *
 * Kubernetes pods and containers are recognised from the path, as the
 * kubelet's cgroup drivers name them:
 *   systemd driver: .../kubepods-burstable-pod<uid with '_' for '-'>.slice/
 *                   cri-containerd-<id>.scope | docker-<id>.scope | crio-<id>.scope
 *   cgroupfs driver: /kubepods/burstable/pod<uid>/<64-hex id>
 */
#ifndef ES_AGENT_CGROUPNAME_H
#define ES_AGENT_CGROUPNAME_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "es_err.h"

#define ES_CGNAME_RESCAN_S 5
#define ES_CGNAME_MAX_DEPTH 32
#define ES_CGNAME_POD_UID_LEN 37     /* 36 + NUL */
#define ES_CGNAME_CONTAINER_ID_LEN 65 /* 64 + NUL */

typedef struct es_cgname es_cgname;

/*
 * Creates a cache over the cgroup v2 mount at root (copied; NULL or "" =
 * no mount: every lookup misses). Nothing is walked until the first lookup.
 * Errors: ES_ERR_NOMEM.
 */
es_err es_cgname_new(const char *root, es_cgname **out);
void es_cgname_free(es_cgname *c); /* NULL-safe */

/* The path of cgroup id relative to the mount root (borrowed: valid until
 * the next lookup), or NULL when unknown (removed, or not walked yet and
 * the rescan is rate-limited). */
const char *es_cgname_path(es_cgname *c, uint64_t id);

/*
 * The cgroup v2 id of a process from its cgroup file path (a
 * /proc/<pid>/cgroup, opened relative to dirfd as openat(2) does): the
 * inode number of the directory its "0::<cgroup>" line names under c's
 * mount. Reads the file and stats the directory each call (the cache is
 * not used). 0 when c is NULL or has no mount, the file cannot be read
 * (the process is gone), it has no "0::" line, or the directory is gone.
 */
uint64_t es_cgname_proc_id(const es_cgname *c, int dirfd, const char *path);

/*
 * Reads the Kubernetes pod UID (with '-', lower-case) and container id out
 * of a cgroup path. Either output may be NULL; each is set to "" when not
 * found. Returns a bit set: 1 pod UID found, 2 container id found.
 */
int es_cgname_parse_k8s(const char *path, char pod_uid[ES_CGNAME_POD_UID_LEN],
			char container_id[ES_CGNAME_CONTAINER_ID_LEN]);

/*
 * Adds to obj: cgroupId (number), cgroup (path, when known), podUID and
 * containerID (when the path has them). Errors: ES_ERR_NOMEM.
 */
es_err es_cgname_add_json(es_cgname *c, uint64_t id, cJSON *obj);

#endif
