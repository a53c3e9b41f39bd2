/* The service manager's notification protocol: see include/sdnotify.h.
 * No libsystemd: the protocol is a datagram of "KEY=VALUE" lines to the
 * socket $NOTIFY_SOCKET names, which is all this file does; the library
 * would be one more run-time dependency (and one more thing to keep in
 * the sandbox) for a sendto(). */
#include "sdnotify.h"
#include "engine.h"
#include "log.h"
#include "loop.h"
#include "store.h"
#include "origin.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static struct {
	int fd; /* datagram socket; -1: no manager */
	struct sockaddr_un addr;
	socklen_t addrlen;
	uint64_t watchdog_usec; /* 0: no watchdog for this process */
	const struct ops_env *env; /* set by sdnotify_ready() */
	struct loop_timer *status_timer, *watchdog_timer;
	char last_status[512]; /* what the manager was last told */
} sdn = {.fd = -1};

int sdnotify_active(void)
{
	return sdn.fd >= 0;
}

uint64_t sdnotify_watchdog_usec(void)
{
	return sdn.watchdog_usec;
}

/* The watchdog fields: WATCHDOG_USEC is a decimal count of microseconds;
 * WATCHDOG_PID, when present, names the process the manager expects the
 * pings from (another one's variables may have been inherited). */
static uint64_t watchdog_from_env(void)
{
	const char *us = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (us == NULL || *us == 0)
		return 0;
	errno = 0;
	v = strtoull(us, &end, 10);
	if (errno || *end || v == 0) {
		log_warn("WATCHDOG_USEC='%s' is not a number of microseconds: no watchdog pings", us);
		return 0;
	}
	if (pid && *pid) {
		long p = strtol(pid, &end, 10);

		if (*end || p != (long)getpid())
			return 0; /* meant for another process */
	}
	return v;
}

int sdnotify_init(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t n;
	int rc = 0;

	sdn.watchdog_usec = watchdog_from_env();
	if (path == NULL || *path == 0)
		goto out;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sdn.addr.sun_path)) {
		log_warn("NOTIFY_SOCKET='%s' is not a socket path or an abstract name: the service "
		         "manager is not told when cachefsd is ready",
		         path);
		rc = -EINVAL;
		goto out;
	}
	memset(&sdn.addr, 0, sizeof(sdn.addr));
	sdn.addr.sun_family = AF_UNIX;
	memcpy(sdn.addr.sun_path, path, n);
	if (path[0] == '@')
		sdn.addr.sun_path[0] = 0; /* the abstract namespace: no file, exact length */
	sdn.addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '/'));
	sdn.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sdn.fd < 0) {
		rc = -errno;
		log_warn("NOTIFY_SOCKET: cannot create a socket: %s", strerror(errno));
	} else {
		rc = 1;
	}
out:
	if (sdn.fd < 0)
		sdn.watchdog_usec = 0; /* nobody to ping */
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	return rc;
}

static int send_text(const char *msg, size_t len)
{
	ssize_t n;

	if (sdn.fd < 0)
		return 0;
	/* MSG_DONTWAIT: the loop never waits on the manager; a full queue
	 * drops this message, and the next ping or refresh follows */
	n = sendto(sdn.fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&sdn.addr,
	           sdn.addrlen);
	if (n < 0) {
		static struct log_limit lim;
		int e = errno;

		log_limited(&lim, CFS_LOG_WARN, "NOTIFY_SOCKET: cannot send to the service manager: %s",
		            strerror(e));
		return -e;
	}
	return 0;
}

