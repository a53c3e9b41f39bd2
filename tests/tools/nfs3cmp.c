/*
 * nfs3cmp: run every NFSv3 procedure (RFC 1813) twice, once directly against
 * an NFS server and once through cachefsd in front of the same server, and
 * check that both paths give the same results.
 *
 *   nfs3cmp --direct URL --proxy URL [--scratch NAME] [--uid U --gid G]
 *           [--timeout SECONDS] [--keep] [--verbose] [--v4-upstream]
 *
 * URL: nfs://HOST/EXPORT/PATH?nfsport=N&mountport=M (the whole path is the
 * export that is mounted). Both URLs must name the same export of the same
 * server.
 *
 * Layout under the export root, all created by this tool and removed at the
 * end (unless --keep):
 *   NAME-fixture/   made once through the direct path before comparing, only
 *                   read afterwards by both paths: file, big (3 MiB), dir/,
 *                   link -> file, many/ (300 entries)
 *   NAME-direct/    scratch dir used only through the direct path
 *   NAME-proxy/     scratch dir used only through the proxy path
 *
 * Uses the raw libnfs 4.0 RPC API with a local poll loop and a synchronous
 * "call and wait" wrapper (nfs3call.h); every call carries AUTH_SYS uid/gid (default 0/0).
 *
 * Output: one "ok   PROC what" or "FAIL PROC what: ..." line per check
 * (--verbose adds the status / entry counts seen to ok lines), then a summary.
 * A call that gets no reply within --timeout (default 30 s) kills that
 * connection; everything after that on the same path fails quickly. Exit 0 if everything matched, 1
 * on any mismatch, 2 on a usage or setup error.
 *
 * --v4-upstream: the proxy reaches the server over NFSv4.0 (another export
 * of the same directory; direct is its NFSv3 export). What NFSv4 cannot
 * carry, or the server answers differently over v4 itself, is compared as
 * it can be (g_v4 below says where): handles are not the same bytes (the
 * exports differ) but must map one to one (an object has one handle on
 * each side, and two objects never share one); FSINFO's rtmult, wtmult and
 * dtpref have no v4 attribute; the first-page READDIR(PLUS) counts check
 * the proxy's page on its own (a prefix of the server's listing that fits
 * the count and is full: the next entry would not fit; never a server
 * fault) rather than against how the server's v3 packs a page.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "nfs3call.h"
#include "nfsnames.h"

#define MIB         (1024u * 1024u)
#define XFER_CLAMP  MIB /* what the proxy may clamp rtmax/wtmax/... to */
#define SMALL_SIZE  5000u
#define BIG_SIZE    (3u * MIB)
#define MANY_COUNT  300
#define NPROC       22
#define END         (-1000) /* terminates a list of expected nfsstat3 values */
#define FSSTAT_SLOP (64ull * MIB)

#define EXPECT(...) ((const int[]){__VA_ARGS__, END})
#define EXPECT_ANY  NULL

static const char *const proc_names[NPROC] = {
    "NULL",    "GETATTR",     "SETATTR", "LOOKUP", "ACCESS",   "READLINK", "READ",   "WRITE",
    "CREATE",  "MKDIR",       "SYMLINK", "MKNOD",  "REMOVE",   "RMDIR",    "RENAME", "LINK",
    "READDIR", "READDIRPLUS", "FSSTAT",  "FSINFO", "PATHCONF", "COMMIT",
};

struct url {
	char host[256];
	char path[1024];
	int nfsport;   /* 0: 2049 */
	int mountport; /* 0: ask the portmapper */
};

struct conn {
	struct rpc_context *rpc;
	bool dead;
	char why[200];
};

/* handles of the shared fixture as seen through one path */
struct fixture {
	struct fh dir, file, big, sub, link, many;
};

struct side {
	const char *label;
	struct url url;
	struct conn mnt, nfs;
	struct fh root;
	char scratch_name[512];
	struct fh scratch;
	bool have_scratch;
	struct fixture fx;
	struct fh f, big, d, e, o, rmfh;
	unsigned long ncalls[NPROC];
};

struct listing {
	struct dent *e;
	size_t n, cap;
	unsigned calls;
	int stat;
	char err[320];
	char anomaly[300]; /* room for a whole name (255 bytes) */
};

struct chk {
	char buf[2048];
	size_t len;
	bool bad;
	char note[160]; /* shown with --verbose on ok lines */
};

static struct side S[2];
static int g_timeout_ms = 30000;
static uint32_t g_uid, g_gid;
static char g_name[256];
static uint32_t g_xfer = MIB; /* chunk size for multi-chunk READ/WRITE */
static bool g_v4;             /* --v4-upstream */
static unsigned g_ok, g_fail;
static bool g_verbose;

/* ------------------------------------------------------------------------ */
/* small helpers */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "nfs3cmp: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (p == NULL)
		die("out of memory");
	return p;
}

/* deterministic test data: byte at offset off of stream seed (seed 0: zeros) */
static void pat_fill(unsigned char *buf, uint64_t off, size_t len, uint32_t seed)
{
	if (seed == 0) {
		memset(buf, 0, len);
		return;
	}
	for (size_t i = 0; i < len; i++) {
		uint64_t o = off + i;
		uint64_t x = (o >> 3) * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull;

		x ^= x >> 29;
		x *= 0xBF58476D1CE4E5B9ull;
		x ^= x >> 32;
		buf[i] = (unsigned char)(x >> ((o & 7) * 8));
	}
}

static void hexstr(char *out, size_t outsz, const unsigned char *p, size_t len)
{
	size_t o = 0;

	out[0] = 0;
	for (size_t i = 0; i < len && o + 3 < outsz; i++)
		o += (size_t)snprintf(out + o, outsz - o, "%02x", p[i]);
	if (o + 3 >= outsz && outsz > 4)
		strcpy(out + outsz - 4, "...");
}

static const char *stat_str(const struct res *r, char *buf, size_t n)
{
	if (r->stat == RES_RPCERR) {
		snprintf(buf, n, "rpc-error(%.200s)", r->err);
	} else {
		const char *s = nfsstat3_name(r->stat);

		if (s == NULL)
			snprintf(buf, n, "nfsstat3=%d", r->stat);
		else
			snprintf(buf, n, "%s", s);
	}
	return buf;
}

/* ------------------------------------------------------------------------ */
/* URL and argument parsing */

static void parse_url(const char *text, struct url *u)
{
	const char *p = text, *slash, *q;

	memset(u, 0, sizeof(*u));
	if (strncmp(p, "nfs://", 6) != 0)
		die("%s: URL must start with nfs://", text);
	p += 6;
	slash = strchr(p, '/');
	if (slash == NULL)
		die("%s: URL has no export path", text);
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(slash - p));

		if (rb == NULL)
			die("%s: bad [address]", text);
		snprintf(u->host, sizeof(u->host), "%.*s", (int)(rb - p - 1), p + 1);
		if (rb[1] == ':')
			u->nfsport = atoi(rb + 2);
	} else {
		const char *colon = memchr(p, ':', (size_t)(slash - p));
		const char *hend = colon ? colon : slash;

		snprintf(u->host, sizeof(u->host), "%.*s", (int)(hend - p), p);
		if (colon)
			u->nfsport = atoi(colon + 1);
	}
	if (u->host[0] == 0)
		die("%s: URL has no host", text);
	q = strchr(slash, '?');
	snprintf(u->path, sizeof(u->path), "%.*s", (int)(q ? q - slash : (long)strlen(slash)),
	         slash);
	while (strlen(u->path) > 1 && u->path[strlen(u->path) - 1] == '/')
		u->path[strlen(u->path) - 1] = 0;
	while (q && *q) {
		const char *kv = q + 1, *amp = strchr(kv, '&');
		size_t kl = amp ? (size_t)(amp - kv) : strlen(kv);

		if (kl > 8 && strncmp(kv, "nfsport=", 8) == 0)
			u->nfsport = atoi(kv + 8);
		else if (kl > 10 && strncmp(kv, "mountport=", 10) == 0)
			u->mountport = atoi(kv + 10);
		else if (kl > 0)
			fprintf(stderr, "nfs3cmp: ignoring URL parameter %.*s\n", (int)kl, kv);
		q = amp;
	}
	if (u->nfsport == 0)
		u->nfsport = 2049;
}

/* ------------------------------------------------------------------------ */
/* synchronous calls over the async API */

/* Stop using a connection: queued calls complete (with an error) right away,
 * so no callback can fire later into a finished call. */
static void conn_kill(struct conn *cn, const char *why)
{
	if (cn->rpc == NULL)
		return;
	snprintf(cn->why, sizeof(cn->why), "%.190s", why);
	cn->dead = true;
	rpc_disconnect(cn->rpc, cn->why);
	rpc_destroy_context(cn->rpc);
	cn->rpc = NULL;
}

/* A call that gets no reply within --timeout kills its connection. */
static void conn_wait(struct conn *cn, struct call *c)
{
	char why[256];

	switch (call_wait(cn->rpc, c, g_timeout_ms)) {
	case WAIT_DONE:
		return;
	case WAIT_NOREPLY:
		snprintf(why, sizeof(why), "no reply within %d s", g_timeout_ms / 1000);
		break;
	case WAIT_POLL:
		snprintf(why, sizeof(why), "%s", strerror(errno));
		break;
	case WAIT_SERVICE:
		snprintf(why, sizeof(why), "%s", rpc_get_error(cn->rpc));
		break;
	}
	conn_kill(cn, why);
}

static bool call_begin(struct conn *cn, struct call *c, struct res *r)
{
	res_free(r);
	call_prep(c, r);
	if (cn->dead || cn->rpc == NULL) {
		r->stat = RES_RPCERR;
		snprintf(r->err, sizeof(r->err), "connection lost: %s", cn->why);
		return false;
	}
	return true;
}

/* Waits for the call queued (queued: what the send_*() helper returned);
 * returns the status in c->r (RES_RPCERR with the reason in r->err). */
static int call_finish(struct conn *cn, struct call *c, int queued)
{
	struct res *r = c->r;

	if (queued != 0) {
		r->stat = RES_RPCERR;
		snprintf(r->err, sizeof(r->err), "cannot send: %s", rpc_get_error(cn->rpc));
		return -1;
	}
	conn_wait(cn, c);
	if (c->status != RPC_STATUS_SUCCESS) {
		r->stat = RES_RPCERR;
		if (cn->dead)
			snprintf(r->err, sizeof(r->err), "connection lost: %s", cn->why);
		else if (c->status == RPC_STATUS_ERROR && c->err[0])
			snprintf(r->err, sizeof(r->err), "%s", c->err);
		else if (c->status == RPC_STATUS_CANCEL)
			snprintf(r->err, sizeof(r->err), "cancelled");
		else if (c->status == RPC_STATUS_TIMEOUT)
			snprintf(r->err, sizeof(r->err), "timeout");
		else
			snprintf(r->err, sizeof(r->err), "rpc status %d", c->status);
	} else if (r->stat == RES_NOMEM) {
		die("out of memory");
	}
	return r->stat;
}

static int conn_open(struct conn *cn, const struct url *u, int port, int prog, int vers)
{
	static uint32_t groups[1];
	struct res r = {0};
	struct call c;

	memset(cn, 0, sizeof(*cn));
	cn->rpc = rpc_init_context();
	if (cn->rpc == NULL)
		die("rpc_init_context failed");
	groups[0] = g_gid;
	rpc_set_auth(cn->rpc, libnfs_authunix_create("nfs3cmp", g_uid, g_gid, 1, groups));
	call_begin(cn, &c, &r);
	if (call_finish(cn, &c,
	                port > 0 ? send_connect(cn->rpc, &c, u->host, port)
	                         : send_connect_program(cn->rpc, &c, u->host, prog, vers)) != 0)
		die("cannot connect to %s port %d: %s", u->host, port, r.err);
	return 0;
}

