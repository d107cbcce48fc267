/*
 * Unit test of the blockio collector's sweep of requests that never
 * completed (agent/kcollect/kc_blockio.h), on real BPF maps of the same
 * shape as bpf/blockio.bpf.c's `start`. Needs the bpf() syscall (root):
 * exits 77 without it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <linux/types.h>
#include <bpf/bpf.h>

#include "blockio.h"
#include "kcollect/kc_blockio.h"

#define SEC_NS 1000000000ull

static int new_map(unsigned max)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "t_start", sizeof(__u64),
				sizeof(struct es_blkio_req), max, NULL);

	assert_true(fd >= 0);
	return fd;
}

static void put(int fd, __u64 key, __u64 ts)
{
	struct es_blkio_req v = { .ts_ns = ts, .dev = 8u << 20 };

	assert_int_equal(bpf_map_update_elem(fd, &key, &v, BPF_ANY), 0);
}

static unsigned count(int fd)
{
	__u64 key, next, *kp = NULL;
	unsigned n = 0;

	while (bpf_map_get_next_key(fd, kp, &next) == 0) {
		key = next;
		kp = &key;
		n++;
	}
	return n;
}

static void test_stale_removed_fresh_kept(void **state)
{
	const __u64 now = 1000 * SEC_NS;
	int fd = new_map(64);
	__u64 key;

	(void)state;
	for (key = 1; key <= 3; key++)
		put(fd, key, now - 5 * SEC_NS);      /* in flight for 5 s */
	for (key = 10; key < 15; key++)
		put(fd, key, now - 400 * SEC_NS);    /* never completed */
	put(fd, 99, now + SEC_NS); /* issued after `now` was read */
	assert_int_equal(es_kc_blockio_sweep(fd, now, ES_BLKIO_STALE_NS), 5);
	assert_int_equal(count(fd), 4);
	for (key = 1; key <= 3; key++) {
		struct es_blkio_req v;

		assert_int_equal(bpf_map_lookup_elem(fd, &key, &v), 0);
	}
	assert_int_equal(es_kc_blockio_sweep(fd, now, ES_BLKIO_STALE_NS), 0);
	close(fd);
}

static void test_bounded_per_call(void **state)
{
	const __u64 now = 1000 * SEC_NS;
	int fd = new_map(4096);

	(void)state;
	for (__u64 key = 1; key <= 1500; key++)
		put(fd, key, now - 100 * SEC_NS);
	assert_int_equal(es_kc_blockio_sweep(fd, now, ES_BLKIO_STALE_NS), 1024);
	assert_int_equal(es_kc_blockio_sweep(fd, now, ES_BLKIO_STALE_NS), 476);
	assert_int_equal(count(fd), 0);
	assert_int_equal(es_kc_blockio_sweep(-1, now, ES_BLKIO_STALE_NS), 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stale_removed_fresh_kept),
		cmocka_unit_test(test_bounded_per_call),
	};
	int fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "t_probe", 8, 8, 1, NULL);

	if (fd < 0) {
		printf("SKIPPED: no bpf() map creation here (%s): needs root or CAP_BPF\n",
		       strerror(errno));
		return 77;
	}
	close(fd);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
