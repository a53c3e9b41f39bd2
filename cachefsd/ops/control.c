/* The control socket: cachefsctl's way into the running daemon. The
 * protocol and the commands are in include/control.h.
 *
 * A Unix stream socket served on the event loop like every other socket:
 * connections are read and written without blocking, one request at a time
 * each. Quick commands (stats, info, config, invalidate --fh, reload) are
 * answered at once. The others are jobs: invalidate PATH waits for LOOKUPs
 * upstream; cull, verify and invalidate --all advance a bounded step per
 * loop pass (a before-sleep hook), so the proxy keeps serving while they
 * run; verify's chunk reads go to the disk workers.
 *
 * A job belongs to the control server, not to its client: when the client
 * disconnects, verify and cull stop at their next step, invalidations
 * finish without output. A job still waiting for the upstream
 * or a worker when the server stops is detached and frees itself when that
 * callback comes (upstream_stop() and workers_stop() guarantee it does). */
#include "control.h"
#include "log.h"
#include "store.h"
#include "workers.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS          16
#define MAX_ARGS           16
#define CULL_STEP          256  /* evictions per loop pass */
#define INVAL_STEP         512  /* objects invalidated per loop pass */
#define VERIFY_INFLIGHT    4    /* chunk checks queued to the workers */
#define VERIFY_STEP        256  /* items looked at per loop pass */
#define VERIFY_MAX_REPORTS 1000 /* "bad" lines; the summary counts them all */
#define OUT_MAX            (16u << 20)

struct control_counters control_counters;

struct ctl_conn;

enum job_kind { JOB_LOOKUP, JOB_CULL, JOB_VERIFY, JOB_INVAL_ALL };

struct ctl_job {
	enum job_kind kind;
	struct control *ctl;   /* NULL: the server stopped */
	struct ctl_conn *conn; /* NULL: the client went away */
	int busy;              /* upstream calls or worker checks outstanding */
	int finished;          /* the final line was sent */
	struct ctl_job *next;
	uint64_t t0_ms;
	/* invalidate PATH */
	char *path;   /* as given, for messages */
	char **comps; /* components still to look up */
	int ncomps, comp;
	uint8_t dir[NFS3_FHSIZE], obj[NFS3_FHSIZE];
	uint32_t dirlen, objlen;
	LOOKUP3args largs;
	struct cfs_cred cred;
	/* cull */
	int cull_to; /* percent, or -1: the configured limits */
	uint64_t target;
	uint64_t evicted, ev0, evb0;
	/* verify */
	int drop_bad;
	struct store_walk walk;
	int walk_done;
	uint64_t v_inline, v_chunks, v_bytes, v_bad, v_dropped, v_changed, v_reported;
	/* invalidate --all */
	uint8_t last_fh[STORE_FH_MAX];
	uint32_t last_fhlen;
	uint64_t invalidated;
};

struct ctl_conn {
	struct control *ctl;
	int fd;
	char in[CONTROL_LINE_MAX + 1];
	size_t inlen;
	char *out;
	size_t outlen, outoff, outcap;
	struct ctl_job *job; /* the request in progress */
	int closing;         /* close once the output is written */
	struct ctl_conn *next;
};

struct control {
	struct ops_env env;
	int fd;
	char *path;
	dev_t dev;
	ino_t ino;
	struct ctl_conn *conns;
	int nconns;
	struct ctl_job *jobs;
	int test_hooks; /* CACHEFSD_TEST_HOOKS=1: test-stall is accepted */
};

static void conn_close(struct ctl_conn *c);
static void conn_kick(struct ctl_conn *c);
static void conn_process(struct ctl_conn *c);
static void conn_watch(struct ctl_conn *c);

const struct cfs_counter_desc proto_counter_descs[] = {
#define PROTO_COUNTER(field, stat, sec, type, metric, label, help)                                 \
	{stat,                                                                                     \
	 offsetof(struct proto_counters, field),                                                   \
	 PROTO_SEC_##sec,                                                                          \
	 CFS_CTR_##type,                                                                           \
	 metric,                                                                                   \
	 label,                                                                                    \
	 help},
#include "proto_counters.def"
#undef PROTO_COUNTER
};
const size_t proto_counter_ndescs = sizeof(proto_counter_descs) / sizeof(proto_counter_descs[0]);

