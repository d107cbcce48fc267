/*
 * backoff.c - exponential backoff with full jitter (see backoff.h).
 */
#include "sync/backoff.h"

#include <stddef.h>
#include <sys/random.h>
#include <time.h>

static uint64_t fallback_state;

static uint64_t default_rand(void *ctx)
{
	uint64_t v = 0;

	(void)ctx;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	if (!fallback_state) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		fallback_state = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
				 0x9e3779b97f4a7c15ULL;
	}
	/* xorshift64* (Vigna, "An experimental exploration of Marsaglia's
	 * xorshift generators") */
	fallback_state ^= fallback_state >> 12;
	fallback_state ^= fallback_state << 25;
	fallback_state ^= fallback_state >> 27;
	return fallback_state * 0x2545f4914f6cdd1dULL;
}

void es_backoff_init(es_backoff *b, es_backoff_rand_fn rnd, void *rnd_ctx)
{
	b->attempt = 0;
	b->base_ms = ES_BACKOFF_BASE_MS;
	b->cap_ms = ES_BACKOFF_CAP_MS;
	b->reset_ms = ES_BACKOFF_RESET_MS;
	b->up = 0;
	b->up_since_ms = 0;
	b->retry_after_ms = 0;
	b->rnd = rnd ? rnd : default_rand;
	b->rnd_ctx = rnd ? rnd_ctx : NULL;
}

void es_backoff_up(es_backoff *b, int64_t now_ms)
{
	b->up = 1;
	b->up_since_ms = now_ms;
}

void es_backoff_ok(es_backoff *b)
{
	b->attempt = 0;
}

void es_backoff_retry_after(es_backoff *b, int64_t ms)
{
	if (ms > 0)
		b->retry_after_ms = ms;
}

int64_t es_backoff_bound_ms(const es_backoff *b)
{
	int64_t bound = b->base_ms;
	unsigned i;

	for (i = 0; i < b->attempt; i++) {
		if (bound >= b->cap_ms)
			break;
		bound *= 2;
	}
	return bound < b->cap_ms ? bound : b->cap_ms;
}

int64_t es_backoff_next(es_backoff *b, int64_t now_ms)
{
	int64_t bound;

	if (b->up && now_ms - b->up_since_ms >= b->reset_ms)
		b->attempt = 0;
	b->up = 0;
	if (b->retry_after_ms > 0) {
		int64_t r = b->retry_after_ms;

		b->retry_after_ms = 0;
		return r + (int64_t)(b->rnd(b->rnd_ctx) % (uint64_t)(r + 1));
	}
	if (b->attempt < 64)
		b->attempt++;
	bound = es_backoff_bound_ms(b);
	return (int64_t)(b->rnd(b->rnd_ctx) % (uint64_t)(bound + 1));
}
