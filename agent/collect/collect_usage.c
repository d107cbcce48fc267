/*
 * collect_usage.c - bounded readers and parsers of the /proc sources behind
 * the procfs collectors (collect_usage.h). Formats: proc(5) and the
 * kernel's Documentation/filesystems/proc.rst.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "collect/collect_usage.h"
#include "es_mounts.h"

const char *const es_cu_cpu_mode_names[ES_CU_CPU_MODES] = {
	"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
};

es_err es_cu_read_first_line(const char *path, char *buf, size_t bufsz,
			     char *err, size_t errsz)
{
	es_fs_lines lf;
	es_err rc;
	int more = 0, e;
	size_t n;

	rc = es_fs_lines_open(&lf, path, err, errsz);
	if (rc != ES_OK)
		return rc;
	rc = es_fs_lines_next(&lf, &more, err, errsz);
	if (rc != ES_OK)
		goto cleanup;
	n = strlen(lf.line);
	while (n > 0 && (lf.line[n - 1] == ' ' || lf.line[n - 1] == '\t' ||
			 lf.line[n - 1] == '\r'))
		lf.line[--n] = '\0';
	if (!more || n == 0) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: empty", path);
		goto cleanup;
	}
	if (lf.overlong || n >= bufsz) {
		rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: first line longer than %zu bytes",
			     path, bufsz - 1);
		goto cleanup;
	}
	memcpy(buf, lf.line, n + 1);
cleanup:
	e = errno;
	es_fs_lines_close(&lf);
	errno = e;
	return rc;
}

int es_cu_take_u64(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	while (*s >= '0' && *s <= '9') {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		s++;
		digits++;
	}
	if (digits == 0 || (*s != '\0' && *s != ' ' && *s != '\t'))
		return -1;
	*p = s;
	*out = v;
	return 0;
}

/* 1 when the rest of s is blanks only. */
static int only_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	return *s == '\0';
}

es_err es_cu_read_stat(const char *path, es_cu_stat *st, char *err, size_t errsz)
{
	es_fs_lines lf;
	es_err rc;
	int more = 0, have_cpu = 0;

	memset(st, 0, sizeof(*st));
	st->procs_running = -1;
	st->procs_blocked = -1;
	rc = es_fs_lines_open(&lf, path, err, errsz);
	if (rc != ES_OK)
		return rc;
	for (;;) {
		const char *p = lf.line;
		uint64_t v;

		rc = es_fs_lines_next(&lf, &more, err, errsz);
		if (rc != ES_OK || !more)
			break;
		if (strncmp(p, "cpu", 3) == 0 && (p[3] == ' ' || p[3] == '\t')) {
			if (have_cpu)
				continue;
			p += 3;
			for (int i = 0; i < ES_CU_CPU_MODES; i++) {
				if (es_cu_take_u64(&p, &st->ticks[i]) != 0) {
					rc = es_errf(ES_ERR_PARSE, err, errsz,
						     "%s:%lu: \"cpu\" line: field %s missing or not a number",
						     path, lf.lineno, es_cu_cpu_mode_names[i]);
					goto cleanup;
				}
			}
			have_cpu = 1;
		} else if (strncmp(p, "cpu", 3) == 0 && p[3] >= '0' && p[3] <= '9') {
			st->ncpu++;
		} else if (strncmp(p, "procs_running ", 14) == 0 ||
			   strncmp(p, "procs_blocked ", 14) == 0) {
			int running = p[6] == 'r';

			p += 14;
			if (es_cu_take_u64(&p, &v) != 0 || !only_blanks(p) || v > INT64_MAX) {
				rc = es_errf(ES_ERR_PARSE, err, errsz, "%s:%lu: %s: not a number",
					     path, lf.lineno,
					     running ? "procs_running" : "procs_blocked");
				goto cleanup;
			}
			if (running)
				st->procs_running = (int64_t)v;
			else
				st->procs_blocked = (int64_t)v;
		}
	}
	if (rc != ES_OK)
		goto cleanup;
	if (!have_cpu)
		rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: no \"cpu\" line", path);
	else if (st->ncpu == 0)
		rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: no \"cpuN\" line", path);
cleanup:
	es_fs_lines_close(&lf);
	return rc;
}

