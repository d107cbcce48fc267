/*
 * kcollect.c - the set of kernel collectors (kcollect.h): the registry,
 * choosing each collector's backend, the shared event ring buffer
 * (bpf/es_events.h), reporting, and the event-loop hooks. The host probes
 * are in kenv.c.
 */
#define _GNU_SOURCE
#include "kcollect/kcollect.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <libwebsockets.h>

#include "es_json.h"
#include "es_log.h"
#include "runtime/heap.h"

/* One line per collector; the order is the report order and the mask bit. */
static const es_kcollector_ops *const registry[] = {
	&es_kc_process_ops,
	&es_kc_tcp_ops,
	&es_kc_cgroupnet_ops,
	&es_kc_oom_ops,
	&es_kc_blockio_ops,
};

#define NREG (sizeof(registry) / sizeof(registry[0]))

typedef struct kc_slot {
	es_kcollector kc;
	int enabled;
	lws_sorted_usec_list_t sul;
	struct es_kcollectors *set;
} kc_slot;

struct es_kcollectors {
	const es_kenv *env;
	es_cgname *names;
	int ring_fd;             /* the event ring buffer map, or -1 */
	struct ring_buffer *rb;  /* its reader (dispatch), or NULL */
	struct lws_context *ctx;
	struct lws_vhost *vh;
	struct lws *wsi;         /* rb's epoll fd in the event loop */
	size_t n;
	kc_slot slots[NREG];
};

const es_kcollector_ops *const *es_kcollectors_registry(size_t *n)
{
	*n = NREG;
	return registry;
}

const char *es_kbackend_str(es_kbackend b)
{
	switch (b) {
	case ES_KBACKEND_EBPF:
		return "ebpf";
	case ES_KBACKEND_PROCFS:
		return "procfs";
	default:
		return "unavailable";
	}
}

es_err es_kcollectors_mask(const char *names, unsigned *mask, char *err,
			   size_t errsz)
{
	const char *p = names;
	unsigned m = 0;

	if (!names || !*names || strcmp(names, "all") == 0) {
		*mask = ES_KC_ALL;
		return ES_OK;
	}
	while (*p) {
		size_t len = strcspn(p, ","), i;

		while (len > 0 && *p == ' ') {
			p++;
			len--;
		}
		for (i = 0; i < NREG; i++)
			if (strlen(registry[i]->name) == len &&
			    strncmp(registry[i]->name, p, len) == 0)
				break;
		if (i == NREG)
			return es_errf(ES_ERR_INVAL, err, errsz,
				       "unknown kernel collector \"%.*s\"",
				       (int)(len > 64 ? 64 : len), p);
		m |= 1u << i;
		p += len;
		if (*p == ',')
			p++;
	}
	*mask = m;
	return ES_OK;
}

/* Chooses and starts the backend of one collector. */
static void start_one(es_kcollector *kc, const es_kenv *env)
{
	char why[256] = "", ferr[256] = "";
	es_err rc;

	kc->env = env;
	if (kc->ops->start_ebpf) {
		rc = kc->ops->start_ebpf(kc, env, why, sizeof(why));
		if (rc == ES_OK) {
			kc->backend = ES_KBACKEND_EBPF;
			kc->reason[0] = '\0';
			es_log_info("kcollect", "collector started", "collector",
				    kc->ops->name, "backend", "ebpf", NULL);
			return;
		}
		if (!why[0])
			snprintf(why, sizeof(why), "%s", es_strerror(rc));
		kc->priv = NULL;
		kc->poll_ms = 0;
	} else {
		snprintf(why, sizeof(why), "no eBPF backend");
	}
	snprintf(kc->reason, sizeof(kc->reason), "%s", why);
	if (kc->ops->start_procfs) {
		rc = kc->ops->start_procfs(kc, env, ferr, sizeof(ferr));
		if (rc == ES_OK) {
			kc->backend = ES_KBACKEND_PROCFS;
			es_log_info("kcollect", "collector started", "collector",
				    kc->ops->name, "backend", "procfs",
				    "reason", kc->reason, NULL);
			return;
		}
		kc->priv = NULL;
		kc->poll_ms = 0;
		snprintf(kc->reason + strlen(kc->reason),
			 sizeof(kc->reason) - strlen(kc->reason),
			 "; fallback: %s", ferr[0] ? ferr : es_strerror(rc));
	}
	kc->backend = ES_KBACKEND_UNAVAILABLE;
	es_log_warn("kcollect", "collector unavailable", "collector",
		    kc->ops->name, "reason", kc->reason, NULL);
}

