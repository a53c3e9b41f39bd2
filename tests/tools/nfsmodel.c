/* nfsmodel: randomized coherence test of cachefsd in strict mode.
 *
 * Two NFSv3 clients work on the same upstream export: "proxy" (through
 * cachefsd, NFS and MOUNT on one port) and "direct" (to the upstream server's
 * own NFS and MOUNT ports). A seeded PRNG picks a sequence of operations
 * over a few names in a scratch directory (created by the tool), each done
 * through a randomly chosen side: create (UNCHECKED), write (FILE_SYNC,
 * DATA_SYNC or UNSTABLE, sometimes followed by COMMIT), truncate (SETATTR
 * size), rename (possibly over an existing name, also across directories),
 * remove, hard link (LINK of a file to a second name, so names share a
 * file: writes through one show through the other, a REMOVE or RENAME
 * over one changes the other's link count), chmod (SETATTR mode), read,
 * readdir, lookup, and "tick" bursts (a proxy read fills the cache, then
 * same-size in-place writes directly on the upstream right after it,
 * within the same timestamp tick if the clock is coarse, then a proxy
 * re-open and read).
 *
 * The truth is always the upstream read directly. Checks, all exact (the
 * tool is sequential, nothing changes the files while it looks):
 *  - a read through the proxy is done like a close-to-open client: LOOKUP,
 *    GETATTR, then READs of the whole file (or a range) via the proxy; the
 *    bytes, the size, the link count, the mode and (mtime, ctime), of the
 *    GETATTR and of the READ replies, must equal what the direct side
 *    reads right after;
 *  - READDIRPLUS through the proxy (cookies until eof, random page sizes)
 *    lists exactly the names the direct side lists, and each entry's size,
 *    type and link count equal the direct GETATTR's; a page the proxy
 *    fails is asked directly with the same cookie and counts: when the
 *    upstream fails it the same way (nfs-ganesha 4.3 at some maxcounts,
 *    upstream_fails_too()) the page is asked again with other counts;
 *  - LOOKUP through the proxy of a removed or renamed-away name gives
 *    NFS3ERR_NOENT;
 *  - a small model of the files (names, bytes, link counts, modes) must
 *    match the upstream too: a write or truncate through the proxy that did
 *    not reach the upstream intact shows up there.
 * On a mismatch it prints the seed, the op index, the last 20 ops, the ops
 * on the file concerned, expected vs got (first differing byte), and exits 1.
 *
 *   nfsmodel --proxy-port P --nfs-port N --mount-port M --export PATH
 *            [--host H] [--seed S] [--ops N] [--think-ms N]
 *            [--pause-every N] [--pause-ms MS]
 *            [--mix default|data|meta|tick] [--dir NAME] [--timeout S]
 *            [--verbose] [--keep] [--proxy-mount-port M] [--changes both|proxy]
 *
 * The proxy serves, but does not store, data of files changed in the last
 * fresh_guard seconds (2): without pauses a fast run would never read from
 * the cache. Every --pause-every ops (400; 0: never) the tool sleeps
 * --pause-ms (2200), so files not changed since are stored by the next
 * proxy reads (the tool reads every file through the proxy after a pause),
 * and later changes must be noticed. --think-ms sleeps after
 * every op. Mixes: default; data (writes, reads, ticks); meta (create,
 * rename, remove, readdir); tick (mostly tick bursts).
 *
 * Names: f0-f3 in the scratch directory, f0 and f4 in d0, f1 and f5 in d1
 * (the same name in two directories on purpose). Data changes of f0, f2,
 * d0/f0 and d1/f1 go direct only (a file written through the proxy is not
 * cached for write_quiesce seconds); the rest half through each side. Ops
 * that need a file when there is none create one.
 *
 * --changes proxy: every change goes through the proxy (no direct changes,
 * no ticks): for a proxy in ttl mode, which may answer with what it knew
 * for meta_ttl seconds after a change made elsewhere, but never after its
 * own. The checks stay exact.
 *
 * --verbose prints every op as it is done (the history a failure prints,
 * for a whole run); --keep leaves the scratch directory (it is always left
 * after a failure).
 *
 * --proxy-mount-port: MOUNT of the "proxy" side on another port (default:
 * the proxy port); with the upstream's own ports on both sides the tool
 * checks itself (every run must pass).
 *
 * Exit: 0 all checks passed; 1 a mismatch; 2 usage; 3 an RPC, connection or
 * unexpected NFS error (also printed with the seed). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
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

#define KiB       1024u
#define MiB       (1024u * 1024u)
#define MAX_FILE  (5u * MiB) /* files never grow beyond this */
#define MAX_WRITE (256u * KiB)
#define NDIRS     3 /* the scratch directory and two subdirectories */
#define NSLOTS    8
#define LAST_OPS  20

/* ---- options and global state ---- */

static const char *g_host = "127.0.0.1";
static const char *g_export;
static int g_proxy_port, g_proxy_mnt_port, g_nfs_port, g_mnt_port;
static uint64_t g_seed;
static long g_nops = 3000;
static long g_think_ms;
static long g_pause_every = 400, g_pause_ms = 2200;
static unsigned long g_pauses;
static int g_timeout_s = 30;
static bool g_verbose, g_keep;
static char g_scratch[128];
static const char *g_mix = "default";
static bool g_proxy_changes; /* --changes proxy */
static long g_opno = -1; /* index of the op being done; -1: setup */

/* ---- PRNG (splitmix64) ---- */

static uint64_t g_rng;

static uint64_t rnd64(void)
{
	uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in [0, n) */
static uint64_t rnd(uint64_t n)
{
	return n ? rnd64() % n : 0;
}

/* uniform in [lo, hi] */
static uint64_t rnd_in(uint64_t lo, uint64_t hi)
{
	return lo + rnd(hi - lo + 1);
}

static bool chance(unsigned pct)
{
	return rnd(100) < pct;
}

static void rnd_bytes(unsigned char *p, size_t n)
{
	while (n >= 8) {
		uint64_t v = rnd64();
		memcpy(p, &v, 8);
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t v = rnd64();
		memcpy(p, &v, n);
	}
}

/* ---- op history (printed on failure) ---- */

enum kind {
	K_CREATE,
	K_WRITE,
	K_TRUNC,
	K_RENAME,
	K_REMOVE,
	K_READ,
	K_READDIR,
	K_LOOKUP,
	K_TICK,
	K_LINK,
	K_CHMOD,
	NKINDS
};

static const char *const kind_name[NKINDS] = {"create", "write",  "truncate", "rename",
                                              "remove", "read",   "readdir",  "lookup",
                                              "tick",   "link",   "chmod"};

struct oprec {
	char text[640];
	uint32_t slots; /* bit i: the op touched slot i */
};

static struct oprec *g_hist;
static long g_nhist, g_histcap;

static struct oprec *cur_op(void)
{
	return g_nhist ? &g_hist[g_nhist - 1] : NULL;
}

static void op_begin(void)
{
	if (g_nhist == g_histcap) {
		g_histcap = g_histcap ? 2 * g_histcap : 1024;
		g_hist = realloc(g_hist, (size_t)g_histcap * sizeof(*g_hist));
		if (!g_hist) {
			perror("realloc");
			exit(3);
		}
	}
	memset(&g_hist[g_nhist], 0, sizeof(*g_hist));
	g_nhist++;
}

__attribute__((format(printf, 1, 2))) static void oplog(const char *fmt, ...)
{
	struct oprec *o = cur_op();
	va_list ap;
	size_t n;

	if (!o)
		return;
	n = strlen(o->text);
	if (n + 1 >= sizeof(o->text))
		return;
	va_start(ap, fmt);
	vsnprintf(o->text + n, sizeof(o->text) - n, fmt, ap);
	va_end(ap);
}

static void op_touch(int slot)
{
	struct oprec *o = cur_op();

	if (o && slot >= 0)
		o->slots |= 1u << slot;
}

/* ---- the model: a few names in three directories, and the files they name ---- */

/* A file; hard links make several names point to one. */
struct inode {
	bool used;
	unsigned char *data;
	size_t size;
	unsigned nlink; /* the names of it (all are slots) */
	uint32_t mode;
};

struct slot {
	int dir;          /* 0: scratch dir, 1: d0, 2: d1 */
	const char *name; /* the same name in two directories on purpose */
	int ino;          /* in g_inodes; -1: no such name */
};

static const char *const dir_name[NDIRS] = {".", "d0", "d1"};

static struct slot g_slots[NSLOTS] = {
    {0, "f0", -1}, {0, "f1", -1}, {0, "f2", -1}, {0, "f3", -1},
    {1, "f0", -1}, {1, "f4", -1}, {2, "f1", -1}, {2, "f5", -1},
};

static struct inode g_inodes[NSLOTS]; /* at most one per name */

static bool exists(int i)
{
	return g_slots[i].ino >= 0;
}

static struct inode *ino_of(int i)
{
	return &g_inodes[g_slots[i].ino];
}

/* the other names of slot i's file, as " (also a, b)", or "" */
static const char *links_of(int i);

static const char *slot_path(int i)
{
	static char buf[4][64];
	static int k;
	char *b = buf[k++ % 4];

	if (g_slots[i].dir == 0)
		snprintf(b, sizeof(buf[0]), "%s", g_slots[i].name);
	else
		snprintf(b, sizeof(buf[0]), "%s/%s", dir_name[g_slots[i].dir], g_slots[i].name);
	return b;
}

static void ino_resize(struct inode *n, size_t size)
{
	if (!n->data) {
		n->data = calloc(1, MAX_FILE);
		if (!n->data) {
			perror("calloc");
			exit(3);
		}
	}
	if (size > n->size)
		memset(n->data + n->size, 0, size - n->size);
	n->size = size;
}

/* A new empty file for slot i (mode 0644, one link). */
static void ino_new(int i)
{
	for (int k = 0; k < NSLOTS; k++) {
		struct inode *n = &g_inodes[k];
		if (!n->used) {
			n->used = true;
			n->size = 0;
			n->nlink = 1;
			n->mode = 0644;
			ino_resize(n, 0);
			g_slots[i].ino = k;
			return;
		}
	}
	fprintf(stderr, "nfsmodel: no free inode\n");
	exit(3);
}

/* Slot i's name goes away. */
static void unlink_slot(int i)
{
	struct inode *n = ino_of(i);

	if (--n->nlink == 0)
		n->used = false;
	g_slots[i].ino = -1;
}

static const char *links_of(int i)
{
	static char buf[128];
	size_t n = 0;

	buf[0] = 0;
	if (!exists(i))
		return buf;
	for (int k = 0; k < NSLOTS; k++) {
		if (k == i || g_slots[k].ino != g_slots[i].ino)
			continue;
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? ", " : " (also ",
		                      slot_path(k));
		if (n >= sizeof(buf) - 2)
			break;
	}
	if (n && n < sizeof(buf) - 1)
		snprintf(buf + n, sizeof(buf) - n, ")");
	return buf;
}

