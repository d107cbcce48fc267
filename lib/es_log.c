/*
 * es_log.c - logfmt events on stderr, and libwebsockets' log routed into
 * them. Each event is built in one buffer and written with one call so lines
 * from one process never interleave.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <libwebsockets.h>

#include "es_log.h"
#include "es_time.h"

#define ES_LOG_LINE_MAX 8192

static es_log_level log_level = ES_LOG_INFO;
static int lws_routed;

const char *const es_log_level_names[] = {"error", "warn", "info", "debug", NULL};

typedef struct line_buf {
	char buf[ES_LOG_LINE_MAX];
	size_t len;
	int truncated;
} line_buf;

static void put_char(line_buf *lb, char c)
{
	/* Two bytes stay free for the trailing "\n\0". */
	if (lb->len + 2 < sizeof(lb->buf))
		lb->buf[lb->len++] = c;
	else
		lb->truncated = 1;
}

static void put_str(line_buf *lb, const char *s)
{
	while (*s)
		put_char(lb, *s++);
}

/* A logfmt key is a bare word: bytes that would end it or start a value
 * (space, control characters, '=', '"', 0x7f) are written as '_'; an
 * empty key as "_". */
static void put_key(line_buf *lb, const char *k)
{
	if (*k == '\0') {
		put_char(lb, '_');
		return;
	}
	for (const unsigned char *p = (const unsigned char *)k; *p; p++)
		put_char(lb, *p <= ' ' || *p == '=' || *p == '"' || *p == 0x7f
				     ? '_' : (char)*p);
}

static int needs_quotes(const char *v, size_t n)
{
	for (const unsigned char *p = (const unsigned char *)v; n > 0; p++, n--)
		if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p == 0x7f)
			return 1;
	return 0;
}

/* Length of v without its trailing white space (space, \t, \n, \v, \f,
 * \r): library messages (mbedTLS, libwebsockets) often end in a newline,
 * which would otherwise be logged as a literal \n. */
static size_t trimmed_len(const char *v)
{
	size_t n = strlen(v);

	while (n > 0 && (v[n - 1] == ' ' || (v[n - 1] >= '\t' && v[n - 1] <= '\r')))
		n--;
	return n;
}

/* logfmt value, trailing white space dropped: bare when it has no space,
 * quote, '=', backslash or control character; otherwise double-quoted with
 * \" \\ \n \r \t and \u00XX escapes. */
static void put_value(line_buf *lb, const char *v, int force_quotes)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p, *end;
	size_t n;

	if (v == NULL)
		v = "";
	n = trimmed_len(v);
	if (!force_quotes && !needs_quotes(v, n)) {
		for (size_t i = 0; i < n; i++)
			put_char(lb, v[i]);
		return;
	}
	put_char(lb, '"');
	end = (const unsigned char *)v + n;
	for (p = (const unsigned char *)v; p < end; p++) {
		switch (*p) {
		case '"': put_str(lb, "\\\""); break;
		case '\\': put_str(lb, "\\\\"); break;
		case '\n': put_str(lb, "\\n"); break;
		case '\r': put_str(lb, "\\r"); break;
		case '\t': put_str(lb, "\\t"); break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				put_str(lb, "\\u00");
				put_char(lb, hex[*p >> 4]);
				put_char(lb, hex[*p & 0xf]);
			} else {
				put_char(lb, (char)*p);
			}
		}
	}
	put_char(lb, '"');
}

