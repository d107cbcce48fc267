/*
 * test_kcollect.c - the kernel-collector framework's pure parts
 * (agent/kcollect/kcollect.h): names and masks, backend names, the eBPF-usable
 * decision, the probe table format, the tracefs lookup (on fixtures in
 * tests/fixtures/mounts/), the tracepoint check (on a fake tracefs) and the
 * btf-path lookup (on a small BTF file made with libbpf). The collectors themselves are
 * exercised on real hooks by tests/integration/test_bpf_*.py (label bpf).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "kcollect/kcollect.h"

static void test_mask(void **state)
{
	const es_kcollector_ops *const *reg;
	unsigned m = 0;
	char err[128];
	size_t n, i;

	(void)state;
	reg = es_kcollectors_registry(&n);
	assert_true(n >= 1);
	assert_int_equal(es_kcollectors_mask(NULL, &m, err, sizeof(err)), ES_OK);
	assert_int_equal(m, ES_KC_ALL);
	assert_int_equal(es_kcollectors_mask("all", &m, err, sizeof(err)), ES_OK);
	assert_int_equal(m, ES_KC_ALL);
	for (i = 0; i < n; i++) {
		assert_int_equal(es_kcollectors_mask(reg[i]->name, &m, err,
						     sizeof(err)), ES_OK);
		assert_int_equal(m, 1u << i);
	}
	assert_int_equal(es_kcollectors_mask("process", &m, err, sizeof(err)),
			 ES_OK);
	assert_true(m != 0);
	assert_int_equal(es_kcollectors_mask("process,bogus", &m, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "\"bogus\""));
	assert_int_equal(es_kcollectors_mask("proc", &m, err, sizeof(err)),
			 ES_ERR_INVAL);
}

static void test_backend_names(void **state)
{
	(void)state;
	assert_string_equal(es_kbackend_str(ES_KBACKEND_EBPF), "ebpf");
	assert_string_equal(es_kbackend_str(ES_KBACKEND_PROCFS), "procfs");
	assert_string_equal(es_kbackend_str(ES_KBACKEND_UNAVAILABLE), "unavailable");
	assert_string_equal(es_kbackend_str((es_kbackend)42), "unavailable");
}

static es_kenv good_env(void)
{
	es_kenv e;

	memset(&e, 0, sizeof(e));
	e.bpf_syscall = e.btf = e.ringbuf = e.tracepoint = e.raw_tracepoint = 1;
	e.cgroup_skb = e.tracefs = e.cgroup_v2 = 1;
	snprintf(e.tracefs_path, sizeof(e.tracefs_path), "/sys/kernel/tracing");
	snprintf(e.cgroup2_path, sizeof(e.cgroup2_path), "/sys/fs/cgroup");
	return e;
}

static void test_ebpf_ok(void **state)
{
	es_kenv e = good_env();
	char why[256];

	(void)state;
	assert_int_equal(es_kenv_ebpf_ok(&e, 1, 1, why, sizeof(why)), 1);
	e.tracefs = 0;
	snprintf(e.tracefs_reason, sizeof(e.tracefs_reason), "tracefs is not mounted");
	assert_int_equal(es_kenv_ebpf_ok(&e, 0, 1, why, sizeof(why)), 1);
	assert_int_equal(es_kenv_ebpf_ok(&e, 1, 0, why, sizeof(why)), 0);
	assert_string_equal(why, "tracefs is not mounted");
	e = good_env();
	e.cgroup_v2 = 0;
	snprintf(e.cgroup2_reason, sizeof(e.cgroup2_reason), "no cgroup v2");
	assert_int_equal(es_kenv_ebpf_ok(&e, 1, 0, why, sizeof(why)), 1);
	assert_int_equal(es_kenv_ebpf_ok(&e, 0, 1, why, sizeof(why)), 0);
	assert_string_equal(why, "no cgroup v2");
	e = good_env();
	snprintf(e.ebpf_reason, sizeof(e.ebpf_reason),
		 "forced by collector-backend=procfs");
	assert_int_equal(es_kenv_ebpf_ok(&e, 0, 0, why, sizeof(why)), 0);
	assert_string_equal(why, "forced by collector-backend=procfs");
}

static void test_print(void **state)
{
	es_kenv e = good_env();
	char buf[4096];
	FILE *f;

	(void)state;
	e.mounted_cgroup2 = 1;
	snprintf(e.cgroup2_path, sizeof(e.cgroup2_path), "/var/lib/edgesync/cgroup2");
	e.tracefs = 0;
	snprintf(e.tracefs_reason, sizeof(e.tracefs_reason), "tracefs is not mounted");
	memset(buf, 0, sizeof(buf));
	f = fmemopen(buf, sizeof(buf) - 1, "w");
	assert_non_null(f);
	es_kenv_print(&e, f);
	fclose(f);
	assert_non_null(strstr(buf, "kernel-cgroup-v2         ok       "
				    "/var/lib/edgesync/cgroup2 (mounted by the agent)\n"));
	assert_non_null(strstr(buf, "kernel-tracefs           missing  "
				    "tracefs is not mounted\n"));
	assert_non_null(strstr(buf, "ebpf                     ok       "));
}

/* The tracefs lookup `run` and `check` share: /sys/kernel/tracing, else
 * /sys/kernel/debug/tracing, in either table format. */
