/*
 * httpd.h - the agent's local HTTP endpoint (README, "What each program
 * does"): plain HTTP/1.1 on a loopback address by default, GET only.
 *
 *   /healthz   200 "ok" while the event loop runs
 *   /readyz    200 when the store takes writes and the first collection is
 *              done, else 503 with the reason (sync is not required:
 *              offline is a supported mode)
 *   /v1/state  JSON {node, desired, sync}; 503 with a JSON Status object
 *              naming the problem when the store cannot be read
 *   /metrics   Prometheus text exposition format 0.0.4
 *
 * Other paths 404; other methods 405 with "Allow: GET". Every answer has a
 * body, a 500 (allocation failure) too.
 */
#ifndef ES_AGENT_HTTPD_H
#define ES_AGENT_HTTPD_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include "es_err.h"

typedef struct es_httpd es_httpd;

/* Where the endpoint gets its answers (the agent). */
typedef struct es_httpd_source {
	void *user;
	/* 1 when ready; else 0 with why (whysz bytes) saying what is not, one
	 * line without the newline. */
	int (*ready)(void *user, char *why, size_t whysz);
	/* The /v1/state answer: its HTTP status (200, or 503 with a Status
	 * object), *doc a new tree the endpoint frees; -1 (then 500) on
	 * allocation failure. */
	int (*state)(void *user, cJSON **doc);
	/* The /metrics body (metrics.h): 0 with *body malloc'd (the endpoint
	 * frees it) and *len set, or -1 (then 500). */
	int (*metrics)(void *user, char **body, size_t *len);
} es_httpd_source;

/*
 * Builds the response of one request. method: "GET", "POST", ...; path
 * without the query. *body is malloc'd (caller frees), *ctype static.
 * Returns the HTTP status code, or 500 (with a text body, unless even that
 * cannot be allocated) on allocation failure.
 */
int es_httpd_respond(const es_httpd_source *src, const char *method,
		     const char *path, char **body, size_t *body_len,
		     const char **ctype);

/*
 * Creates a vhost named "http" on ctx listening on listen ("ip:port" or
 * "[v6]:port", IP literals only: es_addr_parse with no flags). src is
 * copied.
 * Errors: ES_ERR_INVAL (bad address, naming http-listen), ES_ERR_IO (the
 * address cannot be bound, naming it), ES_ERR_NOMEM.
 */
es_err es_httpd_new(struct lws_context *ctx, const char *listen,
		    const es_httpd_source *src, es_httpd **out, char *err,
		    size_t errsz);

/* Frees the endpoint (after lws_context_destroy). NULL-safe. */
void es_httpd_free(es_httpd *h);

#endif
