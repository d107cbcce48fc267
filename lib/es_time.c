/*
 * es_time.c - RFC 3339 formatting and parsing, monotonic milliseconds.
 */
#include <stdio.h>
#include <string.h>

#include "es_time.h"

char *es_time_rfc3339(time_t t, char *buf)
{
	struct tm tm;
	int64_t v = (int64_t)t;

	/* date-fullyear is 4DIGIT (RFC 3339 section 5.6): strftime's %Y
	 * would write "314" or "10000". */
	if (v < ES_TIME_RFC3339_MIN)
		t = (time_t)ES_TIME_RFC3339_MIN;
	else if (v > ES_TIME_RFC3339_MAX)
		t = (time_t)ES_TIME_RFC3339_MAX;
	if (gmtime_r(&t, &tm) == NULL)
		snprintf(buf, ES_TIME_RFC3339_LEN, "1970-01-01T00:00:00Z");
	else
		/* The fields are in range; the remainders tell the compiler
		 * that the text fits. */
		snprintf(buf, ES_TIME_RFC3339_LEN, "%04u-%02u-%02uT%02u:%02u:%02uZ",
			 (unsigned)(tm.tm_year + 1900) % 10000u,
			 (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u,
			 (unsigned)tm.tm_hour % 100u, (unsigned)tm.tm_min % 100u,
			 (unsigned)tm.tm_sec % 100u);
	return buf;
}

char *es_time_now_rfc3339(char *buf)
{
	return es_time_rfc3339(time(NULL), buf);
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dm[m - 1];
}

/* Reads exactly n decimal digits at *p. Returns the value or -1. */
static int digits(const char **p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];

		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (c - '0');
	}
	*p += n;
	return v;
}

/* RFC 3339 section 5.6 "date-time"; 't'/'z' accepted as the section's note
 * allows; a leap second (60) is folded into the next second. */
int es_time_parse_rfc3339(const char *s, time_t *out)
{
	const char *p = s;
	int y, mo, d, h, mi, sec, off = 0;
	int64_t t;

	if (s == NULL || out == NULL)
		return -1;
	if ((y = digits(&p, 4)) < 0 || *p++ != '-' ||
	    (mo = digits(&p, 2)) < 0 || *p++ != '-' ||
	    (d = digits(&p, 2)) < 0)
		return -1;
	if (*p != 'T' && *p != 't')
		return -1;
	p++;
	if ((h = digits(&p, 2)) < 0 || *p++ != ':' ||
	    (mi = digits(&p, 2)) < 0 || *p++ != ':' ||
	    (sec = digits(&p, 2)) < 0)
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
	    h > 23 || mi > 59 || sec > 60)
		return -1;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1;
		int oh, om;

		if ((oh = digits(&p, 2)) < 0 || *p++ != ':' ||
		    (om = digits(&p, 2)) < 0 || oh > 23 || om > 59)
			return -1;
		off = sign * (oh * 3600 + om * 60);
	} else {
		return -1;
	}
	if (*p != '\0')
		return -1;
	t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
	if ((int64_t)(time_t)t != t)
		return -1;
	*out = (time_t)t;
	return 0;
}

int64_t es_time_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t es_time_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
