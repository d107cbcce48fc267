/*
 * egress_kern.c - loading, pinning, attaching, writing and reading back
 * the EgressPolicy programs and maps (see egress_kern.h).
 */
#include "egress/ebpf/egress_kern.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "egress.skel.h"
#include "egress/ebpf/egress_kern_int.h"
#include "es_fs.h"
#include "es_log.h"

#define BPFFS_MAGIC 0xcafe4a11
#define BPFFS_ROOT "/sys/fs/bpf"

const char *const es_egk_hook_names[ES_EGK_HOOKS] = {
	"connect4", "connect6", "sendmsg4", "sendmsg6"
};

static const enum bpf_attach_type hook_types[ES_EGK_HOOKS] = {
	BPF_CGROUP_INET4_CONNECT, BPF_CGROUP_INET6_CONNECT,
	BPF_CGROUP_UDP4_SENDMSG, BPF_CGROUP_UDP6_SENDMSG
};

static const char *const prog_names[ES_EGK_HOOKS] = {
	"es_eg_connect4", "es_eg_connect6", "es_eg_sendmsg4", "es_eg_sendmsg6"
};


static struct bpf_program *hook_prog(const es_egk *k, int h)
{
	struct bpf_program *p[ES_EGK_HOOKS] = {
		k->skel->progs.es_eg_connect4, k->skel->progs.es_eg_connect6,
		k->skel->progs.es_eg_sendmsg4, k->skel->progs.es_eg_sendmsg6
	};

	return p[h];
}

static void list_maps(struct egress_bpf *s, struct bpf_map *m[NMAPS])
{
	m[0] = s->maps.eg_lpm;
	m[1] = s->maps.eg_tgt;
	m[2] = s->maps.eg_cfg;
	m[3] = s->maps.eg_pol;
	m[4] = s->maps.eg_active;
	m[5] = s->maps.eg_viol;
}

static const char *const map_names[NMAPS] = {
	"eg_lpm", "eg_tgt", "eg_cfg", "eg_pol", "eg_active", "eg_viol"
};

static void pin_path(const char *dir, const char *prefix, const char *name,
		     char *buf, size_t sz)
{
	snprintf(buf, sz, "%s/%s%s", dir, prefix, name);
}

static uint32_t obj_id(int fd)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0)
		return 0;
	return info.id;
}

static es_err ensure_bpffs(const char *dir, char *err, size_t errsz)
{
	struct statfs sf;
	es_err rc;

	if (!strncmp(dir, BPFFS_ROOT "/", strlen(BPFFS_ROOT) + 1) &&
	    (statfs(BPFFS_ROOT, &sf) != 0 || (unsigned long)sf.f_type != BPFFS_MAGIC)) {
		if (mount("bpf", BPFFS_ROOT, "bpf", 0, "mode=0700") != 0)
			return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
				       "bpffs is not mounted at %s and mounting it "
				       "failed: %s", BPFFS_ROOT, strerror(errno));
		es_log_info("egress", "mounted bpffs", "path", BPFFS_ROOT, NULL);
	}
	rc = es_fs_mkdir_p(dir, 0700, err, errsz);
	if (rc != ES_OK)
		return rc;
	if (statfs(dir, &sf) != 0 || (unsigned long)sf.f_type != BPFFS_MAGIC)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "egress-pin-dir %s is not on a bpffs", dir);
	return ES_OK;
}

int es_egk_pinned(const char *pin_dir)
{
	char p[640];
	struct stat st;

	for (int i = 0; i < NMAPS; i++) {
		pin_path(pin_dir, "", map_names[i], p, sizeof(p));
		if (stat(p, &st) == 0)
			return 1;
	}
	for (int h = 0; h < ES_EGK_HOOKS; h++) {
		pin_path(pin_dir, "link_", es_egk_hook_names[h], p, sizeof(p));
		if (stat(p, &st) == 0)
			return 1;
	}
	return 0;
}

static es_err load_skel(es_egk *k, int *reused, char *err, size_t errsz)
{
	char p[640];
	int err2;

	*reused = 0;
	for (int attempt = 0; attempt < 2; attempt++) {
		struct stat st;

		k->skel = egress_bpf__open();
		if (!k->skel)
			return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
				       "cannot open the egress BPF object: %s",
				       strerror(errno));
		list_maps(k->skel, k->maps);
		for (int i = 0; i < NMAPS; i++) {
			pin_path(k->dir, "", map_names[i], p, sizeof(p));
			if (stat(p, &st) == 0)
				*reused = 1;
			if (bpf_map__set_pin_path(k->maps[i], p) != 0)
				return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
		}
		err2 = egress_bpf__load(k->skel);
		if (err2 == 0)
			return ES_OK;
		egress_bpf__destroy(k->skel);
		k->skel = NULL;
		if (!*reused || attempt == 1)
			return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
				       "cannot load the egress BPF programs: %s",
				       strerror(-err2));
		/* Pinned maps of another layout (an older agent): start afresh. */
		es_log_warn("egress", "pinned maps not reusable, replacing them",
			    "dir", k->dir, "error", strerror(-err2), NULL);
		for (int i = 0; i < NMAPS; i++) {
			pin_path(k->dir, "", map_names[i], p, sizeof(p));
			unlink(p);
		}
		*reused = 0;
	}
	return ES_ERR_UNSUPPORTED;
}

