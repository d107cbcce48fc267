/*
 * es_time.h - wall-clock and monotonic time helpers.
 */
#ifndef ES_TIME_H
#define ES_TIME_H

#include <stdint.h>
#include <time.h>

/* Size of a buffer that holds any es_time_rfc3339 result. */
#define ES_TIME_RFC3339_LEN 32

/* Formats t (seconds since the epoch, UTC) as RFC 3339 with a Z suffix and
 * second precision, e.g. "2026-11-30T04:07:12Z", into buf (at least
 * ES_TIME_RFC3339_LEN bytes). Returns buf. */
char *es_time_rfc3339(time_t t, char *buf);

/* Formats the current time like es_time_rfc3339. Returns buf. */
char *es_time_now_rfc3339(char *buf);

/* Parses an RFC 3339 time ("2026-11-30T04:07:12Z", fractions and numeric
 * offsets accepted). Returns 0 and sets *out (seconds since the epoch), or
 * -1 when s is not RFC 3339. */
int es_time_parse_rfc3339(const char *s, time_t *out);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t es_time_mono_ms(void);

/* CLOCK_MONOTONIC in microseconds. */
int64_t es_time_mono_us(void);

#endif