/* ---- one wrapper per procedure (on the side's NFS connection) ---- */

#define BEGIN(s, proc)                                                                             \
	struct call c;                                                                             \
	if (!call_begin(&(s)->nfs, &c, r))                                                         \
		return -1;                                                                         \
	c.answered = &(s)->ncalls[proc];

static int op_null(struct side *s, struct res *r)
{
	BEGIN(s, NFS3_NULL);
	return call_finish(&s->nfs, &c, send_null(s->nfs.rpc, &c));
}

static int op_getattr(struct side *s, const struct fh *fh, struct res *r)
{
	BEGIN(s, NFS3_GETATTR);
	return call_finish(&s->nfs, &c, send_getattr(s->nfs.rpc, &c, fh));
}

static int op_setattr(struct side *s, const struct fh *fh, const sattr3 *sa, const nfstime3 *guard,
                      struct res *r)
{
	BEGIN(s, NFS3_SETATTR);
	return call_finish(&s->nfs, &c, send_setattr(s->nfs.rpc, &c, fh, sa, guard));
}

static int op_lookup(struct side *s, const struct fh *dir, const char *name, struct res *r)
{
	BEGIN(s, NFS3_LOOKUP);
	return call_finish(&s->nfs, &c, send_lookup(s->nfs.rpc, &c, dir, name));
}

static int op_access(struct side *s, const struct fh *fh, uint32_t bits, struct res *r)
{
	BEGIN(s, NFS3_ACCESS);
	return call_finish(&s->nfs, &c, send_access(s->nfs.rpc, &c, fh, bits));
}

static int op_readlink(struct side *s, const struct fh *fh, struct res *r)
{
	BEGIN(s, NFS3_READLINK);
	return call_finish(&s->nfs, &c, send_readlink(s->nfs.rpc, &c, fh));
}

static int op_read(struct side *s, const struct fh *fh, uint64_t off, uint32_t count, struct res *r)
{
	BEGIN(s, NFS3_READ);
	return call_finish(&s->nfs, &c, send_read(s->nfs.rpc, &c, fh, off, count));
}

static int op_write(struct side *s, const struct fh *fh, uint64_t off, const void *buf,
                    uint32_t len, stable_how how, struct res *r)
{
	BEGIN(s, NFS3_WRITE);
	return call_finish(&s->nfs, &c, send_write(s->nfs.rpc, &c, fh, off, buf, len, how));
}

static int op_create(struct side *s, const struct fh *dir, const char *name, createmode3 how,
                     uint32_t mode, struct res *r)
{
	sattr3 sa;

	BEGIN(s, NFS3_CREATE);
	sattr_mode(&sa, mode);
	return call_finish(&s->nfs, &c,
	                   send_create(s->nfs.rpc, &c, dir, name, how, &sa, "nfs3cmp!"));
}

static int op_mkdir(struct side *s, const struct fh *dir, const char *name, uint32_t mode,
                    struct res *r)
{
	BEGIN(s, NFS3_MKDIR);
	return call_finish(&s->nfs, &c, send_mkdir(s->nfs.rpc, &c, dir, name, mode));
}

static int op_symlink(struct side *s, const struct fh *dir, const char *name, const char *target,
                      struct res *r)
{
	BEGIN(s, NFS3_SYMLINK);
	return call_finish(&s->nfs, &c, send_symlink(s->nfs.rpc, &c, dir, name, target));
}

static int op_mknod(struct side *s, const struct fh *dir, const char *name, ftype3 type,
                    uint32_t mode, uint32_t major, uint32_t minor, struct res *r)
{
	BEGIN(s, NFS3_MKNOD);
	return call_finish(&s->nfs, &c,
	                   send_mknod(s->nfs.rpc, &c, dir, name, type, mode, major, minor));
}

static int op_remove(struct side *s, const struct fh *dir, const char *name, struct res *r)
{
	BEGIN(s, NFS3_REMOVE);
	return call_finish(&s->nfs, &c, send_remove(s->nfs.rpc, &c, dir, name));
}

static int op_rmdir(struct side *s, const struct fh *dir, const char *name, struct res *r)
{
	BEGIN(s, NFS3_RMDIR);
	return call_finish(&s->nfs, &c, send_rmdir(s->nfs.rpc, &c, dir, name));
}

static int op_rename(struct side *s, const struct fh *fdir, const char *fname,
                     const struct fh *tdir, const char *tname, struct res *r)
{
	BEGIN(s, NFS3_RENAME);
	return call_finish(&s->nfs, &c, send_rename(s->nfs.rpc, &c, fdir, fname, tdir, tname));
}

static int op_link(struct side *s, const struct fh *file, const struct fh *dir, const char *name,
                   struct res *r)
{
	BEGIN(s, NFS3_LINK);
	return call_finish(&s->nfs, &c, send_link(s->nfs.rpc, &c, file, dir, name));
}

static int op_readdir(struct side *s, const struct fh *dir, uint64_t cookie,
                      const unsigned char *verf, uint32_t count, struct res *r)
{
	BEGIN(s, NFS3_READDIR);
	return call_finish(&s->nfs, &c, send_readdir(s->nfs.rpc, &c, dir, cookie, verf, count));
}

static int op_readdirplus(struct side *s, const struct fh *dir, uint64_t cookie,
                          const unsigned char *verf, uint32_t dircount, uint32_t maxcount,
                          struct res *r)
{
	BEGIN(s, NFS3_READDIRPLUS);
	return call_finish(&s->nfs, &c,
	                   send_readdirplus(s->nfs.rpc, &c, dir, cookie, verf, dircount, maxcount));
}

static int op_fsstat(struct side *s, const struct fh *fh, struct res *r)
{
	BEGIN(s, NFS3_FSSTAT);
	return call_finish(&s->nfs, &c, send_fsstat(s->nfs.rpc, &c, fh));
}

static int op_fsinfo(struct side *s, const struct fh *fh, struct res *r)
{
	BEGIN(s, NFS3_FSINFO);
	return call_finish(&s->nfs, &c, send_fsinfo(s->nfs.rpc, &c, fh));
}

static int op_pathconf(struct side *s, const struct fh *fh, struct res *r)
{
	BEGIN(s, NFS3_PATHCONF);
	return call_finish(&s->nfs, &c, send_pathconf(s->nfs.rpc, &c, fh));
}

static int op_commit(struct side *s, const struct fh *fh, uint64_t off, uint32_t count,
                     struct res *r)
{
	BEGIN(s, NFS3_COMMIT);
	return call_finish(&s->nfs, &c, send_commit(s->nfs.rpc, &c, fh, off, count));
}

/* ---- whole-directory listing (READDIR / READDIRPLUS with cookies) ---- */

static void listing_free(struct listing *l)
{
	free(l->e);
	memset(l, 0, sizeof(*l));
}

/* Read a whole directory: cookie and cookieverf of each reply go into the
 * next request until eof. Entries end up sorted by name. */
static int list_dir(struct side *s, const struct fh *dir, bool plus, uint32_t count,
                    uint32_t maxcount, struct listing *l)
{
	uint64_t cookie = 0;
	unsigned char verf[8] = {0};
	struct res r = {0};
	size_t got;

	memset(l, 0, sizeof(*l));
	for (;;) {
		int st = plus ? op_readdirplus(s, dir, cookie, verf, count, maxcount, &r)
		              : op_readdir(s, dir, cookie, verf, count, &r);

		l->calls++;
		l->stat = st;
		if (st != NFS3_OK) {
			snprintf(l->err, sizeof(l->err), "%s", r.err);
			break;
		}
		if (l->n + r.nents > l->cap) {
			l->cap = (l->n + r.nents) * 2 + 16;
			l->e = realloc(l->e, l->cap * sizeof(*l->e));
			if (l->e == NULL)
				die("out of memory");
		}
		for (size_t i = 0; i < r.nents; i++)
			l->e[l->n++] = r.ents[i];
		got = r.nents;
		if (got)
			cookie = r.ents[got - 1].cookie;
		memcpy(verf, r.cookieverf, 8);
		free(r.ents);
		r.ents = NULL;
		r.nents = 0;
		if (r.eof)
			break;
		if (got == 0 || l->calls > 10000) {
			snprintf(l->anomaly, sizeof(l->anomaly),
			         "no progress (%zu entries after %u calls, no eof)", l->n,
			         l->calls);
			break;
		}
	}
	res_free(&r);
	if (l->n)
		qsort(l->e, l->n, sizeof(*l->e), dent_cmp);
	for (size_t i = 1; i < l->n && !l->anomaly[0]; i++)
		if (strcmp(l->e[i - 1].name, l->e[i].name) == 0)
			snprintf(l->anomaly, sizeof(l->anomaly), "entry %s listed twice",
			         l->e[i].name);
	return l->stat;
}

/* ------------------------------------------------------------------------ */
/* checks and reporting */