const struct cfs_counter_desc control_counter_descs[] = {
#define CONTROL_COUNTER(field, stat, type, metric, label, help)                                    \
	{stat, offsetof(struct control_counters, field), 0, CFS_CTR_##type, metric, label, help},
#include "control_counters.def"
#undef CONTROL_COUNTER
};
const size_t control_counter_ndescs =
    sizeof(control_counter_descs) / sizeof(control_counter_descs[0]);

/* --- stats ---------------------------------------------------------------- */

void ops_write_stats(const struct ops_env *env, FILE *out)
{
	engine_refresh_gauges(env->engine);
	engine_write_stats(env->engine, out);
#define KV(name, v) fprintf(out, "%s %llu\n", name, (unsigned long long)(v))
	KV("clients_connected", (uint64_t)proto_client_count(env->srv));
	cfs_counters_write_stats(out, &proto_counters, proto_counter_descs, proto_counter_ndescs,
	                         PROTO_SEC_CALLS);
	KV("log_lines_suppressed", log_limit_suppressed());
	cfs_counters_write_stats(out, &proto_counters, proto_counter_descs, proto_counter_ndescs,
	                         PROTO_SEC_BYTES);
	cfs_counters_write_stats(out, &control_counters, control_counter_descs,
	                         control_counter_ndescs, 0);
	{
		/* the process_* metrics (a line only for what could be read) */
		struct ops_process p;

		ops_process_read(&p);
		if (p.have & OPS_PROC_FDS) {
			KV("process_open_fds", p.open_fds);
			KV("process_max_fds", p.max_fds);
		}
		if (p.have & OPS_PROC_STAT) {
			KV("process_resident_memory_bytes", p.resident_bytes);
			KV("process_virtual_memory_bytes", p.virtual_bytes);
		}
		if (p.have & OPS_PROC_CPU)
			KV("process_cpu_us", p.cpu_us);
		if (p.have & OPS_PROC_START)
			KV("process_start_time_ms", p.start_ms);
	}
#undef KV
}

/* --- output --------------------------------------------------------------- */

static int out_reserve(struct ctl_conn *c, size_t n)
{
	if (c->outlen + n <= c->outcap)
		return 0;
	if (c->outoff > 0) {
		memmove(c->out, c->out + c->outoff, c->outlen - c->outoff);
		c->outlen -= c->outoff;
		c->outoff = 0;
		if (c->outlen + n <= c->outcap)
			return 0;
	}
	if (c->outlen + n > OUT_MAX)
		return -ENOSPC;
	size_t cap = c->outcap ? c->outcap : 4096;
	while (cap < c->outlen + n)
		cap *= 2;
	char *p = realloc(c->out, cap);
	if (p == NULL)
		return -ENOMEM;
	c->out = p;
	c->outcap = cap;
	return 0;
}

static void out_raw(struct ctl_conn *c, const char *s, size_t n)
{
	if (c == NULL || out_reserve(c, n) != 0)
		return;
	memcpy(c->out + c->outlen, s, n);
	c->outlen += n;
}

/* One data line (without '\n'), dot-stuffed. */
static void out_line(struct ctl_conn *c, const char *s, size_t n)
{
	if (c == NULL)
		return;
	if (n > 0 && s[0] == '.')
		out_raw(c, ".", 1);
	out_raw(c, s, n);
	out_raw(c, "\n", 1);
}

static void out_printf(struct ctl_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void out_printf(struct ctl_conn *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	if (c == NULL)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	out_line(c, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Data lines from a memory stream (stats, config). */
static void out_text(struct ctl_conn *c, const char *text, size_t len)
{
	while (len > 0) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) : len;

		out_line(c, text, n);
		text += n + (nl ? 1 : 0);
		len -= n + (nl ? 1 : 0);
	}
}

static void out_end(struct ctl_conn *c, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void out_end(struct ctl_conn *c, int ok, const char *fmt, ...)
{
	char buf[1200];
	va_list ap;

	if (c == NULL)
		return;
	if (ok) {
		out_raw(c, ".ok\n", 4);
	} else {
		va_start(ap, fmt);
		vsnprintf(buf, sizeof(buf), fmt, ap);
		va_end(ap);
		for (char *p = buf; *p; p++)
			if (*p == '\n')
				*p = ' ';
		out_raw(c, ".error ", 7);
		out_raw(c, buf, strlen(buf));
		out_raw(c, "\n", 1);
	}
	control_counters.requests++;
	conn_kick(c);
}

static void hex_of(char *out, const uint8_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = 0;
}

static int hex_parse(const char *s, uint8_t *out, uint32_t max, uint32_t *len)
{
	size_t n = strlen(s);

	if (n == 0 || n % 2 || n / 2 > max)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = isxdigit((unsigned char)s[2 * i]),
		    lo = isxdigit((unsigned char)s[2 * i + 1]);
		unsigned v;

		if (!hi || !lo || sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (uint8_t)v;
	}
	*len = (uint32_t)(n / 2);
	return 0;
}

/* --- jobs ----------------------------------------------------------------- */

static struct ctl_job *job_new(struct control *ctl, struct ctl_conn *c, enum job_kind kind)
{
	struct ctl_job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->kind = kind;
	j->ctl = ctl;
	j->conn = c;
	j->t0_ms = loop_now(ctl->env.loop);
	j->next = ctl->jobs;
	ctl->jobs = j;
	c->job = j;
	return j;
}

static void job_free(struct ctl_job *j)
{
	if (j->comps) {
		for (int i = 0; i < j->ncomps; i++)
			free(j->comps[i]);
		free(j->comps);
	}
	free(j->path);
	free(j);
}

/* Unlinks j from its server (if any) and frees it. */
static void job_remove(struct ctl_job *j)
{
	if (j->ctl) {
		for (struct ctl_job **pp = &j->ctl->jobs; *pp; pp = &(*pp)->next) {
			if (*pp == j) {
				*pp = j->next;
				break;
			}
		}
	}
	if (j->conn && j->conn->job == j)
		j->conn->job = NULL;
	job_free(j);
}

/* The job answered its client: the connection takes its next request. A
 * job with callbacks outstanding is freed by the last of them. */
static void job_finish(struct ctl_job *j)
{
	struct ctl_conn *c = j->conn;

	j->finished = 1;
	if (c) {
		c->job = NULL;
		j->conn = NULL;
		conn_kick(c); /* the next buffered request, if any */
	}
	if (j->busy == 0)
		job_remove(j);
}

/* A callback came back: 1 when the job was detached meanwhile (and has
 * now been freed if nothing else is outstanding): touch nothing else. */
static int job_back(struct ctl_job *j)
{
	j->busy--;
	if (j->ctl == NULL || j->finished) {
		if (j->busy == 0)
			job_remove(j);
		return 1;
	}
	return 0;
}

/* --- invalidate ----------------------------------------------------------- */

static void inval_fh(struct ctl_conn *c, const char *hex)
{
	uint8_t fh[NFS3_FHSIZE];
	uint32_t len;
	char shown[2 * NFS3_FHSIZE + 1];

	if (hex_parse(hex, fh, NFS3_FHSIZE, &len) != 0) {
		out_end(c, 0, "invalidate --fh: '%s' is not a file handle (1..%d bytes in hex)",
		        hex, NFS3_FHSIZE);
		return;
	}
	engine_invalidate_fh(c->ctl->env.engine, fh, len);
	hex_of(shown, fh, len);
	log_info("control: invalidated handle %s", shown);
	out_printf(c, "invalidated handle %s", shown);
	out_end(c, 1, NULL);
}

static void lookup_next(struct ctl_job *j);

static void lookup_done(int status, void *res, void *priv)
{
	struct ctl_job *j = priv;
	struct engine *e;
	LOOKUP3res *r = res;
	char hex[2 * NFS3_FHSIZE + 1];

	if (job_back(j))
		return;
	e = j->ctl->env.engine;
	if (status != 0) {
		out_end(j->conn, 0, "invalidate %s: the upstream did not answer a LOOKUP: %s",
		        j->path, upstream_strerror(status));
		job_finish(j);
		return;
	}
	if (r->status != NFS3_OK) {
		/* a name that is gone: what the cache knows of its directory
		 * (lookups, listings) still goes */
		engine_invalidate_fh(e, j->dir, j->dirlen);
		hex_of(hex, j->dir, j->dirlen);
		if (r->status == NFS3ERR_NOENT && j->comp == j->ncomps - 1) {
			log_info("control: invalidated %s (no longer upstream: its directory %s)",
			         j->path, hex);
			out_printf(j->conn,
			           "%s: no such file upstream; invalidated its directory "
			           "(handle %s)",
			           j->path, hex);
			out_end(j->conn, 1, NULL);
		} else {
			out_end(j->conn, 0, "invalidate %s: LOOKUP of '%s' failed upstream: %s",
			        j->path, j->comps[j->comp],
			        r->status == NFS3ERR_NOENT    ? "no such file or directory"
			        : r->status == NFS3ERR_ACCES  ? "permission denied (as root)"
			        : r->status == NFS3ERR_NOTDIR ? "not a directory"
			                                      : "NFS error");
		}
		job_finish(j);
		return;
	}
	{
		const nfs_fh3 *o = &r->LOOKUP3res_u.resok.object;
		if (o->data.data_len == 0 || o->data.data_len > NFS3_FHSIZE) {
			out_end(j->conn, 0, "invalidate %s: bad handle from the upstream", j->path);
			job_finish(j);
			return;
		}
		memcpy(j->obj, o->data.data_val, o->data.data_len);
		j->objlen = o->data.data_len;
	}
	j->comp++;
	if (j->comp < j->ncomps) {
		memcpy(j->dir, j->obj, j->objlen);
		j->dirlen = j->objlen;
		lookup_next(j);
		return;
	}
	engine_invalidate_fh(e, j->obj, j->objlen);
	engine_invalidate_fh(e, j->dir, j->dirlen); /* its name and listing */
	hex_of(hex, j->obj, j->objlen);
	log_info("control: invalidated %s (handle %s)", j->path, hex);
	out_printf(j->conn, "invalidated %s (handle %s)", j->path, hex);
	out_end(j->conn, 1, NULL);
	job_finish(j);
}

static void lookup_next(struct ctl_job *j)
{
	int rc;

	memset(&j->largs, 0, sizeof(j->largs));
	j->largs.what.dir.data.data_len = j->dirlen;
	j->largs.what.dir.data.data_val = (char *)j->dir;
	j->largs.what.name = j->comps[j->comp];
	j->busy++;
	rc = origin_call(j->ctl->env.up, NFS3_LOOKUP, &j->largs, &j->cred, lookup_done, j);
	if (rc != 0) {
		j->busy--;
		out_end(j->conn, 0, "invalidate %s: cannot ask the upstream: %s", j->path,
		        strerror(-rc));
		job_finish(j);
	}
}

/* PATH relative to the export, or absolute under the export clients mount
 * or under the upstream's own path. */
static void inval_path(struct ctl_conn *c, const char *path)
{
	const struct upstream_info *ui = origin_info(c->ctl->env.up);
	const char *exp = engine_export_path(c->ctl->env.engine);
	const char *rel = path;
	struct ctl_job *j;
	char *copy, *save = NULL;

	if (path[0] == '/') {
		const char *bases[2] = {exp, ui->url.path};
		rel = NULL;
		for (int i = 0; i < 2 && rel == NULL; i++) {
			size_t bl = strlen(bases[i]);
			if (strcmp(bases[i], "/") == 0)
				rel = path + 1;
			else if (strncmp(path, bases[i], bl) == 0 &&
			         (path[bl] == '/' || path[bl] == 0))
				rel = path + bl;
		}
		if (rel == NULL) {
			out_end(c, 0,
			        "invalidate %s: not under the export %s (give the path "
			        "relative to the export)",
			        path, exp);
			return;
		}
	}
	j = job_new(c->ctl, c, JOB_LOOKUP);
	if (j == NULL || (j->path = strdup(path)) == NULL ||
	    (j->comps = calloc(strlen(rel) / 2 + 2, sizeof(char *))) == NULL ||
	    (copy = strdup(rel)) == NULL) {
		out_end(c, 0, "out of memory");
		if (j)
			job_finish(j);
		return;
	}
	for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		if (strcmp(t, ".") == 0)
			continue;
		if (strcmp(t, "..") == 0 || strlen(t) > 255) {
			free(copy);
			out_end(c, 0,
			        "invalidate %s: '..' and names over 255 bytes are not "
			        "allowed",
			        path);
			job_finish(j);
			return;
		}
		j->comps[j->ncomps] = strdup(t);
		if (j->comps[j->ncomps] == NULL)
			break;
		j->ncomps++;
	}
	free(copy);
	if (ui->root_fh_len == 0 || ui->root_fh_len > NFS3_FHSIZE) {
		out_end(c, 0, "invalidate %s: the export's root handle is unknown", path);
		job_finish(j);
		return;
	}
	memcpy(j->dir, ui->root_fh, ui->root_fh_len);
	j->dirlen = ui->root_fh_len;
	if (j->ncomps == 0) {
		/* the export's root directory itself */
		engine_invalidate_fh(c->ctl->env.engine, j->dir, j->dirlen);
		out_printf(c, "invalidated the export's root directory");
		out_end(c, 1, NULL);
		job_finish(j);
		return;
	}
	j->cred.flavor = 1; /* AUTH_UNIX, uid 0 */
	snprintf(j->cred.machine, sizeof(j->cred.machine), "cachefsd");
	lookup_next(j);
}

static void inval_all_step(struct ctl_job *j)
{
	struct engine *e = j->ctl->env.engine;
	struct store *s = engine_store(e);

	for (int i = 0; i < INVAL_STEP; i++) {
		int rc = s ? store_next_object(s, j->last_fh, &j->last_fhlen) : -EIO;

		if (rc == -ENOENT) {
			engine_invalidate_meta(e);
			log_info("control: invalidated everything (%llu objects and the metadata "
			         "cache)",
			         (unsigned long long)j->invalidated);
			out_printf(j->conn, "invalidated %llu objects and the metadata cache",
			           (unsigned long long)j->invalidated);
			out_end(j->conn, 1, NULL);
			job_finish(j);
			return;
		}
		if (rc) {
			out_end(j->conn, 0, "invalidate --all: cannot walk the index: %s",
			        strerror(-rc));
			job_finish(j);
			return;
		}
		engine_invalidate_fh(e, j->last_fh, j->last_fhlen);
		j->invalidated++;
	}
	loop_pending(j->ctl->env.loop);
}

/* --- cull ----------------------------------------------------------------- */

static void cull_step(struct ctl_job *j)
{
	struct store *s = engine_store(j->ctl->env.engine);
	struct store_stats ss;
	int n;

	if (s == NULL) {
		out_end(j->conn, 0, "cull: the cache is closing");
		job_finish(j);
		return;
	}
	if (j->cull_to >= 0)
		n = store_cull_to(s, j->target, CULL_STEP);
	else
		n = store_cull_step(s, CULL_STEP);
	if (n < 0) {
		out_end(j->conn, 0, "cull: %s", strerror(-n));
		job_finish(j);
		return;
	}
	j->evicted += (uint64_t)n;
	control_counters.culled += (uint64_t)n;
	engine_cache_stats(j->ctl->env.engine, &ss);
	if (n > 0 && (j->cull_to < 0 || ss.bytes > j->target)) {
		loop_pending(j->ctl->env.loop);
		return;
	}
	log_info("control: culled %llu objects (%llu bytes); %llu bytes in %llu objects cached",
	         (unsigned long long)(ss.evictions - j->ev0),
	         (unsigned long long)(ss.evicted_bytes - j->evb0), (unsigned long long)ss.bytes,
	         (unsigned long long)ss.objects);
	out_printf(j->conn, "evicted %llu objects (%llu bytes)",
	           (unsigned long long)(ss.evictions - j->ev0),
	           (unsigned long long)(ss.evicted_bytes - j->evb0));
	out_printf(j->conn, "cached %llu bytes in %llu objects", (unsigned long long)ss.bytes,
	           (unsigned long long)ss.objects);
	if (j->cull_to >= 0 && ss.bytes > j->target)
		out_printf(j->conn, "note: nothing more to evict above the target of %llu bytes",
		           (unsigned long long)j->target);
	out_end(j->conn, 1, NULL);
	job_finish(j);
}

static void cull_start(struct ctl_conn *c, int argc, char **argv)
{
	struct store_stats ss;
	struct ctl_job *j;
	int to = -1;

	if (argc == 3 && strcmp(argv[1], "--to") == 0) {
		char *end;
		long v = strtol(argv[2], &end, 10);
		if (*argv[2] == 0 || (*end && strcmp(end, "%") != 0) || v < 0 || v > 100) {
			out_end(c, 0, "cull --to: '%s' is not a percentage (0..100)", argv[2]);
			return;
		}
		to = (int)v;
	} else if (argc != 1) {
		out_end(c, 0, "usage: cull [--to PERCENT]");
		return;
	}
	j = job_new(c->ctl, c, JOB_CULL);
	if (j == NULL) {
		out_end(c, 0, "out of memory");
		return;
	}
	engine_cache_stats(c->ctl->env.engine, &ss);
	j->cull_to = to;
	j->ev0 = ss.evictions;
	j->evb0 = ss.evicted_bytes;
	if (to >= 0) {
		uint64_t base =
		    c->ctl->env.cfg->cache_size ? c->ctl->env.cfg->cache_size : ss.bytes;
		j->target = base / 100 * (uint64_t)to + base % 100 * (uint64_t)to / 100;
		out_printf(c, "target %llu bytes (%d%% of %s %llu bytes)",
		           (unsigned long long)j->target, to,
		           c->ctl->env.cfg->cache_size ? "cache_size" : "the cached",
		           (unsigned long long)base);
	}
	loop_pending(c->ctl->env.loop);
}

/* --- verify --------------------------------------------------------------- */

struct vcheck {
	struct ctl_job *job;
	struct store *store;
	struct store_vitem it;
	int rc;
};

static const char *vkind_name(enum store_vkind k)
{
	switch (k) {
	case STORE_V_INLINE:
		return "inline";
	case STORE_V_CHUNK:
		return "chunk";
	case STORE_V_BAD_RECORD:
		return "record";
	case STORE_V_ORPHAN:
		return "orphan-chunk";
	case STORE_V_BAD_ENTRY:
		return "chunk-entry";
	}
	return "?";
}

static void verify_bad(struct ctl_job *j, const struct store_vitem *it, const char *why)
{
	char hex[2 * STORE_FH_MAX + 1];
	struct store *s = engine_store(j->ctl->env.engine);
	int dropped = 0;

	j->v_bad++;
	control_counters.verify_bad++;
	if (j->drop_bad && s && store_verify_drop(s, it) == 0) {
		j->v_dropped++;
		control_counters.verify_dropped++;
		dropped = 1;
	}
	hex_of(hex, it->fh, it->fhlen);
	if (it->kind == STORE_V_CHUNK)
		log_warn("verify: chunk %u of handle %s: %s%s", it->idx, hex, why,
		         dropped ? " (dropped)" : "");
	else
		log_warn("verify: %s of handle %s: %s%s", vkind_name(it->kind), hex, why,
		         dropped ? " (dropped)" : "");
	if (j->v_reported++ >= VERIFY_MAX_REPORTS)
		return;
	if (it->kind == STORE_V_CHUNK || it->kind == STORE_V_ORPHAN ||
	    it->kind == STORE_V_BAD_ENTRY)
		out_printf(j->conn, "bad %s fh %s index %u: %s%s", vkind_name(it->kind), hex,
		           it->idx, why, dropped ? " (dropped)" : "");
	else
		out_printf(j->conn, "bad %s fh %s: %s%s", vkind_name(it->kind), hex, why,
		           dropped ? " (dropped)" : "");
}

static void vcheck_work(void *arg)
{
	struct vcheck *v = arg;

	v->rc = store_verify_chunk(v->store, &v->it);
}

static void vcheck_done(void *arg)
{
	struct vcheck *v = arg;
	struct ctl_job *j = v->job;
	struct store *s;

	if (job_back(j)) {
		free(v);
		return;
	}
	s = engine_store(j->ctl->env.engine);
	j->v_chunks++;
	j->v_bytes += v->it.len;
	if (v->rc != 0) {
		if (s == NULL || !store_verify_current(s, &v->it))
			j->v_changed++; /* evicted or refilled while it was read */
		else
			verify_bad(j, &v->it,
			           v->rc == -EBADMSG  ? "checksum mismatch"
			           : v->rc == -ENOENT ? "data file missing"
			           : v->rc == -EIO    ? "data file too short"
			                              : strerror(-v->rc));
	}
	free(v);
	loop_pending(j->ctl->env.loop);
}

static void verify_step(struct ctl_job *j)
{
	struct store *s = engine_store(j->ctl->env.engine);
	struct workers *w = engine_workers(j->ctl->env.engine);
	struct store_vitem it;

	if (s == NULL || w == NULL) {
		out_end(j->conn, 0, "verify: the cache is closing");
		job_finish(j);
		return;
	}
	for (int n = 0; !j->walk_done && n < VERIFY_STEP && j->busy < VERIFY_INFLIGHT; n++) {
		int rc = store_verify_next(s, &j->walk, &it);

		if (rc == -EAGAIN) {
			loop_pending(j->ctl->env.loop);
			return;
		}
		if (rc == -ENOENT) {
			j->walk_done = 1;
			break;
		}
		if (rc) {
			out_end(j->conn, 0, "verify: cannot read the index: %s", strerror(-rc));
			job_finish(j);
			return;
		}
		switch (it.kind) {
		case STORE_V_INLINE:
			j->v_inline++;
			j->v_bytes += it.len;
			if (!it.ok)
				verify_bad(j, &it, "checksum mismatch");
			break;
		case STORE_V_CHUNK: {
			struct vcheck *v = malloc(sizeof(*v));
			if (v == NULL) {
				out_end(j->conn, 0, "verify: out of memory");
				job_finish(j);
				return;
			}
			v->job = j;
			v->store = s;
			v->it = it;
			v->rc = 0;
			j->busy++;
			if (workers_submit(w, vcheck_work, vcheck_done, v) != 0) {
				j->busy--;
				free(v);
				out_end(j->conn, 0, "verify: out of memory");
				job_finish(j);
				return;
			}
			break;
		}
		case STORE_V_BAD_RECORD:
			verify_bad(j, &it, "the record does not decode");
			break;
		case STORE_V_ORPHAN:
			verify_bad(j, &it, "no chunked object owns it");
			break;
		case STORE_V_BAD_ENTRY:
			verify_bad(j, &it, "malformed entry");
			break;
		}
	}
	if (!j->walk_done) {
		if (j->busy < VERIFY_INFLIGHT)
			loop_pending(j->ctl->env.loop);
		return; /* worker completions bring us back */
	}
	if (j->busy > 0)
		return;
	if (j->v_reported > VERIFY_MAX_REPORTS)
		out_printf(j->conn, "... %llu more bad entries (see the log)",
		           (unsigned long long)(j->v_reported - VERIFY_MAX_REPORTS));
	out_printf(j->conn,
	           "summary inline %llu chunks %llu bytes %llu bad %llu dropped %llu changed %llu "
	           "seconds %.1f",
	           (unsigned long long)j->v_inline, (unsigned long long)j->v_chunks,
	           (unsigned long long)j->v_bytes, (unsigned long long)j->v_bad,
	           (unsigned long long)j->v_dropped, (unsigned long long)j->v_changed,
	           (double)(loop_now(j->ctl->env.loop) - j->t0_ms) / 1000.0);
	log_msg(j->v_bad ? CFS_LOG_WARN : CFS_LOG_INFO,
	        "verify: %llu inline objects and %llu chunks (%llu bytes) checked, %llu bad, %llu "
	        "dropped",
	        (unsigned long long)j->v_inline, (unsigned long long)j->v_chunks,
	        (unsigned long long)j->v_bytes, (unsigned long long)j->v_bad,
	        (unsigned long long)j->v_dropped);
	out_end(j->conn, 1, NULL);
	job_finish(j);
}

static void verify_start(struct ctl_conn *c, int argc, char **argv)
{
	struct ctl_job *j;
	int drop = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--drop-bad") == 0) {
			drop = 1;
		} else {
			out_end(c, 0, "usage: verify [--drop-bad]");
			return;
		}
	}
	j = job_new(c->ctl, c, JOB_VERIFY);
	if (j == NULL) {
		out_end(c, 0, "out of memory");
		return;
	}
	j->drop_bad = drop;
	control_counters.verify_runs++;
	log_info("control: verify%s started", drop ? " --drop-bad" : "");
	loop_pending(c->ctl->env.loop);
}

