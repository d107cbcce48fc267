/*
 * enroll_job.c - joins and renewals in a child process (enroll_job.h).
 */
#define _GNU_SOURCE /* pipe2 */
#include "enroll/enroll_job.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "enroll/join.h"
#include "enroll/renew.h"

void es_enroll_job_init(es_enroll_job *j)
{
	memset(j, 0, sizeof(*j));
	j->fd = -1;
}

int es_enroll_job_running(const es_enroll_job *j)
{
	return j->pid > 0;
}

/* The child: the exchange, then "<rc>\n<reason>\n<message>" in one write
 * (shorter than PIPE_BUF, so whole), then _exit without the parent's
 * atexit handlers or stdio buffers. */
static void child(int fd, es_enroll_job_kind kind, const es_agent_config *cfg)
{
	char err[1200] = "", reason[64] = "", line[sizeof(err) + 100];
	es_err rc;
	int n;

	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	if (kind == ES_ENROLL_JOB_JOIN)
		rc = es_join_run(cfg, NULL, err, sizeof(err));
	else
		rc = es_renew_run(cfg, NULL, reason, sizeof(reason), err, sizeof(err));
	n = snprintf(line, sizeof(line), "%d\n%s\n%s", (int)rc, reason, err);
	if (n > 0 && write(fd, line, (size_t)n < sizeof(line) ? (size_t)n :
			   sizeof(line) - 1) < 0)
		_exit(1);
	_exit(0);
}

es_err es_enroll_job_start(es_enroll_job *j, es_enroll_job_kind kind,
			   const es_agent_config *cfg, char *err, size_t errsz)
{
	int p[2];
	pid_t pid;

	if (j->pid > 0)
		return es_errf(ES_ERR_STATE, err, errsz, "a join or renewal runs already");
	if (pipe2(p, O_CLOEXEC) != 0)
		return es_errf(ES_ERR_IO, err, errsz, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return es_errf(ES_ERR_IO, err, errsz, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		close(p[0]);
		child(p[1], kind, cfg);
	}
	close(p[1]);
	if (fcntl(p[0], F_SETFL, O_NONBLOCK) != 0) {
		/* A blocking read end would stall the loop: give up the job. */
		close(p[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return es_errf(ES_ERR_IO, err, errsz, "fcntl: %s", strerror(errno));
	}
	j->pid = pid;
	j->fd = p[0];
	j->kind = kind;
	j->len = 0;
	return ES_OK;
}

/* Reads what the child wrote so far, without blocking. */
static void drain(es_enroll_job *j)
{
	ssize_t n;

	while (j->fd >= 0 && j->len < sizeof(j->buf) - 1 &&
	       (n = read(j->fd, j->buf + j->len, sizeof(j->buf) - 1 - j->len)) > 0)
		j->len += (size_t)n;
	j->buf[j->len] = '\0';
}

int es_enroll_job_poll(es_enroll_job *j, es_err *rc, char *reason, size_t rsz,
		       char *err, size_t errsz)
{
	char *nl1, *nl2;
	int status = 0;
	pid_t w;

	if (j->pid <= 0)
		return 0;
	drain(j);
	w = waitpid(j->pid, &status, WNOHANG);
	if (w == 0 || (w < 0 && errno == EINTR))
		return 0;
	drain(j);
	close(j->fd);
	j->fd = -1;
	j->pid = 0;
	if (rsz)
		reason[0] = '\0';
	nl1 = strchr(j->buf, '\n');
	nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
	if (!nl2) {
		*rc = es_errf(ES_ERR_IO, err, errsz, "the %s process ended without a "
			      "result (status %d)", j->kind == ES_ENROLL_JOB_JOIN ? "join" :
			      "renewal", status);
		return 1;
	}
	*nl1 = *nl2 = '\0';
	*rc = (es_err)atoi(j->buf);
	if (rsz)
		snprintf(reason, rsz, "%s", nl1 + 1);
	snprintf(err, errsz, "%s", nl2 + 1);
	return 1;
}

void es_enroll_job_cancel(es_enroll_job *j)
{
	if (!j || j->pid <= 0)
		return;
	kill(j->pid, SIGKILL);
	waitpid(j->pid, NULL, 0);
	if (j->fd >= 0)
		close(j->fd);
	es_enroll_job_init(j);
}