es_err es_cu_read_meminfo(const char *path, cJSON **out, uint64_t *memtotal_bytes,
			  char *err, size_t errsz)
{
	es_fs_lines lf;
	cJSON *obj = NULL;
	es_err rc;
	int more = 0, have_total = 0;

	*out = NULL;
	rc = es_fs_lines_open(&lf, path, err, errsz);
	if (rc != ES_OK)
		return rc;
	obj = cJSON_CreateObject();
	if (obj == NULL) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	for (;;) {
		char *name = lf.line, *colon;
		const char *p;
		uint64_t v;

		rc = es_fs_lines_next(&lf, &more, err, errsz);
		if (rc != ES_OK || !more)
			break;
		if (only_blanks(lf.line))
			continue;
		colon = strchr(name, ':');
		if (lf.overlong || colon == NULL || colon == name ||
		    strcspn(name, " \t") < (size_t)(colon - name)) {
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "%s:%lu: expected \"Name: number [kB]\"", path, lf.lineno);
			goto cleanup;
		}
		*colon = '\0';
		p = colon + 1;
		if (es_cu_take_u64(&p, &v) != 0) {
			rc = es_errf(ES_ERR_PARSE, err, errsz, "%s:%lu: %s: not a number",
				     path, lf.lineno, name);
			goto cleanup;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "kB", 2) == 0 && only_blanks(p + 2)) {
			if (v > UINT64_MAX / 1024) {
				rc = es_errf(ES_ERR_PARSE, err, errsz, "%s:%lu: %s: value too large",
					     path, lf.lineno, name);
				goto cleanup;
			}
			v *= 1024;
		} else if (!only_blanks(p)) {
			rc = es_errf(ES_ERR_PARSE, err, errsz, "%s:%lu: %s: unknown unit",
				     path, lf.lineno, name);
			goto cleanup;
		}
		if (cJSON_GetObjectItemCaseSensitive(obj, name) != NULL) {
			rc = es_errf(ES_ERR_PARSE, err, errsz, "%s:%lu: %s: duplicate field",
				     path, lf.lineno, name);
			goto cleanup;
		}
		if (cJSON_AddNumberToObject(obj, name, (double)v) == NULL) {
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
		if (strcmp(name, "MemTotal") == 0) {
			*memtotal_bytes = v;
			have_total = 1;
		}
	}
	if (rc == ES_OK && !have_total)
		rc = es_errf(ES_ERR_PARSE, err, errsz, "%s: no MemTotal", path);
cleanup:
	es_fs_lines_close(&lf);
	if (rc == ES_OK)
		*out = obj;
	else
		cJSON_Delete(obj);
	return rc;
}

es_err es_cu_read_netdev(const char *path, cJSON **out, char *err, size_t errsz)
{
	/* Column of /proc/net/dev for each reported member. */
	static const struct { const char *name; int col; } cols[] = {
		{ "receiveBytes", 0 }, { "receivePackets", 1 },
		{ "receiveErrors", 2 }, { "receiveDrop", 3 },
		{ "transmitBytes", 8 }, { "transmitPackets", 9 },
		{ "transmitErrors", 10 }, { "transmitDrop", 11 },
	};
	es_fs_lines lf;
	cJSON *arr = NULL;
	es_err rc;
	int more = 0;

	*out = NULL;
	rc = es_fs_lines_open(&lf, path, err, errsz);
	if (rc != ES_OK)
		return rc;
	arr = cJSON_CreateArray();
	if (arr == NULL) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	for (;;) {
		char *name = lf.line, *colon;
		const char *p;
		uint64_t v[16];
		cJSON *o;

		rc = es_fs_lines_next(&lf, &more, err, errsz);
		if (rc != ES_OK || !more)
			break;
		if (lf.lineno <= 2 && strchr(lf.line, '|') != NULL)
			continue;
		while (*name == ' ' || *name == '\t')
			name++;
		colon = strchr(name, ':');
		if (lf.overlong || colon == NULL || colon == name ||
		    strcspn(name, " \t") < (size_t)(colon - name)) {
			rc = es_errf(ES_ERR_PARSE, err, errsz,
				     "%s:%lu: expected \"interface: 16 counters\"", path, lf.lineno);
			goto cleanup;
		}
		*colon = '\0';
		p = colon + 1;
		for (int i = 0; i < 16; i++) {
			if (es_cu_take_u64(&p, &v[i]) != 0) {
				rc = es_errf(ES_ERR_PARSE, err, errsz,
					     "%s:%lu: %s: counter %d missing or not a number",
					     path, lf.lineno, name, i + 1);
				goto cleanup;
			}
		}
		o = cJSON_CreateObject();
		if (o == NULL || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
		if (cJSON_AddStringToObject(o, "interface", name) == NULL) {
			rc = ES_ERR_NOMEM;
			goto cleanup;
		}
		for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
			if (cJSON_AddNumberToObject(o, cols[i].name,
						    (double)v[cols[i].col]) == NULL) {
				rc = ES_ERR_NOMEM;
				goto cleanup;
			}
		}
	}
cleanup:
	es_fs_lines_close(&lf);
	if (rc == ES_OK)
		*out = arr;
	else
		cJSON_Delete(arr);
	return rc;
}

