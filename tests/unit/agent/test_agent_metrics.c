/*
 * test_agent_metrics.c - agent/endpoint/metrics*.c: node_exporter's names, units and
 * labels from a Node object, per-CPU times and boot time from a fixture
 * /proc/stat, families that follow the collectors in force, and the
 * edgesync_agent_* figures and sync hooks.
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

#include "es_json.h"
#include "endpoint/metrics.h"
#include "testutil.h"

#define PROC ES_FIXTURES "/procfs/basic/proc"

static const char node_json[] =
	"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"status\":{"
	"\"usage\":{"
	" \"cpu\":{\"secondsTotal\":{\"user\":1},\"utilization\":0.5},"
	" \"load\":{\"load1\":0.5,\"load5\":1.25,\"load15\":2},"
	" \"memory\":{\"MemTotal\":8241741824,\"MemAvailable\":5242880000,"
	"  \"Active(anon)\":1048576,\"HugePages_Total\":4,\"Hugepagesize\":2097152},"
	" \"filesystems\":[{\"device\":\"/dev/sda1\",\"mountpoint\":\"/\",\"fstype\":\"ext4\","
	"  \"sizeBytes\":1000,\"availBytes\":400,\"freeBytes\":500,\"files\":64,\"filesFree\":32},"
	"  {\"device\":\"/dev/odd\\\"name\",\"mountpoint\":\"/mnt/a b\",\"fstype\":\"xfs\","
	"  \"sizeBytes\":1,\"availBytes\":1,\"freeBytes\":1,\"files\":1,\"filesFree\":1}],"
	" \"network\":[{\"interface\":\"eth0\",\"receiveBytes\":123456789012,"
	"  \"receivePackets\":9,\"receiveErrors\":3,\"receiveDrop\":7,\"transmitBytes\":98765432100,"
	"  \"transmitPackets\":8,\"transmitErrors\":2,\"transmitDrop\":5}],"
	" \"processes\":{\"count\":120,\"threads\":300,\"running\":3,\"blocked\":1}},"
	"\"collectors\":[{\"name\":\"cpu\",\"backend\":\"procfs\",\"enabled\":true,\"healthy\":true,"
	"  \"eventsLost\":0},"
	" {\"name\":\"tcp\",\"backend\":\"ebpf\",\"enabled\":true,\"healthy\":false,\"eventsLost\":17},"
	" {\"name\":\"network\",\"backend\":\"procfs\",\"enabled\":false,\"healthy\":true,"
	"  \"eventsLost\":0}]}}";

/* Renders in, the node_* families from the sample of in->node's status
 * (es_test_sample) as the agent's round would have made it. */
static char *render(es_agent_metrics *m, const es_agent_metrics_input *in)
{
	es_agent_metrics_input with = *in;
	char *out = NULL;
	size_t len = 0;
	es_sample s;

	es_sample_init(&s);
	if (in->node && !in->sample) {
		es_test_sample(cJSON_GetObjectItemCaseSensitive(in->node, "status"), 0, &s);
		with.sample = &s;
	}
	assert_int_equal(es_agent_metrics_render(m, &with, &out, &len), ES_OK);
	es_sample_clear(&s);
	assert_non_null(out);
	return out;
}

