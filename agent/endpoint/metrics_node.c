/*
 * metrics_node.c - the node_* families of the agent's /metrics (metrics.h):
 * node_exporter's names, units and labels for the quantities of the latest
 * round's sample (es_sample.h: its meminfo, loadavg, filesystem, netdev and
 * stat collectors), and per-CPU times read from <proc>/stat at scrape time.
 */
#include <stdio.h>
#include <string.h>

#include "collect/collect_usage.h"
#include "endpoint/metrics_int.h"

typedef struct spec {
	es_metric **slot;
	es_metric_type type;
	const char *name, *help;
	const char *const *labels;
	size_t nlabels;
} spec;

es_err metrics__node_register(es_agent_metrics *m, char *err, size_t errsz)
{
	static const char *const cpu_l[] = { "cpu", "mode" };
	static const char *const fs_l[] = { "device", "fstype", "mountpoint" };
	static const char *const net_l[] = { "device" };
	node_families *n = &m->node;
	const spec specs[] = {
		{ &n->cpu_seconds, ES_METRIC_COUNTER, "node_cpu_seconds_total",
		  "Seconds the CPUs spent in each mode.", cpu_l, 2 },
		{ &n->boot_time, ES_METRIC_GAUGE, "node_boot_time_seconds",
		  "Node boot time, in unixtime.", NULL, 0 },
		{ &n->load[0], ES_METRIC_GAUGE, "node_load1", "1m load average.", NULL, 0 },
		{ &n->load[1], ES_METRIC_GAUGE, "node_load5", "5m load average.", NULL, 0 },
		{ &n->load[2], ES_METRIC_GAUGE, "node_load15", "15m load average.", NULL, 0 },
		{ &n->fs_size, ES_METRIC_GAUGE, "node_filesystem_size_bytes",
		  "Filesystem size in bytes.", fs_l, 3 },
		{ &n->fs_avail, ES_METRIC_GAUGE, "node_filesystem_avail_bytes",
		  "Filesystem space available to non-root users in bytes.", fs_l, 3 },
		{ &n->fs_free, ES_METRIC_GAUGE, "node_filesystem_free_bytes",
		  "Filesystem free space in bytes.", fs_l, 3 },
		{ &n->fs_files, ES_METRIC_GAUGE, "node_filesystem_files",
		  "Filesystem total file nodes.", fs_l, 3 },
		{ &n->fs_files_free, ES_METRIC_GAUGE, "node_filesystem_files_free",
		  "Filesystem total free file nodes.", fs_l, 3 },
		{ &n->net[0], ES_METRIC_COUNTER, "node_network_receive_bytes_total",
		  "Network device statistic receive_bytes.", net_l, 1 },
		{ &n->net[1], ES_METRIC_COUNTER, "node_network_receive_packets_total",
		  "Network device statistic receive_packets.", net_l, 1 },
		{ &n->net[2], ES_METRIC_COUNTER, "node_network_receive_errs_total",
		  "Network device statistic receive_errs.", net_l, 1 },
		{ &n->net[3], ES_METRIC_COUNTER, "node_network_receive_drop_total",
		  "Network device statistic receive_drop.", net_l, 1 },
		{ &n->net[4], ES_METRIC_COUNTER, "node_network_transmit_bytes_total",
		  "Network device statistic transmit_bytes.", net_l, 1 },
		{ &n->net[5], ES_METRIC_COUNTER, "node_network_transmit_packets_total",
		  "Network device statistic transmit_packets.", net_l, 1 },
		{ &n->net[6], ES_METRIC_COUNTER, "node_network_transmit_errs_total",
		  "Network device statistic transmit_errs.", net_l, 1 },
		{ &n->net[7], ES_METRIC_COUNTER, "node_network_transmit_drop_total",
		  "Network device statistic transmit_drop.", net_l, 1 },
		{ &n->procs_running, ES_METRIC_GAUGE, "node_procs_running",
		  "Number of processes in runnable state.", NULL, 0 },
		{ &n->procs_blocked, ES_METRIC_GAUGE, "node_procs_blocked",
		  "Number of processes blocked waiting for I/O to complete.", NULL, 0 },
		{ &n->pids, ES_METRIC_GAUGE, "node_processes_pids",
		  "Number of PIDs", NULL, 0 },
		{ &n->threads, ES_METRIC_GAUGE, "node_processes_threads",
		  "Allocated threads in system", NULL, 0 },
	};
	es_err rc;

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		rc = es_metrics_add(m->reg, specs[i].type, specs[i].name,
				    specs[i].help, specs[i].labels, specs[i].nlabels,
				    NULL, 0, specs[i].slot, err, errsz);
		if (rc != ES_OK)
			return rc;
	}
	return ES_OK;
}

