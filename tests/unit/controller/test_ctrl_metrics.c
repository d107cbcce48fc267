/*
 * test_ctrl_metrics.c - controller/net/metrics.c: the families, the store size
 * from the database file and its WAL, and the write-to-desiredAck latency
 * bookkeeping of one connection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "net/metrics.h"
#include "testutil.h"

static char *render(es_ctrl_metrics *m, int connected)
{
	char *out = NULL;
	size_t len = 0;

	assert_int_equal(es_ctrl_metrics_render(m, connected, &out, &len), ES_OK);
	assert_non_null(out);
	return out;
}

static void write_file(const char *path, size_t n)
{
	FILE *f = fopen(path, "w");
	char *b = calloc(1, n + 1);

	assert_non_null(f);
	assert_non_null(b);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
	free(b);
}

static void test_families(void **state)
{
	char dir[] = "/tmp/es-ctrl-metrics-XXXXXX", db[256], wal[300];
	es_ctrl_metrics *m = NULL;
	char *out;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/controller.db", dir);
	snprintf(wal, sizeof(wal), "%s-wal", db);
	assert_int_equal(es_ctrl_metrics_new(db, "0.9.1", &m, NULL, 0), ES_OK);
	out = render(m, 0);
	es_test_assert_line(out, "edgesync_controller_build_info{version=\"0.9.1\"} 1");
	es_test_assert_line(out, "edgesync_controller_connected_agents 0");
	es_test_assert_line(out, "edgesync_controller_messages_received_total{type=\"hello\"} 0");
	es_test_assert_line(out, "edgesync_controller_messages_received_total{type=\"desiredAck\"} 0");
	es_test_assert_line(out, "edgesync_controller_reports_duplicate_total 0");
	es_test_assert_line(out, "edgesync_controller_desired_ack_latency_seconds_count 0");
	assert_null(strstr(out, "edgesync_controller_store_size_bytes")); /* no file yet */
	free(out);

	write_file(db, 4096);
	write_file(wal, 1000);
	es_ctrl_metrics_message(m, "report");
	es_ctrl_metrics_message(m, "report");
	es_ctrl_metrics_duplicate(m);
	out = render(m, 3);
	es_test_assert_line(out, "edgesync_controller_connected_agents 3");
	es_test_assert_line(out, "edgesync_controller_messages_received_total{type=\"report\"} 2");
	es_test_assert_line(out, "edgesync_controller_reports_duplicate_total 1");
	es_test_assert_line(out, "edgesync_controller_store_size_bytes 5096");
	free(out);
	unlink(wal);
	unlink(db);
	rmdir(dir);
	es_ctrl_metrics_free(m);
}

static void test_ack_latency(void **state)
{
	es_ctrl_metrics *m = NULL;
	es_ctrl_pending p;
	char *out;

	(void)state;
	memset(&p, 0, sizeof(p));
	assert_int_equal(es_ctrl_metrics_new(NULL, "v", &m, NULL, 0), ES_OK);
	es_ctrl_metrics_pushed(&p, 10, 1000000);
	es_ctrl_metrics_pushed(&p, 11, 1500000);
	es_ctrl_metrics_pushed(&p, 13, 2000000);
	/* An ack of 11 covers 10 (3 s) and 11 (2.5 s), not 13. */
	es_ctrl_metrics_acked(m, &p, 11, 4000000);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.rv[0], 13);
	/* A stale ack observes nothing. */
	es_ctrl_metrics_acked(m, &p, 12, 4000000);
	assert_int_equal(p.n, 1);
	es_ctrl_metrics_acked(m, &p, 20, 2250000); /* 13 after 0.25 s */
	assert_int_equal(p.n, 0);
	/* none pending: nothing held */
	assert_null(p.rv);
	assert_int_equal(p.cap, 0);
	out = render(m, 1);
	es_test_assert_line(out, "edgesync_controller_desired_ack_latency_seconds_bucket{le=\"0.1\"} 0");
	es_test_assert_line(out, "edgesync_controller_desired_ack_latency_seconds_bucket{le=\"0.25\"} 1");
	es_test_assert_line(out, "edgesync_controller_desired_ack_latency_seconds_bucket{le=\"2.5\"} 2");
	es_test_assert_line(out, "edgesync_controller_desired_ack_latency_seconds_bucket{le=\"5\"} 3");
	es_test_assert_line(out, "edgesync_controller_desired_ack_latency_seconds_count 3");
	es_test_assert_line(out, "edgesync_controller_desired_ack_latency_seconds_sum 5.75");
	assert_null(strstr(out, "edgesync_controller_store_size_bytes"));
	free(out);

	/* Bounded: the oldest pushes are forgotten. */
	for (int i = 0; i < ES_CTRL_METRICS_PENDING_MAX + 5; i++)
		es_ctrl_metrics_pushed(&p, 100 + i, 0);
	assert_int_equal(p.n, ES_CTRL_METRICS_PENDING_MAX);
	assert_int_equal(p.cap, ES_CTRL_METRICS_PENDING_MAX);
	assert_int_equal(p.rv[0], 105);
	assert_int_equal(p.rv[ES_CTRL_METRICS_PENDING_MAX - 1], 100 + ES_CTRL_METRICS_PENDING_MAX + 4);
	es_ctrl_pending_free(&p);
	assert_null(p.rv);
	/* the times move with the versions when the entries grow (4, then 8) */
	for (int i = 1; i <= 5; i++)
		es_ctrl_metrics_pushed(&p, i, 10 * i);
	assert_int_equal(p.cap, 8);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(p.rv[i], i + 1);
		assert_int_equal(p.at_us[i], 10 * (i + 1));
	}
	es_ctrl_pending_free(&p);
	assert_null(p.rv);
	assert_int_equal(p.n, 0);
	es_ctrl_pending_free(NULL);
	es_ctrl_metrics_free(m);
}

