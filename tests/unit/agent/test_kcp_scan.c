/*
 * test_kcp_scan.c - the /proc scan of the process collector's fallback
 * (agent/kcollect/kc_process_scan.c): two scans over fixture proc trees
 * (tests/fixtures/procfs/kthread/a, then b) give the forks, execs and exits
 * between them, and kernel threads (PF_KTHREAD in /proc/PID/stat flags:
 * kthreadd and its kworkers) count for nothing: a kworker renaming itself
 * is not an exec, a new kworker is not a fork.
 *
 * a: systemd (1), kthreadd (2), kworker/0:1-events (40), sh (100).
 * b: the same with 40 renamed kworker/0:1-mm_percpu_wq, a new kworker 41,
 *    100 now ls (an exec), a new child 101 "cat (x)" of 100 (fork + exec).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcollect/kc_process_int.h"

#define FIX ES_FIXTURES "/procfs/kthread/"

static void test_kernel_threads_skipped(void **state)
{
	es_kcollector kc;
	kc_process *p = calloc(1, sizeof(*p));
	size_t i;

	(void)state;
	assert_non_null(p);
	memset(&kc, 0, sizeof(kc));
	kc.priv = p;
	p->hz = 100;
	snprintf(p->proc_root, sizeof(p->proc_root), "%s", FIX "a");
	kcp__scan(&kc);
	assert_int_equal(p->nprocs, 2); /* systemd and sh */
	assert_int_equal(p->execs + p->forks + p->exits, 0);

	snprintf(p->proc_root, sizeof(p->proc_root), "%s", FIX "b");
	kcp__scan(&kc);
	assert_int_equal(p->nprocs, 3);
	assert_int_equal(p->execs, 2);
	assert_int_equal(p->forks, 1);
	assert_int_equal(p->exits, 0);
	assert_int_equal(kc.events, 3);
	assert_int_equal(p->nexec, 2);
	for (i = 0; i < p->nexec; i++) {
		assert_true(strncmp(p->recent_exec[i].comm, "kworker/", 8) != 0);
		assert_true(p->recent_exec[i].pid == 100 || p->recent_exec[i].pid == 101);
	}
	assert_string_equal(p->recent_exec[0].comm, "ls");
	assert_string_equal(p->recent_exec[1].comm, "cat (x)");
	assert_int_equal(p->recent_exec[1].ppid, 100);

	/* Back to a: 101 exited, 100 is sh again (an exec); the kworker 41
	 * that went away is no exit. */
	snprintf(p->proc_root, sizeof(p->proc_root), "%s", FIX "a");
	kcp__scan(&kc);
	assert_int_equal(p->exits, 1);
	assert_int_equal(p->execs, 3);
	assert_int_equal(p->forks, 1);
	kcp__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_threads_skipped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