static void chk_add(struct chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void chk_add(struct chk *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	c->bad = true;
	if (c->len + 8 >= sizeof(c->buf))
		return;
	if (c->len) {
		memcpy(c->buf + c->len, "; ", 2);
		c->len += 2;
	}
	va_start(ap, fmt);
	n = vsnprintf(c->buf + c->len, sizeof(c->buf) - c->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		c->len += (size_t)n;
	if (c->len >= sizeof(c->buf) - 1) {
		c->len = sizeof(c->buf) - 1;
		memcpy(c->buf + c->len - 3, "...", 3);
	}
}

static void chk_num(struct chk *c, const char *field, uint64_t d, uint64_t p)
{
	if (d != p)
		chk_add(c, "%s direct=%" PRIu64 " proxy=%" PRIu64, field, d, p);
}

static void chk_want(struct chk *c, const char *field, uint64_t d, uint64_t p, uint64_t want)
{
	if (d != p)
		chk_num(c, field, d, p);
	else if (d != want)
		chk_add(c, "%s both=%" PRIu64 ", expected %" PRIu64, field, d, want);
}

static void chk_bytes(struct chk *c, const char *field, const void *d, size_t dl, const void *p,
                      size_t pl)
{
	char a[300], b[300];

	if (dl == pl && memcmp(d, p, dl) == 0)
		return;
	hexstr(a, sizeof(a), d, dl);
	hexstr(b, sizeof(b), p, pl);
	chk_add(c, "%s direct=%s proxy=%s", field, a, b);
}

/* --v4-upstream: every (direct, proxy) pair of handles seen for one object */
struct fh_pair {
	struct fh d, p;
};
static struct fh_pair *g_fhmap;
static size_t g_fhmap_n, g_fhmap_cap;

/* The pair d/p must agree with every pair seen before: a handle known on
 * one side goes with the same handle on the other. */
static void fh_map_check(struct chk *c, const char *field, const struct fh *d, const struct fh *p)
{
	char h[2 * NFS3_FHSIZE + 1];

	for (size_t i = 0; i < g_fhmap_n; i++) {
		bool dm = fh_eq(&g_fhmap[i].d, d), pm = fh_eq(&g_fhmap[i].p, p);

		if (dm && pm)
			return;
		if (dm || pm) {
			const struct fh *o = dm ? &g_fhmap[i].p : &g_fhmap[i].d;

			for (uint32_t j = 0; j < o->len && j < NFS3_FHSIZE; j++)
				sprintf(h + 2 * j, "%02x", o->data[j]);
			h[2 * (o->len < NFS3_FHSIZE ? o->len : NFS3_FHSIZE)] = 0;
			chk_add(c, "%s: the %s handle went with %s %s before", field,
			        dm ? "direct" : "proxy", dm ? "proxy" : "direct", h);
			return;
		}
	}
	if (g_fhmap_n == g_fhmap_cap) {
		size_t cap = g_fhmap_cap ? 2 * g_fhmap_cap : 256;
		struct fh_pair *m = realloc(g_fhmap, cap * sizeof(*m));

		if (m == NULL)
			die("out of memory");
		g_fhmap = m;
		g_fhmap_cap = cap;
	}
	g_fhmap[g_fhmap_n].d = *d;
	g_fhmap[g_fhmap_n++].p = *p;
}

static void chk_fh(struct chk *c, const char *field, const struct fh *d, const struct fh *p)
{
	if (g_v4)
		fh_map_check(c, field, d, p);
	else
		chk_bytes(c, field, d->data, d->len, p->data, p->len);
}

/* Compare status of both sides; want (END-terminated) lists acceptable
 * values, NULL accepts anything as long as both agree. Returns true if both
 * sides succeeded, i.e. the caller should go on comparing the bodies. */
static bool chk_status(struct chk *c, const struct res *r, const int *want)
{
	char a[300], b[300];
	bool okay = want == NULL;

	if (r[0].stat != r[1].stat || r[0].stat == RES_RPCERR) {
		chk_add(c, "status direct=%s proxy=%s", stat_str(&r[0], a, sizeof(a)),
		        stat_str(&r[1], b, sizeof(b)));
		return false;
	}
	snprintf(c->note, sizeof(c->note), "%s", stat_str(&r[0], a, sizeof(a)));
	for (const int *w = want; w && *w != END; w++)
		if (*w == r[0].stat)
			okay = true;
	if (!okay) {
		size_t o = 0;

		b[0] = 0;
		for (const int *w = want; *w != END; w++) {
			struct res t = {.stat = *w};

			o += (size_t)snprintf(b + o, sizeof(b) - o, "%s%s", o ? "|" : "",
			                      stat_str(&t, a, sizeof(a)));
		}
		chk_add(c, "status both=%s, expected %s", stat_str(&r[0], a, sizeof(a)), b);
		return false;
	}
	return r[0].stat == NFS3_OK;
}

enum {
	A_TYPE = 1 << 0,
	A_MODE = 1 << 1,
	A_NLINK = 1 << 2,
	A_UID = 1 << 3,
	A_GID = 1 << 4,
	A_SIZE = 1 << 5,
	A_RDEV = 1 << 6,
	A_FILEID = 1 << 7,
	A_FSID = 1 << 8,
	A_MTIME = 1 << 9,
};

/* objects created separately on each side */
#define A_LOOSE (A_TYPE | A_MODE | A_NLINK | A_UID | A_GID | A_SIZE | A_RDEV)
/* the shared fixture: same object, unchanged since it was created */
#define A_STRICT (A_LOOSE | A_FILEID | A_FSID | A_MTIME)
/* same object that the other path may be changing meanwhile (the export root) */
#define A_IDENT (A_TYPE | A_MODE | A_UID | A_GID | A_FILEID | A_FSID)

static void chk_fattr(struct chk *c, const char *pfx, bool hd, const fattr3 *d, bool hp,
                      const fattr3 *p, unsigned flags)
{
	char f[300];

	if (!hd || !hp) {
		if (hd != hp)
			chk_add(c, "%sattributes direct=%s proxy=%s", pfx,
			        hd ? "present" : "absent", hp ? "present" : "absent");
		return;
	}
#define FIELD(name) (snprintf(f, sizeof(f), "%s%s", pfx, name), f)
	if (flags & A_TYPE)
		chk_num(c, FIELD("type"), d->type, p->type);
	if ((flags & A_MODE) && d->mode != p->mode)
		chk_add(c, "%smode direct=0%o proxy=0%o", pfx, d->mode, p->mode);
	if (flags & A_NLINK)
		chk_num(c, FIELD("nlink"), d->nlink, p->nlink);
	if (flags & A_UID)
		chk_num(c, FIELD("uid"), d->uid, p->uid);
	if (flags & A_GID)
		chk_num(c, FIELD("gid"), d->gid, p->gid);
	if (flags & A_SIZE)
		chk_num(c, FIELD("size"), d->size, p->size);
	if ((flags & A_RDEV) &&
	    (d->rdev.specdata1 != p->rdev.specdata1 || d->rdev.specdata2 != p->rdev.specdata2))
		chk_add(c, "%srdev direct=%u,%u proxy=%u,%u", pfx, d->rdev.specdata1,
		        d->rdev.specdata2, p->rdev.specdata1, p->rdev.specdata2);
	if (flags & A_FILEID)
		chk_num(c, FIELD("fileid"), d->fileid, p->fileid);
	if ((flags & A_FSID) && d->fsid != p->fsid)
		chk_add(c, "%sfsid direct=%#" PRIx64 " proxy=%#" PRIx64, pfx, d->fsid, p->fsid);
	if ((flags & A_MTIME) &&
	    (d->mtime.seconds != p->mtime.seconds || d->mtime.nseconds != p->mtime.nseconds))
		chk_add(c, "%smtime direct=%u.%09u proxy=%u.%09u", pfx, d->mtime.seconds,
		        d->mtime.nseconds, p->mtime.seconds, p->mtime.nseconds);
#undef FIELD
}

static void chk_attr(struct chk *c, const struct res *r, unsigned flags)
{
	chk_fattr(c, "", r[0].has_attr, &r[0].attr, r[1].has_attr, &r[1].attr, flags);
}

/* the server's answer itself contradicts what the test set up */
static void chk_attr_want(struct chk *c, const struct res *r, int type, int mode)
{
	if (!r[0].has_attr || !r[1].has_attr)
		return;
	if (type >= 0 && r[0].attr.type == r[1].attr.type && (int)r[0].attr.type != type)
		chk_add(c, "type both=%d, expected %d", r[0].attr.type, type);
	if (mode >= 0 && r[0].attr.mode == r[1].attr.mode && (int)(r[0].attr.mode & 07777) != mode)
		chk_add(c, "mode both=0%o, expected 0%o", r[0].attr.mode, (unsigned)mode);
}

static void report(const char *proc, const char *what, const struct chk *c)
{
	if (c->bad) {
		g_fail++;
		printf("FAIL %s %s: %s\n", proc, what, c->buf);
	} else {
		g_ok++;
		if (g_verbose && c->note[0])
			printf("ok   %s %s [%s]\n", proc, what, c->note);
		else
			printf("ok   %s %s\n", proc, what);
	}
	fflush(stdout);
}

static void resv_free(struct res *r)
{
	res_free(&r[0]);
	res_free(&r[1]);
}

/* compare two complete listings: names; with attrs/handles for READDIRPLUS */
static void chk_listing(struct chk *c, const struct listing *l, bool plus, bool shared)
{
	size_t i = 0, j = 0;
	char only[2][400];
	size_t ol[2] = {0, 0};
	unsigned nonly[2] = {0, 0};

	for (int k = 0; k < 2; k++) {
		only[k][0] = 0;
		if (l[k].stat != NFS3_OK)
			return; /* the status check already reported it */
		if (l[k].anomaly[0])
			chk_add(c, "%s: %s", S[k].label, l[k].anomaly);
	}
	while (i < l[0].n || j < l[1].n) {
		int cmp = i == l[0].n   ? 1
		          : j == l[1].n ? -1
		                        : strcmp(l[0].e[i].name, l[1].e[j].name);
		int k = cmp < 0 ? 0 : 1;
		const struct dent *d, *p;
		char pfx[300];

		if (cmp != 0) {
			const struct dent *e = k == 0 ? &l[0].e[i++] : &l[1].e[j++];

			if (nonly[k]++ < 8 && ol[k] + 2 < sizeof(only[k]))
				ol[k] += (size_t)snprintf(only[k] + ol[k], sizeof(only[k]) - ol[k],
				                          "%s%s", ol[k] ? "," : "", e->name);
			continue;
		}
		d = &l[0].e[i++];
		p = &l[1].e[j++];
		snprintf(pfx, sizeof(pfx), "%s: ", d->name);
		if (shared)
			chk_num(c, strcat(pfx, "fileid"), d->fileid, p->fileid);
		if (!plus)
			continue;
		snprintf(pfx, sizeof(pfx), "%s: ", d->name);
		chk_fattr(c, pfx, d->has_attr, &d->attr, p->has_attr, &p->attr,
		          strcmp(d->name, "..") == 0 ? A_IDENT
		          : shared                   ? A_STRICT
		                                     : A_LOOSE);
		if (d->has_fh != p->has_fh)
			chk_add(c, "%shandle direct=%s proxy=%s", pfx,
			        d->has_fh ? "present" : "absent", p->has_fh ? "present" : "absent");
		else if (shared && d->has_fh)
			chk_fh(c, strcat(pfx, "handle"), &d->fh, &p->fh);
	}
	for (int k = 0; k < 2; k++)
		if (nonly[k])
			chk_add(c, "%u names only via %s: %s%s", nonly[k], S[k].label, only[k],
			        nonly[k] > 8 ? ",..." : "");
}

/* ------------------------------------------------------------------------ */
/* setup and cleanup (not comparisons: failures here are fatal or ignored) */

static void must(int st, const struct res *r, const char *what)
{
	char b[300];

	if (st != NFS3_OK)
		die("setup: %s failed: %s", what, stat_str(r, b, sizeof(b)));
}

/* remove parent/name recursively; missing is fine */
static void rm_tree(struct side *s, const struct fh *parent, const char *name, int depth)
{
	struct res r = {0};
	struct listing l;
	struct fh fh;

	if (op_lookup(s, parent, name, &r) != NFS3_OK || depth > 16) {
		res_free(&r);
		return;
	}
	fh = r.fh;
	if (!r.has_attr) {
		op_getattr(s, &fh, &r);
	}
	if (r.has_attr && r.attr.type == NF3DIR) {
		if (list_dir(s, &fh, true, 8192, 65536, &l) == NFS3_OK) {
			for (size_t i = 0; i < l.n; i++) {
				const char *n = l.e[i].name;

				if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
					continue;
				if (l.e[i].has_attr && l.e[i].attr.type != NF3DIR)
					op_remove(s, &fh, n, &r);
				else
					rm_tree(s, &fh, n, depth + 1);
			}
		}
		listing_free(&l);
		op_rmdir(s, parent, name, &r);
	} else {
		op_remove(s, parent, name, &r);
	}
	res_free(&r);
}

static void side_connect(struct side *s)
{
	struct res r = {0};
	struct call c;
	char b[300];

	conn_open(&s->mnt, &s->url, s->url.mountport, MOUNT_PROGRAM, MOUNT_V3);
	call_begin(&s->mnt, &c, &r);
	if (call_finish(&s->mnt, &c, send_mnt(s->mnt.rpc, &c, s->url.path)) != MNT3_OK)
		die("%s: MOUNT %s on %s failed: %s", s->label, s->url.path, s->url.host,
		    r.stat == RES_RPCERR ? r.err
		                         : (snprintf(b, sizeof(b), "mountstat3=%d", r.stat), b));
	s->root = r.fh;
	res_free(&r);
	conn_open(&s->nfs, &s->url, s->url.nfsport, NFS_PROGRAM, NFS_V3);
}

static void side_disconnect(struct side *s)
{
	struct res r = {0};
	struct call c;

	if (call_begin(&s->mnt, &c, &r))
		call_finish(&s->mnt, &c, send_umnt(s->mnt.rpc, &c, s->url.path));
	res_free(&r);
	if (s->mnt.rpc)
		rpc_destroy_context(s->mnt.rpc);
	if (s->nfs.rpc)
		rpc_destroy_context(s->nfs.rpc);
	s->mnt.rpc = s->nfs.rpc = NULL;
}

static void write_pattern(struct side *s, const struct fh *fh, uint64_t size, uint32_t seed,
                          const char *what)
{
	struct res r = {0};
	unsigned char *buf = xcalloc(g_xfer, 1);

	for (uint64_t off = 0; off < size; off += g_xfer) {
		uint32_t n = size - off < g_xfer ? (uint32_t)(size - off) : g_xfer;

		pat_fill(buf, off, n, seed);
		must(op_write(s, fh, off, buf, n, FILE_SYNC, &r), &r, what);
		if (r.count != n)
			die("setup: %s: short write %u of %u", what, r.count, n);
	}
	free(buf);
	res_free(&r);
}

static void make_fixture(struct side *s)
{
	struct res r = {0};
	struct fh dir, sub, many;
	char n[32];

	must(op_mkdir(s, &s->root, g_name, 0755, &r), &r, "MKDIR fixture");
	if (!r.has_fh)
		must(op_lookup(s, &s->root, g_name, &r), &r, "LOOKUP fixture");
	dir = r.fh;
	must(op_create(s, &dir, "file", UNCHECKED, 0644, &r), &r, "CREATE fixture/file");
	write_pattern(s, &r.fh, SMALL_SIZE, 1, "WRITE fixture/file");
	must(op_mkdir(s, &dir, "dir", 0750, &r), &r, "MKDIR fixture/dir");
	sub = r.fh;
	must(op_create(s, &sub, "inner", UNCHECKED, 0600, &r), &r, "CREATE fixture/dir/inner");
	must(op_symlink(s, &dir, "link", "file", &r), &r, "SYMLINK fixture/link");
	must(op_create(s, &dir, "big", UNCHECKED, 0644, &r), &r, "CREATE fixture/big");
	write_pattern(s, &r.fh, BIG_SIZE, 2, "WRITE fixture/big");
	must(op_mkdir(s, &dir, "many", 0755, &r), &r, "MKDIR fixture/many");
	many = r.fh;
	for (int i = 0; i < MANY_COUNT; i++) {
		snprintf(n, sizeof(n), "entry-%03d", i);
		must(op_create(s, &many, n, UNCHECKED, 0644, &r), &r, "CREATE fixture/many/*");
	}
	res_free(&r);
}

/* ------------------------------------------------------------------------ */
/* the comparisons, grouped by procedure */

static void t_mount(void)
{
	struct chk c = {0};

	chk_fh(&c, "root handle", &S[0].root, &S[1].root);
	report("MOUNT", "root file handle identical", &c);
}

static void t_null(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_null(&S[k], &r[k]);
	chk_status(&c, r, EXPECT(NFS3_OK));
	report("NULL", "ping", &c);
	resv_free(r);
}

static void t_fsinfo(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_fsinfo(&S[k], &S[k].root, &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		const FSINFO3resok *d = &r[0].fsinfo, *p = &r[1].fsinfo;
		/* WRITE sizes: the server's, clamped to what libnfs carries;
		 * READ sizes may be larger (up to the clamp: the proxy offers a
		 * chunk and sends a forwarded READ in pieces), never smaller */
		const struct {
			const char *n;
			uint32_t d, p;
			int may_grow;
		} clamp[] = {{"rtmax", d->rtmax, p->rtmax, 1},
		             {"rtpref", d->rtpref, p->rtpref, 1},
		             {"wtmax", d->wtmax, p->wtmax, 0},
		             {"wtpref", d->wtpref, p->wtpref, 0}};

		for (size_t i = 0; i < sizeof(clamp) / sizeof(clamp[0]); i++) {
			uint32_t cl = clamp[i].d < XFER_CLAMP ? clamp[i].d : XFER_CLAMP;

			if (clamp[i].may_grow ? clamp[i].p < cl || clamp[i].p > XFER_CLAMP
			                      : clamp[i].p != clamp[i].d && clamp[i].p != cl)
				chk_add(&c, "%s direct=%u proxy=%u (want %s%u)", clamp[i].n,
				        clamp[i].d, clamp[i].p, clamp[i].may_grow ? ">= " : "", cl);
		}
		/* NFSv4 has no attribute for these hints: over v4 the proxy
		 * says its own */
		if (!g_v4) {
			chk_num(&c, "rtmult", d->rtmult, p->rtmult);
			chk_num(&c, "wtmult", d->wtmult, p->wtmult);
			chk_num(&c, "dtpref", d->dtpref, p->dtpref);
		}
		chk_num(&c, "maxfilesize", d->maxfilesize, p->maxfilesize);
		chk_num(&c, "time_delta.seconds", d->time_delta.seconds, p->time_delta.seconds);
		chk_num(&c, "time_delta.nseconds", d->time_delta.nseconds, p->time_delta.nseconds);
		if (d->properties != p->properties)
			chk_add(&c, "properties direct=%#x proxy=%#x", d->properties,
			        p->properties);
		/* chunk size for the multi-chunk READ/WRITE tests */
		for (int k = 0; k < 2; k++) {
			if (r[k].fsinfo.rtmax && r[k].fsinfo.rtmax < g_xfer)
				g_xfer = r[k].fsinfo.rtmax;
			if (r[k].fsinfo.wtmax && r[k].fsinfo.wtmax < g_xfer)
				g_xfer = r[k].fsinfo.wtmax;
		}
	}
	report("FSINFO", "export root", &c);
	resv_free(r);
}

static void t_fsstat(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_fsstat(&S[k], &S[k].root, &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		const FSSTAT3resok *d = &r[0].fsstat, *p = &r[1].fsstat;
		uint64_t bslop = d->tbytes / 1000 > FSSTAT_SLOP ? d->tbytes / 1000 : FSSTAT_SLOP;
		uint64_t fslop = d->tfiles / 1000 > 4096 ? d->tfiles / 1000 : 4096;
		const struct {
			const char *n;
			uint64_t d, p, slop;
		} v[] = {{"fbytes", d->fbytes, p->fbytes, bslop},
		         {"abytes", d->abytes, p->abytes, bslop},
		         {"ffiles", d->ffiles, p->ffiles, fslop},
		         {"afiles", d->afiles, p->afiles, fslop}};

		chk_num(&c, "tbytes", d->tbytes, p->tbytes);
		chk_num(&c, "tfiles", d->tfiles, p->tfiles);
		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			uint64_t diff = v[i].d > v[i].p ? v[i].d - v[i].p : v[i].p - v[i].d;

			if (diff > v[i].slop)
				chk_add(&c,
				        "%s direct=%" PRIu64 " proxy=%" PRIu64
				        " (tolerance %" PRIu64 ")",
				        v[i].n, v[i].d, v[i].p, v[i].slop);
		}
	}
	report("FSSTAT", "export root (free counts within tolerance)", &c);
	resv_free(r);
}

static void t_pathconf(void)
{
	struct res r[2] = {0};

	for (int obj = 0; obj < 2; obj++) {
		struct chk c = {0};

		for (int k = 0; k < 2; k++)
			op_pathconf(&S[k], obj == 0 ? &S[k].root : &S[k].fx.file, &r[k]);
		if (chk_status(&c, r, EXPECT(NFS3_OK))) {
			const PATHCONF3resok *d = &r[0].pathconf, *p = &r[1].pathconf;

			chk_num(&c, "linkmax", d->linkmax, p->linkmax);
			chk_num(&c, "name_max", d->name_max, p->name_max);
			chk_num(&c, "no_trunc", d->no_trunc, p->no_trunc);
			chk_num(&c, "chown_restricted", d->chown_restricted, p->chown_restricted);
			chk_num(&c, "case_insensitive", d->case_insensitive, p->case_insensitive);
			chk_num(&c, "case_preserving", d->case_preserving, p->case_preserving);
		}
		report("PATHCONF", obj == 0 ? "export root" : "fixture file", &c);
	}
	resv_free(r);
}

/* LOOKUP of the fixture: the handle must be the very same bytes both ways */
static void lookup_shared(const char *what, size_t off_parent, const char *name, size_t off_out,
                          int type)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++) {
		const struct fh *parent = (const struct fh *)((const char *)&S[k] + off_parent);

		op_lookup(&S[k], parent, name, &r[k]);
		if (r[k].stat == NFS3_OK)
			*(struct fh *)((char *)&S[k] + off_out) = r[k].fh;
	}
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_fh(&c, "handle", &r[0].fh, &r[1].fh);
		chk_attr(&c, r, A_STRICT);
		chk_attr_want(&c, r, type, -1);
	}
	report("LOOKUP", what, &c);
	resv_free(r);
}

