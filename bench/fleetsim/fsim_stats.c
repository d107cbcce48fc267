/*
 * fsim_stats.c - the fleet simulator's samples and summary (fsim_stats.h).
 */
#include "fsim_stats.h"

#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/tcp.h>

#include "../quantile.h"

void fsim_stats_init(fsim_stats *st, int64_t now)
{
	memset(st, 0, sizeof(*st));
	st->start_ms = st->window_ms = now;
	st->all_ready_ms = -1;
	st->marker_ms = -1;
}

static void samples_free(fsim_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void fsim_stats_free(fsim_stats *st)
{
	if (!st)
		return;
	samples_free(&st->ack);
	samples_free(&st->connect);
	samples_free(&st->fanout);
}

void fsim_samples_add(fsim_samples *s, double ms)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		double *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = ms;
}

void fsim_stats_mark(fsim_stats *st, int64_t now)
{
	st->marker_ms = now;
	st->fanout.n = 0;
	st->mark_welcomes = 0;
	st->mark_first_welcome_ms = st->mark_last_welcome_ms = -1;
}

void fsim_stats_welcome(fsim_stats *st, int64_t now)
{
	st->welcomes++;
	if (st->marker_ms < 0)
		return;
	st->mark_welcomes++;
	if (st->mark_first_welcome_ms < 0)
		st->mark_first_welcome_ms = now;
	st->mark_last_welcome_ms = now;
}

/* Prints {"n":..,"p50":..,"p99":..,"max":..} of s (sorted in place);
 * nearest-rank percentiles. */
static void print_dist(FILE *f, const char *key, fsim_samples *s)
{
	if (s->n == 0) {
		fprintf(f, "\"%s\":{\"n\":0}", key);
		return;
	}
	bench_sort(s->v, s->n);
	fprintf(f, "\"%s\":{\"n\":%zu,\"p50\":%.2f,\"p99\":%.2f,\"max\":%.2f}", key, s->n,
		bench_quantile(s->v, s->n, 50), bench_quantile(s->v, s->n, 99),
		s->v[s->n - 1]);
}

static double secs(int64_t from, int64_t to)
{
	return (double)(to - from) / 1000.0;
}

/* Prints "key":[v,...] of s (sorted by print_dist before). */
static void print_all(FILE *f, const char *key, const fsim_samples *s)
{
	fprintf(f, "\"%s\":[", key);
	for (size_t i = 0; i < s->n; i++)
		fprintf(f, i ? ",%.2f" : "%.2f", s->v[i]);
	fputc(']', f);
}

void fsim_stats_print(fsim_stats *st, FILE *f, const char *why, const fsim_gauges *g,
		      int64_t now, int samples)
{
	fprintf(f, "{\"type\":\"summary\",\"why\":\"%s\",\"t\":%.3f,\"nodes\":%d,"
		"\"ready\":%d,\"dials\":%lld,\"dialFailures\":%lld,\"welcomes\":%lld,"
		"\"reconnects\":%lld,\"disconnects\":%lld,\"reportsSent\":%lld,"
		"\"snapshotsSent\":%lld,\"reportsAcked\":%lld,\"resyncs\":%lld,"
		"\"desiredReceived\":%lld,\"desiredAcks\":%lld,\"errorsReceived\":%lld,"
		"\"overloadedReceived\":%lld,"
		"\"eventsSent\":%lld,\"sessionsV2\":%lld,\"sessionsDeflate\":%lld,",
		why, secs(st->start_ms, now), g->nodes, g->ready, (long long)st->dials,
		(long long)st->dial_failures, (long long)st->welcomes,
		(long long)st->reconnects, (long long)st->disconnects,
		(long long)st->reports_sent, (long long)st->snapshots_sent,
		(long long)st->reports_acked, (long long)st->resyncs,
		(long long)st->desired_rx, (long long)st->desired_acks,
		(long long)st->errors_rx, (long long)st->overloaded_rx,
		(long long)st->events_sent,
		(long long)st->sessions_v2, (long long)st->sessions_deflate);
	if (st->all_ready_ms >= 0)
		fprintf(f, "\"connectAllSeconds\":%.3f,", secs(st->start_ms, st->all_ready_ms));
	else
		fprintf(f, "\"connectAllSeconds\":null,");
	print_dist(f, "connectMs", &st->connect);
	fprintf(f, ",\"window\":{\"seconds\":%.3f,\"reportsAcked\":%lld,",
		secs(st->window_ms, now), (long long)st->win_reports_acked);
	print_dist(f, "ackMs", &st->ack);
	fprintf(f, "},\"marker\":");
	if (st->marker_ms < 0) {
		fprintf(f, "null");
	} else {
		fprintf(f, "{\"secondsAgo\":%.3f,", secs(st->marker_ms, now));
		print_dist(f, "fanoutMs", &st->fanout);
		fprintf(f, ",\"welcomes\":%lld,", (long long)st->mark_welcomes);
		if (st->mark_welcomes > 0)
			fprintf(f, "\"firstWelcomeSeconds\":%.3f,\"lastWelcomeSeconds\":%.3f}",
				secs(st->marker_ms, st->mark_first_welcome_ms),
				secs(st->marker_ms, st->mark_last_welcome_ms));
		else
			fprintf(f, "\"firstWelcomeSeconds\":null,\"lastWelcomeSeconds\":null}");
	}
	fprintf(f, ",\"bytes\":{\"wsTx\":%lld,\"wsRx\":%lld,\"msgsTx\":%lld,\"msgsRx\":%lld,"
		"\"tcpTxOpen\":%lld,\"tcpRxOpen\":%lld,\"tcpTxClosed\":%lld,"
		"\"tcpRxClosed\":%lld}",
		(long long)st->ws_tx_bytes, (long long)st->ws_rx_bytes,
		(long long)st->msgs_tx, (long long)st->msgs_rx, (long long)g->tcp_tx,
		(long long)g->tcp_rx, (long long)g->tcp_tx_closed,
		(long long)g->tcp_rx_closed);
	if (samples) {
		/* each sorted by print_dist above (fan-out: when a marker is set) */
		fputs(",\"samples\":{", f);
		print_all(f, "connectMs", &st->connect);
		fputc(',', f);
		print_all(f, "ackMs", &st->ack);
		fputc(',', f);
		if (st->marker_ms >= 0)
			print_all(f, "fanoutMs", &st->fanout);
		else
			fputs("\"fanoutMs\":[]", f);
		fputc('}', f);
	}
	fputs("}\n", f);
	fflush(f);
	st->window_ms = now;
	st->ack.n = 0;
	st->win_reports_acked = 0;
}

int fsim_tcp_bytes(int fd, int64_t *tx, int64_t *rx)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
		return -1;
	*tx += (int64_t)ti.tcpi_bytes_acked;
	*rx += (int64_t)ti.tcpi_bytes_received;
	return 0;
}
