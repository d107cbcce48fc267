/*
 * es_time.h - wall-clock and monotonic time helpers.
 */
#ifndef ES_TIME_H
#define ES_TIME_H

#include <stdint.h>
#include <time.h>

/* Size of a buffer that holds any es_time_rfc3339 result. */
#define ES_TIME_RFC3339_LEN 32

/* The first and last second RFC 3339 can write: its years have four digits
 * (RFC 3339 section 5.6, date-fullyear), 0000-01-01T00:00:00Z and
 * 9999-12-31T23:59:59Z, in seconds since the epoch. */
#define ES_TIME_RFC3339_MIN (-62167219200LL)
#define ES_TIME_RFC3339_MAX 253402300799LL

/* Formats t (seconds since the epoch, UTC) as RFC 3339 with a Z suffix and
 * second precision, e.g. "2026-11-30T04:07:12Z", the year always in four
 * digits ("0314-..."), into buf (at least ES_TIME_RFC3339_LEN bytes); a t
 * before ES_TIME_RFC3339_MIN or after ES_TIME_RFC3339_MAX is written as
 * that bound. Returns buf. */
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