/* ---- failure reports ---- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_history(int slot)
{
	long from = g_nhist > LAST_OPS ? g_nhist - LAST_OPS : 0;

	fprintf(stderr, "nfsmodel: last %ld ops:\n", g_nhist - from);
	for (long i = from; i < g_nhist; i++)
		fprintf(stderr, "  %s%s\n", g_hist[i].text, i == g_nhist - 1 ? "  <== here" : "");
	if (slot < 0)
		return;
	/* every op on that name (up to 40, newest last) */
	long n = 0, first = g_nhist;
	for (long i = g_nhist - 1; i >= 0 && n < 40; i--)
		if (g_hist[i].slots & (1u << slot)) {
			first = i;
			n++;
		}
	fprintf(stderr, "nfsmodel: the last %ld ops on %s:\n", n, slot_path(slot));
	for (long i = first; i < g_nhist; i++)
		if (g_hist[i].slots & (1u << slot))
			fprintf(stderr, "  %s\n", g_hist[i].text);
}

static void report_tail(void)
{
	fprintf(stderr,
	        "nfsmodel: seed %" PRIu64 ", op %ld of %ld, mix %s; scratch dir %s kept\n"
	        "nfsmodel: rerun: nfsmodel --seed %" PRIu64
	        " --ops %ld --mix %s --pause-every %ld --pause-ms %ld --verbose ...\n",
	        g_seed, g_opno, g_nops, g_mix, g_scratch, g_seed, g_nops, g_mix, g_pause_every,
	        g_pause_ms);
}

static int g_fail_slot = -1;

/* Prints what went wrong (kind: MISMATCH or ERROR), the history and how
 * to rerun, then exits with code. */
__attribute__((format(printf, 3, 0), noreturn)) static void stop(int code, const char *kind,
                                                                 const char *fmt, va_list ap)
{
	fprintf(stderr, "\nnfsmodel: %s (seed %" PRIu64 ", op %ld): ", kind, g_seed, g_opno);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	print_history(g_fail_slot);
	report_tail();
	exit(code);
}

/* A coherence mismatch: exit 1. */
__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	stop(1, "MISMATCH", fmt, ap);
}

/* Anything else that should not happen (transport, timeouts, unexpected
 * NFS errors): exit 3. */
__attribute__((format(printf, 1, 2), noreturn)) static void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	stop(3, "ERROR", fmt, ap);
}

/* ---- NFS calls (nfs3call.h) ---- */

struct side {
	const char *label;
	struct rpc_context *rpc;
	struct fh root;
	struct fh dir[NDIRS];
	unsigned long calls;
	uint32_t wtmax; /* FSINFO: no WRITE is larger (knfsd drops the connection) */
};

static struct side g_proxy = {.label = "proxy"}, g_direct = {.label = "direct"};

static const char *nfsstat_name(int s)
{
	const char *n = nfsstat3_name(s);

	return n ? n : "NFS3ERR_(other)";
}

/* Frees what r holds; r keeps its READ buffer (dst, dstcap). */
static void res_clear(struct res *r)
{
	unsigned char *dst = r->dst;
	size_t cap = r->dstcap;

	res_free(r);
	r->stat = -1;
	r->dst = dst;
	r->dstcap = cap;
}

/* Before each call on s; r (NULL: no result) is cleared. */
static void call_start(struct side *s, struct call *c, struct res *r)
{
	if (r)
		res_clear(r);
	call_prep(c, r);
	c->answered = &s->calls;
}

/* Waits for the call queued (queued: what the send_*() helper returned);
 * anything but an answer is fatal. Returns the status in c->r. */
static int call_run(struct side *s, struct call *c, const char *what, int queued)
{
	if (queued != 0)
		fatal("%s %s: cannot send: %s", s->label, what, rpc_get_error(s->rpc));
	switch (call_wait(s->rpc, c, (long long)g_timeout_s * 1000)) {
	case WAIT_DONE:
		break;
	case WAIT_NOREPLY:
		fatal("%s %s: no answer within %d s", s->label, what, g_timeout_s);
	case WAIT_POLL:
		fatal("%s %s: poll: %s", s->label, what, strerror(errno));
	case WAIT_SERVICE:
		fatal("%s %s: %s", s->label, what, rpc_get_error(s->rpc));
	}
	if (c->status != RPC_STATUS_SUCCESS)
		fatal("%s %s: RPC failed: %s", s->label, what,
		      c->status == RPC_STATUS_CANCEL    ? "cancelled"
		      : c->status == RPC_STATUS_TIMEOUT ? "timed out"
		      : c->err[0]                       ? c->err
		                                        : "error");
	return c->r ? c->r->stat : 0;
}

static int c3_getattr(struct side *s, const struct fh *fh, struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "GETATTR", send_getattr(s->rpc, &c, fh));
}

static int c3_lookup(struct side *s, const struct fh *dir, const char *name, struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "LOOKUP", send_lookup(s->rpc, &c, dir, name));
}

/* the data goes to r->dst (at most r->dstcap bytes, else RES_TOOBIG) */
static int c3_read(struct side *s, const struct fh *fh, uint64_t off, uint32_t count, struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "READ", send_read(s->rpc, &c, fh, off, count));
}

static int c3_write(struct side *s, const struct fh *fh, uint64_t off, const void *buf,
                    uint32_t len, stable_how how, struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "WRITE", send_write(s->rpc, &c, fh, off, buf, len, how));
}

static int c3_commit(struct side *s, const struct fh *fh, uint64_t off, uint32_t count,
                     struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "COMMIT", send_commit(s->rpc, &c, fh, off, count));
}

static int c3_setsize(struct side *s, const struct fh *fh, uint64_t size, struct res *r)
{
	sattr3 sa;
	struct call c;

	memset(&sa, 0, sizeof(sa));
	sa.size.set_it = 1;
	sa.size.set_size3_u.size = size;
	call_start(s, &c, r);
	return call_run(s, &c, "SETATTR", send_setattr(s->rpc, &c, fh, &sa, NULL));
}