/* node_exporter's meminfo collector: "Active(anon)" becomes "Active_anon";
 * fields given in kB get "_bytes"; the HugePages_ counts have no unit. */
static void mem_metric_name(const char *field, char *out, size_t outsz)
{
	char key[64];
	size_t k = 0;

	for (const char *p = field; *p && k + 1 < sizeof(key); p++) {
		if (*p == '(')
			key[k++] = '_';
		else if (*p != ')')
			key[k++] = *p;
	}
	key[k] = '\0';
	snprintf(out, outsz, "node_memory_%s%s", key,
		 strncmp(field, "HugePages_", 10) ? "_bytes" : "");
}

/* The family of a meminfo field, registered on first sight; NULL when the
 * field cannot be a metric (bad name, too many fields). */
static es_metric *mem_family_of(es_agent_metrics *m, const char *field, es_err *rc)
{
	node_families *n = &m->node;
	char name[128], help[160];
	mem_family *f;

	*rc = ES_OK;
	for (size_t i = 0; i < n->nmem; i++)
		if (!strcmp(n->mem[i].field, field))
			return n->mem[i].m;
	if (n->nmem == METRICS_MEM_FIELDS_MAX || strlen(field) >= sizeof(f->field))
		return NULL;
	f = &n->mem[n->nmem];
	mem_metric_name(field, name, sizeof(name));
	snprintf(help, sizeof(help), "Memory information field %s.", name + 12);
	*rc = es_metrics_gauge(m->reg, name, help, NULL, 0, &f->m, NULL, 0);
	if (*rc == ES_ERR_NOMEM)
		return NULL;
	*rc = ES_OK;
	snprintf(f->field, sizeof(f->field), "%s", field);
	n->nmem++;
	return f->m;
}

/* Sets m (with label values) to v unless v was not collected or is
 * negative. */
static es_err set_if(es_metric *m, const char *const *values, double v)
{
	if (!es_sample_has(v) || v < 0)
		return ES_OK;
	return es_metric_set(m, values, v);
}

static es_err update_usage(es_agent_metrics *m, const es_sample *s)
{
	const double loads[3] = { s->load1, s->load5, s->load15 };
	node_families *n = &m->node;
	es_err rc = ES_OK;

	for (int i = 0; i < 3 && rc == ES_OK; i++)
		rc = set_if(n->load[i], NULL, loads[i]);
	for (size_t i = 0; i < s->nmem && rc == ES_OK; i++) {
		es_metric *f;

		if (!s->mem[i].name || !es_sample_has(s->mem[i].value))
			continue;
		f = mem_family_of(m, s->mem[i].name, &rc);
		if (f)
			rc = es_metric_set(f, NULL, s->mem[i].value);
	}
	for (size_t i = 0; i < s->nfs && rc == ES_OK; i++) {
		const es_sample_fs *fs = &s->fs[i];
		const char *l[3] = { fs->device, fs->fstype, fs->mountpoint };

		if (!l[0] || !l[1] || !l[2])
			continue;
		if ((rc = set_if(n->fs_size, l, fs->size_bytes)) != ES_OK ||
		    (rc = set_if(n->fs_avail, l, fs->avail_bytes)) != ES_OK ||
		    (rc = set_if(n->fs_free, l, fs->free_bytes)) != ES_OK ||
		    (rc = set_if(n->fs_files, l, fs->files)) != ES_OK)
			break;
		rc = set_if(n->fs_files_free, l, fs->files_free);
	}
	for (size_t i = 0; i < s->nifaces && rc == ES_OK; i++) {
		const es_sample_iface *f = &s->ifaces[i];
		/* In the order of node_families.net. */
		const double v[8] = {
			f->receive_bytes, f->receive_packets, f->receive_errors,
			f->receive_drop, f->transmit_bytes, f->transmit_packets,
			f->transmit_errors, f->transmit_drop,
		};
		const char *l[1] = { f->name };

		if (!l[0])
			continue;
		for (int j = 0; j < 8 && rc == ES_OK; j++)
			rc = set_if(n->net[j], l, v[j]);
	}
	if (rc == ES_OK)
		rc = set_if(n->procs_running, NULL, s->proc_running);
	if (rc == ES_OK)
		rc = set_if(n->procs_blocked, NULL, s->proc_blocked);
	if (rc == ES_OK)
		rc = set_if(n->pids, NULL, s->proc_count);
	if (rc == ES_OK)
		rc = set_if(n->threads, NULL, s->proc_threads);
	return rc;
}