static int running(const kc_slot *s)
{
	return s->enabled && s->kc.backend != ES_KBACKEND_UNAVAILABLE;
}

/* 1 when s runs on eBPF and writes records into the set's ring. */
static int writes_ring(const kc_slot *s)
{
	return running(s) && s->kc.backend == ES_KBACKEND_EBPF && s->kc.ops->source;
}

/* ring_buffer_sample_fn of the set's ring: hands the record to the
 * collector its source names. */
static int dispatch(void *ctx, void *data, size_t size)
{
	es_kcollectors *set = ctx;
	uint32_t source;
	size_t i;

	if (size < sizeof(source))
		return 0;
	memcpy(&source, data, sizeof(source));
	for (i = 0; i < set->n; i++) {
		kc_slot *s = &set->slots[i];

		if (s->kc.ops->source == source && writes_ring(s) && s->kc.ops->on_event) {
			s->kc.ops->on_event(&s->kc, data, size);
			break;
		}
	}
	return 0;
}

/* Creates the event ring and its reader when eBPF is usable at all; a
 * failure is logged and leaves the collectors that need it to their
 * fallbacks. */
static void ring_open(es_kcollectors *set)
{
	char why[256];

	set->ring_fd = -1;
	if (!es_kenv_ebpf_ok(set->env, 0, 0, why, sizeof(why)))
		return;
	set->ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "es_events", 0, 0,
				      set->env->ringbuf_bytes ? set->env->ringbuf_bytes
							      : ES_KENV_RINGBUF_DEFAULT,
				      NULL);
	if (set->ring_fd < 0) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
	} else {
		set->rb = ring_buffer__new(set->ring_fd, dispatch, set, NULL);
		if (set->rb)
			return;
		snprintf(why, sizeof(why), "reader: %s", strerror(errno));
		close(set->ring_fd);
		set->ring_fd = -1;
	}
	es_log_warn("kcollect", "cannot create the event ring buffer", "error", why,
		    NULL);
}

/* Frees the ring unless a running eBPF collector writes into it. */
static void ring_close_unused(es_kcollectors *set)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		if (writes_ring(&set->slots[i]))
			return;
	ring_buffer__free(set->rb);
	set->rb = NULL;
	if (set->ring_fd >= 0)
		close(set->ring_fd);
	set->ring_fd = -1;
}

/* Hands every record in the ring to its collector. */
static void drain(es_kcollectors *set)
{
	if (set->rb)
		ring_buffer__consume(set->rb);
}

es_err es_kcollectors_start(const es_kenv *env, unsigned mask,
			    es_kcollectors **out, char *err, size_t errsz)
{
	es_kcollectors *set;
	size_t i;

	*out = NULL;
	set = calloc(1, sizeof(*set));
	if (!set)
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	set->env = env;
	set->n = NREG;
	if (es_cgname_new(env->cgroup_v2 ? env->cgroup2_path : NULL, &set->names)) {
		free(set);
		return es_errf(ES_ERR_NOMEM, err, errsz, "out of memory");
	}
	ring_open(set);
	for (i = 0; i < NREG; i++) {
		kc_slot *s = &set->slots[i];

		s->set = set;
		s->kc.ops = registry[i];
		s->kc.ring_fd = set->ring_fd;
		s->kc.env = env;
		s->kc.names = set->names;
		s->enabled = (mask >> i) & 1u;
		if (!s->enabled) {
			snprintf(s->kc.reason, sizeof(s->kc.reason), "disabled");
			continue;
		}
		start_one(&s->kc, env);
	}
	ring_close_unused(set);
	for (i = 0; i < NREG; i++)
		set->slots[i].kc.ring_fd = set->ring_fd;
	/* libbpf frees the kernel BTF it parsed once an object is loaded;
	 * give the freed heap back to the kernel. */
	es_heap_trim();
	*out = set;
	return ES_OK;
}

