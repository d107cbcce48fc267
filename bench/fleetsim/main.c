/*
 * main.c - edgesync-fleetsim: flags, the event loop, signals, the summary
 * (fleetsim.h has the parts). A benchmark tool: not installed, not
 * packaged.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fleetsim.h"
#include "fsim_certs.h"

#define PROG "edgesync-fleetsim"

static volatile sig_atomic_t want_summary, want_stop, want_mark;
static volatile int64_t mark_at_ms;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		want_summary = 1;
	else if (sig == SIGUSR2) {
		mark_at_ms = es_time_mono_ms(); /* clock_gettime: async-signal-safe */
		want_mark = 1;
	} else
		want_stop = 1;
}

static const char usage[] =
	"Usage: " PROG " --ca-cert FILE --ca-key FILE --cert-dir DIR [flags]\n"
	"\n"
	"Simulates --nodes edgesync agents in one process: each a mutual-TLS\n"
	"WebSocket connection to the controller with its own certificate\n"
	"(spiffe://<trust-domain>/node/<prefix>-NNNNN, issued by the CA and\n"
	"cached in --cert-dir/<CA digest>/), speaking the agent's protocol:\n"
	"hello, desiredAck for every desired, a snapshot, then (version 1)\n"
	"merge patches every --interval seconds (with jitter), replayed from\n"
	"--data (snapshot.json, patches.jsonl), or (version 2) the deltas and\n"
	"events a real agent sent after its snapshot, at the captured gaps\n"
	"(with jitter; --interval unused), replayed from --data/v2\n"
	"(snapshot.json, reports.jsonl), compressed when the controller agrees.\n"
	"Like the agent it asks for 4096-byte TLS records and resumes its TLS\n"
	"session (ticket) on the next dial, and redials as the agent does: full\n"
	"jitter backoff (base 1 s, cap 60 s), a come-back-later (Overloaded,\n"
	"retryAfterSeconds R) after a random time in [R, 2R], each redial to the\n"
	"next controller in the node's order. Prints JSON lines on stdout:\n"
	"a summary on SIGUSR1 and at the end; SIGUSR2 sets the marker that\n"
	"fan-out (desired received) and arrival (welcome) times count from.\n"
	"\n"
	"  --host ADDR          controller address [127.0.0.1]\n"
	"  --port N             controller agent port [7443]\n"
	"  --controller URL     a controller, wss://ADDR:PORT (repeat it, or a\n"
	"                       comma-separated list; replaces --host/--port): as\n"
	"                       the agent's controller-url list, each redial goes to\n"
	"                       the next in the node's order (--controller-order)\n"
	"  --controller-order O as the agent's setting: node (each node its own\n"
	"                       order, by rendezvous hashing of its name and the\n"
	"                       URLs, wss://ADDR:PORT) or listed (node i starts at\n"
	"                       URL (first + i) mod count, then the next) [node]\n"
	"  --server-name NAME   name its certificate must carry [localhost]\n"
	"  --ca-cert FILE       CA certificate: signs nodes, verifies the controller\n"
	"  --ca-key FILE        CA private key\n"
	"  --cert-dir DIR       node certificate cache\n"
	"  --trust-domain TD    SPIFFE trust domain [edgesync.local]\n"
	"  --data DIR           report fixture [the source tree's bench/fleetsim/data]\n"
	"  --prefix P           node name prefix [sim]\n"
	"  --nodes N            simulated nodes (1..200000) [100]\n"
	"  --first I            index of the first node: nodes I..I+N-1 (several\n"
	"                       simulator processes share one fleet) [0]\n"
	"  --samples            summaries carry every latency sample (merging)\n"
	"  --duration S         seconds to run, then print the summary and exit [60]\n"
	"  --protocol V         protocol version offered, 1 or 2 [2]\n"
	"  --no-compress        version 2: do not offer compressed messages\n"
	"  --speedup F          version 2: replay F times faster than captured [1]\n"
	"  --interval S         version 1: seconds between state reports [10]\n"
	"  --jitter F           report interval jitter, fraction of it (0..1) [0.1]\n"
	"  --ramp R             first connections per second [200]\n"
	"  --nodes-out FILE     at exit, one JSON line per node (seq, acks, rv, the\n"
	"                       reports written: ackedSeqs, acknowledged on the\n"
	"                       session that wrote them, and unackedSeqs)\n"
	"  --certs-only         issue the missing node certificates, then exit\n"
	"\n"
	"Raises its open-file limit to the hard limit; needs --nodes + 64\n"
	"descriptors. Exit status: 0 done, 1 runtime failure, 2 usage.\n";

