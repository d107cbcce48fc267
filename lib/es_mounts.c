/*
 * es_mounts.c - the kernel's mount table, one entry at a time
 * (es_mounts.h). Formats: proc(5) (/proc/<pid>/mountinfo, /proc/mounts).
 */
#include "es_mounts.h"
#include "es_fs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most blank-separated fields on a line: mountinfo has 10 and a few
 * optional fields ("shared:1 master:2"). */
#define FIELDS_MAX 64

struct es_mounts {
	es_fs_lines lf;
	char path[]; /* the table's path, lf.path */
};

es_err es_mounts_open(const char *path, es_mounts **out, char *err, size_t errsz)
{
	es_mounts *m;
	size_t n;
	es_err rc;

	*out = NULL;
	if (path == NULL)
		path = ES_MOUNTS_SELF;
	n = strlen(path);
	m = malloc(sizeof(*m) + n + 1);
	if (m == NULL)
		return es_errf(ES_ERR_NOMEM, err, errsz, "%s: out of memory", path);
	memcpy(m->path, path, n + 1);
	rc = es_fs_lines_open(&m->lf, m->path, err, errsz);
	if (rc != ES_OK) {
		int e = errno;

		free(m);
		errno = e;
		return rc;
	}
	*out = m;
	return ES_OK;
}

void es_mounts_close(es_mounts *m)
{
	if (m == NULL)
		return;
	es_fs_lines_close(&m->lf);
	free(m);
}

/* Decodes, in place, the kernel's octal escapes: a backslash and three
 * octal digits of a byte value 1 to 255 (\040 space, \011 tab, \012
 * newline, \134 backslash). Anything else, \000 included, is kept as is. */
static void unescape(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			int c = (s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0');

			if (c != 0) {
				*w++ = (char)c;
				s += 4;
				continue;
			}
		}
		*w++ = *s++;
	}
	*w = '\0';
}

static int only_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	return *s == '\0';
}

/* Splits s in place at blanks into at most max fields. Returns the count,
 * or -1 when there are more. */
static int split_blanks(char *s, char **tok, int max)
{
	int n = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0')
			return n;
		if (n == max)
			return -1;
		tok[n++] = s;
		while (*s && *s != ' ' && *s != '\t')
			s++;
		if (*s)
			*s++ = '\0';
	}
}

/* Parses a non-empty run of ASCII digits that is all of s into *v.
 * Returns 0, or -1 (empty, another character, above UINT_MAX). */
static int take_uint(const char *s, size_t len, unsigned *v)
{
	unsigned long long x = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		x = x * 10 + (unsigned)(s[i] - '0');
		if (x > UINT_MAX)
			return -1;
	}
	*v = (unsigned)x;
	return 0;
}

/* Fills *e from one line, mountinfo or mounts format. Returns 0, or -1
 * when the line is neither. */
static int parse_line(char *line, es_mount *e)
{
	char *tok[FIELDS_MAX], *src = NULL, *tgt = NULL, *type = NULL, *opts = NULL;
	char *root = NULL;
	const char *colon;
	unsigned id;
	int n = split_blanks(line, tok, FIELDS_MAX);

	memset(e, 0, sizeof(*e));
	/* id parent major:minor root target options [optional...] - fstype
	 * source super-options */
	for (int i = 6; n >= 9 && i + 2 < n; i++) {
		if (strcmp(tok[i], "-") != 0)
			continue;
		colon = strchr(tok[2], ':');
		if (take_uint(tok[0], strlen(tok[0]), &id) != 0 ||
		    take_uint(tok[1], strlen(tok[1]), &id) != 0 || colon == NULL ||
		    take_uint(tok[2], (size_t)(colon - tok[2]), &e->major) != 0 ||
		    take_uint(colon + 1, strlen(colon + 1), &e->minor) != 0)
			return -1;
		e->devid = tok[2];
		e->mountinfo = 1;
		root = tok[3];
		tgt = tok[4];
		opts = tok[5];
		type = tok[i + 1];
		src = tok[i + 2];
		break;
	}
	/* source target fstype options dump pass */
	if (!e->mountinfo) {
		if (n != 6 || take_uint(tok[4], strlen(tok[4]), &id) != 0 ||
		    take_uint(tok[5], strlen(tok[5]), &id) != 0)
			return -1;
		src = tok[0];
		tgt = tok[1];
		type = tok[2];
		opts = tok[3];
	}
	unescape(src);
	unescape(tgt);
	unescape(type);
	unescape(opts);
	if (root != NULL)
		unescape(root);
	e->source = src;
	e->target = tgt;
	e->fstype = type;
	e->options = opts;
	e->root = root;
	return 0;
}

es_err es_mounts_next(es_mounts *m, es_mount *ent, int *more, char *err,
		      size_t errsz)
{
	es_err rc;

	do {
		rc = es_fs_lines_next(&m->lf, more, err, errsz);
		if (rc != ES_OK) {
			*more = 0;
			return rc;
		}
		if (!*more)
			return ES_OK;
	} while (only_blanks(m->lf.line));
	if (m->lf.overlong || parse_line(m->lf.line, ent) != 0) {
		memset(ent, 0, sizeof(*ent));
		return es_errf(ES_ERR_PARSE, err, errsz, "%s:%lu: not a mount table line",
			       m->path, m->lf.lineno);
	}
	return ES_OK;
}

es_err es_mounts_find(const char *path, const char *fstype, const char *target,
		      const char *root, char *where, size_t wsz, char *err,
		      size_t errsz)
{
	es_mounts *m = NULL;
	es_mount e;
	es_err rc;
	int more = 0, found = 0;

	rc = es_mounts_open(path, &m, err, errsz);
	if (rc != ES_OK)
		return rc;
	for (;;) {
		rc = es_mounts_next(m, &e, &more, err, errsz);
		if (!more)
			break;
		if (rc != ES_OK || strcmp(e.fstype, fstype) != 0 ||
		    (target != NULL && strcmp(e.target, target) != 0) ||
		    (root != NULL && (e.root == NULL || strcmp(e.root, root) != 0)) ||
		    strlen(e.target) >= wsz)
			continue;
		memcpy(where, e.target, strlen(e.target) + 1);
		found = 1;
		break;
	}
	es_mounts_close(m);
	if (found)
		return ES_OK;
	if (rc != ES_OK)
		return rc;
	return es_errf(ES_ERR_NOTFOUND, err, errsz, "%s: no %s mount%s%s%s%s",
		       path ? path : ES_MOUNTS_SELF, fstype, target ? " at " : "",
		       target ? target : "", root ? " of root " : "", root ? root : "");
}
