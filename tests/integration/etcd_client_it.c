/*
 * etcd_client_it.c - drives the controller's etcd client
 * (controller/etcd/etcd_client.h) against a real etcd that
 * test_etcd_client.py started: put, range, txn compare-and-swap, lease
 * expiry, watch (events, progress, a compacted start revision), failover
 * past a dead endpoint, a silent endpoint (a read-only txn moves on, a
 * writing one is not sent twice) and the error when none answers.
 *
 * Usage: etcd_client_it ENDPOINTS CERT KEY CA DEAD_ENDPOINT
 * ENDPOINTS is comma-separated, the dead one first. Prints one line per
 * check; exits 0 when all held, 1 at the first that did not (saying what).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <libwebsockets.h>

#include "etcd/etcd_client.h"
#include "es_time.h"

static struct lws_context *ctx;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                      \
			fputc('\n', stderr);                               \
			exit(1);                                           \
		}                                                          \
	} while (0)

/* One finished unary call, copied out of the callback. */
typedef struct call {
	int done;
	es_err rc;
	int code, unknown, succeeded;
	int64_t revision, lease, ttl, mod_rev, create_rev, count;
	size_t n_kvs, n_ops;
	char value[256], endpoint[256], error[2048];
	char op0_value[256]; /* a txn's first op, when it was a range */
} call;

static void on_call(void *ud, const es_etcd_result *r)
{
	call *c = ud;

	c->done = 1;
	c->rc = r->rc;
	c->code = r->code;
	c->unknown = r->unknown;
	snprintf(c->endpoint, sizeof(c->endpoint), "%s", r->endpoint);
	snprintf(c->error, sizeof(c->error), "%s", r->error);
	if (!r->resp)
		return;
	c->revision = r->resp->revision;
	c->succeeded = r->resp->succeeded;
	c->lease = r->resp->lease_id;
	c->ttl = r->resp->ttl;
	c->count = r->resp->count;
	c->n_kvs = r->resp->n_kvs;
	c->n_ops = r->resp->n_ops;
	if (r->resp->n_kvs) {
		snprintf(c->value, sizeof(c->value), "%s", r->resp->kvs[0].value);
		c->mod_rev = r->resp->kvs[0].mod_revision;
		c->create_rev = r->resp->kvs[0].create_revision;
	}
	if (r->resp->n_ops && r->resp->ops[0].n_kvs)
		snprintf(c->op0_value, sizeof(c->op0_value), "%s",
			 r->resp->ops[0].kvs[0].value);
}

/* Services the loop until *flag is set or timeout_ms passed. */
static int run_until(const int *flag, int timeout_ms)
{
	int64_t end = es_time_mono_ms() + timeout_ms;

	while (!*flag && es_time_mono_ms() < end)
		lws_service(ctx, 0);
	return *flag;
}

static void wait_call(call *c)
{
	CHECK(run_until(&c->done, 30000), "no callback within 30 s");
}

#define K(s) (s), strlen(s)

/* The watch's events, kept as "PUT key=value@rev" lines. */
typedef struct watch_log {
	int n_events, n_progress, compacted, down, failed;
	int64_t compact_revision;
	char events[4096];
	char error[1024];
} watch_log;

static void on_watch(void *ud, const es_etcd_watch_ev *ev)
{
	watch_log *l = ud;
	size_t used;

	switch (ev->kind) {
	case ES_ETCD_WATCH_EVENTS:
		for (size_t i = 0; i < ev->n_events; i++) {
			const es_etcd_event *e = &ev->events[i];

			used = strlen(l->events);
			snprintf(l->events + used, sizeof(l->events) - used,
				 "%s %s=%s@%lld\n",
				 e->type == ES_ETCD_EV_DELETE ? "DELETE" : "PUT",
				 e->kv.key, e->kv.value, (long long)e->kv.mod_revision);
			l->n_events++;
		}
		break;
	case ES_ETCD_WATCH_PROGRESS:
		l->n_progress++;
		break;
	case ES_ETCD_WATCH_COMPACTED:
		l->compacted = 1;
		l->compact_revision = ev->compact_revision;
		snprintf(l->error, sizeof(l->error), "%s", ev->error);
		break;
	case ES_ETCD_WATCH_DOWN:
		l->down++;
		snprintf(l->error, sizeof(l->error), "%s", ev->error);
		break;
	case ES_ETCD_WATCH_FAILED:
		l->failed = 1;
		snprintf(l->error, sizeof(l->error), "%s", ev->error);
		break;
	}
}

