/* Logging: stderr in the foreground, syslog otherwise. One line per
 * notable event, written whole (one write per line, whichever thread).
 * Safe to call before log_init() (stderr).
 *   stderr    "2025-01-31 12:00:00.123 cachefsd info: text": date, time,
 *             priority (error, warn, info, debug)
 *   journal   stderr is systemd's journal stream ($JOURNAL_STREAM names
 *             it): "<6>text", the syslog priority journald keeps as
 *             PRIORITY=; the time and SYSLOG_IDENTIFIER are journald's
 *             (the unit's SyslogIdentifier=)
 *   syslog    facility daemon, ident "cachefsd" (daemonized) */
#ifndef CFS_LOG_H
#define CFS_LOG_H

#include <stdint.h>

enum cfs_log_level {
	CFS_LOG_ERR = 0,
	CFS_LOG_WARN = 1,
	CFS_LOG_INFO = 2,
	CFS_LOG_DEBUG = 3,
};

/* use_syslog: 0 = stderr, 1 = syslog(LOG_DAEMON) with ident "cachefsd". */
void log_init(int use_syslog, int level);
/* 1 when lines go to the journal stream (log_init found $JOURNAL_STREAM
 * to be stderr). */
int log_to_journal(void);
void log_set_level(int level);
int log_get_level(void);
/* Parses "error", "warn", "info", "debug"; returns the level or -1. */
int log_level_parse(const char *s);
const char *log_level_name(int level);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)   log_msg(CFS_LOG_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(CFS_LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(CFS_LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(CFS_LOG_DEBUG, __VA_ARGS__)

/* A line that a client, the network or the upstream can make repeat, rate
 * limited per call site: the first line of a LOG_LIMIT_WINDOW_MS window is
 * written; the others of that window are counted, and when the window has
 * ended (log_limit_flush(), once a second, or the site's next line) one
 * more line is written: the last of them followed by " (N more in the last
 * 10 s)". So a site writes at most two lines per window, and no event goes
 * uncounted. Declare one per call site, zeroed:
 *     static struct log_limit lim;
 *     log_limited(&lim, CFS_LOG_WARN, "client %s: ...", peer);
 * Loop thread only (the list of held lines has no lock). */
#define LOG_LIMIT_WINDOW_MS 10000

struct log_limit {
	uint64_t window_end_ms; /* 0: no window open */
	uint64_t held;		/* lines of this window not written yet */
	int level;
	int listed; /* on the list log_limit_flush() walks */
	struct log_limit *next;
	char last[320]; /* the last line held back */
};

void log_limited(struct log_limit *ll, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Writes the summary line of every window that has ended. */
void log_limit_flush(void);
/* Lines held back so far (all sites, since start): for the stats. */
uint64_t log_limit_suppressed(void);

#endif
