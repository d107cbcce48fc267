/*
 * es_fs.c - small file system helpers: mkdir -p, syncing a directory,
 * bounded line reading (es_fs.h).
 */
#include "es_fs.h"
#include "es_buf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/* mkdir(2) of one component: ES_OK when p is a directory afterwards. */
static es_err make_one(const char *p, mode_t mode, char *err, size_t errsz)
{
	struct stat st;
	int e;

	if (mkdir(p, mode) == 0)
		return ES_OK;
	e = errno;
	if (e == EEXIST) {
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
			return ES_OK;
		e = ENOTDIR;
	}
	es_errf(ES_ERR_IO, err, errsz, "cannot create %s: %s", p, strerror(e));
	errno = e;
	return ES_ERR_IO;
}

es_err es_fs_mkdir_p(const char *path, mode_t mode, char *err, size_t errsz)
{
	char p[PATH_MAX];
	size_t n = strlen(path);
	es_err rc;

	if (n == 0 || n >= sizeof(p))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "\"%.64s\": bad path (empty or longer than %d bytes)",
			       path, PATH_MAX - 1);
	memcpy(p, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		if (p[i - 1] == '/')
			continue; /* "a//b", a trailing "/" */
		p[i] = '\0';
		rc = make_one(p, mode, err, errsz);
		if (rc != ES_OK)
			return rc;
		if (i < n)
			p[i] = '/';
	}
	return ES_OK;
}

es_err es_fs_sync_parent(const char *path, char *err, size_t errsz)
{
	char dir[PATH_MAX];
	size_t n = strlen(path);
	char *slash;
	int fd, e;

	if (n == 0 || n >= sizeof(dir))
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "\"%.64s\": bad path (empty or longer than %d bytes)",
			       path, PATH_MAX - 1);
	memcpy(dir, path, n + 1);
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		strcpy(dir, ".");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && fsync(fd) == 0) {
		close(fd);
		return ES_OK;
	}
	e = errno;
	if (fd >= 0)
		close(fd);
	es_errf(ES_ERR_IO, err, errsz, "%s: fsync of directory: %s", dir, strerror(e));
	errno = e;
	return ES_ERR_IO;
}

es_err es_fs_lines_open(es_fs_lines *lf, const char *path, char *err, size_t errsz)
{
	memset(lf, 0, offsetof(es_fs_lines, line));
	lf->line[0] = '\0';
	lf->path = path;
	lf->f = fopen(path, "re");
	if (lf->f == NULL) {
		int e = errno;

		es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(e));
		errno = e;
		return ES_ERR_IO;
	}
	return ES_OK;
}

es_err es_fs_lines_next(es_fs_lines *lf, int *more, char *err, size_t errsz)
{
	size_t n = 0;
	int c = EOF;

	*more = 0;
	if (lf == NULL || lf->f == NULL)
		return ES_OK;
	lf->overlong = 0;
	while ((c = getc_unlocked(lf->f)) != EOF) {
		if (++lf->total > ES_FS_FILE_MAX)
			return es_errf(ES_ERR_TOOBIG, err, errsz, "%s: larger than %u bytes",
				       lf->path, ES_FS_FILE_MAX);
		if (c == '\n')
			break;
		if (n < sizeof(lf->line) - 1)
			lf->line[n++] = (char)c;
		else
			lf->overlong = 1;
	}
	lf->line[n] = '\0';
	if (c == EOF && ferror(lf->f)) {
		int e = errno;

		es_errf(ES_ERR_IO, err, errsz, "%s: read failed: %s", lf->path, strerror(e));
		errno = e;
		return ES_ERR_IO;
	}
	if (c == EOF && n == 0 && !lf->overlong)
		return ES_OK;
	lf->lineno++;
	*more = 1;
	return ES_OK;
}

void es_fs_lines_close(es_fs_lines *lf)
{
	if (lf == NULL || lf->f == NULL)
		return;
	fclose(lf->f);
	lf->f = NULL;
}

es_err es_fs_read_all(const char *path, size_t max, char **out, size_t *len, char *err,
		      size_t errsz)
{
	FILE *f = fopen(path, "re");
	es_buf b = { 0 };
	char chunk[16384];
	size_t n, got;
	int rerr;

	*out = NULL;
	if (!f)
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(errno));
	es_buf_init(&b, max);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.err == ES_OK)
		es_buf_append(&b, chunk, n);
	rerr = ferror(f) ? errno : 0;
	fclose(f);
	if (rerr) {
		es_buf_free(&b);
		errno = rerr;
		return es_errf(ES_ERR_IO, err, errsz, "%s: %s", path, strerror(rerr));
	}
	if (b.err != ES_OK) {
		es_err rc = b.err;

		es_buf_free(&b);
		return rc == ES_ERR_NOMEM ? ES_ERR_NOMEM :
			es_errf(ES_ERR_TOOBIG, err, errsz, "%s: over %zu bytes", path, max);
	}
	*out = es_buf_detach(&b, &got);
	if (!*out && !(*out = strdup("")))
		return ES_ERR_NOMEM;
	if (len)
		*len = got;
	return ES_OK;
}
