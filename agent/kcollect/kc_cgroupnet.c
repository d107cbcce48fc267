/*
 * kc_cgroupnet.c - the per-cgroup network collector (kcollect.h,
 * "cgroup-network"): bytes and packets in and out per cgroup v2, from the
 * cgroup_skb programs of bpf/cgroupnet.bpf.c attached to the root of the
 * cgroup v2 hierarchy the probe found (env->cgroup2_path). There is no
 * /proc equivalent: without eBPF or cgroup v2 it is unavailable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kcollect/cgroupname.h"
#include "cgroupnet.h"
#include "kcollect/kc_cgroupnet.h"
#include "cgroupnet.skel.h"
#include "es_log.h"
#include "kcollect/kc_common.h"
#include "kcollect/kcollect.h"

#define REPORT_CGROUPS 128 /* entries, the busiest first */

typedef struct row {
	uint64_t id;
	struct es_cgnet_stats s;
} row;

typedef struct kc_cgnet {
	struct cgroupnet_bpf *skel;
	struct bpf_link *in, *out;
	int cgfd;
	int legacy;   /* attached with bpf_prog_attach (no cgroup links) */
} kc_cgnet;

static void cgnet_free(kc_cgnet *c)
{
	if (!c)
		return;
	bpf_link__destroy(c->in);
	bpf_link__destroy(c->out);
	if (c->legacy && c->skel) {
		bpf_prog_detach2(bpf_program__fd(c->skel->progs.es_cgnet_ingress), c->cgfd,
				 BPF_CGROUP_INET_INGRESS);
		bpf_prog_detach2(bpf_program__fd(c->skel->progs.es_cgnet_egress), c->cgfd,
				 BPF_CGROUP_INET_EGRESS);
	}
	if (c->cgfd >= 0)
		close(c->cgfd);
	cgroupnet_bpf__destroy(c->skel);
	free(c);
}

/*
 * Attaches both programs to the hierarchy's root. A BPF link (Linux 5.7+)
 * goes away with the agent, even when it crashes, and coexists with other
 * programs the way BPF_F_ALLOW_MULTI does; older kernels get
 * bpf_prog_attach with BPF_F_ALLOW_MULTI, detached at stop.
 */
static int attach(kc_cgnet *c, char *err, size_t errsz)
{
	int in_fd = bpf_program__fd(c->skel->progs.es_cgnet_ingress);
	int out_fd = bpf_program__fd(c->skel->progs.es_cgnet_egress);
	int e;

	c->in = bpf_program__attach_cgroup(c->skel->progs.es_cgnet_ingress, c->cgfd);
	if (c->in) {
		c->out = bpf_program__attach_cgroup(c->skel->progs.es_cgnet_egress, c->cgfd);
		if (c->out)
			return 0;
		e = errno;
		es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			"cgroup-network: attaching cgroup_skb/egress: %s", strerror(e));
		return -1;
	}
	e = errno;
	if (bpf_prog_attach(in_fd, c->cgfd, BPF_CGROUP_INET_INGRESS, BPF_F_ALLOW_MULTI)) {
		es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			"cgroup-network: attaching cgroup_skb/ingress: %s (link: %s)",
			strerror(errno), strerror(e));
		return -1;
	}
	c->legacy = 1;
	if (bpf_prog_attach(out_fd, c->cgfd, BPF_CGROUP_INET_EGRESS, BPF_F_ALLOW_MULTI)) {
		e = errno;
		bpf_prog_detach2(in_fd, c->cgfd, BPF_CGROUP_INET_INGRESS);
		c->legacy = 0;
		es_errf(ES_ERR_UNSUPPORTED, err, errsz,
			"cgroup-network: attaching cgroup_skb/egress: %s", strerror(e));
		return -1;
	}
	return 0;
}

static es_err cgnet_start_ebpf(es_kcollector *kc, const es_kenv *env, char *err,
			       size_t errsz)
{
	char reason[256];
	kc_cgnet *c = NULL;
	es_kc_load l = { 0 };
	es_err rc = ES_ERR_UNSUPPORTED;

	if (!es_kenv_ebpf_ok(env, 0, 1, reason, sizeof(reason)))
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz, "%s", reason);
	c = calloc(1, sizeof(*c));
	if (!c)
		return es_errf(ES_ERR_NOMEM, err, errsz, "cgroup-network: out of memory");
	c->cgfd = -1;
	c->cgfd = open(env->cgroup2_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->cgfd < 0) {
		es_errf(rc, err, errsz, "cgroup-network: %s: %s", env->cgroup2_path,
			strerror(errno));
		goto cleanup;
	}
	c->skel = cgroupnet_bpf__open_opts(
		es_kenv_open_opts(env, &(struct bpf_object_open_opts){ 0 }));
	if (!c->skel) {
		es_errf(rc, err, errsz, "cgroup-network: opening the BPF object: %s",
			strerror(errno));
		goto cleanup;
	}
	l.name = "cgroup-network";
	l.skel = c->skel->skeleton;
	rc = es_kc_skel_load(&l, err, errsz);
	if (rc)
		goto cleanup;
	rc = ES_ERR_UNSUPPORTED;
	if (attach(c, err, errsz))
		goto cleanup;
	es_log_info("cgroup-network", "attached to the cgroup v2 root", "path",
		    env->cgroup2_path, NULL);
	kc->priv = c;
	return ES_OK;
cleanup:
	cgnet_free(c);
	return rc;
}

