/*
 * agent_int.h - what agent.c (the runtime: event loop, rounds, hooks) and
 * agent_node.c (the Node object and its conditions) share inside the agent
 * module; not for other modules (they use agent.h).
 */
#ifndef ES_AGENT_AGENT_INT_H
#define ES_AGENT_AGENT_INT_H

#include <time.h>
#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include "runtime/agent.h"
#include "collect/collect.h"
#include "egress/egress.h"
#include "es_obj.h"
#include "es_sample.h"
#include "node/health.h"
#include "endpoint/httpd.h"
#include "enroll/enroll_job.h"
#include "sync/backoff.h"
#include "kcollect/kc_cgroupnet.h"
#include "kcollect/kcollect.h"
#include "endpoint/metrics.h"
#include "store/store.h"
#include "sync/sync.h"

struct es_agent {
	const es_agent_config *cfg;
	int lock_fd;               /* es_lockfile on <state-dir>/agent.lock */
	struct lws_context *ctx;
	es_store *st;
	es_collect *col;
	es_sync *sync;
	es_httpd *httpd;
	es_agent_metrics *metrics; /* /metrics (metrics.h) */
	lws_sorted_usec_list_t sul_collect;
	/* The store's retry timer (agent.c): armed, its last delay. */
	lws_sorted_usec_list_t sul_store;
	int store_armed;
	int64_t store_retry_ms;
	int reconcile_due;  /* reconcile once the store takes writes again */
	cJSON *labels;
	cJSON *conditions;  /* node conditions, kept across rounds */
	/* The latest Node object as compact JSON text (es_json_print), NULL
	 * before the first round. Kept as text: a cJSON tree of it costs about
	 * six times its text, and it is read only by /v1/state, /metrics and
	 * the outbox. */
	char *node_json;
	es_sample sample;   /* the round node_json was built from (/metrics) */
	es_collector_cfg eff;
	int has_cc;         /* a CollectorConfig is cached */
	int ready;          /* the first round is done */
	char *objects_json;  /* status.objects as stored, JSON text (agent_node.c) ... */
	uint64_t objects_at; /* ... at this es_store_changes count */
	char boot_id[64];    /* /proc/sys/kernel/random/boot_id, "" if unread */
	es_health_eval *health; /* the applied HealthRules (health.h) */
	es_kenv *kenv;          /* kernel collectors' host probe (agent_kc.c) */
	es_kcollectors *kcs;    /* the kernel collectors (kcollect.h) */
	es_kc_cgroupnet_metrics cgnet_metrics; /* container_network_* (kc_cgroupnet.h) */
	es_egress *egress;      /* EgressPolicy enforcement (egress.h) */
	/* What the outbox got (agent_report.c): the Node last queued, as
	 * compact JSON text, NULL before the first round; when usage figures
	 * were last sent; the activity lists last turned into events. */
	char *reported_json;
	time_t usage_sent_at;
	cJSON *activity_seen[3];
	/* agent_cert.c: the node certificate's dates (CertificateValid), its
	 * renewal once expired, joining (again) with the token; the job in
	 * flight, the backoff between attempts, no attempt before
	 * cert_next_ms (monotonic), the last refusal's reason ("" none) and
	 * the last attempt's error. */
	lws_sorted_usec_list_t sul_cert;
	es_enroll_job cert_job;
	es_backoff cert_bo;
	int64_t cert_next_ms;
	char cert_refusal[32];
	char cert_err[600];
};

/* agent_kc.c: the kernel collectors (kcollect.h) */

/* Probes the host (mounting tracefs / cgroup2 when missing), starts the
 * kernel collectors and hooks them into a->ctx. Never fails the agent: a
 * problem is logged and the collectors report it. */
void agent__kc_start(es_agent *a);
/* Adds status.activity and the kernel collectors' status.collectors
 * entries; logs an allocation failure. */
void agent__kc_report(es_agent *a, cJSON *status);
/* Stops the kernel collectors, undoes the agent's own mounts. NULL-safe
 * members; call before lws_context_destroy. */
void agent__kc_stop(es_agent *a);
/* Registers the kernel collectors' families (container_network_*) in
 * a->metrics, filled from a->kcs at each scrape (empty while a->kcs is
 * NULL). Errors: ES_ERR_NOMEM, ES_ERR_EXISTS, err says which. */