/* Attaches hook h anew and pins the link (replacing any pin). */
static es_err attach_hook(es_egk *k, int h, char *err, size_t errsz)
{
	char p[640];
	int fd;

	fd = bpf_link_create(bpf_program__fd(hook_prog(k, h)), k->cg_fd,
			     hook_types[h], NULL);
	if (fd < 0)
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			       "cannot attach cgroup/%s at the cgroup v2 root: %s",
			       es_egk_hook_names[h], strerror(errno));
	pin_path(k->dir, "link_", es_egk_hook_names[h], p, sizeof(p));
	unlink(p);
	if (bpf_obj_pin(fd, p) != 0) {
		int e = errno;

		close(fd);
		return es_errf(ES_ERR_IO, err, errsz, "cannot pin %s: %s", p,
			       strerror(e));
	}
	if (k->link_fd[h] >= 0)
		close(k->link_fd[h]);
	k->link_fd[h] = fd;
	k->link_id[h] = obj_id(fd);
	return ES_OK;
}

es_err es_egk_open(const char *pin_dir, const char *cgroup_root, es_egk **out,
		   int *reused, char *err, size_t errsz)
{
	es_egk *k;
	char p[640];
	es_err rc;

	*out = NULL;
	*reused = 0;
	k = calloc(1, sizeof(*k));
	if (!k)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	k->cg_fd = -1;
	for (int h = 0; h < ES_EGK_HOOKS; h++)
		k->link_fd[h] = -1;
	snprintf(k->dir, sizeof(k->dir), "%s", pin_dir);
	clock_gettime(CLOCK_MONOTONIC, &k->last_switch);
	rc = ensure_bpffs(pin_dir, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	k->cg_fd = open(cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (k->cg_fd < 0) {
		rc = es_errf(ES_ERR_IO, err, errsz, "cannot open the cgroup v2 root %s: %s",
			     cgroup_root, strerror(errno));
		goto cleanup;
	}
	rc = load_skel(k, reused, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	for (int i = 0; i < NMAPS; i++)
		k->map_id[i] = obj_id(bpf_map__fd(k->maps[i]));
	for (int h = 0; h < ES_EGK_HOOKS; h++) {
		int fd;

		pin_path(k->dir, "link_", es_egk_hook_names[h], p, sizeof(p));
		fd = bpf_obj_get(p);
		if (fd >= 0 && bpf_link_update(fd, bpf_program__fd(hook_prog(k, h)),
					       NULL) == 0) {
			k->link_fd[h] = fd;
			k->link_id[h] = obj_id(fd);
			continue;
		}
		if (fd >= 0) {
			es_log_warn("egress", "pinned link not reusable, attaching anew",
				    "pin", p, "error", strerror(errno), NULL);
			close(fd);
		}
		rc = attach_hook(k, h, err, errsz);
		if (rc != ES_OK)
			goto cleanup;
	}
	*out = k;
	k = NULL;
cleanup:
	es_egk_close(k);
	return rc;
}

/* Pins fd at path unless the object pinned there is already id. Appends to
 * what when it had to. */
static es_err check_pin(int fd, uint32_t id, const char *path, const char *name,
			char *what, size_t whatsz, char *err, size_t errsz)
{
	int pfd = bpf_obj_get(path);
	size_t n = strlen(what);

	if (pfd >= 0) {
		uint32_t pid = obj_id(pfd);

		close(pfd);
		if (pid == id)
			return ES_OK;
		unlink(path);
		snprintf(what + n, whatsz - n, "%spin %s replaced by another object",
			 n ? "; " : "", name);
	} else {
		snprintf(what + n, whatsz - n, "%spin %s missing", n ? "; " : "", name);
	}
	if (bpf_obj_pin(fd, path) != 0)
		return es_errf(ES_ERR_IO, err, errsz, "cannot pin %s again: %s", path,
			       strerror(errno));
	return ES_OK;
}

es_err es_egk_attachments(es_egk *k, es_egk_attach *out, char *err,
			  size_t errsz)
{
	memset(out, 0, sizeof(*out));
	for (int h = 0; h < ES_EGK_HOOKS; h++) {
		__u32 ids[64], cnt = 64, flags = 0;
		struct bpf_link_info li;
		__u32 len = sizeof(li);

		memset(&li, 0, sizeof(li));
		if (k->link_fd[h] >= 0 &&
		    bpf_obj_get_info_by_fd(k->link_fd[h], &li, &len) == 0 &&
		    li.type == BPF_LINK_TYPE_CGROUP && li.cgroup.cgroup_id != 0)
			out->prog_id[h] = li.prog_id;
		if (bpf_prog_query(k->cg_fd, hook_types[h], 0, &flags, ids, &cnt) != 0)
			return es_errf(ES_ERR_IO, err, errsz,
				       "bpf_prog_query(%s) on the cgroup v2 root: %s",
				       es_egk_hook_names[h], strerror(errno));
		for (__u32 i = 0; i < cnt && i < 64; i++) {
			struct bpf_prog_info pi;
			__u32 plen = sizeof(pi), mids[16];
			int pfd = bpf_prog_get_fd_by_id(ids[i]);

			if (pfd < 0)
				continue;
			memset(&pi, 0, sizeof(pi));
			pi.nr_map_ids = 16;
			pi.map_ids = (__u64)(unsigned long)mids;
			if (bpf_obj_get_info_by_fd(pfd, &pi, &plen) == 0 &&
			    !strncmp(pi.name, prog_names[h], sizeof(pi.name)))
				for (__u32 m = 0; m < pi.nr_map_ids && m < 16; m++)
					if (mids[m] == k->map_id[MAP_ACTIVE])
						out->ours[h]++;
			close(pfd);
			if (out->prog_id[h] && ids[i] == out->prog_id[h])
				out->linked[h] = 1;
		}
	}
	return ES_OK;
}

es_err es_egk_repair(es_egk *k, char *what, size_t whatsz, char *err,
		     size_t errsz)
{
	es_egk_attach at;
	char p[640];
	es_err rc;

	what[0] = '\0';
	for (int i = 0; i < NMAPS; i++) {
		pin_path(k->dir, "", map_names[i], p, sizeof(p));
		rc = check_pin(bpf_map__fd(k->maps[i]), k->map_id[i], p, map_names[i],
			       what, whatsz, err, errsz);
		if (rc != ES_OK)
			return rc;
	}
	rc = es_egk_attachments(k, &at, err, errsz);
	if (rc != ES_OK)
		return rc;
	for (int h = 0; h < ES_EGK_HOOKS; h++) {
		size_t n = strlen(what);

		if (!at.linked[h]) {
			snprintf(what + n, whatsz - n, "%scgroup/%s no longer attached",
				 n ? "; " : "", es_egk_hook_names[h]);
			rc = attach_hook(k, h, err, errsz);
			if (rc != ES_OK)
				return rc;
			continue;
		}
		pin_path(k->dir, "link_", es_egk_hook_names[h], p, sizeof(p));
		rc = check_pin(k->link_fd[h], k->link_id[h], p, p + strlen(k->dir) + 1,
			       what, whatsz, err, errsz);
		if (rc != ES_OK)
			return rc;
	}
	return ES_OK;
}

es_err es_egk_remove(es_egk *k, const char *pin_dir, char *err, size_t errsz)
{
	char p[640], failed[900] = "";

	for (int h = 0; h < ES_EGK_HOOKS; h++) {
		pin_path(pin_dir, "link_", es_egk_hook_names[h], p, sizeof(p));
		if (unlink(p) != 0 && errno != ENOENT)
			snprintf(failed, sizeof(failed), "%s: %s", p, strerror(errno));
	}
	for (int i = 0; i < NMAPS; i++) {
		pin_path(pin_dir, "", map_names[i], p, sizeof(p));
		if (unlink(p) != 0 && errno != ENOENT)
			snprintf(failed, sizeof(failed), "%s: %s", p, strerror(errno));
	}
	if (rmdir(pin_dir) != 0 && errno != ENOENT)
		snprintf(failed, sizeof(failed), "%s: %s", pin_dir, strerror(errno));
	es_egk_close(k);
	if (failed[0])
		return es_errf(ES_ERR_IO, err, errsz, "cannot remove %s", failed);
	return ES_OK;
}

void es_egk_close(es_egk *k)
{
	if (!k)
		return;
	for (int h = 0; h < ES_EGK_HOOKS; h++)
		if (k->link_fd[h] >= 0)
			close(k->link_fd[h]);
	if (k->cg_fd >= 0)
		close(k->cg_fd);
	egress_bpf__destroy(k->skel);
	free(k);
}
