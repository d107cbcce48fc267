/*
 * test_fs.c - lib/es_fs.c: mkdir -p on a nested path, on what exists, with
 * a file in the way, through a symbolic link, with the mode and umask, and
 * without the permission to create (as an unprivileged user when the test
 * runs as root); syncing the directory of a path; the bounded line reader
 * (line numbers, a last line without a newline, overlong lines, the file
 * size bound).
 */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "es_fs.h"

static char base[64];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/es-fs-XXXXXX");
	if (mkdtemp(base) == NULL)
		return -1;
	umask(022);
	return 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	chmod(p, 0700);
	return remove(p);
}

static int teardown(void **state)
{
	(void)state;
	chmod(base, 0700);
	return nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static mode_t mode_of(const char *p)
{
	struct stat st;

	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	return st.st_mode & 07777;
}

static void at(char *buf, size_t sz, const char *rel)
{
	snprintf(buf, sz, "%s/%s", base, rel);
}

static void test_nested_and_existing(void **state)
{
	char p[256], q[256], err[256] = "";

	(void)state;
	at(p, sizeof(p), "a/b/c");
	assert_int_equal(es_fs_mkdir_p(p, 0750, err, sizeof(err)), ES_OK);
	assert_int_equal(mode_of(p), 0750);
	at(q, sizeof(q), "a/b");
	assert_int_equal(mode_of(q), 0750);
	/* The umask applies, as for mkdir(2). */
	at(p, sizeof(p), "a/b/c/wide");
	assert_int_equal(es_fs_mkdir_p(p, 0777, err, sizeof(err)), ES_OK);
	assert_int_equal(mode_of(p), 0755);

	/* Existing: nothing changes, its mode included. */
	at(p, sizeof(p), "a/b/c");
	assert_int_equal(chmod(p, 0711), 0);
	assert_int_equal(es_fs_mkdir_p(p, 0700, err, sizeof(err)), ES_OK);
	assert_int_equal(mode_of(p), 0711);
	assert_int_equal(es_fs_mkdir_p("/", 0700, err, sizeof(err)), ES_OK);
	assert_int_equal(es_fs_mkdir_p(base, 0700, err, sizeof(err)), ES_OK);

	/* Doubled and trailing slashes. */
	at(p, sizeof(p), "d//e///f/");
	assert_int_equal(es_fs_mkdir_p(p, 0700, err, sizeof(err)), ES_OK);
	at(p, sizeof(p), "d/e/f");
	assert_int_equal(mode_of(p), 0700);

	/* Through a symbolic link to a directory. */
	at(p, sizeof(p), "a");
	at(q, sizeof(q), "link");
	assert_int_equal(symlink(p, q), 0);
	at(q, sizeof(q), "link/g/h");
	assert_int_equal(es_fs_mkdir_p(q, 0700, err, sizeof(err)), ES_OK);
	at(p, sizeof(p), "a/g/h");
	assert_int_equal(mode_of(p), 0700);
}

static void test_relative(void **state)
{
	char cwd[PATH_MAX], err[256];

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(base), 0);
	assert_int_equal(es_fs_mkdir_p("r/s", 0700, err, sizeof(err)), ES_OK);
	assert_int_equal(es_fs_mkdir_p("r/s", 0700, err, sizeof(err)), ES_OK);
	assert_int_equal(mode_of("r/s"), 0700);
	assert_int_equal(chdir(cwd), 0);
}

static void test_file_in_the_way(void **state)
{
	char p[256], want[512], err[256];
	int fd;

	(void)state;
	at(p, sizeof(p), "file");
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	/* The path itself is a file. */
	assert_int_equal(es_fs_mkdir_p(p, 0700, err, sizeof(err)), ES_ERR_IO);
	assert_int_equal(errno, ENOTDIR);
	snprintf(want, sizeof(want), "cannot create %s: %s", p, strerror(ENOTDIR));
	assert_string_equal(err, want);
	/* A parent is a file: err names it. */
	at(p, sizeof(p), "file/sub/dir");
	assert_int_equal(es_fs_mkdir_p(p, 0700, err, sizeof(err)), ES_ERR_IO);
	assert_int_equal(errno, ENOTDIR);
	assert_string_equal(err, want);
}

static void test_bad_paths(void **state)
{
	char *p = malloc(PATH_MAX + 1), err[256];

	(void)state;
	assert_non_null(p);
	assert_int_equal(es_fs_mkdir_p("", 0700, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "bad path"));
	memset(p, 'a', PATH_MAX);
	p[0] = '/';
	p[PATH_MAX] = '\0';
	assert_int_equal(es_fs_mkdir_p(p, 0700, err, sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_fs_mkdir_p(p, 0700, NULL, 0), ES_ERR_INVAL);
	free(p);
}

/* In a child, as nobody when running as root: creating under a directory
 * of mode 0555 fails with EACCES, and what exists is still accepted. */
static void test_no_permission(void **state)
{
	char ro[256], p[256];
	pid_t pid;
	int status = -1;

	(void)state;
	assert_int_equal(chmod(base, 0755), 0);
	at(ro, sizeof(ro), "ro");
	assert_int_equal(mkdir(ro, 0555), 0);
	assert_int_equal(chmod(ro, 0555), 0);
	at(p, sizeof(p), "ro/x/y");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char err[256] = "";
		int code = 0;

		if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(10);
		if (es_fs_mkdir_p(p, 0700, err, sizeof(err)) != ES_ERR_IO)
			code |= 1;
		if (errno != EACCES)
			code |= 2;
		if (strstr(err, "/ro/x: Permission denied") == NULL)
			code |= 4;
		if (es_fs_mkdir_p(ro, 0700, err, sizeof(err)) != ES_OK)
			code |= 8;
		_exit(code);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(access(p, F_OK), -1);
}

static void write_file(const char *p, const char *text, size_t n)
{
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
}

static void test_sync_parent(void **state)
{
	char p[128], err[256] = "";

	(void)state;
	snprintf(p, sizeof(p), "%s/file", base);
	assert_int_equal(es_fs_sync_parent(p, err, sizeof(err)), ES_OK);
	assert_int_equal(es_fs_sync_parent("/etc", err, sizeof(err)), ES_OK);
	assert_int_equal(es_fs_sync_parent("bare-name", err, sizeof(err)), ES_OK);
	snprintf(p, sizeof(p), "%s/missing/file", base);
	assert_int_equal(es_fs_sync_parent(p, err, sizeof(err)), ES_ERR_IO);
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, "/missing: fsync of directory: "));
	assert_int_equal(es_fs_sync_parent("", err, sizeof(err)), ES_ERR_INVAL);
}