static int parse_num(const char *flag, const char *v, double lo, double hi, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || *end || d < lo || d > hi) {
		fprintf(stderr, PROG ": %s: \"%s\" is not a number in %g..%g\n", flag, v, lo,
			hi);
		return -1;
	}
	*out = d;
	return 0;
}

/* Appends the controllers of list (comma-separated wss://ADDR:PORT, or
 * ADDR:PORT) to o->urls. Returns 0, or -1 with the reason printed. */
static int parse_urls(const char *list, fsim_opts *o)
{
	const char *p = list;

	while (*p) {
		size_t len = strcspn(p, ",");
		char one[300], *colon, *end;
		const char *h;
		long port;

		if (len == 0 || len >= sizeof(one))
			goto bad;
		memcpy(one, p, len);
		one[len] = 0;
		h = strncmp(one, "wss://", 6) == 0 ? one + 6 : one;
		colon = strrchr(h, ':');
		if (!colon || colon == h || strchr(colon, '/'))
			goto bad;
		*colon = 0;
		port = strtol(colon + 1, &end, 10);
		if (*end || port < 1 || port > 65535 || strlen(h) >= sizeof(o->urls[0].host))
			goto bad;
		if (o->nurls == FSIM_MAX_URLS) {
			fprintf(stderr, PROG ": --controller: more than %d controllers\n",
				FSIM_MAX_URLS);
			return -1;
		}
		snprintf(o->urls[o->nurls].host, sizeof(o->urls[0].host), "%s", h);
		o->urls[o->nurls].port = (int)port;
		snprintf(o->urls[o->nurls].text, sizeof(o->urls[0].text), "wss://%s:%ld", h,
			 port);
		o->nurls++;
		p += len;
		if (*p == ',')
			p++;
		continue;
bad:
		fprintf(stderr, PROG ": --controller: \"%.*s\" is not wss://ADDR:PORT\n",
			(int)len, p);
		return -1;
	}
	return 0;
}

static int parse_flags(int argc, char **argv, fsim_opts *o)
{
	static const struct option lo[] = {
		{ "host", 1, 0, 'H' },     { "port", 1, 0, 'p' },
		{ "server-name", 1, 0, 'S' }, { "ca-cert", 1, 0, 'c' },
		{ "ca-key", 1, 0, 'k' },   { "cert-dir", 1, 0, 'C' },
		{ "trust-domain", 1, 0, 'T' }, { "data", 1, 0, 'D' },
		{ "prefix", 1, 0, 'P' },   { "nodes", 1, 0, 'n' },
		{ "duration", 1, 0, 'd' }, { "interval", 1, 0, 'i' },
		{ "jitter", 1, 0, 'j' },   { "ramp", 1, 0, 'r' },
		{ "nodes-out", 1, 0, 'O' }, { "certs-only", 0, 0, 'X' },
		{ "protocol", 1, 0, 'V' }, { "no-compress", 0, 0, 'Z' },
		{ "speedup", 1, 0, 'U' },
		{ "controller", 1, 0, 'L' }, { "first", 1, 0, 'F' },
		{ "controller-order", 1, 0, 'R' },
		{ "samples", 0, 0, 'A' },
		{ "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	double v;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'H': o->url_host = optarg; break;
		case 'S': o->server_name = optarg; break;
		case 'c': o->ca_cert = optarg; break;
		case 'k': o->ca_key = optarg; break;
		case 'C': o->cert_dir = optarg; break;
		case 'T': o->trust_domain = optarg; break;
		case 'D': o->data_dir = optarg; break;
		case 'P': o->prefix = optarg; break;
		case 'O': o->nodes_out = optarg; break;
		case 'X': o->certs_only = 1; break;
		case 'Z': o->compress = 0; break;
		case 'A': o->samples = 1; break;
		case 'L':
			if (parse_urls(optarg, o) != 0)
				return -1;
			break;
		case 'R':
			if (strcmp(optarg, "node") && strcmp(optarg, "listed")) {
				fprintf(stderr, PROG ": --controller-order: \"%s\" is not "
					"node or listed\n", optarg);
				return -1;
			}
			o->listed = !strcmp(optarg, "listed");
			break;
		case 'F':
			if (parse_num("--first", optarg, 0, 1000000, &v))
				return -1;
			o->first = (int)v;
			break;
		case 'U':
			if (parse_num("--speedup", optarg, 0.01, 1000, &o->speedup))
				return -1;
			break;
		case 'V':
			if (parse_num("--protocol", optarg, 1, 2, &v))
				return -1;
			o->protocol = (int)v;
			break;
		case 'p':
			if (parse_num("--port", optarg, 1, 65535, &v))
				return -1;
			o->port = (int)v;
			break;
		case 'n':
			if (parse_num("--nodes", optarg, 1, 200000, &v))
				return -1;
			o->nodes = (int)v;
			break;
		case 'd':
			if (parse_num("--duration", optarg, 0.1, 86400, &o->duration_s))
				return -1;
			break;
		case 'i':
			if (parse_num("--interval", optarg, 0.05, 3600, &o->interval_s))
				return -1;
			break;
		case 'j':
			if (parse_num("--jitter", optarg, 0, 1, &o->jitter))
				return -1;
			break;
		case 'r':
			if (parse_num("--ramp", optarg, 0.1, 1e6, &o->ramp))
				return -1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fputs(usage, stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument \"%s\"\n", argv[optind]);
		return -1;
	}
	if (o->nurls == 0) {
		snprintf(o->urls[0].host, sizeof(o->urls[0].host), "%s", o->url_host);
		o->urls[0].port = o->port;
		snprintf(o->urls[0].text, sizeof(o->urls[0].text), "wss://%s:%d",
			 o->url_host, o->port);
		o->nurls = 1;
	}
	if (!o->ca_cert || !o->ca_key || !o->cert_dir) {
		fprintf(stderr, PROG ": --ca-cert, --ca-key and --cert-dir are required\n");
		return -1;
	}
	return 0;
}

/* Raises RLIMIT_NOFILE to its hard limit; fails when that is below need. */
static int raise_nofile(int need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)need) {
		fprintf(stderr, PROG ": --nodes needs %d open files, the hard limit "
			"(ulimit -Hn) is %llu\n", need, (unsigned long long)rl.rlim_cur);
		return -1;
	}
	return 0;
}

