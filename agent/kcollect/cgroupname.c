/*
 * cgroupname.c - cgroup id → path cache and Kubernetes names (cgroupname.h).
 */
#define _GNU_SOURCE
#include "kcollect/cgroupname.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "es_json.h"
#include "es_time.h"

/* Bounds the walk of a pathological hierarchy. */
#define ES_CGNAME_MAX_ENTRIES 65536

typedef struct cg_entry {
	uint64_t id;
	char *path;
} cg_entry;

struct es_cgname {
	char *root;
	cg_entry *v;
	size_t n, cap;
	int64_t last_walk_ms; /* 0: never walked */
};

es_err es_cgname_new(const char *root, es_cgname **out)
{
	es_cgname *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return ES_ERR_NOMEM;
	if (root && *root) {
		c->root = strdup(root);
		if (!c->root) {
			free(c);
			return ES_ERR_NOMEM;
		}
	}
	*out = c;
	return ES_OK;
}

static void clear(es_cgname *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->v[i].path);
	c->n = 0;
}

void es_cgname_free(es_cgname *c)
{
	if (!c)
		return;
	clear(c);
	free(c->v);
	free(c->root);
	free(c);
}

static int add(es_cgname *c, uint64_t id, const char *rel)
{
	if (c->n >= ES_CGNAME_MAX_ENTRIES)
		return -1;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		cg_entry *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return -1;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n].path = strdup(rel);
	if (!c->v[c->n].path)
		return -1;
	c->v[c->n].id = id;
	c->n++;
	return 0;
}

/* Walks directory fd (owned, closed here) whose path relative to the root
 * is rel (buffer of relsz bytes, modified in place and restored). */
static void walk(es_cgname *c, int fd, char *rel, size_t relsz, int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	size_t len = strlen(rel);

	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat sb;
		int sub;

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (de->d_name[0] == '.' &&
		    (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (len + 1 + strlen(de->d_name) + 1 > relsz)
			continue;
		sub = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0)
			continue;
		if (fstat(sub, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
			close(sub);
			continue;
		}
		snprintf(rel + len, relsz - len, "%s%s", len == 1 ? "" : "/",
			 de->d_name);
		if (add(c, (uint64_t)sb.st_ino, rel) != 0 ||
		    depth + 1 >= ES_CGNAME_MAX_DEPTH)
			close(sub);
		else
			walk(c, sub, rel, relsz, depth + 1);
		rel[len] = '\0';
	}
	closedir(d);
}

static int cmp_entry(const void *a, const void *b)
{
	const cg_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void rewalk(es_cgname *c)
{
	char rel[4096] = "/";
	struct stat sb;
	int fd;

	clear(c);
	c->last_walk_ms = es_time_mono_ms();
	if (!c->last_walk_ms)
		c->last_walk_ms = 1;
	fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &sb) != 0 || add(c, (uint64_t)sb.st_ino, "/") != 0) {
		close(fd);
		return;
	}
	walk(c, fd, rel, sizeof(rel), 0);
	qsort(c->v, c->n, sizeof(*c->v), cmp_entry);
}

static const char *find(const es_cgname *c, uint64_t id)
{
	cg_entry key = { id, NULL }, *e;

	if (!c->n)
		return NULL;
	e = bsearch(&key, c->v, c->n, sizeof(*c->v), cmp_entry);
	return e ? e->path : NULL;
}

const char *es_cgname_path(es_cgname *c, uint64_t id)
{
	const char *p;

	if (!c || !c->root)
		return NULL;
	p = find(c, id);
	if (p)
		return p;
	if (c->last_walk_ms &&
	    es_time_mono_ms() - c->last_walk_ms < ES_CGNAME_RESCAN_S * 1000)
		return NULL;
	rewalk(c);
	return find(c, id);
}

uint64_t es_cgname_proc_id(const es_cgname *c, int dirfd, const char *path)
{
	char buf[1024], full[1536];
	const char *l;
	struct stat sb;
	ssize_t n;
	int fd;

	if (!c || !c->root)
		return 0;
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	l = strncmp(buf, "0::", 3) == 0 ? buf : strstr(buf, "\n0::");
	if (!l)
		return 0;
	l += l == buf ? 3 : 4;
	n = snprintf(full, sizeof(full), "%s%.*s", c->root, (int)strcspn(l, "\n"), l);
	if (n < 0 || (size_t)n >= sizeof(full))
		return 0;
	return stat(full, &sb) == 0 ? (uint64_t)sb.st_ino : 0;
}

