/* Prometheus metrics over HTTP (metrics_listen): GET /metrics returns the
 * text exposition format (version 0.0.4). docs/operations.md explains each
 * metric.
 *
 * HTTP is libmicrohttpd's, run in its "external" mode with no thread of its
 * own: MHD's epoll descriptor is one more fd on our loop, and MHD_run()
 * runs on the loop thread when it is readable (and once a second for
 * connection timeouts). So a scrape renders the counters where they are
 * written, between two events: a consistent snapshot, without locks. The
 * epoll mode rather than MHD_get_fdset(): an fd_set cannot hold descriptors
 * above FD_SETSIZE (1024), and a proxy with many clients has them. */
#include "control.h"
#include "log.h"
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define METRICS_MAX_CONNS 16
#define METRICS_TIMEOUT_S 10

struct metrics {
	struct ops_env env;
	struct MHD_Daemon *mhd;
	int epfd;
	struct loop_timer *timer;
	int again; /* MHD has work without a new event */
};

/* --- rendering ------------------------------------------------------------ */

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(FILE *f, const char *name, uint64_t v)
{
	fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	family(f, name, "counter", help);
	sample(f, name, v);
}

static void gauge(FILE *f, const char *name, const char *help, uint64_t v)
{
	family(f, name, "gauge", help);
	sample(f, name, v);
}

/* Label values: backslash, double quote and newline are escaped. */
static void label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* Microseconds as seconds, without trailing zeros: 50 -> 0.00005. */
static void seconds(FILE *f, uint64_t us)
{
	char frac[8];
	int n;

	fprintf(f, "%llu", (unsigned long long)(us / 1000000));
	if (us % 1000000 == 0)
		return;
	snprintf(frac, sizeof(frac), "%06llu", (unsigned long long)(us % 1000000));
	for (n = 6; n > 0 && frac[n - 1] == '0'; n--)
		frac[n - 1] = 0;
	fprintf(f, ".%s", frac);
}

/* One histogram series: per-bucket counts, the sum in microseconds. */
static void histogram(FILE *f, const char *name, const char *proc, const uint64_t *b,
                      uint64_t sum_us)
{
	uint64_t cum = 0;

	for (int i = 0; i < CFS_LAT_NBUCKETS; i++) {
		cum += b[i];
		fprintf(f, "%s_bucket{proc=\"%s\",le=\"", name, proc);
		if (i == CFS_LAT_NBUCKETS - 1)
			fputs("+Inf", f);
		else
			seconds(f, cfs_lat_bound_us(i));
		fprintf(f, "\"} %llu\n", (unsigned long long)cum);
	}
	fprintf(f, "%s_sum{proc=\"%s\"} ", name, proc);
	seconds(f, sum_us);
	fprintf(f, "\n%s_count{proc=\"%s\"} %llu\n", name, proc, (unsigned long long)cum);
}

/* The histogram family of row id (proc_counters.def): the row is the sums,
 * b[p] the buckets of procedure p. */
static void histograms(FILE *f, const uint64_t (*b)[CFS_LAT_NBUCKETS],
                       const void *const bases[CFS_PSRC_N], enum cfs_proc_counter id)
{
	const struct cfs_proc_counter_desc *d = &cfs_proc_counter_descs[id];

	family(f, d->metric, "histogram", d->help);
	for (uint32_t p = d->first; p < d->nprocs; p++)
		histogram(f, d->metric, proto_proc_name(d->prog, p), b[p],
		          cfs_proc_counter_value(bases, d, p));
}

/* --- the process (/proc/self) --------------------------------------------- */

/* Open descriptors: the entries of /proc/self/fd, less the one reading it. */
static int count_fds(uint64_t *n)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (d == NULL)
		return -errno;
	*n = 0;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d))
			(*n)++;
	closedir(d);
	return 0;
}

/* The boot time in unix seconds (/proc/stat btime), 0 if unknown. */
static uint64_t boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	unsigned long long bt = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", &bt) == 1)
			break;
	fclose(f);
	return bt;
}