/* Runs every job that advances by steps; before the loop sleeps. */
static void jobs_hook(struct loop *l, void *arg)
{
	struct control *ctl = arg;
	struct ctl_job *j, *next;

	(void)l;
	for (struct ctl_conn *c = ctl->conns; c; c = c->next) {
		if (c->job == NULL && !c->closing && memchr(c->in, '\n', c->inlen)) {
			conn_process(c);
			conn_watch(c);
		}
	}
	for (j = ctl->jobs; j; j = next) {
		next = j->next;
		if (j->finished)
			continue;
		if (j->conn == NULL && (j->kind == JOB_VERIFY || j->kind == JOB_CULL)) {
			/* its client went away (Ctrl-C): a long walk is not
			 * worth finishing for nobody */
			log_info("control: %s stopped: its client left",
			         j->kind == JOB_VERIFY ? "verify" : "cull");
			job_finish(j);
			continue;
		}
		switch (j->kind) {
		case JOB_CULL:
			cull_step(j);
			break;
		case JOB_VERIFY:
			verify_step(j);
			break;
		case JOB_INVAL_ALL:
			inval_all_step(j);
			break;
		case JOB_LOOKUP:
			break; /* driven by upstream callbacks */
		}
	}
}

/* --- requests ------------------------------------------------------------- */

