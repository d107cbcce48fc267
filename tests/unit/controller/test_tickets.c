/*
 * test_tickets.c - the TLS session ticket key file (controller/net/
 * tickets.h): created with a random key and mode 0600 when missing, read
 * back unchanged, refused naming the file when it is not 72 hexadecimal
 * characters or readable by group or others; the resumed-socket marks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "net/tickets.h"
#include "testutil.h"

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_created_then_reused(void **state)
{
	char dir[256], path[512], err[512] = "", *a, *b;
	struct stat st;
	size_t len = 0;

	(void)state;
	es_test_tmpdir(dir, sizeof(dir), "test-tickets", path, sizeof(path), "t.key");
	assert_int_equal(es_tickets_init(path, 3600, err, sizeof(err)), ES_OK);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	a = es_test_slurp(path, &len);
	assert_int_equal(len, 73);
	assert_int_equal(strspn(a, "0123456789abcdef"), 72);
	assert_int_equal(a[72], '\n');
	/* a second start reads the same key, it does not make a new one */
	assert_int_equal(es_tickets_init(path, 3600, err, sizeof(err)), ES_OK);
	b = es_test_slurp(path, &len);
	assert_string_equal(a, b);
	es_tickets_tick();
	es_tickets_shutdown();
	free(a);
	free(b);
	es_test_rmtree(dir);
}

static void test_bad_files(void **state)
{
	char dir[256], path[512], err[512] = "";

	(void)state;
	es_test_tmpdir(dir, sizeof(dir), "test-tickets", path, sizeof(path), "t.key");
	write_file(path, "00112233", 0600);
	assert_int_equal(es_tickets_init(path, 3600, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "72 hexadecimal"));
	write_file(path, "zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0011223344\n",
		   0600);
	assert_int_equal(es_tickets_init(path, 3600, err, sizeof(err)), ES_ERR_INVAL);
	write_file(path, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233\n",
		   0644);
	assert_int_equal(es_tickets_init(path, 3600, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "chmod 600"));
	assert_non_null(strstr(err, "others at"));
	assert_int_equal(chmod(path, 0660), 0);
	assert_int_equal(es_tickets_init(path, 3600, err, sizeof(err)), ES_ERR_INVAL);
	assert_non_null(strstr(err, "the group write"));
	/* Read-only for owner and group, as a Secret volume mounts it,
	 * through a symbolic link as it does. */
	assert_int_equal(chmod(path, 0440), 0);
	{
		char link[600];

		snprintf(link, sizeof(link), "%s.link", path);
		assert_int_equal(symlink(path, link), 0);
		assert_int_equal(es_tickets_init(link, 3600, err, sizeof(err)), ES_OK);
		es_tickets_shutdown();
		unlink(link);
	}
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(es_tickets_init(path, 0, err, sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_tickets_init(path, ES_TICKETS_LIFETIME_MAX + 1, err,
					 sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_tickets_init(path, 3600, err, sizeof(err)), ES_OK);
	es_tickets_shutdown();
	strcat(dir, "/missing-dir");
	snprintf(path, sizeof(path), "%s/t.key", dir);
	assert_int_equal(es_tickets_init(path, 3600, err, sizeof(err)), ES_ERR_IO);
	assert_non_null(strstr(err, path));
	*strrchr(dir, '/') = '\0';
	es_test_rmtree(dir);
}

static void test_resumed_marks(void **state)
{
	(void)state;
	/* nothing marked: no socket is resumed, forgetting is harmless */
	assert_int_equal(es_tickets_take_resumed(5), 0);
	assert_int_equal(es_tickets_take_resumed(-1), 0);
	es_tickets_forget(5);
	es_tickets_forget(-1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_created_then_reused),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_resumed_marks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
