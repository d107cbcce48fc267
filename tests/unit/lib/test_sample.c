/* Unit tests of lib/es_sample.c: an empty sample, its arrays and strings,
 * moving one, and the lookups over it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "es_sample.h"

static void test_empty(void **state)
{
	es_sample s;

	(void)state;
	memset(&s, 0x5a, sizeof(s));
	es_sample_init(&s);
	assert_false(es_sample_has(s.cpu_utilization));
	assert_false(es_sample_has(s.load1));
	assert_false(es_sample_has(s.load15));
	assert_false(es_sample_has(s.mem_total));
	assert_false(es_sample_has(s.mem_available));
	assert_false(es_sample_has(s.proc_count));
	assert_false(es_sample_has(s.proc_blocked));
	assert_true(es_sample_has(0));
	assert_int_equal(s.has_cpu + s.has_memory + s.has_filesystems + s.has_network, 0);
	assert_int_equal(s.nmem + s.nfs + s.nifaces, 0);
	assert_null(s.fs);
	assert_int_equal(s.pid_max, 0);
	for (int i = 0; i < ES_SAMPLE_COLLECTORS; i++) {
		assert_int_equal(s.collectors[i].enabled, 0);
		assert_null(s.collectors[i].error);
	}
	assert_null(es_sample_root_fs(&s));
	assert_int_equal(es_sample_ifaces_besides_lo(&s), 0);
	es_sample_clear(&s);
	es_sample_clear(NULL);
}

static void test_arrays(void **state)
{
	es_sample s, t;

	(void)state;
	es_sample_init(&s);
	es_sample_init(&t);
	assert_int_equal(es_sample_fs_alloc(&s, 3), ES_OK);
	assert_int_equal(s.nfs, 3);
	assert_null(s.fs[2].mountpoint);
	assert_false(es_sample_has(s.fs[2].avail_bytes));
	assert_false(es_sample_has(s.fs[0].files_free));
	assert_int_equal(es_sample_set_str(&s.fs[0].mountpoint, "/boot"), ES_OK);
	assert_int_equal(es_sample_set_str(&s.fs[1].mountpoint, "/"), ES_OK);
	assert_int_equal(es_sample_set_str(&s.fs[2].mountpoint, "/"), ES_OK);
	assert_ptr_equal(es_sample_root_fs(&s), &s.fs[1]);
	assert_int_equal(es_sample_set_str(&s.fs[1].mountpoint, NULL), ES_OK);
	assert_null(s.fs[1].mountpoint);
	assert_ptr_equal(es_sample_root_fs(&s), &s.fs[2]);

	assert_int_equal(es_sample_ifaces_alloc(&s, 3), ES_OK);
	assert_false(es_sample_has(s.ifaces[1].transmit_drop));
	assert_int_equal(es_sample_set_str(&s.ifaces[0].name, "lo"), ES_OK);
	assert_int_equal(es_sample_set_str(&s.ifaces[2].name, "eth0"), ES_OK);
	assert_int_equal(es_sample_ifaces_besides_lo(&s), 1); /* [1] has no name */

	assert_int_equal(es_sample_mem_alloc(&s, 2), ES_OK);
	assert_false(es_sample_has(s.mem[1].value));
	assert_int_equal(es_sample_set_str(&s.mem[0].name, "MemTotal"), ES_OK);
	assert_int_equal(es_sample_mem_alloc(&s, 0), ES_OK); /* replaces, frees */
	assert_int_equal(s.nmem, 0);
	assert_null(s.mem);
	assert_int_equal(es_sample_set_str(&s.collectors[2].error, "statvfs /: EIO"), ES_OK);

	es_sample_move(&t, &s);
	assert_int_equal(t.nfs, 3);
	assert_string_equal(t.collectors[2].error, "statvfs /: EIO");
	assert_int_equal(s.nfs, 0);
	assert_null(s.fs);
	assert_null(s.collectors[2].error);
	es_sample_move(&t, &s); /* frees what t held */
	assert_int_equal(t.nfs, 0);
	assert_null(t.ifaces);
	es_sample_clear(&s);
	es_sample_clear(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_arrays),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