static void summary(fsim *s, const char *why)
{
	fsim_gauges g = { s->o.nodes, s->ready, 0, 0, s->tcp_tx_closed, s->tcp_rx_closed };

	fsim_conn_tcp_bytes(s, &g.tcp_tx, &g.tcp_rx);
	fsim_stats_print(&s->st, stdout, why, &g, es_time_mono_ms(), s->o.samples);
}

static void write_nodes(fsim *s)
{
	FILE *f = fopen(s->o.nodes_out, "we");

	if (!f) {
		fprintf(stderr, PROG ": %s: %s\n", s->o.nodes_out, strerror(errno));
		return;
	}
	for (int i = 0; i < s->o.nodes; i++) {
		fsim_node *n = &s->nodes[i];

		fprintf(f, "{\"node\":\"%s\",\"streamId\":\"%s\",\"ready\":%s,"
			"\"welcomes\":%d,\"nextSeq\":%lld,\"ackedSeq\":%lld,"
			"\"unackedSeq\":%lld,\"resourceVersion\":%lld,", n->name,
			n->stream_id, n->state == FS_READY ? "true" : "false", n->welcomes,
			(long long)n->next_seq, (long long)n->acked_seq,
			(long long)n->unacked_seq, (long long)n->rv);
		/* the reports written, by whether an ack of their session
		 * covered them */
		for (int a = 1; a >= 0; a--) {
			int k = 0;

			fprintf(f, "\"%s\":[", a ? "ackedSeqs" : "unackedSeqs");
			for (int j = 0; j < n->nwrote; j++)
				if (n->wrote[j].acked == a)
					fprintf(f, k++ ? ",%lld" : "%lld",
						(long long)n->wrote[j].seq);
			fputs("],", f);
		}
		fprintf(f, "\"writtenNotListed\":%lld}\n", (long long)n->wrote_dropped);
	}
	fclose(f);
}

static void tick(lws_sorted_usec_list_t *sul)
{
	fsim *s = lws_container_of(sul, fsim, sul_tick);
	static int64_t last;
	int64_t now = es_time_mono_ms();

	if (want_mark) {
		want_mark = 0;
		fsim_stats_mark(&s->st, mark_at_ms);
	}
	if (want_summary) {
		want_summary = 0;
		summary(s, "signal");
	}
	if (want_stop || now >= s->end_ms) {
		s->stopping = 1;
		lws_cancel_service(s->ctx); /* wake the loop to leave it */
		return;
	}
	fsim_conn_tick(s, now, last ? (double)(now - last) / 1000.0 : 0);
	last = now;
	lws_sul_schedule(s->ctx, 0, &s->sul_tick, tick, FSIM_TICK_MS * LWS_US_PER_MS);
}