#define SOFF(field) offsetof(struct side, field)

static void t_lookup(void)
{
	struct res r[2] = {0};
	struct chk c = {0};
	char longname[301];

	lookup_shared("fixture dir (handle identical)", SOFF(root), g_name, SOFF(fx.dir), NF3DIR);
	lookup_shared("fixture file (handle identical)", SOFF(fx.dir), "file", SOFF(fx.file),
	              NF3REG);
	lookup_shared("fixture big file (handle identical)", SOFF(fx.dir), "big", SOFF(fx.big),
	              NF3REG);
	lookup_shared("fixture subdir (handle identical)", SOFF(fx.dir), "dir", SOFF(fx.sub),
	              NF3DIR);
	lookup_shared("fixture symlink (handle identical)", SOFF(fx.dir), "link", SOFF(fx.link),
	              NF3LNK);
	lookup_shared("fixture 300-entry dir (handle identical)", SOFF(fx.dir), "many",
	              SOFF(fx.many), NF3DIR);

	for (int k = 0; k < 2; k++)
		op_lookup(&S[k], &S[k].fx.dir, "..", &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_fh(&c, "handle", &r[0].fh, &r[1].fh);
		chk_attr(&c, r, A_IDENT);
	}
	report("LOOKUP", "\"..\" of fixture dir", &c);

	/* the export's root is its own parent (a client's "cd .." there
	 * stays inside the export) */
	memset(&c, 0, sizeof(c));
	resv_free(r);
	for (int k = 0; k < 2; k++)
		op_lookup(&S[k], &S[k].root, "..", &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_fh(&c, "handle", &r[0].fh, &r[1].fh);
		for (int k = 0; k < 2; k++)
			if (!fh_eq(&r[k].fh, &S[k].root))
				chk_add(&c, "%s: not the root's handle", S[k].label);
		chk_attr(&c, r, A_IDENT);
	}
	report("LOOKUP", "\"..\" of the export's root (the root)", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_lookup(&S[k], &S[k].fx.dir, "no-such-name", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_NOENT));
	report("LOOKUP", "missing name -> NOENT", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_lookup(&S[k], &S[k].fx.file, "x", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_NOTDIR));
	report("LOOKUP", "in a regular file -> NOTDIR", &c);

	memset(&c, 0, sizeof(c));
	memset(longname, 'n', 300);
	longname[300] = 0;
	for (int k = 0; k < 2; k++)
		op_lookup(&S[k], &S[k].fx.dir, longname, &r[k]);
	/* The Linux server's XDR decoder refuses a name over NFS3_MAXNAMLEN
	 * (255) with the RPC error GARBAGE_ARGS: a server's answer too, and
	 * the proxy must give the same one. */
	if (r[0].stat == RES_RPCERR && strstr(r[0].err, "Garbage arguments") != NULL) {
		char a[300], b[300];

		if (r[1].stat != RES_RPCERR || strcmp(r[0].err, r[1].err) != 0)
			chk_add(&c, "status direct=%s proxy=%s", stat_str(&r[0], a, sizeof(a)),
			        stat_str(&r[1], b, sizeof(b)));
		else
			snprintf(c.note, sizeof(c.note), "%s", stat_str(&r[0], a, sizeof(a)));
	} else {
		chk_status(&c, r, EXPECT(NFS3ERR_NAMETOOLONG, NFS3ERR_NOENT));
	}
	report("LOOKUP", "300-byte name -> NAMETOOLONG|NOENT|GARBAGE_ARGS", &c);
	resv_free(r);
}

