/*
 * es_log.h - structured logging, one event per line, logfmt
 * (https://brandur.org/logfmt) on stderr:
 *
 *   time=2026-11-30T04:07:12.123Z level=info component=sync msg="connected" url=wss://...
 *
 * Values with spaces, quotes, '=' or control characters are quoted and
 * escaped. The process is single-threaded around one event loop, so the
 * logger keeps no lock.
 */
#ifndef ES_LOG_H
#define ES_LOG_H

typedef enum es_log_level {
	ES_LOG_ERROR = 0,
	ES_LOG_WARN = 1,
	ES_LOG_INFO = 2,
	ES_LOG_DEBUG = 3,
} es_log_level;

/* Sets the most verbose level that is printed (default ES_LOG_INFO). */
void es_log_set_level(es_log_level level);

/* Parses "error", "warn", "info", "debug". Returns 0 and sets *out, or -1. */
int es_log_parse_level(const char *s, es_log_level *out);

/* Routes libwebsockets' own log lines through this logger with component
 * "lws", mapping LLL_ERR→error, LLL_WARN→warn, LLL_NOTICE→info,
 * LLL_INFO→debug, according to the current level. */
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

#endif