static void test_lines(void **state)
{
	size_t big = ES_FS_FILE_MAX + 1;
	char p[256], err[256], *text = malloc(big);
	es_fs_lines lf;
	int more = 0;

	(void)state;
	assert_non_null(text);
	at(p, sizeof(p), "lines");
	memcpy(text, "one\n\n", 5);
	memset(text + 5, 'x', ES_FS_LINE_MAX);
	memcpy(text + 5 + ES_FS_LINE_MAX, "\nlast", 5);
	write_file(p, text, 10 + ES_FS_LINE_MAX);
	assert_int_equal(es_fs_lines_open(&lf, p, err, sizeof(err)), ES_OK);
	assert_int_equal(es_fs_lines_next(&lf, &more, err, sizeof(err)), ES_OK);
	assert_int_equal(more, 1);
	assert_string_equal(lf.line, "one");
	assert_int_equal(es_fs_lines_next(&lf, &more, err, sizeof(err)), ES_OK);
	assert_int_equal(more, 1);
	assert_string_equal(lf.line, "");
	/* Cut at ES_FS_LINE_MAX - 1 bytes, flagged. */
	assert_int_equal(es_fs_lines_next(&lf, &more, err, sizeof(err)), ES_OK);
	assert_int_equal(more, 1);
	assert_int_equal(lf.overlong, 1);
	assert_int_equal(strlen(lf.line), ES_FS_LINE_MAX - 1);
	assert_int_equal(es_fs_lines_next(&lf, &more, err, sizeof(err)), ES_OK);
	assert_int_equal(more, 1);
	assert_int_equal(lf.overlong, 0);
	assert_string_equal(lf.line, "last");
	assert_int_equal(lf.lineno, 4);
	assert_int_equal(es_fs_lines_next(&lf, &more, err, sizeof(err)), ES_OK);
	assert_int_equal(more, 0);
	es_fs_lines_close(&lf);
	es_fs_lines_close(&lf);
	es_fs_lines_close(NULL);

	/* Past ES_FS_FILE_MAX bytes: ES_ERR_TOOBIG. */
	memset(text, '\n', big);
	write_file(p, text, big);
	free(text);
	assert_int_equal(es_fs_lines_open(&lf, p, err, sizeof(err)), ES_OK);
	do
		assert_int_not_equal(es_fs_lines_next(&lf, &more, err, sizeof(err)),
				     ES_ERR_IO);
	while (more);
	assert_int_equal(lf.lineno, ES_FS_FILE_MAX);
	assert_non_null(strstr(err, "larger than"));
	es_fs_lines_close(&lf);

	at(p, sizeof(p), "missing");
	assert_int_equal(es_fs_lines_open(&lf, p, err, sizeof(err)), ES_ERR_IO);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(es_fs_lines_next(&lf, &more, err, sizeof(err)), ES_OK);
	assert_int_equal(more, 0);
	es_fs_lines_close(&lf);
}

/* es_fs_read_all: the whole file with its length, "" for an empty one,
 * ES_ERR_TOOBIG past max, ES_ERR_IO naming a missing file. */
static void test_read_all(void **state)
{
	char p[PATH_MAX], err[256], *text = (char *)"x";
	size_t len = 99;

	at(p, sizeof(p), "f.txt");
	write_file(p, "ab\0cd", 5);
	assert_int_equal(es_fs_read_all(p, 5, &text, &len, err, sizeof(err)), ES_OK);
	assert_int_equal(len, 5);
	assert_memory_equal(text, "ab\0cd", 6);
	free(text);
	assert_int_equal(es_fs_read_all(p, 4, &text, &len, err, sizeof(err)), ES_ERR_TOOBIG);
	assert_null(text);
	assert_non_null(strstr(err, "over 4 bytes"));
	write_file(p, "", 0);
	assert_int_equal(es_fs_read_all(p, 4, &text, NULL, err, sizeof(err)), ES_OK);
	assert_string_equal(text, "");
	free(text);
	at(p, sizeof(p), "missing");
	assert_int_equal(es_fs_read_all(p, 4, &text, NULL, err, sizeof(err)), ES_ERR_IO);
	assert_null(text);
	assert_non_null(strstr(err, "missing: No such file"));
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nested_and_existing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relative, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_in_the_way, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_permission, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_parent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_all, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