static void getattr_pair(const char *what, size_t off, unsigned flags, int type)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_getattr(&S[k], (const struct fh *)((const char *)&S[k] + off), &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_attr(&c, r, flags);
		chk_attr_want(&c, r, type, -1);
	}
	report("GETATTR", what, &c);
	resv_free(r);
}

static void t_getattr(void)
{
	struct res r[2] = {0};
	struct chk c = {0};
	struct fh bad = {.len = 32};

	getattr_pair("export root", SOFF(root), A_IDENT, NF3DIR);
	getattr_pair("fixture dir", SOFF(fx.dir), A_STRICT, NF3DIR);
	getattr_pair("fixture file", SOFF(fx.file), A_STRICT, NF3REG);
	getattr_pair("fixture big file", SOFF(fx.big), A_STRICT, NF3REG);
	getattr_pair("fixture subdir", SOFF(fx.sub), A_STRICT, NF3DIR);
	getattr_pair("fixture symlink", SOFF(fx.link), A_STRICT, NF3LNK);
	getattr_pair("fixture 300-entry dir", SOFF(fx.many), A_STRICT, NF3DIR);
	getattr_pair("scratch dir", SOFF(scratch), A_LOOSE, NF3DIR);

	memset(bad.data, 0x5a, bad.len);
	memcpy(bad.data, "nfs3cmp-garbage-handle", 22);
	for (int k = 0; k < 2; k++)
		op_getattr(&S[k], &bad, &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_BADHANDLE, NFS3ERR_STALE));
	report("GETATTR", "garbage handle -> BADHANDLE|STALE", &c);
	resv_free(r);
}

static void t_access(void)
{
	static const struct {
		const char *what;
		size_t off;
	} objs[] = {
	    {"export root", SOFF(root)},        {"fixture dir", SOFF(fx.dir)},
	    {"fixture file", SOFF(fx.file)},    {"fixture subdir (0750)", SOFF(fx.sub)},
	    {"fixture symlink", SOFF(fx.link)}, {"scratch dir", SOFF(scratch)},
	};
	struct res r[2] = {0};
	const uint32_t all = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
	                     ACCESS3_DELETE | ACCESS3_EXECUTE;

	for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
		struct chk c = {0};
		char what[128];

		for (int k = 0; k < 2; k++)
			op_access(&S[k], (const struct fh *)((const char *)&S[k] + objs[i].off),
			          all, &r[k]);
		if (chk_status(&c, r, EXPECT(NFS3_OK))) {
			if (r[0].access != r[1].access)
				chk_add(&c, "access direct=%#x proxy=%#x", r[0].access,
				        r[1].access);
			chk_attr(&c, r, i == 0 ? A_IDENT : i == 5 ? A_LOOSE : A_STRICT);
		}
		snprintf(what, sizeof(what), "%s (all 6 bits)", objs[i].what);
		report("ACCESS", what, &c);
	}
	resv_free(r);
}

static void t_readlink(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_readlink(&S[k], &S[k].fx.link, &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		if (strcmp((char *)r[0].data, (char *)r[1].data) != 0)
			chk_add(&c, "target direct=\"%s\" proxy=\"%s\"", r[0].data, r[1].data);
		else if (strcmp((char *)r[0].data, "file") != 0)
			chk_add(&c, "target both=\"%s\", expected \"file\"", r[0].data);
	}
	report("READLINK", "fixture symlink", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_readlink(&S[k], &S[k].fx.file, &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_INVAL));
	report("READLINK", "of a regular file -> INVAL", &c);
	resv_free(r);
}

/* one READ on both sides; data compared with each other and the pattern */
static void read_pair(const char *what, size_t off, uint64_t offset, uint32_t count, uint64_t size,
                      uint32_t seed, const struct fh *fhs)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_read(&S[k], fhs ? &fhs[k] : (const struct fh *)((const char *)&S[k] + off),
		        offset, count, &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		uint64_t want = offset >= size ? 0 : size - offset < count ? size - offset : count;
		bool want_eof = offset + want >= size;

		chk_want(&c, "count", r[0].count, r[1].count, want);
		chk_want(&c, "eof", r[0].eof, r[1].eof, want_eof);
		chk_num(&c, "data length", r[0].len, r[1].len);
		if (r[0].len == r[1].len && memcmp(r[0].data, r[1].data, r[0].len) != 0)
			chk_add(&c, "data differs");
		if (!c.bad && r[0].len) {
			unsigned char *exp = xcalloc(r[0].len, 1);

			pat_fill(exp, offset, r[0].len, seed);
			if (memcmp(exp, r[0].data, r[0].len) != 0)
				chk_add(&c, "data (same on both) is not what was written");
			free(exp);
		}
	}
	report("READ", what, &c);
	resv_free(r);
}

static void t_read(void)
{
	struct res r[2] = {0};
	struct chk c = {0};
	char what[160];
	uint64_t off;

	read_pair("fixture file, whole", SOFF(fx.file), 0, 65536, SMALL_SIZE, 1, NULL);
	read_pair("fixture file, middle range", SOFF(fx.file), 1000, 100, SMALL_SIZE, 1, NULL);
	for (off = 0; off < BIG_SIZE; off += g_xfer) {
		snprintf(what, sizeof(what), "fixture big file chunk [%" PRIu64 ",+%u) of %u", off,
		         g_xfer, BIG_SIZE);
		read_pair(what, SOFF(fx.big), off, g_xfer, BIG_SIZE, 2, NULL);
	}
	read_pair("fixture big file past EOF -> count 0, eof", SOFF(fx.big), BIG_SIZE + 4096, 4096,
	          BIG_SIZE, 2, NULL);

	for (int k = 0; k < 2; k++)
		op_read(&S[k], &S[k].fx.dir, 0, 4096, &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_ISDIR, NFS3ERR_INVAL));
	report("READ", "of a directory -> ISDIR|INVAL", &c);
	resv_free(r);
}

/* run a CREATE/MKDIR/SYMLINK/MKNOD-style call on both sides; keep handles */
static void created_pair(const char *proc, const char *what, struct res *r, const int *want,
                         int type, int mode, size_t off_out)
{
	struct chk c = {0};

	if (chk_status(&c, r, want)) {
		for (int k = 0; k < 2; k++) {
			if (!r[k].has_fh) {
				chk_add(&c, "%s: no handle returned", S[k].label);
				continue;
			}
			if (off_out)
				*(struct fh *)((char *)&S[k] + off_out) = r[k].fh;
		}
		chk_attr(&c, r, A_LOOSE);
		chk_attr_want(&c, r, type, mode);
		/* the caller's AUTH_SYS credential made it to the server */
		if (r[0].has_attr && r[1].has_attr) {
			chk_want(&c, "uid", r[0].attr.uid, r[1].attr.uid, g_uid);
			chk_want(&c, "gid", r[0].attr.gid, r[1].attr.gid, g_gid);
		}
	}
	report(proc, what, &c);
}

static void t_create(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_create(&S[k], &S[k].scratch, "f", UNCHECKED, 0644, &r[k]);
	created_pair("CREATE", "UNCHECKED file mode 0644", r, EXPECT(NFS3_OK), NF3REG, 0644,
	             SOFF(f));

	for (int k = 0; k < 2; k++)
		op_create(&S[k], &S[k].scratch, "f", GUARDED, 0644, &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_EXIST));
	report("CREATE", "GUARDED existing name -> EXIST", &c);

	for (int k = 0; k < 2; k++)
		op_create(&S[k], &S[k].scratch, "x", EXCLUSIVE, 0, &r[k]);
	memset(&c, 0, sizeof(c));
	if (chk_status(&c, r, EXPECT(NFS3_OK)))
		chk_attr(&c, r, A_TYPE | A_NLINK | A_SIZE);
	report("CREATE", "EXCLUSIVE new file", &c);

	/* a retransmitted EXCLUSIVE create with the same verifier succeeds */
	for (int k = 0; k < 2; k++)
		op_create(&S[k], &S[k].scratch, "x", EXCLUSIVE, 0, &r[k]);
	memset(&c, 0, sizeof(c));
	chk_status(&c, r, EXPECT(NFS3_OK));
	report("CREATE", "EXCLUSIVE again, same verifier -> OK", &c);

	for (int k = 0; k < 2; k++)
		op_create(&S[k], &S[k].scratch, "o", UNCHECKED, 0640, &r[k]);
	created_pair("CREATE", "UNCHECKED file mode 0640", r, EXPECT(NFS3_OK), NF3REG, 0640,
	             SOFF(o));

	for (int k = 0; k < 2; k++)
		op_create(&S[k], &S[k].fx.file, "x", UNCHECKED, 0644, &r[k]);
	memset(&c, 0, sizeof(c));
	chk_status(&c, r, EXPECT(NFS3ERR_NOTDIR));
	report("CREATE", "in a regular file -> NOTDIR", &c);
	resv_free(r);
}

static void getattr_cmp(const char *proc, const char *what, size_t off, unsigned flags, int mode,
                        int64_t size)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_getattr(&S[k], (const struct fh *)((const char *)&S[k] + off), &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_attr(&c, r, flags);
		chk_attr_want(&c, r, -1, mode);
		if (size >= 0)
			chk_want(&c, "size", r[0].attr.size, r[1].attr.size, (uint64_t)size);
	}
	report(proc, what, &c);
	resv_free(r);
}

