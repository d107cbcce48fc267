/*
 * es_notify.c - sd_notify(3) readiness, stopping and watchdog keep-alives
 * (see es_notify.h).
 *
 * libsystemd is loaded with dlopen(3) the first time a notification is due
 * and $NOTIFY_SOCKET says a service manager listens. Linked in, it and the
 * libraries it pulls (libgcrypt, liblz4, libzstd, liblzma, libcap) cost the
 * agent about 1 MiB of resident memory on every host, including the
 * containers and opkg devices that never run it under systemd.
 */
#include "es_notify.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_log.h"

/* The soname of libsystemd's stable ABI (Debian package libsystemd0). */
#define ES_LIBSYSTEMD "libsystemd.so.0"

static struct {
	struct lws_context *ctx;
	lws_sorted_usec_list_t sul;
	lws_usec_t period;
	int armed;
	int warned;
} wd;

static struct {
	int tried;
	void *handle;
	int (*notify)(int unset_environment, const char *state);
	int (*watchdog_enabled)(int unset_environment, uint64_t *usec);
} sd;

/* Loads libsystemd once, when a service manager asked for notifications
 * ($NOTIFY_SOCKET). Returns 1 when the functions are usable. */
static int sd_load(void)
{
	const char *sock = getenv("NOTIFY_SOCKET");

	if (sd.handle)
		return 1;
	if (!sock || !*sock || sd.tried)
		return 0;
	sd.tried = 1;
	sd.handle = dlopen(ES_LIBSYSTEMD, RTLD_NOW | RTLD_LOCAL);
	if (sd.handle) {
		*(void **)&sd.notify = dlsym(sd.handle, "sd_notify");
		*(void **)&sd.watchdog_enabled = dlsym(sd.handle, "sd_watchdog_enabled");
	}
	if (!sd.handle || !sd.notify || !sd.watchdog_enabled) {
		const char *why = dlerror();

		es_log_warn("notify", "the service manager asked for notifications "
			    "but " ES_LIBSYSTEMD " cannot be loaded"
#ifdef ES_STATIC_AGENT
			    " by this static agent (no dlopen; run it as Type=simple)",
#else
			    " (install the libsystemd0 package)",
#endif
			    "error", why ? why : "missing symbols", NULL);
		if (sd.handle)
			dlclose(sd.handle);
		memset(&sd, 0, sizeof(sd));
		sd.tried = 1;
		return 0;
	}
	return 1;
}

int es_notify_supported(void)
{
	return sd_load();
}

static void send_state(const char *state)
{
	char e[128];
	int rc;

	if (!sd_load())
		return;
	rc = sd.notify(0, state);
	if (rc >= 0 || wd.warned)
		return;
	wd.warned = 1;
	snprintf(e, sizeof(e), "%s", strerror(-rc));
	es_log_warn("notify", "cannot notify the service manager", "error", e, NULL);
}

static void watchdog_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	send_state("WATCHDOG=1");
	lws_sul_schedule(wd.ctx, 0, &wd.sul, watchdog_cb, wd.period);
}

void es_notify_ready(const char *status)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%.200s", status ? status : "");
	send_state(msg);
}

void es_notify_watchdog_stop(void)
{
	if (wd.armed)
		lws_sul_cancel(&wd.sul);
	memset(&wd.sul, 0, sizeof(wd.sul));
	wd.armed = 0;
	wd.ctx = NULL;
}

void es_notify_stopping(void)
{
	es_notify_watchdog_stop();
	send_state("STOPPING=1");
}

es_err es_notify_watchdog_start(struct lws_context *ctx, uint64_t *usec,
				char *err, size_t errsz)
{
	uint64_t u = 0;
	char iv[32];
	int rc;

	if (usec)
		*usec = 0;
	if (wd.armed)
		return es_errf(ES_ERR_STATE, err, errsz, "watchdog: already running");
	if (!sd_load())
		return ES_OK;
	rc = sd.watchdog_enabled(0, &u);
	if (rc < 0)
		return es_errf(ES_ERR_INVAL, err, errsz,
			       "watchdog: WATCHDOG_USEC or WATCHDOG_PID: %s",
			       strerror(-rc));
	if (rc == 0)
		return ES_OK;
	if (usec)
		*usec = u;
	wd.ctx = ctx;
	/* Half the interval, as sd_watchdog_enabled(3) recommends; at least
	 * 1 ms so that a tiny WATCHDOG_USEC cannot spin the loop. */
	wd.period = (lws_usec_t)(u / 2 > 1000 ? u / 2 : 1000);
	wd.armed = 1;
	send_state("WATCHDOG=1");
	lws_sul_schedule(ctx, 0, &wd.sul, watchdog_cb, wd.period);
	snprintf(iv, sizeof(iv), "%llu", (unsigned long long)(u / 1000));
	es_log_info("notify", "watchdog enabled", "intervalMs", iv, NULL);
	return ES_OK;
}
