/*
 * testutil.c - helpers shared by the unit tests (testutil.h).
 */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "es_json.h"
#include "testutil.h"

void es_test_tmpdir(char *dir, size_t dirsz, const char *tag, char *path,
		    size_t pathsz, const char *file)
{
	int n = snprintf(dir, dirsz, "/tmp/es-%s-XXXXXX", tag);

	if (n < 0 || (size_t)n >= dirsz) {
		fail_msg("temporary directory name for %s does not fit", tag);
		return;
	}
	if (!mkdtemp(dir)) {
		fail_msg("mkdtemp %s failed", dir);
		return;
	}
	if (!path)
		return;
	n = snprintf(path, pathsz, "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= pathsz)
		fail_msg("path of %s in %s does not fit", file, dir);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(p) : unlink(p)) == 0 ? 0 : -1;
}

int es_test_rmtree(const char *dir)
{
	if (access(dir, F_OK) != 0)
		return 0;
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

char *es_test_slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	long n = -1;

	if (fp && fseek(fp, 0, SEEK_END) == 0)
		n = ftell(fp);
	if (n >= 0 && fseek(fp, 0, SEEK_SET) == 0)
		buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (fp)
		fclose(fp);
	if (!buf) {
		fail_msg("cannot read %s", path);
		return NULL;
	}
	if (len)
		*len = (size_t)n;
	return buf;
}

void es_test_assert_file_bytes(const char *path, const char *want, size_t len)
{
	size_t n = 0;
	char *now = es_test_slurp(path, &n);
	int same = n == len && memcmp(now, want, len) == 0;

	free(now);
	if (!same)
		fail_msg("%s was modified (%zu bytes before, %zu now)", path, len, n);
}

cJSON *es_test_json(const char *text)
{
	cJSON *v = NULL;
	char err[256] = "";

	if (es_json_parse(text, strlen(text), ES_JSON_MAX_DEPTH, &v, err,
			  sizeof(err)) != ES_OK)
		fail_msg("test JSON does not parse: %s: %s", err, text);
	return v;
}

const char *es_test_str(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

void es_test_assert_line(const char *text, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("missing line %s in:\n%s", line, text);
}

static double sample_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : ES_SAMPLE_NONE;
}

static void sample_str(char **dst, const cJSON *o, const char *key)
{
	if (es_sample_set_str(dst, cJSON_GetStringValue(
				      cJSON_GetObjectItemCaseSensitive(o, key))) != ES_OK)
		fail_msg("out of memory");
}

void es_test_sample(const cJSON *status, int64_t pid_max, es_sample *out)
{
	static const char *const names[ES_SAMPLE_COLLECTORS] = {
		"cpu", "memory", "filesystem", "network", "processes",
	};
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(status, "usage");
	const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(usage, "cpu");
	const cJSON *load = cJSON_GetObjectItemCaseSensitive(usage, "load");
	const cJSON *mem = cJSON_GetObjectItemCaseSensitive(usage, "memory");
	const cJSON *fss = cJSON_GetObjectItemCaseSensitive(usage, "filesystems");
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(usage, "network");
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(usage, "processes");
	const cJSON *it;
	size_t i;

	es_sample_clear(out);
	for (int c = 0; c < ES_SAMPLE_COLLECTORS; c++) {
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(status, "collectors")) {
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");

			if (!cJSON_IsString(n) || strcmp(n->valuestring, names[c]) != 0)
				continue;
			out->collectors[c].enabled =
				cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "enabled"));
			out->collectors[c].healthy =
				cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "healthy"));
			sample_str(&out->collectors[c].error, it, "error");
			break;
		}
	}
	out->has_cpu = cJSON_IsObject(cpu);
	out->cpu_utilization = sample_num(cpu, "utilization");
	out->load1 = sample_num(load, "load1");
	out->load5 = sample_num(load, "load5");
	out->load15 = sample_num(load, "load15");
	out->has_memory = mem != NULL;
	out->mem_total = sample_num(mem, "MemTotal");
	out->mem_available = sample_num(mem, "MemAvailable");
	if (es_sample_mem_alloc(out, (size_t)cJSON_GetArraySize(mem)) != ES_OK)
		fail_msg("out of memory");
	i = 0;
	cJSON_ArrayForEach(it, mem) {
		if (es_sample_set_str(&out->mem[i].name, it->string) != ES_OK)
			fail_msg("out of memory");
		out->mem[i++].value = cJSON_IsNumber(it) ? it->valuedouble : ES_SAMPLE_NONE;
	}
	out->has_filesystems = cJSON_IsArray(fss);
	if (es_sample_fs_alloc(out, (size_t)cJSON_GetArraySize(fss)) != ES_OK)
		fail_msg("out of memory");
	i = 0;
	cJSON_ArrayForEach(it, fss) {
		es_sample_fs *fs = &out->fs[i++];

		sample_str(&fs->device, it, "device");
		sample_str(&fs->mountpoint, it, "mountpoint");
		sample_str(&fs->fstype, it, "fstype");
		fs->size_bytes = sample_num(it, "sizeBytes");
		fs->avail_bytes = sample_num(it, "availBytes");
		fs->free_bytes = sample_num(it, "freeBytes");
		fs->files = sample_num(it, "files");
		fs->files_free = sample_num(it, "filesFree");
	}
	out->has_network = cJSON_IsArray(net);
	if (es_sample_ifaces_alloc(out, (size_t)cJSON_GetArraySize(net)) != ES_OK)
		fail_msg("out of memory");
	i = 0;
	cJSON_ArrayForEach(it, net) {
		es_sample_iface *f = &out->ifaces[i++];

		sample_str(&f->name, it, "interface");
		f->receive_bytes = sample_num(it, "receiveBytes");
		f->receive_packets = sample_num(it, "receivePackets");
		f->receive_errors = sample_num(it, "receiveErrors");
		f->receive_drop = sample_num(it, "receiveDrop");
		f->transmit_bytes = sample_num(it, "transmitBytes");
		f->transmit_packets = sample_num(it, "transmitPackets");
		f->transmit_errors = sample_num(it, "transmitErrors");
		f->transmit_drop = sample_num(it, "transmitDrop");
	}
	out->proc_count = sample_num(procs, "count");
	out->proc_threads = sample_num(procs, "threads");
	out->proc_running = sample_num(procs, "running");
	out->proc_blocked = sample_num(procs, "blocked");
	out->pid_max = pid_max;
}

int es_test_run_stderr(const char *dir, int (*main_fn)(int, char **), int argc,
		       char **argv, char **errout)
{
	char path[4200];
	int saved, fd, rc;

	snprintf(path, sizeof(path), "%s/stderr", dir);
	fflush(stderr);
	saved = dup(2);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (saved < 0 || fd < 0)
		fail_msg("%s: cannot redirect stderr", path);
	dup2(fd, 2);
	close(fd);
	rc = main_fn(argc, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	*errout = es_test_slurp(path, NULL);
	unlink(path);
	return rc;
}