/* Per-CPU lines ("cpuN" and eight mode columns, USER_HZ ticks) and btime of
 * <proc>/stat (proc(5)). A line that does not parse is skipped; an
 * unreadable file leaves both families empty. */
static es_err read_stat(es_agent_metrics *m, int with_cpu)
{
	node_families *n = &m->node;
	char path[4200], cpu[16];
	es_fs_lines lf;
	es_err rc;
	int more = 0;

	snprintf(path, sizeof(path), "%s/stat", m->proc);
	if (es_fs_lines_open(&lf, path, NULL, 0) != ES_OK)
		return ES_OK;
	for (;;) {
		const char *p = lf.line;
		uint64_t t[ES_CU_CPU_MODES], id;
		int i;

		if (es_fs_lines_next(&lf, &more, NULL, 0) != ES_OK || !more)
			break;
		rc = ES_OK;
		if (!strncmp(p, "btime ", 6)) {
			p += 6;
			if (es_cu_take_u64(&p, &id) == 0)
				rc = es_metric_set(n->boot_time, NULL, (double)id);
		} else if (with_cpu && !strncmp(p, "cpu", 3) && p[3] >= '0' &&
			   p[3] <= '9') {
			p += 3;
			if (es_cu_take_u64(&p, &id) != 0)
				continue;
			for (i = 0; i < ES_CU_CPU_MODES; i++)
				if (es_cu_take_u64(&p, &t[i]) != 0)
					break;
			if (i < ES_CU_CPU_MODES)
				continue;
			snprintf(cpu, sizeof(cpu), "%llu", (unsigned long long)id);
			for (i = 0; i < ES_CU_CPU_MODES && rc == ES_OK; i++)
				rc = es_metric_set(n->cpu_seconds,
						   (const char *[]){ cpu, es_cu_cpu_mode_names[i] },
						   (double)t[i] / (double)m->user_hz);
		}
		if (rc != ES_OK) {
			es_fs_lines_close(&lf);
			return rc;
		}
	}
	es_fs_lines_close(&lf);
	return ES_OK;
}

es_err metrics__node_update(es_agent_metrics *m, const es_sample *sample)
{
	node_families *n = &m->node;
	es_metric *all[] = {
		n->cpu_seconds, n->boot_time, n->load[0], n->load[1], n->load[2],
		n->fs_size, n->fs_avail, n->fs_free, n->fs_files, n->fs_files_free,
		n->net[0], n->net[1], n->net[2], n->net[3], n->net[4], n->net[5],
		n->net[6], n->net[7], n->procs_running, n->procs_blocked, n->pids,
		n->threads,
	};
	es_err rc;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		es_metric_clear(all[i]);
	for (size_t i = 0; i < n->nmem; i++)
		es_metric_clear(n->mem[i].m);
	if (sample) {
		rc = update_usage(m, sample);
		if (rc != ES_OK)
			return rc;
	}
	return read_stat(m, sample && sample->has_cpu);
}
