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
#include "version.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
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
static const char *config_opt;    /* --config */

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

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *synopsis; /* after "cachefsctl NAME" */
	const char *summary;  /* one line, in the command list */
	const char *help;     /* options, output, exit status */
};

static const struct command *find_command(const char *name);
static void command_list(FILE *out);
static void command_help(const struct command *c, FILE *out);

static void usage(FILE *out)
{
	fprintf(out, "usage: cachefsctl [OPTION...] COMMAND [ARGS]\n"
	             "\n"
	             "Controls and inspects a running cachefsd over its control socket; warms\n"
	             "its cache.\n"
	             "\n"
	             "options (before the command):\n"
	             "  -s, --socket=PATH     the daemon's control socket\n"
	             "  -d, --cache-dir=DIR   the socket is DIR/control\n"
	             "  -c, --config=FILE     find the socket from this configuration file\n"
	             "                        (default " DEFAULT_CONFIG ")\n"
	             "  -h, --help            this help\n"
	             "  -V, --version         print the version and exit\n"
	             "\n"
	             "commands:\n");
	command_list(out);
	fprintf(out, "\n"
	             "'cachefsctl help COMMAND' or 'cachefsctl COMMAND --help' describes one.\n"
	             "Commands that print data take --json (one JSON object on stdout).\n"
	             "Exit status: 0 ok, 1 the command failed, 2 usage, 3 the daemon cannot be\n"
	             "reached, 130 interrupted. See cachefsctl(8).\n");
}

/* A usage error: the message, a hint, exit 2. */
static void usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
static void usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	if (cmd)
		fprintf(stderr, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, "\nusage: cachefsctl %s %s\ntry 'cachefsctl %s --help'\n", cmd,
		        find_command(cmd) ? find_command(cmd)->synopsis : "", cmd);
	else
		fprintf(stderr, "\ntry 'cachefsctl --help'\n");
	exit(EXIT_USAGE);
}

/* getopt_long with opterr off: reports what it did not like, by name. */
static int next_opt(const char *cmd, int argc, char **argv, const char *shorts,
                    const struct option *longs)
{
	int before = optind;
	int c = getopt_long(argc, argv, shorts, longs, NULL);

	if (c == '?' || c == ':') {
		const char *bad = argv[optind - 1];
		int len = (int)strcspn(bad, "=");

		/* a long option is a word of its own that getopt went past; a
		 * short one may be inside a word (-jx) it is still reading */
		if (optind == before || strncmp(bad, "--", 2) != 0) {
			if (c == ':')
				usage_error(cmd, "option '-%c' needs a value", optopt);
			usage_error(cmd, "unknown option '-%c'", optopt);
		}
		if (c == ':')
			usage_error(cmd, "option '%.*s' needs a value", len, bad);
		if (optopt && bad[len] == '=')
			usage_error(cmd, "option '%.*s' takes no value", len, bad);
		usage_error(cmd, "unknown option '%.*s'", len, bad);
	}
	if (c == 'h' && cmd) {
		command_help(find_command(cmd), stdout);
		exit(0);
	}
	return c;
}

/* --- JSON ------------------------------------------------------------------ */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* A decimal integer JSON takes as a number (no sign, no leading zero). */
static int json_is_uint(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n > 0 && s[n] == 0 && (s[0] != '0' || n == 1) && n <= 20;
}

/* A word as a number when it is one, else a string. */
static void json_word(FILE *f, const char *s)
{
	if (json_is_uint(s) || (s[0] == '-' && json_is_uint(s + 1)))
		fputs(s, f);
	else
		json_str(f, s);
}

static void json_key(FILE *f, int *first, const char *key)
{
	fputs(*first ? "{" : ", ", f);
	*first = 0;
	json_str(f, key);
	fputs(": ", f);
}

static void json_end(FILE *f, int first)
{
	fputs(first ? "{}\n" : "}\n", f);
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
	if (config_file == NULL)
		config_file = config_opt;
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

	find_socket(NULL);
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

static const char *kv_str(const struct reply *r, const char *name)
{
	const char *v = kv_get(r, name);

	return v ? v : "?";
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
	if (kv_num(s, ENGINE_STAT(peer_fills)) + kv_num(s, ENGINE_STAT(peer_fallbacks)) +
	    kv_num(s, ENGINE_STAT(peer_served)) + kv_num(s, ENGINE_STAT(peers_up)))
		printf("peers        %llu up; bytes: %s from the filer, %s from peers, %s from the "
		       "cache; fills asked of peers: %llu ok, %llu refused, %llu timed out, %llu fell "
		       "back to the filer; %llu READs of peers answered\n",
		       (unsigned long long)kv_num(s, ENGINE_STAT(peers_up)),
		       human_bytes(b1, sizeof(b1), (double)kv_num(s, ENGINE_STAT(fill_bytes))),
		       human_bytes(b2, sizeof(b2), (double)kv_num(s, ENGINE_STAT(peer_bytes))),
		       human_bytes(b3, sizeof(b3), (double)kv_num(s, ENGINE_STAT(bytes_from_cache))),
		       (unsigned long long)kv_num(s, ENGINE_STAT(peer_fills)),
		       (unsigned long long)kv_num(s, ENGINE_STAT(peer_refused)),
		       (unsigned long long)kv_num(s, ENGINE_STAT(peer_timeouts)),
		       (unsigned long long)kv_num(s, ENGINE_STAT(peer_fallbacks)),
		       (unsigned long long)kv_num(s, ENGINE_STAT(peer_served)));
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

/* The options every command takes. */
#define OPT_HELP                                                                                   \
	{                                                                                          \
		"help", no_argument, NULL, 'h'                                                     \
	}
#define OPT_JSON                                                                                   \
	{                                                                                          \
		"json", no_argument, NULL, 'j'                                                     \
	}
#define OPT_END                                                                                    \
	{                                                                                          \
		NULL, 0, NULL, 0                                                                   \
	}

/* A command that takes only -h and --json (and no arguments). */
static int simple_opts(const char *cmd, int argc, char **argv)
{
	static const struct option lo[] = {OPT_HELP, OPT_JSON, OPT_END};
	int c, json = 0;

	while ((c = next_opt(cmd, argc, argv, ":hj", lo)) != -1)
		if (c == 'j')
			json = 1;
	if (optind < argc)
		usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	return json;
}

/* "name value" lines as one JSON object: numbers as numbers. */
static void json_kv(const struct reply *r)
{
	int first = 1;

	for (size_t i = 0; i < r->n; i++) {
		const char *sp = strchr(r->lines[i], ' ');
		char key[256];

		if (sp == NULL || (size_t)(sp - r->lines[i]) >= sizeof(key))
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)(sp - r->lines[i]), r->lines[i]);
		json_key(stdout, &first, key);
		json_word(stdout, sp + 1);
	}
	json_end(stdout, first);
}

