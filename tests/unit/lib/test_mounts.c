/*
 * test_mounts.c - lib/es_mounts.c: mountinfo and /proc/mounts lines, the
 * kernel's octal escapes decoded in every field, bad and truncated lines,
 * the line and table bounds, and es_mounts_find, on fixtures in
 * tests/fixtures/mounts/ and temporary files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "es_fs.h"
#include "es_mounts.h"

#define FIX ES_FIXTURES "/mounts/"

/* Reads the next entry, which must be a good one. */
static void next_ok(es_mounts *m, es_mount *e)
{
	char err[256] = "";
	int more = 0;

	assert_int_equal(es_mounts_next(m, e, &more, err, sizeof(err)), ES_OK);
	assert_int_equal(more, 1);
}

/* Reads the next entry, which must be a bad line numbered lineno. */
static void next_bad(es_mounts *m, const char *path, unsigned lineno)
{
	char err[512] = "", want[512];
	es_mount e;
	int more = 0;

	assert_int_equal(es_mounts_next(m, &e, &more, err, sizeof(err)), ES_ERR_PARSE);
	assert_int_equal(more, 1);
	snprintf(want, sizeof(want), "%s:%u: not a mount table line", path, lineno);
	assert_string_equal(err, want);
	assert_null(e.target);
}

/* The decoded text fields of *e; root NULL: a mounts-format entry. */
static void expect(const es_mount *e, const char *source, const char *target,
		   const char *fstype, const char *options, const char *root)
{
	assert_string_equal(e->source, source);
	assert_string_equal(e->target, target);
	assert_string_equal(e->fstype, fstype);
	assert_string_equal(e->options, options);
	if (root == NULL)
		assert_null(e->root);
	else
		assert_string_equal(e->root, root);
	assert_int_equal(e->mountinfo, root != NULL);
}

static void next_end(es_mounts *m)
{
	char err[256] = "";
	es_mount e;
	int more = 1;

	assert_int_equal(es_mounts_next(m, &e, &more, err, sizeof(err)), ES_OK);
	assert_int_equal(more, 0);
}

static void test_escaped_fields(void **state)
{
	es_mounts *m = NULL;
	es_mount e;
	char err[256];

	(void)state;
	assert_int_equal(es_mounts_open(FIX "escaped.mountinfo", &m, err, sizeof(err)),
			 ES_OK);
	next_ok(m, &e);
	expect(&e, "proc", "/proc", "proc", "rw,nosuid,nodev,noexec,relatime", "/");
	assert_string_equal(e.devid, "0:21");
	assert_int_equal(e.major, 0);
	assert_int_equal(e.minor, 21);
	next_ok(m, &e);
	assert_string_equal(e.target, "/");
	assert_string_equal(e.devid, "8:1");
	assert_int_equal(e.major, 8);
	assert_int_equal(e.minor, 1);

	/* Space, tab, newline and backslash in every field, two optional
	 * fields before the separator. */
	next_ok(m, &e);
	expect(&e, "/dev/disk one", "/mnt/a b\tc\nd\\e", "fuse.my fs",
	       "rw,noatime,lbl=a b", "/sub dir");
	assert_int_equal(e.major, 8);
	assert_int_equal(e.minor, 17);

	/* An escaped backslash is decoded once: "\134040" is "\040". */
	next_ok(m, &e);
	assert_string_equal(e.target, "/srv/literal\\040");
	/* \000, short and non-octal escapes, a trailing backslash: as is. */
	next_ok(m, &e);
	assert_string_equal(e.target, "/srv/keep\\000\\8\\12x\\");
	assert_string_equal(e.source, "none");
	for (int i = 0; i < 4; i++)
		next_ok(m, &e);
	assert_string_equal(e.target, "/sys/fs/cgroup/a second one");
	next_end(m);
	next_end(m);
	es_mounts_close(m);
	es_mounts_close(NULL);
}

