/*
 * fsim_stats.h - what the fleet simulator measures, and its summary: one
 * JSON object per line (JSON lines), printed at exit and on SIGUSR1.
 * Times are milliseconds of CLOCK_MONOTONIC.
 */
#ifndef FSIM_STATS_H
#define FSIM_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A growing list of samples (milliseconds). Zero it to start. */
typedef struct fsim_samples {
	double *v;
	size_t n, cap;
} fsim_samples;

typedef struct fsim_stats {
	int64_t start_ms;        /* the simulator started */
	int64_t window_ms;       /* the current window started (last summary) */
	/* counters since the start */
	int64_t dials, dial_failures, welcomes, reconnects, disconnects;
	int64_t reports_sent, snapshots_sent, reports_acked, resyncs;
	int64_t events_sent;     /* event reports (version 2) */
	int64_t sessions_v2, sessions_deflate; /* welcomes of version 2, with deflate */
	int64_t desired_rx, desired_acks, errors_rx;
	int64_t overloaded_rx;   /* Overloaded errors (come back later) */
	int64_t ws_tx_bytes, ws_rx_bytes, msgs_tx, msgs_rx;
	int64_t all_ready_ms;    /* first time every node was ready, -1: not yet */
	/* the current window (reset by each summary) */
	fsim_samples ack;        /* report send -> ack */
	int64_t win_reports_acked;
	/* since the start */
	fsim_samples connect;    /* dial -> welcome of each successful dial */
	/* since the last marker (SIGUSR2) */
	int64_t marker_ms;       /* -1: no marker */
	fsim_samples fanout;     /* marker -> desired change set received (and
				  * its desiredAck queued), per node */
	int64_t mark_welcomes;   /* welcomes since the marker */
	int64_t mark_first_welcome_ms, mark_last_welcome_ms; /* after the marker */
} fsim_stats;

/* What the summary shows of the simulator's present state. */
typedef struct fsim_gauges {
	int nodes;               /* simulated nodes */
	int ready;               /* nodes with a session (welcome received) */
	int64_t tcp_tx, tcp_rx;  /* socket bytes of the open connections
				  * (TCP_INFO bytes_acked, bytes_received) */
	int64_t tcp_tx_closed, tcp_rx_closed; /* ... of connections that ended */
} fsim_gauges;

/* Starts st at now (zeroes it). */
void fsim_stats_init(fsim_stats *st, int64_t now);
/* Frees st's samples. NULL-safe. */
void fsim_stats_free(fsim_stats *st);
/* Appends ms to s; a sample that cannot be stored is dropped (counted by
 * the caller's counters). */
void fsim_samples_add(fsim_samples *s, double ms);
/* Sets the marker at now: forgets the fan-out and arrival samples. */
void fsim_stats_mark(fsim_stats *st, int64_t now);
/* Records a welcome at now. */
void fsim_stats_welcome(fsim_stats *st, int64_t now);
/*
 * Prints one summary line to f: {"type":"summary","why":why,"t":seconds
 * since the start, "nodes","ready", counters (eventsSent, sessionsV2,
 * sessionsDeflate among them), "connectAllSeconds",
 * "connectMs" {n,p50,p99,max}, "window" {seconds, reportsAcked,
 * "ackMs" {n,p50,p99,max}}, "marker" {secondsAgo, fanoutMs {n,p50,p99,max},
 * welcomes, firstWelcomeSeconds, lastWelcomeSeconds}, "bytes" {wsTx, wsRx,
 * tcpTxOpen, tcpRxOpen, tcpTxClosed, tcpRxClosed}}, then starts a new
 * window at now. With samples set, also "samples" {connectMs, ackMs,
 * fanoutMs}: every sample of those three (milliseconds, sorted), so that
 * the summaries of several simulator processes can be merged into
 * percentiles of their union.
 */
void fsim_stats_print(fsim_stats *st, FILE *f, const char *why, const fsim_gauges *g,
		      int64_t now, int samples);

/* Adds the bytes the kernel counts on TCP socket fd (TCP_INFO: bytes
 * acknowledged by the peer, bytes received; RFC 4898 names) to *tx and
 * *rx. Returns 0, or -1 when fd is not a TCP socket (nothing added). */
int fsim_tcp_bytes(int fd, int64_t *tx, int64_t *rx);

#endif
