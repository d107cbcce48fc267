/*
 * kc_tcp.c - the TCP collector (kcollect.h, "tcp"): connections opened,
 * accepted and closed, retransmits, per-cgroup counts and the top
 * connections by bytes, from bpf/tcp.bpf.c; or, as the `procfs` fallback,
 * connection counts and states from diffing /proc/net/tcp and tcp6 scans.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kcollect/cgroupname.h"
#include "es_log.h"
#include "kcollect/kc_common.h"
#include "kcollect/kcollect.h"
#include "es_events.h"
#include "kcollect/kcprocfs.h"
#include "tcp.h"
#include "tcp.skel.h"

#define TOP_N 20             /* topConnections length */
#define RECENT_MAX 256       /* closed connections kept for topConnections */
#define RECENT_WINDOW_NS (60ull * 1000000000ull) /* "recently closed": last 60 s */
#define REPORT_CGROUPS 128   /* byCgroup entries, the busiest first */
#define PROCFS_POLL_MS 1000

typedef struct conn {
	struct es_tcp_event ev;
	uint64_t at_ns;      /* CLOCK_MONOTONIC at close (0: still open) */
} conn;

typedef struct cgrow {
	uint64_t id;
	struct es_tcp_cgstats s;
} cgrow;

typedef struct kc_tcp {
	struct tcp_bpf *skel;
	conn recent[RECENT_MAX];
	size_t nrecent;
	/* procfs */
	es_kcprocfs_tcp_set prev;
	int have_prev;
	uint64_t opened, accepted, closed;
	es_kcprocfs_tcp_delta last;
	char scan_error[160];
} kc_tcp;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t conn_bytes(const conn *c)
{
	return c->ev.bytes_sent + c->ev.bytes_received;
}

/* Keeps the closed connection when it is among the biggest of the window:
 * expired entries go first, then the smallest if c is bigger. */
static void remember(kc_tcp *t, const conn *c)
{
	uint64_t now = c->at_ns;
	size_t i, min = 0;

	for (i = 0; i < t->nrecent;) {
		if (now - t->recent[i].at_ns > RECENT_WINDOW_NS)
			t->recent[i] = t->recent[--t->nrecent];
		else
			i++;
	}
	if (t->nrecent < RECENT_MAX) {
		t->recent[t->nrecent++] = *c;
		return;
	}
	for (i = 1; i < t->nrecent; i++)
		if (conn_bytes(&t->recent[i]) < conn_bytes(&t->recent[min]))
			min = i;
	if (conn_bytes(&t->recent[min]) < conn_bytes(c))
		t->recent[min] = *c;
}

static void on_event(es_kcollector *kc, const void *data, size_t size)
{
	conn c;

	if (size < sizeof(c.ev))
		return;
	memcpy(&c.ev, data, sizeof(c.ev));
	c.at_ns = mono_ns();
	remember(kc->priv, &c);
	kc->events++;
}

static void tcp_free(kc_tcp *t)
{
	if (!t)
		return;
	tcp_bpf__destroy(t->skel);
	es_kcprocfs_tcp_set_clear(&t->prev);
	free(t);
}

static es_err tcp_start_ebpf(es_kcollector *kc, const es_kenv *env, char *err,
			     size_t errsz)
{
	char reason[256];
	kc_tcp *t = NULL;
	es_kc_load l = { 0 };
	es_err rc = ES_ERR_UNSUPPORTED;

	if (!es_kenv_ebpf_ok(env, 1, 0, reason, sizeof(reason)))
		return es_errf(ES_ERR_UNSUPPORTED, err, errsz, "%s", reason);
	t = calloc(1, sizeof(*t));
	if (!t)
		return es_errf(ES_ERR_NOMEM, err, errsz, "tcp: out of memory");
	t->skel = tcp_bpf__open_opts(
		es_kenv_open_opts(env, &(struct bpf_object_open_opts){ 0 }));
	if (!t->skel) {
		es_errf(rc, err, errsz, "tcp: opening the BPF object: %s", strerror(errno));
		goto cleanup;
	}
	l.name = "tcp";
	l.skel = t->skel->skeleton;
	l.events = t->skel->maps.events;
	l.ring_fd = kc->ring_fd;
	l.hooks = "sock:inet_sock_set_state, tcp:tcp_retransmit_skb";
	rc = es_kc_skel_load(&l, err, errsz);
	if (rc)
		goto cleanup;
	kc->priv = t;
	return ES_OK;
cleanup:
	tcp_free(t);
	return rc;
}