int main(int argc, char **argv)
{
	static fsim sim;
	fsim *s = &sim;
	struct lws_context_creation_info info;
	struct sigaction sa;
	char err[512], stream[32];
	double t0;
	int issued, rc = 1;

	s->o = (fsim_opts){ .url_host = "127.0.0.1", .port = 7443,
			    .server_name = "localhost",
			    .trust_domain = "edgesync.local",
			    .data_dir = FSIM_DEFAULT_DATA, .prefix = "sim", .nodes = 100,
			    .duration_s = 60, .interval_s = 10, .jitter = 0.1,
			    .ramp = 200, .protocol = 2, .compress = 1,
			    .speedup = 1 };
	/* first: a SIGUSR1 that comes early must not end the process */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (parse_flags(argc, argv, &s->o) != 0)
		return 2;
	if (fsim_replay_load(&s->replay, s->o.data_dir, s->o.protocol, err, sizeof(err)) !=
	    ES_OK) {
		fprintf(stderr, PROG ": %s\n", err);
		return 2;
	}
	t0 = fsim_now_msf();
	if (fsim_certs_ensure(s->o.cert_dir, s->o.ca_cert, s->o.ca_key, s->o.trust_domain,
			      s->o.prefix, s->o.first, s->o.nodes, s->cert_dir, sizeof(s->cert_dir),
			      &issued, err, sizeof(err)) != ES_OK) {
		fprintf(stderr, PROG ": certificates: %s\n", err);
		goto cleanup;
	}
	printf("{\"type\":\"certs\",\"dir\":\"%s\",\"issued\":%d,\"reused\":%d,"
	       "\"seconds\":%.3f}\n", s->cert_dir, issued, s->o.nodes - issued,
	       (fsim_now_msf() - t0) / 1000.0);
	if (s->o.certs_only) {
		rc = 0;
		goto cleanup;
	}
	if (raise_nofile(s->o.nodes + 64) != 0) {
		rc = 2;
		goto cleanup;
	}
	printf("{\"type\":\"fixture\",\"protocol\":%d,\"snapshotBytes\":%zu,"
	       "\"patches\":%zu,\"records\":%zu,\"recordSeconds\":%.1f}\n", s->o.protocol,
	       s->replay.snapshot.bytes, s->replay.npatches, s->replay.nrecs,
	       s->replay.recs_s);
	fflush(stdout);
	if (!(s->nodes = calloc((size_t)s->o.nodes, sizeof(*s->nodes)))) {
		fprintf(stderr, PROG ": out of memory\n");
		goto cleanup;
	}
	snprintf(stream, sizeof(stream), "%08lx", (unsigned long)time(NULL) ^
		 ((unsigned long)getpid() << 16));
	for (int i = 0; i < s->o.nodes; i++) {
		fsim_node *n = &s->nodes[i];

		n->sim = s;
		n->idx = i;
		n->next_seq = 1;
		n->pending_rec = -1;
		fsim_node_name(s->o.prefix, s->o.first + i, n->name, sizeof(n->name));
		n->url = fsim_url_first(&s->o, s->o.first + i, n->name);
		snprintf(n->stream_id, sizeof(n->stream_id), "fleetsim-%s-%d", stream,
			 s->o.first + i);
	}

	lws_set_log_level(LLL_ERR, NULL);
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT |
		       LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	/* No fd_limit_per_thread: below the open-file limit it makes
	 * libwebsockets look a socket's connection up by a linear scan of
	 * all of them (a quarter of this process's time at 10 000 nodes);
	 * without it the lookup is by descriptor, sized by the limit. */
	/* timeouts: libwebsockets' defaults, as edgesync-agent has them */
	if (!(s->ctx = lws_create_context(&info))) {
		fprintf(stderr, PROG ": libwebsockets could not start\n");
		goto cleanup;
	}
	t0 = fsim_now_msf();
	if (fsim_conn_vhosts(s) != 0)
		goto cleanup;
	printf("{\"type\":\"vhosts\",\"seconds\":%.3f}\n", (fsim_now_msf() - t0) / 1000.0);
	fflush(stdout);
	s->start_ms = es_time_mono_ms();
	s->end_ms = s->start_ms + (int64_t)(s->o.duration_s * 1000.0);
	fsim_stats_init(&s->st, s->start_ms);
	lws_sul_schedule(s->ctx, 0, &s->sul_tick, tick, 1);
	while (!s->stopping && lws_service(s->ctx, 0) >= 0)
		;
	summary(s, "end");
	if (s->o.nodes_out)
		write_nodes(s);
	rc = 0;
cleanup:
	if (s->ctx)
		lws_context_destroy(s->ctx);
	fsim_conn_free(s);
	free(s->nodes);
	fsim_stats_free(&s->st);
	fsim_replay_free(&s->replay);
	return rc;
}
