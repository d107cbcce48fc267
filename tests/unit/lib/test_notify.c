/*
 * test_notify.c - service-manager notifications (lib/es_notify.h) through
 * the real libsystemd, received on a datagram socket standing in for
 * systemd's $NOTIFY_SOCKET (sd_notify(3), sd_watchdog_enabled(3)).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <libwebsockets.h>

#include "es_notify.h"

typedef struct fixture {
	char dir[64];
	char path[96];
	int fd;
	struct lws_context *ctx;
	lws_sorted_usec_list_t tick;
} fixture;

/* Wakes the loop every 10 ms: lws_service() otherwise sleeps until the
 * next timer, which there may not be. */
static void tick_cb(lws_sorted_usec_list_t *sul)
{
	fixture *f = lws_container_of(sul, fixture, tick);

	lws_sul_schedule(f->ctx, 0, &f->tick, tick_cb, 10 * LWS_US_PER_MS);
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	struct sockaddr_un sa;
	struct lws_context_creation_info info;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/es-notify-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/notify", f->dir);
	f->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -1;
	setenv("NOTIFY_SOCKET", f->path, 1);
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	lws_set_log_level(0, NULL);
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	f->ctx = lws_create_context(&info);
	if (!f->ctx)
		return -1;
	lws_sul_schedule(f->ctx, 0, &f->tick, tick_cb, 10 * LWS_US_PER_MS);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	es_notify_watchdog_stop();
	lws_sul_cancel(&f->tick);
	lws_context_destroy(f->ctx);
	close(f->fd);
	unlink(f->path);
	rmdir(f->dir);
	unsetenv("NOTIFY_SOCKET");
	free(f);
	return 0;
}

/* The next datagram within timeout_ms as a string in buf, or 0 when none. */
static int recv_msg(fixture *f, char *buf, size_t sz, int timeout_ms)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	ssize_t n;

	setsockopt(f->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = recv(f->fd, buf, sz - 1, 0);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Services the loop for ms milliseconds; counts "WATCHDOG=1" datagrams
 * and fails on any other. */
static int run_loop_count(fixture *f, int ms)
{
	int64_t end = now_ms() + ms;
	char buf[256];
	int n = 0;

	while (now_ms() < end) {
		lws_service(f->ctx, 0);
		while (recv(f->fd, buf, sizeof(buf) - 1, MSG_DONTWAIT) > 0) {
			assert_memory_equal(buf, "WATCHDOG=1", 10);
			n++;
		}
	}
	return n;
}

/* 1 when libsystemd is mapped into this process. */
static int libsystemd_mapped(void)
{
	char line[512];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "libsystemd.so"))
			found = 1;
	fclose(f);
	return found;
}

/* libsystemd is loaded only once a service manager asks for
 * notifications, so hosts without systemd do not carry it. */
static void test_loaded_only_under_systemd(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(es_notify_supported(), 0);
	es_notify_ready("serving");
	assert_false(libsystemd_mapped());
	setenv("NOTIFY_SOCKET", "/nonexistent/notify", 1);
	assert_int_equal(es_notify_supported(), 1);
	assert_true(libsystemd_mapped());
	unsetenv("NOTIFY_SOCKET");
}

static void test_ready_and_stopping(void **state)
{
	fixture *f = *state;
	char buf[512], longst[400];

	es_notify_ready("serving");
	assert_true(recv_msg(f, buf, sizeof(buf), 1000));
	assert_string_equal(buf, "READY=1\nSTATUS=serving");

	memset(longst, 'x', sizeof(longst) - 1);
	longst[sizeof(longst) - 1] = '\0';
	es_notify_ready(longst);
	assert_true(recv_msg(f, buf, sizeof(buf), 1000));
	assert_int_equal(strlen(buf), strlen("READY=1\nSTATUS=") + 200);

	es_notify_stopping();
	assert_true(recv_msg(f, buf, sizeof(buf), 1000));
	assert_string_equal(buf, "STOPPING=1");
}

static void test_watchdog_pings_from_the_loop(void **state)
{
	fixture *f = *state;
	char buf[256], err[256] = "";
	uint64_t usec = 0;
	int n;

	setenv("WATCHDOG_USEC", "200000", 1);
	assert_int_equal(es_notify_watchdog_start(f->ctx, &usec, err, sizeof(err)), ES_OK);
	assert_int_equal(usec, 200000);
	/* One at once, then one per 100 ms, only while the loop runs. */
	assert_true(recv_msg(f, buf, sizeof(buf), 1000));
	assert_string_equal(buf, "WATCHDOG=1");
	assert_false(recv_msg(f, buf, sizeof(buf), 300));
	n = run_loop_count(f, 550);
	assert_in_range(n, 3, 7);
	assert_int_equal(es_notify_watchdog_start(f->ctx, &usec, err, sizeof(err)),
			 ES_ERR_STATE);

	es_notify_stopping();
	assert_true(recv_msg(f, buf, sizeof(buf), 1000));
	assert_string_equal(buf, "STOPPING=1");
	assert_int_equal(run_loop_count(f, 300), 0);
}

static void test_watchdog_for_another_pid(void **state)
{
	fixture *f = *state;
	char err[256] = "";
	uint64_t usec = 7;

	setenv("WATCHDOG_USEC", "200000", 1);
	setenv("WATCHDOG_PID", "1", 1);
	assert_int_equal(es_notify_watchdog_start(f->ctx, &usec, err, sizeof(err)), ES_OK);
	assert_int_equal(usec, 0);
	assert_int_equal(run_loop_count(f, 300), 0);
}

static void test_watchdog_own_pid(void **state)
{
	fixture *f = *state;
	char err[256] = "", pid[32];
	uint64_t usec = 0;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_USEC", "1000000", 1);
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(es_notify_watchdog_start(f->ctx, &usec, err, sizeof(err)), ES_OK);
	assert_int_equal(usec, 1000000);
	assert_true(run_loop_count(f, 100) >= 1);
}

static void test_watchdog_malformed(void **state)
{
	fixture *f = *state;
	char err[256] = "";
	uint64_t usec = 7;

	setenv("WATCHDOG_USEC", "soon", 1);
	assert_int_equal(es_notify_watchdog_start(f->ctx, &usec, err, sizeof(err)),
			 ES_ERR_INVAL);
	assert_non_null(strstr(err, "WATCHDOG_USEC"));
	assert_int_equal(usec, 0);
	assert_int_equal(run_loop_count(f, 100), 0);
}

static void test_no_service_manager(void **state)
{
	fixture *f = *state;
	char err[256] = "", buf[64];
	uint64_t usec = 7;

	unsetenv("NOTIFY_SOCKET");
	es_notify_ready("serving");
	assert_int_equal(es_notify_watchdog_start(f->ctx, &usec, err, sizeof(err)), ES_OK);
	assert_int_equal(usec, 0);
	es_notify_stopping();
	assert_false(recv_msg(f, buf, sizeof(buf), 100));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loaded_only_under_systemd),
		cmocka_unit_test_setup_teardown(test_ready_and_stopping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watchdog_pings_from_the_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watchdog_for_another_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watchdog_own_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watchdog_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_service_manager, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