static void put_time(line_buf *lb)
{
	struct timespec ts;
	struct tm tm;
	char tb[96];

	clock_gettime(CLOCK_REALTIME, &ts);
	if (gmtime_r(&ts.tv_sec, &tm) == NULL) {
		put_str(lb, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(tb, sizeof(tb), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
	put_str(lb, tb);
}

/* " key=value" */
static void put_pair(line_buf *lb, const char *key, const char *val)
{
	put_char(lb, ' ');
	put_key(lb, key);
	put_char(lb, '=');
	put_value(lb, val, 0);
}

/* One line: the pairs of ap, then xkey=xval when xkey is not NULL. */
static void log_v(es_log_level level, const char *component, const char *msg,
		  va_list ap, const char *xkey, const char *xval)
{
	line_buf lb;
	const char *key;

	if ((int)level < ES_LOG_ERROR || level > log_level)
		return;
	lb.len = 0;
	lb.truncated = 0;
	put_str(&lb, "time=");
	put_time(&lb);
	put_str(&lb, " level=");
	put_str(&lb, es_log_level_names[level]);
	put_str(&lb, " component=");
	put_value(&lb, component, 0);
	put_str(&lb, " msg=");
	put_value(&lb, msg, 1);
	while ((key = va_arg(ap, const char *)) != NULL)
		put_pair(&lb, key, va_arg(ap, const char *));
	if (xkey)
		put_pair(&lb, xkey, xval);
	if (lb.truncated)
		memcpy(lb.buf + lb.len - 3, "...", 3);
	lb.buf[lb.len++] = '\n';
	lb.buf[lb.len] = '\0';
	fwrite(lb.buf, 1, lb.len, stderr);
	fflush(stderr);
}

void es_log(es_log_level level, const char *component, const char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	log_v(level, component, msg, ap, NULL, NULL);
	va_end(ap);
}

void es_log_gated(es_log_gate *g, es_log_level level, const char *component,
		  const char *msg, ...)
{
	unsigned long long held = 0;
	char n[24];
	va_list ap;

	if (!es_log_gate_pass(g, es_time_mono_ms(), &held))
		return;
	snprintf(n, sizeof(n), "%llu", held);
	va_start(ap, msg);
	log_v(level, component, msg, ap, held ? "suppressed" : NULL, n);
	va_end(ap);
}

int es_log_parse_level(const char *s, es_log_level *out)
{
	if (s == NULL || out == NULL)
		return -1;
	for (size_t i = 0; es_log_level_names[i] != NULL; i++) {
		if (strcasecmp(s, es_log_level_names[i]) == 0) {
			*out = (es_log_level)i;
			return 0;
		}
	}
	return -1;
}

/* lws levels shown for each of ours (see lws_level_map). */
static int lws_mask(es_log_level level)
{
	int mask = LLL_ERR;

	if (level >= ES_LOG_WARN)
		mask |= LLL_WARN;
	if (level >= ES_LOG_DEBUG)
		mask |= LLL_NOTICE | LLL_INFO;
	return mask;
}

/* libwebsockets logs every connection, vhost and TLS setup at LLL_NOTICE
 * and LLL_INFO: per-connection chatter, so both are debug here. */
static es_log_level lws_level_map(int level)
{
	if (level & LLL_ERR)
		return ES_LOG_ERROR;
	if (level & LLL_WARN)
		return ES_LOG_WARN;
	return ES_LOG_DEBUG;
}

/* Length of lws's own "[YYYY/MM/DD HH:MM:SS:FFFF] L: " or "[S:FFFF] L: "
 * prefix at the start of line, 0 when there is none. */
static size_t lws_prefix_len(const char *line)
{
	const char *close;

	if (line[0] != '[')
		return 0;
	close = strchr(line, ']');
	if (close == NULL || close[1] != ' ' || close[2] == '\0' ||
	    close[3] != ':' || close[4] != ' ')
		return 0;
	for (const char *p = line + 1; p < close; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '/' || *p == ':' || *p == ' '))
			return 0;
	return (size_t)(close + 5 - line);
}

static void lws_emit(int level, const char *line)
{
	if (line == NULL)
		return;
	es_log(lws_level_map(level), "lws", line + lws_prefix_len(line), NULL);
}

void es_log_set_level(es_log_level level)
{
	if (level < ES_LOG_ERROR)
		level = ES_LOG_ERROR;
	if (level > ES_LOG_DEBUG)
		level = ES_LOG_DEBUG;
	log_level = level;
	if (lws_routed)
		lws_set_log_level(lws_mask(log_level), lws_emit);
}

void es_log_route_lws(void)
{
	lws_routed = 1;
	lws_set_log_level(lws_mask(log_level), lws_emit);
}

int es_log_gate_pass(es_log_gate *g, int64_t now_ms, unsigned long long *held)
{
	if (g->next_ms && now_ms < g->next_ms) {
		g->held++;
		return 0;
	}
	if (held)
		*held = g->held;
	g->held = 0;
	g->next_ms = now_ms + ES_LOG_GATE_MS;
	if (!g->next_ms)
		g->next_ms = 1;
	return 1;
}

unsigned long long es_log_gate_reset(es_log_gate *g)
{
	unsigned long long held = g->held;

	g->held = 0;
	g->next_ms = 0;
	return held;
}
