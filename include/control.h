/* The operator interfaces of the daemon: the control socket cachefsctl
 * talks to (cachefsd/ops/control.c) and the Prometheus metrics listener
 * (cachefsd/ops/metrics.c). Both run on the event loop thread: what they read
 * (counters, the store) is read where it is written, never from another
 * thread. See docs/operations.md.
 *
 * The control protocol, on a Unix stream socket (default
 * <cache_dir>/control, mode 0600; only root and the daemon's own user may
 * connect, checked with SO_PEERCRED):
 *
 *   request   one line: COMMAND [ARG...] (words separated by spaces,
 *             at most CONTROL_LINE_MAX bytes, ending in '\n'); %XX in a
 *             word is the byte XX (for names with spaces or '%')
 *   response  any number of data lines, then one final line:
 *             ".ok" or ".error MESSAGE"
 *
 * A data line that starts with '.' is sent with one more '.' in front
 * (dot-stuffing, as in SMTP), so a line starting with '.' and one more
 * character that is not a '.' always ends the response. Several requests
 * may be sent in turn on one connection; each is answered in order. A
 * client that disconnects stops a verify or cull it started.
 *
 * Commands:
 *   stats                        every counter as "name value" lines (the
 *                                lines SIGUSR1 writes to stats_file)
 *   info                         "key value" lines: version, pid,
 *                                uptime_seconds, listen, port, export,
 *                                upstream, upstream_export, cache_dir,
 *                                control_socket, metrics_listen, meta_ttl,
 *                                cache_size, bcull, bstop, fcull, fstop
 *   config                       the effective configuration (config-file
 *                                syntax)
 *   invalidate --all             everything cached: data and metadata
 *   invalidate --fh HEX          one file handle (hex, as the upstream's)
 *   invalidate PATH              the object at PATH (relative to the export,
 *                                or absolute under it), looked up on the
 *                                upstream as root, and its directory's
 *                                listings and lookups
 *   cull [--to PERCENT]          evict least recently used objects now:
 *                                until the configured limits hold, or until
 *                                the cache holds at most PERCENT % of
 *                                cache_size (of what it holds now when
 *                                cache_size is 0)
 *   verify [--drop-bad]          check every inline object and chunk
 *                                against its checksum; data lines "bad ..."
 *                                name each bad entry, the last data line is
 *                                "summary ..."
 *   reload                       as SIGHUP: one data line says what changed
 *                                and what needs a restart; ".error" with the
 *                                file:line:key message when the new
 *                                configuration is bad (the old one stays)
 *   test-stall MS                only when the daemon was started with
 *                                CACHEFSD_TEST_HOOKS=1 in its environment
 *                                (an unknown request otherwise): the event
 *                                loop thread sleeps MS ms, as a stuck
 *                                handler would make it (the watchdog test)
 */
#ifndef CFS_CONTROL_H
#define CFS_CONTROL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "config.h"
#include "engine.h"
#include "loop.h"
#include "proto.h"
#include "origin.h"

#define CONTROL_SOCKET_NAME "control"
#define CONTROL_LINE_MAX    8192

/* Counters of the operator interfaces themselves: one row each in
 * control_counters.def, which says what they mean. */
struct control_counters {
#define CONTROL_COUNTER(field, stat, type, metric, label, help) uint64_t field;
#include "control_counters.def"
#undef CONTROL_COUNTER
};
/* The stats name of a field whose stats name is the field's (checked at
 * compile time: the field exists). */
#define CONTROL_STAT(field) (sizeof(((struct control_counters *)0)->field) ? #field : #field)
extern struct control_counters control_counters;

/* The rows of proto_counters.def, in stats order (counters.h); static
 * storage. */
extern const struct cfs_counter_desc proto_counter_descs[];
extern const size_t proto_counter_ndescs;
/* The rows of control_counters.def, in stats order; static storage. */
extern const struct cfs_counter_desc control_counter_descs[];
extern const size_t control_counter_ndescs;

/* What the operator interfaces read and act on. Everything is owned by
 * main.c and outlives control_stop()/metrics_stop(). */
struct ops_env {
	struct loop *loop;
	struct cfs_config *cfg;
	struct engine *engine;
	struct origin *up;
	struct proto_server *srv;
	const char *version;
	time_t started; /* wall clock */
	/* Re-reads the configuration (SIGHUP). Returns 0 with what changed in
	 * msg, or -EINVAL with the file:line:key message in msg (the running
	 * configuration stays). */
	int (*reload)(void *arg, char *msg, size_t len);
	void *reload_arg;
};

/* Every counter, "name value" per line: the stats file, `stats`. */
void ops_write_stats(const struct ops_env *env, FILE *out);

struct control;

/* Creates the socket at cfg->control_socket or <cache_dir>/control (a
 * stale socket there is replaced) and serves it on the loop. Returns 0 or
 * -errno with a message in err. */
int control_start(const struct ops_env *env, struct control **out, char *err, size_t errlen);
/* Closes every connection and removes the socket. Operations still
 * waiting for the upstream finish without a client. */
void control_stop(struct control *c);
/* The socket's path (valid until control_stop). */
const char *control_path(const struct control *c);

struct metrics;

/* Serves GET /metrics on cfg->metrics_listen (nothing when it is unset or
 * "off": *out is NULL). Returns 0 or -errno with a message in err. */
int metrics_start(const struct ops_env *env, struct metrics **out, char *err, size_t errlen);
void metrics_stop(struct metrics *m);
/* The Prometheus text exposition of every metric (the /metrics body), in a
 * malloc()ed string the caller frees; NULL when out of memory. */
char *metrics_render(const struct ops_env *env, size_t *len);

/* The daemon process as /proc/self shows it, for the standard process_*
 * metrics and the process_* stats lines. A field that could not be read
 * is 0 (have says which were). */
struct ops_process {
	uint64_t open_fds;       /* entries of /proc/self/fd */
	uint64_t max_fds;        /* RLIMIT_NOFILE, soft */
	uint64_t resident_bytes; /* /proc/self/stat rss x the page size */
	uint64_t virtual_bytes;  /* /proc/self/stat vsize */
	uint64_t cpu_us;         /* user + system, every thread (getrusage) */
	uint64_t start_ms;       /* unix time: starttime after btime (/proc/stat) */
	unsigned have;           /* OPS_PROC_* */
};
#define OPS_PROC_FDS   1u /* open_fds, max_fds */
#define OPS_PROC_STAT  2u /* resident_bytes, virtual_bytes */
#define OPS_PROC_CPU   4u /* cpu_us */
#define OPS_PROC_START 8u /* start_ms */
void ops_process_read(struct ops_process *p);

#endif
