/*
 * test_collect.c - the procfs collectors (agent/collect/collect.h) against fixture
 * trees in tests/fixtures/procfs/, temporary trees, and the real host.
 * uname and statvfs are wrapped (--wrap) so fixture mountpoints and
 * machine names give exact values without depending on this host.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "collect/collect.h"
#include "es_obj.h"
#include "testutil.h"

#define FIX ES_FIXTURES "/procfs/"

int __real_uname(struct utsname *u);
int __wrap_uname(struct utsname *u);
/* On a 32-bit ABI with a 64-bit off_t (the armhf cross build's
 * _FILE_OFFSET_BITS=64) glibc's header binds statvfs() to the symbol
 * statvfs64: that is the one to wrap there (both are --wrap'ed). */
#if defined(__USE_FILE_OFFSET64) && __SIZEOF_LONG__ == 4
#define __real_statvfs __real_statvfs64
#define __wrap_statvfs __wrap_statvfs64
#endif
int __real_statvfs(const char *path, struct statvfs *sv);
int __wrap_statvfs(const char *path, struct statvfs *sv);

static const char *fake_machine;    /* non-NULL: uname reports this machine */
static int fake_fs;                 /* 1: statvfs answers from fake_mounts */
static char statvfs_calls[1024];    /* "path|path|..." of faked calls */

static const struct fake_mount {
	const char *path;
	unsigned long frsize, blocks, bfree, bavail, files, ffree;
} fake_mounts[] = {
	{ "/", 4096, 1000000, 400000, 350000, 65536, 40000 },
	{ "/boot/efi", 512, 1048576, 900000, 900000, 0, 0 },
	{ "/mnt/data disk", 4096, 2000, 1500, 1500, 100, 90 },
	{ "/var/lib/containers/overlay/abc/merged", 4096, 3000, 1000, 900, 500, 400 },
	{ "/var/lib/containers/overlay/def/merged", 4096, 3000, 1000, 900, 500, 400 },
	{ "/srv/bind", 4096, 1000000, 400000, 350000, 65536, 40000 },
};

int __wrap_uname(struct utsname *u)
{
	int r = __real_uname(u);

	if (r == 0 && fake_machine != NULL)
		snprintf(u->machine, sizeof(u->machine), "%s", fake_machine);
	return r;
}

int __wrap_statvfs(const char *path, struct statvfs *sv)
{
	if (!fake_fs)
		return __real_statvfs(path, sv);
	if (strlen(statvfs_calls) + strlen(path) + 2 <= sizeof(statvfs_calls)) {
		strcat(statvfs_calls, path);
		strcat(statvfs_calls, "|");
	}
	for (size_t i = 0; i < sizeof(fake_mounts) / sizeof(fake_mounts[0]); i++) {
		const struct fake_mount *m = &fake_mounts[i];

		if (strcmp(path, m->path) != 0)
			continue;
		memset(sv, 0, sizeof(*sv));
		sv->f_bsize = m->frsize;
		sv->f_frsize = m->frsize;
		sv->f_blocks = m->blocks;
		sv->f_bfree = m->bfree;
		sv->f_bavail = m->bavail;
		sv->f_files = m->files;
		sv->f_ffree = m->ffree;
		return 0;
	}
	errno = ENOENT;
	return -1;
}

static void assert_num_same(double got, double want, const char *what, size_t i)
{
	if (isnan(got) != isnan(want) || (!isnan(got) && got != want))
		fail_msg("sample %s[%zu]: %g, the JSON says %g", what, i, got, want);
}

static void assert_str_same(const char *got, const char *want, const char *what,
			    size_t i)
{
	if ((got == NULL) != (want == NULL) || (got && strcmp(got, want) != 0))
		fail_msg("sample %s[%zu]: \"%s\", the JSON says \"%s\"", what, i,
			 got ? got : "(none)", want ? want : "(none)");
}

/* Fails unless the collectors' sample s says what their JSON (read back
 * member by member into j) says. */
