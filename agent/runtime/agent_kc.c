/*
 * agent_kc.c - the agent's hooks for the kernel collectors (kcollect.h):
 * started after the store and the event loop exist, reported each round,
 * stopped before the loop goes.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/agent_int.h"
#include "es_log.h"
#include "kcollect/kcollect.h"

void agent__kc_start(es_agent *a)
{
	char err[256] = "";
	size_t i;

	a->kenv = calloc(1, sizeof(*a->kenv));
	if (!a->kenv) {
		es_log_error("kcollect", "kernel collectors not started", "error",
			     "out of memory", NULL);
		return;
	}
	a->kenv->force_procfs = a->cfg->collector_backend == ES_AGENT_KC_PROCFS;
	a->kenv->ringbuf_bytes = (unsigned)a->cfg->ringbuf_bytes;
	a->kenv->state_dir = a->cfg->state_dir;
	a->kenv->cgroup_root = a->cfg->cgroup_root;
	a->kenv->btf_path = a->cfg->btf_path;
	es_kenv_probe(a->kenv, ES_KENV_MOUNT_HOST, err, sizeof(err));
	if (a->kenv->ebpf_reason[0])
		es_log_info("kcollect", "eBPF is not usable", "reason",
			    a->kenv->ebpf_reason, NULL);
	if (es_kcollectors_start(a->kenv, ES_KC_ALL, &a->kcs, err,
				 sizeof(err)) != ES_OK) {
		es_log_error("kcollect", "kernel collectors not started", "error",
			     err, NULL);
		return;
	}
	if (es_kcollectors_watch(a->kcs, a->ctx, err, sizeof(err)) != ES_OK)
		es_log_error("kcollect", "kernel collectors are read each round "
			     "only", "error", err, NULL);
	for (i = 0; i < es_kcollectors_count(a->kcs); i++) {
		es_kcollector *kc = es_kcollectors_get(a->kcs, i);

		es_log_debug("kcollect", "backend", "collector", kc->ops->name,
			     "backend", es_kbackend_str(kc->backend), "reason",
			     kc->reason, NULL);
	}
}

void agent__kc_report(es_agent *a, cJSON *status)
{
	if (es_kcollectors_report(a->kcs, status) != ES_OK)
		es_log_error("kcollect", "cannot report the kernel collectors",
			     "error", "out of memory", NULL);
}

void agent__kc_stop(es_agent *a)
{
	es_kcollectors_stop(a->kcs);
	a->kcs = NULL;
	es_kenv_release(a->kenv);
	free(a->kenv);
	a->kenv = NULL;
}

static es_err kc_render(void *user)
{
	es_agent *a = user;

	return es_kc_cgroupnet_metrics_set(&a->cgnet_metrics, a->kcs);
}

es_err agent__kc_metrics(es_agent *a, char *err, size_t errsz)
{
	es_metrics *reg = es_agent_metrics_registry(a->metrics);
	es_err rc;

	rc = es_kc_cgroupnet_metrics_add(reg, &a->cgnet_metrics, err, errsz);
	if (rc != ES_OK)
		return rc;
	rc = es_metrics_on_render(reg, kc_render, a);
	if (rc != ES_OK)
		es_errf(rc, err, errsz, "metrics: %s", es_strerror(rc));
	return rc;
}
