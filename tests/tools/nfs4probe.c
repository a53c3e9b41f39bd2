/* nfs4probe: runs the NFSv4.0 upstream module (cachefsd/upstream/nfs4.c)
 * on its own event loop against a server, or (--v3) the same questions
 * over plain NFSv3, and prints what it sees in one format, so that a test
 * can diff the two views of one directory.
 *
 *   nfs4probe [--v3 --mountport M] --host H --port P --path EXPORT
 *             [--uid U --gid G] [--domain D] [--client-id S] [--maxcount N]
 *             [--timeout S] [--out FILE] CMD...
 *     --path    v4: the export's path in the pseudo-filesystem; v3: the
 *               MOUNT path
 *     --domain  the idmap domain of user@domain owners ("" any) [""]
 *     --maxcount N  READDIRPLUS's maxcount (small: many pages) [32768]
 *     --out     where `read` writes the bytes
 *   CMDs, run in order (REL is relative to the export, "." its root):
 *     root          "root fhlen N" (v4: "lease S maxread M" too)
 *     fh REL        "fh REL HEX": the handle the server gives REL
 *     getattr REL   "attr REL <attributes>" (v4: " change C" too)
 *     read REL      "read REL bytes N xxh64 HEX"
 *     access REL    ACCESS of all six v3 bits: "access REL 0xGRANTED"
 *     readlink REL  "readlink REL TARGET"
 *     ls REL        READDIRPLUS to the end: "dots" with . and .. if both
 *                   came, then "ent NAME <attributes> fh N" per other
 *                   entry, sorted by name, then "ls REL entries N pages P"
 *     watch S       a GETATTR of the root every 200 ms for S seconds
 *                   (each waits as long as the module makes it):
 *                   "watch started" at once, then "watch calls N failed F
 *                   longest_ms L"
 *     stats         v4: the module's counters, "stats renews R ..."
 *   the writes (v4 only but fsstat/fsinfo/pathconf; REL's parent must
 *   exist; "wcc" lines: "wcc WHAT before SIZE|- after <attributes>|-"):
 *     write REL OFF LEN SEED unstable|file_sync   bytes (OFF+i)*31+SEED:
 *                   "write REL count N committed C verf HEX" + wcc
 *     commit REL    "commit REL verf HEX" + wcc
 *     truncate REL SIZE           SETATTR size: "setattr REL nfsstat3 N" + wcc
 *     chmod REL MODE fresh|stale  SETATTR mode guarded by the ctime a
 *                   GETATTR just gave (stale: one second off)
 *     create REL unchecked|guarded|exclusive [VERF]   "create REL nfsstat3
 *                   N fh L" + attributes line "attr REL ..." + wcc
 *     mkdir REL, mkfifo REL, symlink REL TARGET: as create
 *     remove REL, rmdir REL, rename REL REL2, link REL REL2: "OP REL
 *                   nfsstat3 N" + wcc (rename: of both directories)
 *     fsstat, fsinfo, pathconf: of the root, v3 and v4 alike
 *     waitfile PATH  runs the loop (RENEWs, reconnects) until PATH exists
 *   byte-range locks (v4 only; the module's lock API, nfs4lock.c, as the
 *   owner host "nfs4probe", svid = the pid; LEN 0: to the end):
 *     lockt REL read|write OFF LEN   LOCKT: "lockt REL granted", or
 *                   "lockt REL denied offset O len L exclusive E"
 *     lock REL read|write OFF LEN    OPEN + LOCK: "lock REL granted" or
 *                   "lock REL denied ..." as lockt (held until unlock or exit)
 *     unlock REL OFF LEN             LOCKU: "unlock REL granted"
 *   <attributes>: "type T mode OCTAL nlink N uid U gid G size S used U
 *   fileid F mtime S.NS ctime S.NS" (no atime: reading changes it).
 * Exit: 0 every command answered NFS3_OK, 1 otherwise (the line says
 * "error ..."), 2 usage. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "log.h"
#include "loop.h"
#include "nfs3call.h"
#include "nfs4up.h"

struct side {
	int v4;
	int timeout_ms;
	struct loop *loop;
	struct n4_client *n4;
	struct rpc_context *rpc; /* v3 */
	struct n4_fh root;
	struct cfs_cred cred;
	struct n4_locks *locks; /* lock, lockt, unlock: made at the first */
};

/* what a callback copies out of a v3 result */
typedef void (*take_fn)(void *res3, const struct n4_coh *coh, void *ctx);

struct pending {
	int done;
	int status; /* 0, or -errno / RPC_STATUS_* */
	char err[256];
	take_fn take;
	void *ctx;
};

static void v4_cb(int status, void *res3, const struct n4_coh *coh, void *priv)
{
	struct pending *p = priv;

	p->done = 1;
	p->status = status;
	if (status == 0)
		p->take(res3, coh, p->ctx);
	else
		snprintf(p->err, sizeof(p->err), "module status %d (%s)", status,
		         strerror(status < 0 && status > -4096 ? -status : EPROTO));
}

static void v3_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct pending *p = priv;

	(void)rpc;
	p->done = 1;
	p->status = status == RPC_STATUS_SUCCESS ? 0 : -EIO;
	if (status == RPC_STATUS_SUCCESS)
		p->take(data, NULL, p->ctx);
	else
		snprintf(p->err, sizeof(p->err), "rpc: %s", data ? (const char *)data : "?");
}

/* One call, waited for. 0 when answered (the nfsstat3 is the taker's),
 * -1 with a message otherwise. */