static void test_node_families(void **state)
{
	es_agent_metrics *m = NULL;
	cJSON *node = es_test_json(node_json);
	es_agent_metrics_input in = { node, 2, 5, "ready", 1, NULL };
	char *out, line[128];
	long hz = sysconf(_SC_CLK_TCK);

	(void)state;
	assert_int_equal(es_agent_metrics_new(PROC, "1.2.3", &m, NULL, 0), ES_OK);
	out = render(m, &in);
	es_test_assert_line(out, "# TYPE node_memory_MemTotal_bytes gauge");
	es_test_assert_line(out, "# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.");
	es_test_assert_line(out, "node_memory_MemTotal_bytes 8241741824");
	es_test_assert_line(out, "node_memory_MemAvailable_bytes 5242880000");
	es_test_assert_line(out, "node_memory_Active_anon_bytes 1048576");
	es_test_assert_line(out, "node_memory_HugePages_Total 4");
	es_test_assert_line(out, "node_memory_Hugepagesize_bytes 2097152");
	es_test_assert_line(out, "node_load1 0.5");
	es_test_assert_line(out, "node_load5 1.25");
	es_test_assert_line(out, "node_load15 2");
	es_test_assert_line(out, "node_filesystem_avail_bytes{device=\"/dev/sda1\",fstype=\"ext4\",mountpoint=\"/\"} 400");
	es_test_assert_line(out, "node_filesystem_size_bytes{device=\"/dev/sda1\",fstype=\"ext4\",mountpoint=\"/\"} 1000");
	es_test_assert_line(out, "node_filesystem_free_bytes{device=\"/dev/sda1\",fstype=\"ext4\",mountpoint=\"/\"} 500");
	es_test_assert_line(out, "node_filesystem_files_free{device=\"/dev/sda1\",fstype=\"ext4\",mountpoint=\"/\"} 32");
	es_test_assert_line(out, "node_filesystem_size_bytes{device=\"/dev/odd\\\"name\",fstype=\"xfs\",mountpoint=\"/mnt/a b\"} 1");
	es_test_assert_line(out, "# TYPE node_network_receive_bytes_total counter");
	es_test_assert_line(out, "node_network_receive_bytes_total{device=\"eth0\"} 123456789012");
	es_test_assert_line(out, "node_network_receive_errs_total{device=\"eth0\"} 3");
	es_test_assert_line(out, "node_network_receive_drop_total{device=\"eth0\"} 7");
	es_test_assert_line(out, "node_network_transmit_bytes_total{device=\"eth0\"} 98765432100");
	es_test_assert_line(out, "node_network_transmit_drop_total{device=\"eth0\"} 5");
	es_test_assert_line(out, "node_procs_running 3");
	es_test_assert_line(out, "node_procs_blocked 1");
	es_test_assert_line(out, "node_processes_pids 120");
	es_test_assert_line(out, "node_processes_threads 300");
	/* Fixture /proc/stat: cpu0..cpu3, cpu0 user 30850 ticks; btime. */
	es_test_assert_line(out, "# TYPE node_cpu_seconds_total counter");
	snprintf(line, sizeof(line), "node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} %g",
		 30850.0 / (double)hz);
	es_test_assert_line(out, line);
	snprintf(line, sizeof(line), "node_cpu_seconds_total{cpu=\"3\",mode=\"steal\"} %g",
		 200.0 / (double)hz);
	es_test_assert_line(out, line);
	assert_null(strstr(out, "cpu=\"4\""));
	es_test_assert_line(out, "node_boot_time_seconds 1764475632");
	/* The agent's own. */
	es_test_assert_line(out, "edgesync_agent_build_info{version=\"1.2.3\"} 1");
	es_test_assert_line(out, "edgesync_agent_reports_queued 2");
	es_test_assert_line(out, "edgesync_agent_reports_dropped_total 5");
	es_test_assert_line(out, "edgesync_agent_reconnects_total 1");
	es_test_assert_line(out, "edgesync_agent_connected 1");
	es_test_assert_line(out, "edgesync_agent_sync_state{state=\"ready\"} 1");
	es_test_assert_line(out, "edgesync_agent_sync_state{state=\"idle\"} 0");
	es_test_assert_line(out, "edgesync_agent_collector_info{collector=\"tcp\",backend=\"ebpf\"} 1");
	es_test_assert_line(out, "edgesync_agent_collector_info{collector=\"cpu\",backend=\"procfs\"} 1");
	es_test_assert_line(out, "edgesync_agent_bpf_events_lost_total{collector=\"tcp\"} 17");
	es_test_assert_line(out, "edgesync_agent_collector_healthy{collector=\"tcp\"} 0");
	es_test_assert_line(out, "edgesync_agent_collector_healthy{collector=\"cpu\"} 1");
	assert_null(strstr(out, "edgesync_agent_collector_healthy{collector=\"network\"}"));
	es_test_assert_line(out, "edgesync_agent_last_sync_timestamp_seconds 0");
	es_test_assert_line(out, "edgesync_agent_policy_apply_duration_seconds_count 0");
	free(out);
	cJSON_Delete(node);
	es_agent_metrics_free(m);
}

/* A collector that stops reporting (CollectorConfig) stops exporting. */
static void test_families_follow_the_node(void **state)
{
	es_agent_metrics *m = NULL;
	cJSON *node = es_test_json(node_json), *usage;
	es_agent_metrics_input in = { node, 0, 0, NULL, 0, NULL };
	char *out;

	(void)state;
	assert_int_equal(es_agent_metrics_new(PROC, "v", &m, NULL, 0), ES_OK);
	out = render(m, &in);
	es_test_assert_line(out, "node_memory_MemTotal_bytes 8241741824");
	free(out);
	usage = cJSON_GetObjectItem(cJSON_GetObjectItem(node, "status"), "usage");
	cJSON_DeleteItemFromObject(usage, "memory");
	cJSON_DeleteItemFromObject(usage, "cpu");
	cJSON_DeleteItemFromObject(usage, "network");
	out = render(m, &in);
	assert_null(strstr(out, "node_memory_"));
	assert_null(strstr(out, "node_cpu_seconds_total"));
	assert_null(strstr(out, "node_network_"));
	es_test_assert_line(out, "node_load1 0.5");
	es_test_assert_line(out, "node_boot_time_seconds 1764475632");
	es_test_assert_line(out, "edgesync_agent_sync_state{state=\"disabled\"} 1");
	es_test_assert_line(out, "edgesync_agent_connected 0");
	free(out);
	/* Before the first round: no node_* but boot time. */
	in.node = NULL;
	out = render(m, &in);
	assert_null(strstr(out, "node_load1"));
	assert_null(strstr(out, "edgesync_agent_collector_info"));
	es_test_assert_line(out, "node_boot_time_seconds 1764475632");
	free(out);
	cJSON_Delete(node);
	es_agent_metrics_free(m);
}

