/*
 * main.c - edgesync-agent: run | check | status (README, "What each
 * program does"). Exit status 0 ok, 1 runtime failure, 2 usage or
 * configuration error naming the bad flag, key or file.
 */
#define _GNU_SOURCE /* asprintf */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "enroll/join.h"
#include "enroll/renew.h"
#include "runtime/agent.h"
#include "host/check.h"
#include "runtime/config.h"
#include "es_addr.h"
#include "es_cli.h"
#include "es_http.h"
#include "es_json.h"
#include "es_log.h"
#include "es_version.h"

#define PROG "edgesync-agent"
/* How long `status` waits to connect and for each piece of the answer. */
#define STATUS_TIMEOUT_MS 5000

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void usage(FILE *f)
{
	size_t n;
	const es_setting *t = es_agent_settings(&n);

	fprintf(f,
		"Usage:\n"
		"  " PROG " run [--config FILE] [flags]   run the agent\n"
		"  " PROG " join --controller-url URL --token T --ca-hash sha256:HEX [flags]\n"
		"                                          join with a bootstrap token: make the\n"
		"                                          key, get a certificate into state-dir\n"
		"  " PROG " check [--config FILE] [flags] probe this host with these settings\n"
		"                                          and print a table\n"
		"  " PROG " status [--config FILE] [--http-listen ADDR] [-o table|json]\n"
		"                                          show the running agent's state\n"
		"  " PROG " --help | --version\n"
		"\n"
		"Settings come from the config file (--config FILE or $EDGESYNC_CONFIG,\n"
		"`key = value` lines), then EDGESYNC_* environment variables, then flags,\n"
		"later winning:\n");
	es_config_print_help(t, n, f);
	fprintf(f, "\nExit status: 0 ok, 1 runtime failure, 2 usage or configuration error.\n");
}

/* Loads and validates the settings from argv[2..], the config file and the
 * environment into cfg (zeroed here; the caller frees it). Returns 0, or
 * the exit status after printing the error: 2 for a configuration error,
 * 1 when out of memory. */
static int load_config(int argc, char **argv, es_agent_config *cfg)
{
	char err[512] = "";
	es_err rc;

	memset(cfg, 0, sizeof(*cfg));
	rc = es_agent_config_load(cfg, argc, argv, 2, NULL, NULL, err, sizeof(err));
	if (rc == ES_OK)
		rc = es_agent_config_validate(cfg, err, sizeof(err));
	if (rc == ES_OK)
		return 0;
	fprintf(stderr, PROG ": %s\n", err);
	return rc == ES_ERR_NOMEM ? 1 : 2;
}

/* The exit status of a failed join: 2 for what the operator must change
 * (a refused token or name, a wrong hash, a bad key file), else 1. */
static int join_code(es_err rc)
{
	return rc == ES_ERR_AUTH || rc == ES_ERR_INVAL ? 2 : 1;
}

/* `join`: the settings as `run` reads them, then es_join_run. */
static int cmd_join(int argc, char **argv)
{
	es_agent_config cfg;
	char err[1024] = "";
	int code = load_config(argc, argv, &cfg);
	es_err rc;

	if (code != 0)
		goto cleanup;
	if (!cfg.token || !*cfg.token) {
		fprintf(stderr, PROG ": token: required to join (--token <id>.<secret>)\n");
		code = 2;
		goto cleanup;
	}
	if (!es_join_needed(&cfg)) {
		printf("already joined: %s is a valid certificate for this key; remove "
		       "it to join again\n", cfg.cert);
		goto cleanup;
	}
	rc = es_join_run(&cfg, stdout, err, sizeof(err));
	if (rc != ES_OK) {
		fprintf(stderr, PROG ": join: %s\n", err);
		code = join_code(rc);
		goto cleanup;
	}
	printf("joined as node %s\n", cfg.node_name);
cleanup:
	es_agent_config_free(&cfg);
	return code;
}

/* `check`: the settings as `run` would read them, then the probes. */
static int cmd_check(int argc, char **argv)
{
	es_agent_config cfg;
	int code = load_config(argc, argv, &cfg);

	if (code == 0)
		code = es_check_run(stdout, &cfg);
	es_agent_config_free(&cfg);
	return code;
}

