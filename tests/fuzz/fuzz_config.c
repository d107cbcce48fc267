/*
 * fuzz_config.c - libFuzzer target: the config file parser
 * (lib/es_config.c es_config_load_file).
 *
 * Every input is the text of a config file. es_config_load_file takes a
 * path, so the text is written to an in-memory file (memfd_create) and read
 * through /proc/self/fd/N: no disk, no temporary file to clean up. It is
 * parsed against two tables:
 *  - the agent's own settings (es_agent_settings of agent/runtime/config.c,
 *    compiled into this target; strings, bounded integers and
 *    enumerations), after its defaults, and when the file is accepted the
 *    agent's cross-setting checks (es_agent_config_validate) run too;
 *  - a small local table with every setting type, bool, an enumeration
 *    and an integer without bounds included, named like tests/fixtures/config/good.conf.
 * A refused file must say why. From an accepted one every setting is
 * written back as `key = "value"` (quotes and backslashes escaped), and that
 * file must load to the same values.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "es_buf.h"
#include "es_config.h"
#include "fuzz_util.h"
#include "runtime/config.h"

typedef struct local_cfg {
	char *controller_url, *node_name, *label_text;
	int64_t interval, offset;
	int verbose, mode;
} local_cfg;

static const char *const mode_names[] = {"off", "on", "auto", NULL};

static const es_setting local_settings[] = {
	{"controller-url", NULL, NULL, ES_SET_STRING, "", 0, 0,
	 offsetof(local_cfg, controller_url), "a string with a default", NULL},
	{"node-name", NULL, NULL, ES_SET_STRING, NULL, 0, 0,
	 offsetof(local_cfg, node_name), "a string without a default", NULL},
	{"label-text", NULL, NULL, ES_SET_STRING, NULL, 0, 0,
	 offsetof(local_cfg, label_text), "another string", NULL},
	{"interval", NULL, NULL, ES_SET_INT, "10", 1, 3600,
	 offsetof(local_cfg, interval), "a bounded integer", NULL},
	{"offset", NULL, NULL, ES_SET_INT, "0", 0, 0,
	 offsetof(local_cfg, offset), "an integer without bounds", NULL},
	{"verbose", NULL, NULL, ES_SET_BOOL, "false", 0, 0,
	 offsetof(local_cfg, verbose), "a bool", NULL},
	{"mode", NULL, NULL, ES_SET_ENUM, "auto", 0, 0,
	 offsetof(local_cfg, mode), "an enumeration", mode_names},
};
#define NLOCAL (sizeof(local_settings) / sizeof(local_settings[0]))

/* The in-memory file and its path. */
static int memfd = -1;
static char mempath[64];

/* Makes the in-memory file hold exactly n bytes of text. */
static void put_text(const char *text, size_t n)
{
	if (memfd < 0) {
		memfd = memfd_create("fuzz_config", MFD_CLOEXEC);
		FUZZ_CHECK(memfd >= 0, "memfd_create failed");
		snprintf(mempath, sizeof(mempath), "/proc/self/fd/%d", memfd);
	}
	FUZZ_CHECK(ftruncate(memfd, 0) == 0, "ftruncate failed");
	FUZZ_CHECK(n == 0 || pwrite(memfd, text, n, 0) == (ssize_t)n, "pwrite failed");
}

/* Appends `key = "value"` with value's quotes and backslashes escaped. */
static int put_setting(es_buf *b, const es_setting *s, const void *cfg)
{
	const char *field = (const char *)cfg + s->offset;
	const char *v;

	switch (s->type) {
	case ES_SET_STRING:
		v = *(char *const *)(const void *)field;
		if (!v)
			return 0;
		if (es_buf_appendf(b, "%s = \"", s->key) != ES_OK)
			return -1;
		for (; *v; v++) {
			if (*v == '"' || *v == '\\')
				es_buf_append(b, "\\", 1);
			es_buf_append(b, v, 1);
		}
		return es_buf_append_str(b, "\"\n") == ES_OK ? 0 : -1; /* errors are sticky */
	case ES_SET_INT:
		return es_buf_appendf(b, "%s = %" PRId64 "\n", s->key,
				      *(const int64_t *)(const void *)field) == ES_OK ? 0 : -1;
	case ES_SET_BOOL:
		return es_buf_appendf(b, "%s = %s\n", s->key,
				      *(const int *)(const void *)field ? "true" : "false") ==
		       ES_OK ? 0 : -1;
	case ES_SET_ENUM:
		return es_buf_appendf(b, "%s = %s\n", s->key,
				      s->names[*(const int *)(const void *)field]) ==
		       ES_OK ? 0 : -1;
	}
	return -1;
}