static void cmd_info(struct ctl_conn *c)
{
	const struct ops_env *env = &c->ctl->env;
	const struct upstream_info *ui = origin_info(env->up);
	const struct cfs_config *cfg = env->cfg;

	out_printf(c, "version %s", env->version);
	out_printf(c, "pid %d", (int)getpid());
	out_printf(c, "uptime_seconds %lld", (long long)(time(NULL) - env->started));
	out_printf(c, "listen %s", cfg->listen);
	out_printf(c, "port %d", proto_port(env->srv));
	out_printf(c, "export %s", engine_export_path(env->engine));
	out_printf(c, "upstream %s", cfg->upstream);
	out_printf(c, "upstream_export %s", ui->url.path);
	out_printf(c, "upstream_version %d", ui->version);
	out_printf(c, "cache_dir %s", cfg->cache_dir);
	out_printf(c, "control_socket %s", c->ctl->path);
	out_printf(c, "metrics_listen %s", cfg->metrics_listen ? cfg->metrics_listen : "off");
	out_printf(c, "meta_ttl %d", cfg->meta_ttl);
	out_printf(c, "cache_size %llu", (unsigned long long)cfg->cache_size);
	out_printf(c, "bcull %d", cfg->bcull);
	out_printf(c, "bstop %d", cfg->bstop);
	out_printf(c, "fcull %d", cfg->fcull);
	out_printf(c, "fstop %d", cfg->fstop);
	{
		/* transfer sizes: the upstream's, what clients are offered, what
		 * fills ask */
		FSINFO3resok fi = ui->fsinfo;
		struct engine_fill_state fs;

		engine_fill_state(env->engine, &fs);
		out_printf(c, "upstream_rtmax %u", ui->fsinfo.rtmax);
		out_printf(c, "upstream_rtpref %u", ui->fsinfo.rtpref);
		out_printf(c, "upstream_wtmax %u", ui->fsinfo.wtmax);
		out_printf(c, "upstream_wtpref %u", ui->fsinfo.wtpref);
		engine_clamp_fsinfo(&fi, (uint32_t)cfg->chunk_size);
		out_printf(c, "client_rtmax %u", fi.rtmax);
		out_printf(c, "client_wtmax %u", fi.wtmax);
		out_printf(c, "chunk_size %u", fs.chunk_size);
		out_printf(c, "fill_read_size %u", fs.read_size);
		out_printf(c, "fill_reads_per_chunk %u", fs.reads_per_chunk);
		out_printf(c, "fills_blocked %s", engine_fill_block_name(fs.blocked));
	}
	out_end(c, 1, NULL);
}