/*
 * Reported filesystems: those that hold data on a local block device or
 * flash (OpenWrt's ubifs and jffs2), and overlay (container and OpenWrt
 * roots). Everything else is out: pseudo and memory filesystems (proc,
 * sysfs, devtmpfs, tmpfs, ramfs, cgroup, cgroup2, devpts, mqueue, debugfs,
 * tracefs, bpf, ...), read-only images that are always full (squashfs,
 * erofs, iso9660), and network filesystems (nfs, nfs4, cifs, smb3, ceph,
 * 9p, fuse.*): statvfs on an unreachable server blocks, and the agent's one
 * event loop must not block on the network (docs/ARCHITECTURE.md,
 * "Threading").
 */
int es_cu_fs_type_kept(const char *fstype)
{
	static const char *const kept[] = {
		"ext2", "ext3", "ext4", "xfs", "btrfs", "bcachefs", "f2fs", "jfs",
		"reiserfs", "nilfs2", "zfs", "vfat", "msdos", "exfat", "ntfs",
		"ntfs3", "fuseblk", "hfsplus", "ubifs", "jffs2", "overlay",
	};

	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (strcmp(fstype, kept[i]) == 0)
			return 1;
	return 0;
}

int es_cu_all_digits(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static int seen_key(const cJSON *seen, const char *key)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, seen)
		if (strcmp(it->valuestring, key) == 0)
			return 1;
	return 0;
}

/* Adds one filesystem object to arr. Returns ES_OK or ES_ERR_NOMEM. */
static es_err add_fs(cJSON *arr, const char *dev, const char *mnt,
		     const char *type, const struct statvfs *sv)
{
	uint64_t bs = sv->f_frsize ? sv->f_frsize : sv->f_bsize;
	cJSON *o = cJSON_CreateObject();

	if (o == NULL || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return ES_ERR_NOMEM;
	}
	if (cJSON_AddStringToObject(o, "device", dev) == NULL ||
	    cJSON_AddStringToObject(o, "mountpoint", mnt) == NULL ||
	    cJSON_AddStringToObject(o, "fstype", type) == NULL ||
	    cJSON_AddNumberToObject(o, "sizeBytes", (double)sv->f_blocks * (double)bs) == NULL ||
	    cJSON_AddNumberToObject(o, "availBytes", (double)sv->f_bavail * (double)bs) == NULL ||
	    cJSON_AddNumberToObject(o, "freeBytes", (double)sv->f_bfree * (double)bs) == NULL ||
	    cJSON_AddNumberToObject(o, "files", (double)sv->f_files) == NULL ||
	    cJSON_AddNumberToObject(o, "filesFree", (double)sv->f_ffree) == NULL)
		return ES_ERR_NOMEM;
	return ES_OK;
}

es_err es_cu_read_mounts(const char *path, cJSON **out, char *err, size_t errsz)
{
	es_mounts *mt = NULL;
	cJSON *arr = NULL, *seen = NULL;
	es_err rc, first = ES_OK;
	int more = 0;

	*out = NULL;
	rc = es_mounts_open(path, &mt, err, errsz);
	if (rc != ES_OK)
		return rc;
	arr = cJSON_CreateArray();
	seen = cJSON_CreateArray();
	if (arr == NULL || seen == NULL) {
		rc = ES_ERR_NOMEM;
		goto cleanup;
	}
	for (;;) {
		char e[512];
		const char *key;
		es_mount m;
		struct statvfs sv;
		cJSON *k;

		rc = es_mounts_next(mt, &m, &more, e, sizeof(e));
		if (!more) {
			if (rc != ES_OK)
				es_errf(rc, err, errsz, "%s", e);
			break;
		}
		if (rc != ES_OK) {
			if (first == ES_OK)
				first = es_errf(rc, err, errsz, "%s", e);
			rc = ES_OK;
			continue;
		}
		/* One per device: mountinfo's major:minor, else the source when
		 * it is a path. */
		key = m.mountinfo ? m.devid : m.source[0] == '/' ? m.source : NULL;
		if (!es_cu_fs_type_kept(m.fstype) || (key != NULL && seen_key(seen, key)))
			continue;
		if (statvfs(m.target, &sv) != 0) {
			if (first == ES_OK)
				first = es_errf(ES_ERR_IO, err, errsz, "statvfs %s: %s", m.target,
						strerror(errno));
			continue;
		}
		if (key != NULL) {
			k = cJSON_CreateString(key);
			if (k == NULL || !cJSON_AddItemToArray(seen, k)) {
				cJSON_Delete(k);
				rc = ES_ERR_NOMEM;
				goto cleanup;
			}
		}
		rc = add_fs(arr, m.source, m.target, m.fstype, &sv);
		if (rc != ES_OK)
			goto cleanup;
	}
cleanup:
	es_mounts_close(mt);
	cJSON_Delete(seen);
	if (rc == ES_OK) {
		*out = arr;
		return first;
	}
	cJSON_Delete(arr);
	return rc;
}
