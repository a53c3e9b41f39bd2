/* Logging: stderr (with a timestamp) in the foreground, syslog otherwise.
 * One line per notable event. Safe to call before log_init() (stderr). */
#ifndef CFS_LOG_H
#define CFS_LOG_H

enum cfs_log_level {
	CFS_LOG_ERR = 0,
	CFS_LOG_WARN = 1,
	CFS_LOG_INFO = 2,
	CFS_LOG_DEBUG = 3,
};

/* use_syslog: 0 = stderr, 1 = syslog(LOG_DAEMON) with ident "cachefsd". */
void log_init(int use_syslog, int level);
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

#endif