static void assert_sample_same(const es_sample *s, const es_sample *j)
{
	for (size_t i = 0; i < ES_SAMPLE_COLLECTORS; i++) {
		assert_int_equal(s->collectors[i].enabled, j->collectors[i].enabled);
		assert_int_equal(s->collectors[i].healthy, j->collectors[i].healthy);
		assert_str_same(s->collectors[i].error, j->collectors[i].error, "error", i);
	}
	assert_int_equal(s->has_cpu, j->has_cpu);
	assert_num_same(s->cpu_utilization, j->cpu_utilization, "utilization", 0);
	assert_num_same(s->load1, j->load1, "load1", 0);
	assert_num_same(s->load5, j->load5, "load5", 0);
	assert_num_same(s->load15, j->load15, "load15", 0);
	assert_int_equal(s->has_memory, j->has_memory);
	assert_num_same(s->mem_total, j->mem_total, "mem_total", 0);
	assert_num_same(s->mem_available, j->mem_available, "mem_available", 0);
	assert_int_equal(s->nmem, j->nmem);
	for (size_t i = 0; i < s->nmem; i++) {
		assert_str_same(s->mem[i].name, j->mem[i].name, "mem.name", i);
		assert_num_same(s->mem[i].value, j->mem[i].value, "mem.value", i);
	}
	assert_int_equal(s->has_filesystems, j->has_filesystems);
	assert_int_equal(s->nfs, j->nfs);
	for (size_t i = 0; i < s->nfs; i++) {
		const es_sample_fs *a = &s->fs[i], *b = &j->fs[i];

		assert_str_same(a->device, b->device, "fs.device", i);
		assert_str_same(a->mountpoint, b->mountpoint, "fs.mountpoint", i);
		assert_str_same(a->fstype, b->fstype, "fs.fstype", i);
		assert_num_same(a->size_bytes, b->size_bytes, "fs.size_bytes", i);
		assert_num_same(a->avail_bytes, b->avail_bytes, "fs.avail_bytes", i);
		assert_num_same(a->free_bytes, b->free_bytes, "fs.free_bytes", i);
		assert_num_same(a->files, b->files, "fs.files", i);
		assert_num_same(a->files_free, b->files_free, "fs.files_free", i);
	}
	assert_int_equal(s->has_network, j->has_network);
	assert_int_equal(s->nifaces, j->nifaces);
	for (size_t i = 0; i < s->nifaces; i++) {
		const es_sample_iface *a = &s->ifaces[i], *b = &j->ifaces[i];

		assert_str_same(a->name, b->name, "iface.name", i);
		assert_num_same(a->receive_bytes, b->receive_bytes, "receive_bytes", i);
		assert_num_same(a->receive_packets, b->receive_packets, "receive_packets", i);
		assert_num_same(a->receive_errors, b->receive_errors, "receive_errors", i);
		assert_num_same(a->receive_drop, b->receive_drop, "receive_drop", i);
		assert_num_same(a->transmit_bytes, b->transmit_bytes, "transmit_bytes", i);
		assert_num_same(a->transmit_packets, b->transmit_packets, "transmit_packets", i);
		assert_num_same(a->transmit_errors, b->transmit_errors, "transmit_errors", i);
		assert_num_same(a->transmit_drop, b->transmit_drop, "transmit_drop", i);
	}
	assert_num_same(s->proc_count, j->proc_count, "proc_count", 0);
	assert_num_same(s->proc_threads, j->proc_threads, "proc_threads", 0);
	assert_num_same(s->proc_running, j->proc_running, "proc_running", 0);
	assert_num_same(s->proc_blocked, j->proc_blocked, "proc_blocked", 0);
}

/* One round; its sample must say what its JSON says. */
static cJSON *run_roots(const es_collect_roots *roots, unsigned mask)
{
	es_collect *c = NULL;
	cJSON *st = NULL;
	es_sample s, back;

	es_sample_init(&s);
	es_sample_init(&back);
	assert_int_equal(es_collect_new(roots, "9.8.7", &c), ES_OK);
	assert_int_equal(es_collect_run(c, mask, &st, &s), ES_OK);
	assert_non_null(st);
	es_test_sample(st, s.pid_max, &back);
	assert_sample_same(&s, &back);
	es_sample_clear(&s);
	es_sample_clear(&back);
	es_collect_free(c);
	return st;
}

