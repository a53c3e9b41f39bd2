/* cachefsctl: the operator's tool for a running cachefsd (docs/cachefsctl.8).
 *
 * Most commands are one request on the daemon's control socket (protocol in
 * include/control.h). warm is different: it reads files THROUGH the proxy
 * as an ordinary NFS client (libnfs), so the proxy's normal fill path caches
 * them; it keeps its progress in a state file, so an interrupted warm can be
 * resumed, and can run in the background.
 *
 * Exit status: 0 done; 1 the daemon answered with an error, verify found
 * bad entries, or warm could not read some files; 2 usage; 3 the daemon
 * cannot be reached; 130 warm interrupted. */
#include "config.h"
#include "control.h"
#include "files.h"
#include "store.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw-nfs.h>

#define EXIT_FAILED      1
#define EXIT_USAGE       2
#define EXIT_UNREACHABLE 3
#define EXIT_INTERRUPTED 130
#define DEFAULT_CONFIG   "/etc/cachefsd.conf"
#define WARM_STATE_NAME  "warm.state"
#define WARM_STATE_MAGIC "# cachefsctl warm state 1"
#define WARM_READ_SIZE   (1u << 20)
#define WARM_MAX_JOBS    32

static const char *prog = "cachefsctl";
static char sock_path[4096];
static const char *cache_dir_opt; /* --cache-dir, or from the config file */

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: cachefsctl [--cache-dir DIR | --socket PATH | --config FILE] COMMAND [ARGS]\n"
	    "\n"
	    "commands (on the running daemon's control socket):\n"
	    "  stats [--raw | --json]        counters (a table; --raw: name value lines)\n"
	    "  info                          version, pid, listen address, export, paths\n"
	    "  config                        the effective configuration\n"
	    "  invalidate PATH...            drop what is cached about PATH (relative to\n"
	    "                                the export, or absolute under it)\n"
	    "  invalidate --fh HEX           ... about one file handle\n"
	    "  invalidate --all              ... about everything\n"
	    "  cull [--to PERCENT]           evict least recently used files now\n"
	    "  verify [--drop-bad]           check every cached chunk against its checksum\n"
	    "  reload                        re-read the configuration (as SIGHUP)\n"
	    "\n"
	    "  check-index [PATH]            check an index file without the daemon (with\n"
	    "                                cachefsd stopped): <cache_dir>/index/data.mdb,\n"
	    "                                or PATH (a file, or a directory holding\n"
	    "                                data.mdb, e.g. an index.corrupt-* kept aside)\n"
	    "\n"
	    "  warm [options] PATH...        read files or trees through the proxy, so they\n"
	    "                                are cached; options:\n"
	    "      --from FILE               paths to warm, one a line (- for stdin)\n"
	    "      --server HOST --port N --export PATH\n"
	    "                                the proxy (default: from the daemon)\n"
	    "      --uid N --gid N           read as this user (default 0, 0)\n"
	    "      --jobs N                  files read in parallel (default 4)\n"
	    "      --max-rate RATE           bytes per second at most (e.g. 50M)\n"
	    "      --state FILE              progress state (default <cache_dir>/warm.state)\n"
	    "      --background              detach; follow with warm --status\n"
	    "      --quiet                   no progress line\n"
	    "  warm --resume [--background]  go on with an interrupted warm\n"
	    "  warm --status                 progress of the last or running warm\n"
	    "  warm --cancel                 stop a background warm (resumable)\n"
	    "\n"
	    "The socket is --socket PATH, or <DIR>/control for --cache-dir DIR, or found\n"
	    "from the configuration file (--config FILE, default " DEFAULT_CONFIG ").\n"
	    "Exit status: 0 ok, 1 failed, 2 usage, 3 daemon not reachable, 130 interrupted.\n");
}

/* --- sizes and times ------------------------------------------------------ */

static const char *human_bytes(char *buf, size_t len, double v)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", v);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

