/*
 * es_log.h - structured logging, one event per line, logfmt
 * (https://brandur.org/logfmt) on stderr:
 *
 *   time=2026-11-30T04:07:12.123Z level=info component=sync msg="connected" url=wss://...
 *
 * Every line has time (RFC 3339, UTC, milliseconds), level (error, warn,
 * info, debug), component and msg (always quoted), then the event's fields
 * in the order given. Trailing white space of msg and of every value is
 * dropped (library messages end in newlines). Values with spaces, quotes,
 * '=', backslashes or control characters are double-quoted, with \" \\ \n
 * \r \t and \u00XX escapes; other values are bare. Keys are bare words
 * (a byte that could not be in one is written '_'). A line is at most 8192
 * bytes; a longer one ends in "..." (still one line). The process is
 * single-threaded around one event loop, so the logger keeps no lock.
 */
#ifndef ES_LOG_H
#define ES_LOG_H

#include <stdint.h>

typedef enum es_log_level {
	ES_LOG_ERROR = 0,
	ES_LOG_WARN = 1,
	ES_LOG_INFO = 2,
	ES_LOG_DEBUG = 3,
} es_log_level;

/* The names of the levels, indexed by es_log_level, NULL-terminated:
 * "error", "warn", "info", "debug" (as the setting log-level takes them). */
extern const char *const es_log_level_names[];

/* Sets the most verbose level that is printed (default ES_LOG_INFO). */
void es_log_set_level(es_log_level level);

/* Parses "error", "warn", "info", "debug". Returns 0 and sets *out, or -1. */
int es_log_parse_level(const char *s, es_log_level *out);

/* Routes libwebsockets' own log lines through this logger with component
 * "lws", mapping LLL_ERR→error, LLL_WARN→warn, and LLL_NOTICE and
 * LLL_INFO→debug (lws reports every connection and TLS setup at those two,
 * which would flood the default info level); lws is asked only for the
 * levels the current level prints. LLL_DEBUG and finer are never asked
 * for. lws's own "[time] L: " prefix is removed. */
void es_log_route_lws(void);

/*
 * Logs one event. component: short module name ("sync", "store"). msg: a
 * constant-ish message. The variadic part is key/value string pairs ending
 * with NULL: es_log(ES_LOG_INFO, "sync", "connected", "url", url, NULL).
 * A NULL value prints as an empty string.
 */
void es_log(es_log_level level, const char *component, const char *msg, ...);

#define es_log_error(comp, msg, ...) es_log(ES_LOG_ERROR, comp, msg, __VA_ARGS__)
#define es_log_warn(comp, msg, ...) es_log(ES_LOG_WARN, comp, msg, __VA_ARGS__)
#define es_log_info(comp, msg, ...) es_log(ES_LOG_INFO, comp, msg, __VA_ARGS__)
#define es_log_debug(comp, msg, ...) es_log(ES_LOG_DEBUG, comp, msg, __VA_ARGS__)

/*
 * A gate for a warning that repeats while one condition lasts (a peer that
 * does not answer, retried every second): the first is logged, then at most
 * one per interval, each saying how many were held back meanwhile, so an
 * outage of an hour is a few hundred lines, not thousands. A zeroed gate is
 * open. Keep one per kind of warning.
 */
typedef struct es_log_gate {
	int64_t next_ms;           /* es_time_mono_ms before which it is closed */
	unsigned long long held;   /* warnings not logged since the last one */
} es_log_gate;

/* The interval of es_log_gate_pass, milliseconds. */
#define ES_LOG_GATE_MS 30000

/*
 * Asks whether a warning may be logged now (now_ms: CLOCK_MONOTONIC in
 * milliseconds). Returns 1 and sets *held (may be NULL) to the number held
 * back since the last one logged, then closes the gate for ES_LOG_GATE_MS;
 * returns 0 (and counts the warning as held back) while it is closed.
 * Cannot fail.
 */
int es_log_gate_pass(es_log_gate *g, int64_t now_ms, unsigned long long *held);

/*
 * es_log through gate g: logged when es_log_gate_pass lets it (the current
 * CLOCK_MONOTONIC time), with "suppressed=N" appended when N warnings were
 * held back since the last; else only counted. Pairs as es_log's.
 */
void es_log_gated(es_log_gate *g, es_log_level level, const char *component,
		  const char *msg, ...);

/* Opens the gate again (the condition ended: its next warning is logged at
 * once) and returns how many warnings were held back since the last one
 * logged, for a "recovered" line. */
unsigned long long es_log_gate_reset(es_log_gate *g);

#endif