/* The etcd families: absent until etcd is used, then a count per op and
 * result, a duration per op (none for a broken watch), and up following
 * the latest outcome. */
static void test_etcd(void **state)
{
	es_ctrl_metrics *m = NULL;
	char *out;

	(void)state;
	assert_int_equal(es_ctrl_metrics_new(NULL, "v", &m, NULL, 0), ES_OK);
	out = render(m, 0);
	assert_null(strstr(out, "edgesync_controller_etcd_"));
	free(out);

	es_ctrl_metrics_etcd(m, "txn", 1, 1, 0.002);
	es_ctrl_metrics_etcd(m, "txn", 1, 1, 0.02);
	es_ctrl_metrics_etcd(m, "lease", 0, 1, 0.001); /* lease not found: etcd answered */
	out = render(m, 0);
	es_test_assert_line(out, "edgesync_controller_etcd_requests_total{op=\"txn\",result=\"ok\"} 2");
	es_test_assert_line(out, "edgesync_controller_etcd_requests_total{op=\"lease\",result=\"error\"} 1");
	es_test_assert_line(out, "edgesync_controller_etcd_request_duration_seconds_bucket{op=\"txn\",le=\"0.0025\"} 1");
	es_test_assert_line(out, "edgesync_controller_etcd_request_duration_seconds_bucket{op=\"txn\",le=\"0.025\"} 2");
	es_test_assert_line(out, "edgesync_controller_etcd_request_duration_seconds_count{op=\"txn\"} 2");
	es_test_assert_line(out, "edgesync_controller_etcd_request_duration_seconds_sum{op=\"txn\"} 0.022");
	es_test_assert_line(out, "edgesync_controller_etcd_up 1");
	assert_null(strstr(out, "op=\"txn\",result=\"error\""));
	free(out);

	/* A watch that broke: counted, no duration, and etcd is down. */
	es_ctrl_metrics_etcd(m, "watch", 0, 0, -1);
	out = render(m, 0);
	es_test_assert_line(out, "edgesync_controller_etcd_requests_total{op=\"watch\",result=\"error\"} 1");
	assert_null(strstr(out, "edgesync_controller_etcd_request_duration_seconds_count{op=\"watch\"}"));
	es_test_assert_line(out, "edgesync_controller_etcd_up 0");
	free(out);
	es_ctrl_metrics_etcd(m, "range", 1, 1, 0.0001);
	out = render(m, 0);
	es_test_assert_line(out, "edgesync_controller_etcd_up 1");
	free(out);
	es_ctrl_metrics_etcd(NULL, "range", 1, 1, 0.1); /* no registry: no-op */
	es_ctrl_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_ack_latency),
		cmocka_unit_test(test_etcd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