static const char *human_secs(char *buf, size_t len, uint64_t s)
{
	if (s >= 86400)
		snprintf(buf, len, "%llud%02lluh", (unsigned long long)(s / 86400),
		         (unsigned long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(buf, len, "%lluh%02llum", (unsigned long long)(s / 3600),
		         (unsigned long long)(s % 3600 / 60));
	else
		snprintf(buf, len, "%llu:%02llu", (unsigned long long)(s / 60),
		         (unsigned long long)(s % 60));
	return buf;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- the control socket --------------------------------------------------- */

/* Where the socket is: --socket, --cache-dir, or the configuration file. */
static void find_socket(const char *config_file)
{
	struct cfs_config c;
	char err[1024];

	if (sock_path[0])
		return;
	if (cache_dir_opt) {
		snprintf(sock_path, sizeof(sock_path), "%s/%s", cache_dir_opt, CONTROL_SOCKET_NAME);
		return;
	}
	if (config_file == NULL) {
		if (access(DEFAULT_CONFIG, R_OK) != 0)
			die(EXIT_USAGE,
			    "which daemon? give --cache-dir DIR or --socket PATH (or "
			    "--config FILE; %s does not exist)",
			    DEFAULT_CONFIG);
		config_file = DEFAULT_CONFIG;
	}
	config_defaults(&c);
	if (config_load_file(&c, config_file, err, sizeof(err)) != 0)
		die(EXIT_USAGE, "%s", err);
	if (c.control_socket)
		snprintf(sock_path, sizeof(sock_path), "%s", c.control_socket);
	else if (c.cache_dir)
		snprintf(sock_path, sizeof(sock_path), "%s/%s", c.cache_dir, CONTROL_SOCKET_NAME);
	else
		die(EXIT_USAGE, "%s sets neither cache_dir nor control_socket", config_file);
	if (c.cache_dir)
		cache_dir_opt = strdup(c.cache_dir);
	config_free(&c);
}

static int ctl_connect(void)
{
	struct sockaddr_un sa;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(sock_path) >= sizeof(sa.sun_path))
		die(EXIT_USAGE, "socket path too long: %s", sock_path);
	strcpy(sa.sun_path, sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die(EXIT_UNREACHABLE, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;
		if (e == ENOENT)
			die(EXIT_UNREACHABLE, "cachefsd is not running (no socket at %s)",
			    sock_path);
		if (e == ECONNREFUSED)
			die(EXIT_UNREACHABLE,
			    "cachefsd is not running (nothing listens on %s: a stale socket)",
			    sock_path);
		if (e == EACCES || e == EPERM)
			die(EXIT_UNREACHABLE,
			    "%s: permission denied (the control socket is for root)", sock_path);
		die(EXIT_UNREACHABLE, "cannot connect to %s: %s", sock_path, strerror(e));
	}
	return fd;
}

struct reply {
	char **lines;
	size_t n, cap;
	int ok;
	char error[1200];
};

static void reply_free(struct reply *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->lines[i]);
	free(r->lines);
	memset(r, 0, sizeof(*r));
}

typedef void (*line_fn)(const char *line, void *arg);

/* Arguments with spaces or '%' are sent %XX-encoded (the daemon decodes). */
static void put_arg(FILE *f, const char *a)
{
	for (const unsigned char *p = (const unsigned char *)a; *p; p++) {
		if (*p <= ' ' || *p == '%' || *p >= 0x7f)
			fprintf(f, "%%%02X", *p);
		else
			fputc(*p, f);
	}
}

/* Sends one request (words argv[0..argc)) and reads the response. Data
 * lines go to fn as they come (when fn is set) or into r->lines. */
static void ctl_request(int fd, int argc, char **argv, struct reply *r, line_fn fn, void *arg)
{
	char *req = NULL, buf[65536], *line = NULL;
	size_t reqlen = 0, have = 0, linecap = 0;
	FILE *f = open_memstream(&req, &reqlen);
	ssize_t n;

	memset(r, 0, sizeof(*r));
	if (f == NULL)
		die(EXIT_FAILED, "out of memory");
	for (int i = 0; i < argc; i++) {
		if (i)
			fputc(' ', f);
		put_arg(f, argv[i]);
	}
	fputc('\n', f);
	fclose(f);
	if (reqlen > CONTROL_LINE_MAX)
		die(EXIT_USAGE, "request too long");
	for (size_t off = 0; off < reqlen;) {
		n = write(fd, req + off, reqlen - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* refused at once? its reason may be there to read */
		off += (size_t)n;
	}
	free(req);
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die(EXIT_UNREACHABLE, "the daemon closed the connection before answering");
		for (ssize_t i = 0; i < n; i++) {
			if (have + 2 > linecap) {
				linecap = linecap ? 2 * linecap : 256;
				line = realloc(line, linecap);
				if (line == NULL)
					die(EXIT_FAILED, "out of memory");
			}
			if (buf[i] != '\n') {
				line[have++] = buf[i];
				continue;
			}
			line[have] = 0;
			have = 0;
			if (line[0] == '.' && line[1] != '.') {
				r->ok = strcmp(line, ".ok") == 0;
				if (!r->ok)
					snprintf(r->error, sizeof(r->error), "%s",
					         strncmp(line, ".error ", 7) == 0 ? line + 7
					                                          : line);
				free(line);
				return;
			}
			const char *data = line[0] == '.' ? line + 1 : line;
			if (fn) {
				fn(data, arg);
				continue;
			}
			if (r->n == r->cap) {
				r->cap = r->cap ? 2 * r->cap : 64;
				r->lines = realloc(r->lines, r->cap * sizeof(char *));
				if (r->lines == NULL)
					die(EXIT_FAILED, "out of memory");
			}
			r->lines[r->n++] = strdup(data);
		}
	}
}

/* The daemon refused the connection itself (not the request). */
static int error_code(const struct reply *r)
{
	return strncmp(r->error, "permission denied", 17) == 0 ||
	               strncmp(r->error, "too many control connections", 28) == 0
	           ? EXIT_UNREACHABLE
	           : EXIT_FAILED;
}

/* One request on a new connection; dies on an error reply. */
static void ctl_simple(int argc, char **argv, struct reply *r)
{
	int fd = ctl_connect();

	ctl_request(fd, argc, argv, r, NULL, NULL);
	close(fd);
	if (!r->ok)
		die(error_code(r), "%s", r->error);
}

/* "name value" lines. */
static const char *kv_get(const struct reply *r, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < r->n; i++)
		if (strncmp(r->lines[i], name, nl) == 0 && r->lines[i][nl] == ' ')
			return r->lines[i] + nl + 1;
	return NULL;
}

static uint64_t kv_num(const struct reply *r, const char *name)
{
	const char *v = kv_get(r, name);

	return v ? strtoull(v, NULL, 10) : 0;
}

/* --- stats ---------------------------------------------------------------- */


static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void stats_table(const struct reply *s, const struct reply *info)
{
	char b1[32], b2[32], b3[32];
	uint64_t hits = kv_num(s, ENGINE_STAT(read_hits)),
	         misses = kv_num(s, ENGINE_STAT(read_misses)),
	         pass = kv_num(s, ENGINE_STAT(read_passthrough)), rtt = 0;
	uint64_t limit = kv_num(info, "cache_size");

	printf("cachefsd %s (pid %s), up %s, serving %s on %s\n", kv_get(info, "version"),
	       kv_get(info, "pid"), human_secs(b1, sizeof(b1), kv_num(info, "uptime_seconds")),
	       kv_get(info, "export"), kv_get(info, "listen"));
	printf("upstream     %s: %llu/%llu connections up, %llu reconnects, %llu connect "
	       "attempts, %llu calls waiting\n",
	       kv_get(info, "upstream"), (unsigned long long)kv_num(s, "upstream_conns_up"),
	       (unsigned long long)kv_num(s, "upstream_conns_total"),
	       (unsigned long long)kv_num(s, UPSTREAM_STAT(reconnects)),
	       (unsigned long long)kv_num(s, UPSTREAM_STAT(connect_attempts)),
	       (unsigned long long)kv_num(s, "upstream_waiting"));
	printf("clients      %llu connected; %llu program versions registered with rpcbind\n\n",
	       (unsigned long long)kv_num(s, "clients_connected"),
	       (unsigned long long)kv_num(s, CONTROL_STAT(rpcbind_registered)));

	printf("%-12s %10s %10s %10s %10s %8s %8s %10s\n", "procedure", "calls", "hit", "miss",
	       "pass", "failed", "errors", "avg");
	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		/* the stats names of the rows in proc_counters.def */
		static const enum cfs_proc_counter on[4] = {CFS_PROC_NFS_HIT, CFS_PROC_NFS_MISS,
		                                            CFS_PROC_NFS_PASSTHROUGH,
		                                            CFS_PROC_NFS_ERROR};
		char name[64];
		uint64_t calls, o[4], replies = 0, lat;

		cfs_proc_stat_name(CFS_PROC_NFS_CALLS, p, name, sizeof(name));
		calls = kv_num(s, name);
		if (calls == 0)
			continue;
		for (int i = 0; i < 4; i++) {
			cfs_proc_stat_name(on[i], p, name, sizeof(name));
			o[i] = kv_num(s, name);
			replies += o[i];
		}
		cfs_proc_stat_name(CFS_PROC_NFS_LATENCY, p, name, sizeof(name));
		lat = kv_num(s, name);
		cfs_proc_stat_name(CFS_PROC_NFS_ERRORS, p, name, sizeof(name));
		printf("%-12s %10llu %10llu %10llu %10llu %8llu %8llu %8.2fms\n",
		       proto_proc_name(NFS_PROGRAM, p), (unsigned long long)calls,
		       (unsigned long long)o[0], (unsigned long long)o[1], (unsigned long long)o[2],
		       (unsigned long long)o[3], (unsigned long long)kv_num(s, name),
		       replies ? (double)lat / (double)replies / 1000.0 : 0.0);
	}
	putchar('\n');
	printf("cache        %s in %llu files (%llu chunks)",
	       human_bytes(b1, sizeof(b1), (double)kv_num(s, STORE_STAT(bytes))),
	       (unsigned long long)kv_num(s, STORE_STAT(objects)),
	       (unsigned long long)kv_num(s, STORE_STAT(chunks)));
	if (limit)
		printf(", %.0f%% of cache_size %s", pct(kv_num(s, STORE_STAT(bytes)), limit),
		       human_bytes(b2, sizeof(b2), (double)limit));
	printf("\n             cache filesystem %llu%% blocks and %llu%% files free (cull below "
	       "%s%%/%s%%, stop below %s%%/%s%%)\n",
	       (unsigned long long)kv_num(s, STORE_STAT(free_blocks_pct)),
	       (unsigned long long)kv_num(s, STORE_STAT(free_files_pct)), kv_get(info, "bcull"),
	       kv_get(info, "fcull"), kv_get(info, "bstop"), kv_get(info, "fstop"));
	if (kv_num(s, STORE_STAT(fs_bytes))) {
		char b4[32], b5[32], b6[32];

		/* the levels as applied: raised to a chunk apart on a small one */
		printf("             %s free of %s; stop below %s, cull below %s, until %s\n",
		       human_bytes(b1, sizeof(b1), (double)kv_num(s, STORE_STAT(fs_free_bytes))),
		       human_bytes(b2, sizeof(b2), (double)kv_num(s, STORE_STAT(fs_bytes))),
		       human_bytes(b4, sizeof(b4), (double)kv_num(s, STORE_STAT(stop_bytes))),
		       human_bytes(b5, sizeof(b5), (double)kv_num(s, STORE_STAT(cull_bytes))),
		       human_bytes(b6, sizeof(b6), (double)kv_num(s, STORE_STAT(run_bytes))));
	}
	if (kv_num(s, STORE_STAT(fill_stopped)))
		printf("             filling STOPPED (%s; reads pass through)",
		       kv_get(s, "fill_stopped_reason") ? kv_get(s, "fill_stopped_reason") : "?");
	else
		printf("             filling %s",
		       kv_num(s, "fills_blocked") ? "BLOCKED by the upstream (see below)" : "on");
	printf(", culling %s", kv_num(s, STORE_STAT(culling)) ? "in progress" : "idle");
	if (kv_num(s, STORE_STAT(oldest_access))) {
		time_t t = time(NULL);
		uint64_t old = kv_num(s, STORE_STAT(oldest_access));
		printf("; least recently used file last read %s ago",
		       human_secs(b1, sizeof(b1), (uint64_t)t > old ? (uint64_t)t - old : 0));
	}
	printf("\nREAD         %llu hits (%.1f%%), %llu misses, %llu passed through; %s from the "
	       "cache, %s to clients\n",
	       (unsigned long long)hits, pct(hits, hits + misses + pass),
	       (unsigned long long)misses, (unsigned long long)pass,
	       human_bytes(b1, sizeof(b1), (double)kv_num(s, ENGINE_STAT(bytes_from_cache))),
	       human_bytes(b2, sizeof(b2), (double)kv_num(s, ENGINE_STAT(bytes_read))));
	printf("fills        %llu (%llu readahead, %llu at lookup), %s fetched, %llu stored, %llu "
	       "not stored (fresh)\n",
	       (unsigned long long)kv_num(s, ENGINE_STAT(fills)),
	       (unsigned long long)kv_num(s, ENGINE_STAT(readahead_fills)),
	       (unsigned long long)kv_num(s, ENGINE_STAT(lookup_prefetches)),
	       human_bytes(b1, sizeof(b1), (double)kv_num(s, ENGINE_STAT(fill_bytes))),
	       (unsigned long long)kv_num(s, ENGINE_STAT(stores)),
	       (unsigned long long)kv_num(s, ENGINE_STAT(fresh_skips)));
	printf("             %llu READs of %s per %s chunk (upstream rtmax %s); %llu upstream "
	       "READs, %llu short answers followed up, %llu answered before their chunk was in\n",
	       (unsigned long long)kv_num(s, "fill_reads_per_chunk"),
	       human_bytes(b1, sizeof(b1), (double)kv_num(s, "fill_read_size")),
	       human_bytes(b2, sizeof(b2), (double)kv_num(info, "chunk_size")),
	       human_bytes(b3, sizeof(b3), (double)kv_num(s, "upstream_rtmax")),
	       (unsigned long long)kv_num(s, ENGINE_STAT(fill_reads)),
	       (unsigned long long)kv_num(s, ENGINE_STAT(fill_short_reads)),
	       (unsigned long long)kv_num(s, ENGINE_STAT(fill_early)));
	if (kv_num(s, ENGINE_STAT(fill_mixed)) + kv_num(s, ENGINE_STAT(fill_noattrs)) +
	    kv_num(s, ENGINE_STAT(fill_bad_replies)))
		printf("             given up: %llu (file changed between the chunk's READs), %llu "
		       "(READ reply without attributes), %llu (unusable READ reply)\n",
		       (unsigned long long)kv_num(s, ENGINE_STAT(fill_mixed)),
		       (unsigned long long)kv_num(s, ENGINE_STAT(fill_noattrs)),
		       (unsigned long long)kv_num(s, ENGINE_STAT(fill_bad_replies)));
	switch (kv_num(s, "fills_blocked")) {
	case 0:
		break;
	case 1:
		printf("CACHING IS BLOCKED: the upstream's READ replies carry no file attributes, "
		       "so no "
		       "fill can be stored; READs pass through (tried again every minute)\n");
		break;
	default:
		printf(
		    "CACHING IS BLOCKED: the upstream's READ replies cannot be used (more bytes "
		    "than "
		    "asked, none before EOF, no progress); READs pass through (tried again every "
		    "minute)\n");
		break;
	}
	printf("evictions    %llu (%s); %llu checksum failures; %llu dropped as changed upstream\n",
	       (unsigned long long)kv_num(s, STORE_STAT(evictions)),
	       human_bytes(b1, sizeof(b1), (double)kv_num(s, STORE_STAT(evicted_bytes))),
	       (unsigned long long)kv_num(s, ENGINE_STAT(checksum_failures)),
	       (unsigned long long)kv_num(s, ENGINE_STAT(data_drops)));
	if (kv_num(info, "meta_ttl"))
		printf(
		    "metadata     ttl mode (meta_ttl %s s): %llu hits, %llu misses, %llu records, "
		    "%llu ACCESS asked ahead\n",
		    kv_get(info, "meta_ttl"), (unsigned long long)kv_num(s, ENGINE_STAT(meta_hits)),
		    (unsigned long long)kv_num(s, ENGINE_STAT(meta_misses)),
		    (unsigned long long)kv_num(s, "meta_records"),
		    (unsigned long long)kv_num(s, ENGINE_STAT(access_prefetches)));
	else
		printf("metadata     strict mode (every metadata call goes upstream)\n");
	printf("writers      %llu files entered the writer state, %llu READs bypassed the cache\n",
	       (unsigned long long)kv_num(s, ENGINE_STAT(writer_starts)),
	       (unsigned long long)kv_num(s, ENGINE_STAT(writer_passthrough)));
	if (kv_num(s, CONTROL_STAT(verify_runs)))
		printf("verify       %llu runs found %llu bad entries, %llu dropped\n",
		       (unsigned long long)kv_num(s, CONTROL_STAT(verify_runs)),
		       (unsigned long long)kv_num(s, CONTROL_STAT(verify_bad)),
		       (unsigned long long)kv_num(s, CONTROL_STAT(verify_dropped)));
	for (uint32_t p = cfs_proc_counter_descs[CFS_PROC_UPSTREAM_RTT].first; p < NFS3_NPROCS;
	     p++) {
		char name[64];

		cfs_proc_stat_name(CFS_PROC_UPSTREAM_RTT, p, name, sizeof(name));
		rtt += kv_num(s, name);
	}
	printf("upstream     %llu calls (%llu re-sent), avg round trip %.2f ms; %s read, %s "
	       "written\n",
	       (unsigned long long)kv_num(s, UPSTREAM_STAT(calls)),
	       (unsigned long long)kv_num(s, UPSTREAM_STAT(resends)),
	       kv_num(s, UPSTREAM_STAT(replies))
	           ? (double)rtt / (double)kv_num(s, UPSTREAM_STAT(replies)) / 1000.0
	           : 0.0,
	       human_bytes(b1, sizeof(b1), (double)kv_num(s, UPSTREAM_STAT(read_bytes))),
	       human_bytes(b3, sizeof(b3), (double)kv_num(s, UPSTREAM_STAT(write_bytes))));
}

