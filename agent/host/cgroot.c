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

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* The first cgroup2 mount of the hierarchy's root, into path. */
static int find_mount(char *path, size_t pathsz)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *fields[6], *sep = strstr(line, " - "), *save = NULL, *p;
		int i = 0;

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		*sep = '\0';
		for (p = strtok_r(line, " ", &save); p && i < 6;
		     p = strtok_r(NULL, " ", &save))
			fields[i++] = p;
		if (i < 5 || strcmp(fields[3], "/"))
			continue;
		unescape(fields[4]);
		if (strlen(fields[4]) < pathsz) {
			snprintf(path, pathsz, "%s", fields[4]);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

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
	if (find_mount(path, pathsz))
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