static void t_write_commit(void)
{
	struct res r[2] = {0}, w[2] = {0};
	struct chk c = {0};
	unsigned char *buf = xcalloc(g_xfer > 4096 ? g_xfer : 4096, 1);
	char what[160];
	struct fh fhs[2];

	/* UNSTABLE write, then COMMIT: same verifier everywhere */
	pat_fill(buf, 0, 4096, 3);
	for (int k = 0; k < 2; k++)
		op_write(&S[k], &S[k].f, 0, buf, 4096, UNSTABLE, &w[k]);
	if (chk_status(&c, w, EXPECT(NFS3_OK))) {
		chk_want(&c, "count", w[0].count, w[1].count, 4096);
		chk_num(&c, "committed", (uint64_t)w[0].committed, (uint64_t)w[1].committed);
		chk_bytes(&c, "verf", w[0].verf, 8, w[1].verf, 8);
		chk_attr(&c, w, A_LOOSE);
	}
	report("WRITE", "UNSTABLE 4 KiB (count, committed, verifier)", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_commit(&S[k], &S[k].f, 0, 0, &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_bytes(&c, "verf", r[0].verf, 8, r[1].verf, 8);
		for (int k = 0; k < 2; k++)
			if (w[k].stat == NFS3_OK && memcmp(w[k].verf, r[k].verf, 8) != 0)
				chk_add(&c, "%s: COMMIT verifier differs from WRITE verifier",
				        S[k].label);
	}
	report("COMMIT", "after UNSTABLE write (verifier same as WRITE, both paths)", &c);

	for (int k = 0; k < 2; k++)
		fhs[k] = S[k].f;
	read_pair("scratch file read back after COMMIT", 0, 0, 8192, 4096, 3, fhs);

	memset(&c, 0, sizeof(c));
	pat_fill(buf, 65536, 512, 3);
	for (int k = 0; k < 2; k++)
		op_write(&S[k], &S[k].f, 65536, buf, 512, FILE_SYNC, &w[k]);
	if (chk_status(&c, w, EXPECT(NFS3_OK))) {
		chk_want(&c, "count", w[0].count, w[1].count, 512);
		chk_want(&c, "committed", (uint64_t)w[0].committed, (uint64_t)w[1].committed,
		         FILE_SYNC);
		chk_bytes(&c, "verf", w[0].verf, 8, w[1].verf, 8);
		chk_attr(&c, w, A_LOOSE);
	}
	report("WRITE", "FILE_SYNC 512 B at 64 KiB (sparse extend)", &c);
	getattr_cmp("GETATTR", "scratch file after sparse write", SOFF(f), A_LOOSE, 0644,
	            65536 + 512);
	read_pair("scratch file hole reads as zeros", 0, 8192, 4096, 65536 + 512, 0, fhs);

	/* multi-chunk write of a 3 MiB file, UNSTABLE, COMMIT, read back */
	for (int k = 0; k < 2; k++)
		op_create(&S[k], &S[k].scratch, "big", UNCHECKED, 0644, &r[k]);
	created_pair("CREATE", "scratch big file", r, EXPECT(NFS3_OK), NF3REG, 0644, SOFF(big));
	for (uint64_t off = 0; off < BIG_SIZE; off += g_xfer) {
		memset(&c, 0, sizeof(c));
		pat_fill(buf, off, g_xfer, 4);
		for (int k = 0; k < 2; k++)
			op_write(&S[k], &S[k].big, off, buf, g_xfer, UNSTABLE, &w[k]);
		if (chk_status(&c, w, EXPECT(NFS3_OK))) {
			chk_want(&c, "count", w[0].count, w[1].count, g_xfer);
			chk_num(&c, "committed", (uint64_t)w[0].committed,
			        (uint64_t)w[1].committed);
			chk_bytes(&c, "verf", w[0].verf, 8, w[1].verf, 8);
		}
		snprintf(what, sizeof(what), "UNSTABLE chunk [%" PRIu64 ",+%u) of %u", off, g_xfer,
		         BIG_SIZE);
		report("WRITE", what, &c);
	}
	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_commit(&S[k], &S[k].big, 0, 0, &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_bytes(&c, "verf", r[0].verf, 8, r[1].verf, 8);
		for (int k = 0; k < 2; k++)
			if (w[k].stat == NFS3_OK && memcmp(w[k].verf, r[k].verf, 8) != 0)
				chk_add(&c, "%s: COMMIT verifier differs from WRITE verifier",
				        S[k].label);
	}
	report("COMMIT", "scratch big file", &c);
	for (int k = 0; k < 2; k++)
		fhs[k] = S[k].big;
	for (uint64_t off = 0; off < BIG_SIZE; off += g_xfer) {
		snprintf(what, sizeof(what), "scratch big file chunk [%" PRIu64 ",+%u) read back",
		         off, g_xfer);
		read_pair(what, 0, off, g_xfer, BIG_SIZE, 4, fhs);
	}
	read_pair("scratch big file past EOF -> count 0, eof", 0, BIG_SIZE, g_xfer, BIG_SIZE, 4,
	          fhs);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_write(&S[k], &S[k].scratch, 0, buf, 16, FILE_SYNC, &w[k]);
	chk_status(&c, w, EXPECT(NFS3ERR_ISDIR, NFS3ERR_INVAL));
	report("WRITE", "to a directory -> ISDIR|INVAL", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_commit(&S[k], &S[k].scratch, 0, 0, &r[k]);
	chk_status(&c, r, EXPECT_ANY);
	report("COMMIT", "of a directory (same status)", &c);

	free(buf);
	resv_free(r);
	resv_free(w);
}

static void setattr_pair(const char *what, size_t off, const sattr3 *sa, const nfstime3 *guard,
                         const int *want)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_setattr(&S[k], (const struct fh *)((const char *)&S[k] + off), sa, guard, &r[k]);
	if (chk_status(&c, r, want))
		chk_attr(&c, r, A_LOOSE);
	report("SETATTR", what, &c);
	resv_free(r);
}

static void t_setattr(void)
{
	sattr3 sa;
	nfstime3 t = {1234567890, 0}, bogus = {1, 2};
	struct res r[2] = {0};
	struct chk c = {0};

	sattr_mode(&sa, 0600);
	setattr_pair("mode 0600", SOFF(f), &sa, NULL, EXPECT(NFS3_OK));
	getattr_cmp("GETATTR", "after SETATTR mode", SOFF(f), A_LOOSE, 0600, -1);

	memset(&sa, 0, sizeof(sa));
	sa.size.set_it = 1;
	sa.size.set_size3_u.size = 100;
	setattr_pair("size 100 (truncate)", SOFF(f), &sa, NULL, EXPECT(NFS3_OK));
	getattr_cmp("GETATTR", "after SETATTR size", SOFF(f), A_LOOSE, 0600, 100);

	memset(&sa, 0, sizeof(sa));
	sa.atime.set_it = SET_TO_CLIENT_TIME;
	sa.atime.set_atime_u.atime = t;
	sa.mtime.set_it = SET_TO_CLIENT_TIME;
	sa.mtime.set_mtime_u.mtime = t;
	setattr_pair("atime+mtime to client time", SOFF(f), &sa, NULL, EXPECT(NFS3_OK));
	for (int k = 0; k < 2; k++)
		op_getattr(&S[k], &S[k].f, &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_attr(&c, r, A_LOOSE | A_MTIME);
		chk_want(&c, "mtime.seconds", r[0].attr.mtime.seconds, r[1].attr.mtime.seconds,
		         t.seconds);
		chk_want(&c, "atime.seconds", r[0].attr.atime.seconds, r[1].attr.atime.seconds,
		         t.seconds);
	}
	report("GETATTR", "after SETATTR times", &c);

	memset(&sa, 0, sizeof(sa));
	sa.mtime.set_it = SET_TO_SERVER_TIME;
	setattr_pair("mtime to server time", SOFF(f), &sa, NULL, EXPECT(NFS3_OK));

	sattr_mode(&sa, 0644);
	setattr_pair("guarded with wrong ctime -> NOT_SYNC", SOFF(f), &sa, &bogus,
	             EXPECT(NFS3ERR_NOT_SYNC));

	memset(&sa, 0, sizeof(sa));
	sa.uid.set_it = 1;
	sa.uid.set_uid3_u.uid = g_uid + 4242;
	sa.gid.set_it = 1;
	sa.gid.set_gid3_u.gid = g_gid + 4242;
	setattr_pair("chown to another uid/gid (same status both)", SOFF(o), &sa, NULL,
	             g_uid == 0 ? EXPECT(NFS3_OK) : EXPECT_ANY);
	getattr_cmp("GETATTR", "after SETATTR chown", SOFF(o), A_LOOSE, -1, -1);
	resv_free(r);
}

static void t_mkdir(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_mkdir(&S[k], &S[k].scratch, "d", 0755, &r[k]);
	created_pair("MKDIR", "dir mode 0755", r, EXPECT(NFS3_OK), NF3DIR, 0755, SOFF(d));
	for (int k = 0; k < 2; k++)
		op_create(&S[k], &S[k].d, "inner", UNCHECKED, 0644, &r[k]);
	created_pair("CREATE", "file inside new dir", r, EXPECT(NFS3_OK), NF3REG, 0644, 0);
	for (int k = 0; k < 2; k++)
		op_mkdir(&S[k], &S[k].scratch, "e", 0700, &r[k]);
	created_pair("MKDIR", "dir mode 0700", r, EXPECT(NFS3_OK), NF3DIR, 0700, SOFF(e));

	for (int k = 0; k < 2; k++)
		op_mkdir(&S[k], &S[k].scratch, "d", 0755, &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_EXIST));
	report("MKDIR", "existing name -> EXIST", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_mkdir(&S[k], &S[k].scratch, "f", 0755, &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_EXIST));
	report("MKDIR", "name of an existing file -> EXIST", &c);
	getattr_cmp("GETATTR", "scratch dir after MKDIRs (nlink)", SOFF(scratch), A_LOOSE, -1, -1);
	resv_free(r);
}

static void t_symlink(void)
{
	static const char target[] = "some/where/../target";
	struct res r[2] = {0};
	struct chk c = {0};
	struct fh s[2];

	for (int k = 0; k < 2; k++) {
		op_symlink(&S[k], &S[k].scratch, "s", target, &r[k]);
		s[k] = r[k].fh;
	}
	created_pair("SYMLINK", "new symlink", r, EXPECT(NFS3_OK), NF3LNK, -1, 0);
	if (r[0].stat == NFS3_OK && r[1].stat == NFS3_OK) {
		for (int k = 0; k < 2; k++)
			op_readlink(&S[k], &s[k], &r[k]);
		if (chk_status(&c, r, EXPECT(NFS3_OK))) {
			if (strcmp((char *)r[0].data, (char *)r[1].data) != 0)
				chk_add(&c, "target direct=\"%s\" proxy=\"%s\"", r[0].data,
				        r[1].data);
			else if (strcmp((char *)r[0].data, target) != 0)
				chk_add(&c, "target both=\"%s\", expected \"%s\"", r[0].data,
				        target);
			chk_attr(&c, r, A_LOOSE);
		}
		report("READLINK", "new symlink", &c);
	}
	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_symlink(&S[k], &S[k].scratch, "s", "other", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_EXIST));
	report("SYMLINK", "existing name -> EXIST", &c);
	resv_free(r);
}

static void t_mknod(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_mknod(&S[k], &S[k].scratch, "p", NF3FIFO, 0644, 0, 0, &r[k]);
	created_pair("MKNOD", "FIFO", r, EXPECT(NFS3_OK), NF3FIFO, 0644, 0);
	for (int k = 0; k < 2; k++)
		op_mknod(&S[k], &S[k].scratch, "k", NF3SOCK, 0600, 0, 0, &r[k]);
	created_pair("MKNOD", "socket", r, EXPECT(NFS3_OK), NF3SOCK, 0600, 0);
	for (int k = 0; k < 2; k++)
		op_mknod(&S[k], &S[k].scratch, "c", NF3CHR, 0600, 1, 3, &r[k]);
	created_pair("MKNOD", "char device 1,3 (rdev)", r,
	             g_uid == 0 ? EXPECT(NFS3_OK) : EXPECT_ANY, NF3CHR, 0600, 0);
	for (int k = 0; k < 2; k++)
		op_mknod(&S[k], &S[k].scratch, "b", NF3BLK, 0600, 7, 200, &r[k]);
	created_pair("MKNOD", "block device 7,200 (rdev)", r,
	             g_uid == 0 ? EXPECT(NFS3_OK) : EXPECT_ANY, NF3BLK, 0600, 0);

	for (int k = 0; k < 2; k++)
		op_mknod(&S[k], &S[k].scratch, "bad", NF3REG, 0644, 0, 0, &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_BADTYPE));
	report("MKNOD", "type NF3REG -> BADTYPE", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_mknod(&S[k], &S[k].scratch, "p", NF3FIFO, 0644, 0, 0, &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_EXIST));
	report("MKNOD", "existing name -> EXIST", &c);
	resv_free(r);
}