static int cmd_stats(int argc, char **argv)
{
	struct reply s, info;
	char *req_stats[] = {"stats"}, *req_info[] = {"info"};
	int mode = 0; /* 0 table, 1 raw, 2 json */

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--raw") == 0)
			mode = 1;
		else if (strcmp(argv[i], "--json") == 0)
			mode = 2;
		else
			die(EXIT_USAGE, "stats: unknown option '%s' (--raw, --json)", argv[i]);
	}
	ctl_simple(1, req_stats, &s);
	if (mode == 1) {
		for (size_t i = 0; i < s.n; i++)
			puts(s.lines[i]);
	} else if (mode == 2) {
		printf("{");
		for (size_t i = 0; i < s.n; i++) {
			const char *sp = strchr(s.lines[i], ' ');
			if (sp == NULL)
				continue;
			/* numbers as they are, words (fill_stopped_reason) quoted */
			int num = sp[1] != '\0' && strspn(sp + 1, "0123456789") == strlen(sp + 1);

			printf("%s\n  \"%.*s\": %s%s%s", i ? "," : "", (int)(sp - s.lines[i]),
			       s.lines[i], num ? "" : "\"", sp + 1, num ? "" : "\"");
		}
		printf("\n}\n");
	} else {
		ctl_simple(1, req_info, &info);
		stats_table(&s, &info);
		reply_free(&info);
	}
	reply_free(&s);
	return 0;
}