static void cmd_memstream(struct ctl_conn *c, int what)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL) {
		out_end(c, 0, "out of memory");
		return;
	}
	if (what == 0)
		ops_write_stats(&c->ctl->env, f);
	else
		config_print(c->ctl->env.cfg, f);
	if (fclose(f) != 0) {
		free(buf);
		out_end(c, 0, "out of memory");
		return;
	}
	out_text(c, buf, len);
	free(buf);
	out_end(c, 1, NULL);
}

static void cmd_reload(struct ctl_conn *c)
{
	char msg[2048] = "";
	const struct ops_env *env = &c->ctl->env;

	if (env->reload == NULL) {
		out_end(c, 0, "reload is not available");
		return;
	}
	if (env->reload(env->reload_arg, msg, sizeof(msg)) != 0) {
		out_end(c, 0, "%s", msg);
		return;
	}
	if (msg[0])
		out_line(c, msg, strlen(msg));
	out_end(c, 1, NULL);
}

/* %XX in an argument is the byte XX (cachefsctl sends names with spaces
 * so); a '%' not followed by two hex digits stays. */
static void pct_decode(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		unsigned v;
		if (r[0] == '%' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2]) &&
		    sscanf(r + 1, "%2x", &v) == 1 && v != 0) {
			*w++ = (char)v;
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
}

