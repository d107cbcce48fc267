/*
 * test_heap.c - es_heap_trim (agent/runtime/heap.h) gives freed heap pages back:
 * memory freed in the middle of the heap, which free() keeps resident,
 * leaves the resident set once it is called. glibc only; under
 * AddressSanitizer, whose allocator is not glibc's, the test does not run
 * and exits 77 (SKIP_RETURN_CODE: CTest shows it as Not Run).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/heap.h"

#define BLOCKS 512
#define BLOCK (16 * 1024) /* below glibc's mmap threshold: from the heap */

/* Resident set size in KiB (/proc/self/statm, pages). */
static long rss_kib(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld", &size, &res), 2);
	fclose(f);
	return res * 4;
}

static void test_trim_returns_freed_middle_pages(void **state)
{
	static void *big[BLOCKS], *pin[BLOCKS];
	long before, after;
	size_t i;

	(void)state;
	/* 8 MiB of touched blocks, each followed by a small live one, so
	 * that freeing the blocks leaves holes free() cannot give back. */
	for (i = 0; i < BLOCKS; i++) {
		big[i] = malloc(BLOCK);
		pin[i] = malloc(16);
		assert_non_null(big[i]);
		assert_non_null(pin[i]);
		memset(big[i], 0x5a, BLOCK);
	}
	for (i = 0; i < BLOCKS; i++)
		free(big[i]);
	before = rss_kib();
	es_heap_trim();
	after = rss_kib();
	for (i = 0; i < BLOCKS; i++)
		free(pin[i]);
	/* At least half of the 8 MiB leaves (about 6 MiB here): pages shared
	 * with the live 16-byte blocks stay. */
	if (before - after < 4 * 1024)
		fail_msg("resident %ld KiB -> %ld KiB after es_heap_trim", before, after);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trim_returns_freed_middle_pages),
	};

#if defined(__SANITIZE_ADDRESS__)
	(void)tests;
	printf("skipped: AddressSanitizer's allocator is not glibc's\n");
	return 77;
#else
	return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
