/*
 * egress_cgroup.c - cgroup ids and target resolution (see
 * egress_cgroup.h).
 */
#define _GNU_SOURCE
#include "egress/egress_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


#define CG_MAX_DEPTH 64

es_err es_egcg_id(const char *path, uint64_t *id, char *err, size_t errsz)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + 16];
	} h;
	struct stat st;
	int mount_id;

	memset(&h, 0, sizeof(h));
	h.fh.handle_bytes = 8;
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) == 0 &&
	    h.fh.handle_bytes == 8) {
		memcpy(id, h.fh.f_handle, 8);
		return ES_OK;
	}
	if (stat(path, &st) != 0)
		return es_errf(ES_ERR_IO, err, errsz, "cgroup %s: %s", path,
			       strerror(errno));
	*id = (uint64_t)st.st_ino;
	return ES_OK;
}

typedef struct walk {
	const es_egress_targets *t;
	char prefix[ES_EGRESS_TARGET_MAX + 1];
	char pod_dash[ES_EGRESS_TARGET_MAX + 4], pod_us[ES_EGRESS_TARGET_MAX + 4];
	uint64_t *ids;
	size_t n, cap;
} walk;

/* 1 when the cgroup path rel is prefix or below it, by whole path
 * components: "/kubepods/pod1" holds "/kubepods/pod1/c" but not
 * "/kubepods/pod10". prefix has no trailing '/' (except the root "/"). */
static int path_within(const char *rel, const char *prefix)
{
	size_t n = strlen(prefix);

	if (n == 1 && prefix[0] == '/')
		return rel[0] == '/';
	return !strncmp(rel, prefix, n) && (rel[n] == '\0' || rel[n] == '/');
}

static int selects(const walk *w, const char *rel, const char *base)
{
	const es_egress_targets *t = w->t;

	if (t->cgroup_prefix[0] && path_within(rel, w->prefix))
		return 1;
	if (t->systemd_unit[0] && !strcmp(base, t->systemd_unit))
		return 1;
	if (t->pod_uid[0] && (strstr(base, w->pod_dash) || strstr(base, w->pod_us)))
		return 1;
	if (t->container_id[0] && strstr(base, t->container_id))
		return 1;
	return 0;
}

static es_err add_id(walk *w, const char *path, char *err, size_t errsz)
{
	uint64_t id;
	es_err rc = es_egcg_id(path, &id, err, errsz);

	if (rc != ES_OK)
		return rc;
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		uint64_t *g = realloc(w->ids, cap * sizeof(*g));

		if (!g)
			return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		w->ids = g;
		w->cap = cap;
	}
	w->ids[w->n++] = id;
	return ES_OK;
}

/* path: absolute directory; rel: its path from the root ("" for the root). */
static es_err walk_dir(walk *w, const char *path, const char *rel, int depth,
		       char *err, size_t errsz)
{
	DIR *d;
	struct dirent *de;
	es_err rc = ES_OK;

	if (depth > CG_MAX_DEPTH)
		return ES_OK;
	d = opendir(path);
	if (!d)
		return depth == 0 ? es_errf(ES_ERR_IO, err, errsz, "cgroup %s: %s",
					    path, strerror(errno))
				  : ES_OK;
	while (rc == ES_OK && (de = readdir(d)) != NULL) {
		char cpath[4096], crel[4096];

		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") ||
		    !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(cpath, sizeof(cpath), "%s/%s", path, de->d_name) >=
			    sizeof(cpath) ||
		    (size_t)snprintf(crel, sizeof(crel), "%s/%s", rel, de->d_name) >=
			    sizeof(crel))
			continue;
		if (selects(w, crel, de->d_name))
			rc = add_id(w, cpath, err, errsz);
		else
			rc = walk_dir(w, cpath, crel, depth + 1, err, errsz);
	}
	closedir(d);
	return rc;
}

es_err es_egcg_resolve(const char *root, const es_egress_targets *t,
		       uint64_t **ids, size_t *n, char *err, size_t errsz)
{
	walk w;
	es_err rc = ES_OK;
	size_t len;

	*ids = NULL;
	*n = 0;
	if (t->node)
		return ES_OK;
	memset(&w, 0, sizeof(w));
	w.t = t;
	if (t->cgroup_prefix[0]) {
		snprintf(w.prefix, sizeof(w.prefix), "%s%s",
			 t->cgroup_prefix[0] == '/' ? "" : "/", t->cgroup_prefix);
		len = strlen(w.prefix);
		while (len > 1 && w.prefix[len - 1] == '/')
			w.prefix[--len] = '\0';
	}
	if (t->pod_uid[0]) {
		snprintf(w.pod_dash, sizeof(w.pod_dash), "pod%s", t->pod_uid);
		snprintf(w.pod_us, sizeof(w.pod_us), "pod%s", t->pod_uid);
		for (char *p = w.pod_us; *p; p++)
			if (*p == '-')
				*p = '_';
	}
	if (t->cgroup_prefix[0] && !strcmp(w.prefix, "/"))
		rc = add_id(&w, root, err, errsz);
	else
		rc = walk_dir(&w, root, "", 0, err, errsz);
	if (rc != ES_OK) {
		free(w.ids);
		return rc;
	}
	*ids = w.ids;
	*n = w.n;
	return ES_OK;
}
