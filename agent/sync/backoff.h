/*
 * backoff.h - reconnect delays: exponential backoff with full jitter
 * (proto/PROTOCOL.md, "Errors": the n-th consecutive failed attempt waits a
 * uniformly random time in [0, min(cap, base * 2^n)], base 1 s, cap 60 s; a
 * connection that stayed up for 60 s, or whose first report was
 * acknowledged, resets n; a controller that said come back after R seconds
 * is redialled after a uniformly random time in [R, 2R]).
 */
#ifndef ES_AGENT_BACKOFF_H
#define ES_AGENT_BACKOFF_H

#include <stdint.h>

#define ES_BACKOFF_BASE_MS 1000
#define ES_BACKOFF_CAP_MS 60000
#define ES_BACKOFF_RESET_MS 60000

/* A source of uniformly distributed 64-bit random numbers. */
typedef uint64_t (*es_backoff_rand_fn)(void *ctx);

typedef struct es_backoff {
	unsigned attempt;      /* consecutive failed attempts so far */
	int64_t base_ms, cap_ms, reset_ms;
	int up;                /* a connection is up since up_since_ms */
	int64_t up_since_ms;
	int64_t retry_after_ms; /* > 0: the controller's come-back-later */
	es_backoff_rand_fn rnd;
	void *rnd_ctx;
} es_backoff;

/*
 * Initialises b with the protocol's base, cap and reset times. rnd may be
 * NULL: the kernel's getrandom(2) is used then (falling back to a clock-
 * seeded generator when it fails). rnd_ctx is passed to rnd.
 */
void es_backoff_init(es_backoff *b, es_backoff_rand_fn rnd, void *rnd_ctx);

/* Records that a connection came up at now_ms (monotonic milliseconds). */
void es_backoff_up(es_backoff *b, int64_t now_ms);

/*
 * Records a failed attempt or a lost connection at now_ms and returns the
 * delay in milliseconds before the next attempt: uniformly random in
 * [0, es_backoff_bound_ms(b)] after n has grown by one. When the connection
 * that just ended had been up for at least reset_ms, n restarts at 0 first.
 * After es_backoff_retry_after(ms): uniformly random in [ms, 2 * ms], n
 * unchanged.
 */
int64_t es_backoff_next(es_backoff *b, int64_t now_ms);

/*
 * Records that the session that is up was acknowledged (PROTOCOL.md
 * "Errors": welcome received and its first report acked): n restarts at 0,
 * so the next loss of the connection waits at most base.
 */
void es_backoff_ok(es_backoff *b);

/*
 * Records the controller's come-back-later (an `Overloaded` error with
 * retryAfterSeconds, PROTOCOL.md "Errors"): the next es_backoff_next
 * returns a uniformly random delay in [ms, 2 * ms] instead of the
 * exponential one, and does not count as a failed attempt. ms <= 0 is
 * ignored; a later call replaces an earlier one.
 */
void es_backoff_retry_after(es_backoff *b, int64_t ms);

/* The upper bound min(cap, base * 2^n) for the current n, in ms. */
int64_t es_backoff_bound_ms(const es_backoff *b);

#endif