void es_kcollectors_poll(es_kcollectors *set)
{
	size_t i;

	if (!set)
		return;
	drain(set);
	for (i = 0; i < set->n; i++)
		if (running(&set->slots[i]) && set->slots[i].kc.ops->poll)
			set->slots[i].kc.ops->poll(&set->slots[i].kc);
}

size_t es_kcollectors_count(const es_kcollectors *set)
{
	return set ? set->n : 0;
}

es_kcollector *es_kcollectors_get(es_kcollectors *set, size_t i)
{
	return set && i < set->n ? &set->slots[i].kc : NULL;
}

static es_err report_entry(const kc_slot *s, cJSON *list)
{
	const es_kcollector *kc = &s->kc;
	cJSON *e = cJSON_CreateObject();
	int healthy = s->enabled && kc->backend != ES_KBACKEND_UNAVAILABLE;

	if (!e || !cJSON_AddItemToArray(list, e)) {
		cJSON_Delete(e);
		return ES_ERR_NOMEM;
	}
	if (!cJSON_AddStringToObject(e, "name", kc->ops->name) ||
	    !cJSON_AddStringToObject(e, "backend", es_kbackend_str(kc->backend)) ||
	    !cJSON_AddBoolToObject(e, "enabled", s->enabled) ||
	    !cJSON_AddBoolToObject(e, "healthy", healthy) ||
	    (kc->reason[0] &&
	     !cJSON_AddStringToObject(e, "reason", kc->reason)) ||
	    !es_json_add_int(e, "events", (int64_t)kc->events) ||
	    !es_json_add_int(e, "eventsLost", (int64_t)kc->lost))
		return ES_ERR_NOMEM;
	return ES_OK;
}

es_err es_kcollectors_report(es_kcollectors *set, cJSON *status)
{
	cJSON *act, *list;
	es_err rc;
	size_t i;

	if (!set)
		return ES_OK;
	es_kcollectors_poll(set);
	act = cJSON_GetObjectItemCaseSensitive(status, "activity");
	if (!act)
		act = cJSON_AddObjectToObject(status, "activity");
	list = cJSON_GetObjectItemCaseSensitive(status, "collectors");
	if (!list)
		list = cJSON_AddArrayToObject(status, "collectors");
	if (!act || !list)
		return ES_ERR_NOMEM;
	for (i = 0; i < set->n; i++) {
		kc_slot *s = &set->slots[i];

		if (running(s) && s->kc.ops->report) {
			rc = s->kc.ops->report(&s->kc, act);
			if (rc != ES_OK)
				return rc;
		}
		rc = report_entry(s, list);
		if (rc != ES_OK)
			return rc;
	}
	return ES_OK;
}

static int kc_callback(struct lws *wsi, enum lws_callback_reasons reason,
		       void *user, void *in, size_t len)
{
	es_kcollectors *set = lws_get_opaque_user_data(wsi);

	(void)user;
	(void)in;
	(void)len;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		if (set)
			drain(set);
		return 0;
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		if (set)
			set->wsi = NULL;
		lws_set_opaque_user_data(wsi, NULL);
		return 0;
	default:
		return 0;
	}
}

static const struct lws_protocols kc_protocols[] = {
	{ "es-kcollect", kc_callback, 0, 0, 0, NULL, 0 },
	LWS_PROTOCOL_LIST_TERM
};

static void kc_timer(lws_sorted_usec_list_t *sul)
{
	kc_slot *s = lws_container_of(sul, kc_slot, sul);

	drain(s->set);
	if (running(s) && s->kc.ops->poll)
		s->kc.ops->poll(&s->kc);
	lws_sul_schedule(s->set->ctx, 0, &s->sul, kc_timer,
			 (lws_usec_t)s->kc.poll_ms * LWS_US_PER_MS);
}