/* One /proc/net/tcp{,6} scan, diffed against the previous one. */
static void scan(es_kcollector *kc)
{
	es_kcprocfs_tcp_set cur = { 0 };
	kc_tcp *t = kc->priv;
	char err[160];
	es_err rc;

	rc = es_kcprocfs_tcp_read("/proc/net/tcp", 4, &cur, err, sizeof(err));
	if (!rc) {
		rc = es_kcprocfs_tcp_read("/proc/net/tcp6", 6, &cur, err, sizeof(err));
		if (rc == ES_ERR_IO)
			rc = ES_OK; /* a kernel without IPv6 */
	}
	if (rc) {
		if (strcmp(err, t->scan_error) != 0)
			es_log_warn("tcp", "procfs scan failed", "error", err, NULL);
		snprintf(t->scan_error, sizeof(t->scan_error), "%s", err);
		es_kcprocfs_tcp_set_clear(&cur);
		return;
	}
	t->scan_error[0] = '\0';
	es_kcprocfs_tcp_diff(&t->prev, &cur, &t->last);
	if (t->have_prev) {
		t->opened += t->last.opened;
		t->accepted += t->last.accepted;
		t->closed += t->last.closed;
		kc->events += t->last.opened + t->last.accepted + t->last.closed;
	}
	es_kcprocfs_tcp_set_clear(&t->prev);
	t->prev = cur;
	t->have_prev = 1;
}

static es_err tcp_start_procfs(es_kcollector *kc, const es_kenv *env, char *err,
			       size_t errsz)
{
	kc_tcp *t;

	(void)env;
	t = calloc(1, sizeof(*t));
	if (!t)
		return es_errf(ES_ERR_NOMEM, err, errsz, "tcp: out of memory");
	kc->priv = t;
	scan(kc);
	if (t->scan_error[0]) {
		es_errf(ES_ERR_UNSUPPORTED, err, errsz, "%s", t->scan_error);
		kc->priv = NULL;
		tcp_free(t);
		return ES_ERR_UNSUPPORTED;
	}
	kc->poll_ms = PROCFS_POLL_MS;
	return ES_OK;
}

static uint64_t counter(const kc_tcp *t, uint32_t idx)
{
	uint64_t v = 0;

	if (es_kc_map_sum_u64(bpf_map__fd(t->skel->maps.counters), idx, 1, &v))
		return 0;
	return v;
}

static void tcp_poll(es_kcollector *kc)
{
	kc_tcp *t = kc->priv;

	if (!t)
		return;
	if (!t->skel) {
		scan(kc);
		return;
	}
	kc->lost = counter(t, ES_TCP_C_LOST_SOCKS) + counter(t, ES_TCP_C_LOST_CGROUPS) +
		   counter(t, ES_TCP_C_LOST_RINGBUF);
}

static int cmp_conn_desc(const void *a, const void *b)
{
	uint64_t x = conn_bytes(a), y = conn_bytes(b);

	return x < y ? 1 : x > y ? -1 : 0;
}

static int cmp_cg_desc(const void *a, const void *b)
{
	const cgrow *x = a, *y = b;
	uint64_t bx = x->s.bytes_sent + x->s.bytes_received;
	uint64_t by = y->s.bytes_sent + y->s.bytes_received;

	if (bx != by)
		return bx < by ? 1 : -1;
	bx = x->s.opened + x->s.accepted + x->s.closed;
	by = y->s.opened + y->s.accepted + y->s.closed;
	return bx < by ? 1 : bx > by ? -1 : 0;
}

