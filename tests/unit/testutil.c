/*
 * testutil.c - helpers shared by the unit tests (testutil.h).
 */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "es_json.h"
#include "testutil.h"

void es_test_tmpdir(char *dir, size_t dirsz, const char *tag, char *path,
		    size_t pathsz, const char *file)
{
	int n = snprintf(dir, dirsz, "/tmp/es-%s-XXXXXX", tag);

	if (n < 0 || (size_t)n >= dirsz) {
		fail_msg("temporary directory name for %s does not fit", tag);
		return;
	}
	if (!mkdtemp(dir)) {
		fail_msg("mkdtemp %s failed", dir);
		return;
	}
	if (!path)
		return;
	n = snprintf(path, pathsz, "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= pathsz)
		fail_msg("path of %s in %s does not fit", file, dir);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(p) : unlink(p)) == 0 ? 0 : -1;
}

int es_test_rmtree(const char *dir)
{
	if (access(dir, F_OK) != 0)
		return 0;
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

char *es_test_slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	long n = -1;

	if (fp && fseek(fp, 0, SEEK_END) == 0)
		n = ftell(fp);
	if (n >= 0 && fseek(fp, 0, SEEK_SET) == 0)
		buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (fp)
		fclose(fp);
	if (!buf) {
		fail_msg("cannot read %s", path);
		return NULL;
	}
	if (len)
		*len = (size_t)n;
	return buf;
}

void es_test_assert_file_bytes(const char *path, const char *want, size_t len)
{
	size_t n = 0;
	char *now = es_test_slurp(path, &n);
	int same = n == len && memcmp(now, want, len) == 0;

	free(now);
	if (!same)
		fail_msg("%s was modified (%zu bytes before, %zu now)", path, len, n);
}

cJSON *es_test_json(const char *text)
{
	cJSON *v = NULL;
	char err[256] = "";

	if (es_json_parse(text, strlen(text), ES_JSON_MAX_DEPTH, &v, err,
			  sizeof(err)) != ES_OK)
		fail_msg("test JSON does not parse: %s: %s", err, text);
	return v;
}

void es_test_assert_line(const char *text, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("missing line %s in:\n%s", line, text);
}