es_err es_kcollectors_watch(es_kcollectors *set, struct lws_context *ctx,
			    char *err, size_t errsz)
{
	struct lws_context_creation_info info;
	lws_sock_file_fd_type u;
	size_t i;
	int fd;

	if (!set)
		return ES_OK;
	set->ctx = ctx;
	for (i = 0; i < set->n; i++) {
		kc_slot *s = &set->slots[i];

		if (running(s) && s->kc.poll_ms)
			lws_sul_schedule(ctx, 0, &s->sul, kc_timer,
					 (lws_usec_t)s->kc.poll_ms * LWS_US_PER_MS);
	}
	if (!set->rb)
		return ES_OK;
	memset(&info, 0, sizeof(info));
	info.vhost_name = "kcollect";
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = kc_protocols;
	set->vh = lws_create_vhost(ctx, &info);
	if (!set->vh)
		return es_errf(ES_ERR_IO, err, errsz,
			       "kernel collectors: cannot create the event-loop vhost");
	/* lws closes an adopted descriptor with its wsi; the reader keeps (and
	 * closes) its own. */
	fd = fcntl(ring_buffer__epoll_fd(set->rb), F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return es_errf(ES_ERR_IO, err, errsz, "kernel collectors: dup: %s",
			       strerror(errno));
	u.filefd = fd;
	set->wsi = lws_adopt_descriptor_vhost(set->vh, LWS_ADOPT_RAW_FILE_DESC, u,
					      "es-kcollect", NULL);
	if (!set->wsi) {
		close(fd);
		return es_errf(ES_ERR_IO, err, errsz,
			       "kernel collectors: cannot watch the event ring "
			       "buffer from the event loop");
	}
	lws_set_opaque_user_data(set->wsi, set);
	return ES_OK;
}

void es_kcollectors_stop(es_kcollectors *set)
{
	size_t i;

	if (!set)
		return;
	if (set->wsi) {
		struct lws *w = set->wsi;

		lws_set_opaque_user_data(w, NULL);
		set->wsi = NULL;
		lws_wsi_close(w, LWS_TO_KILL_SYNC);
	}
	for (i = 0; i < set->n; i++) {
		kc_slot *s = &set->slots[i];

		if (set->ctx)
			lws_sul_cancel(&s->sul);
		if (running(s) && s->kc.ops->stop)
			s->kc.ops->stop(&s->kc);
		s->kc.priv = NULL;
	}
	ring_buffer__free(set->rb);
	if (set->ring_fd >= 0)
		close(set->ring_fd);
	es_cgname_free(set->names);
	free(set);
}

int es_kcollectors_check(FILE *out, const es_kenv *env)
{
	es_kcollectors *set = NULL;
	char d[400];
	int bad = 0;
	size_t i;

	es_kenv_print(env, out);
	if (es_kcollectors_start(env, ES_KC_ALL, &set, NULL, 0) != ES_OK)
		return (int)NREG;
	for (i = 0; i < set->n; i++) {
		const es_kcollector *kc = &set->slots[i].kc;
		char name[64];

		snprintf(name, sizeof(name), "collector/%s", kc->ops->name);
		snprintf(d, sizeof(d), "%s%s%s", es_kbackend_str(kc->backend),
			 kc->reason[0] ? ": " : "", kc->reason);
		fprintf(out, "%-24s %-8s %s\n", name,
			kc->backend == ES_KBACKEND_UNAVAILABLE ? "missing" : "ok", d);
		bad += kc->backend == ES_KBACKEND_UNAVAILABLE;
	}
	es_kcollectors_stop(set);
	return bad;
}

int es_kc_map_sum_u64(int map_fd, uint32_t key, int percpu, uint64_t *out)
{
	uint64_t one = 0, *vals;
	int ncpu, i, rc;

	*out = 0;
	if (!percpu) {
		if (bpf_map_lookup_elem(map_fd, &key, &one) != 0)
			return -errno;
		*out = one;
		return 0;
	}
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	rc = bpf_map_lookup_elem(map_fd, &key, vals) != 0 ? -errno : 0;
	for (i = 0; rc == 0 && i < ncpu; i++)
		*out += vals[i];
	free(vals);
	return rc;
}