static es_etcd *client(const char *endpoints, const char *cert, const char *key,
		       const char *ca, int timeout_ms, int watch_idle_ms)
{
	static char buf[4][2048];
	static int slot;
	const char *eps[ES_ETCD_MAX_ENDPOINTS];
	char err[512], *save = NULL, *tok, *copy = buf[slot++ % 4];
	es_etcd_opts o;
	es_etcd *e;
	size_t n = 0;

	snprintf(copy, sizeof(buf[0]), "%s", endpoints);
	for (tok = strtok_r(copy, ",", &save); tok && n < ES_ETCD_MAX_ENDPOINTS;
	     tok = strtok_r(NULL, ",", &save))
		eps[n++] = tok;
	memset(&o, 0, sizeof(o));
	o.endpoints = eps;
	o.n_endpoints = n;
	o.cert = cert;
	o.key = key;
	o.ca = ca;
	o.request_timeout_ms = timeout_ms;
	o.watch_idle_ms = watch_idle_ms;
	CHECK(es_etcd_new(ctx, &o, &e, err, sizeof(err)) == ES_OK, "es_etcd_new: %s", err);
	return e;
}

int main(int argc, char **argv)
{
	struct lws_context_creation_info info;
	es_etcd *e, *dead;
	es_etcd_watch *w = NULL;
	watch_log wl, wl2;
	es_etcd_txn t;
	char live[256], pend[8];
	int64_t rev1, rev2 = 0, lease;
	call c;

	if (argc != 6) {
		fprintf(stderr, "usage: etcd_client_it ENDPOINTS CERT KEY CA DEAD_ENDPOINT\n");
		return 2;
	}
	lws_set_log_level(LLL_ERR, NULL);
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS |
		       LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.port = CONTEXT_PORT_NO_LISTEN;
	ctx = lws_create_context(&info);
	CHECK(ctx, "lws_create_context");
	e = client(argv[1], argv[2], argv[3], argv[4], 3000, 0);
	snprintf(live, sizeof(live), "%s", strchr(argv[1], ',') + 1);

	/* put through the list whose first endpoint is dead: failover */
	memset(&c, 0, sizeof(c));
	CHECK(es_etcd_put(e, K("/es/a"), K("v1"), 0, on_call, &c) == ES_OK, "put");
	wait_call(&c);
	CHECK(c.rc == ES_OK, "put: %s", c.error);
	CHECK(!strcmp(c.endpoint, live), "put answered by %s, not %s", c.endpoint, live);
	CHECK(!strcmp(es_etcd_endpoint(e), live), "current endpoint %s", es_etcd_endpoint(e));
	rev1 = c.revision;
	printf("ok put after failover to %s, revision %lld\n", live, (long long)rev1);

	memset(&c, 0, sizeof(c));
	CHECK(es_etcd_range(e, K("/es/a"), NULL, 0, 0, 0, on_call, &c) == ES_OK, "range");
	wait_call(&c);
	CHECK(c.rc == ES_OK && c.n_kvs == 1 && !strcmp(c.value, "v1") &&
	      c.mod_rev == rev1, "range: rc %d n %zu value %s mod %lld (%s)", c.rc,
	      c.n_kvs, c.value, (long long)c.mod_rev, c.error);
	printf("ok range\n");

	/* compare-and-swap on the mod revision: the first wins, the second
	 * sees the value that won through its failure branch */
	for (int round = 0; round < 2; round++) {
		CHECK(es_etcd_txn_init(&t) == ES_OK, "txn init");
		es_etcd_txn_compare(&t, K("/es/a"), ES_ETCD_CMP_MOD, ES_ETCD_EQUAL, rev1, NULL, 0);
		es_etcd_txn_put(&t, 1, K("/es/a"), K(round ? "v3" : "v2"), 0);
		es_etcd_txn_range(&t, 0, K("/es/a"), NULL, 0);
		memset(&c, 0, sizeof(c));
		CHECK(es_etcd_txn_send(e, &t, on_call, &c) == ES_OK, "txn");
		es_etcd_txn_free(&t);
		wait_call(&c);
		CHECK(c.rc == ES_OK, "txn: %s", c.error);
		CHECK(c.succeeded == !round, "txn round %d succeeded=%d", round, c.succeeded);
		if (round)
			CHECK(c.n_ops == 1 && !strcmp(c.op0_value, "v2"),
			      "failed txn read %s", c.op0_value);
		else
			rev2 = c.revision;
	}
	printf("ok txn compare-and-swap (revision %lld wins once)\n", (long long)rev1);

	/* create only if absent: CREATE == 0 */
	for (int round = 0; round < 2; round++) {
		es_etcd_txn_init(&t);
		es_etcd_txn_compare(&t, K("/es/b"), ES_ETCD_CMP_CREATE, ES_ETCD_EQUAL, 0, NULL, 0);
		es_etcd_txn_put(&t, 1, K("/es/b"), K("first"), 0);
		memset(&c, 0, sizeof(c));
		CHECK(es_etcd_txn_send(e, &t, on_call, &c) == ES_OK, "txn");
		es_etcd_txn_free(&t);
		wait_call(&c);
		CHECK(c.rc == ES_OK && c.succeeded == !round, "create-if-absent round %d: %d %s",
		      round, c.succeeded, c.error);
	}
	printf("ok txn create-if-absent\n");

	/* a lease: keepalive while alive; the key goes with it */
	memset(&c, 0, sizeof(c));
	CHECK(es_etcd_lease_grant(e, 2, on_call, &c) == ES_OK, "grant");
	wait_call(&c);
	CHECK(c.rc == ES_OK && c.lease != 0 && c.ttl == 2, "grant: %s", c.error);
	lease = c.lease;
	memset(&c, 0, sizeof(c));
	es_etcd_put(e, K("/es/session"), K("me"), lease, on_call, &c);
	wait_call(&c);
	CHECK(c.rc == ES_OK, "put with lease: %s", c.error);
	memset(&c, 0, sizeof(c));
	es_etcd_lease_keepalive(e, lease, on_call, &c);
	wait_call(&c);
	CHECK(c.rc == ES_OK && c.ttl > 0, "keepalive: %s", c.error);
	{
		int never = 0;

		run_until(&never, 4500);
	}
	memset(&c, 0, sizeof(c));
	es_etcd_range(e, K("/es/session"), NULL, 0, 0, 0, on_call, &c);
	wait_call(&c);
	CHECK(c.rc == ES_OK && c.n_kvs == 0, "the leased key outlived its lease");
	memset(&c, 0, sizeof(c));
	es_etcd_lease_keepalive(e, lease, on_call, &c);
	wait_call(&c);
	CHECK(c.rc == ES_ERR_NOTFOUND && strstr(c.error, "expired"),
	      "keepalive of an expired lease: rc %d %s", c.rc, c.error);
	printf("ok lease expiry: %s\n", c.error);

	/* watch the prefix from rev1: history, then live changes, progress */
	memset(&wl, 0, sizeof(wl));
	es_etcd_prefix_end(K("/es/"), pend);
	CHECK(es_etcd_watch_start(e, K("/es/"), pend, 4, rev1, on_watch, &wl, &w) == ES_OK,
	      "watch");
	CHECK(run_until(&wl.n_events, 10000), "no watch event");
	memset(&c, 0, sizeof(c));
	es_etcd_delete(e, K("/es/b"), NULL, 0, on_call, &c);
	wait_call(&c);
	CHECK(c.rc == ES_OK, "delete: %s", c.error);
	{
		int64_t end = es_time_mono_ms() + 10000;

		while (!strstr(wl.events, "DELETE /es/b") && es_time_mono_ms() < end)
			lws_service(ctx, 0);
	}
	printf("watch events:\n%s", wl.events);
	CHECK(strstr(wl.events, "PUT /es/a=v1@"), "no history event");
	CHECK(strstr(wl.events, "PUT /es/a=v2@"), "no CAS event");
	CHECK(strstr(wl.events, "PUT /es/session=me@"), "no leased put");
	CHECK(strstr(wl.events, "DELETE /es/session="), "no expiry delete");
	CHECK(strstr(wl.events, "DELETE /es/b="), "no live delete");
	CHECK(run_until(&wl.n_progress, 15000), "no progress notification");
	CHECK(es_etcd_watch_next_revision(w) == c.revision + 1,
	      "next revision %lld, not %lld", (long long)es_etcd_watch_next_revision(w),
	      (long long)c.revision + 1);
	printf("ok watch: %d events, %d progress\n", wl.n_events, wl.n_progress);
	es_etcd_watch_cancel(w);

	/* compact; then a watch and a range from before it are refused */
	{
		char body[64];

		snprintf(body, sizeof(body), "{\"revision\":\"%lld\"}", (long long)rev2);
		memset(&c, 0, sizeof(c));
		CHECK(es_etcd_call(e, "kv/compaction", body, 0, on_call, &c) == ES_OK, "compact");
		wait_call(&c);
		CHECK(c.rc == ES_OK, "compaction: %s", c.error);
	}
	memset(&wl2, 0, sizeof(wl2));
	CHECK(es_etcd_watch_start(e, K("/es/"), pend, 4, rev1, on_watch, &wl2, &w) == ES_OK,
	      "watch 2");
	CHECK(run_until(&wl2.compacted, 10000), "no compaction notice (%s)", wl2.error);
	CHECK(wl2.compact_revision == rev2 && wl2.n_events == 0,
	      "compact_revision %lld, not %lld", (long long)wl2.compact_revision,
	      (long long)rev2);
	printf("ok watch from a compacted revision: %s\n", wl2.error);
	es_etcd_watch_cancel(w);
	memset(&c, 0, sizeof(c));
	es_etcd_range(e, K("/es/a"), NULL, 0, rev1, 0, on_call, &c);
	wait_call(&c);
	CHECK(c.rc == ES_ERR_CONFLICT && c.code == ES_ETCD_CODE_OUT_OF_RANGE &&
	      strstr(c.error, live) && strstr(c.error, "compacted"),
	      "range at a compacted revision: rc %d code %d %s", c.rc, c.code, c.error);
	printf("ok range at a compacted revision: %s\n", c.error);

	/* a watch that keeps breaking (silent past watch_idle_ms, which is
	 * shorter than etcd's progress interval) resumes each time from the
	 * revision after the last it delivered: every put is seen once, in
	 * order */
	{
		es_etcd *flaky = client(argv[1], argv[2], argv[3], argv[4], 3000, 250);
		char want[4096] = "", val[16];
		int64_t from;

		memset(&c, 0, sizeof(c));
		es_etcd_range(flaky, K("/es/r"), NULL, 0, 0, 0, on_call, &c);
		wait_call(&c);
		CHECK(c.rc == ES_OK, "range: %s", c.error);
		from = c.revision + 1;
		memset(&wl, 0, sizeof(wl));
		CHECK(es_etcd_watch_start(flaky, K("/es/r"), NULL, 0, from, on_watch, &wl,
					  &w) == ES_OK, "watch 3");
		for (int i = 0; i < 20; i++) {
			int never = 0;

			snprintf(val, sizeof(val), "%d", i);
			memset(&c, 0, sizeof(c));
			es_etcd_put(flaky, K("/es/r"), K(val), 0, on_call, &c);
			wait_call(&c);
			CHECK(c.rc == ES_OK, "put %d: %s", i, c.error);
			snprintf(want + strlen(want), sizeof(want) - strlen(want),
				 "PUT /es/r=%d@%lld\n", i, (long long)c.revision);
			run_until(&never, 120);
		}
		{
			int64_t end = es_time_mono_ms() + 20000;

			while (wl.n_events < 20 && es_time_mono_ms() < end)
				lws_service(ctx, 0);
		}
		CHECK(wl.down > 0, "the watch never broke: the test tests nothing");
		CHECK(!strcmp(wl.events, want), "after %d breaks the watch saw:\n%s\nnot:\n%s",
		      wl.down, wl.events, want);
		printf("ok watch resumed %d times without losing or repeating an event (%s)\n",
		       wl.down, wl.error);
		es_etcd_watch_cancel(w);
		es_etcd_destroy(flaky);
	}

	/* An endpoint that takes the request and never answers (a listening
	 * socket nobody accepts on: the kernel completes the connection), then
	 * the live one: a txn of reads moves on after it was sent and is
	 * answered by the live one; a txn that writes does not (etcd may have
	 * applied it) and its error says so. */
	{
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		char eps[600];
		int hang = socket(AF_INET, SOCK_STREAM, 0);
		es_etcd *h;

		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		CHECK(hang >= 0 && bind(hang, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		      listen(hang, 8) == 0 &&
		      getsockname(hang, (struct sockaddr *)&sa, &sl) == 0, "hanging listener");
		snprintf(eps, sizeof(eps), "http://127.0.0.1:%d,%s", ntohs(sa.sin_port), live);
		h = client(eps, argv[2], argv[3], argv[4], 1000, 0);
		CHECK(es_etcd_txn_init(&t) == ES_OK, "txn init");
		es_etcd_txn_range(&t, 1, K("/es/a"), NULL, 0);
		memset(&c, 0, sizeof(c));
		CHECK(es_etcd_txn_send(h, &t, on_call, &c) == ES_OK, "read-only txn");
		es_etcd_txn_free(&t);
		wait_call(&c);
		CHECK(c.rc == ES_OK && !strcmp(c.endpoint, live),
		      "read-only txn past a silent endpoint: rc %d at %s: %s", c.rc, c.endpoint,
		      c.error);
		printf("ok read-only txn moved past a silent endpoint to %s\n", c.endpoint);

		es_etcd_destroy(h);
		h = client(eps, argv[2], argv[3], argv[4], 1000, 0);
		CHECK(es_etcd_txn_init(&t) == ES_OK, "txn init");
		es_etcd_txn_put(&t, 1, K("/es/hang"), K("v"), 0);
		memset(&c, 0, sizeof(c));
		CHECK(es_etcd_txn_send(h, &t, on_call, &c) == ES_OK, "writing txn");
		es_etcd_txn_free(&t);
		wait_call(&c);
		CHECK(c.rc == ES_ERR_IO && c.unknown && strstr(c.error, "may have applied it"),
		      "writing txn at a silent endpoint: rc %d unknown %d: %s", c.rc, c.unknown,
		      c.error);
		printf("ok writing txn not resent past a silent endpoint: %s\n", c.error);
		es_etcd_destroy(h);
		close(hang);
	}

	/* no endpoint answers: the error names each */
	{
		char eps[600];

		snprintf(eps, sizeof(eps), "%s,%s", argv[5], argv[5]);
		dead = client(eps, argv[2], argv[3], argv[4], 1000, 0);
	}
	memset(&c, 0, sizeof(c));
	es_etcd_range(dead, K("/es/a"), NULL, 0, 0, 0, on_call, &c);
	wait_call(&c);
	CHECK(c.rc == ES_ERR_IO && c.code == ES_ETCD_CODE_UNAVAILABLE &&
	      strstr(c.error, argv[5]) && strchr(c.error, ';'),
	      "unreachable: rc %d code %d %s", c.rc, c.code, c.error);
	printf("ok no endpoint answers: %s\n", c.error);
	memset(&c, 0, sizeof(c));
	es_etcd_put(dead, K("/es/a"), K("x"), 0, on_call, &c);
	es_etcd_destroy(dead); /* its callback must not run */
	{
		int never = 0;

		run_until(&never, 1500);
	}
	CHECK(!c.done, "a callback ran after es_etcd_destroy");
	printf("ok destroy ends requests silently\n");

	es_etcd_destroy(e);
	lws_context_destroy(ctx);
	printf("all passed\n");
	return 0;
}