static cJSON *run_fixture(const char *name, unsigned mask)
{
	char proc[512], etc[512];
	es_collect_roots r = { 0 };

	snprintf(proc, sizeof(proc), FIX "%s/proc", name);
	snprintf(etc, sizeof(etc), FIX "%s/etc", name);
	r.proc = proc;
	r.sys = FIX "none/sys";
	r.etc = etc;
	return run_roots(&r, mask);
}

static const cJSON *at(const cJSON *o, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
		o = cJSON_GetObjectItemCaseSensitive(o, k);
	return o;
}

static double num(const cJSON *o, const char *path)
{
	const cJSON *v = at(o, path);

	if (!cJSON_IsNumber(v))
		fail_msg("%s: not a number", path);
	return v->valuedouble;
}

static const char *str(const cJSON *o, const char *path)
{
	const cJSON *v = at(o, path);

	if (!cJSON_IsString(v))
		fail_msg("%s: not a string", path);
	return v->valuestring;
}

static const cJSON *collector(const cJSON *st, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, at(st, "collectors"))
		if (strcmp(str(it, "name"), name) == 0)
			return it;
	fail_msg("no collector %s", name);
	return NULL;
}

static void assert_healthy(const cJSON *st, const char *name)
{
	const cJSON *c = collector(st, name);

	if (!cJSON_IsTrue(at(c, "healthy")))
		fail_msg("collector %s unhealthy: %s", name,
			 cJSON_IsString(at(c, "error")) ? str(c, "error") : "?");
	assert_null(at(c, "error"));
	assert_string_equal(str(c, "backend"), "procfs");
	assert_int_equal((int)num(c, "eventsLost"), 0);
}

/* Asserts the collector is unhealthy with an error containing want. */
static void assert_unhealthy(const cJSON *st, const char *name, const char *want)
{
	const cJSON *c = collector(st, name);
	const char *e = str(c, "error");

	assert_true(cJSON_IsFalse(at(c, "healthy")));
	if (strstr(e, want) == NULL)
		fail_msg("collector %s error \"%s\" lacks \"%s\"", name, e, want);
}

static const cJSON *find_by(const cJSON *arr, const char *key, const char *val)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr)
		if (strcmp(str(it, key), val) == 0)
			return it;
	return NULL;
}

