#include "log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static int log_syslog;
static int log_journal; /* stderr is systemd's journal stream */
static int log_level = CFS_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* systemd connects a service's stderr to the journal and says so in
 * $JOURNAL_STREAM ("DEVICE:INODE" of that stream). Compared with stderr
 * itself, as sd_journal_stream_fd(3) advises: a shell started from a
 * service inherits the variable with another stderr. */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char tail;

	if (js == NULL || sscanf(js, "%llu:%llu%c", &dev, &ino, &tail) != 2)
		return 0;
	if (fstat(STDERR_FILENO, &st) != 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(int use_syslog, int level)
{
	log_syslog = use_syslog;
	log_level = level;
	log_journal = !use_syslog && stderr_is_journal();
	if (use_syslog)
		openlog("cachefsd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

int log_to_journal(void)
{
	return log_journal;
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
	char line[4096];
	int n;

	if (log_syslog) {
		vsyslog(prio[level], fmt, ap);
		return;
	}
	if (log_journal) {
		/* "<N>": the line's syslog priority, which journald takes off
		 * and keeps as PRIORITY=; it adds the time and the identifier */
		n = snprintf(line, sizeof(line), "<%d>", prio[level]);
	} else {
		struct timespec ts;
		struct tm tm;
		char when[40];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		n = snprintf(line, sizeof(line), "%s.%03ld cachefsd %s: ", when,
			     ts.tv_nsec / 1000000, level_names[level]);
	}
	if (n < 0)
		return;
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2; /* cut, still one line */
	line[n++] = '\n';
	/* one write per line: lines of several threads do not mix, and the
	 * journal's stream sees whole lines */
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere else to say it */
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
