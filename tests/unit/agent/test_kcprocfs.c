/*
 * test_kcprocfs.c - the /proc parsers of the kernel collectors' procfs
 * fallbacks (agent/kcollect/kcprocfs.h): /proc/net/tcp{,6} rows and the diff of two
 * scans, /proc/vmstat oom_kill, /proc/diskstats; fixtures in
 * tests/fixtures/procfs/kc/ (addresses as a little-endian host prints
 * them). realloc is wrapped to reach the allocation-failure paths.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "kcollect/kcprocfs.h"

#define FIX ES_FIXTURES "/procfs/kc/"

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);

static int fail_realloc; /* 1: realloc returns NULL */

void *__wrap_realloc(void *p, size_t n)
{
	if (fail_realloc)
		return NULL;
	return __real_realloc(p, n);
}

static const char *addr(const es_kcprocfs_tcp_conn *c, int local, char *buf)
{
	return inet_ntop(c->family == 4 ? AF_INET : AF_INET6,
			 local ? c->saddr : c->daddr, buf, INET6_ADDRSTRLEN);
}

static void test_tcp4_rows(void **state)
{
	es_kcprocfs_tcp_set s = { 0 };
	char err[256], buf[INET6_ADDRSTRLEN];

	(void)state;
	assert_int_equal(es_kcprocfs_tcp_read(FIX "tcp_before", 4, &s, err, sizeof(err)), ES_OK);
	assert_int_equal(s.n, 6);
	assert_int_equal(s.v[0].state, ES_KCP_TCP_LISTEN);
	assert_int_equal(s.v[0].sport, 8080);
	assert_int_equal(s.v[0].dport, 0);
	assert_string_equal(addr(&s.v[0], 1, buf), "127.0.0.1");
	assert_string_equal(addr(&s.v[0], 0, buf), "0.0.0.0");
	assert_int_equal(s.v[1].state, ES_KCP_TCP_ESTABLISHED);
	assert_int_equal(s.v[1].sport, 50000);
	assert_int_equal(s.v[1].dport, 8080);
	assert_string_equal(addr(&s.v[5], 1, buf), "10.0.0.1");
	assert_string_equal(addr(&s.v[5], 0, buf), "8.8.8.8");
	assert_int_equal(s.v[5].dport, 53);
	es_kcprocfs_tcp_set_clear(&s);
	assert_null(s.v);
	es_kcprocfs_tcp_set_clear(NULL);
}