/* 1 when cfg's certificate reads and is past its notAfter. */
static int cert_expired(const es_agent_config *cfg)
{
	es_renew_cert c;
	const char *reason;
	char msg[200];

	return es_renew_cert_read(cfg->cert, &c, msg, sizeof(msg)) == ES_OK &&
	       es_renew_cert_status(&c, time(NULL), &reason, msg, sizeof(msg)) ==
	       ES_RENEW_EXPIRED;
}

static int cmd_run(int argc, char **argv)
{
	es_agent_config cfg;
	es_agent *a = NULL;
	char err[512] = "";
	int code;
	es_err rc;

	code = load_config(argc, argv, &cfg);
	if (code != 0)
		goto cleanup;
	es_log_set_level((es_log_level)cfg.log_level);
	es_log_route_lws();

	/* The logger is configured: from here on every message is an event. */
	if (es_cli_signals(on_signal) != ES_OK) {
		es_log_error("agent", "cannot install signal handlers", NULL);
		code = 1;
		goto cleanup;
	}

	/* An expired certificate is renewed from the loop with its key
	 * (renew.h), not replaced with the token. */
	if (es_join_needed(&cfg) && !cert_expired(&cfg)) {
		char jerr[1024] = "";

		rc = es_join_run(&cfg, NULL, jerr, sizeof(jerr));
		if (rc != ES_OK && join_code(rc) == 2) {
			es_log_error("agent", "cannot join", "controller", cfg.join_url,
				     "error", jerr, NULL);
			code = 2;
			goto cleanup;
		}
		/* Unreachable or failing: the agent starts offline, enforcing
		 * what it has cached, and joins from its loop with backoff
		 * (agent/runtime/agent_cert.c). */
		if (rc != ES_OK)
			es_log_warn("agent", "cannot join yet, starting offline and retrying",
				    "controller", cfg.join_url, "error", jerr, NULL);
		else
			es_log_info("agent", "joined", "node", cfg.node_name, "cert",
				    cfg.cert, NULL);
	}
	rc = es_agent_new(&cfg, &a, err, sizeof(err));
	if (rc != ES_OK) {
		es_log_error("agent", "cannot start", "error", err, NULL);
		/* A database newer than this build or of another program is not
		 * damaged and is not replaced: restarting cannot fix it either. */
		code = (rc == ES_ERR_INVAL || rc == ES_ERR_TLS ||
			rc == ES_ERR_UNSUPPORTED) ? 2 : 1;
		goto cleanup;
	}
	if (es_agent_run(a, &stop_flag) != ES_OK) {
		es_log_error("agent", "the event loop failed", NULL);
		code = 1;
	}
cleanup:
	es_agent_free(a);
	es_agent_config_free(&cfg);
	return code;
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static long long jint(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? (long long)v->valuedouble : 0;
}

static const cJSON *jget(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static void print_table(const cJSON *st)
{
	const cJSON *node = jget(st, "node"), *sync = jget(st, "sync");
	const cJSON *status = jget(node, "status"), *ag = jget(status, "agent");
	const cJSON *c, *o;

	printf("NODE         %s\n", jstr(jget(node, "metadata"), "name"));
	if (!strcmp(jstr(sync, "state"), "disabled")) {
		printf("CONTROLLER   (none: offline only)\n");
	} else {
		printf("CONTROLLER   %s\n", jstr(sync, "url"));
		if (cJSON_IsNumber(jget(sync, "nextDialInMs")))
			printf("SYNC         %s (not connected: next dial in %.1f s)\n",
			       jstr(sync, "state"), (double)jint(sync, "nextDialInMs") / 1000);
		else
			printf("SYNC         %s%s\n", jstr(sync, "state"),
			       cJSON_IsTrue(jget(sync, "connected")) ? " (connected)" : "");
		printf("LAST CONNECT %s\n", *jstr(sync, "lastConnected") ?
		       jstr(sync, "lastConnected") : "never");
		if (*jstr(sync, "lastError"))
			printf("LAST ERROR   %s\n", jstr(sync, "lastError"));
		printf("LAST ACKED   %lld\n", jint(sync, "lastAckedSeq"));
		printf("RECONNECTS   %lld\n", jint(sync, "reconnects"));
	}
	if (ag) {
		printf("OUTBOX       %lld queued, %lld dropped\n",
		       jint(ag, "outboxDepth"), jint(ag, "reportsDropped"));
		printf("DESIRED RV   %lld\n", jint(ag, "desiredResourceVersion"));
		printf("INTERVAL     %llds\n", jint(ag, "intervalSeconds"));
	}
	printf("\n%-20s %-8s %-22s %-21s %s\n", "CONDITION", "STATUS", "REASON",
	       "SINCE", "MESSAGE");
	cJSON_ArrayForEach(c, jget(status, "conditions"))
		printf("%-20s %-8s %-22s %-21s %s\n", jstr(c, "type"),
		       jstr(c, "status"), jstr(c, "reason"),
		       jstr(c, "lastTransitionTime"), jstr(c, "message"));
	printf("\n%-16s %-24s %-10s %-9s %-8s %s\n", "KIND", "NAME", "GENERATION",
	       "OBSERVED", "APPLIED", "REASON");
	cJSON_ArrayForEach(o, jget(status, "objects")) {
		const cJSON *ap = NULL, *cc;

		cJSON_ArrayForEach(cc, jget(o, "conditions"))
			if (!strcmp(jstr(cc, "type"), "Applied"))
				ap = cc;
		printf("%-16s %-24s %-10lld %-9lld %-8s %s\n", jstr(o, "kind"),
		       jstr(o, "name"), jint(o, "generation"),
		       jint(o, "observedGeneration"), ap ? jstr(ap, "status") : "",
		       ap ? jstr(ap, "reason") : "");
	}
}

/* A member of the state document: what it must be, for the message. */
typedef struct shape {
	const char *path;   /* dotted, from the document's root */
	int type;           /* cJSON_Object, cJSON_Array or cJSON_String */
	int required;
} shape;

/* What print_table reads, and so what the agent's /v1/state document
 * {node, desired, sync} (agent/runtime/agent.h) must look like. */
static const shape state_shape[] = {
	{ "node", cJSON_Object, 1 },
	{ "node.metadata", cJSON_Object, 1 },
	{ "node.metadata.name", cJSON_String, 1 },
	{ "node.status", cJSON_Object, 0 },
	{ "node.status.agent", cJSON_Object, 0 },
	{ "node.status.conditions", cJSON_Array, 0 },
	{ "node.status.objects", cJSON_Array, 0 },
	{ "desired", cJSON_Array, 0 },
	{ "sync", cJSON_Object, 1 },
	{ "sync.state", cJSON_String, 1 },
};

/* The member at the dotted path, or NULL. */
static const cJSON *member(const cJSON *doc, const char *path)
{
	char key[64];
	const char *p = path;

	while (doc && *p) {
		size_t n = strcspn(p, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		doc = cJSON_IsObject(doc) ? jget(doc, key) : NULL;
		p += n + (p[n] == '.');
	}
	return doc;
}

/* 0 when doc has the shape of the agent's state, else -1 with why set to
 * what is wrong. */
static int check_state(const cJSON *doc, char *why, size_t whysz)
{
	size_t i;

	if (!cJSON_IsObject(doc)) {
		snprintf(why, whysz, "not a JSON object");
		return -1;
	}
	for (i = 0; i < sizeof(state_shape) / sizeof(state_shape[0]); i++) {
		const shape *s = &state_shape[i];
		const cJSON *v = member(doc, s->path);
		const char *want = s->type == cJSON_Object ? "an object"
				   : s->type == cJSON_Array ? "an array" : "a string";

		if (!v && !s->required)
			continue;
		if (!v || (v->type & 0xff) != s->type) {
			snprintf(why, whysz, "\"%s\" is %s, not %s", s->path,
				 v ? "of another type" : "missing", want);
			return -1;
		}
	}
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	es_agent_config cfg;
	es_http_opts http = { .user_agent = PROG "/" ES_VERSION,
			      .timeout_ms = STATUS_TIMEOUT_MS };
	es_http_resp resp = { 0 };
	es_addr addr;
	char **args = NULL, err[768] = "", *url = NULL;
	const char *output = "table";
	cJSON *doc = NULL;
	int i, nargs = 0, code = 0;

	memset(&cfg, 0, sizeof(cfg));
	args = calloc((size_t)argc + 1, sizeof(*args));
	if (!args) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (i = 0; i < argc; i++) {
		if (i >= 2 && (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output"))) {
			if (i + 1 >= argc) {
				fprintf(stderr, PROG ": %s: expected table or json\n", argv[i]);
				code = 2;
				goto cleanup;
			}
			output = argv[++i];
		} else if (i >= 2 && !strncmp(argv[i], "-o=", 3)) {
			output = argv[i] + 3;
		} else if (i >= 2 && !strncmp(argv[i], "--output=", 9)) {
			output = argv[i] + 9;
		} else {
			args[nargs++] = argv[i];
		}
	}
	if (strcmp(output, "table") && strcmp(output, "json")) {
		fprintf(stderr, PROG ": -o: \"%s\": expected table or json\n", output);
		code = 2;
		goto cleanup;
	}
	if (es_agent_config_load(&cfg, nargs, args, 2, NULL, NULL, err,
				 sizeof(err)) != ES_OK) {
		fprintf(stderr, PROG ": %s\n", err);
		code = 2;
		goto cleanup;
	}
	if (!cfg.http_listen || !*cfg.http_listen) {
		fprintf(stderr, PROG ": http-listen: empty, so the agent has no "
			"local endpoint to query\n");
		code = 2;
		goto cleanup;
	}
	if (es_addr_parse("http-listen", cfg.http_listen, 0, &addr, err,
			  sizeof(err)) != ES_OK) {
		fprintf(stderr, PROG ": %s\n", err);
		code = 2;
		goto cleanup;
	}
	/* an IP literal listen address is a URL authority as it is */
	if (asprintf(&url, "http://%s/v1/state", cfg.http_listen) < 0) {
		url = NULL;
		fprintf(stderr, PROG ": out of memory\n");
		code = 1;
		goto cleanup;
	}
	if (es_http_request(&http, "GET", url, NULL, 0, &resp, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, PROG ": %s\n", err);
		code = 1;
		goto cleanup;
	}
	if (resp.status != 200) {
		/* A Status object names the problem (a 503 while its database
		 * cannot be read). */
		const char *why = NULL;

		if (es_json_parse(resp.body, resp.body_len, ES_JSON_MAX_DEPTH, &doc,
				  NULL, 0) == ES_OK)
			why = jstr(doc, "message");
		fprintf(stderr, PROG ": %s: the agent answered HTTP %d%s%s\n", url,
			resp.status, why && *why ? ": " : "", why ? why : "");
		code = 1;
		goto cleanup;
	}
	if (es_json_parse(resp.body, resp.body_len, ES_JSON_MAX_DEPTH, &doc, err,
			  sizeof(err)) != ES_OK) {
		fprintf(stderr, PROG ": %s: the answer is not JSON: %s\n", url, err);
		code = 1;
		goto cleanup;
	}
	if (check_state(doc, err, sizeof(err)) != 0) {
		fprintf(stderr, PROG ": %s: not the agent's state: %s\n", url, err);
		code = 1;
		goto cleanup;
	}
	if (!strcmp(output, "json")) {
		char *pretty = cJSON_Print(doc);

		if (!pretty) {
			fprintf(stderr, PROG ": out of memory\n");
			code = 1;
			goto cleanup;
		}
		printf("%s\n", pretty);
		free(pretty);
	} else {
		print_table(doc);
	}
cleanup:
	cJSON_Delete(doc);
	es_http_resp_free(&resp);
	free(url);
	free(args);
	es_agent_config_free(&cfg);
	return code;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;
	int code = es_cli_common(argc, argv, PROG, usage);

	if (code >= 0)
		return code;
	if (es_cli_has_help(argc, argv, 2)) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "run"))
		return cmd_run(argc, argv);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc, argv);
	if (!strcmp(cmd, "join"))
		return cmd_join(argc, argv);
	if (!strcmp(cmd, "status"))
		return cmd_status(argc, argv);
	fprintf(stderr, PROG ": unknown command \"%s\" (run, join, check or status; see --help)\n",
		cmd);
	return 2;
}