int sdnotify_send(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	if (sdn.fd < 0)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	return send_text(msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

static const char *human(char *buf, size_t len, uint64_t v)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", d, unit[u]);
	return buf;
}

void sdnotify_summary(const struct ops_env *env, char *buf, size_t len)
{
	const struct engine_counters *ec = engine_counters(env->engine);
	const struct upstream_counters *u = origin_counters(env->up);
	uint64_t reads = ec->read_hits + ec->read_misses + ec->read_passthrough;
	struct store_stats ss;
	char ratio[32], b1[32], b2[32];
	int n;

	engine_cache_stats(env->engine, &ss);
	if (reads)
		snprintf(ratio, sizeof(ratio), "%.1f%%",
		         100.0 * (double)ec->read_hits / (double)reads);
	else
		snprintf(ratio, sizeof(ratio), "-");
	/* the same figures cachefsctl stats shows, on one line */
	n = snprintf(buf, len, "READ hit ratio %s of %llu; upstream %s, %d/%d connections",
	             ratio, (unsigned long long)reads, u->conns_up > 0 ? "up" : "DOWN", u->conns_up,
	             u->conns_total);
	if (n >= 0 && (size_t)n < len && u->waiting)
		n += snprintf(buf + n, len - (size_t)n, ", %d calls waiting", u->waiting);
	if (n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "; cache %s in %llu files",
		              human(b1, sizeof(b1), ss.bytes), (unsigned long long)ss.objects);
	if (n >= 0 && (size_t)n < len && env->cfg->cache_size)
		n += snprintf(buf + n, len - (size_t)n, ", %.0f%% of %s",
		              100.0 * (double)ss.bytes / (double)env->cfg->cache_size,
		              human(b2, sizeof(b2), env->cfg->cache_size));
	if (n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", disk %llu%% free",
		              (unsigned long long)ss.free_blocks_pct);
	if (n >= 0 && (size_t)n < len && ss.fill_stopped)
		n += snprintf(buf + n, len - (size_t)n, ", filling stopped (%s)",
		              store_fill_reason_name(ss.fill_reason));
	if (n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "; %d clients", proto_client_count(env->srv));
}

/* STATUS= when the summary changed (or force) */
static void status_send(int force)
{
	char line[sizeof(sdn.last_status)];

	if (sdn.fd < 0 || sdn.env == NULL)
		return;
	sdnotify_summary(sdn.env, line, sizeof(line));
	if (!force && strcmp(line, sdn.last_status) == 0)
		return;
	if (sdnotify_send("STATUS=%s", line) == 0)
		memcpy(sdn.last_status, line, sizeof(line));
}

static void status_tick(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
	status_send(0);
}

/* On the loop's own timer, so a loop that is stuck (a handler that does
 * not return, a lock never released) sends no more pings. */
static void watchdog_tick(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
	sdnotify_send("WATCHDOG=1");
}

void sdnotify_ready(const struct ops_env *env)
{
	char line[sizeof(sdn.last_status)];

	if (sdn.fd < 0)
		return;
	sdn.env = env;
	sdnotify_summary(env, line, sizeof(line));
	if (sdnotify_send("READY=1\nSTATUS=%s", line) == 0)
		memcpy(sdn.last_status, line, sizeof(line));
	if (sdn.status_timer == NULL)
		sdn.status_timer = loop_timer_add(env->loop, SDNOTIFY_STATUS_MS, SDNOTIFY_STATUS_MS,
		                                  status_tick, NULL);
	if (sdn.watchdog_usec && sdn.watchdog_timer == NULL) {
		/* half the timeout, as the manager recommends; at least 1 ms */
		uint64_t ms = sdn.watchdog_usec / 2000;

		if (ms == 0)
			ms = 1;
		sdnotify_send("WATCHDOG=1");
		sdn.watchdog_timer = loop_timer_add(env->loop, ms, ms, watchdog_tick, NULL);
		log_info("watchdog: pinging the service manager every %llu ms (WATCHDOG_USEC %llu)",
		         (unsigned long long)ms, (unsigned long long)sdn.watchdog_usec);
	}
	if (sdn.status_timer == NULL || (sdn.watchdog_usec && sdn.watchdog_timer == NULL))
		log_warn("service manager: out of memory for a timer; status or watchdog pings "
		         "missing");
}

void sdnotify_reloading(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	sdnotify_send("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading the configuration",
	              (unsigned long long)ts.tv_sec * 1000000ULL +
	                  (unsigned long long)ts.tv_nsec / 1000ULL);
}

void sdnotify_reloaded(void)
{
	char line[sizeof(sdn.last_status)];

	if (sdn.fd < 0 || sdn.env == NULL) {
		sdnotify_send("READY=1");
		return;
	}
	sdnotify_summary(sdn.env, line, sizeof(line));
	if (sdnotify_send("READY=1\nSTATUS=%s", line) == 0)
		memcpy(sdn.last_status, line, sizeof(line));
}

void sdnotify_stopping(void)
{
	if (sdn.fd < 0)
		return;
	sdnotify_send("STOPPING=1\nSTATUS=stopping");
	if (sdn.env) {
		if (sdn.status_timer)
			loop_timer_cancel(sdn.env->loop, sdn.status_timer);
		if (sdn.watchdog_timer)
			loop_timer_cancel(sdn.env->loop, sdn.watchdog_timer);
	}
	sdn.status_timer = sdn.watchdog_timer = NULL;
	sdn.env = NULL;
}

void sdnotify_failed(const char *why)
{
	sdnotify_send("STATUS=start-up failed: %s", why);
}