static int c3_setmode(struct side *s, const struct fh *fh, uint32_t mode, struct res *r)
{
	sattr3 sa;
	struct call c;

	sattr_mode(&sa, mode);
	call_start(s, &c, r);
	return call_run(s, &c, "SETATTR", send_setattr(s->rpc, &c, fh, &sa, NULL));
}

static int c3_link(struct side *s, const struct fh *file, const struct fh *dir, const char *name,
                   struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "LINK", send_link(s->rpc, &c, file, dir, name));
}

/* UNCHECKED with that mode; size0: and size 0 */
static int c3_create(struct side *s, const struct fh *dir, const char *name, bool size0,
                     uint32_t mode, struct res *r)
{
	sattr3 sa;
	struct call c;

	sattr_mode(&sa, mode);
	if (size0) {
		sa.size.set_it = 1;
		sa.size.set_size3_u.size = 0;
	}
	call_start(s, &c, r);
	return call_run(s, &c, "CREATE", send_create(s->rpc, &c, dir, name, UNCHECKED, &sa, NULL));
}

static int c3_mkdir(struct side *s, const struct fh *dir, const char *name, struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "MKDIR", send_mkdir(s->rpc, &c, dir, name, 0755));
}

static int c3_remove(struct side *s, const struct fh *dir, const char *name, struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "REMOVE", send_remove(s->rpc, &c, dir, name));
}

static int c3_rmdir(struct side *s, const struct fh *dir, const char *name, struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "RMDIR", send_rmdir(s->rpc, &c, dir, name));
}

static int c3_rename(struct side *s, const struct fh *fdir, const char *fname,
                     const struct fh *tdir, const char *tname, struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "RENAME", send_rename(s->rpc, &c, fdir, fname, tdir, tname));
}

static int c3_readdirplus(struct side *s, const struct fh *dir, uint64_t cookie,
                          const unsigned char *verf, uint32_t dircount, uint32_t maxcount,
                          struct res *r)
{
	struct call c;

	call_start(s, &c, r);
	return call_run(s, &c, "READDIRPLUS",
	                send_readdirplus(s->rpc, &c, dir, cookie, verf, dircount, maxcount));
}

/* ---- connecting ---- */

static void side_connect(struct side *s, int port)
{
	struct call c;

	s->rpc = rpc_init_context();
	if (!s->rpc)
		fatal("rpc_init_context failed");
	call_start(s, &c, NULL);
	call_run(s, &c, "connect", send_connect(s->rpc, &c, g_host, port));
}

/* MNT on its own connection to mnt_port (or on the NFS connection when
 * mnt_port is 0: the proxy serves both on one port). */
static void side_mount(struct side *s, int mnt_port)
{
	struct side m = {.label = s->label};
	struct side *ms = s;
	struct res r = {0};
	struct call c;

	if (mnt_port) {
		side_connect(&m, mnt_port);
		ms = &m;
	}
	call_start(ms, &c, &r);
	call_run(ms, &c, "MNT", send_mnt(ms->rpc, &c, g_export));
	if (r.stat != MNT3_OK)
		fatal("%s: MNT %s: mountstat3 %d", s->label, g_export, r.stat);
	s->root = r.fh;
	if (mnt_port)
		rpc_destroy_context(m.rpc);
	res_clear(&r);
	/* like a real client, never WRITE more than the server's wtmax: the
	 * Linux server sizes it by RAM (128 KiB at 1 GiB) and closes the
	 * connection on a larger record */
	call_start(s, &c, &r);
	call_run(s, &c, "FSINFO", send_fsinfo(s->rpc, &c, &s->root));
	if (r.stat != NFS3_OK)
		fatal("%s: FSINFO: %s", s->label, nfsstat_name(r.stat));
	s->wtmax = r.fsinfo.wtmax ? r.fsinfo.wtmax : MAX_WRITE;
	res_clear(&r);
}

/* ---- helpers over the model ---- */

static struct res g_r; /* scratch result for calls whose details we drop */

static void expect_ok(struct side *s, const char *what, int st)
{
	if (st != NFS3_OK)
		fatal("%s %s: %s", s->label, what, nfsstat_name(st));
}

static bool same_time(const nfstime3 *a, const nfstime3 *b)
{
	return a->seconds == b->seconds && a->nseconds == b->nseconds;
}

/* LOOKUP of a slot's name on a side; returns the status, the handle in *fh */
static int lookup_slot(struct side *s, int i, struct fh *fh, fattr3 *attr, bool *has_attr)
{
	struct res r = {0};
	int st = c3_lookup(s, &s->dir[g_slots[i].dir], g_slots[i].name, &r);

	if (st == NFS3_OK) {
		*fh = r.fh;
		if (attr)
			*attr = r.attr;
		if (has_attr)
			*has_attr = r.has_attr;
	}
	res_clear(&r);
	return st;
}

/* the handle of an existing slot on a side (the model says it exists) */
static void slot_fh(struct side *s, int i, struct fh *fh)
{
	int st = lookup_slot(s, i, fh, NULL, NULL);

	if (st == NFS3ERR_NOENT && s == &g_proxy) {
		g_fail_slot = i;
		fail("LOOKUP %s through the proxy: NFS3ERR_NOENT, but it exists upstream",
		     slot_path(i));
	}
	if (st != NFS3_OK) {
		g_fail_slot = i;
		fatal("%s LOOKUP %s: %s", s->label, slot_path(i), nfsstat_name(st));
	}
}

static void getattr_ok(struct side *s, const struct fh *fh, fattr3 *attr, const char *what)
{
	struct res r = {0};
	int st = c3_getattr(s, fh, &r);

	if (st != NFS3_OK)
		fatal("%s GETATTR %s: %s", s->label, what, nfsstat_name(st));
	*attr = r.attr;
	res_clear(&r);
}

/* READ [off, off+len) (len 0: to EOF) in requests of rsize (0: random
 * per request); returns the bytes read into buf (capacity cap). Checks the
 * eof flag against the size the caller knows (size_known, or UINT64_MAX). */
static size_t read_range(struct side *s, const struct fh *fh, uint64_t off, uint64_t len,
                         uint32_t rsize, unsigned char *buf, size_t cap, uint64_t size_known,
                         fattr3 *last_attr, bool *has_last_attr, const char *what)
{
	struct res r = {0};
	size_t got = 0;
	int rounds = 0;

	if (has_last_attr)
		*has_last_attr = false;
	for (;;) {
		uint64_t want = rsize ? rsize : rnd_in(1, MiB);
		int st;

		if (len && want > len - got)
			want = len - got;
		if (want > cap - got)
			want = cap - got;
		if (want == 0) {
			if (len && got == len)
				break;
			fail("%s READ %s: more than %zu bytes (size should be %" PRIu64 ")",
			     s->label, what, cap, size_known);
		}
		r.dst = buf + got;
		r.dstcap = (size_t)want;
		st = c3_read(s, fh, off + got, (uint32_t)want, &r);
		if (st == RES_TOOBIG)
			fail("%s READ %s at %" PRIu64
			     ": %zu bytes returned for a count of %" PRIu64,
			     s->label, what, off + got, r.len, want);
		if (st != NFS3_OK)
			fatal("%s READ %s at %" PRIu64 " count %" PRIu64 ": %s", s->label, what,
			      off + got, want, nfsstat_name(st));
		if (r.count != r.len)
			fail("%s READ %s: count %u but %zu data bytes", s->label, what, r.count,
			     r.len);
		if (r.has_attr && last_attr) {
			*last_attr = r.attr;
			*has_last_attr = true;
		}
		if (size_known != UINT64_MAX) {
			uint64_t end = off + got + r.len;
			if (r.eof && end < size_known)
				fail("%s READ %s at %" PRIu64 " count %" PRIu64
				     ": eof after %zu bytes "
				     "at %" PRIu64 " but the file has %" PRIu64 " bytes",
				     s->label, what, off + got, want, r.len, end, size_known);
			if (end > size_known)
				fail("%s READ %s at %" PRIu64 ": data up to %" PRIu64
				     " beyond the size %" PRIu64,
				     s->label, what, off + got, end, size_known);
		}
		got += r.len;
		if (r.eof || (len && got >= len))
			break;
		if (r.len == 0 && ++rounds > 3)
			fail("%s READ %s at %" PRIu64 ": 0 bytes and no eof", s->label, what,
			     off + got);
	}
	return got;
}