static int is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* An RFC 4122 textual UUID, lower-case, with sep ('-' or '_') between the
 * groups; copied to out with '-'. */
static int take_uid(const char *s, size_t n, char sep,
		    char out[ES_CGNAME_POD_UID_LEN])
{
	size_t i;

	if (n != 36)
		return 0;
	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != sep)
				return 0;
		} else if (!is_hex(s + i, 1)) {
			return 0;
		}
	}
	for (i = 0; i < 36; i++)
		out[i] = s[i] == sep ? '-' : s[i];
	out[36] = '\0';
	return 1;
}

static int ends_with(const char *s, size_t n, const char *suf)
{
	size_t m = strlen(suf);

	return n >= m && memcmp(s + n - m, suf, m) == 0;
}

/* Container id of one path component: <prefix><64 hex>.scope or a bare
 * 64-hex name. */
static int take_container(const char *s, size_t n,
			  char out[ES_CGNAME_CONTAINER_ID_LEN])
{
	static const char *const prefixes[] = { "cri-containerd-", "docker-",
						"crio-" };
	size_t i, pl;

	if (n == 64 && is_hex(s, 64))
		goto found;
	if (!ends_with(s, n, ".scope"))
		return 0;
	n -= 6;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		pl = strlen(prefixes[i]);
		if (n == pl + 64 && memcmp(s, prefixes[i], pl) == 0 &&
		    is_hex(s + pl, 64)) {
			s += pl;
			goto found;
		}
	}
	return 0;
found:
	memcpy(out, s, 64);
	out[64] = '\0';
	return 1;
}

int es_cgname_parse_k8s(const char *path, char pod_uid[ES_CGNAME_POD_UID_LEN],
			char container_id[ES_CGNAME_CONTAINER_ID_LEN])
{
	char uid[ES_CGNAME_POD_UID_LEN] = "", cid[ES_CGNAME_CONTAINER_ID_LEN] = "";
	int kube = 0, found = 0;
	const char *p = path;

	while (p && *p) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if (n >= 8 && memcmp(p, "kubepods", 8) == 0)
			kube = 1;
		if (kube && ends_with(p, n, ".slice")) {
			const char *q = NULL, *r;

			for (r = p; r + 4 <= p + n; r++)
				if (memcmp(r, "-pod", 4) == 0)
					q = r + 4;
			if (q && take_uid(q, (size_t)(p + n - 6 - q), '_', uid))
				found |= 1;
		} else if (kube && n > 3 && memcmp(p, "pod", 3) == 0 &&
			   take_uid(p + 3, n - 3, '-', uid)) {
			found |= 1;
		}
		if (take_container(p, n, cid))
			found |= 2;
		p += n;
	}
	if (pod_uid)
		memcpy(pod_uid, uid, sizeof(uid));
	if (container_id)
		memcpy(container_id, cid, sizeof(cid));
	return found;
}

es_err es_cgname_add_json(es_cgname *c, uint64_t id, cJSON *obj)
{
	char uid[ES_CGNAME_POD_UID_LEN], cid[ES_CGNAME_CONTAINER_ID_LEN];
	const char *path = es_cgname_path(c, id);
	int k;

	if (!es_json_add_int(obj, "cgroupId", (int64_t)id))
		return ES_ERR_NOMEM;
	if (!path)
		return ES_OK;
	if (!cJSON_AddStringToObject(obj, "cgroup", path))
		return ES_ERR_NOMEM;
	k = es_cgname_parse_k8s(path, uid, cid);
	if ((k & 1) && !cJSON_AddStringToObject(obj, "podUID", uid))
		return ES_ERR_NOMEM;
	if ((k & 2) && !cJSON_AddStringToObject(obj, "containerID", cid))
		return ES_ERR_NOMEM;
	return ES_OK;
}