void ops_process_read(struct ops_process *p)
{
	struct rlimit rl;
	struct rusage ru;
	char buf[1024], *q;
	unsigned long long start = 0, vsize = 0;
	long long rss = 0;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	uint64_t bt;
	ssize_t n;
	int fd;

	memset(p, 0, sizeof(*p));
	if (count_fds(&p->open_fds) == 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		p->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
		p->have |= OPS_PROC_FDS;
	}
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		p->cpu_us = (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec +
		            (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec;
		p->have |= OPS_PROC_CPU;
	}
	/* "pid (comm) state ...": comm may hold spaces and parentheses, the
	 * fields are counted from its last ')'; starttime is field 22, vsize
	 * 23, rss 24 (proc(5)) */
	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	q = strrchr(buf, ')');
	if (q == NULL || sscanf(q + 1,
	                        " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
	                        "%*d %*d %*d %llu %llu %lld",
	                        &start, &vsize, &rss) != 3)
		return;
	p->virtual_bytes = vsize;
	p->resident_bytes = rss > 0 && page > 0 ? (uint64_t)rss * (uint64_t)page : 0;
	p->have |= OPS_PROC_STAT;
	bt = boot_time();
	if (bt && tck > 0) {
		p->start_ms = bt * 1000 + start * 1000 / (uint64_t)tck;
		p->have |= OPS_PROC_START;
	}
}

/* The standard process_* families, as the Prometheus client libraries name
 * and explain them, so that dashboards made for any exporter work. */
static void render_process(FILE *f)
{
	struct ops_process p;

	ops_process_read(&p);
	if (p.have & OPS_PROC_CPU) {
		family(f, "process_cpu_seconds_total", "counter",
		       "Total user and system CPU time spent in seconds.");
		fputs("process_cpu_seconds_total ", f);
		seconds(f, p.cpu_us);
		fputc('\n', f);
	}
	if (p.have & OPS_PROC_FDS) {
		gauge(f, "process_open_fds", "Number of open file descriptors.", p.open_fds);
		gauge(f, "process_max_fds", "Maximum number of open file descriptors.", p.max_fds);
	}
	if (p.have & OPS_PROC_STAT) {
		gauge(f, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
		      p.virtual_bytes);
		gauge(f, "process_resident_memory_bytes", "Resident memory size in bytes.",
		      p.resident_bytes);
	}
	if (p.have & OPS_PROC_START) {
		family(f, "process_start_time_seconds", "gauge",
		       "Start time of the process since unix epoch in seconds.");
		fprintf(f, "process_start_time_seconds %llu.%02llu\n",
		        (unsigned long long)(p.start_ms / 1000),
		        (unsigned long long)(p.start_ms % 1000 / 10));
	}
}

static void render(const struct ops_env *env, FILE *f)
{
	const struct engine_counters *c = engine_counters(env->engine);
	const struct upstream_counters *u = origin_counters(env->up);
	const struct cfs_config *cfg = env->cfg;
	uint64_t oc[ENGINE_NPROCS][ENGINE_NOUTCOMES];
	const void *const bases[CFS_PSRC_N] = {c, u, oc};
	struct store_stats ss;

	engine_outcomes(env->engine, oc);
	engine_cache_stats(env->engine, &ss);

	/* --- requests from clients --- */
	cfs_proc_counters_render(f, bases, CFS_PROC_NFS_HIT);
	cfs_proc_counters_render(f, bases, CFS_PROC_NFS_CALLS);
	cfs_proc_counters_render(f, bases, CFS_PROC_NFS_ERRORS);
	histograms(f, c->nfs_latency_hist, bases, CFS_PROC_NFS_LATENCY);
	cfs_proc_counters_render(f, bases, CFS_PROC_MOUNT_CALLS);
	gauge(f, "cachefsd_clients_connected", "Client TCP connections open.",
	      (uint64_t)proto_client_count(env->srv));
	cfs_counters_render(f, &proto_counters, proto_counter_descs, proto_counter_ndescs);
	counter(f, "cachefsd_log_lines_suppressed_total",
	        "Repeated log lines held back by the rate limit (each window ends in a summary "
	        "line with their count).",
	        log_limit_suppressed());

	/* --- the upstream --- */
	gauge(f, "cachefsd_upstream_up", "1 while at least one upstream connection is up.",
	      u->conns_up > 0);
	gauge(f, "cachefsd_upstream_version",
	      "NFS version spoken to the upstream: 3 or 4 (upstream_version).",
	      (uint64_t)origin_version(env->up));
	gauge(f, "cachefsd_upstream_connections", "Upstream connections configured.",
	      (uint64_t)u->conns_total);
	gauge(f, "cachefsd_upstream_connections_up", "Upstream connections up.",
	      (uint64_t)(u->conns_up > 0 ? u->conns_up : 0));
	cfs_counters_render(f, u, upstream_counter_descs, upstream_counter_ndescs);
	cfs_proc_counters_render(f, bases, CFS_PROC_UPSTREAM_CALLS);
	histograms(f, u->rtt_hist, bases, CFS_PROC_UPSTREAM_RTT);
	gauge(f, "cachefsd_upstream_waiting_calls", "Calls waiting for an upstream connection.",
	      (uint64_t)(u->waiting > 0 ? u->waiting : 0));
	gauge(f, "cachefsd_upstream_inflight_calls", "Calls sent upstream and not yet answered.",
	      (uint64_t)(u->inflight > 0 ? u->inflight : 0));

	/* --- the cache --- */
	cfs_counters_render(f, &ss, store_counter_descs, store_counter_ndescs);
	gauge(f, "cachefsd_cache_size_limit_bytes", "cache_size (0: no limit but the thresholds).",
	      cfg->cache_size);
	family(f, "cachefsd_cache_threshold_ratio", "gauge",
	       "Free-space thresholds: culling runs below cull until run; filling stops below "
	       "stop until run.");
	{
		const int th[2][3] = {{cfg->brun, cfg->bcull, cfg->bstop},
		                      {cfg->frun, cfg->fcull, cfg->fstop}};
		static const char *const res[2] = {"blocks", "files"};
		static const char *const lvl[3] = {"run", "cull", "stop"};
		for (int r = 0; r < 2; r++)
			for (int l = 0; l < 3; l++)
				fprintf(
				    f,
				    "cachefsd_cache_threshold_ratio{resource=\"%s\",level=\"%s\"} "
				    "%.2f\n",
				    res[r], lvl[l], th[r][l] / 100.0);
	}
	family(f, "cachefsd_fill_stopped_reason", "gauge",
	       "Why filling is stopped: 1 for the current reason (none while filling).");
	for (int r = 0; r < STORE_FILL_NREASONS; r++)
		fprintf(f, "cachefsd_fill_stopped_reason{reason=\"%s\"} %d\n",
		        store_fill_reason_name((enum store_fill_reason)r),
		        (int)ss.fill_reason == r);
	family(f, "cachefsd_fills_refused_total", "counter",
	       "Fills whose bytes the cache would not take, by why: a READ forwarded or a fill's "
	       "chunk not stored because filling is stopped (the reasons of "
	       "cachefsd_fill_stopped_reason; space also for a fill that alone would cross the "
	       "stop level), a data write or index put that failed, index_full (the LMDB map).");
	for (int r = STORE_FILL_ON + 1; r < STORE_REFUSED_N; r++)
		fprintf(f, "cachefsd_fills_refused_total{reason=\"%s\"} %llu\n",
		        store_refused_name(r), (unsigned long long)ss.fills_refused[r]);
	{
		const FSINFO3resok *fi = &origin_info(env->up)->fsinfo;
		struct engine_fill_state fs;

		engine_fill_state(env->engine, &fs);
		gauge(f, "cachefsd_upstream_read_max_bytes",
		      "The upstream's largest READ (FSINFO rtmax of the export root).", fi->rtmax);
		gauge(f, "cachefsd_upstream_write_max_bytes",
		      "The upstream's largest WRITE (FSINFO wtmax of the export root).", fi->wtmax);
		gauge(f, "cachefsd_fill_read_bytes",
		      "Bytes per READ a fill asks the upstream (rtmax, lower if the server answers "
		      "less).",
		      fs.read_size);
		gauge(f, "cachefsd_fill_reads_per_chunk",
		      "Upstream READs one full chunk fill takes.", fs.reads_per_chunk);
		family(
		    f, "cachefsd_fills_blocked", "gauge",
		    "1 while fills are paused because of what the upstream does (reason): "
		    "nothing is cached, READs pass through, fills are tried again every minute.");
		for (int b = ENGINE_FILL_NO_ATTRS; b <= ENGINE_FILL_BAD_READS; b++)
			fprintf(f, "cachefsd_fills_blocked{reason=\"%s\"} %d\n",
			        engine_fill_block_name(b), fs.blocked == b);
	}
	{
		struct engine_clock_state cl;

		engine_filer_clock(env->engine, &cl);
		gauge(f, "cachefsd_filer_clock_known",
		      "What is known of the filer's clock: 0 nothing, 1 a lower bound (the file "
		      "times it reports), 2 both bounds (changes made through the proxy).",
		      (uint64_t)cl.known);
		family(f, "cachefsd_filer_clock_offset_seconds", "gauge",
		       "The filer's clock minus this host's, as measured by changes made through "
		       "the proxy (0 until known: cachefsd_filer_clock_known).");
		fprintf(f, "cachefsd_filer_clock_offset_seconds %.3f\n", cl.offset_ms / 1000.0);
		family(f, "cachefsd_filer_clock_error_seconds", "gauge",
		       "Half the width of that measure (-1 until known).");
		fprintf(f, "cachefsd_filer_clock_error_seconds %.3f\n", cl.error_ms / 1000.0);
		family(f, "cachefsd_filer_time_granularity_seconds", "gauge",
		       "The tick of the filer's file times (1 while not known: "
		       "cachefsd_filer_time_granularity_known).");
		fprintf(f, "cachefsd_filer_time_granularity_seconds %.9f\n", cl.tick_ns / 1e9);
		gauge(f, "cachefsd_filer_time_granularity_known",
		      "1 once the tick of the filer's file times is known.",
		      (uint64_t)cl.tick_known);
	}
	family(f, "cachefsd_index_recoveries_total", "counter",
	       "Cache indexes found damaged at start, moved aside (index.corrupt-*) and replaced "
	       "by an empty one, by what was wrong.");
	for (int r = STORE_DMG_NONE + 1; r < STORE_DMG_N; r++)
		fprintf(f, "cachefsd_index_recoveries_total{reason=\"%s\"} %u\n",
		        store_damage_name(r), ss.index_recoveries[r]);
	cfs_counters_render(f, c, engine_counter_descs, engine_counter_ndescs);
	if (engine_store(env->engine)) {
		gauge(f, "cachefsd_meta_records", "Records in the metadata cache.",
		      store_meta_count(engine_store(env->engine)));
		gauge(f, "cachefsd_fhmap_records",
		      "Upstream handles over 64 bytes mapped to 64-byte client handles in the index "
		      "(kept for good).",
		      store_fh_count(engine_store(env->engine)));
	}
	gauge(f, "cachefsd_meta_ttl_seconds", "meta_ttl (0: strict mode).",
	      (uint64_t)cfg->meta_ttl);
	gauge(f, "cachefsd_memory_cache_bytes", "Verified chunks kept in memory.",
	      engine_memory_used(env->engine));
	gauge(f, "cachefsd_memory_cache_limit_bytes", "memory_cache.", cfg->memory_cache);

	/* --- the operator interfaces --- */
	cfs_counters_render(f, &control_counters, control_counter_descs, control_counter_ndescs);
	family(f, "cachefsd_info", "gauge", "The daemon: version, export served, upstream.");
	fprintf(f, "cachefsd_info{version=\"");
	label_value(f, env->version);
	fprintf(f, "\",export=\"");
	label_value(f, engine_export_path(env->engine));
	fprintf(f, "\",upstream=\"");
	label_value(f, cfg->upstream);
	fprintf(f, "\"} 1\n");
	gauge(f, "cachefsd_start_time_seconds", "When the daemon started (unix time).",
	      (uint64_t)env->started);
	render_process(f);
}

char *metrics_render(const struct ops_env *env, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (f == NULL)
		return NULL;
	engine_refresh_gauges(env->engine);
	render(env, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* --- HTTP ----------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result rc;

	if (r == NULL) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **req_cls)
{
	struct metrics *m = cls;
	static const char index[] = "cachefsd: metrics at /metrics\n";
	static const char notfound[] = "not found: metrics are at /metrics\n";
	static const char notallowed[] = "only GET and HEAD\n";

	(void)version;
	(void)upload;
	(void)req_cls;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		*upload_size = 0; /* a body is not wanted */
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", (char *)notallowed,
		             sizeof(notallowed) - 1, MHD_RESPMEM_PERSISTENT);
	}
	if (strcmp(url, "/metrics") == 0) {
		size_t len = 0;
		char *body = metrics_render(&m->env, &len);

		if (body == NULL)
			return MHD_NO;
		control_counters.metrics_scrapes++;
		return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body,
		             len, MHD_RESPMEM_MUST_FREE);
	}
	if (strcmp(url, "/") == 0)
		return reply(conn, MHD_HTTP_OK, "text/plain", (char *)index, sizeof(index) - 1,
		             MHD_RESPMEM_PERSISTENT);
	return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", (char *)notfound, sizeof(notfound) - 1,
	             MHD_RESPMEM_PERSISTENT);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];

	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	log_debug("metrics: %s", buf);
}