/* --- simple commands ------------------------------------------------------ */

static void print_line(const char *line, void *arg)
{
	(void)arg;
	puts(line);
	fflush(stdout);
}

/* Sends argv as one request and prints the data lines as they come. */
static int cmd_passthrough(int argc, char **argv)
{
	struct reply r;
	int fd = ctl_connect();

	ctl_request(fd, argc, argv, &r, print_line, NULL);
	close(fd);
	if (!r.ok) {
		fprintf(stderr, "%s: %s\n", prog, r.error);
		return error_code(&r);
	}
	return 0;
}

static int cmd_invalidate(int argc, char **argv)
{
	int rc = 0;

	if (argc < 2)
		die(EXIT_USAGE, "usage: invalidate PATH... | --fh HEX | --all");
	if (argv[1][0] == '-')
		return cmd_passthrough(argc, argv);
	for (int i = 1; i < argc; i++) {
		char *req[] = {"invalidate", argv[i]};
		if (cmd_passthrough(2, req) != 0)
			rc = EXIT_FAILED;
	}
	return rc;
}

struct verify_state {
	uint64_t bad;
};

static void verify_line(const char *line, void *arg)
{
	struct verify_state *v = arg;
	const char *b = strstr(line, " bad ");

	puts(line);
	fflush(stdout);
	if (strncmp(line, "summary ", 8) == 0 && b)
		v->bad = strtoull(b + 5, NULL, 10);
}

static int cmd_verify(int argc, char **argv)
{
	struct verify_state v = {0};
	struct reply r;
	int fd = ctl_connect();

	ctl_request(fd, argc, argv, &r, verify_line, &v);
	close(fd);
	if (!r.ok) {
		fprintf(stderr, "%s: %s\n", prog, r.error);
		return EXIT_FAILED;
	}
	return v.bad ? EXIT_FAILED : 0;
}

/* --- warm: the state file -------------------------------------------------- */

struct warm_cfg {
	char server[256];
	int port;
	char export[1024];
	int uid, gid;
	int jobs;
	uint64_t max_rate;
	char **paths;
	int npaths;
};

struct warm_file {
	char *path; /* absolute within the export, "/a/b" */
	uint64_t size;
};

/* A set of strings (the files done in earlier runs). */
struct strset {
	char **slot;
	size_t cap, n;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static void strset_add(struct strset *t, const char *s)
{
	if (2 * (t->n + 1) > t->cap) {
		struct strset n = {0};
		n.cap = t->cap ? 2 * t->cap : 1024;
		n.slot = calloc(n.cap, sizeof(char *));
		if (n.slot == NULL)
			die(EXIT_FAILED, "out of memory");
		for (size_t i = 0; i < t->cap; i++)
			if (t->slot[i])
				for (size_t j = str_hash(t->slot[i]) & (n.cap - 1);;
				     j = (j + 1) & (n.cap - 1))
					if (n.slot[j] == NULL) {
						n.slot[j] = t->slot[i];
						break;
					}
		n.n = t->n;
		free(t->slot);
		*t = n;
	}
	for (size_t j = str_hash(s) & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
		if (t->slot[j] == NULL) {
			t->slot[j] = strdup(s);
			if (t->slot[j] == NULL)
				die(EXIT_FAILED, "out of memory");
			t->n++;
			return;
		}
		if (strcmp(t->slot[j], s) == 0)
			return;
	}
}

static int strset_has(const struct strset *t, const char *s)
{
	if (t->cap == 0)
		return 0;
	for (size_t j = str_hash(s) & (t->cap - 1); t->slot[j]; j = (j + 1) & (t->cap - 1))
		if (strcmp(t->slot[j], s) == 0)
			return 1;
	return 0;
}

/* Paths in the state file are one a line after a keyword: a newline in a
 * name is written as %0A (and '%' as %25). */
static void put_path(FILE *f, const char *p)
{
	for (; *p; p++) {
		if (*p == '\n' || *p == '%')
			fprintf(f, "%%%02X", (unsigned char)*p);
		else
			fputc(*p, f);
	}
}

static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		unsigned v;
		if (r[0] == '%' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2]) &&
		    sscanf(r + 1, "%2x", &v) == 1) {
			*w++ = (char)v;
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
}

