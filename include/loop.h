/* The event loop: one thread owns every socket and timer (see docs/design.md).
 * Level-triggered epoll, fd-indexed handlers, a short timer list and
 * before-sleep hooks (the engine commits its index batch there, the server
 * serves connections it kicked). Connections are not freed here: a closed
 * connection is freed when its last request in flight lets go of it
 * (proto/conn.c). */
#ifndef CFS_LOOP_H
#define CFS_LOOP_H

#include <stdint.h>

struct loop;
struct loop_timer;

/* revents uses poll(2) bits: POLLIN, POLLOUT, POLLERR, POLLHUP. */
typedef void (*loop_io_fn)(struct loop *l, int fd, int revents, void *arg);
typedef void (*loop_fn)(struct loop *l, void *arg);

struct loop *loop_new(void);
void loop_free(struct loop *l);

/* Watch fd for events (POLLIN|POLLOUT). Returns 0 or -errno. */
int loop_add(struct loop *l, int fd, int events, loop_io_fn fn, void *arg);
/* Change the watched events; cheap when unchanged. 0 or -errno (-EBADF:
 * fd is not watched). */
int loop_set(struct loop *l, int fd, int events);
/* Stop watching fd (before closing it). Pending events of fd in the current
 * pass are dropped. */
void loop_del(struct loop *l, int fd);

/* Run fn after delay_ms, then every period_ms (0 = once; a one-shot timer
 * is freed after it fires). The returned handle is valid until it fires
 * (one-shot) or is cancelled; NULL when memory is short. */
struct loop_timer *loop_timer_add(struct loop *l, uint64_t delay_ms, uint64_t period_ms,
				  loop_fn fn, void *arg);
void loop_timer_cancel(struct loop *l, struct loop_timer *t);

/* Hooks run at the end of every pass, before the loop sleeps again, in
 * the order they were added. 0, or -ENOSPC when the loop's small table
 * of hooks is full. */
int loop_before_sleep(struct loop *l, loop_fn fn, void *arg);
void loop_before_sleep_del(struct loop *l, loop_fn fn, void *arg);

/* Work is pending: the next pass does not sleep. */
void loop_pending(struct loop *l);

/* After a pass that handled events, poll without sleeping for up to us
 * microseconds before blocking (0: never). */
void loop_set_busy_poll(struct loop *l, unsigned us);

/* Run until loop_stop(); returns 0. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);
/* A stop asked for by a signal. The handler calls loop_signal_stop()
 * (async-signal-safe: it sets a flag, nothing else); the waits that block
 * the loop's thread at start-up (the upstream's MOUNT, rpcbind
 * registration) give up when loop_stop_signalled() says so, so that a
 * SIGINT or SIGTERM during a start against a hung filer or rpcbind ends
 * it at once instead of after their timeouts. Process-wide: one daemon,
 * one stop. */
void loop_signal_stop(void);
int loop_stop_signalled(void);
/* Run one pass waiting at most timeout_ms (for startup sequences). */
void loop_once(struct loop *l, int timeout_ms);

/* Monotonic milliseconds, refreshed every pass. */
uint64_t loop_now(struct loop *l);
/* Monotonic milliseconds / microseconds read now. */
uint64_t loop_clock_ms(void);
uint64_t loop_clock_us(void);

#endif