static void test_mounts_format(void **state)
{
	es_mounts *m = NULL;
	es_mount e;
	char err[256];

	(void)state;
	assert_int_equal(es_mounts_open(FIX "proc.mounts", &m, err, sizeof(err)), ES_OK);
	next_ok(m, &e);
	expect(&e, "proc", "/proc", "proc", "rw,nosuid,nodev,noexec,relatime", NULL);
	assert_null(e.devid);
	assert_int_equal(e.major, 0);
	next_ok(m, &e);
	next_ok(m, &e);
	expect(&e, "/dev/sdb1", "/mnt/data disk", "ext4", "rw,relatime", NULL);
	next_ok(m, &e);
	next_end(m);
	es_mounts_close(m);
}

static void test_bad_and_truncated_lines(void **state)
{
	const char *path = FIX "bad.mountinfo";
	es_mounts *m = NULL;
	es_mount e;
	char err[256];

	(void)state;
	assert_int_equal(es_mounts_open(path, &m, err, sizeof(err)), ES_OK);
	next_bad(m, path, 1);
	/* Line 2 is empty: skipped. */
	next_ok(m, &e);
	assert_string_equal(e.target, "/");
	next_bad(m, path, 4);  /* cut after the fs type */
	next_bad(m, path, 5);  /* mount id not a number */
	next_bad(m, path, 6);  /* minor not a number */
	next_bad(m, path, 7);  /* minor above UINT_MAX */
	next_bad(m, path, 8);  /* no minor */
	/* Line 9 has blanks only: skipped. */
	next_bad(m, path, 10); /* mounts format, pass not a number */
	next_ok(m, &e);
	assert_string_equal(e.fstype, "tracefs");
	next_ok(m, &e);
	assert_string_equal(e.target, "/last");
	/* The last line has no newline. */
	next_ok(m, &e);
	assert_string_equal(e.target, "/no-newline");
	next_end(m);
	es_mounts_close(m);
}

static char *write_tmp(const char *text, size_t n)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/es-mounts-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
	return path;
}

/* Writes at text a mountinfo line of len bytes and its newline; returns
 * the length of its target. */
static size_t long_line(char *text, size_t len)
{
	const char *head = "28 1 8:1 / /", *tail = " rw - ext4 /dev/sda1 rw\n";
	size_t h = strlen(head), t = strlen(tail), x = len - h - (t - 1);

	memcpy(text, head, h);
	memset(text + h, 'x', x);
	memcpy(text + h + x, tail, t);
	return 1 + x;
}

static void test_bounds(void **state)
{
	const char *good = "28 1 8:1 / / rw - ext4 /dev/sda1 rw\n";
	size_t big = ES_FS_FILE_MAX + 1, n, tlen;
	char *text = malloc(big), err[256], *path;
	es_mounts *m = NULL;
	es_mount e;
	int more = 1;

	(void)state;
	assert_non_null(text);
	/* A line of ES_FS_LINE_MAX - 1 bytes is read; one more is not. */
	tlen = long_line(text, ES_FS_LINE_MAX - 1);
	n = ES_FS_LINE_MAX;
	long_line(text + n, ES_FS_LINE_MAX);
	n += ES_FS_LINE_MAX + 1;
	memcpy(text + n, good, strlen(good));
	n += strlen(good);
	path = write_tmp(text, n);
	assert_int_equal(es_mounts_open(path, &m, err, sizeof(err)), ES_OK);
	next_ok(m, &e);
	assert_int_equal(strlen(e.target), tlen);
	assert_string_equal(e.source, "/dev/sda1");
	next_bad(m, path, 2);
	next_ok(m, &e);
	assert_string_equal(e.target, "/");
	next_end(m);
	es_mounts_close(m);
	unlink(path);

	/* A table larger than ES_FS_FILE_MAX: an error, not an entry. */
	memset(text, '\n', big);
	path = write_tmp(text, big);
	assert_int_equal(es_mounts_open(path, &m, err, sizeof(err)), ES_OK);
	assert_int_equal(es_mounts_next(m, &e, &more, err, sizeof(err)), ES_ERR_TOOBIG);
	assert_int_equal(more, 0);
	assert_non_null(strstr(err, "larger than"));
	es_mounts_close(m);
	unlink(path);
	free(text);

	/* No table at all. */
	m = (es_mounts *)1;
	assert_int_equal(es_mounts_open("/nonexistent/mountinfo", &m, err, sizeof(err)),
			 ES_ERR_IO);
	assert_int_equal(errno, ENOENT);
	assert_null(m);
	assert_string_equal(err, "/nonexistent/mountinfo: No such file or directory");
}

