/*
 * agent_cert.c - the node certificate over time (agent_int.h; PROTOCOL.md
 * "Renewal of an expired certificate", "Revocation"): the condition
 * CertificateValid, renewal of a certificate that expired while the agent
 * was offline, and joining with the token when there is no certificate
 * yet (the join listener was unreachable at start) or the controller
 * refused the one there is. Enforcement goes on throughout: nothing here
 * touches the cached desired state.
 */
#include <string.h>
#include <time.h>

#include "enroll/join.h"
#include "enroll/renew.h"
#include "es_cond.h"
#include "es_log.h"
#include "es_time.h"
#include "runtime/agent_int.h"

/* How often the timer looks at the job's pipe and whether an attempt is
 * due, and how often at the certificate while nothing is due (as the sync
 * client looks at bad credential files). */
#define CERT_TICK_MS 500
#define CERT_LOOK_MS (ES_SYNC_CREDS_RETRY_S * 1000)

static int has_token(const es_agent *a)
{
	return a->cfg->token && *a->cfg->token;
}

/* 1 when the token may replace the expired certificate: the controller
 * refused its renewal, and not because the node was deleted (a deleted
 * node stays out until an operator joins it again). */
static int join_instead(const es_agent *a)
{
	return has_token(a) && a->cert_refusal[0] &&
	       strcmp(a->cert_refusal, "CertificateRevoked") != 0;
}

/* The attempt due now, if any: *kind and 1, else 0. */
static int choose(es_agent *a, es_enroll_job_kind *kind)
{
	const char *reason, *refmsg;
	char e[300], msg[300];
	es_renew_cert c;

	if (es_renew_cert_read(a->cfg->cert, &c, e, sizeof(e)) != ES_OK) {
		/* No certificate yet: the token's job (`run` at start could not
		 * reach the join listener). */
		*kind = ES_ENROLL_JOB_JOIN;
		return has_token(a);
	}
	/* Refused by the agents' listener (revoked): neither renewal nor the
	 * token may bring a deleted node back. */
	if (es_sync_refused(a->sync, &reason, &refmsg))
		return 0;
	switch (es_renew_cert_status(&c, time(NULL), &reason, msg, sizeof(msg))) {
	case ES_RENEW_EXPIRED:
		/* Renewal first; once refused, a token may join again. Without
		 * one the renewal is asked again at the backoff's pace (an
		 * operator may raise renewal-grace). */
		*kind = join_instead(a) ? ES_ENROLL_JOB_JOIN : ES_ENROLL_JOB_RENEW;
		return 1;
	case ES_RENEW_VALID:
		a->cert_refusal[0] = '\0';
		/* A certificate whose key or CA does not fit, with a token:
		 * joining replaces it (es_join_needed). */
		*kind = ES_ENROLL_JOB_JOIN;
		return es_join_needed(a->cfg);
	default:
		return 0; /* not yet valid: the clock, not the certificate */
	}
}

static void finished(es_agent *a, es_err rc, const char *reason, const char *err)
{
	const char *what = a->cert_job.kind == ES_ENROLL_JOB_JOIN ? "join" : "renewal";
	int64_t now = es_time_mono_ms(), delay;
	char ms[24];

	if (rc == ES_OK) {
		es_log_info("agent", a->cert_job.kind == ES_ENROLL_JOB_JOIN ? "joined" :
			    "renewed the expired certificate", "node", a->cfg->node_name,
			    "cert", a->cfg->cert, NULL);
		a->cert_refusal[0] = '\0';
		a->cert_err[0] = '\0';
		es_backoff_init(&a->cert_bo, NULL, NULL);
		a->cert_next_ms = 0;
		es_sync_credentials_changed(a->sync);
		return;
	}
	snprintf(a->cert_err, sizeof(a->cert_err), "%s", err);
	if (rc == ES_ERR_AUTH) {
		/* A definite answer: asking again soon gets the same one. */
		snprintf(a->cert_refusal, sizeof(a->cert_refusal), "%s",
			 *reason ? reason : a->cert_job.kind == ES_ENROLL_JOB_JOIN ?
			 "JoinRefused" : "RenewalRefused");
		es_backoff_retry_after(&a->cert_bo, ES_BACKOFF_CAP_MS / 2);
		/* Past the grace with a token: the join goes at once. */
		if (a->cert_job.kind == ES_ENROLL_JOB_RENEW && join_instead(a)) {
			a->cert_next_ms = 0;
			es_log_warn("agent", "renewal refused, joining with the token",
				    "error", err, NULL);
			return;
		}
	}
	delay = es_backoff_next(&a->cert_bo, now);
	a->cert_next_ms = now + delay;
	snprintf(ms, sizeof(ms), "%lld", (long long)delay);
	es_log_warn("agent", rc == ES_ERR_AUTH ? "refused, retrying later" :
		    "failed, retrying", "what", what, "url", a->cfg->join_url,
		    "error", err, "delay_ms", ms, NULL);
}