static void state_write_header(const char *path, const struct warm_cfg *w)
{
	char tmp[4400];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = cfs_fopen_nofollow(tmp, "w");
	if (f == NULL)
		die(EXIT_FAILED, "cannot write the state file %s: %s", tmp, strerror(errno));
	fprintf(f, "%s\nserver %s\nport %d\nexport ", WARM_STATE_MAGIC, w->server, w->port);
	put_path(f, w->export);
	fprintf(f, "\nuid %d\ngid %d\njobs %d\nmax_rate %llu\n", w->uid, w->gid, w->jobs,
	        (unsigned long long)w->max_rate);
	for (int i = 0; i < w->npaths; i++) {
		fputs("path ", f);
		put_path(f, w->paths[i]);
		fputc('\n', f);
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		die(EXIT_FAILED, "cannot write the state file %s: %s", path, strerror(errno));
}

static void state_read(const char *path, struct warm_cfg *w, struct strset *done)
{
	FILE *f = cfs_fopen_nofollow(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0;

	if (f == NULL)
		die(EXIT_FAILED, "no warm to resume: cannot read %s: %s", path, strerror(errno));
	memset(w, 0, sizeof(*w));
	while ((n = getline(&line, &cap, f)) > 0) {
		char *v;

		lineno++;
		if (line[n - 1] == '\n')
			line[--n] = 0;
		if (lineno == 1) {
			if (strcmp(line, WARM_STATE_MAGIC) != 0)
				die(EXIT_FAILED, "%s is not a cachefsctl warm state file", path);
			continue;
		}
		v = strchr(line, ' ');
		if (v == NULL)
			continue;
		*v++ = 0;
		unescape(v);
		if (strcmp(line, "server") == 0)
			snprintf(w->server, sizeof(w->server), "%s", v);
		else if (strcmp(line, "port") == 0)
			w->port = atoi(v);
		else if (strcmp(line, "export") == 0)
			snprintf(w->export, sizeof(w->export), "%s", v);
		else if (strcmp(line, "uid") == 0)
			w->uid = atoi(v);
		else if (strcmp(line, "gid") == 0)
			w->gid = atoi(v);
		else if (strcmp(line, "jobs") == 0)
			w->jobs = atoi(v);
		else if (strcmp(line, "max_rate") == 0)
			w->max_rate = strtoull(v, NULL, 10);
		else if (strcmp(line, "path") == 0) {
			w->paths = realloc(w->paths, (size_t)(w->npaths + 1) * sizeof(char *));
			if (w->paths == NULL || (w->paths[w->npaths] = strdup(v)) == NULL)
				die(EXIT_FAILED, "out of memory");
			w->npaths++;
		} else if (strcmp(line, "done") == 0 && done)
			strset_add(done, v);
	}
	free(line);
	fclose(f);
	if (w->server[0] == 0 || w->port <= 0 || w->export[0] == 0 || w->npaths == 0)
		die(EXIT_FAILED, "%s is incomplete: start a new warm", path);
	if (w->jobs < 1 || w->jobs > WARM_MAX_JOBS)
		w->jobs = 4;
}

/* The progress file (<state>.progress), rewritten while a warm runs. */
struct progress {
	int pid;
	char state[32];
	uint64_t files_total, files_done, files_failed, files_skipped;
	uint64_t bytes_total, bytes_done;
	double rate;
	uint64_t eta;
	uint64_t updated;
};

static void progress_write(const char *state_path, const struct progress *p)
{
	char path[4300], tmp[4400];
	FILE *f;

	snprintf(path, sizeof(path), "%s.progress", state_path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = cfs_fopen_nofollow(tmp, "w");
	if (f == NULL)
		return;
	fprintf(f,
	        "pid %d\nstate %s\nfiles_total %llu\nfiles_done %llu\nfiles_failed %llu\n"
	        "files_skipped %llu\nbytes_total %llu\nbytes_done %llu\nrate %.0f\neta %llu\n"
	        "updated %llu\n",
	        p->pid, p->state, (unsigned long long)p->files_total,
	        (unsigned long long)p->files_done, (unsigned long long)p->files_failed,
	        (unsigned long long)p->files_skipped, (unsigned long long)p->bytes_total,
	        (unsigned long long)p->bytes_done, p->rate, (unsigned long long)p->eta,
	        (unsigned long long)time(NULL));
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
}

static int progress_read(const char *state_path, struct progress *p)
{
	char path[4300], key[64];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s.progress", state_path);
	memset(p, 0, sizeof(*p));
	f = cfs_fopen_nofollow(path, "r");
	if (f == NULL)
		return -1;
	while (fscanf(f, "%63s", key) == 1) {
		if (strcmp(key, "state") == 0) {
			if (fscanf(f, "%31s", p->state) != 1)
				break;
			continue;
		}
		if (strcmp(key, "rate") == 0) {
			if (fscanf(f, "%lf", &p->rate) != 1)
				break;
			continue;
		}
		if (fscanf(f, "%llu", &v) != 1)
			break;
		if (strcmp(key, "pid") == 0)
			p->pid = (int)v;
		else if (strcmp(key, "files_total") == 0)
			p->files_total = v;
		else if (strcmp(key, "files_done") == 0)
			p->files_done = v;
		else if (strcmp(key, "files_failed") == 0)
			p->files_failed = v;
		else if (strcmp(key, "files_skipped") == 0)
			p->files_skipped = v;
		else if (strcmp(key, "bytes_total") == 0)
			p->bytes_total = v;
		else if (strcmp(key, "bytes_done") == 0)
			p->bytes_done = v;
		else if (strcmp(key, "eta") == 0)
			p->eta = v;
		else if (strcmp(key, "updated") == 0)
			p->updated = v;
	}
	fclose(f);
	return 0;
}

/* A warm process of ours is running with this pid. */
static int warm_alive(int pid)
{
	char path[64], comm[64] = "";
	FILE *f;

	if (pid <= 0 || kill(pid, 0) != 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = cfs_fopen_nofollow(path, "r");
	if (f == NULL)
		return 0;
	if (fgets(comm, sizeof(comm), f) == NULL)
		comm[0] = 0;
	fclose(f);
	return strncmp(comm, "cachefsctl", 10) == 0;
}

/* --- warm: reading through the proxy --------------------------------------- */

static volatile sig_atomic_t warm_stop;

static void on_sigint(int sig)
{
	(void)sig;
	warm_stop = 1;
}

struct warm {
	struct warm_cfg cfg;
	const char *state_path;
	FILE *state; /* appended: "done PATH" */
	struct warm_file *files;
	size_t nfiles, capfiles;
	struct strset done;
	pthread_mutex_t mu;
	size_t next;        /* next file to read */
	uint64_t bytes_run; /* read in this run */
	struct progress p;
	double t0;
	int show; /* a progress line on the terminal */
	char url[2048];
};

static struct nfs_context *warm_mount(struct warm *w, char *err, size_t errlen)
{
	struct nfs_context *nfs = nfs_init_context();
	struct nfs_url *u;

	if (nfs == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	nfs_set_uid(nfs, w->cfg.uid);
	nfs_set_gid(nfs, w->cfg.gid);
	u = nfs_parse_url_dir(nfs, w->url);
	if (u == NULL) {
		snprintf(err, errlen, "%.600s: %.400s", w->url, nfs_get_error(nfs));
		nfs_destroy_context(nfs);
		return NULL;
	}
	if (nfs_mount(nfs, u->server, u->path) != 0) {
		snprintf(err, errlen, "cannot mount %.600s through the proxy: %.400s", w->url,
		         nfs_get_error(nfs));
		nfs_destroy_url(u);
		nfs_destroy_context(nfs);
		return NULL;
	}
	nfs_destroy_url(u);
	return nfs;
}

static void files_add(struct warm *w, const char *path, uint64_t size)
{
	if (w->nfiles == w->capfiles) {
		w->capfiles = w->capfiles ? 2 * w->capfiles : 1024;
		w->files = realloc(w->files, w->capfiles * sizeof(*w->files));
		if (w->files == NULL)
			die(EXIT_FAILED, "out of memory");
	}
	w->files[w->nfiles].path = strdup(path);
	if (w->files[w->nfiles].path == NULL)
		die(EXIT_FAILED, "out of memory");
	w->files[w->nfiles].size = size;
	w->nfiles++;
	if (strset_has(&w->done, path)) {
		w->p.files_skipped++;
		w->p.files_done++;
		w->p.bytes_done += size;
	}
	w->p.files_total++;
	w->p.bytes_total += size;
}

static void warn_line(struct warm *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_line(struct warm *w, const char *fmt, ...)
{
	va_list ap;

	if (w->show)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "%s: warm: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Depth-first over a directory tree; symlinks and special files are not
 * followed or read. */
static void walk(struct warm *w, struct nfs_context *nfs, const char *dir)
{
	struct nfsdir *d;
	struct nfsdirent *ent;
	char **subdirs = NULL;
	size_t nsub = 0;

	if (nfs_opendir(nfs, dir, &d) != 0) {
		warn_line(w, "cannot list %s: %s", dir, nfs_get_error(nfs));
		w->p.files_failed++;
		return;
	}
	while ((ent = nfs_readdir(nfs, d)) != NULL && !warm_stop) {
		char path[8192];

		if (strcmp(ent->name, ".") == 0 || strcmp(ent->name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/",
		         ent->name);
		if (ent->type == NF3REG) {
			files_add(w, path, ent->size);
		} else if (ent->type == NF3DIR) {
			subdirs = realloc(subdirs, (nsub + 1) * sizeof(char *));
			if (subdirs == NULL || (subdirs[nsub] = strdup(path)) == NULL)
				die(EXIT_FAILED, "out of memory");
			nsub++;
		}
	}
	nfs_closedir(nfs, d);
	for (size_t i = 0; i < nsub; i++) {
		if (!warm_stop)
			walk(w, nfs, subdirs[i]);
		free(subdirs[i]);
	}
	free(subdirs);
}

static void scan(struct warm *w, struct nfs_context *nfs)
{
	for (int i = 0; i < w->cfg.npaths && !warm_stop; i++) {
		struct nfs_stat_64 st;
		char path[8192];
		const char *p = w->cfg.paths[i];

		/* relative to the export, or absolute under it */
		if (p[0] == '/' && strncmp(p, w->cfg.export, strlen(w->cfg.export)) == 0 &&
		    (p[strlen(w->cfg.export)] == '/' || p[strlen(w->cfg.export)] == 0) &&
		    strcmp(w->cfg.export, "/") != 0)
			p += strlen(w->cfg.export);
		while (*p == '/')
			p++;
		snprintf(path, sizeof(path), "/%s", p);
		while (strlen(path) > 1 && path[strlen(path) - 1] == '/')
			path[strlen(path) - 1] = 0;
		if (nfs_stat64(nfs, path, &st) != 0) {
			warn_line(w, "%s: %s", w->cfg.paths[i], nfs_get_error(nfs));
			w->p.files_failed++;
			continue;
		}
		if (S_ISDIR(st.nfs_mode))
			walk(w, nfs, path);
		else if (S_ISREG(st.nfs_mode))
			files_add(w, path, st.nfs_size);
		else
			warn_line(w, "%s: not a file or directory: skipped", w->cfg.paths[i]);
	}
}

/* Waits while the run is ahead of --max-rate. */
static void pace(struct warm *w)
{
	while (w->cfg.max_rate && !warm_stop) {
		double ahead;

		pthread_mutex_lock(&w->mu);
		ahead = (double)w->bytes_run / (double)w->cfg.max_rate - (now_s() - w->t0);
		pthread_mutex_unlock(&w->mu);
		if (ahead <= 0)
			return;
		usleep(ahead > 0.1 ? 100000 : (useconds_t)(ahead * 1e6) + 1000);
	}
}

static void *reader(void *arg)
{
	struct warm *w = arg;
	char err[1100];
	struct nfs_context *nfs = warm_mount(w, err, sizeof(err));
	uint8_t *buf = malloc(WARM_READ_SIZE);

	if (nfs == NULL || buf == NULL) {
		warn_line(w, "%s", nfs ? "out of memory" : err);
		if (nfs)
			nfs_destroy_context(nfs);
		free(buf);
		return (void *)1;
	}
	while (!warm_stop) {
		struct warm_file *f;
		struct nfsfh *fh;
		uint64_t off = 0;
		int rc = 0;

		pthread_mutex_lock(&w->mu);
		while (w->next < w->nfiles && strset_has(&w->done, w->files[w->next].path))
			w->next++;
		f = w->next < w->nfiles ? &w->files[w->next++] : NULL;
		pthread_mutex_unlock(&w->mu);
		if (f == NULL)
			break;
		if (nfs_open(nfs, f->path, O_RDONLY, &fh) != 0) {
			warn_line(w, "%s: %s", f->path, nfs_get_error(nfs));
			pthread_mutex_lock(&w->mu);
			w->p.files_failed++;
			pthread_mutex_unlock(&w->mu);
			continue;
		}
		for (;;) {
			pace(w);
			if (warm_stop)
				break;
			rc = nfs_pread(nfs, fh, off, WARM_READ_SIZE, buf);
			if (rc <= 0)
				break;
			off += (uint64_t)rc;
			pthread_mutex_lock(&w->mu);
			w->bytes_run += (uint64_t)rc;
			w->p.bytes_done += (uint64_t)rc;
			pthread_mutex_unlock(&w->mu);
		}
		nfs_close(nfs, fh);
		pthread_mutex_lock(&w->mu);
		if (rc < 0) {
			w->p.files_failed++;
			warn_line(w, "%s: %s", f->path, nfs_get_error(nfs));
		} else if (!warm_stop) {
			w->p.files_done++;
			/* sizes change: count what was read, not what was listed */
			if (off < f->size)
				w->p.bytes_total -= f->size - off;
			else
				w->p.bytes_total += off - f->size;
			fputs("done ", w->state);
			put_path(w->state, f->path);
			fputc('\n', w->state);
			fflush(w->state);
		}
		pthread_mutex_unlock(&w->mu);
	}
	free(buf);
	nfs_destroy_context(nfs);
	return NULL;
}

static void progress_update(struct warm *w, const char *state)
{
	double el = now_s() - w->t0;

	pthread_mutex_lock(&w->mu);
	snprintf(w->p.state, sizeof(w->p.state), "%s", state);
	/* a rate over less than half a second says little, unless it is all */
	w->p.rate = el > 0.5 || (strcmp(state, "running") != 0 && el > 0.001)
	                ? (double)w->bytes_run / el
	                : 0;
	w->p.eta = w->p.rate > 0 && w->p.bytes_total > w->p.bytes_done
	               ? (uint64_t)((double)(w->p.bytes_total - w->p.bytes_done) / w->p.rate)
	               : 0;
	progress_write(w->state_path, &w->p);
	pthread_mutex_unlock(&w->mu);
}

static void progress_show(const struct progress *p, FILE *out, const char *end)
{
	char b1[32], b2[32], b3[32], b4[32];
	fprintf(out, "warm: %llu/%llu files, %s/%s, %s/s", (unsigned long long)p->files_done,
	        (unsigned long long)p->files_total,
	        human_bytes(b1, sizeof(b1), (double)p->bytes_done),
	        human_bytes(b2, sizeof(b2), (double)p->bytes_total),
	        human_bytes(b3, sizeof(b3), p->rate));
	if (strcmp(p->state, "running") == 0 || strcmp(p->state, "scanning") == 0)
		fprintf(out, ", ETA %s", p->rate > 0 ? human_secs(b4, sizeof(b4), p->eta) : "-");
	if (p->files_failed)
		fprintf(out, ", %llu failed", (unsigned long long)p->files_failed);
	fputs(end, out);
	fflush(out);
}

static int warm_run(struct warm *w, int background)
{
	pthread_t th[WARM_MAX_JOBS];
	struct sigaction sa;
	struct nfs_context *nfs;
	char err[1100];
	int started = 0, failed_threads = 0;

	snprintf(w->url, sizeof(w->url), "nfs://%s%s?nfsport=%d&mountport=%d", w->cfg.server,
	         w->cfg.export, w->cfg.port, w->cfg.port);
	nfs = warm_mount(w, err, sizeof(err));
	if (nfs == NULL)
		die(EXIT_UNREACHABLE, "%s", err);
	if (background) {
		pid_t pid;
		int fd;

		fflush(NULL);
		pid = fork();
		if (pid < 0)
			die(EXIT_FAILED, "fork: %s", strerror(errno));
		if (pid > 0) {
			printf(
			    "warming in the background (pid %d); follow it with: cachefsctl warm "
			    "--status --state %s\n",
			    (int)pid, w->state_path);
			exit(0);
		}
		setsid();
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			if (fd > 2)
				close(fd);
		}
		{
			char log[4300];
			snprintf(log, sizeof(log), "%s.log", w->state_path);
			/* a new file: nothing left there is written through */
			unlink(log);
			fd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd >= 0) {
				dup2(fd, 2);
				close(fd);
			}
		}
		w->show = 0;
		/* libnfs's connection belongs to the parent's process image:
		 * start again in this one */
		nfs_destroy_context(nfs);
		nfs = warm_mount(w, err, sizeof(err));
		if (nfs == NULL) {
			fprintf(stderr, "%s: %s\n", prog, err);
			return EXIT_UNREACHABLE;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	w->p.pid = (int)getpid();
	w->t0 = now_s();
	progress_update(w, "scanning");
	w->state = cfs_fopen_nofollow(w->state_path, "a");
	if (w->state == NULL)
		die(EXIT_FAILED, "cannot append to %s: %s", w->state_path, strerror(errno));
	scan(w, nfs);
	nfs_destroy_context(nfs);
	if (w->p.files_skipped)
		warn_line(w, "%llu files were read by an earlier run: skipped",
		          (unsigned long long)w->p.files_skipped);
	w->t0 = now_s();
	for (int i = 0; i < w->cfg.jobs && !warm_stop; i++) {
		if (pthread_create(&th[i], NULL, reader, w) != 0)
			break;
		started++;
	}
	if (started == 0)
		die(EXIT_FAILED, "cannot start a reader thread");
	for (;;) {
		int running;

		pthread_mutex_lock(&w->mu);
		running = w->next < w->nfiles && !warm_stop;
		pthread_mutex_unlock(&w->mu);
		progress_update(w, "running");
		if (w->show) {
			fputs("\r\033[K", stderr);
			progress_show(&w->p, stderr, "");
		}
		if (!running)
			break;
		usleep(200000);
	}
	for (int i = 0; i < started; i++) {
		void *ret = NULL;
		pthread_join(th[i], &ret);
		if (ret != NULL)
			failed_threads++;
	}
	fflush(w->state);
	fsync(fileno(w->state));
	fclose(w->state);
	if (warm_stop) {
		progress_update(w, "interrupted");
		if (w->show)
			fputs("\r\033[K", stderr);
		progress_show(&w->p, stderr, "\n");
		fprintf(stderr,
		        "%s: warm interrupted; go on with: cachefsctl warm --resume --state %s\n",
		        prog, w->state_path);
		return EXIT_INTERRUPTED;
	}
	if (failed_threads == started) {
		progress_update(w, "failed");
		return EXIT_UNREACHABLE;
	}
	progress_update(w, "done");
	if (w->show)
		fputs("\r\033[K", stderr);
	if (!background)
		progress_show(&w->p, stdout, "\n");
	return w->p.files_failed ? EXIT_FAILED : 0;
}

/* The proxy's address: --server/--port/--export, or the daemon's info. */
static void warm_target(struct warm_cfg *c, const char *server, int port, const char *export)
{
	struct reply info;
	char *req[] = {"info"};

	if (server && port && export) {
		snprintf(c->server, sizeof(c->server), "%s", server);
		c->port = port;
		snprintf(c->export, sizeof(c->export), "%s", export);
		return;
	}
	ctl_simple(1, req, &info);
	if (server) {
		snprintf(c->server, sizeof(c->server), "%s", server);
	} else {
		/* the host part of listen; a wildcard means this machine */
		const char *l = kv_get(&info, "listen");
		const char *colon = l ? strrchr(l, ':') : NULL;
		size_t hl = colon ? (size_t)(colon - l) : 0;
		snprintf(c->server, sizeof(c->server), "%.*s", (int)hl, l ? l : "");
		if (c->server[0] == '[') {
			memmove(c->server, c->server + 1, strlen(c->server));
			c->server[strcspn(c->server, "]")] = 0;
		}
		if (c->server[0] == 0 || strcmp(c->server, "0.0.0.0") == 0)
			snprintf(c->server, sizeof(c->server), "127.0.0.1");
		else if (strcmp(c->server, "::") == 0)
			snprintf(c->server, sizeof(c->server), "::1");
	}
	c->port = port ? port : (int)kv_num(&info, "port");
	snprintf(c->export, sizeof(c->export), "%s",
	         export ? export : (kv_get(&info, "export") ? kv_get(&info, "export") : "/"));
	if (cache_dir_opt == NULL && kv_get(&info, "cache_dir"))
		cache_dir_opt = strdup(kv_get(&info, "cache_dir"));
	reply_free(&info);
}

static void default_state(char *buf, size_t len, const char *state)
{
	if (state)
		snprintf(buf, len, "%s", state);
	else if (cache_dir_opt)
		snprintf(buf, len, "%s/%s", cache_dir_opt, WARM_STATE_NAME);
	else
		die(EXIT_USAGE, "warm: give --state FILE (or --cache-dir DIR)");
}

static int warm_status(const char *state_path)
{
	struct progress p;

	if (progress_read(state_path, &p) != 0)
		die(EXIT_FAILED, "no warm has run with %s", state_path);
	if (strcmp(p.state, "running") == 0 || strcmp(p.state, "scanning") == 0) {
		if (!warm_alive(p.pid)) {
			printf("interrupted (the warm process %d is gone); go on with: cachefsctl "
			       "warm "
			       "--resume --state %s\n",
			       p.pid, state_path);
			progress_show(&p, stdout, "\n");
			return EXIT_FAILED;
		}
		printf("%s (pid %d)\n", p.state, p.pid);
	} else {
		printf("%s\n", p.state);
	}
	progress_show(&p, stdout, "\n");
	if (strcmp(p.state, "interrupted") == 0)
		printf("go on with: cachefsctl warm --resume --state %s\n", state_path);
	return strcmp(p.state, "failed") == 0 ? EXIT_FAILED : 0;
}

static int warm_cancel(const char *state_path)
{
	struct progress p;

	if (progress_read(state_path, &p) != 0 || !warm_alive(p.pid) ||
	    (strcmp(p.state, "running") != 0 && strcmp(p.state, "scanning") != 0)) {
		fprintf(stderr, "%s: no warm is running with %s\n", prog, state_path);
		return EXIT_FAILED;
	}
	if (kill(p.pid, SIGINT) != 0)
		die(EXIT_FAILED, "cannot stop pid %d: %s", p.pid, strerror(errno));
	for (int i = 0; i < 300 && warm_alive(p.pid); i++)
		usleep(100000);
	if (warm_alive(p.pid))
		die(EXIT_FAILED, "pid %d did not stop within 30 s", p.pid);
	printf("stopped the warm (pid %d); go on with: cachefsctl warm --resume --state %s\n",
	       p.pid, state_path);
	return 0;
}

static uint64_t parse_rate(const char *s)
{
	uint64_t v;

	if (config_parse_size(s, &v) != 0 || v == 0)
		die(EXIT_USAGE,
		    "warm --max-rate: '%s' is not a rate in bytes per second (e.g. 50M)", s);
	return v;
}

static int parse_int(const char *opt, const char *s, int lo, int hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == 0 || *end || v < lo || v > hi)
		die(EXIT_USAGE, "warm %s: '%s' is not a number in %d..%d", opt, s, lo, hi);
	return (int)v;
}

static void read_list(struct warm_cfg *c, const char *from)
{
	FILE *f = strcmp(from, "-") == 0 ? stdin : fopen(from, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (f == NULL)
		die(EXIT_USAGE, "warm --from %s: %s", from, strerror(errno));
	while ((n = getline(&line, &cap, f)) > 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (n == 0 || line[0] == '#')
			continue;
		c->paths = realloc(c->paths, (size_t)(c->npaths + 1) * sizeof(char *));
		if (c->paths == NULL || (c->paths[c->npaths] = strdup(line)) == NULL)
			die(EXIT_FAILED, "out of memory");
		c->npaths++;
	}
	free(line);
	if (f != stdin)
		fclose(f);
}

static int cmd_warm(int argc, char **argv)
{
	static struct warm w;
	const char *server = NULL, *export = NULL, *state = NULL, *from = NULL;
	int port = 0, resume = 0, status = 0, cancel = 0, background = 0, quiet = 0;
	char state_path[4200];
	struct progress old;

	memset(&w, 0, sizeof(w));
	w.cfg.jobs = 4;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = 1;

		if (strcmp(a, "--resume") == 0)
			resume = 1, takes = 0;
		else if (strcmp(a, "--status") == 0)
			status = 1, takes = 0;
		else if (strcmp(a, "--cancel") == 0)
			cancel = 1, takes = 0;
		else if (strcmp(a, "--background") == 0)
			background = 1, takes = 0;
		else if (strcmp(a, "--quiet") == 0)
			quiet = 1, takes = 0;
		else if (a[0] != '-' || strcmp(a, "-") == 0) {
			w.cfg.paths =
			    realloc(w.cfg.paths, (size_t)(w.cfg.npaths + 1) * sizeof(char *));
			if (w.cfg.paths == NULL)
				die(EXIT_FAILED, "out of memory");
			w.cfg.paths[w.cfg.npaths++] = (char *)a;
			takes = 0;
		} else if (v == NULL) {
			die(EXIT_USAGE, "warm %s: needs a value", a);
		} else if (strcmp(a, "--server") == 0) {
			server = v;
		} else if (strcmp(a, "--port") == 0) {
			port = parse_int(a, v, 1, 65535);
		} else if (strcmp(a, "--export") == 0) {
			export = v;
		} else if (strcmp(a, "--uid") == 0) {
			w.cfg.uid = parse_int(a, v, 0, 0x7fffffff);
		} else if (strcmp(a, "--gid") == 0) {
			w.cfg.gid = parse_int(a, v, 0, 0x7fffffff);
		} else if (strcmp(a, "--jobs") == 0) {
			w.cfg.jobs = parse_int(a, v, 1, WARM_MAX_JOBS);
		} else if (strcmp(a, "--max-rate") == 0) {
			w.cfg.max_rate = parse_rate(v);
		} else if (strcmp(a, "--state") == 0) {
			state = v;
		} else if (strcmp(a, "--from") == 0) {
			from = v;
		} else {
			die(EXIT_USAGE, "warm: unknown option '%s' (see --help)", a);
		}
		i += takes;
	}
	if (status + cancel + resume > 1)
		die(EXIT_USAGE, "warm: --resume, --status and --cancel go alone");
	if (status || cancel) {
		if (!state && !cache_dir_opt && sock_path[0] == 0)
			find_socket(NULL);
		default_state(state_path, sizeof(state_path), state);
		return status ? warm_status(state_path) : warm_cancel(state_path);
	}
	if (resume) {
		if (w.cfg.npaths || from || server || export || port)
			die(EXIT_USAGE,
			    "warm --resume takes the paths and the proxy from the state "
			    "file");
		if (!state && !cache_dir_opt)
			find_socket(NULL);
		default_state(state_path, sizeof(state_path), state);
		state_read(state_path, &w.cfg, &w.done);
	} else {
		if (from)
			read_list(&w.cfg, from);
		if (w.cfg.npaths == 0)
			die(EXIT_USAGE,
			    "warm: which files? give PATH... or --from FILE (warm / warms "
			    "the whole export)");
		if (!(server && port && export))
			find_socket(NULL);
		warm_target(&w.cfg, server, port, export);
		default_state(state_path, sizeof(state_path), state);
	}
	if (progress_read(state_path, &old) == 0 &&
	    (strcmp(old.state, "running") == 0 || strcmp(old.state, "scanning") == 0) &&
	    warm_alive(old.pid) && old.pid != (int)getpid())
		die(EXIT_FAILED, "a warm is running (pid %d): cachefsctl warm --status or --cancel",
		    old.pid);
	if (!resume)
		state_write_header(state_path, &w.cfg);
	w.state_path = state_path;
	w.show = !quiet && !background && isatty(2);
	pthread_mutex_init(&w.mu, NULL);
	return warm_run(&w, background);
}

/* --- check-index ------------------------------------------------------------ */

/* Reads the index file as cachefsd does before it maps it (store_check.c):
 * "intact" (exit 0) or what is damaged (exit 1). Offline: a damaged index
 * is what keeps a daemon from starting, or what one moved aside. */
static int cmd_check_index(int argc, char **argv)
{
	char path[4200], why[512];
	struct stat st;
	int reason, rc;

	if (argc > 2)
		die(EXIT_USAGE, "usage: check-index [PATH]");
	if (argc == 2)
		snprintf(path, sizeof(path), "%s", argv[1]);
	else if (cache_dir_opt)
		snprintf(path, sizeof(path), "%s/index/data.mdb", cache_dir_opt);
	else
		die(EXIT_USAGE, "which index? give PATH, --cache-dir DIR or --config FILE");
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && strlen(path) + 10 < sizeof(path)) {
		size_t n = strlen(path);

		memcpy(path + n, "/data.mdb", 10);
		if (access(path, F_OK) != 0)
			path[n] = '\0'; /* a directory where data.mdb should be */
	}
	rc = store_index_check_path(path, 0, &reason, why, sizeof(why));
	if (rc < 0)
		die(EXIT_FAILED, "%s: %s", path, strerror(-rc));
	if (rc == 0) {
		printf("%s: intact\n", path);
		return 0;
	}
	printf("%s: damaged (%s): %s\n", path, store_damage_name(reason), why);
	return EXIT_FAILED;
}

/* --- main ----------------------------------------------------------------- */

int main(int argc, char **argv)
{
	const char *config_file = NULL;
	int i;

	signal(SIGPIPE, SIG_IGN); /* a refused connection is read, not a signal */
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (a[0] != '-')
			break;
		if (i + 1 >= argc)
			die(EXIT_USAGE, "%s: needs a value (see --help)", a);
		if (strcmp(a, "--socket") == 0)
			snprintf(sock_path, sizeof(sock_path), "%s", argv[++i]);
		else if (strcmp(a, "--cache-dir") == 0)
			cache_dir_opt = argv[++i];
		else if (strcmp(a, "--config") == 0)
			config_file = argv[++i];
		else
			die(EXIT_USAGE, "unknown option '%s' (see --help)", a);
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	argc -= i;
	argv += i;
	if (strcmp(argv[0], "warm") == 0) {
		if (config_file && sock_path[0] == 0 && cache_dir_opt == NULL)
			find_socket(config_file);
		return cmd_warm(argc, argv);
	}
	if (strcmp(argv[0], "check-index") == 0) {
		if (config_file && cache_dir_opt == NULL)
			find_socket(config_file);
		return cmd_check_index(argc, argv);
	}
	find_socket(config_file);
	if (strcmp(argv[0], "stats") == 0)
		return cmd_stats(argc, argv);
	if (strcmp(argv[0], "invalidate") == 0)
		return cmd_invalidate(argc, argv);
	if (strcmp(argv[0], "verify") == 0)
		return cmd_verify(argc, argv);
	if (strcmp(argv[0], "info") == 0 || strcmp(argv[0], "config") == 0 ||
	    strcmp(argv[0], "cull") == 0 || strcmp(argv[0], "reload") == 0)
		return cmd_passthrough(argc, argv);
	fprintf(stderr, "%s: unknown command '%s'\n\n", prog, argv[0]);
	usage(stderr);
	return EXIT_USAGE;
}