static void cgnet_poll(es_kcollector *kc)
{
	kc_cgnet *c = kc->priv;
	uint64_t v = 0;

	if (!c)
		return;
	if (!es_kc_map_sum_u64(bpf_map__fd(c->skel->maps.counters), ES_CGNET_C_LOST, 1, &v))
		kc->lost = v;
}

static int cmp_desc(const void *a, const void *b)
{
	const row *x = a, *y = b;
	uint64_t bx = x->s.rx_bytes + x->s.tx_bytes, by = y->s.rx_bytes + y->s.tx_bytes;

	return bx < by ? 1 : bx > by ? -1 : 0;
}

static int row_fill(cJSON *o, const void *r)
{
	const struct es_cgnet_stats *s = &((const row *)r)->s;

	return !cJSON_AddNumberToObject(o, "receiveBytes", (double)s->rx_bytes) ||
	       !cJSON_AddNumberToObject(o, "receivePackets", (double)s->rx_packets) ||
	       !cJSON_AddNumberToObject(o, "transmitBytes", (double)s->tx_bytes) ||
	       !cJSON_AddNumberToObject(o, "transmitPackets", (double)s->tx_packets);
}

static es_err cgnet_report(es_kcollector *kc, cJSON *activity)
{
	kc_cgnet *c = kc->priv;
	void *v = NULL;
	const row *rows;
	size_t n = 0, i;
	es_err rc;

	if (!c)
		return ES_OK;
	rc = es_kc_map_rows(bpf_map__fd(c->skel->maps.stats), sizeof(row), offsetof(row, s),
			    cmp_desc, &v, &n);
	if (rc)
		return rc;
	rows = v;
	rc = es_kc_cgroup_rows_json(activity, "cgroupNetwork", kc->names, rows, n, sizeof(row),
				    REPORT_CGROUPS, row_fill);
	if (!rc) {
		kc->events = 0;
		for (i = 0; i < n; i++)
			kc->events += rows[i].s.rx_packets + rows[i].s.tx_packets;
	}
	free(v);
	return rc;
}

static void cgnet_stop(es_kcollector *kc)
{
	cgnet_free(kc->priv);
	kc->priv = NULL;
}

const es_kcollector_ops es_kc_cgroupnet_ops = {
	.name = "cgroup-network",
	.start_ebpf = cgnet_start_ebpf,
	.start_procfs = NULL,
	.poll = cgnet_poll,
	.report = cgnet_report,
	.stop = cgnet_stop,
};

es_err es_kc_cgroupnet_metrics_add(es_metrics *reg, es_kc_cgroupnet_metrics *m,
				   char *err, size_t errsz)
{
	static const char *const id[] = { "id" };
	es_err rc;

	rc = es_metrics_counter(reg, "container_network_receive_bytes_total",
				"Cumulative count of bytes received (IP packets with "
				"their headers, by the cgroup's sockets)", id, 1,
				&m->rx_bytes, err, errsz);
	if (!rc)
		rc = es_metrics_counter(reg, "container_network_receive_packets_total",
					"Cumulative count of packets received", id, 1,
					&m->rx_packets, err, errsz);
	if (!rc)
		rc = es_metrics_counter(reg, "container_network_transmit_bytes_total",
					"Cumulative count of bytes transmitted (IP packets "
					"with their headers, by the cgroup's sockets)", id, 1,
					&m->tx_bytes, err, errsz);
	if (!rc)
		rc = es_metrics_counter(reg, "container_network_transmit_packets_total",
					"Cumulative count of packets transmitted", id, 1,
					&m->tx_packets, err, errsz);
	return rc;
}

es_err es_kc_cgroupnet_metrics_set(const es_kc_cgroupnet_metrics *m,
				   es_kcollectors *set)
{
	es_kcollector *kc = NULL;
	kc_cgnet *c;
	void *v = NULL;
	const row *rows;
	size_t n = 0, i;
	es_err rc = ES_OK;

	es_metric_clear(m->rx_bytes);
	es_metric_clear(m->rx_packets);
	es_metric_clear(m->tx_bytes);
	es_metric_clear(m->tx_packets);
	for (i = 0; i < es_kcollectors_count(set) && !kc; i++)
		if (es_kcollectors_get(set, i)->ops == &es_kc_cgroupnet_ops)
			kc = es_kcollectors_get(set, i);
	c = kc ? kc->priv : NULL;
	if (!c)
		return ES_OK;
	rc = es_kc_map_rows(bpf_map__fd(c->skel->maps.stats), sizeof(row), offsetof(row, s),
			    NULL, &v, &n);
	if (rc)
		return rc;
	rows = v;
	/* Added, not set: two ids can name one path (a cgroup removed and made
	 * again before the name cache saw it). */
	for (i = 0; i < n && !rc; i++) {
		const char *path = es_cgname_path(kc->names, rows[i].id);
		const char *lv[1];

		if (!path)
			continue;
		lv[0] = path;
		rc = es_metric_add(m->rx_bytes, lv, (double)rows[i].s.rx_bytes);
		if (!rc)
			rc = es_metric_add(m->rx_packets, lv, (double)rows[i].s.rx_packets);
		if (!rc)
			rc = es_metric_add(m->tx_bytes, lv, (double)rows[i].s.tx_bytes);
		if (!rc)
			rc = es_metric_add(m->tx_packets, lv, (double)rows[i].s.tx_packets);
	}
	free(v);
	return rc;
}