es_err agent__kc_metrics(es_agent *a, char *err, size_t errsz);

/* agent.c */

/* Queues the event ev in the outbox; consumes ev (NULL is ignored). */
void agent__queue_event(es_agent *a, cJSON *ev);

/* agent_report.c */

/* With protocol-version 2, queues the round's new recent execs, exits
 * and OOM victims (status.activity of the round's status, borrowed) as
 * events (PROTOCOL.md "Activity events": OOM victims at once, the others
 * when a usage report is due). Call before the Node is built, so that
 * its status.agent counts what these events cost. */
void agent__report_events(es_agent *a, const cJSON *status, time_t now);
/* What the round's node (changed in place) reports (PROTOCOL.md "Usage
 * figures"): usage figures held at the values of a->reported_json unless
 * a usage report is due (usage-report-interval) and they moved more than
 * usage-min-change, status.usage.timestamp the time of the last usage
 * report; with protocol-version 2 the activity lists left out.
 * Returns the text of the reported Node (malloc'd) or NULL when out of
 * memory. */
char *agent__report_view(es_agent *a, cJSON *node, time_t now);
/* Frees what agent__report_view keeps. */
void agent__report_free(es_agent *a);

/* agent_node.c */

/* Updates a->conditions from one round (built-in defaults from sample,
 * HealthRules over sample, Ready from status.collectors; removes the
 * conditions of rules that are gone); queues ConditionChanged events for
 * conditions that changed status, or are new and True. Both borrowed. */
void agent__update_conditions(es_agent *a, const cJSON *status,
			      const es_sample *sample, time_t now);
/* Builds the Node object around one round's status (consumed). */
cJSON *agent__build_node(es_agent *a, cJSON *status);
/*
 * node (modified) as compact JSON text of at most max bytes, so that a
 * state report fits in one message (PROTOCOL.md "Limits"): while it is
 * longer, entries are left out from the end of status.objects and their
 * number is set in status.agent.objectsOmitted (logged at warn). Returns
 * malloc'd text, or NULL when out of memory; longer than max only when
 * status.objects is already empty.
 */
char *agent__node_text(cJSON *node, size_t max);
/* Seeds the node conditions from the newest stored state so that
 * lastTransitionTime survives restarts. */
void agent__seed_conditions(es_agent *a);
/* The node condition CredentialsValid (ES_AGENT_COND_CREDENTIALS) from the
 * sync client's last look at its credential files (es_sync_credentials):
 * True, or False with the reason naming the bad file; removed when the
 * agent has no controller. A change of status queues a ConditionChanged
 * event (Warning when False). Called by agent__update_conditions. Returns
 * 1 when the status changed or the condition is new, else 0. */
int agent__credentials_condition(es_agent *a, time_t now);
/* Logs a condition's change and queues its ConditionChanged event
 * (Warning when bad). */
void agent__condition_event(es_agent *a, const char *type, const char *status,
			    const char *reason, const char *message, int bad,
			    time_t now);

/* agent_cert.c (PROTOCOL.md "Renewal of an expired certificate") */

/* Starts watching the node certificate (with a controller only): every
 * 5 s, while no join or renewal runs, a certificate past its
 * notAfter is renewed at the join listener, and with a token a node
 * without a usable certificate, or whose certificate was refused, joins;
 * each in a child (enroll_job.h), attempts spaced by the backoff of
 * backoff.h (a refusal waits 30 to 60 s), each failure logged. */
void agent__cert_start(es_agent *a);
/* Cancels the timer and a job in flight. NULL-safe members. */
void agent__cert_stop(es_agent *a);
/* The node condition CertificateValid (ES_AGENT_COND_CERTIFICATE): True
 * Valid; False Expired, NotYetValid, Revoked, IdentityMismatch, a
 * renewal's refusal (GraceExpired, KeyMismatch, NotIssued) or NotJoined,
 * the message with the date and what the agent does about it; absent
 * without a controller, or without a certificate and a token. Called by
 * agent__update_conditions; returns 1 when the status changed or the
 * condition is new. */
int agent__cert_condition(es_agent *a, time_t now);

#endif