static int cmd_stats(int argc, char **argv)
{
	static const struct option lo[] = {
	    OPT_HELP, OPT_JSON, {"raw", no_argument, NULL, 'r'}, OPT_END};
	struct reply s, info;
	char *req_stats[] = {"stats"}, *req_info[] = {"info"};
	int mode = 0, c; /* 0 table, 1 raw, 2 json */

	while ((c = next_opt("stats", argc, argv, ":hj", lo)) != -1)
		mode = c == 'r' ? 1 : 2;
	if (optind < argc)
		usage_error("stats", "unexpected argument '%s'", argv[optind]);
	ctl_simple(1, req_stats, &s);
	if (mode == 1) {
		for (size_t i = 0; i < s.n; i++)
			puts(s.lines[i]);
	} else if (mode == 2) {
		json_kv(&s);
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

/* Sends argv as one request and prints the data lines as they come (or
 * keeps them in *keep). */
static int request_print(int argc, char **argv, struct reply *keep)
{
	struct reply r;
	int fd = ctl_connect();

	ctl_request(fd, argc, argv, keep ? keep : &r, keep ? NULL : print_line, NULL);
	close(fd);
	if (keep)
		r = *keep;
	if (!r.ok) {
		fprintf(stderr, "%s: %s\n", prog, r.error);
		return error_code(&r);
	}
	return 0;
}

static int cmd_info(int argc, char **argv)
{
	char *req[] = {"info"};
	struct reply r;

	if (!simple_opts("info", argc, argv))
		return request_print(1, req, NULL);
	ctl_simple(1, req, &r);
	json_kv(&r);
	reply_free(&r);
	return 0;
}

/* config: "key = value" lines, "# key is not set" */
static int cmd_config(int argc, char **argv)
{
	char *req[] = {"config"};
	struct reply r;
	int first = 1;

	if (!simple_opts("config", argc, argv))
		return request_print(1, req, NULL);
	ctl_simple(1, req, &r);
	for (size_t i = 0; i < r.n; i++) {
		const char *l = r.lines[i], *eq = strstr(l, " = ");
		char key[256];

		if (strncmp(l, "# ", 2) == 0 && strstr(l, " is not set")) {
			snprintf(key, sizeof(key), "%.*s", (int)strcspn(l + 2, " "), l + 2);
			json_key(stdout, &first, key);
			fputs("null", stdout);
		} else if (eq && l[0] != '#' && (size_t)(eq - l) < sizeof(key)) {
			snprintf(key, sizeof(key), "%.*s", (int)(eq - l), l);
			json_key(stdout, &first, key);
			json_str(stdout, eq + 3);
		}
	}
	json_end(stdout, first);
	reply_free(&r);
	return 0;
}

/* reload: {"ok": true, "changes": [lines]} */
static int cmd_reload(int argc, char **argv)
{
	char *req[] = {"reload"};
	struct reply r;
	int rc, json = simple_opts("reload", argc, argv);

	/* The socket is found through the configuration file, which is the
	 * very file being reloaded: one that cannot be read is refused here,
	 * as the daemon would refuse it (exit 1; the daemon keeps running the
	 * configuration it has), not taken for a usage error. */
	if (!sock_path[0] && !cache_dir_opt &&
	    (config_opt || access(DEFAULT_CONFIG, R_OK) == 0)) {
		struct cfs_config c;
		char err[1024];

		config_defaults(&c);
		rc = config_load_file(&c, config_opt ? config_opt : DEFAULT_CONFIG, err, sizeof(err));
		config_free(&c);
		if (rc != 0) {
			fprintf(stderr, "%s: %s (not reloaded: the daemon keeps its configuration)\n",
			        prog, err);
			return 1;
		}
	}
	if (!json)
		return request_print(1, req, NULL);
	rc = request_print(1, req, &r);
	if (rc == 0) {
		printf("{\"ok\": true, \"changes\": [");
		for (size_t i = 0; i < r.n; i++) {
			fputs(i ? ", " : "", stdout);
			json_str(stdout, r.lines[i]);
		}
		printf("]}\n");
	}
	reply_free(&r);
	return rc;
}

static uint64_t word_after(const char *line, const char *word)
{
	const char *p = strstr(line, word);

	return p ? strtoull(p + strlen(word), NULL, 10) : 0;
}

static int cmd_cull(int argc, char **argv)
{
	static const struct option lo[] = {
	    OPT_HELP, OPT_JSON, {"to", required_argument, NULL, 't'}, OPT_END};
	char *req[3] = {"cull"};
	struct reply r;
	int c, json = 0, n = 1, rc, first = 1;

	while ((c = next_opt("cull", argc, argv, ":hj", lo)) != -1) {
		if (c == 'j')
			json = 1;
		else if (c == 't') {
			req[1] = "--to";
			req[2] = optarg; /* the daemon checks it */
			n = 3;
		}
	}
	if (optind < argc)
		usage_error("cull", "unexpected argument '%s'", argv[optind]);
	if (!json)
		return request_print(n, req, NULL);
	rc = request_print(n, req, &r);
	if (rc == 0) {
		for (size_t i = 0; i < r.n; i++) {
			const char *l = r.lines[i];

			if (strncmp(l, "target ", 7) == 0) {
				json_key(stdout, &first, "target_bytes");
				printf("%llu", (unsigned long long)word_after(l, "target "));
			} else if (strncmp(l, "evicted ", 8) == 0) {
				json_key(stdout, &first, "evicted_objects");
				printf("%llu", (unsigned long long)word_after(l, "evicted "));
				json_key(stdout, &first, "evicted_bytes");
				printf("%llu", (unsigned long long)word_after(l, "objects ("));
			} else if (strncmp(l, "cached ", 7) == 0) {
				json_key(stdout, &first, "cached_bytes");
				printf("%llu", (unsigned long long)word_after(l, "cached "));
				json_key(stdout, &first, "cached_objects");
				printf("%llu", (unsigned long long)word_after(l, "bytes in "));
			} else if (strncmp(l, "note: ", 6) == 0) {
				json_key(stdout, &first, "note");
				json_str(stdout, l + 6);
			}
		}
		json_end(stdout, first);
	}
	reply_free(&r);
	return rc;
}

/* One invalidate request as a JSON array element. */
static int invalidate_json(int argc, char **argv, const char *target, int *first)
{
	struct reply r;
	int rc = request_print(argc, argv, &r);
	const char *h = NULL;

	/* the array opens with its first element: nothing on stdout when the
	 * daemon cannot be reached */
	printf("%s{\"target\": ", *first ? "{\"results\": [" : ", ");
	*first = 0;
	json_str(stdout, target);
	printf(", \"ok\": %s", rc == 0 ? "true" : "false");
	if (rc != 0) {
		printf(", \"error\": ");
		json_str(stdout, r.error);
	}
	for (size_t i = 0; i < r.n; i++) {
		if ((h = strstr(r.lines[i], "(handle ")) != NULL ||
		    (h = strstr(r.lines[i], "invalidated handle ")) != NULL) {
			h = strchr(strstr(h, "handle "), ' ') + 1;
			printf(", \"handle\": \"%.*s\"", (int)strspn(h, "0123456789abcdef"), h);
		}
		if (strncmp(r.lines[i], "invalidated ", 12) == 0 &&
		    strstr(r.lines[i], " objects")) {
			printf(", \"objects\": %llu",
			       (unsigned long long)word_after(r.lines[i], "invalidated "));
		}
	}
	printf(", \"messages\": [");
	for (size_t i = 0; i < r.n; i++) {
		fputs(i ? ", " : "", stdout);
		json_str(stdout, r.lines[i]);
	}
	printf("]}");
	reply_free(&r);
	return rc;
}

static int cmd_invalidate(int argc, char **argv)
{
	static const struct option lo[] = {OPT_HELP,
	                                   OPT_JSON,
	                                   {"fh", required_argument, NULL, 'f'},
	                                   {"all", no_argument, NULL, 'a'},
	                                   OPT_END};
	const char *fh = NULL;
	int c, json = 0, all = 0, rc = 0, first = 1;

	while ((c = next_opt("invalidate", argc, argv, ":hj", lo)) != -1) {
		if (c == 'j')
			json = 1;
		else if (c == 'f')
			fh = optarg;
		else if (c == 'a')
			all = 1;
	}
	if ((fh != NULL) + all + (optind < argc) != 1)
		usage_error("invalidate", "give PATH..., --fh HEX or --all (one of them)");
	if (fh || all) {
		char *req[] = {"invalidate", all ? "--all" : "--fh", (char *)fh};

		rc = json ? invalidate_json(all ? 2 : 3, req, all ? "--all" : fh, &first)
		          : request_print(all ? 2 : 3, req, NULL);
	}
	for (int i = optind; i < argc; i++) {
		char *req[] = {"invalidate", argv[i]};
		int r =
		    json ? invalidate_json(2, req, argv[i], &first) : request_print(2, req, NULL);

		if (r != 0)
			rc = r == EXIT_UNREACHABLE ? r : EXIT_FAILED;
	}
	if (json)
		printf("]}\n");
	return rc;
}

struct verify_state {
	int json;
	uint64_t bad, more;
	struct reply bads; /* with --json: the "bad ..." lines */
	char summary[512];
};

static void verify_line(const char *line, void *arg)
{
	struct verify_state *v = arg;
	const char *b = strstr(line, " bad ");

	if (strncmp(line, "summary ", 8) == 0) {
		snprintf(v->summary, sizeof(v->summary), "%s", line);
		if (b)
			v->bad = strtoull(b + 5, NULL, 10);
	}
	if (!v->json) {
		puts(line);
		fflush(stdout);
		return;
	}
	if (strncmp(line, "bad ", 4) == 0) {
		if (v->bads.n == v->bads.cap) {
			v->bads.cap = v->bads.cap ? 2 * v->bads.cap : 64;
			v->bads.lines = realloc(v->bads.lines, v->bads.cap * sizeof(char *));
			if (v->bads.lines == NULL)
				die(EXIT_FAILED, "out of memory");
		}
		if ((v->bads.lines[v->bads.n++] = strdup(line)) == NULL)
			die(EXIT_FAILED, "out of memory");
	} else if (strncmp(line, "... ", 4) == 0) {
		v->more = strtoull(line + 4, NULL, 10);
	}
}

/* "bad KIND fh HEX[ index N]: WHY[ (dropped)]" */
static void verify_bad_json(const char *l, int first)
{
	char kind[32] = "", hex[200] = "";
	const char *why = strstr(l, ": ");
	char reason[600];
	size_t wl;
	int dropped;

	sscanf(l, "bad %31s fh %199[0-9a-f]", kind, hex);
	why = why ? why + 2 : "";
	wl = strlen(why);
	dropped = wl >= 10 && strcmp(why + wl - 10, " (dropped)") == 0;
	snprintf(reason, sizeof(reason), "%.*s", (int)(dropped ? wl - 10 : wl), why);
	printf("%s{\"kind\": ", first ? "" : ", ");
	json_str(stdout, kind);
	printf(", \"fh\": \"%s\"", hex);
	if (strstr(l, " index "))
		printf(", \"index\": %llu", (unsigned long long)word_after(l, " index "));
	printf(", \"reason\": ");
	json_str(stdout, reason);
	printf(", \"dropped\": %s}", dropped ? "true" : "false");
}

static int cmd_verify(int argc, char **argv)
{
	static const struct option lo[] = {
	    OPT_HELP, OPT_JSON, {"drop-bad", no_argument, NULL, 'D'}, OPT_END};
	struct verify_state v;
	struct reply r;
	char *req[] = {"verify", "--drop-bad"};
	int c, drop = 0, fd;

	memset(&v, 0, sizeof(v));
	while ((c = next_opt("verify", argc, argv, ":hj", lo)) != -1) {
		if (c == 'j')
			v.json = 1;
		else if (c == 'D')
			drop = 1;
	}
	if (optind < argc)
		usage_error("verify", "unexpected argument '%s'", argv[optind]);
	fd = ctl_connect();
	ctl_request(fd, drop ? 2 : 1, req, &r, verify_line, &v);
	close(fd);
	if (!r.ok) {
		fprintf(stderr, "%s: %s\n", prog, r.error);
		return error_code(&r);
	}
	if (v.json) {
		static const char *const keys[] = {"inline", "chunks",  "bytes",
		                                   "bad",    "dropped", "changed"};
		char k[32];
		const char *sec = strstr(v.summary, " seconds ");

		printf("{");
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			snprintf(k, sizeof(k), " %s ", keys[i]);
			printf("\"%s\": %llu, ", keys[i],
			       (unsigned long long)word_after(v.summary, k));
		}
		printf("\"seconds\": %.1f, \"entries\": [", sec ? strtod(sec + 9, NULL) : 0.0);
		for (size_t i = 0; i < v.bads.n; i++)
			verify_bad_json(v.bads.lines[i], i == 0);
		printf("], \"entries_not_shown\": %llu}\n", (unsigned long long)v.more);
		reply_free(&v.bads);
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

static int warm_json; /* warm --json: the progress as JSON at the end */

static void progress_json(const struct progress *p, const char *state_path, int alive)
{
	printf("{\"state\": ");
	json_str(stdout, p->state);
	printf(", \"pid\": %d, \"running\": %s, \"files_total\": %llu, \"files_done\": %llu, "
	       "\"files_failed\": %llu, \"files_skipped\": %llu, \"bytes_total\": %llu, "
	       "\"bytes_done\": %llu, \"rate_bytes_per_second\": %.0f, \"eta_seconds\": %llu, "
	       "\"updated\": %llu, \"state_file\": ",
	       p->pid, alive ? "true" : "false", (unsigned long long)p->files_total,
	       (unsigned long long)p->files_done, (unsigned long long)p->files_failed,
	       (unsigned long long)p->files_skipped, (unsigned long long)p->bytes_total,
	       (unsigned long long)p->bytes_done, p->rate, (unsigned long long)p->eta,
	       (unsigned long long)p->updated);
	json_str(stdout, state_path);
	printf("}\n");
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
			if (warm_json) {
				printf("{\"state\": \"background\", \"pid\": %d, \"state_file\": ",
				       (int)pid);
				json_str(stdout, w->state_path);
				printf("}\n");
				exit(0);
			}
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
	if (!background && warm_json)
		progress_json(&w->p, w->state_path, 0);
	else if (!background)
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
	if (warm_json) {
		int running = strcmp(p.state, "running") == 0 || strcmp(p.state, "scanning") == 0;
		int alive = running && warm_alive(p.pid);

		if (running && !alive)
			snprintf(p.state, sizeof(p.state), "interrupted");
		progress_json(&p, state_path, alive);
		return strcmp(p.state, "failed") == 0 || (running && !alive) ? EXIT_FAILED : 0;
	}
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
	static const struct option lo[] = {
	    OPT_HELP,
	    OPT_JSON,
	    {"resume", no_argument, NULL, 'R'},
	    {"status", no_argument, NULL, 'S'},
	    {"cancel", no_argument, NULL, 'C'},
	    {"background", no_argument, NULL, 'b'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"server", required_argument, NULL, 's'},
	    {"port", required_argument, NULL, 'p'},
	    {"export", required_argument, NULL, 'e'},
	    {"uid", required_argument, NULL, 'u'},
	    {"gid", required_argument, NULL, 'g'},
	    {"jobs", required_argument, NULL, 'J'},
	    {"max-rate", required_argument, NULL, 'm'},
	    {"state", required_argument, NULL, 'f'},
	    {"from", required_argument, NULL, 'F'},
	    OPT_END,
	};
	int c;

	while ((c = next_opt("warm", argc, argv, ":hj", lo)) != -1) {
		const char *v = optarg;

		switch (c) {
		case 'j':
			warm_json = 1;
			break;
		case 'R':
			resume = 1;
			break;
		case 'S':
			status = 1;
			break;
		case 'C':
			cancel = 1;
			break;
		case 'b':
			background = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 's':
			server = v;
			break;
		case 'p':
			port = parse_int("--port", v, 1, 65535);
			break;
		case 'e':
			export = v;
			break;
		case 'u':
			w.cfg.uid = parse_int("--uid", v, 0, 0x7fffffff);
			break;
		case 'g':
			w.cfg.gid = parse_int("--gid", v, 0, 0x7fffffff);
			break;
		case 'J':
			w.cfg.jobs = parse_int("--jobs", v, 1, WARM_MAX_JOBS);
			break;
		case 'm':
			w.cfg.max_rate = parse_rate(v);
			break;
		case 'f':
			state = v;
			break;
		case 'F':
			from = v;
			break;
		}
	}
	for (int i = optind; i < argc; i++) {
		w.cfg.paths = realloc(w.cfg.paths, (size_t)(w.cfg.npaths + 1) * sizeof(char *));
		if (w.cfg.paths == NULL)
			die(EXIT_FAILED, "out of memory");
		w.cfg.paths[w.cfg.npaths++] = argv[i];
	}
	if (status + cancel + resume > 1)
		die(EXIT_USAGE, "warm: --resume, --status and --cancel go alone");
	if (status || cancel) {
		if (!state && !cache_dir_opt)
			find_socket(NULL);
		if (!state && !cache_dir_opt) {
			/* --socket alone: the daemon knows its cache_dir */
			char *req[] = {"info"};
			struct reply info;

			ctl_simple(1, req, &info);
			if (kv_get(&info, "cache_dir"))
				cache_dir_opt = strdup(kv_get(&info, "cache_dir"));
			reply_free(&info);
		}
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
	static const struct option lo[] = {OPT_HELP, OPT_JSON, OPT_END};
	char path[4200], why[512];
	struct stat st;
	int reason, rc, c, json = 0;

	while ((c = next_opt("check-index", argc, argv, ":hj", lo)) != -1)
		json = 1;
	if (argc - optind > 1)
		usage_error("check-index", "one PATH at most");
	if (argc - optind == 1)
		snprintf(path, sizeof(path), "%s", argv[optind]);
	else if (cache_dir_opt)
		snprintf(path, sizeof(path), "%s/index/data.mdb", cache_dir_opt);
	else
		usage_error("check-index",
		            "which index? give PATH, --cache-dir DIR or --config FILE");
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && strlen(path) + 10 < sizeof(path)) {
		size_t n = strlen(path);

		memcpy(path + n, "/data.mdb", 10);
		if (access(path, F_OK) != 0)
			path[n] = '\0'; /* a directory where data.mdb should be */
	}
	rc = store_index_check_path(path, 0, &reason, why, sizeof(why));
	if (rc < 0)
		die(EXIT_FAILED, "%s: %s", path, strerror(-rc));
	if (json) {
		printf("{\"path\": ");
		json_str(stdout, path);
		printf(", \"intact\": %s", rc == 0 ? "true" : "false");
		if (rc != 0) {
			printf(", \"reason\": ");
			json_str(stdout, store_damage_name(reason));
			printf(", \"detail\": ");
			json_str(stdout, why);
		}
		printf("}\n");
		return rc == 0 ? 0 : EXIT_FAILED;
	}
	if (rc == 0) {
		printf("%s: intact\n", path);
		return 0;
	}
	printf("%s: damaged (%s): %s\n", path, store_damage_name(reason), why);
	return EXIT_FAILED;
}

/* --- chown ---------------------------------------------------------------- */

/* USER[:GROUP] (names or numbers): the group is USER's login group when
 * not given ((gid_t)-1, groups unchanged, for a number no one is named). */
static void parse_owner(const char *spec, uid_t *uid, gid_t *gid, char *name, size_t namelen)
{
	char user[256], *colon;
	const char *group = NULL;
	struct passwd *pw;

	snprintf(user, sizeof(user), "%s", spec);
	colon = strchr(user, ':');
	if (colon) {
		*colon = 0;
		group = colon + 1;
	}
	if (user[0] == 0)
		usage_error("chown", "'%s': no USER", spec);
	pw = getpwnam(user);
	if (pw == NULL && strspn(user, "0123456789") == strlen(user) && strlen(user) < 10)
		pw = getpwuid((uid_t)strtoul(user, NULL, 10));
	if (pw) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
		snprintf(name, namelen, "%s", pw->pw_name);
	} else if (strspn(user, "0123456789") == strlen(user) && strlen(user) < 10) {
		*uid = (uid_t)strtoul(user, NULL, 10);
		*gid = (gid_t)-1;
		snprintf(name, namelen, "%s", user);
	} else {
		die(EXIT_USAGE, "chown: no user '%s'", user);
	}
	if (group && group[0]) {
		struct group *gr = getgrnam(group);

		if (gr)
			*gid = gr->gr_gid;
		else if (strspn(group, "0123456789") == strlen(group) && strlen(group) < 10)
			*gid = (gid_t)strtoul(group, NULL, 10);
		else
			die(EXIT_USAGE, "chown: no group '%s'", group);
	}
}

#define CHOWN_SHOWN 100 /* entries left alone listed in --json */

struct chown_out {
	int json;
	size_t n;
	char *path[CHOWN_SHOWN], *why[CHOWN_SHOWN];
};

static void chown_skip(const char *path, const char *why, void *arg)
{
	struct chown_out *o = arg;

	if (!o->json) {
		fprintf(stderr, "%s: chown: left alone: %s: %s\n", prog, path, why);
		return;
	}
	if (o->n < CHOWN_SHOWN) {
		o->path[o->n] = strdup(path);
		o->why[o->n] = strdup(why);
		if (o->path[o->n] && o->why[o->n])
			o->n++;
	}
}

/* Gives a stopped daemon's cache directory to another user (store_chown):
 * what moves a cache made by root to the service user. */
static int cmd_chown(int argc, char **argv)
{
	static const struct option lo[] = {
	    OPT_HELP, OPT_JSON, {"cache-dir", required_argument, NULL, 'd'}, OPT_END};
	struct store_chown_result res;
	struct chown_out out = {0};
	char err[4400], name[256];
	uid_t uid;
	gid_t gid;
	int c, rc;

	while ((c = next_opt("chown", argc, argv, ":hjd:", lo)) != -1) {
		if (c == 'j')
			out.json = 1;
		else if (c == 'd')
			cache_dir_opt = optarg;
	}
	if (argc - optind != 1)
		usage_error("chown", "one USER[:GROUP]");
	if (cache_dir_opt == NULL)
		usage_error("chown", "which cache? give --cache-dir DIR or --config FILE");
	parse_owner(argv[optind], &uid, &gid, name, sizeof(name));
	rc = store_chown(cache_dir_opt, uid, gid, &res, chown_skip, &out, err, sizeof(err));
	if (rc < 0)
		die(EXIT_FAILED, "chown: %s", err);
	if (out.json) {
		printf("{\"cache_dir\": ");
		json_str(stdout, cache_dir_opt);
		printf(", \"user\": ");
		json_str(stdout, name);
		printf(", \"uid\": %u, \"gid\": ", (unsigned)uid);
		if (gid == (gid_t)-1)
			printf("null");
		else
			printf("%u", (unsigned)gid);
		printf(", \"changed\": %" PRIu64 ", \"already\": %" PRIu64
		       ", \"left_alone\": %" PRIu64 ", \"entries_left_alone\": [",
		       res.changed, res.already, res.skipped);
		for (size_t i = 0; i < out.n; i++) {
			printf("%s{\"path\": ", i ? ", " : "");
			json_str(stdout, out.path[i]);
			printf(", \"why\": ");
			json_str(stdout, out.why[i]);
			printf("}");
			free(out.path[i]);
			free(out.why[i]);
		}
		printf("]}\n");
	} else {
		printf("%s: given to %s (uid %u", cache_dir_opt, name, (unsigned)uid);
		if (gid != (gid_t)-1)
			printf(", gid %u", (unsigned)gid);
		printf("): %" PRIu64 " entries changed, %" PRIu64 " were theirs already",
		       res.changed, res.already);
		if (res.skipped)
			printf(", %" PRIu64 " left alone (above)", res.skipped);
		printf("\n");
	}
	return res.skipped ? EXIT_FAILED : 0;
}

/* --- top ------------------------------------------------------------------ */

#define TOP_PROCS 6 /* rows of the busiest procedures */

struct top_sample {
	struct reply s;
	double t;
};

static uint64_t delta(const struct top_sample *a, const struct top_sample *b, const char *name)
{
	uint64_t x = kv_num(&a->s, name), y = kv_num(&b->s, name);

	return y >= x ? y - x : y; /* a restarted daemon starts again at 0 */
}

struct top_proc {
	const char *name;
	uint64_t calls, replies, lat;
};

static int top_proc_cmp(const void *a, const void *b)
{
	const struct top_proc *x = a, *y = b;

	return x->calls != y->calls ? (x->calls < y->calls ? 1 : -1) : strcmp(x->name, y->name);
}

static void top_show(const struct top_sample *a, const struct top_sample *b,
                     const struct reply *info, int json, int clear)
{
	static const enum cfs_proc_counter on[4] = {CFS_PROC_NFS_HIT, CFS_PROC_NFS_MISS,
	                                            CFS_PROC_NFS_PASSTHROUGH, CFS_PROC_NFS_ERROR};
	struct top_proc procs[NFS3_NPROCS];
	double dt = b->t - a->t > 0.001 ? b->t - a->t : 0.001;
	uint64_t calls = 0, rtt = 0, hits = delta(a, b, ENGINE_STAT(read_hits)),
	         misses = delta(a, b, ENGINE_STAT(read_misses)),
	         pass = delta(a, b, ENGINE_STAT(read_passthrough)),
	         from_cache = delta(a, b, ENGINE_STAT(bytes_from_cache)),
	         from_up = delta(a, b, UPSTREAM_STAT(read_bytes)),
	         to_clients = delta(a, b, ENGINE_STAT(bytes_read)),
	         up_calls = delta(a, b, UPSTREAM_STAT(calls)),
	         up_replies = delta(a, b, UPSTREAM_STAT(replies));
	uint64_t cached = kv_num(&b->s, STORE_STAT(bytes)), limit = kv_num(info, "cache_size"),
	         fs = kv_num(&b->s, STORE_STAT(fs_bytes)),
	         fs_free = kv_num(&b->s, STORE_STAT(fs_free_bytes));
	double fill = limit ? pct(cached, limit) : fs ? pct(fs - fs_free, fs) : 0;
	uint32_t np = 0;
	char name[64], b1[32], b2[32], b3[32], when[32];
	time_t now = time(NULL);
	struct tm tm;

	for (uint32_t p = 0; p < NFS3_NPROCS; p++) {
		struct top_proc *t = &procs[np];

		cfs_proc_stat_name(CFS_PROC_NFS_CALLS, p, name, sizeof(name));
		t->name = proto_proc_name(NFS_PROGRAM, p);
		t->calls = delta(a, b, name);
		t->replies = 0;
		for (int i = 0; i < 4; i++) {
			cfs_proc_stat_name(on[i], p, name, sizeof(name));
			t->replies += delta(a, b, name);
		}
		cfs_proc_stat_name(CFS_PROC_NFS_LATENCY, p, name, sizeof(name));
		t->lat = delta(a, b, name);
		calls += t->calls;
		if (t->calls)
			np++;
	}
	for (uint32_t p = cfs_proc_counter_descs[CFS_PROC_UPSTREAM_RTT].first; p < NFS3_NPROCS;
	     p++) {
		cfs_proc_stat_name(CFS_PROC_UPSTREAM_RTT, p, name, sizeof(name));
		rtt += delta(a, b, name);
	}
	qsort(procs, np, sizeof(procs[0]), top_proc_cmp);
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (json) {
		printf("{\"time\": %lld, \"interval_seconds\": %.3f, \"calls\": %llu, "
		       "\"calls_per_second\": %.2f, \"procedures\": [",
		       (long long)now, dt, (unsigned long long)calls, (double)calls / dt);
		for (uint32_t i = 0; i < np; i++)
			printf("%s{\"name\": \"%s\", \"calls\": %llu, \"calls_per_second\": %.2f, "
			       "\"avg_ms\": %.3f}",
			       i ? ", " : "", procs[i].name, (unsigned long long)procs[i].calls,
			       (double)procs[i].calls / dt,
			       procs[i].replies
			           ? (double)procs[i].lat / (double)procs[i].replies / 1000.0
			           : 0.0);
		printf("], \"read_hits\": %llu, \"read_misses\": %llu, \"read_passthrough\": %llu, "
		       "\"hit_ratio\": ",
		       (unsigned long long)hits, (unsigned long long)misses,
		       (unsigned long long)pass);
		if (hits + misses + pass)
			printf("%.4f", (double)hits / (double)(hits + misses + pass));
		else
			printf("null");
		printf(", \"bytes_from_cache\": %llu, \"bytes_from_upstream\": %llu, "
		       "\"bytes_to_clients\": %llu, \"cache_bytes_per_second\": %.0f, "
		       "\"upstream_bytes_per_second\": %.0f, \"client_bytes_per_second\": %.0f, "
		       "\"upstream_calls\": %llu, \"upstream_calls_per_second\": %.2f, "
		       "\"upstream_rtt_ms\": ",
		       (unsigned long long)from_cache, (unsigned long long)from_up,
		       (unsigned long long)to_clients, (double)from_cache / dt,
		       (double)from_up / dt, (double)to_clients / dt, (unsigned long long)up_calls,
		       (double)up_calls / dt);
		if (up_replies)
			printf("%.3f", (double)rtt / (double)up_replies / 1000.0);
		else
			printf("null");
		printf(
		    ", \"upstream_conns_up\": %llu, \"upstream_conns_total\": %llu, "
		    "\"clients_connected\": %llu, \"cache_bytes\": %llu, \"cache_size\": %llu, "
		    "\"fs_bytes\": %llu, \"fs_free_bytes\": %llu, \"cache_fill_percent\": %.1f}\n",
		    (unsigned long long)kv_num(&b->s, "upstream_conns_up"),
		    (unsigned long long)kv_num(&b->s, "upstream_conns_total"),
		    (unsigned long long)kv_num(&b->s, "clients_connected"),
		    (unsigned long long)cached, (unsigned long long)limit, (unsigned long long)fs,
		    (unsigned long long)fs_free, fill);
		fflush(stdout);
		return;
	}
	if (clear)
		fputs("\033[H\033[2J", stdout);
	printf("cachefsd %s (pid %s) serving %s - %s, interval %.1f s\n", kv_str(info, "version"),
	       kv_str(info, "pid"), kv_str(info, "export"), when, dt);
	printf("calls        %.1f/s; upstream %.1f calls/s, round trip ", (double)calls / dt,
	       (double)up_calls / dt);
	if (up_replies)
		printf("%.2f ms", (double)rtt / (double)up_replies / 1000.0);
	else
		printf("-");
	printf(" (%llu/%llu connections up)\n",
	       (unsigned long long)kv_num(&b->s, "upstream_conns_up"),
	       (unsigned long long)kv_num(&b->s, "upstream_conns_total"));
	printf("READ         hit ratio ");
	if (hits + misses + pass)
		printf("%.1f%%", pct(hits, hits + misses + pass));
	else
		printf("-");
	printf(" (%llu hits, %llu misses, %llu passed through)\n", (unsigned long long)hits,
	       (unsigned long long)misses, (unsigned long long)pass);
	printf("MiB/s        %.2f from cache, %.2f from upstream, %.2f to clients\n",
	       (double)from_cache / dt / 1048576.0, (double)from_up / dt / 1048576.0,
	       (double)to_clients / dt / 1048576.0);
	printf("clients      %llu connected\n",
	       (unsigned long long)kv_num(&b->s, "clients_connected"));
	printf("cache        %s in %llu files", human_bytes(b1, sizeof(b1), (double)cached),
	       (unsigned long long)kv_num(&b->s, STORE_STAT(objects)));
	if (limit)
		printf(", %.0f%% of cache_size %s", fill,
		       human_bytes(b2, sizeof(b2), (double)limit));
	if (fs)
		printf("; %s free of %s", human_bytes(b2, sizeof(b2), (double)fs_free),
		       human_bytes(b3, sizeof(b3), (double)fs));
	if (kv_num(&b->s, STORE_STAT(fill_stopped)))
		printf("; filling STOPPED (%s)", kv_str(&b->s, "fill_stopped_reason"));
	printf("\n\n%-12s %10s %10s\n", "procedure", "calls/s", "avg ms");
	for (uint32_t i = 0; i < np && i < TOP_PROCS; i++)
		printf("%-12s %10.1f %10.3f\n", procs[i].name, (double)procs[i].calls / dt,
		       procs[i].replies ? (double)procs[i].lat / (double)procs[i].replies / 1000.0
		                        : 0.0);
	if (np == 0)
		printf("(no calls)\n");
	putchar('\n');
	fflush(stdout);
}

static int cmd_top(int argc, char **argv)
{
	static const struct option lo[] = {OPT_HELP,
	                                   OPT_JSON,
	                                   {"delay", required_argument, NULL, 'd'},
	                                   {"count", required_argument, NULL, 'n'},
	                                   {"once", no_argument, NULL, 'o'},
	                                   OPT_END};
	struct top_sample a, b;
	struct reply info;
	struct sigaction sa;
	char *req_stats[] = {"stats"}, *req_info[] = {"info"};
	double delay = 2;
	long count = 0;
	int c, json = 0, fd, tty;

	while ((c = next_opt("top", argc, argv, ":hjd:n:", lo)) != -1) {
		char *end;

		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'd':
			delay = strtod(optarg, &end);
			if (*optarg == 0 || *end || !(delay >= 0.1 && delay <= 86400))
				usage_error("top",
				            "--delay: '%s' is not a number of seconds (0.1..86400)",
				            optarg);
			break;
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*optarg == 0 || *end || count < 1)
				usage_error("top", "--count: '%s' is not a number of at least 1",
				            optarg);
			break;
		case 'o':
			count = 1;
			break;
		}
	}
	if (optind < argc)
		usage_error("top", "unexpected argument '%s'", argv[optind]);
	tty = !json && isatty(1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fd = ctl_connect();
	ctl_request(fd, 1, req_info, &info, NULL, NULL);
	if (!info.ok)
		die(error_code(&info), "%s", info.error);
	ctl_request(fd, 1, req_stats, &a.s, NULL, NULL);
	a.t = now_s();
	if (!a.s.ok)
		die(error_code(&a.s), "%s", a.s.error);
	for (long i = 0; count == 0 || i < count; i++) {
		double until = a.t + delay;

		while (!warm_stop && now_s() < until) {
			double left = until - now_s();
			struct timespec ts = {(time_t)left,
			                      (long)((left - (double)(time_t)left) * 1e9)};

			nanosleep(&ts, NULL);
		}
		if (warm_stop)
			break;
		ctl_request(fd, 1, req_stats, &b.s, NULL, NULL);
		b.t = now_s();
		if (!b.s.ok)
			die(error_code(&b.s), "%s", b.s.error);
		top_show(&a, &b, &info, json, tty);
		reply_free(&a.s);
		a = b;
	}
	reply_free(&a.s);
	reply_free(&info);
	close(fd);
	return 0;
}

/* --- help ----------------------------------------------------------------- */

#define HELP_EXIT                                                                                  \
	"\nexit status: 0 ok, 1 the daemon answered with an error, 2 usage, 3 the daemon\n"        \
	"cannot be reached (not running, a stale socket, permission denied)\n"
#define HELP_JSON_OPT "  -j, --json    print the result as one JSON object\n"
#define HELP_HELP_OPT "  -h, --help    this help\n"

static int cmd_help(int argc, char **argv);

static const struct command commands[] = {
    {"stats", cmd_stats, "[--raw | --json]", "the daemon's counters (a table)",
     "The daemon's counters. Without an option, a table: calls by procedure with\n"
     "their outcome (hit, miss, pass, failed), errors and average latency; the\n"
     "cache (bytes, files, limits, free space, filling and culling); READ hits,\n"
     "misses and pass-throughs; fills; evictions; the metadata cache; the upstream.\n"
     "\noptions:\n"
     "  --raw         every counter as 'name value' lines (the names of the stats\n"
     "                file SIGUSR1 writes)\n"
     "  -j, --json    every counter in one JSON object, by the same names:\n"
     "                {\"read_hits\": 12, \"fill_stopped_reason\": \"none\", ...}\n" HELP_HELP_OPT
         HELP_EXIT},
    {"info", cmd_info, "[--json]", "version, pid, listen address, export, paths",
     "The daemon: version, pid, uptime_seconds, listen, port, export, upstream,\n"
     "cache_dir, control_socket, metrics_listen, meta_ttl, cache_size, the space\n"
     "levels and the transfer sizes, as 'key value' lines.\n"
     "\noptions:\n" HELP_JSON_OPT
     "                (the same keys; numbers as numbers)\n" HELP_HELP_OPT HELP_EXIT},
    {"config", cmd_config, "[--json]", "the effective configuration",
     "The effective configuration, in configuration-file syntax ('key = value';\n"
     "'# key is not set' for a key without a value).\n"
     "\noptions:\n" HELP_JSON_OPT
     "                (every key; its value as a string, null when not set)\n" HELP_HELP_OPT
         HELP_EXIT},
    {"invalidate", cmd_invalidate, "[--json] PATH... | --fh HEX | --all",
     "drop what is cached about files",
     "Drops what is cached about PATH (relative to the export, or absolute under\n"
     "it): its data, attributes and metadata, and its directory's listings, so the\n"
     "next read is a miss. Prints one line per PATH.\n"
     "\noptions:\n"
     "  --fh HEX      one file handle (the upstream's, in hex)\n"
     "  --all         everything cached: data and metadata\n" HELP_JSON_OPT
     "                {\"results\": [{\"target\", \"ok\", \"handle\", \"messages\", "
     "\"error\"}]}\n" HELP_HELP_OPT
     "\nexit status: 0 ok, 1 a PATH could not be invalidated, 2 usage, 3 the daemon\n"
     "cannot be reached\n"},
    {"cull", cmd_cull, "[--to PERCENT] [--json]", "evict least recently used files now",
     "Evicts least recently used files now: until the configured limits hold, or\n"
     "with --to until the cache holds at most PERCENT % of cache_size (of what it\n"
     "holds now when cache_size is 0). Prints what it evicted and what is left.\n"
     "\noptions:\n"
     "  --to PERCENT  0..100\n" HELP_JSON_OPT
     "                {\"evicted_objects\", \"evicted_bytes\", \"cached_bytes\",\n"
     "                \"cached_objects\", \"target_bytes\" (with --to), \"note\"}\n" HELP_HELP_OPT
         HELP_EXIT},
    {"verify", cmd_verify, "[--drop-bad] [--json]", "check every cached chunk against its checksum",
     "Checks every cached inline file and chunk against its checksum, and the\n"
     "index's entries. Prints a 'bad KIND fh HEX [index N]: WHY' line for each bad\n"
     "entry, then a summary line.\n"
     "\noptions:\n"
     "  --drop-bad    drop the bad entries (the next read of them is a miss)\n" HELP_JSON_OPT
     "                {\"inline\", \"chunks\", \"bytes\", \"bad\", \"dropped\", \"changed\",\n"
     "                \"seconds\", \"entries\": [{\"kind\", \"fh\", \"index\", \"reason\",\n"
     "                \"dropped\"}], \"entries_not_shown\"}\n" HELP_HELP_OPT
     "\nexit status: 0 nothing bad, 1 bad entries found (or the daemon refused), 2\n"
     "usage, 3 the daemon cannot be reached\n"},
    {"reload", cmd_reload, "[--json]", "re-read the configuration (as SIGHUP)",
     "Re-reads the configuration as SIGHUP does and prints what changed and what\n"
     "needs a restart. A bad file is refused with its FILE:LINE: message; the\n"
     "daemon keeps its configuration.\n"
     "\noptions:\n" HELP_JSON_OPT
     "                {\"ok\": true, \"changes\": [lines]}\n" HELP_HELP_OPT
     "\nexit status: 0 reloaded, 1 the new configuration was refused, 2 usage, 3\n"
     "the daemon cannot be reached\n"},
    {"top", cmd_top, "[-d SECS] [-n COUNT | --once] [--json]",
     "a live view: calls/s, hit ratio, MiB/s, round trip",
     "A live view of the daemon, refreshed every interval from two samples of\n"
     "its counters: calls/s (the busiest procedures with their average latency),\n"
     "the READ hit ratio, MiB/s from the cache, from the upstream and to\n"
     "clients, upstream calls/s and average round trip, clients connected and the\n"
     "cache's fill. On a terminal it redraws the screen; otherwise it prints one\n"
     "block per interval. Ctrl-C ends it.\n"
     "\noptions:\n"
     "  -d, --delay SECS   the interval (default 2)\n"
     "  -n, --count N      stop after N intervals (default: until interrupted)\n"
     "  --once             one interval (-n 1)\n"
     "  -j, --json         one JSON object per interval (JSON lines): time,\n"
     "                     interval_seconds, calls_per_second, procedures [{name,\n"
     "                     calls, calls_per_second, avg_ms}], read_hits,\n"
     "                     read_misses, read_passthrough, hit_ratio,\n"
     "                     bytes_from_cache, bytes_from_upstream, bytes_to_clients,\n"
     "                     cache_/upstream_/client_bytes_per_second, upstream_calls,\n"
     "                     upstream_rtt_ms, clients_connected, cache_bytes,\n"
     "                     cache_size, fs_bytes, fs_free_bytes, cache_fill_percent\n" HELP_HELP_OPT
         HELP_EXIT},
    {"check-index", cmd_check_index, "[--json] [PATH]", "check an index file without the daemon",
     "Without the daemon (stop cachefsd first): checks an index file as cachefsd\n"
     "does before it maps it: <cache_dir>/index/data.mdb, or PATH (a file, or a\n"
     "directory holding data.mdb, e.g. an index.corrupt-* kept aside). Prints\n"
     "'PATH: intact' or 'PATH: damaged (REASON): what'.\n"
     "\noptions:\n" HELP_JSON_OPT
     "                {\"path\", \"intact\", \"reason\", \"detail\"}\n" HELP_HELP_OPT
     "\nexit status: 0 intact, 1 damaged (or unreadable), 2 usage\n"},
    {"chown", cmd_chown, "[--json] USER[:GROUP] --cache-dir DIR",
     "give a stopped daemon's cache to another user",
     "Without the daemon (stop cachefsd first): gives the cache directory and what\n"
     "its owner made in it to USER (and GROUP, or USER's login group), so that a\n"
     "cachefsd running as USER uses it: what moves a cache made by root to the\n"
     "service user. Run as root. What someone else could have put there is left\n"
     "alone and named (a symbolic link, another user's entry, a file with more\n"
     "than one link, a directory others may write); cachefsd refuses or removes\n"
     "those as before. A directory that is not a cache, or that its group or\n"
     "others may write, is refused with nothing changed. Running it again is\n"
     "harmless.\n"
     "\noptions:\n"
     "  -d, --cache-dir DIR  the cache directory (as the global option)\n" HELP_JSON_OPT
     "                {\"cache_dir\", \"user\", \"uid\", \"gid\", \"changed\",\n"
     "                \"already\", \"left_alone\", \"entries_left_alone\": [{\"path\",\n"
     "                \"why\"}]}\n" HELP_HELP_OPT
     "\nexit status: 0 all given, 1 some entries left alone or the cache refused (in\n"
     "use, not a cache, not root), 2 usage\n"},
    {"warm", cmd_warm, "[OPTION...] PATH... | --resume | --status | --cancel",
     "read files through the proxy so they are cached",
     "Reads files or trees (relative to the export, or absolute under it; / is the\n"
     "whole export) through the proxy as an NFS client, so the proxy caches them.\n"
     "Progress is kept in a state file, so an interrupted warm can be resumed.\n"
     "\noptions:\n"
     "  --from FILE        paths to warm, one a line (- for stdin)\n"
     "  --server HOST --port N --export PATH\n"
     "                     the proxy (default: from the daemon)\n"
     "  --uid N --gid N    read as this user (default 0, 0)\n"
     "  --jobs N           files read in parallel (default 4, at most 32)\n"
     "  --max-rate RATE    bytes per second at most (e.g. 50M)\n"
     "  --state FILE       progress state (default <cache_dir>/warm.state)\n"
     "  --background       detach; follow with warm --status\n"
     "  --quiet            no progress line\n"
     "  --resume           go on with an interrupted warm\n"
     "  --status           progress of the last or running warm\n"
     "  --cancel           stop a background warm (resumable)\n"
     "  -j, --json         the progress (at the end, or with --status) as JSON:\n"
     "                     {\"state\", \"pid\", \"running\", \"files_total\",\n"
     "                     \"files_done\", \"files_failed\", \"files_skipped\",\n"
     "                     \"bytes_total\", \"bytes_done\", \"rate_bytes_per_second\",\n"
     "                     \"eta_seconds\", \"updated\", \"state_file\"}\n" HELP_HELP_OPT
     "\nexit status: 0 done, 1 some files could not be read (or no such warm), 2\n"
     "usage, 3 the proxy or the daemon cannot be reached, 130 interrupted\n"},
    {"help", cmd_help, "[COMMAND]", "this list, or one command's help",
     "Without COMMAND, the list of commands and the global options; with it, the\n"
     "command's help (as 'cachefsctl COMMAND --help').\n"
     "\nexit status: 0 ok, 2 unknown command\n"},
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void command_list(FILE *out)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
}

static void command_help(const struct command *c, FILE *out)
{
	fprintf(out,
	        "usage: cachefsctl [--socket=PATH | --cache-dir=DIR | --config=FILE] %s %s\n\n%s",
	        c->name, c->synopsis, c->help);
	fprintf(out,
	        "\nOptions take their value as --opt=VALUE or --opt VALUE. See cachefsctl(8).\n");
}

static int cmd_help(int argc, char **argv)
{
	static const struct option lo[] = {OPT_HELP, OPT_END};
	const struct command *c;

	while (next_opt("help", argc, argv, ":h", lo) != -1)
		;
	if (optind == argc) {
		usage(stdout);
		return 0;
	}
	if (argc - optind > 1)
		usage_error("help", "one COMMAND at most");
	c = find_command(argv[optind]);
	if (c == NULL) {
		fprintf(stderr, "%s: unknown command '%s'\ntry 'cachefsctl --help'\n", prog,
		        argv[optind]);
		return EXIT_USAGE;
	}
	command_help(c, stdout);
	return 0;
}

/* --- main ----------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"socket", required_argument, NULL, 's'}, {"cache-dir", required_argument, NULL, 'd'},
	    {"config", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},      OPT_END,
	};
	const struct command *cmd;
	int c;

	signal(SIGPIPE, SIG_IGN); /* a refused connection is read, not a signal */
	opterr = 0;
	/* '+': the options before the command are ours, the rest its */
	while ((c = next_opt(NULL, argc, argv, "+:s:d:c:hV", lo)) != -1) {
		switch (c) {
		case 's':
			if (optarg[0] == 0)
				usage_error(NULL, "--socket: an empty path");
			snprintf(sock_path, sizeof(sock_path), "%s", optarg);
			break;
		case 'd':
			cache_dir_opt = optarg;
			break;
		case 'c':
			config_opt = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("cachefsctl %s\n", CACHEFSD_VERSION);
			return 0;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	argc -= optind;
	argv += optind;
	cmd = find_command(argv[0]);
	if (cmd == NULL) {
		fprintf(stderr, "%s: unknown command '%s'\ntry 'cachefsctl --help'\n", prog,
		        argv[0]);
		return EXIT_USAGE;
	}
	/* the command's options: a fresh getopt over its words, which it may
	 * permute (cachefsctl invalidate a --json b) */
	optind = 0;
	if ((cmd->fn == cmd_warm || cmd->fn == cmd_check_index || cmd->fn == cmd_chown) &&
	    config_opt && sock_path[0] == 0 && cache_dir_opt == NULL)
		find_socket(config_opt); /* learns the cache_dir */
	return cmd->fn(argc, argv);
}
