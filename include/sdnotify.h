/* The service manager's notification protocol (systemd's sd_notify(3)),
 * for a Type=notify service: cachefsd/ops/sdnotify.c.
 *
 * The protocol is one datagram per message, "KEY=VALUE" lines, sent to the
 * Unix socket named by $NOTIFY_SOCKET (a path, or an abstract name when it
 * starts with '@'). Written here rather than linked from libsystemd: it is
 * a few lines of sendto(), and the daemon then runs unchanged on hosts
 * without systemd (the functions do nothing when $NOTIFY_SOCKET is unset).
 *
 * What the daemon sends (docs/operations.md, "As a service"):
 *   READY=1              once serving: listeners up, upstream mounted,
 *                        registered; again when a reload has ended
 *   RELOADING=1          a reload begins (with MONOTONIC_USEC=, the time it
 *                        began, as systemd 253+ wants it)
 *   STOPPING=1           a stop begins
 *   STATUS=...           a one-line summary (READ hit ratio, upstream
 *                        connections, cache fill), refreshed every
 *                        SDNOTIFY_STATUS_MS while it changes
 *   WATCHDOG=1           every half of $WATCHDOG_USEC, from a timer of the
 *                        event loop: a loop that stalls stops the pings,
 *                        and the manager restarts the service
 * Messages are sent without blocking; one the socket cannot take now is
 * dropped (the next refresh or ping replaces it).
 *
 * Loop thread only (or before the loop runs). */
#ifndef CFS_SDNOTIFY_H
#define CFS_SDNOTIFY_H

#include <stdint.h>

#include "control.h"

#define SDNOTIFY_STATUS_MS 5000

/* Reads $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID (the watchdog is
 * ours only when $WATCHDOG_PID is unset or our pid) and removes them from
 * the environment, so that nothing the daemon might start inherits them.
 * Returns 1 when a service manager listens (the daemon then must not fork:
 * the manager expects the messages from the process it started), 0 when
 * not, -errno when $NOTIFY_SOCKET is set but unusable (logged; the daemon
 * runs without notifications). Call once, early. */
int sdnotify_init(void);
/* 1 after sdnotify_init() found a manager. */
int sdnotify_active(void);
/* The watchdog timeout the manager set for us, in microseconds; 0: none. */
uint64_t sdnotify_watchdog_usec(void);

/* Sends one message (lines "KEY=VALUE" separated by '\n'). 0, -errno, or
 * 0 without sending when no manager listens. */
int sdnotify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Serving: READY=1 with the first STATUS=, and the status and watchdog
 * timers start on env->loop (env is kept: it must outlive
 * sdnotify_stop()). */
void sdnotify_ready(const struct ops_env *env);
/* A reload begins (RELOADING=1) and ends (READY=1 and a fresh STATUS=,
 * whatever its outcome: the old configuration keeps serving when the new
 * one is refused). */
void sdnotify_reloading(void);
void sdnotify_reloaded(void);
/* A stop begins: STOPPING=1; the timers end (a stop is bounded by the
 * manager's stop timeout, not its watchdog). */
void sdnotify_stopping(void);
/* Start-up failed: STATUS= with the reason (shown by systemctl status). */
void sdnotify_failed(const char *why);

/* The one-line summary STATUS= carries, into buf (always terminated). */
void sdnotify_summary(const struct ops_env *env, char *buf, size_t len);

#endif
