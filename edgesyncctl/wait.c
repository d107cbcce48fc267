/*
 * wait.c - `edgesyncctl apply --wait` (wait.h): one node GET that waits
 * (waitForDesiredResourceVersion) for each connected node the applied
 * objects select, on the command's one admin connection.
 */
#include "wait.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "es_json.h"
#include "es_obj.h"
#include "es_time.h"
#include "print.h"

#define NODES_PATH "/apis/edgesync.io/v1alpha1/nodes"

/* The highest resourceVersion among the objects of applied that select a
 * node with these labels; 0 when none does. */
static int64_t wanted_rv(const cJSON *applied, const cJSON *labels)
{
	const cJSON *o;
	int64_t want = 0;

	cJSON_ArrayForEach(o, applied) {
		int64_t rv = es_obj_resource_version(o);

		if (rv > want && es_obj_selects(o, labels))
			want = rv;
	}
	return want;
}

/* The message of a Status body, or "" (borrowed from v). */
static const char *status_message(const cJSON *v)
{
	const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(v, "message"));

	return m ? m : "";
}

/* The timeoutSeconds of the next wait: what is left until deadline_ms, in
 * whole seconds (the nearest; 0 asks for the answer at once), at most
 * ES_CTL_WAIT_MAX_S. */
static int64_t wait_seconds(int64_t deadline_ms)
{
	int64_t left = deadline_ms - es_time_mono_ms(), s;

	s = left > 0 ? (left + 500) / 1000 : 0;
	return s > ES_CTL_WAIT_MAX_S ? ES_CTL_WAIT_MAX_S : s;
}

/* Waits for one node; returns 0 acknowledged, 1 not connected, 2 not
 * acknowledged in time or another failure (printed). A wait longer than
 * the controller holds one (ES_CTL_WAIT_MAX_S) is asked for again. */
static int wait_node(const es_ctl_api *api, const char *name, int64_t rv,
		     int64_t deadline_ms, int64_t timeout_ms, FILE *out)
{
	char path[512];
	es_http_resp r = { 0 };
	cJSON *v = NULL;
	int res = 2;

	for (;;) {
		snprintf(path, sizeof(path), NODES_PATH "/%s?waitForDesiredResourceVersion=%"
			 PRId64 "&timeoutSeconds=%" PRId64, name, rv,
			 wait_seconds(deadline_ms));
		if (api->call(api->ctx, "GET", path, NULL, &r) != 0)
			return 2;
		if (r.status != 504 || wait_seconds(deadline_ms) == 0)
			break;
		es_http_resp_free(&r);
	}
	(void)es_json_parse(r.body, r.body_len, ES_JSON_MAX_DEPTH, &v, NULL, 0);
	if (r.status == 200) {
		fprintf(out, "node/%s acknowledged resourceVersion %" PRId64 "\n", name, rv);
		res = 0;
	} else if (r.status == 409) {
		fprintf(out, "node/%s not waited for: %s\n", name, status_message(v));
		res = 1;
	} else if (r.status == 504) {
		/* The controller's message gives the seconds of the last
		 * request, which is the share of --timeout left for this node. */
		fprintf(stderr, "error: node/%s did not acknowledge resourceVersion %" PRId64
			" within --timeout (%g s); the controller: %s\n", name, rv,
			(double)timeout_ms / 1000.0, status_message(v));
	} else {
		es_print_server_error(stderr, name, r.status, r.body, r.body_len);
	}
	cJSON_Delete(v);
	es_http_resp_free(&r);
	return res;
}

int es_ctl_wait_applied(const es_ctl_api *api, const cJSON *applied, int64_t timeout_ms,
			FILE *out)
{
	es_http_resp r = { 0 };
	cJSON *list = NULL;
	const cJSON *n;
	int64_t deadline = es_time_mono_ms() + timeout_ms;
	int counts[3] = { 0, 0, 0 }, offline = 0, rc = ES_CTL_EXIT_RUNTIME;
	char err[256] = "";

	if (api->call(api->ctx, "GET", NODES_PATH, NULL, &r) != 0)
		return rc;
	if (r.status != 200) {
		es_print_server_error(stderr, "nodes", r.status, r.body, r.body_len);
		goto cleanup;
	}
	if (es_json_parse(r.body, r.body_len, ES_JSON_MAX_DEPTH, &list, err,
			  sizeof(err)) != ES_OK) {
		fprintf(stderr, "error: the server's node list is not JSON: %s\n", err);
		goto cleanup;
	}
	cJSON_ArrayForEach(n, cJSON_GetObjectItem(list, "items")) {
		const cJSON *meta = cJSON_GetObjectItem(n, "metadata");
		const cJSON *sync = cJSON_GetObjectItem(cJSON_GetObjectItem(n, "status"), "sync");
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(meta, "name"));
		int64_t want = wanted_rv(applied, cJSON_GetObjectItem(meta, "labels"));

		if (!name || !want)
			continue;
		if (!cJSON_IsTrue(cJSON_GetObjectItem(sync, "connected"))) {
			fprintf(out, "node/%s not connected: it gets the objects when its "
				"agent connects\n", name);
			offline++;
			continue;
		}
		counts[wait_node(api, name, want, deadline, timeout_ms, out)]++;
	}
	if (!counts[0] && !counts[1] && !counts[2] && !offline)
		fprintf(out, "no node has labels that the objects select "
			"(spec.nodeSelector)\n");
	fprintf(out, "%d node(s) acknowledged, %d not connected here, %d not "
		"acknowledged\n", counts[0], offline + counts[1], counts[2]);
	rc = counts[2] ? ES_CTL_EXIT_RUNTIME : ES_CTL_EXIT_OK;
cleanup:
	cJSON_Delete(list);
	es_http_resp_free(&r);
	return rc;
}
