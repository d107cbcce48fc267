/*
 * fuzz_util.c - helpers shared by the libFuzzer targets (see fuzz_util.h).
 */
#include "fuzz_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_json.h"

void fuzz_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: check failed: %s: ", file, line, expr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

size_t fuzz_split(const uint8_t *data, size_t size, fuzz_piece *pieces, size_t max)
{
	const char *p = (const char *)data, *end = p + size;
	size_t n = 0;

	while (n + 1 < max) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));

		if (!nul)
			break;
		pieces[n].p = p;
		pieces[n].n = (size_t)(nul - p);
		n++;
		p = nul + 1;
	}
	pieces[n].p = p;
	pieces[n].n = (size_t)(end - p);
	return n + 1;
}

const char *fuzz_json_show(const cJSON *v, int slot)
{
	static char buf[2][404];
	char *b = buf[slot ? 1 : 0], *text;

	if (!v) {
		snprintf(b, sizeof(buf[0]), "(null)");
		return b;
	}
	text = es_json_print(v);
	snprintf(b, sizeof(buf[0]), "%.400s", text ? text : "(out of memory)");
	free(text);
	return b;
}

int fuzz_has_null_member(const cJSON *v)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, v) {
		if (cJSON_IsObject(v) && cJSON_IsNull(m))
			return 1;
		if (fuzz_has_null_member(m))
			return 1;
	}
	return 0;
}

int fuzz_json_equal(const cJSON *a, const cJSON *b)
{
	int eq = es_json_equal(a, b);

	FUZZ_CHECK(eq >= 0, "es_json_equal: out of memory");
	FUZZ_CHECK(!eq || (!a && !b) || cJSON_Compare(a, b, 1),
		   "es_json_equal says equal, cJSON_Compare not: %s vs %s",
		   fuzz_json_show(a, 0), fuzz_json_show(b, 1));
	return eq;
}
