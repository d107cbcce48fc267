/*
 * es_notify.h - notifications to the service manager (systemd's
 * sd_notify(3) protocol): readiness, stopping, and watchdog keep-alives
 * sent from a timer on the program's event loop, so a loop that is stuck
 * stops the keep-alives and systemd restarts the service
 * (systemd.service(5), WatchdogSec=).
 *
 * These call sd_notify(3) and sd_watchdog_enabled(3) from libsystemd,
 * loaded at run time (dlopen) only when $NOTIFY_SOCKET says a service
 * manager listens, so nothing is needed at build time and hosts without
 * systemd pay nothing. Outside systemd (no $NOTIFY_SOCKET) every function
 * is a no-op that succeeds; under systemd without libsystemd0 they warn
 * once and do nothing. The process keeps one
 * watchdog timer: these functions are called only from the thread that
 * runs the event loop.
 */
#ifndef ES_NOTIFY_H
#define ES_NOTIFY_H

#include <stddef.h>
#include <stdint.h>
#include <libwebsockets.h>
#include "es_err.h"

/* 1 when a service manager asked for notifications ($NOTIFY_SOCKET) and
 * libsystemd is loaded, else 0. */
int es_notify_supported(void);

/*
 * Tells the service manager the program is serving: "READY=1" and
 * "STATUS=<status>" (status may be NULL; at most 200 bytes are sent).
 * Call it once the listeners are bound and the first state is in place.
 * A failure to send is logged (component "notify") and otherwise ignored.
 */
void es_notify_ready(const char *status);

/* Sends "STOPPING=1" and stops the watchdog timer. Idempotent. */
void es_notify_stopping(void);

/*
 * When the service manager asked this process for keep-alives
 * ($WATCHDOG_USEC, and $WATCHDOG_PID naming this process if set), sends
 * "WATCHDOG=1" now and then every half interval from a timer on ctx's
 * event loop (borrowed: it must outlive es_notify_watchdog_stop or
 * es_notify_stopping, which must be called before the context is
 * destroyed). *usec (may be NULL) gets the interval the manager asked for
 * in microseconds, 0 when none.
 * Errors: ES_ERR_INVAL ($WATCHDOG_USEC or $WATCHDOG_PID malformed; err
 * says which), ES_ERR_STATE (a watchdog timer already runs).
 */
es_err es_notify_watchdog_start(struct lws_context *ctx, uint64_t *usec,
				char *err, size_t errsz);

/* Cancels the watchdog timer, if any. */
void es_notify_watchdog_stop(void);

#endif
