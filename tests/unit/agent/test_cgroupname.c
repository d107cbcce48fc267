/*
 * test_cgroupname.c - cgroup id → path cache and Kubernetes names
 * (agent/kcollect/cgroupname.h).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "kcollect/cgroupname.h"

void *__real_calloc(size_t n, size_t sz);
void *__wrap_calloc(size_t n, size_t sz);

static int fail_calloc;

void *__wrap_calloc(size_t n, size_t sz)
{
	if (fail_calloc)
		return NULL;
	return __real_calloc(n, sz);
}

#define UID "0f6a8e3c-5b2d-4c1e-9a7f-3d2e1b0c9a8f"
#define UID_ "0f6a8e3c_5b2d_4c1e_9a7f_3d2e1b0c9a8f"
#define CID "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c"

static void expect_k8s(const char *path, int bits, const char *uid,
		       const char *cid)
{
	char u[ES_CGNAME_POD_UID_LEN], c[ES_CGNAME_CONTAINER_ID_LEN];

	assert_int_equal(es_cgname_parse_k8s(path, u, c), bits);
	assert_string_equal(u, uid);
	assert_string_equal(c, cid);
}

static void test_systemd_driver(void **state)
{
	(void)state;
	expect_k8s("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
		   UID_ ".slice/cri-containerd-" CID ".scope", 3, UID, CID);
	expect_k8s("/kubepods.slice/kubepods-pod" UID_ ".slice", 1, UID, "");
	expect_k8s("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
		   UID_ ".slice/crio-" CID ".scope", 3, UID, CID);
	expect_k8s("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
		   UID_ ".slice/docker-" CID ".scope", 3, UID, CID);
}

static void test_cgroupfs_driver(void **state)
{
	(void)state;
	expect_k8s("/kubepods/burstable/pod" UID "/" CID, 3, UID, CID);
	expect_k8s("/kubepods/pod" UID "/", 1, UID, "");
}

static void test_not_kubernetes(void **state)
{
	(void)state;
	expect_k8s("/", 0, "", "");
	expect_k8s("", 0, "", "");
	expect_k8s("/system.slice/ssh.service", 0, "", "");
	/* docker outside Kubernetes: a container id, no pod */
	expect_k8s("/system.slice/docker-" CID ".scope", 2, "", CID);
	/* "pod<uid>" outside kubepods is not a pod */
	expect_k8s("/user.slice/pod" UID, 0, "", "");
	/* malformed: short id, upper-case hex, wrong separators, bad suffix */
	expect_k8s("/kubepods/burstable/pod" UID "/abc123", 1, UID, "");
	expect_k8s("/system.slice/docker-4F1C2D3E4F5A6B7C8D9E0F1A2B3C4D5E6F7A8B9C0D1E2F3A4B5C6D7E8F9A0B1C.scope",
		   0, "", "");
	expect_k8s("/kubepods.slice/kubepods-pod0f6a8e3c-5b2d-4c1e-9a7f-3d2e1b0c9a8f.slice",
		   0, "", "");
	expect_k8s("/system.slice/cri-containerd-" CID ".slice", 0, "", "");
	expect_k8s("/kubepods.slice/kubepods-pod" UID_ "x.slice", 0, "", "");
	/* NULL outputs are allowed */
	assert_int_equal(es_cgname_parse_k8s("/kubepods/pod" UID, NULL, NULL), 1);
}

static char root[64];

static uint64_t ino(const char *rel)
{
	char p[256];
	struct stat sb;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	assert_int_equal(stat(p, &sb), 0);
	return (uint64_t)sb.st_ino;
}

static void mk(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	assert_int_equal(mkdir(p, 0700), 0);
}

static void rm(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	rmdir(p);
}

static const char *dirs[] = {
	"/system.slice", "/system.slice/ssh.service", "/kubepods",
	"/kubepods/burstable", "/kubepods/burstable/pod" UID,
	"/kubepods/burstable/pod" UID "/" CID,
};
#define NDIRS (sizeof(dirs) / sizeof(dirs[0]))

static void test_walk_and_lookup(void **state)
{
	es_cgname *c = NULL;
	cJSON *o;
	size_t i;

	(void)state;
	snprintf(root, sizeof(root), "/tmp/es-cgname-XXXXXX");
	assert_non_null(mkdtemp(root));
	for (i = 0; i < NDIRS; i++)
		mk(dirs[i]);
	assert_int_equal(es_cgname_new(root, &c), ES_OK);
	assert_string_equal(es_cgname_path(c, ino("")), "/");
	for (i = 0; i < NDIRS; i++)
		assert_string_equal(es_cgname_path(c, ino(dirs[i])), dirs[i]);
	/* unknown id: a miss, and no re-walk within ES_CGNAME_RESCAN_S */
	mk("/late");
	assert_null(es_cgname_path(c, ino("/late")));

	o = cJSON_CreateObject();
	assert_int_equal(es_cgname_add_json(c, ino(dirs[NDIRS - 1]), o), ES_OK);
	assert_string_equal(cJSON_GetObjectItem(o, "cgroup")->valuestring,
			    dirs[NDIRS - 1]);
	assert_string_equal(cJSON_GetObjectItem(o, "podUID")->valuestring, UID);
	assert_string_equal(cJSON_GetObjectItem(o, "containerID")->valuestring, CID);
	assert_true(cJSON_GetObjectItem(o, "cgroupId")->valuedouble ==
		    (double)ino(dirs[NDIRS - 1]));
	cJSON_Delete(o);
	o = cJSON_CreateObject();
	assert_int_equal(es_cgname_add_json(c, 999999999999ull, o), ES_OK);
	assert_null(cJSON_GetObjectItem(o, "cgroup"));
	assert_non_null(cJSON_GetObjectItem(o, "cgroupId"));
	cJSON_Delete(o);
	es_cgname_free(c);

	/* a fresh cache walks again and sees the late directory */
	assert_int_equal(es_cgname_new(root, &c), ES_OK);
	assert_string_equal(es_cgname_path(c, ino("/late")), "/late");
	es_cgname_free(c);

	rm("/late");
	for (i = NDIRS; i > 0; i--)
		rm(dirs[i - 1]);
	rmdir(root);
}

static void test_no_root_and_nomem(void **state)
{
	es_cgname *c = NULL;

	(void)state;
	assert_int_equal(es_cgname_new(NULL, &c), ES_OK);
	assert_null(es_cgname_path(c, 1));
	es_cgname_free(c);
	assert_int_equal(es_cgname_new("/nonexistent/es-cgname", &c), ES_OK);
	assert_null(es_cgname_path(c, 1));
	es_cgname_free(c);
	es_cgname_free(NULL);
	fail_calloc = 1;
	assert_int_equal(es_cgname_new("/", &c), ES_ERR_NOMEM);
	fail_calloc = 0;
	assert_null(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_systemd_driver),
		cmocka_unit_test(test_cgroupfs_driver),
		cmocka_unit_test(test_not_kubernetes),
		cmocka_unit_test(test_walk_and_lookup),
		cmocka_unit_test(test_no_root_and_nomem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
