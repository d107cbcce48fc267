/*
 * cgroot.c - the cgroup v2 hierarchy the agent works on (cgroot.h).
 */
#define _GNU_SOURCE
#include "host/cgroot.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "es_log.h"
#include "es_mounts.h"

static es_err use_configured(const char *dir, char *path, size_t pathsz,
			     char *err, size_t errsz)
{
	struct statfs sfs;

	if (strlen(dir) >= pathsz)
		return es_errf(ES_ERR_INVAL, err, errsz, "cgroup-root: %.80s: path too long",
			       dir);
	if (statfs(dir, &sfs) != 0)
		return es_errf(ES_ERR_INVAL, err, errsz, "cgroup-root: %s: %s", dir,
			       strerror(errno));
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "cgroup-root: %s is not a cgroup v2 file system (mount "
			       "the host's /sys/fs/cgroup there, or leave cgroup-root "
			       "empty to find one)", dir);
	snprintf(path, pathsz, "%s", dir);
	return ES_OK;
}

es_err es_cgroot_find(const char *configured, const char *state_dir, int may_mount,
		      char *path, size_t pathsz, int *mounted, char *err,
		      size_t errsz)
{
	char dir[4096];

	*mounted = 0;
	if (pathsz < 2)
		return es_errf(ES_ERR_INVAL, err, errsz, "cgroup root buffer too small");
	path[0] = '\0';
	if (configured && *configured)
		return use_configured(configured, path, pathsz, err, errsz);
	/* The first cgroup2 mount of the hierarchy's root. */
	if (es_mounts_find(NULL, "cgroup2", NULL, "/", path, pathsz, NULL, 0) == ES_OK)
		return ES_OK;
	if (!may_mount || !state_dir || !*state_dir)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "no cgroup v2 hierarchy is mounted (the agent mounts "
			       "one in its state directory when it runs as root)");
	snprintf(dir, sizeof(dir), "%s/cgroup2", state_dir);
	if (strlen(dir) >= pathsz)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "no cgroup v2 hierarchy is mounted and the state "
			       "directory path is too long to mount one");
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "no cgroup v2 hierarchy is mounted and %s cannot be "
			       "created: %s", dir, strerror(errno));
	if (mount("none", dir, "cgroup2", 0, NULL) != 0)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "no cgroup v2 hierarchy is mounted and mounting one "
			       "at %s failed: %s", dir, strerror(errno));
	snprintf(path, pathsz, "%s", dir);
	*mounted = 1;
	es_log_info("cgroup", "mounted a cgroup v2 hierarchy (the host has none)",
		    "path", dir, NULL);
	return ES_OK;
}