static void test_find_tracefs(void **state)
{
	char where[64];

	(void)state;
	assert_int_equal(es_kenv_find_tracefs(ES_FIXTURES "/mounts/escaped.mountinfo",
					      where, sizeof(where)), 1);
	assert_string_equal(where, "/sys/kernel/tracing");
	assert_int_equal(es_kenv_find_tracefs(ES_FIXTURES "/mounts/proc.mounts", where,
					      sizeof(where)), 1);
	assert_string_equal(where, "/sys/kernel/debug/tracing");
	assert_int_equal(es_kenv_find_tracefs(ES_FIXTURES "/procfs/basic/proc/self/mountinfo",
					      where, sizeof(where)), 0);
	assert_int_equal(es_kenv_find_tracefs("/nonexistent", where, sizeof(where)), 0);
}

/* A tracefs counts when its tracepoint files are there, not when a mount
 * line names it: a fake tracefs in a temporary directory, without then
 * with events/sched/sched_process_exec/id. */
static void test_tracefs_usable(void **state)
{
	char root[] = "/tmp/es-tracefs-XXXXXX", path[256];
	const char *dirs[] = { "/events", "/events/sched",
			       "/events/sched/sched_process_exec" };
	size_t i;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(root));
	/* An empty directory: what a mount over a parent leaves visible. */
	errno = 0;
	assert_int_equal(es_kenv_tracefs_usable(root), 0);
	assert_int_equal(errno, ENOENT);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
		assert_int_equal(mkdir(path, 0700), 0);
	}
	assert_int_equal(es_kenv_tracefs_usable(root), 0);
	snprintf(path, sizeof(path), "%s/" ES_KENV_TRACEFS_PROBE, root);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "1234\n", 5), 5);
	close(fd);
	assert_int_equal(es_kenv_tracefs_usable(root), 1);
	assert_int_equal(es_kenv_tracefs_usable(NULL), 0);
	assert_int_equal(errno, EINVAL);

	unlink(path);
	for (i = sizeof(dirs) / sizeof(dirs[0]); i-- > 0;) {
		snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
		rmdir(path);
	}
	assert_int_equal(rmdir(root), 0);
}

/* `check` says when it mounted tracefs privately, as `run` would for real. */
static void test_print_private_tracefs(void **state)
{
	es_kenv e = good_env();
	char buf[4096];
	FILE *f;

	(void)state;
	e.mounted_tracefs = e.private_tracefs = 1;
	memset(buf, 0, sizeof(buf));
	f = fmemopen(buf, sizeof(buf) - 1, "w");
	assert_non_null(f);
	es_kenv_print(&e, f);
	fclose(f);
	assert_non_null(strstr(buf, "kernel-tracefs           ok       "
				    "/sys/kernel/tracing (not mounted: run mounts it; "
				    "check did so in a private mount namespace)\n"));
}

static void test_report_null_set(void **state)
{
	cJSON *st = cJSON_CreateObject();

	(void)state;
	assert_int_equal(es_kcollectors_report(NULL, st), ES_OK);
	assert_null(cJSON_GetObjectItem(st, "activity"));
	es_kcollectors_poll(NULL);
	es_kcollectors_stop(NULL);
	es_kenv_release(NULL);
	assert_int_equal(es_kcollectors_count(NULL), 0);
	assert_null(es_kcollectors_get(NULL, 0));
	cJSON_Delete(st);
}