static void cert_tick(lws_sorted_usec_list_t *sul)
{
	es_agent *a = lws_container_of(sul, es_agent, sul_cert);
	char reason[64], err[1200];
	es_enroll_job_kind kind;
	es_err rc;

	if (es_enroll_job_running(&a->cert_job)) {
		if (es_enroll_job_poll(&a->cert_job, &rc, reason, sizeof(reason), err,
				       sizeof(err)))
			finished(a, rc, reason, err);
	} else if (es_time_mono_ms() < a->cert_next_ms) {
		/* not yet */
	} else if (!choose(a, &kind)) {
		a->cert_next_ms = es_time_mono_ms() + CERT_LOOK_MS;
	} else {
		es_log_info("agent", kind == ES_ENROLL_JOB_JOIN ? "joining" :
			    "renewing the expired certificate", "url", a->cfg->join_url, NULL);
		if (es_enroll_job_start(&a->cert_job, kind, a->cfg, err, sizeof(err)) != ES_OK) {
			a->cert_job.kind = kind;
			finished(a, ES_ERR_IO, "", err);
		}
	}
	lws_sul_schedule(a->ctx, 0, &a->sul_cert, cert_tick,
			 (lws_usec_t)CERT_TICK_MS * LWS_US_PER_MS);
}

void agent__cert_start(es_agent *a)
{
	if (!a->sync)
		return;
	es_enroll_job_init(&a->cert_job);
	es_backoff_init(&a->cert_bo, NULL, NULL);
	lws_sul_schedule(a->ctx, 0, &a->sul_cert, cert_tick, 1);
}

void agent__cert_stop(es_agent *a)
{
	if (!a->sync)
		return;
	lws_sul_cancel(&a->sul_cert);
	es_enroll_job_cancel(&a->cert_job);
}

/* What the agent does about a refused or expired certificate, for the
 * condition's message. */
static const char *next_step(const es_agent *a, int revoked)
{
	if (revoked)
		return "the node was deleted: to bring it back, remove its certificate "
		       "and join again with a new bootstrap token (edgesync-agent join)";
	if (join_instead(a))
		return "joining again with the bootstrap token";
	return "the node needs a new bootstrap token (token or token-file) to join again";
}

int agent__cert_condition(es_agent *a, time_t now)
{
	cJSON *old = es_cond_find(a->conditions, ES_AGENT_COND_CERTIFICATE);
	const char *reason = "", *refmsg = "", *status = "False";
	char msg[1400], dates[300], e[300];
	es_renew_cert c;
	int changed = 0;

	int unread = !a->sync || es_renew_cert_read(a->cfg->cert, &c, e, sizeof(e)) != ES_OK;

	if (!a->sync || (unread && !has_token(a))) {
		/* Offline only, or no certificate and no way to get one: the
		 * files are CredentialsValid's to name. */
		if (old)
			cJSON_Delete(cJSON_DetachItemViaPointer(a->conditions, old));
		return 0;
	}
	if (unread) {
		reason = "NotJoined";
		snprintf(msg, sizeof(msg), "%s: joining at %s%s%s", e, a->cfg->join_url,
			 a->cert_err[0] ? "; last attempt: " : "", a->cert_err);
	} else if (es_sync_refused(a->sync, &reason, &refmsg)) {
		es_renew_cert_status(&c, now, &status, dates, sizeof(dates));
		status = "False";
		snprintf(msg, sizeof(msg), "the controller refused this certificate (%s): "
			 "%s; %s", dates, refmsg, next_step(a, !strcmp(reason, "Revoked")));
	} else {
		switch (es_renew_cert_status(&c, now, &reason, dates, sizeof(dates))) {
		case ES_RENEW_VALID:
			status = "True";
			snprintf(msg, sizeof(msg), "%s", dates);
			break;
		case ES_RENEW_EXPIRED:
			if (a->cert_refusal[0]) {
				reason = !strcmp(a->cert_refusal, "CertificateRevoked") ?
					 "Revoked" : a->cert_refusal;
				snprintf(msg, sizeof(msg), "%s; %s; %s", dates, a->cert_err,
					 next_step(a, !strcmp(reason, "Revoked")));
			} else {
				snprintf(msg, sizeof(msg), "%s; renewing it at %s/v1/join/renew "
					 "with the same key%s%s", dates, a->cfg->join_url,
					 a->cert_err[0] ? "; last attempt: " : "", a->cert_err);
			}
			break;
		default:
			snprintf(msg, sizeof(msg), "%s", dates);
			break;
		}
	}
	if (!es_cond_is_camel(reason))
		reason = "RenewalRefused";
	if (es_cond_set(a->conditions, ES_AGENT_COND_CERTIFICATE, status, reason, msg, 0,
			now, &changed) != ES_OK) {
		es_log_error("agent", "cannot set a condition", "type",
			     ES_AGENT_COND_CERTIFICATE, NULL);
		return 0;
	}
	if (changed && (old || strcmp(status, "True") != 0))
		agent__condition_event(a, ES_AGENT_COND_CERTIFICATE, status, reason, msg,
				       strcmp(status, "True") != 0, now);
	return changed;
}
