/*
 * yaml_scalar.c - YAML 1.2 core schema scalar resolution (see yaml_int.h).
 */
#include "yaml_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "es_json.h"

static int all_in(const char *s, size_t len, const char *set)
{
	size_t i;

	if (!len)
		return 0;
	for (i = 0; i < len; i++)
		if (!s[i] || !strchr(set, s[i]))
			return 0;
	return 1;
}

int es_yaml_is_one_of(const char *s, size_t len, const char *const *words)
{
	for (; *words; words++)
		if (strlen(*words) == len && memcmp(*words, s, len) == 0)
			return 1;
	return 0;
}

/* Matches [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE][-+]?[0-9]+ )? */
static int is_core_float(const char *s, size_t len)
{
	size_t i = 0, digits = 0;

	if (i < len && (s[i] == '-' || s[i] == '+'))
		i++;
	while (i < len && isdigit((unsigned char)s[i])) {
		i++;
		digits++;
	}
	if (i < len && s[i] == '.') {
		size_t frac = 0;
		i++;
		while (i < len && isdigit((unsigned char)s[i])) {
			i++;
			frac++;
		}
		if (!digits && !frac)
			return 0;
		digits += frac;
	}
	if (!digits)
		return 0;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t ed = 0;
		i++;
		if (i < len && (s[i] == '-' || s[i] == '+'))
			i++;
		while (i < len && isdigit((unsigned char)s[i])) {
			i++;
			ed++;
		}
		if (!ed)
			return 0;
	}
	return i == len;
}

enum es_yaml_scalar_kind es_yaml_resolve_plain(const char *s, size_t len, double *num)
{
	static const char *const nulls[] = { "null", "Null", "NULL", "~", NULL };
	static const char *const trues[] = { "true", "True", "TRUE", NULL };
	static const char *const falses[] = { "false", "False", "FALSE", NULL };
	char tmp[64];
	size_t off = 0;

	if (len == 0 || es_yaml_is_one_of(s, len, nulls))
		return SK_NULL;
	if (es_yaml_is_one_of(s, len, trues))
		return SK_TRUE;
	if (es_yaml_is_one_of(s, len, falses))
		return SK_FALSE;
	if (len > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
		const char *set = s[1] == 'o' ? "01234567" : "0123456789abcdefABCDEF";
		unsigned long long v;
		if (!all_in(s + 2, len - 2, set))
			return SK_STR;
		if (len >= sizeof(tmp))
			return SK_RANGE;
		memcpy(tmp, s + 2, len - 2);
		tmp[len - 2] = '\0';
		errno = 0;
		v = strtoull(tmp, NULL, s[1] == 'o' ? 8 : 16);
		if (errno || v > (unsigned long long)ES_JSON_MAX_INT)
			return SK_RANGE;
		*num = (double)v;
		return SK_NUM;
	}
	if (s[0] == '-' || s[0] == '+')
		off = 1;
	if (all_in(s + off, len - off, "0123456789")) {
		long long v;
		if (len >= sizeof(tmp))
			return SK_RANGE;
		memcpy(tmp, s, len);
		tmp[len] = '\0';
		errno = 0;
		v = strtoll(tmp, NULL, 10);
		if (errno || v > ES_JSON_MAX_INT || v < -ES_JSON_MAX_INT)
			return SK_RANGE;
		*num = (double)v;
		return SK_NUM;
	}
	if (is_core_float(s, len)) {
		char *buf = malloc(len + 1);
		double d;
		if (!buf)
			return SK_RANGE;
		memcpy(buf, s, len);
		buf[len] = '\0';
		d = strtod(buf, NULL);
		free(buf);
		if (!isfinite(d))
			return SK_RANGE;
		*num = d;
		return SK_NUM;
	}
	return SK_STR;
}