static int do_call(struct side *s, uint32_t proc, void *args, take_fn take, void *ctx, char *err,
                   size_t errlen)
{
	struct pending p = {0, 0, "", take, ctx};
	long long deadline = mono_ms() + s->timeout_ms;
	int rc;

	if (s->v4) {
		rc = n4_call(s->n4, proc, args, &s->cred, v4_cb, &p);
		if (rc) {
			snprintf(err, errlen, "n4_call: %s", strerror(-rc));
			return -1;
		}
		while (!p.done && mono_ms() < deadline)
			loop_once(s->loop, 100);
	} else {
		switch (proc) {
		case NFS3_GETATTR:
			rc = rpc_nfs3_getattr_async(s->rpc, v3_cb, args, &p);
			break;
		case NFS3_LOOKUP:
			rc = rpc_nfs3_lookup_async(s->rpc, v3_cb, args, &p);
			break;
		case NFS3_READ:
			rc = rpc_nfs3_read_async(s->rpc, v3_cb, args, &p);
			break;
		case NFS3_READDIRPLUS:
			rc = rpc_nfs3_readdirplus_async(s->rpc, v3_cb, args, &p);
			break;
		case NFS3_ACCESS:
			rc = rpc_nfs3_access_async(s->rpc, v3_cb, args, &p);
			break;
		case NFS3_READLINK:
			rc = rpc_nfs3_readlink_async(s->rpc, v3_cb, args, &p);
			break;
		case NFS3_FSSTAT:
			rc = rpc_nfs3_fsstat_async(s->rpc, v3_cb, args, &p);
			break;
		case NFS3_FSINFO:
			rc = rpc_nfs3_fsinfo_async(s->rpc, v3_cb, args, &p);
			break;
		case NFS3_PATHCONF:
			rc = rpc_nfs3_pathconf_async(s->rpc, v3_cb, args, &p);
			break;
		default:
			rc = -1;
		}
		if (rc) {
			snprintf(err, errlen, "cannot send: %s", rpc_get_error(s->rpc));
			return -1;
		}
		while (!p.done && mono_ms() < deadline) {
			struct pollfd pfd = {rpc_get_fd(s->rpc), (short)rpc_which_events(s->rpc),
			                     0};
			if (poll(&pfd, 1, 100) > 0 && rpc_service(s->rpc, pfd.revents) < 0) {
				snprintf(err, errlen, "rpc_service: %s", rpc_get_error(s->rpc));
				return -1;
			}
		}
	}
	if (!p.done) {
		snprintf(err, errlen, "no answer within %d s", s->timeout_ms / 1000);
		return -1;
	}
	if (p.status) {
		snprintf(err, errlen, "%s", p.err);
		return -1;
	}
	return 0;
}

static void fmt_attr(char *buf, size_t len, const fattr3 *a)
{
	snprintf(buf, len,
	         "type %d mode %o nlink %u uid %u gid %u size %" PRIu64 " used %" PRIu64
	         " fileid %" PRIu64 " mtime %u.%09u ctime %u.%09u",
	         (int)a->type, a->mode, a->nlink, a->uid, a->gid, a->size, a->used, a->fileid,
	         a->mtime.seconds, a->mtime.nseconds, a->ctime.seconds, a->ctime.nseconds);
}

/* --- the calls ------------------------------------------------------------- */

struct obj {
	int stat;
	struct n4_fh fh;
	int has_attr;
	fattr3 attr;
	int has_change;
	uint64_t change;
};

static void take_lookup(void *res3, const struct n4_coh *coh, void *ctx)
{
	LOOKUP3res *r = res3;
	struct obj *o = ctx;

	o->stat = r->status;
	if (r->status != NFS3_OK)
		return;
	o->fh.len = r->LOOKUP3res_u.resok.object.data.data_len;
	if (o->fh.len > N4_FHSIZE)
		o->fh.len = N4_FHSIZE;
	memcpy(o->fh.data, r->LOOKUP3res_u.resok.object.data.data_val, o->fh.len);
	o->has_attr = r->LOOKUP3res_u.resok.obj_attributes.attributes_follow;
	o->attr = r->LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	if (coh && coh->has_change) {
		o->has_change = 1;
		o->change = coh->change;
	}
}

static void take_getattr(void *res3, const struct n4_coh *coh, void *ctx)
{
	GETATTR3res *r = res3;
	struct obj *o = ctx;

	o->stat = r->status;
	if (r->status != NFS3_OK)
		return;
	o->has_attr = 1;
	o->attr = r->GETATTR3res_u.resok.obj_attributes;
	if (coh && coh->has_change) {
		o->has_change = 1;
		o->change = coh->change;
	}
}

static void fh3(nfs_fh3 *dst, const struct n4_fh *fh)
{
	dst->data.data_len = fh->len;
	dst->data.data_val = (char *)fh->data;
}

/* REL walked with LOOKUPs from the root, then a GETATTR */
static int walk(struct side *s, const char *rel, struct obj *o, char *err, size_t errlen)
{
	char buf[1024], *save = NULL;
	GETATTR3args ga;

	memset(o, 0, sizeof(*o));
	o->fh = s->root;
	snprintf(buf, sizeof(buf), "%s", rel);
	for (char *p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		LOOKUP3args a;
		struct n4_fh dir = o->fh;
		if (strcmp(p, ".") == 0)
			continue;
		memset(&a, 0, sizeof(a));
		fh3(&a.what.dir, &dir);
		a.what.name = p;
		if (do_call(s, NFS3_LOOKUP, &a, take_lookup, o, err, errlen))
			return -1;
		if (o->stat != NFS3_OK) {
			snprintf(err, errlen, "LOOKUP %s: nfsstat3 %d", p, o->stat);
			return -1;
		}
	}
	memset(&ga, 0, sizeof(ga));
	fh3(&ga.object, &o->fh);
	if (do_call(s, NFS3_GETATTR, &ga, take_getattr, o, err, errlen))
		return -1;
	if (o->stat != NFS3_OK) {
		snprintf(err, errlen, "GETATTR: nfsstat3 %d", o->stat);
		return -1;
	}
	return 0;
}

struct rd {
	int stat;
	uint32_t count;
	int eof;
	XXH64_state_t *h;
	FILE *out;
};

static void take_read(void *res3, const struct n4_coh *coh, void *ctx)
{
	READ3res *r = res3;
	struct rd *d = ctx;

	(void)coh;
	d->stat = r->status;
	if (r->status != NFS3_OK)
		return;
	d->count = r->READ3res_u.resok.count;
	d->eof = r->READ3res_u.resok.eof;
	XXH64_update(d->h, r->READ3res_u.resok.data.data_val, r->READ3res_u.resok.data.data_len);
	if (d->out)
		fwrite(r->READ3res_u.resok.data.data_val, 1, r->READ3res_u.resok.data.data_len,
		       d->out);
}

struct ent {
	char name[256];
	int has_attr;
	fattr3 attr;
	uint32_t fhlen;
};

struct listing {
	int stat;
	struct ent *e;
	size_t n, cap;
	uint64_t cookie;
	char verf[NFS3_COOKIEVERFSIZE];
	int eof;
	int got; /* entries in the last page */
};