static void test_find(void **state)
{
	const char *esc = FIX "escaped.mountinfo";
	char where[64], err[256];

	(void)state;
	assert_int_equal(es_mounts_find(esc, "tracefs", "/sys/kernel/tracing", NULL,
					where, sizeof(where), err, sizeof(err)), ES_OK);
	assert_string_equal(where, "/sys/kernel/tracing");
	/* Root "/": the nested cgroup2 mount before it is passed over. */
	assert_int_equal(es_mounts_find(esc, "cgroup2", NULL, "/", where, sizeof(where),
					err, sizeof(err)), ES_OK);
	assert_string_equal(where, "/sys/fs/cgroup");
	assert_int_equal(es_mounts_find(esc, "cgroup2", NULL, NULL, where, sizeof(where),
					err, sizeof(err)), ES_OK);
	assert_string_equal(where, "/sys/fs/cgroup/nested");
	/* Matched on the decoded fields. */
	assert_int_equal(es_mounts_find(esc, "fuse.my fs", "/mnt/a b\tc\nd\\e", "/sub dir",
					where, sizeof(where), err, sizeof(err)), ES_OK);
	assert_string_equal(where, "/mnt/a b\tc\nd\\e");
	/* A target that does not fit is passed over. */
	assert_int_equal(es_mounts_find(esc, "cgroup2", NULL, NULL, where, 15, err,
					sizeof(err)), ES_OK);
	assert_string_equal(where, "/sys/fs/cgroup");
	assert_int_equal(es_mounts_find(esc, "cgroup2", NULL, NULL, where, 14, err,
					sizeof(err)), ES_ERR_NOTFOUND);
	assert_int_equal(es_mounts_find(esc, "tracefs", "/sys/kernel/debug/tracing",
					NULL, where, sizeof(where), err, sizeof(err)),
			 ES_ERR_NOTFOUND);
	assert_string_equal(err, FIX "escaped.mountinfo: no tracefs mount at "
			    "/sys/kernel/debug/tracing");
	/* Bad lines are passed over. */
	assert_int_equal(es_mounts_find(FIX "bad.mountinfo", "tracefs", NULL, NULL, where,
					sizeof(where), err, sizeof(err)), ES_OK);
	assert_string_equal(where, "/sys/kernel/tracing");
	/* A root is only matched in mountinfo entries. */
	assert_int_equal(es_mounts_find(FIX "proc.mounts", "tracefs", NULL, NULL, where,
					sizeof(where), err, sizeof(err)), ES_OK);
	assert_string_equal(where, "/sys/kernel/debug/tracing");
	assert_int_equal(es_mounts_find(FIX "proc.mounts", "tracefs", NULL, "/", where,
					sizeof(where), err, sizeof(err)), ES_ERR_NOTFOUND);
	assert_int_equal(es_mounts_find("/nonexistent", "tracefs", NULL, NULL, where,
					sizeof(where), err, sizeof(err)), ES_ERR_IO);
	/* This process's own table (the default) has /proc. */
	assert_int_equal(es_mounts_find(NULL, "proc", "/proc", NULL, where, sizeof(where),
					NULL, 0), ES_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escaped_fields),
		cmocka_unit_test(test_mounts_format),
		cmocka_unit_test(test_bad_and_truncated_lines),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