/* test-stall MS: the loop thread sleeps, as a handler stuck in a loop or
 * a lock would make it; only for the tests (tests/integ/07-systemd-notify.sh:
 * the watchdog's pings stop). */
static void test_stall(struct ctl_conn *c, const char *arg)
{
	char *end;
	long ms = strtol(arg, &end, 10);
	struct timespec ts;

	if (*end || ms < 1 || ms > 600000) {
		out_end(c, 0, "usage: test-stall MS (1..600000)");
		return;
	}
	log_warn("test hook: the event loop stalls for %ld ms", ms);
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	out_end(c, 1, NULL);
}

static void request(struct ctl_conn *c, char *line)
{
	char *argv[MAX_ARGS + 1], *save = NULL;
	int argc = 0;

	for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
		if (argc == MAX_ARGS) {
			out_end(c, 0, "too many arguments");
			return;
		}
		pct_decode(t);
		argv[argc++] = t;
	}
	argv[argc] = NULL;
	if (argc == 0) {
		out_end(c, 0,
		        "empty request (try: stats, info, config, invalidate, cull, verify, "
		        "reload)");
		return;
	}
	log_debug("control: %s", argv[0]);
	if (strcmp(argv[0], "stats") == 0 && argc == 1) {
		cmd_memstream(c, 0);
	} else if (strcmp(argv[0], "config") == 0 && argc == 1) {
		cmd_memstream(c, 1);
	} else if (strcmp(argv[0], "info") == 0 && argc == 1) {
		cmd_info(c);
	} else if (strcmp(argv[0], "reload") == 0 && argc == 1) {
		cmd_reload(c);
	} else if (strcmp(argv[0], "invalidate") == 0) {
		if (argc == 2 && strcmp(argv[1], "--all") == 0) {
			if (job_new(c->ctl, c, JOB_INVAL_ALL) == NULL)
				out_end(c, 0, "out of memory");
			else
				loop_pending(c->ctl->env.loop);
		} else if (argc == 3 && strcmp(argv[1], "--fh") == 0) {
			inval_fh(c, argv[2]);
		} else if (argc == 2 && argv[1][0] != '-') {
			inval_path(c, argv[1]);
		} else {
			out_end(c, 0, "usage: invalidate PATH | --fh HEX | --all");
		}
	} else if (strcmp(argv[0], "cull") == 0) {
		cull_start(c, argc, argv);
	} else if (strcmp(argv[0], "verify") == 0) {
		verify_start(c, argc, argv);
	} else if (strcmp(argv[0], "test-stall") == 0 && argc == 2 && c->ctl->test_hooks) {
		test_stall(c, argv[1]);
	} else {
		out_end(c, 0,
		        "unknown request '%s' (stats, info, config, invalidate, cull, verify, "
		        "reload)",
		        argv[0]);
	}
}

