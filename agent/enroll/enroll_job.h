/*
 * enroll_job.h - a join (join.h) or a renewal (renew.h) run off the
 * agent's event loop: both are blocking HTTPS exchanges of up to tens of
 * seconds, and the loop never waits on the network (docs/ARCHITECTURE.md,
 * "Threading"), so `run` forks a child process that does the exchange,
 * writes the files and reports its result through a pipe, and the loop
 * polls for it from a timer.
 */
#ifndef ES_AGENT_ENROLL_JOB_H
#define ES_AGENT_ENROLL_JOB_H

#include <stddef.h>
#include <sys/types.h>
#include "es_err.h"
#include "runtime/config.h"

typedef enum es_enroll_job_kind {
	ES_ENROLL_JOB_JOIN = 0,  /* es_join_run: a bootstrap token */
	ES_ENROLL_JOB_RENEW = 1, /* es_renew_run: an expired certificate */
} es_enroll_job_kind;

/* One exchange in flight; zero it, or es_enroll_job_init, before use. */
typedef struct es_enroll_job {
	pid_t pid;             /* the child, 0 when none */
	int fd;                /* the read end of its pipe, -1 when none */
	es_enroll_job_kind kind;
	char buf[2048];        /* what the child wrote so far */
	size_t len;
} es_enroll_job;

void es_enroll_job_init(es_enroll_job *j);

/* 1 while a child runs. */
int es_enroll_job_running(const es_enroll_job *j);

/*
 * Starts kind in a child process with cfg (validated; the child has its own
 * copy). Errors: ES_ERR_STATE (a job runs already), ES_ERR_IO (pipe or
 * fork failed, err says which).
 */
es_err es_enroll_job_start(es_enroll_job *j, es_enroll_job_kind kind,
			   const es_agent_config *cfg, char *err, size_t errsz);

/*
 * Never blocks. Returns 0 while the child runs; 1 once it ended: *rc gets
 * the exchange's result (es_join_run's or es_renew_run's error, ES_ERR_IO
 * when the child died without saying), reason (rsz bytes) the
 * controller's refusal reason of a renewal or "", err its message.
 */
int es_enroll_job_poll(es_enroll_job *j, es_err *rc, char *reason, size_t rsz,
		       char *err, size_t errsz);

/* Kills and reaps a running child. NULL-safe; no-op when none runs. */
void es_enroll_job_cancel(es_enroll_job *j);

#endif