static void test_tcp6_rows(void **state)
{
	es_kcprocfs_tcp_set s = { 0 };
	char err[256], buf[INET6_ADDRSTRLEN];

	(void)state;
	assert_int_equal(es_kcprocfs_tcp_read(FIX "tcp6", 6, &s, err, sizeof(err)), ES_OK);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.v[0].family, 6);
	assert_string_equal(addr(&s.v[0], 1, buf), "::");
	assert_int_equal(s.v[0].state, ES_KCP_TCP_LISTEN);
	assert_string_equal(addr(&s.v[1], 1, buf), "::1");
	assert_string_equal(addr(&s.v[1], 0, buf), "::1");
	assert_int_equal(s.v[1].sport, 0xE000);
	assert_int_equal(s.v[1].dport, 0x1F91);
	/* An IPv6 file read as IPv4 is refused, not misread. */
	es_kcprocfs_tcp_set_clear(&s);
	assert_int_equal(es_kcprocfs_tcp_read(FIX "tcp6", 4, &s, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_non_null(strstr(err, "tcp6:2"));
	es_kcprocfs_tcp_set_clear(&s);
}

static void test_tcp_diff(void **state)
{
	es_kcprocfs_tcp_set before = { 0 }, after = { 0 };
	es_kcprocfs_tcp_delta d;
	char err[256];

	(void)state;
	assert_int_equal(es_kcprocfs_tcp_read(FIX "tcp_before", 4, &before, err, sizeof(err)), ES_OK);
	assert_int_equal(es_kcprocfs_tcp_read(FIX "tcp_after", 4, &after, err, sizeof(err)), ES_OK);
	es_kcprocfs_tcp_diff(&before, &after, &d);
	/* C352->8080 and 10.0.0.1:D001->93.184.216.34:443 are new and not on a
	 * listening port; 8080<-C352 is; the C351 pair is gone or in TIME_WAIT;
	 * D000 moved to CLOSE_WAIT and is still live. */
	assert_int_equal(d.opened, 2);
	assert_int_equal(d.accepted, 1);
	assert_int_equal(d.closed, 2);
	assert_int_equal(d.states[ES_KCP_TCP_LISTEN], 1);
	assert_int_equal(d.states[ES_KCP_TCP_ESTABLISHED], 4);
	assert_int_equal(d.states[ES_KCP_TCP_TIME_WAIT], 1);
	assert_int_equal(d.states[8], 1); /* CLOSE_WAIT */
	assert_int_equal(d.states[2], 1); /* SYN_SENT */
	/* The same scan twice: nothing opened or closed. */
	es_kcprocfs_tcp_diff(&after, &after, &d);
	assert_int_equal(d.opened + d.accepted + d.closed, 0);
	/* From nothing: every live connection is new. */
	es_kcprocfs_tcp_set_clear(&before);
	es_kcprocfs_tcp_diff(&before, &after, &d);
	assert_int_equal(d.opened, 4);  /* C350, C352, D000 (CLOSE_WAIT), D001 */
	assert_int_equal(d.accepted, 2); /* 8080<-C350, 8080<-C352 */
	assert_int_equal(d.closed, 0);
	es_kcprocfs_tcp_set_clear(&after);
	assert_string_equal(es_kcprocfs_tcp_state_str(1), "ESTABLISHED");
	assert_string_equal(es_kcprocfs_tcp_state_str(10), "LISTEN");
	assert_string_equal(es_kcprocfs_tcp_state_str(99), "UNKNOWN");
}

static void test_tcp_hostile(void **state)
{
	es_kcprocfs_tcp_set s = { 0 };
	char err[256];

	(void)state;
	assert_int_equal(es_kcprocfs_tcp_read(FIX "tcp_truncated", 4, &s, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_non_null(strstr(err, "tcp_truncated:3"));
	assert_int_equal(s.n, 1); /* the rows before the bad one are kept */
	es_kcprocfs_tcp_set_clear(&s);
	assert_int_equal(es_kcprocfs_tcp_read(FIX "tcp_badstate", 4, &s, err, sizeof(err)),
			 ES_ERR_PARSE);
	es_kcprocfs_tcp_set_clear(&s);
	assert_int_equal(es_kcprocfs_tcp_read(FIX "vmstat", 4, &s, err, sizeof(err)),
			 ES_ERR_PARSE);
	es_kcprocfs_tcp_set_clear(&s);
	assert_int_equal(es_kcprocfs_tcp_read(FIX "missing", 4, &s, err, sizeof(err)),
			 ES_ERR_IO);
	assert_non_null(strstr(err, "missing"));
	assert_int_equal(es_kcprocfs_tcp_read(FIX "tcp_before", 5, &s, err, sizeof(err)),
			 ES_ERR_INVAL);
	fail_realloc = 1;
	assert_int_equal(es_kcprocfs_tcp_read(FIX "tcp_before", 4, &s, err, sizeof(err)),
			 ES_ERR_NOMEM);
	fail_realloc = 0;
	assert_int_equal(s.n, 0);
	es_kcprocfs_tcp_set_clear(&s);
}

static void test_vmstat(void **state)
{
	uint64_t v = 0;
	char err[256];

	(void)state;
	assert_int_equal(es_kcprocfs_vmstat_oom_kill(FIX "vmstat", &v, err, sizeof(err)), ES_OK);
	assert_int_equal(v, 7);
	assert_int_equal(es_kcprocfs_vmstat_oom_kill(FIX "vmstat_nooom", &v, err, sizeof(err)),
			 ES_ERR_NOTFOUND);
	assert_non_null(strstr(err, "oom_kill"));
	assert_int_equal(es_kcprocfs_vmstat_oom_kill(FIX "vmstat_bad", &v, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_int_equal(es_kcprocfs_vmstat_oom_kill(FIX "missing", &v, err, sizeof(err)),
			 ES_ERR_IO);
}

static void test_diskstats(void **state)
{
	es_kcprocfs_disk *d = NULL;
	char err[256];
	size_t n = 0;

	(void)state;
	assert_int_equal(es_kcprocfs_diskstats_read(FIX "diskstats", &d, &n, err, sizeof(err)), ES_OK);
	assert_int_equal(n, 4);
	assert_string_equal(d[1].name, "vda");
	assert_int_equal(d[1].major, 253);
	assert_int_equal(d[1].minor, 0);
	assert_int_equal(d[1].reads, 41520);
	assert_int_equal(d[1].read_ms, 15422);
	assert_int_equal(d[1].writes, 98233);
	assert_int_equal(d[1].write_ms, 88121);
	assert_string_equal(d[3].name, "dm-0"); /* a '-' in the name is fine */
	assert_int_equal(d[3].writes, 10);
	free(d);

	assert_int_equal(es_kcprocfs_diskstats_read(FIX "diskstats_bad", &d, &n, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_null(d);
	assert_non_null(strstr(err, "diskstats_bad:2"));
	assert_int_equal(es_kcprocfs_diskstats_read(FIX "tcp_before", &d, &n, err, sizeof(err)),
			 ES_ERR_PARSE);
	assert_int_equal(es_kcprocfs_diskstats_read(FIX "missing", &d, &n, err, sizeof(err)),
			 ES_ERR_IO);
	fail_realloc = 1;
	assert_int_equal(es_kcprocfs_diskstats_read(FIX "diskstats", &d, &n, err, sizeof(err)),
			 ES_ERR_NOMEM);
	fail_realloc = 0;
	assert_null(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp4_rows),
		cmocka_unit_test(test_tcp6_rows),
		cmocka_unit_test(test_tcp_diff),
		cmocka_unit_test(test_tcp_hostile),
		cmocka_unit_test(test_vmstat),
		cmocka_unit_test(test_diskstats),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
