#include "log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static int log_syslog;
static int log_level = CFS_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_init(int use_syslog, int level)
{
	log_syslog = use_syslog;
	log_level = level;
	if (use_syslog)
		openlog("cachefsd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

int log_level_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

const char *log_level_name(int level)
{
	if (level < 0 || level > 3)
		return "?";
	return level_names[level];
}

static void log_vmsg(int level, const char *fmt, va_list ap)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

	if (log_syslog) {
		vsyslog(prio[level], fmt, ap);
	} else {
		struct timespec ts;
		struct tm tm;
		char when[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld cachefsd %s: ", when, ts.tv_nsec / 1000000,
			level_names[level]);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

/* --- rate-limited lines ----------------------------------------------------- */

static struct log_limit *held_list; /* sites with lines held in their window */
static uint64_t suppressed_total;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void limit_summary(struct log_limit *ll)
{
	if (ll->held)
		log_msg(ll->level, "%s (%" PRIu64 " more in the last %d s)", ll->last, ll->held,
			LOG_LIMIT_WINDOW_MS / 1000);
	ll->held = 0;
}

void log_limited(struct log_limit *ll, int level, const char *fmt, ...)
{
	uint64_t now = mono_ms();
	va_list ap;

	if (level > log_level)
		return;
	if (ll->window_end_ms && now < ll->window_end_ms) {
		/* inside the window: keep the text, count it */
		va_start(ap, fmt);
		vsnprintf(ll->last, sizeof(ll->last), fmt, ap);
		va_end(ap);
		ll->level = level;
		ll->held++;
		suppressed_total++;
		if (!ll->listed) {
			ll->listed = 1;
			ll->next = held_list;
			held_list = ll;
		}
		return;
	}
	limit_summary(ll); /* a window that ended before the flush saw it */
	ll->window_end_ms = now + LOG_LIMIT_WINDOW_MS;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void log_limit_flush(void)
{
	uint64_t now;
	struct log_limit **pp = &held_list;

	if (held_list == NULL)
		return;
	now = mono_ms();
	while (*pp) {
		struct log_limit *ll = *pp;

		if (now < ll->window_end_ms && ll->held) {
			pp = &ll->next;
			continue;
		}
		limit_summary(ll);
		ll->listed = 0;
		*pp = ll->next;
		ll->next = NULL;
	}
}

uint64_t log_limit_suppressed(void)
{
	return suppressed_total;
}