static void hexdump(const char *label, const unsigned char *p, size_t n, size_t from)
{
	fprintf(stderr, "  %-8s @%zu:", label, from);
	for (size_t i = from; i < n && i < from + 16; i++)
		fprintf(stderr, " %02x", p[i]);
	fprintf(stderr, "\n");
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* The differing ranges (gaps under 64 bytes merged), up to 10. */
static void print_ranges(uint64_t base, const char *la, const unsigned char *a, size_t na,
                         const char *lb, const unsigned char *b, size_t nb, size_t from)
{
	size_t n = na < nb ? na : nb, i = from;
	int shown = 0;

	while (i < n && shown < 10) {
		size_t s = i, e = i + 1, gap = 0;

		for (i = e; i < n && gap < 64; i++) {
			if (a[i] != b[i]) {
				e = i + 1;
				gap = 0;
			} else {
				gap++;
			}
		}
		fprintf(stderr, "  differ [%" PRIu64 ", %" PRIu64 ") %zu bytes: %s %s, %s %s\n",
		        base + s, base + e, e - s, la, all_zero(a + s, e - s) ? "zeros" : "data",
		        lb, all_zero(b + s, e - s) ? "zeros" : "data");
		shown++;
		while (i < n && a[i] == b[i])
			i++;
	}
	if (na != nb)
		fprintf(stderr, "  lengths differ: %s %zu, %s %zu\n", la, na, lb, nb);
}

/* first differing byte, or -1 */
static long first_diff(const unsigned char *a, size_t na, const unsigned char *b, size_t nb)
{
	size_t n = na < nb ? na : nb;

	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return (long)i;
	return na == nb ? -1 : (long)n;
}

static void cmp_bytes(const char *what, uint64_t base, const char *la, const unsigned char *a,
                      size_t na, const char *lb, const unsigned char *b, size_t nb)
{
	long d = first_diff(a, na, b, nb);

	if (d < 0)
		return;
	size_t diffs = 0, last = (size_t)d;
	for (size_t i = (size_t)d; i < na && i < nb; i++)
		if (a[i] != b[i]) {
			diffs++;
			last = i;
		}
	fprintf(stderr, "\n");
	hexdump(la, a, na, (size_t)d);
	hexdump(lb, b, nb, (size_t)d);
	print_ranges(base, la, a, na, lb, b, nb, (size_t)d);
	fail("%s: %s has %zu bytes, %s has %zu; first difference at offset %" PRIu64
	     " (%zu differing bytes in the common part, the last at %" PRIu64 ")",
	     what, la, na, lb, nb, base + (uint64_t)d, diffs, base + (uint64_t)last);
}

/* ---- buffers ---- */

static unsigned char *g_pbuf, *g_dbuf, *g_wbuf;
#define BUFCAP (MAX_FILE + 2u * MiB)

/* ---- side choice ---- */

/* Data changes (write, truncate) of even slots go direct only: a file
 * written through the proxy is not cached for write_quiesce seconds, and
 * the point is that cached data, filled by proxy reads, is noticed as stale
 * when the upstream changes. Names (create, rename, remove) of even slots
 * go direct 70 % of the time; everything of odd slots half and half. */
static struct side *pick_side(int slot, bool data)
{
	unsigned direct_pct = slot % 2 ? 50 : data ? 100 : 70;

	if (g_proxy_changes)
		return &g_proxy;
	return chance(direct_pct) ? &g_direct : &g_proxy;
}

/* ---- counters ---- */

static unsigned long g_count[NKINDS][2]; /* [kind][0 proxy, 1 direct] */
static unsigned long g_checks_read, g_checks_dir, g_checks_noent, g_bytes_checked, g_commits,
    g_unstable, g_create_trunc, g_rename_over, g_tick_writes, g_linked_ops,
    g_upstream_faults;

static void bump(enum kind k, const struct side *s)
{
	g_count[k][s == &g_direct]++;
}

/* ---- checks ---- */

/* After a mutation: the upstream agrees with the model about the name and
 * its size (catches writes lost or misplaced on the way). */
static void check_upstream_size(int i)
{
	struct fh fh;
	fattr3 a;
	int st = lookup_slot(&g_direct, i, &fh, NULL, NULL);

	g_fail_slot = i;
	if (!exists(i)) {
		if (st != NFS3ERR_NOENT)
			fail("upstream: %s should not exist (LOOKUP: %s)", slot_path(i),
			     nfsstat_name(st));
		return;
	}
	if (st != NFS3_OK)
		fail("upstream: %s should exist (LOOKUP: %s)", slot_path(i), nfsstat_name(st));
	getattr_ok(&g_direct, &fh, &a, slot_path(i));
	if (a.size != ino_of(i)->size)
		fail("upstream: %s has %" PRIu64 " bytes, the model %zu", slot_path(i), a.size,
		     ino_of(i)->size);
	if (a.nlink != ino_of(i)->nlink || (a.mode & 07777) != ino_of(i)->mode)
		fail("upstream: %s has %u links and mode %o, the model %u and %o%s", slot_path(i),
		     a.nlink, a.mode & 07777, ino_of(i)->nlink, ino_of(i)->mode, links_of(i));
}

/* LOOKUP through the proxy of a name that does not exist: NOENT. */
static void check_proxy_noent(int i)
{
	struct fh fh;
	int st = lookup_slot(&g_proxy, i, &fh, NULL, NULL);

	g_checks_noent++;
	if (st != NFS3ERR_NOENT) {
		g_fail_slot = i;
		fail("LOOKUP %s through the proxy: %s, but it does not exist upstream",
		     slot_path(i), nfsstat_name(st));
	}
}

static void cmp_attrs(int i, const char *what, const fattr3 *p, const fattr3 *d)
{
	g_fail_slot = i;
	if (p->size != d->size)
		fail("%s of %s: the proxy says size %" PRIu64 ", the upstream %" PRIu64, what,
		     slot_path(i), p->size, d->size);
	if (p->nlink != d->nlink)
		fail("%s of %s%s: the proxy says %u links, the upstream %u", what, slot_path(i),
		     links_of(i), p->nlink, d->nlink);
	if (p->mode != d->mode || p->uid != d->uid || p->gid != d->gid)
		fail("%s of %s: the proxy says mode %o uid %u gid %u, the upstream mode %o uid %u "
		     "gid %u",
		     what, slot_path(i), p->mode, p->uid, p->gid, d->mode, d->uid, d->gid);
	if (!same_time(&p->mtime, &d->mtime) || !same_time(&p->ctime, &d->ctime))
		fail("%s of %s: the proxy says mtime %u.%09u ctime %u.%09u, the upstream mtime "
		     "%u.%09u ctime %u.%09u",
		     what, slot_path(i), p->mtime.seconds, p->mtime.nseconds, p->ctime.seconds,
		     p->ctime.nseconds, d->mtime.seconds, d->mtime.nseconds, d->ctime.seconds,
		     d->ctime.nseconds);
}

/* A close-to-open read through the proxy (LOOKUP, GETATTR, READs of the
 * whole file or of a range), then the same directly; everything must be
 * equal, and the upstream must hold what the model says. */
static void check_read(int i, bool partial, const char *why)
{
	struct inode *sl = ino_of(i);
	struct fh pfh, dfh;
	fattr3 pa, da, ra;
	bool has_ra = false;
	uint64_t off = 0, len = 0;
	uint32_t rsize;
	size_t pn, dn;

	g_fail_slot = i;
	op_touch(i);
	g_checks_read++;
	slot_fh(&g_proxy, i, &pfh);
	getattr_ok(&g_proxy, &pfh, &pa, slot_path(i));
	if (partial && sl->size > 0) {
		off = rnd(sl->size);
		len = rnd_in(1, sl->size - off + (chance(20) ? 4096 : 0));
	}
	switch (rnd(4)) {
	case 0:
		rsize = 0; /* random per request */
		break;
	case 1:
		rsize = (uint32_t)rnd_in(4 * KiB, MiB);
		break;
	default:
		rsize = MiB;
	}
	pn = read_range(&g_proxy, &pfh, off, len, rsize, g_pbuf, BUFCAP, pa.size, &ra, &has_ra,
	                slot_path(i));
	oplog(" [%s proxy read%s %" PRIu64 "+%" PRIu64 " rsize %u: %zu bytes]", why,
	      partial ? " range" : "", off, len, rsize, pn);

	/* the truth */
	slot_fh(&g_direct, i, &dfh);
	getattr_ok(&g_direct, &dfh, &da, slot_path(i));
	dn = read_range(&g_direct, &dfh, off, len, MiB, g_dbuf, BUFCAP, da.size, NULL, NULL,
	                slot_path(i));
	cmp_attrs(i, "GETATTR", &pa, &da);
	if (has_ra)
		cmp_attrs(i, "READ post-op attributes", &ra, &da);
	cmp_bytes("READ through the proxy after LOOKUP+GETATTR vs direct READ", off, "proxy",
	          g_pbuf, pn, "upstream", g_dbuf, dn);
	g_bytes_checked += pn;

	/* the model (the tool's own bookkeeping of what was written) */
	uint64_t mlen = off < sl->size ? sl->size - off : 0;
	if (len && mlen > len)
		mlen = len;
	if (da.size != sl->size)
		fail("upstream: %s has %" PRIu64 " bytes, the model %zu", slot_path(i), da.size,
		     sl->size);
	cmp_bytes("upstream bytes vs the model (a write or truncate went wrong)", off, "upstream",
	          g_dbuf, dn, "model", sl->data + off, (size_t)mlen);
	if (da.nlink != sl->nlink || (da.mode & 07777) != sl->mode)
		fail("upstream: %s has %u links and mode %o, the model %u and %o%s", slot_path(i),
		     da.nlink, da.mode & 07777, sl->nlink, sl->mode, links_of(i));
}

/* A READDIRPLUS page the proxy failed with st: does the same call made
 * directly fail the same way? nfs-ganesha 4.3 answers
 * NFS3ERR_SERVERFAULT ("Encode of EOD failed") when a page's entries
 * end within 8 bytes of maxcount (no room left for the end of the list
 * and eof; docs/design.md); the proxy passes the
 * server's answer on, as it must. The direct call has the same cookie and
 * counts and a zero verifier (the proxy's verifier may be its own pass id,
 * which the server does not know; a zero one is accepted with any
 * cookie). */
static bool upstream_fails_too(int d, uint64_t cookie, uint32_t dircount, uint32_t maxcount,
                               int st)
{
	static const unsigned char zero[8];
	struct res r = {0};
	int dst = c3_readdirplus(&g_direct, &g_direct.dir[d], cookie, zero, dircount, maxcount, &r);

	res_clear(&r);
	if (dst != st)
		return false;
	oplog(" [READDIRPLUS cookie %" PRIu64 " dircount %u maxcount %u: %s from the upstream"
	      " too]",
	      cookie, dircount, maxcount, nfsstat_name(st));
	g_upstream_faults++;
	return true;
}

/* All entries of a directory (without . and ..), sorted by name. */
static struct dent *list_dir(struct side *s, int d, bool random_pages, size_t *n)
{
	struct res r = {0};
	struct dent *all = NULL;
	size_t nall = 0;
	uint64_t cookie = 0;
	unsigned char verf[8] = {0};

	for (int page = 0, faults = 0;; page++) {
		uint32_t dircount = random_pages ? (uint32_t)rnd_in(100, 8192) : 65536;
		uint32_t maxcount = random_pages ? (uint32_t)rnd_in(1024, 32768) : 262144;
		int st = c3_readdirplus(s, &s->dir[d], cookie, verf, dircount, maxcount, &r);

		if (st != NFS3_OK && s != &g_direct && faults < 8 &&
		    upstream_fails_too(d, cookie, dircount, maxcount, st)) {
			/* the server's own answer to these counts, passed on:
			 * the page again with other counts */
			faults++;
			page--;
			continue;
		}
		if (st != NFS3_OK)
			fail("%s READDIRPLUS %s (page %d, cookie %" PRIu64
			     ", dircount %u maxcount %u): %s",
			     s->label, dir_name[d], page, cookie, dircount, maxcount,
			     nfsstat_name(st));
		if (page > 200)
			fail("%s READDIRPLUS %s: more than 200 pages", s->label, dir_name[d]);
		if (r.nents == 0 && !r.eof)
			fail("%s READDIRPLUS %s: an empty page without eof (cookie %" PRIu64 ")",
			     s->label, dir_name[d], cookie);
		all = realloc(all, (nall + r.nents + 1) * sizeof(*all));
		if (!all)
			fatal("realloc");
		for (size_t k = 0; k < r.nents; k++) {
			cookie = r.ents[k].cookie;
			if (strcmp(r.ents[k].name, ".") == 0 || strcmp(r.ents[k].name, "..") == 0)
				continue;
			all[nall++] = r.ents[k];
		}
		memcpy(verf, r.cookieverf, 8);
		if (r.eof)
			break;
	}
	res_clear(&r);
	qsort(all, nall, sizeof(*all), dent_cmp);
	*n = nall;
	return all;
}

static void print_names(const char *label, const struct dent *e, size_t n)
{
	fprintf(stderr, "  %-8s:", label);
	for (size_t k = 0; k < n; k++)
		fprintf(stderr, " %s", e[k].name);
	fprintf(stderr, "\n");
}

static void check_readdir(int d)
{
	size_t pn, dn, mn = 0;
	struct dent *pe = list_dir(&g_proxy, d, true, &pn);
	struct dent *de = list_dir(&g_direct, d, false, &dn);
	struct dent model[NSLOTS + 2];

	g_checks_dir++;
	g_fail_slot = -1;
	oplog(" [%zu names]", dn);
	bool same = pn == dn;
	for (size_t k = 0; same && k < pn; k++)
		same = strcmp(pe[k].name, de[k].name) == 0;
	if (!same) {
		fprintf(stderr, "\n");
		print_names("proxy", pe, pn);
		print_names("upstream", de, dn);
		fail("READDIRPLUS of %s through the proxy lists other names than the upstream",
		     dir_name[d]);
	}
	for (size_t k = 0; k < dn; k++) {
		fattr3 a;
		struct fh fh;

		if (!de[k].has_fh) {
			int st = c3_lookup(&g_direct, &g_direct.dir[d], de[k].name, &g_r);
			expect_ok(&g_direct, "LOOKUP", st);
			fh = g_r.fh;
		} else {
			fh = de[k].fh;
		}
		getattr_ok(&g_direct, &fh, &a, de[k].name);
		if (!pe[k].has_attr)
			fail("READDIRPLUS of %s through the proxy: no attributes for %s",
			     dir_name[d], pe[k].name);
		if (pe[k].attr.size != a.size || pe[k].attr.type != a.type ||
		    pe[k].attr.nlink != a.nlink)
			fail("READDIRPLUS of %s through the proxy: %s has size %" PRIu64
			     " (type %d, %u links), the upstream GETATTR %" PRIu64
			     " (type %d, %u links)",
			     dir_name[d], pe[k].name, pe[k].attr.size, pe[k].attr.type,
			     pe[k].attr.nlink, a.size, a.type, a.nlink);
	}
	/* the model */
	if (d == 0) {
		snprintf(model[mn++].name, sizeof(model[0].name), "d0");
		snprintf(model[mn++].name, sizeof(model[0].name), "d1");
	}
	for (int i = 0; i < NSLOTS; i++)
		if (g_slots[i].dir == d && exists(i))
			snprintf(model[mn++].name, sizeof(model[0].name), "%s", g_slots[i].name);
	qsort(model, mn, sizeof(model[0]), dent_cmp);
	same = mn == dn;
	for (size_t k = 0; same && k < mn; k++)
		same = strcmp(model[k].name, de[k].name) == 0;
	if (!same) {
		fprintf(stderr, "\n");
		print_names("upstream", de, dn);
		print_names("model", model, mn);
		fail("the upstream's listing of %s differs from the model", dir_name[d]);
	}
	free(pe);
	free(de);
}

/* ---- operations ---- */

static int pick_existing(void)
{
	int n = 0, which;

	for (int i = 0; i < NSLOTS; i++)
		n += exists(i);
	if (n == 0)
		return -1;
	which = (int)rnd((uint64_t)n);
	for (int i = 0; i < NSLOTS; i++)
		if (exists(i) && which-- == 0)
			return i;
	return -1;
}

static int pick_missing(void)
{
	int n = 0, which;

	for (int i = 0; i < NSLOTS; i++)
		n += !exists(i);
	if (n == 0)
		return -1;
	which = (int)rnd((uint64_t)n);
	for (int i = 0; i < NSLOTS; i++)
		if (!exists(i) && which-- == 0)
			return i;
	return -1;
}

static int count_existing(void)
{
	int n = 0;

	for (int i = 0; i < NSLOTS; i++)
		n += exists(i);
	return n;
}

static void do_create(struct side *s, int i)
{
	struct slot *sl = &g_slots[i];
	bool was = exists(i), size0 = !was || chance(50);
	/* an existing file keeps its mode (servers differ in whether
	 * UNCHECKED applies the mode to one that exists) */
	uint32_t mode = was ? ino_of(i)->mode : 0644;
	int st;

	op_touch(i);
	oplog("create %s %s%s%s%s", s->label, slot_path(i), was ? " (exists)" : "",
	      size0 ? " size=0" : "", links_of(i));
	st = c3_create(s, &s->dir[sl->dir], sl->name, size0, mode, &g_r);
	g_fail_slot = i;
	expect_ok(s, "CREATE", st);
	if (was && size0)
		g_create_trunc++;
	if (!was)
		ino_new(i);
	else if (size0)
		ino_resize(ino_of(i), 0);
	bump(K_CREATE, s);
	check_upstream_size(i);
}

/* An offset for a write into a file of this size: anywhere, at the end, or
 * close to a chunk (1 MiB) or inline (64 KiB) boundary. */
static uint64_t pick_offset(size_t size)
{
	uint64_t b;

	switch (rnd(6)) {
	case 0:
		return size;
	case 1:
		b = (rnd(size / MiB + 1) + 1) * (uint64_t)MiB;
		break;
	case 2:
		b = 64 * KiB;
		break;
	default:
		return rnd(size + 1);
	}
	b = b > 100 ? b - rnd(200) + 100 : 0;
	return b > size ? size : b;
}

static uint32_t pick_len(void)
{
	switch (rnd(5)) {
	case 0:
	case 1:
		return (uint32_t)rnd_in(1, 4 * KiB);
	case 2:
	case 3:
		return (uint32_t)rnd_in(1, 64 * KiB);
	default:
		return (uint32_t)rnd_in(1, MAX_WRITE);
	}
}

/* WRITE [off, off+len) of fresh random bytes through a side, then update the
 * model. how: FILE_SYNC, DATA_SYNC or UNSTABLE (then COMMIT if commit). */
static void write_bytes(struct side *s, int i, const struct fh *fh, uint64_t off, uint32_t len,
                        stable_how how, bool commit)
{
	struct inode *sl = ino_of(i);
	uint32_t done = 0;

	rnd_bytes(g_wbuf, len);
	while (done < len) {
		uint32_t n = len - done < s->wtmax ? len - done : s->wtmax;
		int st = c3_write(s, fh, off + done, g_wbuf + done, n, how, &g_r);

		g_fail_slot = i;
		expect_ok(s, "WRITE", st);
		if (g_r.count == 0 || g_r.count > n)
			fatal("%s WRITE %s: count %u for %u bytes", s->label, slot_path(i),
			      g_r.count, n);
		done += g_r.count;
	}
	if (how == UNSTABLE)
		g_unstable++;
	if (commit) {
		int st = c3_commit(s, fh, chance(50) ? 0 : off, chance(50) ? 0 : len, &g_r);
		expect_ok(s, "COMMIT", st);
		g_commits++;
	}
	if (off + len > sl->size)
		ino_resize(sl, (size_t)(off + len));
	memcpy(sl->data + off, g_wbuf, len);
	if (sl->nlink > 1)
		g_linked_ops++;
}

static const char *how_name(stable_how h)
{
	return h == FILE_SYNC ? "FILE_SYNC" : h == DATA_SYNC ? "DATA_SYNC" : "UNSTABLE";
}

static void do_write(struct side *s, int i)
{
	struct inode *sl = ino_of(i);
	uint64_t off = pick_offset(sl->size);
	uint32_t len = pick_len();
	stable_how how = chance(40) ? FILE_SYNC : chance(25) ? DATA_SYNC : UNSTABLE;
	bool commit = how == UNSTABLE && chance(60);
	struct fh fh;

	if (off + len > MAX_FILE) {
		off = rnd(MAX_FILE - MAX_WRITE);
		if (off > sl->size)
			off = sl->size;
	}
	op_touch(i);
	oplog("write %s %s off %" PRIu64 " len %u %s%s (size %zu -> %zu)%s", s->label,
	      slot_path(i), off, len, how_name(how), commit ? "+COMMIT" : "", sl->size,
	      off + len > sl->size ? (size_t)(off + len) : sl->size, links_of(i));
	slot_fh(s, i, &fh);
	write_bytes(s, i, &fh, off, len, how, commit);
	bump(K_WRITE, s);
	check_upstream_size(i);
}

static void do_truncate(struct side *s, int i)
{
	struct inode *sl = ino_of(i);
	static const uint64_t edges[] = {0,       1,   64 * KiB - 1, 64 * KiB,      64 * KiB + 1,
	                                 MiB - 1, MiB, MiB + 1,      2 * MiB + 4321};
	uint64_t n;
	struct fh fh;
	int st;

	switch (rnd(10)) {
	case 0:
	case 1:
	case 2:
	case 3:
		n = rnd(sl->size + 1); /* shrink (or same) */
		break;
	case 4:
		n = 0;
		break;
	case 5:
	case 6:
	case 7:
		n = sl->size + rnd_in(1, MAX_WRITE); /* grow a little */
		break;
	case 8:
		n = rnd_in(MiB / 2, 3 * MiB); /* jump */
		break;
	default:
		n = edges[rnd(sizeof(edges) / sizeof(edges[0]))];
	}
	if (n > MAX_FILE)
		n = rnd(sl->size + 1);
	op_touch(i);
	oplog("truncate %s %s %zu -> %" PRIu64 "%s", s->label, slot_path(i), sl->size, n,
	      links_of(i));
	slot_fh(s, i, &fh);
	st = c3_setsize(s, &fh, n, &g_r);
	g_fail_slot = i;
	expect_ok(s, "SETATTR", st);
	ino_resize(sl, (size_t)n);
	bump(K_TRUNC, s);
	check_upstream_size(i);
}

static void do_rename(struct side *s, int from, int to)
{
	struct slot *a = &g_slots[from], *b = &g_slots[to];
	bool same = exists(to) && b->ino == a->ino;
	int replaced = exists(to) && !same ? b->ino : -1;
	int st;

	op_touch(from);
	op_touch(to);
	oplog("rename %s %s -> %s%s%s", s->label, slot_path(from), slot_path(to),
	      same ? " (two names of one file)" : exists(to) ? " (over an existing file)" : "",
	      links_of(from));
	if (exists(to))
		g_rename_over++;
	st = c3_rename(s, &s->dir[a->dir], a->name, &s->dir[b->dir], b->name, &g_r);
	g_fail_slot = from;
	expect_ok(s, "RENAME", st);
	/* the model: b names a's file (two names of one file: nothing
	 * happens, POSIX rename) */
	if (!same) {
		if (exists(to))
			unlink_slot(to);
		b->ino = a->ino;
		a->ino = -1;
	}
	bump(K_RENAME, s);
	check_upstream_size(from);
	check_upstream_size(to);
	if (!same)
		check_proxy_noent(from);
	/* a replaced file that has other names: one link fewer */
	for (int k = 0; k < NSLOTS; k++)
		if (replaced >= 0 && g_slots[k].ino == replaced)
			check_upstream_size(k);
}

static void do_remove(struct side *s, int i)
{
	struct slot *sl = &g_slots[i];
	int st;

	op_touch(i);
	oplog("remove %s %s%s", s->label, slot_path(i), links_of(i));
	if (ino_of(i)->nlink > 1)
		g_linked_ops++;
	int ino = sl->ino;
	st = c3_remove(s, &s->dir[sl->dir], sl->name, &g_r);
	g_fail_slot = i;
	expect_ok(s, "REMOVE", st);
	unlink_slot(i);
	bump(K_REMOVE, s);
	check_upstream_size(i);
	check_proxy_noent(i);
	for (int k = 0; k < NSLOTS; k++)
		if (g_slots[k].ino == ino)
			check_upstream_size(k); /* the other names: one link fewer */
}

/* A second name for slot i's file: LINK, through a side. */
static void do_link(struct side *s, int i, int j)
{
	struct fh fh;
	int st;

	op_touch(i);
	op_touch(j);
	oplog("link %s %s -> %s%s", s->label, slot_path(j), slot_path(i), links_of(i));
	slot_fh(s, i, &fh);
	st = c3_link(s, &fh, &s->dir[g_slots[j].dir], g_slots[j].name, &g_r);
	g_fail_slot = j;
	expect_ok(s, "LINK", st);
	g_slots[j].ino = g_slots[i].ino;
	ino_of(i)->nlink++;
	g_linked_ops++;
	bump(K_LINK, s);
	check_upstream_size(i);
	check_upstream_size(j);
}

static void do_chmod(struct side *s, int i)
{
	static const uint32_t modes[] = {0644, 0600, 0640, 0604, 0755, 0444, 0400, 0000, 0666};
	uint32_t mode = modes[rnd(sizeof(modes) / sizeof(modes[0]))];
	struct fh fh;
	int st;

	op_touch(i);
	oplog("chmod %s %s %o -> %o%s", s->label, slot_path(i), ino_of(i)->mode, mode,
	      links_of(i));
	slot_fh(s, i, &fh);
	st = c3_setmode(s, &fh, mode, &g_r);
	g_fail_slot = i;
	expect_ok(s, "SETATTR", st);
	ino_of(i)->mode = mode;
	bump(K_CHMOD, s);
	check_upstream_size(i);
}

static void do_read(int i)
{
	bool partial = chance(25);

	oplog("read proxy %s (size %zu)%s", slot_path(i), ino_of(i)->size, links_of(i));
	check_read(i, partial, "check");
	bump(K_READ, &g_proxy);
}

static void do_readdir(int d)
{
	oplog("readdir proxy %s", dir_name[d]);
	check_readdir(d);
	bump(K_READDIR, &g_proxy);
}

/* LOOKUP through the proxy: NOENT for a missing name; for an existing one
 * the GETATTR through the proxy equals the upstream's. */
static void do_lookup(int i)
{
	op_touch(i);
	oplog("lookup proxy %s (%s)", slot_path(i), exists(i) ? "exists" : "missing");
	if (!exists(i)) {
		check_proxy_noent(i);
	} else {
		struct fh pfh, dfh;
		fattr3 pa, da;

		slot_fh(&g_proxy, i, &pfh);
		getattr_ok(&g_proxy, &pfh, &pa, slot_path(i));
		slot_fh(&g_direct, i, &dfh);
		getattr_ok(&g_direct, &dfh, &da, slot_path(i));
		cmp_attrs(i, "GETATTR", &pa, &da);
	}
	bump(K_LOOKUP, &g_proxy);
}

/* The timestamp-tick case: the file's data is written directly, read through
 * the proxy (filling the cache) and overwritten in place directly at once
 * (the size stays the same; on a coarse clock mtime and ctime may stay the
 * same too), then re-opened and read through the proxy. */
static void do_tick(int i)
{
	struct inode *sl = ino_of(i);
	struct fh dfh, pfh;
	fattr3 pa;
	int nw = (int)rnd_in(1, 3);

	op_touch(i);
	oplog("tick %s (size %zu):", slot_path(i), sl->size);
	slot_fh(&g_direct, i, &dfh);
	if (sl->size == 0 || chance(30)) {
		/* (re)fill: small files are inline objects, larger ones chunked */
		uint32_t len = chance(70) ? (uint32_t)rnd_in(1, 64 * KiB)
		                          : (uint32_t)rnd_in(64 * KiB, MAX_WRITE);
		oplog(" direct write 0+%u", len);
		write_bytes(&g_direct, i, &dfh, 0, len, FILE_SYNC, false);
		if (sl->size > len && chance(50)) {
			int st = c3_setsize(&g_direct, &dfh, len, &g_r);
			expect_ok(&g_direct, "SETATTR", st);
			ino_resize(sl, len);
			oplog(" direct truncate %u", len);
		}
	}
	if (chance(60)) {
		/* one in-place write just before the fill (else the fill may
		 * find the file unchanged for a while, and store it) */
		uint64_t off = rnd(sl->size);
		uint32_t len = (uint32_t)rnd_in(1, sl->size - off < 4096 ? sl->size - off : 4096);
		oplog(" direct write %" PRIu64 "+%u", off, len);
		write_bytes(&g_direct, i, &dfh, off, len, chance(50) ? FILE_SYNC : UNSTABLE, false);
		g_tick_writes++;
	}
	/* fill through the proxy, checked against the model only (no time lost) */
	slot_fh(&g_proxy, i, &pfh);
	getattr_ok(&g_proxy, &pfh, &pa, slot_path(i));
	size_t pn = read_range(&g_proxy, &pfh, 0, 0, MiB, g_pbuf, BUFCAP, pa.size, NULL, NULL,
	                       slot_path(i));
	g_fail_slot = i;
	cmp_bytes("tick: fill READ through the proxy vs the model", 0, "proxy", g_pbuf, pn, "model",
	          sl->data, sl->size);
	/* same-size overwrites in place, back to back */
	for (int k = 0; k < nw; k++) {
		uint64_t off = rnd(sl->size);
		uint32_t len = (uint32_t)rnd_in(1, sl->size - off < 4096 ? sl->size - off : 4096);
		oplog(" direct write %" PRIu64 "+%u", off, len);
		write_bytes(&g_direct, i, &dfh, off, len, chance(50) ? FILE_SYNC : UNSTABLE, false);
		g_tick_writes++;
	}
	check_read(i, false, "re-open");
	bump(K_TICK, &g_direct);
}

/* ---- the op mix ---- */

struct mix {
	const char *name;
	unsigned w[NKINDS];
};

/*              create write trunc rename remove read readdir lookup tick link chmod */
static const struct mix mixes[] = {
    {"default", {10, 18, 8, 8, 6, 20, 10, 5, 8, 5, 4}},
    {"data", {4, 28, 10, 3, 2, 30, 4, 3, 14, 2, 2}},
    {"meta", {20, 8, 5, 20, 14, 12, 15, 6, 2, 10, 6}},
    {"tick", {5, 8, 4, 3, 2, 12, 4, 2, 60, 1, 1}},
};

static const struct mix *g_mixp;

static void one_op(void)
{
	unsigned total = 0, r;
	enum kind k = K_READ;
	int i, j;

	for (int n = 0; n < NKINDS; n++)
		total += g_mixp->w[n];
	r = (unsigned)rnd(total);
	for (int n = 0; n < NKINDS; n++) {
		if (r < g_mixp->w[n]) {
			k = (enum kind)n;
			break;
		}
		r -= g_mixp->w[n];
	}
	if (g_proxy_changes && k == K_TICK)
		k = K_READ; /* a tick is a direct change */
	/* ops that need a file when there is none (or too few to remove): create */
	if (count_existing() == 0 && k != K_CREATE && k != K_READDIR && k != K_LOOKUP)
		k = K_CREATE;
	if (count_existing() <= 1 && (k == K_REMOVE || k == K_RENAME) && chance(70))
		k = K_CREATE;
	if (k == K_LINK && count_existing() == NSLOTS)
		k = K_REMOVE;

	switch (k) {
	case K_CREATE:
		i = (int)rnd(NSLOTS);
		do_create(pick_side(i, false), i);
		break;
	case K_WRITE:
		i = pick_existing();
		do_write(pick_side(i, true), i);
		break;
	case K_TRUNC:
		i = pick_existing();
		do_truncate(pick_side(i, true), i);
		break;
	case K_RENAME:
		i = pick_existing();
		j = (int)rnd(NSLOTS - 1);
		if (j >= i)
			j++;
		do_rename(pick_side(i, false), i, j);
		break;
	case K_REMOVE:
		i = pick_existing();
		do_remove(pick_side(i, false), i);
		break;
	case K_READ:
		do_read(pick_existing());
		break;
	case K_READDIR:
		do_readdir((int)rnd(NDIRS));
		break;
	case K_LOOKUP:
		i = chance(50) ? pick_missing() : pick_existing();
		do_lookup(i >= 0 ? i : (int)rnd(NSLOTS));
		break;
	case K_TICK:
		do_tick(pick_existing());
		break;
	case K_LINK:
		i = pick_existing();
		j = pick_missing();
		do_link(pick_side(i, false), i, j);
		break;
	case K_CHMOD:
		i = pick_existing();
		do_chmod(pick_side(i, false), i);
		break;
	case NKINDS:
		break;
	}
}

/* ---- setup, final sweep, cleanup ---- */

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void setup_dirs(void)
{
	struct res r = {0};
	int st;

	op_begin();
	oplog("setup: mkdir %s, %s/d0, %s/d1 (direct)", g_scratch, g_scratch, g_scratch);
	st = c3_mkdir(&g_direct, &g_direct.root, g_scratch, &r);
	if (st != NFS3_OK)
		fatal("direct MKDIR %s: %s (choose another --dir)", g_scratch, nfsstat_name(st));
	for (int s = 0; s < 2; s++) {
		struct side *sd = s ? &g_proxy : &g_direct;

		st = c3_lookup(sd, &sd->root, g_scratch, &r);
		expect_ok(sd, "LOOKUP scratch dir", st);
		sd->dir[0] = r.fh;
		for (int d = 1; d < NDIRS; d++) {
			if (!s) {
				st = c3_mkdir(sd, &sd->dir[0], dir_name[d], &r);
				expect_ok(sd, "MKDIR", st);
			}
			st = c3_lookup(sd, &sd->dir[0], dir_name[d], &r);
			expect_ok(sd, "LOOKUP subdir", st);
			sd->dir[d] = r.fh;
		}
	}
	res_clear(&r);
}

static void final_sweep(void)
{
	op_begin();
	oplog("final: read every file and list every directory through the proxy");
	for (int i = 0; i < NSLOTS; i++)
		if (exists(i))
			check_read(i, false, "final");
		else
			check_proxy_noent(i);
	for (int d = 0; d < NDIRS; d++)
		check_readdir(d);
}

static void cleanup(void)
{
	for (int i = 0; i < NSLOTS; i++)
		if (exists(i))
			c3_remove(&g_direct, &g_direct.dir[g_slots[i].dir], g_slots[i].name, &g_r);
	for (int d = 1; d < NDIRS; d++)
		c3_rmdir(&g_direct, &g_direct.dir[0], dir_name[d], &g_r);
	if (c3_rmdir(&g_direct, &g_direct.root, g_scratch, &g_r) != NFS3_OK)
		fprintf(stderr, "nfsmodel: could not remove %s: %s\n", g_scratch,
		        nfsstat_name(g_r.stat));
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: nfsmodel --proxy-port P --nfs-port N --mount-port M --export PATH\n"
	        "                [--host H] [--seed S] [--ops N] [--think-ms N]\n"
	        "                [--pause-every N] [--pause-ms MS]\n"
	        "                [--mix default|data|meta|tick] [--dir NAME] [--timeout S]\n"
	        "                [--verbose] [--keep] [--proxy-mount-port M]\n"
	        "                [--changes both|proxy]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	bool seeded = false;
	const char *dir = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--verbose") == 0) {
			g_verbose = true;
			continue;
		}
		if (strcmp(a, "--keep") == 0) {
			g_keep = true;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (strcmp(a, "--proxy-port") == 0)
			g_proxy_port = atoi(v);
		else if (strcmp(a, "--proxy-mount-port") == 0)
			g_proxy_mnt_port = atoi(v);
		else if (strcmp(a, "--nfs-port") == 0)
			g_nfs_port = atoi(v);
		else if (strcmp(a, "--mount-port") == 0)
			g_mnt_port = atoi(v);
		else if (strcmp(a, "--export") == 0)
			g_export = v;
		else if (strcmp(a, "--host") == 0)
			g_host = v;
		else if (strcmp(a, "--seed") == 0) {
			g_seed = strtoull(v, NULL, 0);
			seeded = true;
		} else if (strcmp(a, "--ops") == 0)
			g_nops = atol(v);
		else if (strcmp(a, "--pause-every") == 0)
			g_pause_every = atol(v);
		else if (strcmp(a, "--pause-ms") == 0)
			g_pause_ms = atol(v);
		else if (strcmp(a, "--think-ms") == 0)
			g_think_ms = atol(v);
		else if (strcmp(a, "--mix") == 0)
			g_mix = v;
		else if (strcmp(a, "--changes") == 0 && strcmp(v, "proxy") == 0)
			g_proxy_changes = true;
		else if (strcmp(a, "--changes") == 0 && strcmp(v, "both") == 0)
			g_proxy_changes = false;
		else if (strcmp(a, "--dir") == 0)
			dir = v;
		else if (strcmp(a, "--timeout") == 0)
			g_timeout_s = atoi(v);
		else
			usage();
	}
	if (g_proxy_port <= 0 || g_nfs_port <= 0 || g_mnt_port <= 0 || !g_export || g_nops < 0 ||
	    g_timeout_s <= 0 || g_think_ms < 0 || g_pause_every < 0 || g_pause_ms < 0)
		usage();
	for (size_t m = 0; m < sizeof(mixes) / sizeof(mixes[0]); m++)
		if (strcmp(mixes[m].name, g_mix) == 0)
			g_mixp = &mixes[m];
	if (!g_mixp)
		usage();
	if (!seeded) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		g_seed = ((uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^
		          (uint64_t)getpid() << 20) %
		         1000000000u;
	}
	g_rng = g_seed;
	if (dir)
		snprintf(g_scratch, sizeof(g_scratch), "%s", dir);
	else
		snprintf(g_scratch, sizeof(g_scratch), "nfsmodel-%" PRIu64 "-%d", g_seed,
		         (int)getpid());
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("nfsmodel: seed %" PRIu64 ", %ld ops, mix %s, changes %s, dir %s\n", g_seed, g_nops,
	       g_mix, g_proxy_changes ? "proxy" : "both", g_scratch);

	g_pbuf = malloc(BUFCAP);
	g_dbuf = malloc(BUFCAP);
	g_wbuf = malloc(MAX_WRITE);
	if (!g_pbuf || !g_dbuf || !g_wbuf)
		fatal("out of memory");

	side_connect(&g_direct, g_nfs_port);
	side_mount(&g_direct, g_mnt_port);
	side_connect(&g_proxy, g_proxy_port);
	side_mount(&g_proxy, g_proxy_mnt_port);
	setup_dirs();

	double t0 = now_s();
	for (g_opno = 0; g_opno < g_nops; g_opno++) {
		op_begin();
		oplog("#%ld ", g_opno);
		g_fail_slot = -1;
		one_op();
		if (g_verbose)
			printf("%s\n", cur_op()->text);
		if (g_think_ms)
			sleep_ms(g_think_ms);
		if (g_pause_every && g_opno + 1 < g_nops && (g_opno + 1) % g_pause_every == 0) {
			op_begin();
			oplog("pause %ld ms (every file ages past the proxy's fresh guard)",
			      g_pause_ms);
			sleep_ms(g_pause_ms);
			g_pauses++;
			/* every file through the proxy now: what may be stored is */
			oplog(", then read every file:");
			for (int i = 0; i < NSLOTS; i++)
				if (exists(i))
					check_read(i, false, "warm");
			if (g_verbose)
				printf("%s\n", cur_op()->text);
		}
	}
	final_sweep();
	double dt = now_s() - t0;

	double busy = dt - (double)g_pauses * (double)g_pause_ms / 1000;
	printf("nfsmodel: seed %" PRIu64 ": %ld ops in %.1f s (%.1f s of pauses; %.2f ms/op), all "
	       "checks passed\n",
	       g_seed, g_nops, dt, dt - busy, g_nops ? busy * 1000 / (double)g_nops : 0.0);
	printf("nfsmodel: ops:");
	for (int k = 0; k < NKINDS; k++)
		printf(" %s %lu (proxy %lu, direct %lu)%s", kind_name[k],
		       g_count[k][0] + g_count[k][1], g_count[k][0], g_count[k][1],
		       k + 1 < NKINDS ? "," : "\n");
	printf(
	    "nfsmodel: checks: %lu proxy reads (%.1f MiB compared), %lu listings, %lu NOENT "
	    "lookups; %lu unstable writes, %lu commits, %lu create-truncates, %lu renames over a "
	    "file, %lu tick writes, %lu ops on files with several names, %lu pauses, %lu listing "
	    "pages the upstream fails too; calls: proxy %lu, direct %lu\n",
	    g_checks_read, (double)g_bytes_checked / MiB, g_checks_dir, g_checks_noent, g_unstable,
	    g_commits, g_create_trunc, g_rename_over, g_tick_writes, g_linked_ops, g_pauses,
	    g_upstream_faults,
	    g_proxy.calls,
	    g_direct.calls);
	if (g_upstream_faults)
		printf("nfsmodel: upstream: %lu listing page(s) failed through the proxy and directly "
		       "alike (the server's answer to their counts), asked again with other counts\n",
		       g_upstream_faults);
	if (!g_keep)
		cleanup();
	rpc_destroy_context(g_proxy.rpc);
	rpc_destroy_context(g_direct.rpc);
	for (int i = 0; i < NSLOTS; i++)
		free(g_inodes[i].data);
	free(g_pbuf);
	free(g_dbuf);
	free(g_wbuf);
	free(g_hist);
	res_clear(&g_r);
	return 0;
}