static void t_link(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_link(&S[k], &S[k].f, &S[k].scratch, "hl", &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_attr(&c, r, A_LOOSE);
		if (r[0].has_attr && r[1].has_attr)
			chk_want(&c, "nlink", r[0].attr.nlink, r[1].attr.nlink, 2);
	}
	report("LINK", "hard link to scratch file", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_lookup(&S[k], &S[k].scratch, "hl", &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_attr(&c, r, A_LOOSE);
		for (int k = 0; k < 2; k++)
			if (!fh_eq(&r[k].fh, &S[k].f))
				chk_add(&c, "%s: link has a different handle than its target",
				        S[k].label);
	}
	report("LOOKUP", "hard link (same handle as target)", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_link(&S[k], &S[k].f, &S[k].scratch, "hl", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_EXIST));
	report("LINK", "existing name -> EXIST", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_link(&S[k], &S[k].d, &S[k].scratch, "dl", &r[k]);
	/* nfs-ganesha answers this NFS3ERR_BADTYPE over v3 but NFS4ERR_ISDIR
	 * over v4 (RFC 7530's error for it), which the proxy passes on as
	 * NFS3ERR_ISDIR (RFC 1813 lists neither for LINK; a v3 client gets
	 * EISDIR): the server's two answers differ, not the proxy's */
	if (g_v4 && r[0].stat == NFS3ERR_BADTYPE && r[1].stat == NFS3ERR_ISDIR)
		snprintf(c.note, sizeof(c.note),
		         "direct BADTYPE, proxy ISDIR (the server's v4 answer)");
	else
		chk_status(&c, r, EXPECT_ANY);
	report("LINK", "of a directory (same status)", &c);
	resv_free(r);
}

static void t_rename(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_create(&S[k], &S[k].scratch, "r1", UNCHECKED, 0644, &r[k]);
	created_pair("CREATE", "file to rename", r, EXPECT(NFS3_OK), NF3REG, 0644, 0);

	for (int k = 0; k < 2; k++)
		op_rename(&S[k], &S[k].scratch, "r1", &S[k].scratch, "r2", &r[k]);
	chk_status(&c, r, EXPECT(NFS3_OK));
	report("RENAME", "r1 -> r2", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_lookup(&S[k], &S[k].scratch, "r1", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_NOENT));
	report("LOOKUP", "old name after RENAME -> NOENT", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_lookup(&S[k], &S[k].scratch, "r2", &r[k]);
	if (chk_status(&c, r, EXPECT(NFS3_OK)))
		chk_attr(&c, r, A_LOOSE);
	report("LOOKUP", "new name after RENAME", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_rename(&S[k], &S[k].scratch, "r2", &S[k].d, "moved", &r[k]);
	chk_status(&c, r, EXPECT(NFS3_OK));
	report("RENAME", "into a subdirectory", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_rename(&S[k], &S[k].d, "moved", &S[k].scratch, "x", &r[k]);
	chk_status(&c, r, EXPECT(NFS3_OK));
	report("RENAME", "back, replacing an existing file", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_rename(&S[k], &S[k].scratch, "no-such-name", &S[k].scratch, "y", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_NOENT));
	report("RENAME", "missing source -> NOENT", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_rename(&S[k], &S[k].scratch, "e", &S[k].scratch, "d", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_EXIST, NFS3ERR_NOTEMPTY));
	report("RENAME", "dir onto non-empty dir -> EXIST|NOTEMPTY", &c);
	resv_free(r);
}

static void t_remove(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_create(&S[k], &S[k].scratch, "rm", UNCHECKED, 0644, &r[k]);
	created_pair("CREATE", "file to remove", r, EXPECT(NFS3_OK), NF3REG, 0644, SOFF(rmfh));

	for (int k = 0; k < 2; k++)
		op_remove(&S[k], &S[k].scratch, "rm", &r[k]);
	chk_status(&c, r, EXPECT(NFS3_OK));
	report("REMOVE", "file", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_getattr(&S[k], &S[k].rmfh, &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_STALE));
	report("GETATTR", "handle of removed file -> STALE", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_remove(&S[k], &S[k].scratch, "rm", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_NOENT));
	report("REMOVE", "missing name -> NOENT", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_remove(&S[k], &S[k].scratch, "d", &r[k]);
	chk_status(&c, r, EXPECT_ANY);
	report("REMOVE", "of a non-empty directory (same status)", &c);
	resv_free(r);
}

static void t_rmdir(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++)
		op_rmdir(&S[k], &S[k].scratch, "e", &r[k]);
	chk_status(&c, r, EXPECT(NFS3_OK));
	report("RMDIR", "empty dir", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_rmdir(&S[k], &S[k].scratch, "d", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_NOTEMPTY));
	report("RMDIR", "non-empty dir -> NOTEMPTY", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_rmdir(&S[k], &S[k].scratch, "e", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_NOENT));
	report("RMDIR", "missing name -> NOENT", &c);

	memset(&c, 0, sizeof(c));
	for (int k = 0; k < 2; k++)
		op_rmdir(&S[k], &S[k].scratch, "f", &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_NOTDIR));
	report("RMDIR", "of a regular file -> NOTDIR", &c);
	resv_free(r);
}

static void listing_pair(const char *proc, const char *what, size_t off, bool plus, bool shared,
                         uint32_t count, uint32_t maxcount, int expect_named, bool multi,
                         const char *const *must_have)
{
	struct listing l[2];
	struct res r[2] = {0};
	struct chk c = {0};

	for (int k = 0; k < 2; k++) {
		list_dir(&S[k], (const struct fh *)((const char *)&S[k] + off), plus, count,
		         maxcount, &l[k]);
		r[k].stat = l[k].stat;
		snprintf(r[k].err, sizeof(r[k].err), "%s", l[k].err);
	}
	if (chk_status(&c, r, EXPECT(NFS3_OK))) {
		chk_listing(&c, l, plus, shared);
		if (expect_named >= 0) {
			int n = 0;

			for (size_t i = 0; i < l[0].n; i++)
				n += strcmp(l[0].e[i].name, ".") && strcmp(l[0].e[i].name, "..");
			if (n != expect_named)
				chk_add(&c, "%d names besides . and .., expected %d", n,
				        expect_named);
		}
		for (int k = 0; k < 2 && multi; k++)
			if (l[k].calls < 2)
				chk_add(&c, "%s: only %u call(s), cookies not exercised",
				        S[k].label, l[k].calls);
		/* --v4-upstream: the proxy's pages are full (it asks the v4
		 * server for more than the count and trims), so it needs no
		 * more calls than the server's v3 (READDIRPLUS: an eighth
		 * more, its handles being the v4 export's) */
		if (g_v4 && multi && l[1].calls > l[0].calls + (plus ? l[0].calls / 8 : 0))
			chk_add(&c, "proxy %u calls, direct %u: pages short of the count",
			        l[1].calls, l[0].calls);
		for (const char *const *m = must_have; m && *m; m++) {
			struct dent key;

			snprintf(key.name, sizeof(key.name), "%s", *m);

			if (l[0].n == 0 || !bsearch(&key, l[0].e, l[0].n, sizeof(key), dent_cmp))
				chk_add(&c, "%s missing on both", *m);
		}
		snprintf(c.note, sizeof(c.note), "%zu/%zu entries in %u/%u calls", l[0].n, l[1].n,
		         l[0].calls, l[1].calls);
	}
	report(proc, what, &c);
	for (int k = 0; k < 2; k++)
		listing_free(&l[k]);
}

/* what the scratch dirs hold by the time they are listed */
static const char *const scratch_names[] = {"f", "o", "x", "big", "d", "s", "p", "k", "hl", NULL};

/* The first page of the fixture dir (5 names and . and ..) at every count
 * from lo to hi in steps of 2: the proxy must answer each as the server
 * does (the same status; on NFS3_OK the same entries, cookies and eof),
 * the small ones where fewer entries fit than the directory has and the
 * counts where the listing's end just fits or not (nfs-ganesha 4.3 fails
 * those where it has no room left for the list's end and eof:
 * NFS3ERR_SERVERFAULT, directly too). */
/* v3's bytes of a READDIR(PLUS) reply holding r's entries (the directory's
 * attributes counted as present) */
static uint32_t page_bytes(const struct res *r, bool plus)
{
	uint32_t n = 4 + 4 + 84 + 8 + 4 + 4;

	for (size_t i = 0; i < r->nents; i++) {
		const struct dent *e = &r->ents[i];

		n += 4 + 8 + 4 + (((uint32_t)strlen(e->name) + 3) & ~3u) + 8;
		if (plus)
			n += 4 + (e->has_attr ? 84 : 0) + 4 +
			     (e->has_fh ? 4 + ((e->fh.len + 3) & ~3u) : 0);
	}
	return n;
}

/* --v4-upstream: the proxy's first page at count mc (p) on its own, against
 * the server's whole listing (all): NFS3_OK with the listing's first
 * entries (names and cookies) in no more than mc bytes, at least one, eof
 * only when that is all of it; NFS3ERR_TOOSMALL only when "." alone does
 * not fit. 1: a page; 0: TOOSMALL; -1: the server's fault passed on. */
static int page_alone(struct chk *one, const struct res *p, const struct res *all, bool plus,
                      uint32_t mc)
{
	struct res dot = *all;
	char b[300];

	if (p->stat == NFS3ERR_SERVERFAULT)
		return -1; /* see first_pages */
	if (p->stat == NFS3ERR_TOOSMALL) {
		dot.nents = 1;
		if (page_bytes(&dot, plus) <= mc)
			chk_add(one, "proxy NFS3ERR_TOOSMALL, but \".\" fits (%u bytes)",
			        page_bytes(&dot, plus));
		return 0;
	}
	if (p->stat != NFS3_OK) {
		chk_add(one, "proxy %s", stat_str(p, b, sizeof(b)));
		return 0;
	}
	if (p->nents > all->nents) {
		chk_add(one, "proxy %zu entries, the directory %zu", p->nents, all->nents);
		return 1;
	}
	for (size_t i = 0; i < p->nents; i++) {
		if (strcmp(p->ents[i].name, all->ents[i].name) != 0)
			chk_add(one, "entry %zu server=%s proxy=%s", i, all->ents[i].name,
			        p->ents[i].name);
		chk_num(one, "cookie", all->ents[i].cookie, p->ents[i].cookie);
	}
	if (page_bytes(p, plus) > mc)
		chk_add(one, "proxy page of %u bytes", page_bytes(p, plus));
	if (p->eof != (p->nents == all->nents))
		chk_add(one, "proxy eof %d with %zu of %zu entries", p->eof, p->nents, all->nents);
	if (p->nents == 0 && !p->eof)
		chk_add(one, "proxy: an empty page without eof (a client could not go on)");
	/* the page is full: the next entry would not fit the count (the
	 * proxy asks the v4 server for more than the count, its entries
	 * being bigger than v3's, and trims). Sized as the page's last
	 * entry: attributes and a handle as long, for READDIRPLUS. */
	if (!p->eof && p->nents > 0 && p->nents < all->nents) {
		const struct dent *last = &p->ents[p->nents - 1];
		uint32_t next =
		    4 + 8 + 4 + (((uint32_t)strlen(all->ents[p->nents].name) + 3) & ~3u) + 8;

		if (plus)
			next += 4 + 84 + 4 + 4 + (last->has_fh ? ((last->fh.len + 3) & ~3u) : 64);
		if (page_bytes(p, plus) + next <= mc)
			chk_add(one,
			        "proxy page of %zu entries, %u bytes: the next (%u bytes) fits",
			        p->nents, page_bytes(p, plus), next);
	}
	return 1;
}

static void first_pages(const char *proc, bool plus, uint32_t lo, uint32_t hi)
{
	static const unsigned char zero[8];
	struct chk c = {0};
	unsigned n = 0, ok = 0, short_pages = 0, errs = 0;
	uint32_t first_err = 0;
	char what[160], err[64] = "";
	struct res all = {0};
	unsigned faults = 0;

	if (g_v4) {
		/* the server's whole first page, what the proxy's are prefixes of */
		if (plus)
			op_readdirplus(&S[0], &S[0].fx.dir, 0, zero, 65536, 65536, &all);
		else
			op_readdir(&S[0], &S[0].fx.dir, 0, zero, 65536, &all);
		if (all.stat != NFS3_OK || !all.eof)
			chk_add(&c, "the server's whole listing: %s, eof %d",
			        stat_str(&all, err, sizeof(err)), all.eof);
	}
	for (uint32_t mc = lo; g_v4 && mc <= hi && !c.bad; mc += 2) {
		struct res r = {0};
		struct chk one = {0};
		int k;

		if (plus)
			op_readdirplus(&S[1], &S[1].fx.dir, 0, zero, mc, mc, &r);
		else
			op_readdir(&S[1], &S[1].fx.dir, 0, zero, mc, &r);
		n++;
		k = page_alone(&one, &r, &all, plus, mc);
		ok += k > 0;
		short_pages += k > 0 && !r.eof;
		faults += k < 0;
		errs += k == 0;
		if (one.bad)
			chk_add(&c, "count %u: %s", mc, one.buf);
		res_free(&r);
	}
	/* nfs-ganesha fails a READDIR over v4 as over v3 where the listing's
	 * end just does not fit ("Encode of EOD failed": NFS4ERR_SERVERFAULT);
	 * the proxy asks once more with a bigger maxcount and trims: never
	 * passed on */
	if (g_v4 && faults > 0)
		chk_add(&c, "%u of %u counts answered NFS3ERR_SERVERFAULT", faults, n);
	if (g_v4) {
		res_free(&all);
		if (!c.bad && short_pages == 0)
			chk_add(&c, "no count gave a page short of the whole directory");
		snprintf(c.note, sizeof(c.note),
		         "%u counts: %u NFS3_OK (%u without eof), %u TOOSMALL, %u server faults", n,
		         ok, short_pages, errs, faults);
		snprintf(what, sizeof(what),
		         "first page of the fixture dir at every count %u..%u (proxy on its own)",
		         lo, hi);
		report(proc, what, &c);
		return;
	}
	for (uint32_t mc = lo; mc <= hi && !c.bad; mc += 2) {
		struct res r[2] = {0};
		struct chk one = {0};

		for (int k = 0; k < 2; k++) {
			if (plus)
				op_readdirplus(&S[k], &S[k].fx.dir, 0, zero, mc, mc, &r[k]);
			else
				op_readdir(&S[k], &S[k].fx.dir, 0, zero, mc, &r[k]);
		}
		n++;
		if (chk_status(&one, r, NULL)) {
			ok++;
			short_pages += !r[0].eof;
			chk_num(&one, "entries", r[0].nents, r[1].nents);
			chk_num(&one, "eof", r[0].eof, r[1].eof);
			for (size_t i = 0; !one.bad && i < r[0].nents; i++) {
				if (strcmp(r[0].ents[i].name, r[1].ents[i].name) != 0)
					chk_add(&one, "entry %zu direct=%s proxy=%s", i,
					        r[0].ents[i].name, r[1].ents[i].name);
				chk_num(&one, "cookie", r[0].ents[i].cookie, r[1].ents[i].cookie);
			}
		} else if (!one.bad) {
			errs++;
			if (first_err == 0) {
				first_err = mc;
				stat_str(&r[0], err, sizeof(err));
			}
		}
		if (one.bad)
			chk_add(&c, "count %u: %s", mc, one.buf);
		resv_free(r);
	}
	if (!c.bad && short_pages == 0)
		chk_add(&c, "no count gave a page short of the whole directory");
	snprintf(c.note, sizeof(c.note),
	         "%u counts: %u NFS3_OK (%u without eof), %u errors on both (first at %u: %s)", n,
	         ok, short_pages, errs, first_err, err);
	snprintf(what, sizeof(what), "first page of the fixture dir at every count %u..%u", lo,
	         hi);
	report(proc, what, &c);
}

static void t_readdir(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	listing_pair("READDIR", "fixture dir (names, fileids)", SOFF(fx.dir), false, true, 8192, 0,
	             5, false, NULL);
	listing_pair("READDIR", "fixture 300-entry dir, 2 KiB replies (cookies, cookieverf)",
	             SOFF(fx.many), false, true, 2048, 0, MANY_COUNT, true, NULL);
	listing_pair("READDIR", "scratch dir (names)", SOFF(scratch), false, false, 8192, 0, -1,
	             false, scratch_names);
	first_pages("READDIR", false, 100, 800);
	for (int k = 0; k < 2; k++)
		op_readdir(&S[k], &S[k].fx.file, 0, (const unsigned char *)"\0\0\0\0\0\0\0\0", 4096,
		           &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_NOTDIR));
	report("READDIR", "of a regular file -> NOTDIR", &c);
	resv_free(r);
}

static void t_readdirplus(void)
{
	struct res r[2] = {0};
	struct chk c = {0};

	listing_pair("READDIRPLUS", "fixture dir (attributes, handles identical)", SOFF(fx.dir),
	             true, true, 8192, 65536, 5, false, NULL);
	listing_pair("READDIRPLUS",
	             "fixture 300-entry dir, small replies (cookies, attributes, handles)",
	             SOFF(fx.many), true, true, 1024, 4096, MANY_COUNT, true, NULL);
	listing_pair("READDIRPLUS", "scratch dir (names, attributes)", SOFF(scratch), true, false,
	             8192, 65536, -1, false, scratch_names);
	first_pages("READDIRPLUS", true, 200, 2000);
	for (int k = 0; k < 2; k++)
		op_readdirplus(&S[k], &S[k].fx.file, 0, (const unsigned char *)"\0\0\0\0\0\0\0\0",
		               4096, 65536, &r[k]);
	chk_status(&c, r, EXPECT(NFS3ERR_NOTDIR));
	report("READDIRPLUS", "of a regular file -> NOTDIR", &c);
	resv_free(r);
}

static void t_coverage(void)
{
	struct chk c = {0};

	for (int p = 0; p < NPROC; p++)
		for (int k = 0; k < 2; k++)
			if (S[k].ncalls[p] == 0)
				chk_add(&c, "%s never answered via %s", proc_names[p], S[k].label);
	report("ALL", "22 NFSv3 procedures exercised on both paths", &c);
}

/* ------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
	        "usage: nfs3cmp --direct URL --proxy URL [--scratch NAME] [--uid U --gid G]\n"
	        "               [--timeout SECONDS] [--keep] [--verbose] [--v4-upstream]\n"
	        "  URL: nfs://HOST/EXPORT?nfsport=N&mountport=M (same export, same server)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *direct = NULL, *proxy = NULL, *scratch = NULL;
	bool keep = false;
	char def[64];
	struct res r[2] = {0};

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--keep") == 0) {
			keep = true;
			continue;
		}
		if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			g_verbose = true;
			continue;
		}
		if (strcmp(a, "--v4-upstream") == 0) {
			g_v4 = true;
			continue;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			usage();
		if (v == NULL)
			usage();
		i++;
		if (strcmp(a, "--direct") == 0)
			direct = v;
		else if (strcmp(a, "--proxy") == 0)
			proxy = v;
		else if (strcmp(a, "--scratch") == 0)
			scratch = v;
		else if (strcmp(a, "--uid") == 0)
			g_uid = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--gid") == 0)
			g_gid = (uint32_t)strtoul(v, NULL, 0);
		else if (strcmp(a, "--timeout") == 0)
			g_timeout_ms = atoi(v) * 1000;
		else
			usage();
	}
	if (direct == NULL || proxy == NULL || g_timeout_ms <= 0)
		usage();
	if (scratch == NULL) {
		snprintf(def, sizeof(def), "nfs3cmp-%ld", (long)getpid());
		scratch = def;
	}
	if (scratch[0] == 0 || strchr(scratch, '/') || strlen(scratch) > 200)
		die("--scratch must be a plain name");

	S[0].label = "direct";
	S[1].label = "proxy";
	parse_url(direct, &S[0].url);
	parse_url(proxy, &S[1].url);
	snprintf(g_name, sizeof(g_name), "%s-fixture", scratch);
	for (int k = 0; k < 2; k++)
		snprintf(S[k].scratch_name, sizeof(S[k].scratch_name), "%s-%s", scratch,
		         S[k].label);
	printf("# nfs3cmp: direct %s\n# nfs3cmp: proxy  %s\n# nfs3cmp: uid %u gid %u, names %s-*\n",
	       direct, proxy, g_uid, g_gid, scratch);

	for (int k = 0; k < 2; k++)
		side_connect(&S[k]);
	t_mount();
	t_null();
	t_fsinfo();

	/* leftovers of an earlier run, then the shared fixture (direct only) */
	rm_tree(&S[0], &S[0].root, g_name, 0);
	for (int k = 0; k < 2; k++)
		rm_tree(&S[0], &S[0].root, S[k].scratch_name, 0);
	make_fixture(&S[0]);
	printf("# fixture %s created directly; transfer size %u\n", g_name, g_xfer);

	{
		struct chk c = {0};

		for (int k = 0; k < 2; k++)
			op_mkdir(&S[k], &S[k].root, S[k].scratch_name, 0755, &r[k]);
		created_pair("MKDIR", "scratch dir in export root", r, EXPECT(NFS3_OK), NF3DIR,
		             0755, SOFF(scratch));
		for (int k = 0; k < 2; k++)
			S[k].have_scratch = r[k].stat == NFS3_OK;
		if (!S[0].have_scratch || !S[1].have_scratch)
			chk_add(&c, "cannot continue without scratch dirs");
		if (c.bad) {
			report("MKDIR", "scratch dirs", &c);
			goto out;
		}
	}

	t_lookup();
	t_getattr();
	t_access();
	t_readlink();
	t_read();
	t_pathconf();
	t_fsstat();
	t_create();
	t_write_commit();
	t_setattr();
	t_mkdir();
	t_symlink();
	t_mknod();
	t_link();
	t_rename();
	t_remove();
	t_rmdir();
	t_readdir();
	t_readdirplus();
	t_coverage();

out:
	if (!keep) {
		/* each side cleans up after itself, then direct sweeps whatever is left */
		for (int k = 0; k < 2; k++)
			rm_tree(&S[k], &S[k].root, S[k].scratch_name, 0);
		for (int k = 0; k < 2; k++)
			rm_tree(&S[0], &S[0].root, S[k].scratch_name, 0);
		rm_tree(&S[0], &S[0].root, g_name, 0);
		for (int k = 0; k < 3; k++) {
			const char *n = k < 2 ? S[k].scratch_name : g_name;

			if (op_lookup(&S[0], &S[0].root, n, &r[0]) != NFS3ERR_NOENT)
				fprintf(stderr, "nfs3cmp: warning: could not remove %s\n", n);
		}
	}
	resv_free(r);
	for (int k = 0; k < 2; k++)
		side_disconnect(&S[k]);
	printf("# nfs3cmp: %u checks, %u ok, %u failed\n", g_ok + g_fail, g_ok, g_fail);
	printf("%s\n", g_fail ? "nfs3cmp: MISMATCH" : "nfs3cmp: all results identical");
	return g_fail ? 1 : 0;
}