static void test_sync_hooks(void **state)
{
	es_agent_metrics *m = NULL;
	es_agent_metrics_input in = { NULL, 0, 0, "ready", 0, NULL };
	char *out;

	(void)state;
	assert_int_equal(es_agent_metrics_new(PROC, "v", &m, NULL, 0), ES_OK);
	es_agent_metrics_report_sent(m, 1);
	es_agent_metrics_report_sent(m, 2);
	es_agent_metrics_report_sent(m, 3);
	es_agent_metrics_acked(m, 2);
	es_agent_metrics_synced(m, 1700000000);
	out = render(m, &in);
	es_test_assert_line(out, "edgesync_agent_reports_sent_total 3");
	es_test_assert_line(out, "edgesync_agent_reports_acknowledged_total 2");
	es_test_assert_line(out, "edgesync_agent_last_sync_timestamp_seconds 1700000000");
	free(out);
	/* Reconnect: 3 is sent again; one ack covers both transmissions. */
	es_agent_metrics_report_sent(m, 3);
	es_agent_metrics_report_sent(m, 4);
	es_agent_metrics_acked(m, 3);
	es_agent_metrics_acked(m, 3);
	out = render(m, &in);
	es_test_assert_line(out, "edgesync_agent_reports_sent_total 5");
	es_test_assert_line(out, "edgesync_agent_reports_acknowledged_total 4");
	free(out);
	es_agent_metrics_acked(m, 10);
	es_agent_metrics_apply_duration(m, 0.003);
	es_agent_metrics_apply_duration(m, 0.0002);
	out = render(m, &in);
	es_test_assert_line(out, "edgesync_agent_reports_acknowledged_total 5");
	es_test_assert_line(out, "edgesync_agent_policy_apply_duration_seconds_bucket{le=\"0.0005\"} 1");
	es_test_assert_line(out, "edgesync_agent_policy_apply_duration_seconds_bucket{le=\"0.0025\"} 1");
	es_test_assert_line(out, "edgesync_agent_policy_apply_duration_seconds_bucket{le=\"0.005\"} 2");
	es_test_assert_line(out, "edgesync_agent_policy_apply_duration_seconds_bucket{le=\"+Inf\"} 2");
	es_test_assert_line(out, "edgesync_agent_policy_apply_duration_seconds_count 2");
	free(out);
	/* NULL-safe hooks (no metrics wired in). */
	es_agent_metrics_report_sent(NULL, 1);
	es_agent_metrics_acked(NULL, 1);
	es_agent_metrics_synced(NULL, 1);
	es_agent_metrics_apply_duration(NULL, 1);
	es_agent_metrics_free(m);
}

/* Collectors add their own families to the same registry. */
static es_err cgroup_render(void *user)
{
	return es_metric_set(user, (const char *[]){ "/system.slice/x.service" }, 4096);
}

static void test_collector_registry_hook(void **state)
{
	es_agent_metrics *m = NULL;
	es_agent_metrics_input in = { NULL, 0, 0, "idle", 0, NULL };
	es_metric *c = NULL;
	char *out;

	(void)state;
	assert_int_equal(es_agent_metrics_new(PROC, "v", &m, NULL, 0), ES_OK);
	assert_int_equal(es_metrics_counter(es_agent_metrics_registry(m),
					    "container_network_receive_bytes_total",
					    "Cumulative count of bytes received",
					    (const char *[]){ "id" }, 1, &c, NULL, 0), ES_OK);
	assert_int_equal(es_metrics_on_render(es_agent_metrics_registry(m), cgroup_render, c),
			 ES_OK);
	out = render(m, &in);
	es_test_assert_line(out, "container_network_receive_bytes_total{id=\"/system.slice/x.service\"} 4096");
	free(out);
	es_agent_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_families),
		cmocka_unit_test(test_families_follow_the_node),
		cmocka_unit_test(test_sync_hooks),
		cmocka_unit_test(test_collector_registry_hook),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