static void take_rdp(void *res3, const struct n4_coh *coh, void *ctx)
{
	READDIRPLUS3res *r = res3;
	struct listing *l = ctx;
	entryplus3 e;

	(void)coh;
	l->stat = r->status;
	l->got = 0;
	if (r->status != NFS3_OK)
		return;
	memcpy(l->verf, r->READDIRPLUS3res_u.resok.cookieverf, sizeof(l->verf));
	l->eof = r->READDIRPLUS3res_u.resok.reply.eof;
	for (const void *p = r->READDIRPLUS3res_u.resok.reply.entries; p; p = e.nextentry) {
		memcpy(&e, p, sizeof(e)); /* libnfs: 4-byte aligned entries */
		if (l->n == l->cap) {
			l->cap = l->cap ? 2 * l->cap : 64;
			l->e = realloc(l->e, l->cap * sizeof(*l->e));
			if (l->e == NULL)
				abort();
		}
		struct ent *x = &l->e[l->n++];
		memset(x, 0, sizeof(*x));
		snprintf(x->name, sizeof(x->name), "%s", e.name);
		x->has_attr = e.name_attributes.attributes_follow;
		x->attr = e.name_attributes.post_op_attr_u.attributes;
		x->fhlen = e.name_handle.handle_follows
		               ? e.name_handle.post_op_fh3_u.handle.data.data_len
		               : 0;
		l->cookie = e.cookie;
		l->got++;
	}
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

/* --- commands --------------------------------------------------------------- */

static uint32_t maxcount = 32768;
static const char *outpath;

/* "fh REL HEX": the handle as the server gives it (REL "." the root) */
static int cmd_fh(struct side *s, const char *rel)
{
	struct obj o;
	char err[300];

	if (walk(s, rel, &o, err, sizeof(err))) {
		printf("error fh %s: %s\n", rel, err);
		return 1;
	}
	printf("fh %s ", rel);
	for (uint32_t i = 0; i < o.fh.len; i++)
		printf("%02x", o.fh.data[i]);
	printf("\n");
	return 0;
}

static int cmd_getattr(struct side *s, const char *rel)
{
	struct obj o;
	char err[300], a[512];

	if (walk(s, rel, &o, err, sizeof(err))) {
		printf("error getattr %s: %s\n", rel, err);
		return 1;
	}
	fmt_attr(a, sizeof(a), &o.attr);
	if (s->v4)
		printf("attr %s %s change %" PRIu64 "%s\n", rel, a, o.change,
		       o.has_change ? "" : " (none)");
	else
		printf("attr %s %s\n", rel, a);
	return 0;
}

static int cmd_read(struct side *s, const char *rel)
{
	struct obj o;
	struct rd d;
	char err[300];
	uint64_t off = 0;
	int rc = 0;

	if (walk(s, rel, &o, err, sizeof(err))) {
		printf("error read %s: %s\n", rel, err);
		return 1;
	}
	memset(&d, 0, sizeof(d));
	d.h = XXH64_createState();
	XXH64_reset(d.h, 0);
	if (outpath && (d.out = fopen(outpath, "w")) == NULL) {
		printf("error read %s: cannot write %s\n", rel, outpath);
		XXH64_freeState(d.h);
		return 1;
	}
	for (;;) {
		READ3args a;
		memset(&a, 0, sizeof(a));
		fh3(&a.file, &o.fh);
		a.offset = off;
		a.count = 256 * 1024;
		if (do_call(s, NFS3_READ, &a, take_read, &d, err, sizeof(err)) ||
		    d.stat != NFS3_OK) {
			printf("error read %s at %" PRIu64 ": %s (nfsstat3 %d)\n", rel, off, err,
			       d.stat);
			rc = 1;
			break;
		}
		off += d.count;
		if (d.eof || d.count == 0)
			break;
	}
	if (rc == 0)
		printf("read %s bytes %" PRIu64 " xxh64 %016llx\n", rel, off,
		       (unsigned long long)XXH64_digest(d.h));
	if (d.out)
		fclose(d.out);
	XXH64_freeState(d.h);
	return rc;
}

struct small {
	int stat;
	uint32_t access;
	char link[1024];
};

static void take_access(void *res3, const struct n4_coh *coh, void *ctx)
{
	ACCESS3res *r = res3;
	struct small *x = ctx;

	(void)coh;
	x->stat = r->status;
	if (r->status == NFS3_OK)
		x->access = r->ACCESS3res_u.resok.access;
}

static void take_readlink(void *res3, const struct n4_coh *coh, void *ctx)
{
	READLINK3res *r = res3;
	struct small *x = ctx;

	(void)coh;
	x->stat = r->status;
	if (r->status == NFS3_OK)
		snprintf(x->link, sizeof(x->link), "%s", r->READLINK3res_u.resok.data);
}

/* ACCESS of every v3 bit, or READLINK: "access REL 0xBITS" / "readlink
 * REL TARGET" (the nfsstat3 when not NFS3_OK) */
static int cmd_small(struct side *s, const char *rel, int readlink)
{
	struct obj o;
	struct small x;
	char err[300];
	ACCESS3args a;
	READLINK3args l;
	int rc;

	if (walk(s, rel, &o, err, sizeof(err))) {
		printf("error %s %s: %s\n", readlink ? "readlink" : "access", rel, err);
		return 1;
	}
	memset(&x, 0, sizeof(x));
	if (readlink) {
		memset(&l, 0, sizeof(l));
		fh3(&l.symlink, &o.fh);
		rc = do_call(s, NFS3_READLINK, &l, take_readlink, &x, err, sizeof(err));
	} else {
		memset(&a, 0, sizeof(a));
		fh3(&a.object, &o.fh);
		a.access = 0x3f;
		rc = do_call(s, NFS3_ACCESS, &a, take_access, &x, err, sizeof(err));
	}
	if (rc) {
		printf("error %s %s: %s\n", readlink ? "readlink" : "access", rel, err);
		return 1;
	}
	if (x.stat != NFS3_OK)
		printf("%s %s nfsstat3 %d\n", readlink ? "readlink" : "access", rel, x.stat);
	else if (readlink)
		printf("readlink %s %s\n", rel, x.link);
	else
		printf("access %s 0x%02x\n", rel, x.access);
	return 0;
}

static int cmd_ls(struct side *s, const char *rel)
{
	struct obj o;
	struct listing l;
	char err[300], a[512];
	int pages = 0, dot = 0, dotdot = 0;
	size_t shown = 0;

	if (walk(s, rel, &o, err, sizeof(err))) {
		printf("error ls %s: %s\n", rel, err);
		return 1;
	}
	memset(&l, 0, sizeof(l));
	do {
		READDIRPLUS3args r;
		memset(&r, 0, sizeof(r));
		fh3(&r.dir, &o.fh);
		r.cookie = l.cookie;
		memcpy(r.cookieverf, l.verf, sizeof(r.cookieverf));
		r.dircount = maxcount / 4;
		r.maxcount = maxcount;
		if (do_call(s, NFS3_READDIRPLUS, &r, take_rdp, &l, err, sizeof(err)) ||
		    l.stat != NFS3_OK) {
			printf("error ls %s page %d: %s (nfsstat3 %d)\n", rel, pages, err, l.stat);
			free(l.e);
			return 1;
		}
		pages++;
		if (l.got == 0 && !l.eof) {
			printf("error ls %s: an empty page before the end\n", rel);
			free(l.e);
			return 1;
		}
	} while (!l.eof && pages < 100000);
	qsort(l.e, l.n, sizeof(*l.e), ent_cmp);
	for (size_t i = 0; i < l.n; i++) {
		dot += strcmp(l.e[i].name, ".") == 0;
		dotdot += strcmp(l.e[i].name, "..") == 0;
	}
	if (dot == 1 && dotdot == 1)
		printf("dots\n");
	for (size_t i = 0; i < l.n; i++) {
		if (strcmp(l.e[i].name, ".") == 0 || strcmp(l.e[i].name, "..") == 0)
			continue;
		if (i > 0 && strcmp(l.e[i].name, l.e[i - 1].name) == 0)
			printf("error ls %s: %s listed twice\n", rel, l.e[i].name);
		if (l.e[i].has_attr)
			fmt_attr(a, sizeof(a), &l.e[i].attr);
		else
			snprintf(a, sizeof(a), "no-attributes");
		printf("ent %s %s fh %u\n", l.e[i].name, a, l.e[i].fhlen);
		shown++;
	}
	printf("ls %s entries %zu pages %d\n", rel, shown, pages);
	free(l.e);
	return 0;
}

static int cmd_watch(struct side *s, int seconds)
{
	long long end = mono_ms() + (long long)seconds * 1000, longest = 0;
	unsigned long calls = 0, failed = 0;

	printf("watch started\n");
	fflush(stdout);
	while (mono_ms() < end) {
		struct obj o;
		GETATTR3args ga;
		char err[300];
		long long t0 = mono_ms();

		memset(&o, 0, sizeof(o));
		memset(&ga, 0, sizeof(ga));
		fh3(&ga.object, &s->root);
		calls++;
		if (do_call(s, NFS3_GETATTR, &ga, take_getattr, &o, err, sizeof(err)) ||
		    o.stat != NFS3_OK) {
			failed++;
			printf("watch call %lu failed: %s (nfsstat3 %d)\n", calls, err, o.stat);
			fflush(stdout);
		}
		if (mono_ms() - t0 > longest)
			longest = mono_ms() - t0;
		/* 200 ms on the loop: RENEWs go out meanwhile */
		for (long long until = mono_ms() + 200; mono_ms() < until;)
			if (s->v4)
				loop_once(s->loop, 50);
			else
				usleep(50000);
	}
	printf("watch calls %lu failed %lu longest_ms %lld\n", calls, failed, longest);
	return failed ? 1 : 0;
}

static void cmd_stats(struct side *s)
{
	const struct n4_stats *st;

	if (!s->v4)
		return;
	st = n4_stats(s->n4);
	printf("stats renews %" PRIu64 " setclientids %" PRIu64 " recoveries %" PRIu64
	       " reconnects %" PRIu64 " connects %" PRIu64 " resends %" PRIu64 " delays %" PRIu64
	       " bypass %" PRIu64 " refused %" PRIu64 " nobody %" PRIu64 " opens %" PRIu64
	       " confirms %" PRIu64 " fallbacks %" PRIu64 " wrefused %" PRIu64
	       " closeerr %" PRIu64 " lease %u\n",
	       st->renews, st->setclientids, st->recoveries, st->reconnects, st->connects,
	       st->resends, st->delays, st->bypass_reads, st->anon_refused, st->owner_nobody,
	       st->opens, st->open_confirms, st->open_fallbacks, st->write_refused,
	       st->close_errors, st->lease_s);
}

/* --- the writes ------------------------------------------------------------- */

struct wres {
	int stat;
	uint32_t count, committed;
	char verf[8];
	int has_fh;
	struct n4_fh fh;
	int has_attr;
	fattr3 attr;
	int nwcc;
	wcc_data wcc[2];
	union {
		FSSTAT3resok fsstat;
		FSINFO3resok fsinfo;
		PATHCONF3resok pathconf;
	} fs;
};

static void take_post_fh(struct wres *w, const post_op_fh3 *pfh, const post_op_attr *pa)
{
	if (pfh->handle_follows && pfh->post_op_fh3_u.handle.data.data_len <= N4_FHSIZE) {
		w->has_fh = 1;
		w->fh.len = pfh->post_op_fh3_u.handle.data.data_len;
		memcpy(w->fh.data, pfh->post_op_fh3_u.handle.data.data_val, w->fh.len);
	}
	w->has_attr = pa->attributes_follow;
	w->attr = pa->post_op_attr_u.attributes;
}

/* resok and resfail of these results begin alike where it matters: each
 * taker reads the status, then the union by it */
static uint32_t cur_proc;

static void take_write(void *res3, const struct n4_coh *coh, void *ctx)
{
	struct wres *w = ctx;

	(void)coh;
	w->nwcc = 1;
	switch (cur_proc) {
	case NFS3_WRITE: {
		WRITE3res *r = res3;
		w->stat = r->status;
		if (r->status == NFS3_OK) {
			w->count = r->WRITE3res_u.resok.count;
			w->committed = r->WRITE3res_u.resok.committed;
			memcpy(w->verf, r->WRITE3res_u.resok.verf, 8);
			w->wcc[0] = r->WRITE3res_u.resok.file_wcc;
		} else {
			w->wcc[0] = r->WRITE3res_u.resfail.file_wcc;
		}
		break;
	}
	case NFS3_COMMIT: {
		COMMIT3res *r = res3;
		w->stat = r->status;
		if (r->status == NFS3_OK) {
			memcpy(w->verf, r->COMMIT3res_u.resok.verf, 8);
			w->wcc[0] = r->COMMIT3res_u.resok.file_wcc;
		} else {
			w->wcc[0] = r->COMMIT3res_u.resfail.file_wcc;
		}
		break;
	}
	case NFS3_SETATTR: {
		SETATTR3res *r = res3;
		w->stat = r->status;
		w->wcc[0] = r->status == NFS3_OK ? r->SETATTR3res_u.resok.obj_wcc
		                                 : r->SETATTR3res_u.resfail.obj_wcc;
		break;
	}
	case NFS3_CREATE: {
		CREATE3res *r = res3;
		w->stat = r->status;
		if (r->status == NFS3_OK) {
			take_post_fh(w, &r->CREATE3res_u.resok.obj,
			             &r->CREATE3res_u.resok.obj_attributes);
			w->wcc[0] = r->CREATE3res_u.resok.dir_wcc;
		} else {
			w->wcc[0] = r->CREATE3res_u.resfail.dir_wcc;
		}
		break;
	}
	case NFS3_MKDIR: {
		MKDIR3res *r = res3;
		w->stat = r->status;
		if (r->status == NFS3_OK) {
			take_post_fh(w, &r->MKDIR3res_u.resok.obj,
			             &r->MKDIR3res_u.resok.obj_attributes);
			w->wcc[0] = r->MKDIR3res_u.resok.dir_wcc;
		} else {
			w->wcc[0] = r->MKDIR3res_u.resfail.dir_wcc;
		}
		break;
	}
	case NFS3_SYMLINK: {
		SYMLINK3res *r = res3;
		w->stat = r->status;
		if (r->status == NFS3_OK) {
			take_post_fh(w, &r->SYMLINK3res_u.resok.obj,
			             &r->SYMLINK3res_u.resok.obj_attributes);
			w->wcc[0] = r->SYMLINK3res_u.resok.dir_wcc;
		} else {
			w->wcc[0] = r->SYMLINK3res_u.resfail.dir_wcc;
		}
		break;
	}
	case NFS3_MKNOD: {
		MKNOD3res *r = res3;
		w->stat = r->status;
		if (r->status == NFS3_OK) {
			take_post_fh(w, &r->MKNOD3res_u.resok.obj,
			             &r->MKNOD3res_u.resok.obj_attributes);
			w->wcc[0] = r->MKNOD3res_u.resok.dir_wcc;
		} else {
			w->wcc[0] = r->MKNOD3res_u.resfail.dir_wcc;
		}
		break;
	}
	case NFS3_REMOVE: {
		REMOVE3res *r = res3;
		w->stat = r->status;
		w->wcc[0] = r->status == NFS3_OK ? r->REMOVE3res_u.resok.dir_wcc
		                                 : r->REMOVE3res_u.resfail.dir_wcc;
		break;
	}
	case NFS3_RMDIR: {
		RMDIR3res *r = res3;
		w->stat = r->status;
		w->wcc[0] = r->status == NFS3_OK ? r->RMDIR3res_u.resok.dir_wcc
		                                 : r->RMDIR3res_u.resfail.dir_wcc;
		break;
	}
	case NFS3_RENAME: {
		RENAME3res *r = res3;
		w->stat = r->status;
		w->nwcc = 2;
		w->wcc[0] = r->status == NFS3_OK ? r->RENAME3res_u.resok.fromdir_wcc
		                                 : r->RENAME3res_u.resfail.fromdir_wcc;
		w->wcc[1] = r->status == NFS3_OK ? r->RENAME3res_u.resok.todir_wcc
		                                 : r->RENAME3res_u.resfail.todir_wcc;
		break;
	}
	case NFS3_LINK: {
		LINK3res *r = res3;
		w->stat = r->status;
		w->wcc[0] = r->status == NFS3_OK ? r->LINK3res_u.resok.linkdir_wcc
		                                 : r->LINK3res_u.resfail.linkdir_wcc;
		w->has_attr = r->status == NFS3_OK
		                  ? r->LINK3res_u.resok.file_attributes.attributes_follow
		                  : 0;
		w->attr = r->LINK3res_u.resok.file_attributes.post_op_attr_u.attributes;
		break;
	}
	case NFS3_FSSTAT: {
		FSSTAT3res *r = res3;
		w->nwcc = 0;
		w->stat = r->status;
		if (r->status == NFS3_OK)
			w->fs.fsstat = r->FSSTAT3res_u.resok;
		break;
	}
	case NFS3_FSINFO: {
		FSINFO3res *r = res3;
		w->nwcc = 0;
		w->stat = r->status;
		if (r->status == NFS3_OK)
			w->fs.fsinfo = r->FSINFO3res_u.resok;
		break;
	}
	case NFS3_PATHCONF: {
		PATHCONF3res *r = res3;
		w->nwcc = 0;
		w->stat = r->status;
		if (r->status == NFS3_OK)
			w->fs.pathconf = r->PATHCONF3res_u.resok;
		break;
	}
	default:
		w->stat = -1;
	}
}

static int wcall(struct side *s, uint32_t proc, void *args, struct wres *w, const char *what)
{
	char err[300];

	memset(w, 0, sizeof(*w));
	cur_proc = proc;
	if (do_call(s, proc, args, take_write, w, err, sizeof(err))) {
		printf("error %s: %s\n", what, err);
		return -1;
	}
	return 0;
}

static void print_wcc(const char *what, const wcc_data *w)
{
	char a[512] = "-", b[64] = "-";

	if (w->before.attributes_follow)
		snprintf(b, sizeof(b), "%" PRIu64, w->before.pre_op_attr_u.attributes.size);
	if (w->after.attributes_follow)
		fmt_attr(a, sizeof(a), &w->after.post_op_attr_u.attributes);
	printf("wcc %s before %s after %s\n", what, b, a);
}

/* REL split into its directory (looked up) and last name */
static int parent(struct side *s, const char *rel, struct obj *dir, char *name, char *dirrel)
{
	char err[300];
	const char *sl = strrchr(rel, '/');

	snprintf(name, 256, "%s", sl ? sl + 1 : rel);
	snprintf(dirrel, 1024, "%.*s", sl ? (int)(sl - rel) : 1, sl ? rel : ".");
	if (walk(s, dirrel, dir, err, sizeof(err))) {
		printf("error %s: the directory: %s\n", rel, err);
		return -1;
	}
	return 0;
}

static void hex8(char *out, const char *v)
{
	for (int i = 0; i < 8; i++)
		sprintf(out + 2 * i, "%02x", (unsigned char)v[i]);
}

static int cmd_write(struct side *s, const char *rel, uint64_t off, uint32_t len, uint32_t seed,
                     int stable)
{
	struct obj o;
	struct wres w;
	WRITE3args a;
	char err[300], hex[17];
	char *buf = malloc(len ? len : 1);

	if (buf == NULL || walk(s, rel, &o, err, sizeof(err))) {
		printf("error write %s: %s\n", rel, buf ? err : "no memory");
		free(buf);
		return 1;
	}
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (char)(((off + i) * 31 + seed) & 0xff);
	memset(&a, 0, sizeof(a));
	fh3(&a.file, &o.fh);
	a.offset = off;
	a.count = len;
	a.stable = stable ? FILE_SYNC : UNSTABLE;
	a.data.data_len = len;
	a.data.data_val = buf;
	if (wcall(s, NFS3_WRITE, &a, &w, "write")) {
		free(buf);
		return 1;
	}
	free(buf);
	hex8(hex, w.verf);
	printf("write %s nfsstat3 %d count %u committed %u verf %s\n", rel, w.stat, w.count,
	       w.committed, hex);
	print_wcc(rel, &w.wcc[0]);
	return w.stat != NFS3_OK;
}

static int cmd_commit(struct side *s, const char *rel)
{
	struct obj o;
	struct wres w;
	COMMIT3args a;
	char err[300], hex[17];

	if (walk(s, rel, &o, err, sizeof(err))) {
		printf("error commit %s: %s\n", rel, err);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	fh3(&a.file, &o.fh);
	if (wcall(s, NFS3_COMMIT, &a, &w, "commit"))
		return 1;
	hex8(hex, w.verf);
	printf("commit %s nfsstat3 %d verf %s\n", rel, w.stat, hex);
	print_wcc(rel, &w.wcc[0]);
	return w.stat != NFS3_OK;
}

/* truncate (size) or chmod (mode, guarded: fresh or stale ctime) */
static int cmd_setattr(struct side *s, const char *rel, int chmod, uint64_t v, int stale)
{
	struct obj o;
	struct wres w;
	SETATTR3args a;
	char err[300];

	if (walk(s, rel, &o, err, sizeof(err))) {
		printf("error setattr %s: %s\n", rel, err);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	fh3(&a.object, &o.fh);
	if (chmod) {
		a.new_attributes.mode.set_it = 1;
		a.new_attributes.mode.set_mode3_u.mode = (uint32_t)v;
		a.guard.check = 1;
		a.guard.sattrguard3_u.obj_ctime = o.attr.ctime;
		if (stale)
			a.guard.sattrguard3_u.obj_ctime.seconds -= 1;
	} else {
		a.new_attributes.size.set_it = 1;
		a.new_attributes.size.set_size3_u.size = v;
	}
	if (wcall(s, NFS3_SETATTR, &a, &w, "setattr"))
		return 1;
	printf("setattr %s nfsstat3 %d\n", rel, w.stat);
	print_wcc(rel, &w.wcc[0]);
	return 0; /* the status is the test's to judge */
}

/* create / mkdir / mkfifo / symlink */
static int cmd_create(struct side *s, const char *op, const char *rel, const char *arg,
                      const char *verf)
{
	struct obj d;
	struct wres w;
	char name[256], dirrel[1024], a[512];
	uint32_t proc;
	union {
		CREATE3args c;
		MKDIR3args m;
		MKNOD3args n;
		SYMLINK3args l;
	} u;
	diropargs3 *where;

	if (parent(s, rel, &d, name, dirrel))
		return 1;
	memset(&u, 0, sizeof(u));
	if (strcmp(op, "create") == 0) {
		proc = NFS3_CREATE;
		where = &u.c.where;
		u.c.how.mode = strcmp(arg, "exclusive") == 0 ? EXCLUSIVE
		               : strcmp(arg, "guarded") == 0 ? GUARDED
		                                             : UNCHECKED;
		if (u.c.how.mode == EXCLUSIVE) {
			const char *v = verf ? verf : "verifier";
			size_t vl = strlen(v);
			memcpy(u.c.how.createhow3_u.verf, v, vl < 8 ? vl : 8);
		} else {
			u.c.how.createhow3_u.obj_attributes.mode.set_it = 1;
			u.c.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0640;
		}
	} else if (strcmp(op, "mkdir") == 0) {
		proc = NFS3_MKDIR;
		where = &u.m.where;
		u.m.attributes.mode.set_it = 1;
		u.m.attributes.mode.set_mode3_u.mode = 0750;
	} else if (strcmp(op, "mkfifo") == 0) {
		proc = NFS3_MKNOD;
		where = &u.n.where;
		u.n.what.type = NF3FIFO;
		u.n.what.mknoddata3_u.pipe_attributes.mode.set_it = 1;
		u.n.what.mknoddata3_u.pipe_attributes.mode.set_mode3_u.mode = 0600;
	} else {
		proc = NFS3_SYMLINK;
		where = &u.l.where;
		u.l.symlink.symlink_data = (char *)arg;
	}
	fh3(&where->dir, &d.fh);
	where->name = name;
	if (wcall(s, proc, &u, &w, op))
		return 1;
	printf("%s %s nfsstat3 %d fh %u\n", op, rel, w.stat, w.has_fh ? w.fh.len : 0);
	if (w.stat == NFS3_OK && w.has_attr) {
		fmt_attr(a, sizeof(a), &w.attr);
		printf("attr %s %s\n", rel, a);
	}
	print_wcc(dirrel, &w.wcc[0]);
	return 0;
}

/* remove / rmdir / rename / link */
static int cmd_ns(struct side *s, const char *op, const char *rel, const char *rel2)
{
	struct obj d, d2, f;
	struct wres w;
	char name[256], dirrel[1024], name2[256], dirrel2[1024], err[300];
	uint32_t proc;
	union {
		REMOVE3args r;
		RMDIR3args d;
		RENAME3args n;
		LINK3args l;
	} u;

	memset(&u, 0, sizeof(u));
	if (strcmp(op, "link") == 0) {
		if (walk(s, rel, &f, err, sizeof(err))) {
			printf("error link %s: %s\n", rel, err);
			return 1;
		}
		if (parent(s, rel2, &d2, name2, dirrel2))
			return 1;
		proc = NFS3_LINK;
		fh3(&u.l.file, &f.fh);
		fh3(&u.l.link.dir, &d2.fh);
		u.l.link.name = name2;
		snprintf(dirrel, sizeof(dirrel), "%s", dirrel2);
	} else {
		if (parent(s, rel, &d, name, dirrel))
			return 1;
		if (strcmp(op, "rename") == 0) {
			if (parent(s, rel2, &d2, name2, dirrel2))
				return 1;
			proc = NFS3_RENAME;
			fh3(&u.n.from.dir, &d.fh);
			u.n.from.name = name;
			fh3(&u.n.to.dir, &d2.fh);
			u.n.to.name = name2;
		} else {
			proc = strcmp(op, "rmdir") == 0 ? NFS3_RMDIR : NFS3_REMOVE;
			fh3(&u.r.object.dir, &d.fh);
			u.r.object.name = name;
		}
	}
	if (wcall(s, proc, &u, &w, op))
		return 1;
	printf("%s %s nfsstat3 %d\n", op, rel, w.stat);
	print_wcc(dirrel, &w.wcc[0]);
	if (w.nwcc == 2)
		print_wcc(dirrel2, &w.wcc[1]);
	return 0;
}

static int cmd_fs(struct side *s, const char *op)
{
	struct wres w;
	nfs_fh3 fh;
	uint32_t proc = strcmp(op, "fsstat") == 0   ? NFS3_FSSTAT
	                : strcmp(op, "fsinfo") == 0 ? NFS3_FSINFO
	                                            : NFS3_PATHCONF;

	fh3(&fh, &s->root);
	/* the three args structs are one nfs_fh3 */
	if (wcall(s, proc, &fh, &w, op))
		return 1;
	if (w.stat != NFS3_OK) {
		printf("%s nfsstat3 %d\n", op, w.stat);
		return 1;
	}
	if (proc == NFS3_FSSTAT)
		printf("fsstat tbytes %" PRIu64 " fbytes %" PRIu64 " abytes %" PRIu64
		       " tfiles %" PRIu64 " ffiles %" PRIu64 " afiles %" PRIu64 "\n",
		       w.fs.fsstat.tbytes, w.fs.fsstat.fbytes, w.fs.fsstat.abytes,
		       w.fs.fsstat.tfiles, w.fs.fsstat.ffiles, w.fs.fsstat.afiles);
	else if (proc == NFS3_FSINFO)
		printf("fsinfo rtmax %u wtmax %u maxfilesize %" PRIu64 " time_delta %u.%09u "
		       "properties 0x%x\n",
		       w.fs.fsinfo.rtmax, w.fs.fsinfo.wtmax, w.fs.fsinfo.maxfilesize,
		       w.fs.fsinfo.time_delta.seconds, w.fs.fsinfo.time_delta.nseconds,
		       w.fs.fsinfo.properties);
	else
		printf("pathconf linkmax %u name_max %u no_trunc %u chown_restricted %u "
		       "case_insensitive %u case_preserving %u\n",
		       w.fs.pathconf.linkmax, w.fs.pathconf.name_max, w.fs.pathconf.no_trunc,
		       w.fs.pathconf.chown_restricted, w.fs.pathconf.case_insensitive,
		       w.fs.pathconf.case_preserving);
	return 0;
}

struct lkwait {
	int done, status;
	struct n4_lkres r;
};

static void lk_cb(int status, const struct n4_lkres *r, void *priv)
{
	struct lkwait *w = priv;

	w->done = 1;
	w->status = status;
	if (status == 0)
		w->r = *r;
}

/* lock, lockt, unlock of REL (kind 'l', 't', 'u') */
static int cmd_lock(struct side *s, int kind, const char *rel, int exclusive, uint64_t off,
                    uint64_t len)
{
	const char *what = kind == 'l' ? "lock" : kind == 't' ? "lockt" : "unlock";
	char err[512], host[] = "nfs4probe";
	struct n4_lkowner o = {host, "nfs4probe", (uint32_t)getpid()};
	struct lkwait w;
	struct obj ob;
	long long deadline;
	int rc;

	memset(&w, 0, sizeof(w));
	if (!s->v4) {
		printf("error %s %s: v4 only\n", what, rel);
		return 1;
	}
	if (walk(s, rel, &ob, err, sizeof(err))) {
		printf("error %s %s: %s\n", what, rel, err);
		return 1;
	}
	if (s->locks == NULL && (s->locks = n4_locks_new(s->loop, s->n4)) == NULL) {
		printf("error %s %s: out of memory\n", what, rel);
		return 1;
	}
	rc = kind == 'l'
	         ? n4_lk_lock(s->locks, &ob.fh, &o, exclusive, 0, off, len, &s->cred, lk_cb, &w)
	     : kind == 't'
	         ? n4_lk_test(s->locks, &ob.fh, &o, exclusive, off, len, &s->cred, lk_cb, &w)
	         : n4_lk_unlock(s->locks, &ob.fh, &o, off, len, &s->cred, lk_cb, &w);
	if (rc) {
		printf("error %s %s: %s\n", what, rel, strerror(-rc));
		return 1;
	}
	deadline = mono_ms() + s->timeout_ms;
	while (!w.done && mono_ms() < deadline)
		loop_once(s->loop, 100);
	if (!w.done || w.status != 0) {
		printf("error %s %s: %s\n", what, rel, w.done ? strerror(-w.status) : "no answer");
		return 1;
	}
	if (w.r.status == NFS4_OK)
		printf("%s %s granted\n", what, rel);
	else if (w.r.status == NFS4ERR_DENIED)
		printf("%s %s denied offset %" PRIu64 " len %" PRIu64 " exclusive %d\n", what, rel,
		       w.r.offset, w.r.len, w.r.exclusive);
	else
		printf("%s %s status %d\n", what, rel, w.r.status);
	fflush(stdout);
	return 0;
}

static void cmd_waitfile(struct side *s, const char *path)
{
	long long end = mono_ms() + s->timeout_ms;

	while (access(path, F_OK) != 0 && mono_ms() < end) {
		if (s->v4)
			loop_once(s->loop, 50);
		else
			usleep(50000);
	}
}

/* --- set-up ----------------------------------------------------------------- */

static int start_v3(struct side *s, const char *host, int port, int mountport, const char *path)
{
	struct rpc_context *m = rpc_init_context();
	struct call c;
	struct res r;

	memset(&r, 0, sizeof(r));
	call_prep(&c, &r);
	if (m == NULL || send_connect(m, &c, host, mountport) ||
	    call_wait(m, &c, s->timeout_ms) != WAIT_DONE || c.status != RPC_STATUS_SUCCESS) {
		fprintf(stderr, "nfs4probe: cannot reach mountd at %s:%d\n", host, mountport);
		return -1;
	}
	call_prep(&c, &r);
	if (send_mnt(m, &c, path) || call_wait(m, &c, s->timeout_ms) != WAIT_DONE ||
	    c.status != RPC_STATUS_SUCCESS || r.stat != MNT3_OK) {
		fprintf(stderr, "nfs4probe: MOUNT %s failed (%d)\n", path, r.stat);
		return -1;
	}
	s->root.len = r.fh.len;
	memcpy(s->root.data, r.fh.data, r.fh.len);
	rpc_destroy_context(m);
	s->rpc = rpc_init_context();
	call_prep(&c, NULL);
	if (s->rpc == NULL || send_connect(s->rpc, &c, host, port) ||
	    call_wait(s->rpc, &c, s->timeout_ms) != WAIT_DONE || c.status != RPC_STATUS_SUCCESS) {
		fprintf(stderr, "nfs4probe: cannot connect to %s:%d\n", host, port);
		return -1;
	}
	rpc_set_auth(s->rpc,
	             libnfs_authunix_create("nfs4probe", s->cred.uid, s->cred.gid, 0, NULL));
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: nfs4probe [--v3 --mountport M] --host H --port P --path EXPORT "
	                "[--uid U --gid G] [--domain D] [--client-id S] [--maxcount N] "
	                "[--timeout S] [--out FILE] root|getattr REL|read REL|access REL|readlink REL|"
			"ls REL|watch S|stats "
	                "...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct side s;
	struct n4_config cfg;
	const char *host = "127.0.0.1", *path = NULL;
	int port = 0, mountport = 0, i, rc = 0;
	char err[1200];

	memset(&s, 0, sizeof(s));
	memset(&cfg, 0, sizeof(cfg));
	s.timeout_ms = 60000;
	s.cred.flavor = AUTH_UNIX;
	snprintf(s.cred.machine, sizeof(s.cred.machine), "nfs4probe");
	s.v4 = 1;
	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		const char *o = argv[i];
		if (strcmp(o, "--v3") == 0) {
			s.v4 = 0;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		if (strcmp(o, "--host") == 0)
			host = v;
		else if (strcmp(o, "--port") == 0)
			port = atoi(v);
		else if (strcmp(o, "--mountport") == 0)
			mountport = atoi(v);
		else if (strcmp(o, "--path") == 0)
			path = v;
		else if (strcmp(o, "--uid") == 0)
			s.cred.uid = (uint32_t)strtoul(v, NULL, 10);
		else if (strcmp(o, "--gid") == 0)
			s.cred.gid = (uint32_t)strtoul(v, NULL, 10);
		else if (strcmp(o, "--domain") == 0)
			snprintf(cfg.idmap_domain, sizeof(cfg.idmap_domain), "%s", v);
		else if (strcmp(o, "--client-id") == 0)
			snprintf(cfg.client_id, sizeof(cfg.client_id), "%s", v);
		else if (strcmp(o, "--maxcount") == 0)
			maxcount = (uint32_t)strtoul(v, NULL, 10);
		else if (strcmp(o, "--timeout") == 0)
			s.timeout_ms = atoi(v) * 1000;
		else if (strcmp(o, "--out") == 0)
			outpath = v;
		else
			usage();
	}
	if (path == NULL || port <= 0 || i >= argc || (!s.v4 && mountport <= 0))
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	log_init(0, getenv("NFS4PROBE_DEBUG") ? CFS_LOG_DEBUG : CFS_LOG_WARN);
	if (s.v4) {
		s.loop = loop_new();
		snprintf(cfg.host, sizeof(cfg.host), "%s", host);
		snprintf(cfg.path, sizeof(cfg.path), "%s", path);
		cfg.port = port;
		cfg.timeout_s = s.timeout_ms / 1000;
		cfg.reconnect_max_s = 2;
		if (s.loop == NULL || n4_start(s.loop, &cfg, &s.n4, err, sizeof(err)) != 0) {
			fprintf(stderr, "nfs4probe: %s\n", err);
			return 1;
		}
		s.root = *n4_root_fh(s.n4);
	} else if (start_v3(&s, host, port, mountport, path) != 0) {
		return 1;
	}
	for (; i < argc; i++) {
		const char *cmd = argv[i];
		if (strcmp(cmd, "root") == 0) {
			if (s.v4)
				printf("root fhlen %u lease %u maxread %" PRIu64 "\n", s.root.len,
				       n4_stats(s.n4)->lease_s, n4_maxread(s.n4));
			else
				printf("root fhlen %u\n", s.root.len);
		} else if (strcmp(cmd, "stats") == 0) {
			cmd_stats(&s);
		} else if (i + 1 < argc && strcmp(cmd, "fh") == 0) {
			rc |= cmd_fh(&s, argv[++i]);
		} else if (i + 1 < argc && strcmp(cmd, "getattr") == 0) {
			rc |= cmd_getattr(&s, argv[++i]);
		} else if (i + 1 < argc && strcmp(cmd, "read") == 0) {
			rc |= cmd_read(&s, argv[++i]);
		} else if (i + 1 < argc && strcmp(cmd, "access") == 0) {
			rc |= cmd_small(&s, argv[++i], 0);
		} else if (i + 1 < argc && strcmp(cmd, "readlink") == 0) {
			rc |= cmd_small(&s, argv[++i], 1);
		} else if (i + 1 < argc && strcmp(cmd, "ls") == 0) {
			rc |= cmd_ls(&s, argv[++i]);
		} else if (i + 1 < argc && strcmp(cmd, "watch") == 0) {
			rc |= cmd_watch(&s, atoi(argv[++i]));
		} else if (i + 5 < argc && strcmp(cmd, "write") == 0) {
			rc |= cmd_write(&s, argv[i + 1], strtoull(argv[i + 2], NULL, 10),
			                (uint32_t)strtoul(argv[i + 3], NULL, 10),
			                (uint32_t)strtoul(argv[i + 4], NULL, 10),
			                strcmp(argv[i + 5], "file_sync") == 0);
			i += 5;
		} else if (i + 1 < argc && strcmp(cmd, "commit") == 0) {
			rc |= cmd_commit(&s, argv[++i]);
		} else if (i + 2 < argc && strcmp(cmd, "truncate") == 0) {
			rc |= cmd_setattr(&s, argv[i + 1], 0, strtoull(argv[i + 2], NULL, 10), 0);
			i += 2;
		} else if (i + 3 < argc && strcmp(cmd, "chmod") == 0) {
			rc |= cmd_setattr(&s, argv[i + 1], 1, strtoull(argv[i + 2], NULL, 8),
			                  strcmp(argv[i + 3], "stale") == 0);
			i += 3;
		} else if (i + 2 < argc && strcmp(cmd, "create") == 0) {
			int ex = strcmp(argv[i + 2], "exclusive") == 0 && i + 3 < argc;
			rc |= cmd_create(&s, cmd, argv[i + 1], argv[i + 2], ex ? argv[i + 3] : NULL);
			i += 2 + ex;
		} else if (i + 1 < argc && (strcmp(cmd, "mkdir") == 0 || strcmp(cmd, "mkfifo") == 0)) {
			rc |= cmd_create(&s, cmd, argv[i + 1], "", NULL);
			i += 1;
		} else if (i + 2 < argc && strcmp(cmd, "symlink") == 0) {
			rc |= cmd_create(&s, cmd, argv[i + 1], argv[i + 2], NULL);
			i += 2;
		} else if (i + 1 < argc && (strcmp(cmd, "remove") == 0 || strcmp(cmd, "rmdir") == 0)) {
			rc |= cmd_ns(&s, cmd, argv[i + 1], NULL);
			i += 1;
		} else if (i + 2 < argc && (strcmp(cmd, "rename") == 0 || strcmp(cmd, "link") == 0)) {
			rc |= cmd_ns(&s, cmd, argv[i + 1], argv[i + 2]);
			i += 2;
		} else if (strcmp(cmd, "fsstat") == 0 || strcmp(cmd, "fsinfo") == 0 ||
		           strcmp(cmd, "pathconf") == 0) {
			rc |= cmd_fs(&s, cmd);
		} else if (i + 4 < argc &&
		           (strcmp(cmd, "lock") == 0 || strcmp(cmd, "lockt") == 0)) {
			rc |= cmd_lock(&s, cmd[4] == 't' ? 't' : 'l', argv[i + 1],
			               strcmp(argv[i + 2], "write") == 0,
			               strtoull(argv[i + 3], NULL, 10),
			               strtoull(argv[i + 4], NULL, 10));
			i += 4;
		} else if (i + 3 < argc && strcmp(cmd, "unlock") == 0) {
			rc |= cmd_lock(&s, 'u', argv[i + 1], 0, strtoull(argv[i + 2], NULL, 10),
			               strtoull(argv[i + 3], NULL, 10));
			i += 3;
		} else if (i + 1 < argc && strcmp(cmd, "waitfile") == 0) {
			cmd_waitfile(&s, argv[++i]);
		} else {
			usage();
		}
	}
	if (s.v4) {
		/* locks still held go with the lease */
		n4_locks_free(s.locks);
		n4_stop(s.n4);
		loop_free(s.loop);
	} else {
		rpc_destroy_context(s.rpc);
	}
	return rc;
}