static void run(struct metrics *m)
{
	MHD_UNSIGNED_LONG_LONG to;

	MHD_run(m->mhd);
	m->again = MHD_get_timeout(m->mhd, &to) == MHD_YES && to == 0;
	if (m->again)
		loop_pending(m->env.loop);
}

static void mhd_io(struct loop *l, int fd, int revents, void *arg)
{
	(void)l;
	(void)fd;
	(void)revents;
	run(arg);
}

static void mhd_tick(struct loop *l, void *arg)
{
	(void)l;
	run(arg);
}

static void mhd_hook(struct loop *l, void *arg)
{
	struct metrics *m = arg;

	(void)l;
	if (m->again)
		run(m);
}

/* "ADDR:PORT" or "[V6ADDR]:PORT" -> a listening, non-blocking socket. */
static int listen_on(const char *spec, int *v6, char *err, size_t errlen)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	struct addrinfo hints, *ai = NULL;
	size_t hl;
	int fd, one = 1, rc;

	if (colon == NULL || (hl = (size_t)(colon - spec)) == 0 || hl >= sizeof(host)) {
		snprintf(err, errlen, "key 'metrics_listen': '%s' is not ADDR:PORT", spec);
		return -EINVAL;
	}
	memcpy(host, spec, hl);
	host[hl] = 0;
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	rc = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rc != 0 || ai == NULL) {
		snprintf(err, errlen, "key 'metrics_listen': cannot use '%s': %s", spec,
		         gai_strerror(rc));
		return -EINVAL;
	}
	*v6 = ai->ai_family == AF_INET6;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0) {
		rc = -errno;
		snprintf(err, errlen, "key 'metrics_listen': cannot listen on %s: %s", spec,
		         strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return rc;
	}
	freeaddrinfo(ai);
	return fd;
}