static cJSON *conn_json(es_cgname *names, const conn *c)
{
	char sa[INET6_ADDRSTRLEN], da[INET6_ADDRSTRLEN];
	int af = c->ev.family == 10 ? AF_INET6 : AF_INET;
	const char *path;
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	if (!inet_ntop(af, c->ev.saddr, sa, sizeof(sa)))
		sa[0] = '\0';
	if (!inet_ntop(af, c->ev.daddr, da, sizeof(da)))
		da[0] = '\0';
	path = es_cgname_path(names, c->ev.cgroup_id);
	if (!cJSON_AddStringToObject(o, "saddr", sa) ||
	    !cJSON_AddNumberToObject(o, "sport", c->ev.sport) ||
	    !cJSON_AddStringToObject(o, "daddr", da) ||
	    !cJSON_AddNumberToObject(o, "dport", c->ev.dport) ||
	    !cJSON_AddNumberToObject(o, "bytesSent", (double)c->ev.bytes_sent) ||
	    !cJSON_AddNumberToObject(o, "bytesReceived", (double)c->ev.bytes_received) ||
	    !cJSON_AddNumberToObject(o, "durationSeconds", c->ev.duration_ns / 1e9) ||
	    !cJSON_AddBoolToObject(o, "open", c->at_ns == 0) ||
	    !cJSON_AddBoolToObject(o, "accepted", c->ev.passive) ||
	    !cJSON_AddNumberToObject(o, "cgroupId", (double)c->ev.cgroup_id) ||
	    (path && !cJSON_AddStringToObject(o, "cgroup", path))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* topConnections: the recently closed plus the open ones (bytes as of their
 * latest state change), biggest first. */
static es_err add_top(es_kcollector *kc, cJSON *tcp)
{
	kc_tcp *t = kc->priv;
	int fd = bpf_map__fd(t->skel->maps.socks);
	size_t n = 0, cap = t->nrecent + 64, i;
	uint64_t now = mono_ns(), key, next, *kp = NULL;
	struct es_tcp_sock s;
	conn *all, *grown;
	cJSON *arr, *o;
	es_err rc = ES_ERR_NOMEM;

	all = calloc(cap, sizeof(*all));
	if (!all)
		return ES_ERR_NOMEM;
	for (i = 0; i < t->nrecent; i++)
		if (now - t->recent[i].at_ns <= RECENT_WINDOW_NS)
			all[n++] = t->recent[i];
	while (bpf_map_get_next_key(fd, kp, &next) == 0) {
		key = next;
		kp = &key;
		if (bpf_map_lookup_elem(fd, &key, &s) || !s.established)
			continue;
		if (n == cap) {
			cap *= 2;
			grown = realloc(all, cap * sizeof(*all));
			if (!grown)
				goto cleanup;
			all = grown;
		}
		memset(&all[n], 0, sizeof(all[n]));
		all[n].ev.duration_ns = now > s.start_ns ? now - s.start_ns : 0;
		all[n].ev.cgroup_id = s.cgroup_id;
		all[n].ev.bytes_sent = s.bytes_sent;
		all[n].ev.bytes_received = s.bytes_received;
		all[n].ev.family = s.family;
		all[n].ev.sport = s.sport;
		all[n].ev.dport = s.dport;
		all[n].ev.passive = s.passive;
		memcpy(all[n].ev.saddr, s.saddr, 16);
		memcpy(all[n].ev.daddr, s.daddr, 16);
		n++;
	}
	if (n)
		qsort(all, n, sizeof(*all), cmp_conn_desc);
	arr = cJSON_AddArrayToObject(tcp, "topConnections");
	if (!arr)
		goto cleanup;
	for (i = 0; i < n && i < TOP_N; i++) {
		o = conn_json(kc->names, &all[i]);
		if (!o)
			goto cleanup;
		cJSON_AddItemToArray(arr, o);
	}
	rc = ES_OK;
cleanup:
	free(all);
	return rc;
}

static int cg_fill(cJSON *o, const void *row)
{
	const struct es_tcp_cgstats *s = &((const cgrow *)row)->s;

	return !cJSON_AddNumberToObject(o, "opened", (double)s->opened) ||
	       !cJSON_AddNumberToObject(o, "accepted", (double)s->accepted) ||
	       !cJSON_AddNumberToObject(o, "closed", (double)s->closed) ||
	       !cJSON_AddNumberToObject(o, "bytesSent", (double)s->bytes_sent) ||
	       !cJSON_AddNumberToObject(o, "bytesReceived", (double)s->bytes_received);
}

static es_err add_cgroups(es_kcollector *kc, cJSON *tcp)
{
	kc_tcp *t = kc->priv;
	void *rows = NULL;
	size_t n = 0;
	es_err rc;

	rc = es_kc_map_rows(bpf_map__fd(t->skel->maps.cgstats), sizeof(cgrow),
			    offsetof(cgrow, s), cmp_cg_desc, &rows, &n);
	if (!rc)
		rc = es_kc_cgroup_rows_json(tcp, "byCgroup", kc->names, rows, n, sizeof(cgrow),
					    REPORT_CGROUPS, cg_fill);
	free(rows);
	return rc;
}

static es_err report_procfs(kc_tcp *t, cJSON *tcp)
{
	cJSON *states;
	unsigned i;

	if (!cJSON_AddNumberToObject(tcp, "opened", (double)t->opened) ||
	    !cJSON_AddNumberToObject(tcp, "accepted", (double)t->accepted) ||
	    !cJSON_AddNumberToObject(tcp, "closed", (double)t->closed))
		return ES_ERR_NOMEM;
	states = cJSON_AddObjectToObject(tcp, "states");
	if (!states)
		return ES_ERR_NOMEM;
	for (i = 1; i <= ES_KCP_TCP_STATE_MAX; i++)
		if (t->last.states[i] &&
		    !cJSON_AddNumberToObject(states, es_kcprocfs_tcp_state_str(i),
					     (double)t->last.states[i]))
			return ES_ERR_NOMEM;
	return ES_OK;
}

static es_err tcp_report(es_kcollector *kc, cJSON *activity)
{
	kc_tcp *t = kc->priv;
	cJSON *tcp;
	es_err rc;

	if (!t)
		return ES_OK;
	tcp = cJSON_AddObjectToObject(activity, "tcp");
	if (!tcp)
		return ES_ERR_NOMEM;
	if (!t->skel)
		return report_procfs(t, tcp);
	if (!cJSON_AddNumberToObject(tcp, "opened", (double)counter(t, ES_TCP_C_OPENED)) ||
	    !cJSON_AddNumberToObject(tcp, "accepted", (double)counter(t, ES_TCP_C_ACCEPTED)) ||
	    !cJSON_AddNumberToObject(tcp, "closed", (double)counter(t, ES_TCP_C_CLOSED)) ||
	    !cJSON_AddNumberToObject(tcp, "retransmits", (double)counter(t, ES_TCP_C_RETRANS)))
		return ES_ERR_NOMEM;
	rc = add_cgroups(kc, tcp);
	if (!rc)
		rc = add_top(kc, tcp);
	return rc;
}

static void tcp_stop(es_kcollector *kc)
{
	tcp_free(kc->priv);
	kc->priv = NULL;
}

const es_kcollector_ops es_kc_tcp_ops = {
	.name = "tcp",
	.source = ES_EV_SRC_TCP,
	.on_event = on_event,
	.start_ebpf = tcp_start_ebpf,
	.start_procfs = tcp_start_procfs,
	.poll = tcp_poll,
	.report = tcp_report,
	.stop = tcp_stop,
};