static void write_file(const char *dir, const char *rel, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *good_stat =
	"cpu  1000 0 500 8000 500 0 0 0 0 0\n"
	"cpu0 1000 0 500 8000 500 0 0 0 0 0\n"
	"procs_running 2\nprocs_blocked 0\n";

static void test_node_info_and_capacity(void **state)
{
	struct utsname u;
	cJSON *st = run_fixture("basic", ES_COLLECT_ALL);

	assert_int_equal(__real_uname(&u), 0);
	assert_string_equal(str(st, "nodeInfo.hostname"), u.nodename);
	assert_string_equal(str(st, "nodeInfo.kernelVersion"), u.release);
	assert_string_equal(str(st, "nodeInfo.osImage"), "Debian GNU/Linux 12 (bookworm)");
	assert_string_equal(str(st, "nodeInfo.operatingSystem"), "linux");
	assert_string_equal(str(st, "nodeInfo.machineID"), "0123456789abcdef0123456789abcdef");
	assert_string_equal(str(st, "nodeInfo.bootID"), "5d4f0e1c-2b3a-4c5d-9e8f-0a1b2c3d4e5f");
	assert_string_equal(str(st, "nodeInfo.agentVersion"), "9.8.7");
	assert_int_equal((int)num(st, "capacity.cpu"), 4);
	assert_true(num(st, "capacity.memoryBytes") == 8048576.0 * 1024);
	cJSON_Delete(st);
}

static void test_architecture_mapping(void **state)
{
	static const char *const cases[][2] = {
		{ "x86_64", "amd64" }, { "aarch64", "arm64" }, { "armv7l", "arm" },
		{ "armv6l", "arm" }, { "i686", "386" }, { "riscv64", "riscv64" },
		{ "ppc64le", "ppc64le" }, { "s390x", "s390x" },
		{ "mips", __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "mipsle" : "mips" },
		{ "weird9", "weird9" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *st;

		fake_machine = cases[i][0];
		st = run_fixture("basic", 0);
		fake_machine = NULL;
		assert_string_equal(str(st, "nodeInfo.architecture"), cases[i][1]);
		cJSON_Delete(st);
	}
}

static void test_cpu_load_memory(void **state)
{
	long hz = sysconf(_SC_CLK_TCK);
	cJSON *st = run_fixture("basic", ES_COLLECT_CPU | ES_COLLECT_MEMORY);

	assert_true(num(st, "usage.cpu.secondsTotal.user") == 123400.0 / hz);
	assert_true(num(st, "usage.cpu.secondsTotal.nice") == 500.0 / hz);
	assert_true(num(st, "usage.cpu.secondsTotal.system") == 34500.0 / hz);
	assert_true(num(st, "usage.cpu.secondsTotal.idle") == 8765400.0 / hz);
	assert_true(num(st, "usage.cpu.secondsTotal.iowait") == 2300.0 / hz);
	assert_true(num(st, "usage.cpu.secondsTotal.irq") == 0.0);
	assert_true(num(st, "usage.cpu.secondsTotal.softirq") == 1200.0 / hz);
	assert_true(num(st, "usage.cpu.secondsTotal.steal") == 800.0 / hz);
	assert_null(at(st, "usage.cpu.utilization")); /* first round */
	assert_true(num(st, "usage.load.load1") == 0.52);
	assert_true(num(st, "usage.load.load5") == 0.58);
	assert_true(num(st, "usage.load.load15") == 0.59);
	assert_true(num(st, "usage.memory.MemTotal") == 8048576.0 * 1024);
	assert_true(num(st, "usage.memory.MemAvailable") == 5120000.0 * 1024);
	assert_true(num(st, "usage.memory.Active(anon)") == 512000.0 * 1024);
	assert_true(num(st, "usage.memory.SwapCached") == 0);
	assert_true(num(st, "usage.memory.HugePages_Total") == 4);
	assert_true(num(st, "usage.memory.Hugepagesize") == 2048.0 * 1024);
	assert_int_equal(cJSON_GetArraySize(at(st, "usage.memory")), 18);
	assert_healthy(st, "cpu");
	assert_healthy(st, "memory");
	/* Disabled collectors: listed, nothing collected. */
	assert_null(at(st, "usage.network"));
	assert_null(at(st, "usage.filesystems"));
	assert_null(at(st, "usage.processes"));
	assert_true(cJSON_IsFalse(at(collector(st, "network"), "enabled")));
	assert_true(cJSON_IsTrue(at(collector(st, "cpu"), "enabled")));
	assert_int_equal(cJSON_GetArraySize(at(st, "collectors")), 5);
	cJSON_Delete(st);
}

static void test_network_processes(void **state)
{
	cJSON *st = run_fixture("basic", ES_COLLECT_NETWORK | ES_COLLECT_PROCESSES);
	const cJSON *net = at(st, "usage.network"), *eth0, *lo;

	assert_int_equal(cJSON_GetArraySize(net), 3);
	lo = find_by(net, "interface", "lo");
	eth0 = find_by(net, "interface", "eth0");
	assert_non_null(lo);
	assert_non_null(find_by(net, "interface", "wlan0"));
	assert_true(num(lo, "receiveBytes") == 987654);
	assert_true(num(eth0, "receiveBytes") == 123456789012.0);
	assert_true(num(eth0, "receivePackets") == 9876543);
	assert_true(num(eth0, "receiveErrors") == 3);
	assert_true(num(eth0, "receiveDrop") == 7);
	assert_true(num(eth0, "transmitBytes") == 98765432100.0);
	assert_true(num(eth0, "transmitPackets") == 7654321);
	assert_true(num(eth0, "transmitErrors") == 2);
	assert_true(num(eth0, "transmitDrop") == 5);
	assert_true(num(st, "usage.processes.count") == 3);
	assert_true(num(st, "usage.processes.threads") == 1 + 3 + 12);
	assert_true(num(st, "usage.processes.running") == 3);
	assert_true(num(st, "usage.processes.blocked") == 1);
	assert_healthy(st, "network");
	assert_healthy(st, "processes");
	cJSON_Delete(st);
}

static void test_filesystems_mountinfo(void **state)
{
	cJSON *st;
	const cJSON *fs, *root, *efi, *disk, *ovl;

	fake_fs = 1;
	statvfs_calls[0] = '\0';
	st = run_fixture("basic", ES_COLLECT_FILESYSTEM);
	fake_fs = 0;
	assert_healthy(st, "filesystem");
	fs = at(st, "usage.filesystems");
	/* Pseudo, tmpfs, squashfs and nfs4 filtered; the bind mount of 8:1
	 * deduplicated and never statvfs'd. */
	assert_int_equal(cJSON_GetArraySize(fs), 4);
	assert_string_equal(statvfs_calls,
			    "/|/boot/efi|/mnt/data disk|/var/lib/containers/overlay/abc/merged|");
	root = find_by(fs, "mountpoint", "/");
	assert_string_equal(str(root, "device"), "/dev/sda1");
	assert_string_equal(str(root, "fstype"), "ext4");
	assert_true(num(root, "sizeBytes") == 1000000.0 * 4096);
	assert_true(num(root, "freeBytes") == 400000.0 * 4096);
	assert_true(num(root, "availBytes") == 350000.0 * 4096);
	assert_true(num(root, "files") == 65536);
	assert_true(num(root, "filesFree") == 40000);
	efi = find_by(fs, "mountpoint", "/boot/efi");
	assert_string_equal(str(efi, "fstype"), "vfat");
	assert_true(num(efi, "sizeBytes") == 1048576.0 * 512);
	disk = find_by(fs, "mountpoint", "/mnt/data disk");
	assert_non_null(disk);
	assert_string_equal(str(disk, "fstype"), "xfs");
	ovl = find_by(fs, "fstype", "overlay");
	assert_string_equal(str(ovl, "device"), "overlay");
	assert_null(find_by(fs, "fstype", "tmpfs"));
	assert_null(find_by(fs, "fstype", "squashfs"));
	assert_null(find_by(fs, "fstype", "nfs4"));
	assert_null(find_by(fs, "mountpoint", "/srv/bind"));
	cJSON_Delete(st);
}

static void test_filesystems_proc_mounts_format(void **state)
{
	es_collect_roots r = { FIX "basic/proc", FIX "none/sys", FIX "basic/etc",
			       FIX "basic/proc/mounts" };
	cJSON *st;
	const cJSON *fs;

	fake_fs = 1;
	statvfs_calls[0] = '\0';
	st = run_roots(&r, ES_COLLECT_FILESYSTEM);
	fake_fs = 0;
	assert_healthy(st, "filesystem");
	fs = at(st, "usage.filesystems");
	/* /dev/sda1 once; two overlay instances are distinct filesystems. */
	assert_int_equal(cJSON_GetArraySize(fs), 3);
	assert_non_null(find_by(fs, "mountpoint", "/"));
	assert_null(find_by(fs, "mountpoint", "/srv/bind"));
	assert_non_null(find_by(fs, "mountpoint", "/var/lib/containers/overlay/def/merged"));
	cJSON_Delete(st);
}

static void test_utilization_two_rounds(void **state)
{
	char dir[] = "/tmp/es-collect-XXXXXX", proc[64], big[12000];
	es_collect_roots r = { 0 };
	es_collect *c = NULL;
	cJSON *st = NULL;

	assert_non_null(mkdtemp(dir));
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	write_file(dir, "proc/loadavg", "1.00 0.50 0.25 1/10 99\n");
	write_file(dir, "proc/stat", good_stat);
	r.proc = proc;
	r.etc = dir;
	assert_int_equal(es_collect_new(&r, "v", &c), ES_OK);
	assert_int_equal(es_collect_run(c, ES_COLLECT_CPU, &st, NULL), ES_OK);
	assert_null(at(st, "usage.cpu.utilization"));
	cJSON_Delete(st);

	/* 1000 more ticks: 300 user + 100 system + 500 idle + 100 iowait, and an
	 * intr line longer than the line buffer, which is skipped. */
	memset(big, '1', sizeof(big));
	snprintf(big, sizeof(big), "cpu  1300 0 600 8500 600 0 0 0 0 0\n"
		 "cpu0 1300 0 600 8500 600 0 0 0 0 0\nintr 1");
	big[strlen(big)] = '1';
	snprintf(big + sizeof(big) - 40, 40, "\nprocs_running 1\nprocs_blocked 0\n");
	write_file(dir, "proc/stat", big);
	assert_int_equal(es_collect_run(c, ES_COLLECT_CPU, &st, NULL), ES_OK);
	assert_healthy(st, "cpu");
	assert_true(num(st, "usage.cpu.utilization") == 0.4);
	cJSON_Delete(st);

	/* No tick elapsed: no utilization rather than a division by zero. */
	assert_int_equal(es_collect_run(c, ES_COLLECT_CPU, &st, NULL), ES_OK);
	assert_null(at(st, "usage.cpu.utilization"));
	cJSON_Delete(st);
	es_collect_free(c);
	rm_tree(dir);
}

static void test_hostile_fixture(void **state)
{
	cJSON *st;
	const cJSON *fs;

	fake_fs = 1;
	st = run_fixture("hostile", ES_COLLECT_ALL);
	fake_fs = 0;
	assert_unhealthy(st, "cpu", "hostile/proc/stat");
	assert_unhealthy(st, "cpu", "loadavg: empty");
	assert_unhealthy(st, "memory", "hostile/proc/meminfo:1: MemTotal: not a number");
	assert_unhealthy(st, "network", "hostile/proc/net/dev");
	assert_unhealthy(st, "processes", "hostile/proc/stat");
	assert_unhealthy(st, "filesystem", "mountinfo:1: not a mount table line");
	assert_null(at(st, "usage.cpu"));
	assert_null(at(st, "usage.load"));
	assert_null(at(st, "usage.memory"));
	assert_null(at(st, "usage.network"));
	assert_null(at(st, "usage.processes"));
	/* The readable mount is still reported; /gone fails statvfs. */
	fs = at(st, "usage.filesystems");
	assert_int_equal(cJSON_GetArraySize(fs), 1);
	assert_string_equal(str(cJSON_GetArrayItem(fs, 0), "device"), "/dev/sda3");
	assert_null(at(st, "capacity.cpu"));
	assert_null(at(st, "capacity.memoryBytes"));
	assert_string_equal(str(st, "nodeInfo.machineID"), "");
	assert_string_equal(str(st, "nodeInfo.bootID"), "");
	assert_string_equal(str(st, "nodeInfo.osImage"), "Linux");
	cJSON_Delete(st);
}

static void test_missing_roots_and_bad_files(void **state)
{
	char dir[] = "/tmp/es-collect-XXXXXX", proc[64];
	es_collect_roots r = { 0 };
	cJSON *st;

	/* Nothing exists at all. */
	r.proc = "/nonexistent/proc";
	r.etc = "/nonexistent/etc";
	st = run_roots(&r, ES_COLLECT_ALL);
	for (int i = 0; i < 5; i++)
		assert_unhealthy(st, es_collector_names[i], "/nonexistent/proc");
	assert_string_equal(str(st, "nodeInfo.osImage"), "");
	cJSON_Delete(st);

	/* Good stat, a truncated pid stat, bad loadavg, a short net/dev line,
	 * meminfo without MemTotal, a duplicate field, an unknown unit. */
	assert_non_null(mkdtemp(dir));
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	write_file(dir, "proc/stat", good_stat);
	write_file(dir, "proc/9/stat", "9 (x) S 1 2 3\n");
	write_file(dir, "proc/loadavg", "0.1 nan 0.3 1/1 1\n");
	write_file(dir, "proc/net/dev", "h|\nh|\n  eth0: 1 2 3\n");
	write_file(dir, "proc/meminfo", "MemFree: 10 kB\n");
	r.proc = proc;
	st = run_roots(&r, ES_COLLECT_ALL);
	assert_unhealthy(st, "processes", "9/stat: field 20 (num_threads)");
	assert_unhealthy(st, "cpu", "loadavg: load5: not a number");
	assert_non_null(at(st, "usage.cpu.secondsTotal"));
	assert_unhealthy(st, "network", "dev:3: eth0: counter 4 missing");
	assert_unhealthy(st, "memory", "meminfo: no MemTotal");
	assert_int_equal((int)num(st, "capacity.cpu"), 1);
	cJSON_Delete(st);

	write_file(dir, "proc/meminfo", "MemTotal: 10 kB\nMemTotal: 10 kB\n");
	st = run_roots(&r, ES_COLLECT_MEMORY);
	assert_unhealthy(st, "memory", "meminfo:2: MemTotal: duplicate field");
	cJSON_Delete(st);
	write_file(dir, "proc/meminfo", "MemTotal: 10 MB\n");
	st = run_roots(&r, ES_COLLECT_MEMORY);
	assert_unhealthy(st, "memory", "meminfo:1: MemTotal: unknown unit");
	cJSON_Delete(st);
	write_file(dir, "proc/meminfo", "MemTotal: 99999999999999999999 kB\n");
	st = run_roots(&r, ES_COLLECT_MEMORY);
	assert_unhealthy(st, "memory", "MemTotal: not a number");
	cJSON_Delete(st);
	rm_tree(dir);
}

static long allocs_left = -1;

static void *failing_malloc(size_t n)
{
	if (allocs_left == 0)
		return NULL;
	if (allocs_left > 0)
		allocs_left--;
	return malloc(n);
}

static void test_out_of_memory(void **state)
{
	cJSON_Hooks hooks = { failing_malloc, free };
	es_collect *c = NULL;
	cJSON *st = NULL;
	int failures = 0;
	es_err rc = ES_ERR_NOMEM;

	fake_fs = 1;
	{
		es_collect_roots r = { FIX "basic/proc", NULL, FIX "basic/etc", NULL };

		assert_int_equal(es_collect_new(&r, "v", &c), ES_OK);
	}
	cJSON_InitHooks(&hooks);
	for (long n = 0; n < 5000 && rc == ES_ERR_NOMEM; n++) {
		allocs_left = n;
		rc = es_collect_run(c, ES_COLLECT_ALL, &st, NULL);
		if (rc == ES_ERR_NOMEM) {
			assert_null(st);
			failures++;
		}
	}
	allocs_left = -1;
	cJSON_InitHooks(NULL);
	fake_fs = 0;
	assert_int_equal(rc, ES_OK);
	assert_true(failures > 50);
	assert_non_null(at(st, "usage.filesystems"));
	cJSON_Delete(st);
	es_collect_free(c);
}

static void test_real_host(void **state)
{
	struct utsname u;
	char line[256];
	unsigned long long memtotal_kb = 0;
	int ncpu = 0;
	FILE *f;
	cJSON *st;

	f = fopen("/proc/meminfo", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &memtotal_kb) == 1)
			break;
	fclose(f);
	f = fopen("/proc/stat", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9')
			ncpu++;
	fclose(f);
	assert_true(memtotal_kb > 0);
	assert_int_equal(__real_uname(&u), 0);

	st = run_roots(NULL, ES_COLLECT_ALL);
	assert_true(num(st, "capacity.memoryBytes") == (double)memtotal_kb * 1024);
	assert_string_equal(str(st, "nodeInfo.hostname"), u.nodename);
	assert_string_equal(str(st, "nodeInfo.kernelVersion"), u.release);
	assert_int_equal((int)num(st, "capacity.cpu"), ncpu);
	for (int i = 0; i < 5; i++)
		assert_healthy(st, es_collector_names[i]);
	assert_non_null(find_by(at(st, "usage.network"), "interface", "lo"));
	assert_true(num(st, "usage.processes.count") >= 1);
	assert_true(num(st, "usage.processes.threads") >= num(st, "usage.processes.count"));
	cJSON_Delete(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_info_and_capacity),
		cmocka_unit_test(test_architecture_mapping),
		cmocka_unit_test(test_cpu_load_memory),
		cmocka_unit_test(test_network_processes),
		cmocka_unit_test(test_filesystems_mountinfo),
		cmocka_unit_test(test_filesystems_proc_mounts_format),
		cmocka_unit_test(test_utilization_two_rounds),
		cmocka_unit_test(test_hostile_fixture),
		cmocka_unit_test(test_missing_roots_and_bad_files),
		cmocka_unit_test(test_out_of_memory),
		cmocka_unit_test(test_real_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