int metrics_start(const struct ops_env *env, struct metrics **out, char *err, size_t errlen)
{
	const char *spec = env->cfg->metrics_listen;
	const union MHD_DaemonInfo *info;
	struct metrics *m;
	int fd, v6 = 0, rc;

	*out = NULL;
	if (spec == NULL || strcmp(spec, "off") == 0)
		return 0;
	fd = listen_on(spec, &v6, err, errlen);
	if (fd < 0)
		return fd;
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		close(fd);
		return -ENOMEM;
	}
	m->env = *env;
	m->epfd = -1;
	m->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0), 0,
	                          NULL, NULL, handler, m, MHD_OPTION_LISTEN_SOCKET, fd,
	                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_MAX_CONNS,
	                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_TIMEOUT_S,
	                          MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	if (m->mhd == NULL) {
		close(fd);
		free(m);
		snprintf(err, errlen, "key 'metrics_listen': cannot serve HTTP on %s", spec);
		return -EIO;
	}
	info = MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	m->epfd = info ? info->epoll_fd : -1;
	rc = m->epfd >= 0 ? loop_add(env->loop, m->epfd, POLLIN, mhd_io, m) : -EIO;
	if (rc == 0)
		rc = loop_before_sleep(env->loop, mhd_hook, m);
	if (rc == 0) {
		m->timer = loop_timer_add(env->loop, 1000, 1000, mhd_tick, m);
		if (m->timer == NULL)
			rc = -ENOMEM;
	}
	if (rc != 0) {
		snprintf(err, errlen, "metrics listener: %s", strerror(-rc));
		metrics_stop(m);
		return rc;
	}
	log_info("metrics on http://%s/metrics", spec);
	*out = m;
	return 0;
}

void metrics_stop(struct metrics *m)
{
	if (m == NULL)
		return;
	if (m->timer)
		loop_timer_cancel(m->env.loop, m->timer);
	loop_before_sleep_del(m->env.loop, mhd_hook, m);
	if (m->epfd >= 0)
		loop_del(m->env.loop, m->epfd);
	MHD_stop_daemon(m->mhd); /* closes its sockets, the listener too */
	free(m);
}
