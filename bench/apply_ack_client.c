/*
 * apply_ack_client.c - es-bench-apply-ack: the admin client's side of the
 * apply -> desiredAck benchmark (bench/apply_ack.py starts the controller
 * and the agent and runs it), on lib/es_http as edgesyncctl is: one kept
 * TLS connection, and for each apply a PUT of a changed CollectorConfig,
 * then the waiting node GET that `edgesyncctl apply --wait` sends
 * (waitForDesiredResourceVersion = the PUT's resourceVersion), timed from
 * before the PUT is written until the GET's answer is read. Figures, never
 * pass/fail.
 *
 * Usage: es-bench-apply-ack --server https://localhost:PORT --ca FILE
 *        --cert FILE --key FILE --node NAME [--applies N] [--gap-ms M]
 * Prints, in milliseconds: apply_to_desired_ack_ms p50/p99/max and
 * put_answered_ms p50/p99 (n = N applies after 5 unmeasured ones, M ms
 * apart: the agent's reconcile and collection round run between them).
 * Exit status 0, 1 when a request failed (printed), 2 bad arguments.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "es_http.h"
#include "es_json.h"
#include "es_obj.h"
#include "es_time.h"
#include "quantile.h"

#define API "/apis/edgesync.io/v1alpha1"

static double now_ms(void)
{
	return (double)es_time_mono_us() / 1000.0;
}

/* One request; 0 with *resp filled and status want (or want2), else -1
 * (printed). */
static int request(es_http_client *h, const char *method, const char *url,
		   const char *body, int want, int want2, es_http_resp *resp)
{
	char err[512] = "";

	if (es_http_client_request(h, method, url, body, body ? strlen(body) : 0, resp,
				   err, sizeof(err)) != ES_OK) {
		fprintf(stderr, "es-bench-apply-ack: %s %s: %s\n", method, url, err);
		return -1;
	}
	if (resp->status != want && resp->status != want2) {
		fprintf(stderr, "es-bench-apply-ack: %s %s: HTTP %d: %.300s\n", method,
			url, resp->status, resp->body);
		es_http_resp_free(resp);
		return -1;
	}
	return 0;
}

/* PUT then the waiting GET; *put_ms and *all_ms get the times. */
static int apply_once(es_http_client *h, const char *server, const char *node,
		      int i, double *put_ms, double *all_ms)
{
	char url[1024], body[256];
	es_http_resp r = { 0 };
	cJSON *o = NULL;
	int64_t rv;
	double t0;

	snprintf(body, sizeof(body), "{\"apiVersion\":\"edgesync.io/v1alpha1\","
		 "\"kind\":\"CollectorConfig\",\"metadata\":{\"name\":\"bench\"},"
		 "\"spec\":{\"intervalSeconds\":%d}}", 10 + i % 2);
	snprintf(url, sizeof(url), "%s" API "/collectorconfigs/bench", server);
	t0 = now_ms();
	if (request(h, "PUT", url, body, 200, 201, &r) != 0)
		return -1;
	*put_ms = now_ms() - t0;
	rv = es_json_parse(r.body, r.body_len, ES_JSON_MAX_DEPTH, &o, NULL, 0) == ES_OK
		? es_obj_resource_version(o) : -1;
	cJSON_Delete(o);
	es_http_resp_free(&r);
	if (rv <= 0) {
		fprintf(stderr, "es-bench-apply-ack: the PUT's answer has no resourceVersion\n");
		return -1;
	}
	snprintf(url, sizeof(url), "%s" API "/nodes/%s?waitForDesiredResourceVersion=%"
		 PRId64 "&timeoutSeconds=10", server, node, rv);
	if (request(h, "GET", url, NULL, 200, 200, &r) != 0)
		return -1;
	*all_ms = now_ms() - t0;
	es_http_resp_free(&r);
	return 0;
}

int main(int argc, char **argv)
{
	const char *server = NULL, *node = NULL;
	es_http_opts opts = { .tls = 1, .user_agent = "es-bench-apply-ack" };
	es_http_client *h = NULL;
	int applies = 200, gap_ms = 50, rc = 1;
	double *put = NULL, *all = NULL;
	char err[512] = "";

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--server"))
			server = argv[i + 1];
		else if (!strcmp(argv[i], "--ca"))
			opts.ca_file = argv[i + 1];
		else if (!strcmp(argv[i], "--cert"))
			opts.cert_file = argv[i + 1];
		else if (!strcmp(argv[i], "--key"))
			opts.key_file = argv[i + 1];
		else if (!strcmp(argv[i], "--node"))
			node = argv[i + 1];
		else if (!strcmp(argv[i], "--applies"))
			applies = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--gap-ms"))
			gap_ms = atoi(argv[i + 1]);
		else
			break;
	}
	if (!server || !node || !opts.ca_file || applies < 1 || gap_ms < 0 || argc % 2 == 0) {
		fprintf(stderr, "usage: es-bench-apply-ack --server URL --ca FILE --cert FILE "
			"--key FILE --node NAME [--applies N] [--gap-ms M]\n");
		return 2;
	}
	put = calloc((size_t)applies, sizeof(*put));
	all = calloc((size_t)applies, sizeof(*all));
	if (!put || !all || es_http_client_new(&opts, &h, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, "es-bench-apply-ack: %s\n", err[0] ? err : "out of memory");
		goto out;
	}
	for (int i = -5; i < applies; i++) {
		double p, a;
		struct timespec gap = { gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L };

		if (apply_once(h, server, node, i + 5, &p, &a) != 0)
			goto out;
		if (i >= 0) {
			put[i] = p;
			all[i] = a;
		}
		nanosleep(&gap, NULL);
	}
	bench_sort(put, (size_t)applies);
	bench_sort(all, (size_t)applies);
	printf("apply_to_desired_ack_ms p50 %.2f p99 %.2f max %.2f (n=%d; C client on "
	       "lib/es_http as edgesyncctl: PUT, then the waiting GET on the same kept "
	       "connection)\n", bench_quantile(all, (size_t)applies, 50),
	       bench_quantile(all, (size_t)applies, 99), all[applies - 1], applies);
	printf("put_answered_ms p50 %.2f p99 %.2f\n", bench_quantile(put, (size_t)applies, 50),
	       bench_quantile(put, (size_t)applies, 99));
	printf("admin_connections %lu\n", es_http_client_connections(h));
	rc = 0;
out:
	es_http_client_free(h);
	free(put);
	free(all);
	return rc;
}