/* The setting s is the same in a and b. */
static void same_setting(const es_setting *s, const void *a, const void *b)
{
	const char *fa = (const char *)a + s->offset, *fb = (const char *)b + s->offset;
	const char *sa, *sb;

	switch (s->type) {
	case ES_SET_STRING:
		sa = *(char *const *)(const void *)fa;
		sb = *(char *const *)(const void *)fb;
		FUZZ_CHECK((!sa && !sb) || (sa && sb && strcmp(sa, sb) == 0),
			   "%s: \"%s\" written back reads \"%s\"", s->key, sa ? sa : "(unset)",
			   sb ? sb : "(unset)");
		break;
	case ES_SET_INT:
		FUZZ_CHECK(*(const int64_t *)(const void *)fa == *(const int64_t *)(const void *)fb,
			   "%s: integer written back reads another", s->key);
		break;
	case ES_SET_BOOL:
	case ES_SET_ENUM:
		FUZZ_CHECK(*(const int *)(const void *)fa == *(const int *)(const void *)fb,
			   "%s: value written back reads another", s->key);
		break;
	}
}

/*
 * Loads the input (already in the in-memory file) into cfg (zeroed, size
 * bytes) after the table's defaults, checks its values and the round trip
 * through the written-back file, and returns the result of the load.
 * again is a second zeroed struct of the same size.
 */
static es_err load_and_round_trip(const es_setting *t, size_t n, void *cfg, void *again)
{
	char err[1024] = "";
	es_buf b = {0};
	es_err rc = es_config_defaults(t, n, cfg, err, sizeof(err));

	FUZZ_CHECK(rc == ES_OK, "defaults refused: %s", err);
	rc = es_config_load_file(t, n, cfg, mempath, err, sizeof(err));
	if (rc != ES_OK) {
		FUZZ_CHECK(rc == ES_ERR_INVAL || rc == ES_ERR_NOMEM, "error %d: %s", rc, err);
		FUZZ_CHECK(err[0] != '\0', "refused without a message");
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		if (t[i].type == ES_SET_INT && (t[i].min || t[i].max)) {
			int64_t v = *(const int64_t *)(const void *)((const char *)cfg +
								  t[i].offset);

			FUZZ_CHECK(v >= t[i].min && v <= t[i].max, "%s = %" PRId64
				   " is out of %" PRId64 "..%" PRId64, t[i].key, v, t[i].min,
				   t[i].max);
		}
		if (put_setting(&b, &t[i], cfg) < 0)
			goto cleanup;
	}
	put_text(b.p ? b.p : "", b.len);
	rc = es_config_load_file(t, n, again, mempath, err, sizeof(err));
	FUZZ_CHECK(rc == ES_OK || rc == ES_ERR_NOMEM,
		   "written-back file refused: %s\n--- file:\n%.2000s", err,
		   b.p ? b.p : "");
	if (rc == ES_OK)
		for (size_t i = 0; i < n; i++)
			same_setting(&t[i], cfg, again);
	rc = ES_OK;
cleanup:
	es_buf_free(&b);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t nagent = 0;
	const es_setting *agent = es_agent_settings(&nagent);
	es_agent_config acfg = {0}, aagain = {0};
	local_cfg lcfg = {0}, lagain = {0};
	char err[1024] = "";

	put_text((const char *)data, size);
	if (load_and_round_trip(agent, nagent, &acfg, &aagain) == ES_OK) {
		es_err rc = es_agent_config_validate(&acfg, err, sizeof(err));

		FUZZ_CHECK(rc == ES_OK || rc == ES_ERR_INVAL || rc == ES_ERR_NOMEM,
			   "validate: error %d", rc);
		FUZZ_CHECK(rc != ES_ERR_INVAL || err[0] != '\0', "invalid without a message");
	}
	put_text((const char *)data, size);
	load_and_round_trip(local_settings, NLOCAL, &lcfg, &lagain);
	es_agent_config_free(&acfg);
	es_agent_config_free(&aagain);
	es_config_free(local_settings, NLOCAL, &lcfg);
	es_config_free(local_settings, NLOCAL, &lagain);
	return 0;
}
