#include "log.h"

#include <stdarg.h>
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

void log_msg(int level, const char *fmt, ...)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
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
	va_end(ap);
}