/* --- connections ---------------------------------------------------------- */

static void conn_io(struct loop *l, int fd, int revents, void *arg);

static void conn_watch(struct ctl_conn *c)
{
	int ev = 0;

	if (!c->closing && c->job == NULL)
		ev |= POLLIN;
	if (c->outoff < c->outlen)
		ev |= POLLOUT;
	loop_set(c->ctl->env.loop, c->fd, ev);
}

/* Handles buffered requests while no job runs, then watches for what is
 * next. Never closes c (callers may hold it). */
static void conn_process(struct ctl_conn *c)
{
	while (c->job == NULL && !c->closing) {
		char *nl = memchr(c->in, '\n', c->inlen);
		size_t n;

		if (nl == NULL) {
			if (c->inlen >= CONTROL_LINE_MAX) {
				out_end(c, 0, "request longer than %d bytes", CONTROL_LINE_MAX);
				c->closing = 1;
			}
			break;
		}
		*nl = 0;
		n = (size_t)(nl - c->in) + 1;
		{
			char line[CONTROL_LINE_MAX + 1];
			memcpy(line, c->in, n);
			memmove(c->in, c->in + n, c->inlen - n);
			c->inlen -= n;
			request(c, line);
		}
	}
}

/* Output is waiting or the connection is free for its next request (a
 * buffered one is taken by jobs_hook()). */
static void conn_kick(struct ctl_conn *c)
{
	conn_watch(c);
	loop_pending(c->ctl->env.loop);
}

static void conn_io(struct loop *l, int fd, int revents, void *arg)
{
	struct ctl_conn *c = arg;

	(void)l;
	(void)fd;
	if (revents & POLLOUT) {
		while (c->outoff < c->outlen) {
			ssize_t n = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0) {
				conn_close(c);
				return;
			}
			c->outoff += (size_t)n;
		}
		if (c->outoff == c->outlen) {
			c->outoff = c->outlen = 0;
			if (c->closing) {
				conn_close(c);
				return;
			}
		}
	}
	if ((revents & (POLLIN | POLLHUP | POLLERR)) && !c->closing && c->job == NULL) {
		ssize_t n = read(c->fd, c->in + c->inlen, CONTROL_LINE_MAX - c->inlen);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			conn_close(c);
			return;
		}
		if (n > 0)
			c->inlen += (size_t)n;
	} else if ((revents & (POLLHUP | POLLERR)) && c->outoff == c->outlen) {
		conn_close(c);
		return;
	}
	conn_process(c);
	conn_watch(c);
}