static void test_forced_fallback_set(void **state)
{
	es_kenv e = good_env();
	es_kcollectors *set = NULL;
	cJSON *st = cJSON_CreateObject(), *c, *list;
	size_t i;

	(void)state;
	snprintf(e.ebpf_reason, sizeof(e.ebpf_reason),
		 "forced by collector-backend=procfs");
	assert_int_equal(es_kcollectors_start(&e, ES_KC_ALL, &set, NULL, 0), ES_OK);
	for (i = 0; i < es_kcollectors_count(set); i++)
		assert_int_not_equal(es_kcollectors_get(set, i)->backend,
				     ES_KBACKEND_EBPF);
	assert_int_equal(es_kcollectors_report(set, st), ES_OK);
	list = cJSON_GetObjectItem(st, "collectors");
	assert_int_equal((size_t)cJSON_GetArraySize(list), es_kcollectors_count(set));
	cJSON_ArrayForEach(c, list) {
		const char *b = cJSON_GetObjectItem(c, "backend")->valuestring;

		assert_true(strcmp(b, "procfs") == 0 || strcmp(b, "unavailable") == 0);
		assert_non_null(strstr(cJSON_GetObjectItem(c, "reason")->valuestring,
				       "collector-backend=procfs"));
		assert_non_null(cJSON_GetObjectItem(c, "eventsLost"));
	}
	assert_non_null(cJSON_GetObjectItem(st, "activity"));
	es_kcollectors_stop(set);
	cJSON_Delete(st);
}

/* A tiny valid BTF file (one int type) made with libbpf at path. */
static void write_btf(const char *path)
{
	struct btf *btf = btf__new_empty();
	const void *raw;
	__u32 sz;
	FILE *f;

	assert_non_null(btf);
	assert_true(btf__add_int(btf, "int", 4, BTF_INT_SIGNED) > 0);
	raw = btf__raw_data(btf, &sz);
	assert_non_null(raw);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(raw, 1, sz, f), sz);
	fclose(f);
	btf__free(btf);
}

static void test_btf_resolve(void **state)
{
	char dir[] = "/tmp/es-btf-XXXXXX", file[512], rel[600], out[4096], err[512];
	struct bpf_object_open_opts opts;
	es_kenv env;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/vmlinux", dir);
	write_btf(file);
	/* A file is taken as it is, whatever the release. */
	assert_int_equal(es_kenv_btf_resolve(file, "6.1.0-test", out, sizeof(out),
					     err, sizeof(err)), ES_OK);
	assert_string_equal(out, file);
	/* A directory is looked up by release, BTFHub's <release>.btf. */
	snprintf(rel, sizeof(rel), "%s/6.1.0-test.btf", dir);
	write_btf(rel);
	assert_int_equal(es_kenv_btf_resolve(dir, "6.1.0-test", out, sizeof(out),
					     err, sizeof(err)), ES_OK);
	assert_string_equal(out, rel);
	/* No file for this release: named, with the file looked for. */
	assert_int_equal(es_kenv_btf_resolve(dir, "5.10.0-other", out, sizeof(out),
					     err, sizeof(err)), ES_ERR_NOTFOUND);
	assert_non_null(strstr(err, "5.10.0-other.btf"));
	assert_non_null(strstr(err, "no BTF file for this kernel release"));
	/* Missing path. */
	assert_int_equal(es_kenv_btf_resolve("/nonexistent/btf", "6.1.0-test", out,
					     sizeof(out), err, sizeof(err)),
			 ES_ERR_NOTFOUND);
	assert_non_null(strstr(err, "btf-path /nonexistent/btf: "));
	/* Not BTF. */
	f = fopen(rel, "w");
	assert_non_null(f);
	fputs("not BTF at all\n", f);
	fclose(f);
	assert_int_equal(es_kenv_btf_resolve(dir, "6.1.0-test", out, sizeof(out),
					     err, sizeof(err)), ES_ERR_PARSE);
	assert_non_null(strstr(err, "not BTF"));
	assert_string_equal(out, "");
	/* Bad arguments. */
	assert_int_equal(es_kenv_btf_resolve("", "r", out, sizeof(out), err,
					     sizeof(err)), ES_ERR_INVAL);
	assert_int_equal(es_kenv_btf_resolve(file, "r", out, 4, err, sizeof(err)),
			 ES_ERR_INVAL);
	/* The open options carry the file only when one was chosen. */
	memset(&env, 0, sizeof(env));
	assert_null(es_kenv_open_opts(&env, &opts)->btf_custom_path);
	assert_int_equal(opts.sz, sizeof(opts));
	snprintf(env.btf_file, sizeof(env.btf_file), "%s", file);
	assert_string_equal(es_kenv_open_opts(&env, &opts)->btf_custom_path, file);
	assert_null(es_kenv_open_opts(NULL, &opts)->btf_custom_path);
	unlink(rel);
	unlink(file);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mask),
		cmocka_unit_test(test_backend_names),
		cmocka_unit_test(test_ebpf_ok),
		cmocka_unit_test(test_print),
		cmocka_unit_test(test_find_tracefs),
		cmocka_unit_test(test_tracefs_usable),
		cmocka_unit_test(test_print_private_tracefs),
		cmocka_unit_test(test_report_null_set),
		cmocka_unit_test(test_forced_fallback_set),
		cmocka_unit_test(test_btf_resolve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