static void conn_close(struct ctl_conn *c)
{
	struct control *ctl = c->ctl;

	if (c->job) {
		c->job->conn = NULL; /* it goes on without a client */
		c->job = NULL;
	}
	for (struct ctl_conn **pp = &ctl->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	ctl->nconns--;
	loop_del(ctl->env.loop, c->fd);
	close(c->fd);
	c->fd = -1;
	free(c->out);
	free(c);
}

static void accept_io(struct loop *l, int fd, int revents, void *arg)
{
	struct control *ctl = arg;

	(void)revents;
	for (int i = 0; i < 8; i++) {
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		struct ctl_conn *c;
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0)
			return;
		if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0 ||
		    (cr.uid != 0 && cr.uid != geteuid())) {
			static const char msg[] = ".error permission denied (root only)\n";
			if (write(cfd, msg, sizeof(msg) - 1) < 0)
				log_debug("control: %s", strerror(errno));
			static struct log_limit lim;
			log_limited(&lim, CFS_LOG_WARN, "control: refused a connection from uid %d",
			            (int)cr.uid);
			close(cfd);
			continue;
		}
		if (ctl->nconns >= MAX_CONNS) {
			static const char msg[] = ".error too many control connections\n";
			if (write(cfd, msg, sizeof(msg) - 1) < 0)
				log_debug("control: %s", strerror(errno));
			close(cfd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(cfd);
			return;
		}
		c->ctl = ctl;
		c->fd = cfd;
		if (loop_add(l, cfd, POLLIN, conn_io, c) != 0) {
			close(cfd);
			free(c);
			continue;
		}
		c->next = ctl->conns;
		ctl->conns = c;
		ctl->nconns++;
	}
}

/* --- the server ------------------------------------------------------------ */

int control_start(const struct ops_env *env, struct control **out, char *err, size_t errlen)
{
	struct control *ctl;
	struct sockaddr_un sa;
	struct stat st;
	mode_t old;
	int rc;

	*out = NULL;
	ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL)
		return -ENOMEM;
	ctl->env = *env;
	ctl->fd = -1;
	ctl->test_hooks = getenv("CACHEFSD_TEST_HOOKS") &&
	                  strcmp(getenv("CACHEFSD_TEST_HOOKS"), "1") == 0;
	if (env->cfg->control_socket)
		ctl->path = strdup(env->cfg->control_socket);
	else if (asprintf(&ctl->path, "%s/%s", env->cfg->cache_dir, CONTROL_SOCKET_NAME) < 0)
		ctl->path = NULL;
	if (ctl->path == NULL) {
		free(ctl);
		return -ENOMEM;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(ctl->path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen,
		         "key 'control_socket': '%s' is too long for a Unix socket (at most %zu "
		         "bytes): set control_socket",
		         ctl->path, sizeof(sa.sun_path) - 1);
		rc = -ENAMETOOLONG;
		goto fail;
	}
	strcpy(sa.sun_path, ctl->path);
	if (lstat(ctl->path, &st) == 0) {
		int probe;

		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "key 'control_socket': %s exists and is not a socket",
			         ctl->path);
			rc = -EEXIST;
			goto fail;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(probe);
			snprintf(err, errlen, "key 'control_socket': another daemon answers on %s",
			         ctl->path);
			rc = -EADDRINUSE;
			goto fail;
		}
		if (probe >= 0)
			close(probe);
		unlink(ctl->path); /* left by a daemon that did not stop cleanly */
	}
	ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "control socket: %s", strerror(errno));
		goto fail;
	}
	old = umask(077);
	rc = bind(ctl->fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc != 0 || chmod(ctl->path, 0600) != 0 || listen(ctl->fd, 16) != 0 ||
	    stat(ctl->path, &st) != 0) {
		rc = -errno;
		snprintf(err, errlen, "key 'control_socket': cannot listen on %s: %s", ctl->path,
		         strerror(errno));
		goto fail;
	}
	ctl->dev = st.st_dev;
	ctl->ino = st.st_ino;
	rc = loop_add(env->loop, ctl->fd, POLLIN, accept_io, ctl);
	if (rc == 0)
		rc = loop_before_sleep(env->loop, jobs_hook, ctl);
	if (rc != 0) {
		loop_del(env->loop, ctl->fd);
		unlink(ctl->path);
		snprintf(err, errlen, "control socket: %s", strerror(-rc));
		goto fail;
	}
	log_info("control socket %s", ctl->path);
	*out = ctl;
	return 0;
fail:
	if (ctl->fd >= 0)
		close(ctl->fd);
	free(ctl->path);
	free(ctl);
	return rc;
}

void control_stop(struct control *ctl)
{
	struct stat st;

	if (ctl == NULL)
		return;
	loop_before_sleep_del(ctl->env.loop, jobs_hook, ctl);
	while (ctl->conns)
		conn_close(ctl->conns);
	while (ctl->jobs) {
		struct ctl_job *j = ctl->jobs;
		ctl->jobs = j->next;
		j->ctl = NULL;
		if (j->busy == 0)
			job_free(j);
		/* else the last callback frees it (job_back) */
	}
	loop_del(ctl->env.loop, ctl->fd);
	close(ctl->fd);
	/* only our own socket: a new daemon may already have replaced it */
	if (stat(ctl->path, &st) == 0 && st.st_dev == ctl->dev && st.st_ino == ctl->ino)
		unlink(ctl->path);
	free(ctl->path);
	free(ctl);
}

const char *control_path(const struct control *c)
{
	return c->path;
}
