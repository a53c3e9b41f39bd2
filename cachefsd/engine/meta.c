/* The persistent metadata cache (ttl mode).
 *
 * Records in the store's metadata database, each value starting with the
 * wall-clock time it was stored (so ages go on across restarts):
 *
 *   'a' fh                 fattr3 (XDR)             GETATTR, post-op attributes
 *   'l' dirfh name         status + child handle    LOOKUP, positive or NOENT
 *   'x' fh cred            asked, allowed, ctime     ACCESS per credential
 *   'r' fh                 target (XDR string)      READLINK
 *   'V' dirfh pass         start, server's verifier, tip, eof, kind, counts
 *                          a listing pass (below: "listing passes")
 *   'C' dirfh kind counts  the directory's current pass
 *   'P'/'D' dirfh pass cookie   READDIRPLUS/READDIR page of a pass (XDR)
 *   's'/'i'/'c' fh         FSSTAT/FSINFO/PATHCONF reply (XDR)
 *   'X' fh cred            asked, allowed, ctime, mode, uid, gid
 *                          strict mode: the server's ACCESS answer, for
 *                          strict_access_reuse after a restart
 *
 * (fh is a length byte and the handle bytes.) A record is fresh while
 * younger than meta_ttl (meta_neg_ttl for NOENT lookups). Served results
 * take object attributes from the 'a' records, so a reply never carries
 * attributes older than the freshest the proxy knows. Changes made through
 * the proxy delete what they make stale (meta_mutation()).
 *
 * This file is the store of records: the reply pipeline records into it
 * (meta_record()), the observers keep attributes and evidence in it, and
 * metaanswer.c answers calls from it. It calls nothing else of the
 * engine. */
#include "engine_int.h"
#include "engine_procs.h"
#include "log.h"
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEY_MAX 500
#define HDR	8 /* stored-at, u64 ms, little endian */

uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int meta_enabled(const struct engine *e)
{
	return e->cfg->meta_ttl > 0;
}

/* key = type, fh length, fh, extra */
static size_t mkey(uint8_t *k, char type, const nfs_fh3 *fh, const void *extra, size_t elen)
{
	size_t n = 0;

	if (fh->data.data_len == 0 || fh->data.data_len > NFS3_FHSIZE ||
	    2 + fh->data.data_len + elen > KEY_MAX)
		return 0;
	k[n++] = (uint8_t)type;
	k[n++] = (uint8_t)fh->data.data_len;
	memcpy(k + n, fh->data.data_val, fh->data.data_len);
	n += fh->data.data_len;
	if (elen)
		memcpy(k + n, extra, elen);
	return n + elen;
}

static int fresh(const struct engine *e, uint64_t stored, int ttl_s)
{
	uint64_t now = wall_ms();

	(void)e;
	/* a clock that went back makes records look young: not fresh */
	return stored <= now + 1000 && now - stored < (uint64_t)ttl_s * 1000;
}

/* Encodes obj with enc into a fresh value (header + XDR). */
static int put_xdr(struct engine *e, const uint8_t *key, size_t klen, zdrproc_t enc, void *obj,
		   size_t hint)
{
	size_t cap = hint + 4096;
	uint8_t *buf = malloc(cap);
	ZDR z;
	int rc;

	if (buf == NULL)
		return -ENOMEM;
	put64(buf, wall_ms());
	zdrmem_create(&z, (char *)buf + HDR, (uint32_t)(cap - HDR), ZDR_ENCODE);
	if (!enc(&z, obj)) {
		zdr_destroy(&z);
		free(buf);
		return -EMSGSIZE;
	}
	rc = store_meta_put(e->store, key, klen, buf, HDR + zdr_getpos(&z));
	zdr_destroy(&z);
	free(buf);
	return rc;
}

/* The record of key decoded with dec into obj: 0, -ENOENT when there is
 * none, -EBADMSG when it does not decode (it is dropped), or the store's
 * -errno. */
static int get_xdr(struct engine *e, const uint8_t *key, size_t klen, zdrproc_t dec, void *obj,
		   struct meta_rec *r)
{
	const void *v;
	size_t vlen;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = store_meta_get(e->store, key, klen, &v, &vlen);
	if (rc)
		return rc;
	if (vlen < HDR)
		return -EBADMSG;
	r->stored = get64(v);
	r->copy = malloc(vlen - HDR + 1);
	if (r->copy == NULL)
		return -ENOMEM;
	memcpy(r->copy, (const uint8_t *)v + HDR, vlen - HDR);
	zdrmem_create(&r->z, (char *)r->copy, (uint32_t)(vlen - HDR), ZDR_DECODE);
	if (!dec(&r->z, obj)) {
		zdr_destroy(&r->z);
		free(r->copy);
		r->copy = NULL;
		store_meta_del(e->store, key, klen); /* a bad record: forget it */
		return -EBADMSG;
	}
	return 0;
}

void meta_rec_free(struct meta_rec *r)
{
	if (r->copy) {
		zdr_destroy(&r->z);
		free(r->copy);
	}
	r->copy = NULL;
}

/* --- attributes ------------------------------------------------------------ */

void meta_put_attrs(struct engine *e, const nfs_fh3 *fh, const fattr3 *attrs)
{
	uint8_t k[KEY_MAX];
	size_t kl;

	if (!meta_enabled(e) || (kl = mkey(k, 'a', fh, NULL, 0)) == 0)
		return;
	put_xdr(e, k, kl, (zdrproc_t)zdr_fattr3, (void *)attrs, 0);
}

void meta_forget_attrs(struct engine *e, const nfs_fh3 *fh)
{
	uint8_t k[KEY_MAX];
	size_t kl;

	if (meta_enabled(e) && (kl = mkey(k, 'a', fh, NULL, 0)) != 0)
		store_meta_del(e->store, k, kl);
}

/* fattr3 in XDR: 21 big-endian words, no optional parts (RFC 1813 2.6) */
#define FATTR3_XDR 84

static uint32_t xdr_u32(const uint8_t **p)
{
	uint32_t v = (uint32_t)(*p)[0] << 24 | (uint32_t)(*p)[1] << 16 | (uint32_t)(*p)[2] << 8 |
	             (*p)[3];
	*p += 4;
	return v;
}

static uint64_t xdr_u64(const uint8_t **p)
{
	uint64_t hi = xdr_u32(p);

	return hi << 32 | xdr_u32(p);
}

/* The same as zdr_fattr3's decoding of FATTR3_XDR bytes, without a copy
 * of the record and a decoder around it: every local answer takes
 * attributes from here, several times per call. */
static void fattr3_decode(const uint8_t *p, fattr3 *a)
{
	a->type = (ftype3)xdr_u32(&p);
	a->mode = xdr_u32(&p);
	a->nlink = xdr_u32(&p);
	a->uid = xdr_u32(&p);
	a->gid = xdr_u32(&p);
	a->size = xdr_u64(&p);
	a->used = xdr_u64(&p);
	a->rdev.specdata1 = xdr_u32(&p);
	a->rdev.specdata2 = xdr_u32(&p);
	a->fsid = xdr_u64(&p);
	a->fileid = xdr_u64(&p);
	a->atime.seconds = xdr_u32(&p);
	a->atime.nseconds = xdr_u32(&p);
	a->mtime.seconds = xdr_u32(&p);
	a->mtime.nseconds = xdr_u32(&p);
	a->ctime.seconds = xdr_u32(&p);
	a->ctime.nseconds = xdr_u32(&p);
}

/* The fresh attributes of fh into *out; 0, -ENOENT when none are (none
 * stored, stale, or the cache is off), or get_xdr()'s error. */
int meta_get_attrs(struct engine *e, const nfs_fh3 *fh, fattr3 *out)
{
	uint8_t k[KEY_MAX];
	size_t kl, vlen;
	const uint8_t *v;
	struct meta_rec r;
	int rc;

	if (!meta_enabled(e) || (kl = mkey(k, 'a', fh, NULL, 0)) == 0)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	rc = store_meta_get(e->store, k, kl, (const void **)&v, &vlen);
	if (rc)
		return rc;
	if (vlen == HDR + FATTR3_XDR) {
		fattr3_decode(v + HDR, out);
		return fresh(e, get64(v), e->cfg->meta_ttl) ? 0 : -ENOENT;
	}
	/* of another size: the decoder says what it is (and drops it) */
	rc = get_xdr(e, k, kl, (zdrproc_t)zdr_fattr3, out, &r);
	if (rc)
		return rc;
	meta_rec_free(&r); /* fattr3 has no pointers */
	return fresh(e, r.stored, e->cfg->meta_ttl) ? 0 : -ENOENT;
}

/* --- lookups ----------------------------------------------------------------- */

static size_t lookup_key(uint8_t *k, const nfs_fh3 *dir, const char *name)
{
	return mkey(k, 'l', dir, name, strlen(name));
}

static void meta_put_lookup(struct engine *e, const nfs_fh3 *dir, const char *name, nfsstat3 st,
			    const nfs_fh3 *child)
{
	uint8_t k[KEY_MAX], v[HDR + 4 + NFS3_FHSIZE];
	size_t kl, vl = HDR + 4;

	if (!meta_enabled(e) || (kl = lookup_key(k, dir, name)) == 0)
		return;
	if (st != NFS3_OK && st != NFS3ERR_NOENT)
		return;
	put64(v, wall_ms());
	v[HDR] = (uint8_t)(st == NFS3_OK ? 0 : 1);
	v[HDR + 1] = v[HDR + 2] = 0;
	v[HDR + 3] = 0;
	if (st == NFS3_OK) {
		if (child->data.data_len == 0 || child->data.data_len > NFS3_FHSIZE)
			return;
		v[HDR + 3] = (uint8_t)child->data.data_len;
		memcpy(v + vl, child->data.data_val, child->data.data_len);
		vl += child->data.data_len;
	}
	store_meta_put(e->store, k, kl, v, vl);
}

/* 0 with *st and the child handle (into buf) when a fresh answer is
 * known; -ENOENT when none is (none stored, or stale); -EBADMSG for a
 * record of the wrong shape; or the store's -errno. */
static int get_lookup(struct engine *e, const nfs_fh3 *dir, const char *name, nfsstat3 *st,
		      uint8_t *buf, uint32_t *len)
{
	uint8_t k[KEY_MAX];
	size_t kl, vlen;
	const uint8_t *v;
	int rc;

	if ((kl = lookup_key(k, dir, name)) == 0)
		return -ENOENT;
	rc = store_meta_get(e->store, k, kl, (const void **)&v, &vlen);
	if (rc)
		return rc;
	if (vlen < HDR + 4)
		return -EBADMSG;
	if (v[HDR] == 1) {
		int ttl = e->cfg->meta_neg_ttl < e->cfg->meta_ttl ? e->cfg->meta_neg_ttl
								   : e->cfg->meta_ttl;
		if (!fresh(e, get64(v), ttl))
			return -ENOENT;
		*st = NFS3ERR_NOENT;
		*len = 0;
		return 0;
	}
	if (!fresh(e, get64(v), e->cfg->meta_ttl))
		return -ENOENT;
	if (v[HDR + 3] == 0 || v[HDR + 3] > NFS3_FHSIZE || vlen != HDR + 4 + (size_t)v[HDR + 3])
		return -EBADMSG; /* buf holds NFS3_FHSIZE */
	*st = NFS3_OK;
	*len = v[HDR + 3];
	memcpy(buf, v + HDR + 4, *len);
	return 0;
}

int meta_child(struct engine *e, const nfs_fh3 *dir, const char *name, uint8_t *buf,
	       uint32_t *len)
{
	nfsstat3 st;
	int rc;

	if (!meta_enabled(e))
		return -ENOENT;
	rc = get_lookup(e, dir, name, &st, buf, len);
	if (rc)
		return rc;
	return st == NFS3_OK ? 1 : 0;
}

/* The child a name pointed to (fresh or not): for invalidations. */
static int known_child(struct engine *e, const nfs_fh3 *dir, const char *name, uint8_t *buf,
		       uint32_t *len)
{
	uint8_t k[KEY_MAX];
	size_t kl, vlen;
	const uint8_t *v;

	if ((kl = lookup_key(k, dir, name)) == 0)
		return -ENOENT;
	if (store_meta_get(e->store, k, kl, (const void **)&v, &vlen) != 0 || vlen < HDR + 4 ||
	    v[HDR] != 0 || v[HDR + 3] == 0 || v[HDR + 3] > NFS3_FHSIZE ||
	    vlen != HDR + 4 + (size_t)v[HDR + 3])
		return -ENOENT;
	*len = v[HDR + 3];
	memcpy(buf, v + HDR + 4, *len);
	return 0;
}

/* --- ACCESS per credential ----------------------------------------------------- */

static size_t access_key(uint8_t *k, const nfs_fh3 *fh, const struct cfs_cred *c)
{
	uint32_t ck[3 + CFS_MAX_GIDS];
	size_t n = 0;

	ck[n++] = c->flavor;
	ck[n++] = c->uid;
	ck[n++] = c->gid;
	for (uint32_t i = 0; i < c->ngids; i++)
		ck[n++] = c->gids[i];
	return mkey(k, 'x', fh, ck, n * sizeof(ck[0]));
}

/* Value: asked, allowed, proven, refused, ctime s, ns. */
#define ACCESS_VLEN (HDR + 24)

/* 0 with the stored evidence, -ENOENT when there is none younger than
 * meta_ttl, -EBADMSG for a record of the wrong size, or the store's
 * -errno. */
static int get_access(struct engine *e, const uint8_t *k, size_t kl, struct access_ent *out)
{
	const uint8_t *v;
	size_t vlen;
	int rc;

	rc = store_meta_get(e->store, k, kl, (const void **)&v, &vlen);
	if (rc)
		return rc;
	if (vlen != ACCESS_VLEN)
		return -EBADMSG;
	if (!fresh(e, get64(v), e->cfg->meta_ttl))
		return -ENOENT;
	memcpy(&out->asked, v + HDR, 4);
	memcpy(&out->bits, v + HDR + 4, 4);
	memcpy(&out->proven, v + HDR + 8, 4);
	memcpy(&out->refused, v + HDR + 12, 4);
	memcpy(&out->ctime_s, v + HDR + 16, 4);
	memcpy(&out->ctime_ns, v + HDR + 20, 4);
	out->when_ms = get64(v);
	return 0;
}

void meta_put_access(struct engine *e, const nfs_fh3 *fh, const struct access_ent *a)
{
	uint8_t k[KEY_MAX], v[ACCESS_VLEN];
	struct access_ent m;
	size_t kl;

	if (!meta_enabled(e) || a == NULL || (kl = access_key(k, fh, &a->cred)) == 0)
		return;
	/* what an earlier run or a trimmed entry knew under the same ctime stays */
	memset(&m, 0, sizeof(m));
	if (get_access(e, k, kl, &m) != 0 || m.ctime_s != a->ctime_s || m.ctime_ns != a->ctime_ns)
		m = *a;
	else
		access_ent_merge(&m, a->asked, a->bits, a->proven, a->refused,
				 &(fattr3){.ctime = {a->ctime_s, a->ctime_ns}}, a->when_ms);
	put64(v, wall_ms());
	memcpy(v + HDR, &m.asked, 4);
	memcpy(v + HDR + 4, &m.bits, 4);
	memcpy(v + HDR + 8, &m.proven, 4);
	memcpy(v + HDR + 12, &m.refused, 4);
	memcpy(v + HDR + 16, &m.ctime_s, 4);
	memcpy(v + HDR + 20, &m.ctime_ns, 4);
	store_meta_put(e->store, k, kl, v, sizeof(v));
}

int meta_get_access(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred,
		    struct access_ent *out)
{
	uint8_t k[KEY_MAX];
	size_t kl;

	memset(out, 0, sizeof(*out));
	if (!meta_enabled(e) || (kl = access_key(k, fh, cred)) == 0)
		return -ENOENT;
	out->cred = *cred;
	return get_access(e, k, kl, out);
}

/* --- strict mode: the server's ACCESS answers, across restarts ------------------- */

/* Value: asked, allowed, ctime s, ns, mode, uid, gid; the header is when
 * the server answered. */
#define SACCESS_VLEN (HDR + 28)

static int strict_reuse(const struct engine *e)
{
	return !meta_enabled(e) && e->cfg->strict_access_reuse;
}

void meta_put_strict_access(struct engine *e, const nfs_fh3 *fh, const struct access_ent *a,
                            const fattr3 *attrs)
{
	uint8_t k[KEY_MAX], v[SACCESS_VLEN];
	size_t kl;

	if (!strict_reuse(e) || a == NULL || a->acc_ms == 0 ||
	    (kl = access_key(k, fh, &a->cred)) == 0)
		return;
	k[0] = 'X';
	put64(v, wall_ms());
	memcpy(v + HDR, &a->asked, 4);
	memcpy(v + HDR + 4, &a->bits, 4);
	memcpy(v + HDR + 8, &attrs->ctime.seconds, 4);
	memcpy(v + HDR + 12, &attrs->ctime.nseconds, 4);
	memcpy(v + HDR + 16, &attrs->mode, 4);
	memcpy(v + HDR + 20, &attrs->uid, 4);
	memcpy(v + HDR + 24, &attrs->gid, 4);
	store_meta_put(e->store, k, kl, v, sizeof(v));
}

int meta_get_strict_access(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred,
                           uint32_t *asked, uint32_t *bits, fattr3 *under, uint64_t *age_ms)
{
	uint8_t k[KEY_MAX];
	const uint8_t *v;
	size_t kl, vlen;
	uint64_t now = wall_ms(), at;
	int rc;

	if (!strict_reuse(e) || (kl = access_key(k, fh, cred)) == 0)
		return -ENOENT;
	k[0] = 'X';
	rc = store_meta_get(e->store, k, kl, (const void **)&v, &vlen);
	if (rc)
		return rc;
	if (vlen != SACCESS_VLEN)
		return -EBADMSG;
	at = get64(v);
	if (at > now + 1000)
		return -ENOENT; /* the clock went back: its age is not known */
	memset(under, 0, sizeof(*under));
	memcpy(asked, v + HDR, 4);
	memcpy(bits, v + HDR + 4, 4);
	memcpy(&under->ctime.seconds, v + HDR + 8, 4);
	memcpy(&under->ctime.nseconds, v + HDR + 12, 4);
	memcpy(&under->mode, v + HDR + 16, 4);
	memcpy(&under->uid, v + HDR + 20, 4);
	memcpy(&under->gid, v + HDR + 24, 4);
	*age_ms = at > now ? 0 : now - at;
	return 0;
}

/* --- listing passes: directory pages ----------------------------------------------
 *
 * A listing answered from the cache is one snapshot: the pages of one
 * upstream pass, each asked from the cookie the one before it ended at
 * (the first by the client whose listing missed, the rest by listpass.c
 * right after it, as a fast client would). The verifier a client is given
 * with a page of a pass is the pass's id, not the server's: a continuation
 * names its pass, and only that pass's pages answer it. A listing starts
 * on the directory's current pass while it is younger than meta_ttl and
 * goes on with it while younger than twice that. Pages of two passes are
 * never stitched: with a filer whose cookies name entries that come and go
 * (tmpfs), a listing stitched from pages of different ages listed names
 * twice, a page twice, or did not end.
 *
 * A continuation its pass cannot answer (a page the pass did not get, a
 * caller without evidence, a pass too old) is sent to the server with the
 * server's own verifier, and the client gets the server's: the rest of its
 * listing goes to the server, as a client listing the server slowly would
 * see it. Records:
 *   'V' dir pass        start, server's verifier, tip, eof, kind, counts
 *   'C' dir kind counts the directory's current pass
 *   'P'/'D' dir pass cookie   the pages
 *   'W' dir pass cred   the credential began a listing on the pass: its
 *                       continuations need no other evidence (the
 *                       directory's ctime moves with every name) */

struct pass {
	uint64_t id;
	uint64_t start; /* wall ms: when the first page was asked */
	uint8_t up_verf[NFS3_COOKIEVERFSIZE];
	uint64_t tip; /* the cookie the next page is asked from */
	uint8_t eof;  /* the pass has its last page */
	char kind;    /* the row's blob: 'P' READDIRPLUS, 'D' READDIR */
	uint32_t c1, c2;
	uint64_t prev; /* the pass it superseded as current (0: none kept) */
};

/* Value of a 'V' record: start (the header), verifier, tip, eof, kind,
 * counts, prev. */
#define PASS_VLEN (HDR + NFS3_COOKIEVERFSIZE + 8 + 1 + 1 + 4 + 4 + 8)

/* What a page call asks: its directory, cookie, verifier and counts. */
struct page_args {
	const nfs_fh3 *dir;
	uint64_t cookie;
	uint8_t verf[NFS3_COOKIEVERFSIZE];
	uint32_t c1, c2;
	char kind;
};

static uint32_t arg_u32(const union cfs_args *a, size_t off)
{
	uint32_t v;

	memcpy(&v, (const char *)a + off, sizeof(v));
	return v;
}

/* The row says where the cookie, the verifier and the counts are; 0, or
 * -ENOENT for a call that is no page call. */
static int page_args(uint32_t proc, const union cfs_args *a, struct page_args *pa)
{
	const struct engine_proc *ep = engine_proc(proc);
	const struct proc_row *row = proc_row(NFS_PROGRAM, proc);

	memset(pa, 0, sizeof(*pa));
	if (ep == NULL || ep->page_ncounts == 0 || row == NULL)
		return -ENOENT;
	pa->dir = proc_fh(row, a);
	if (pa->dir == NULL)
		return -ENOENT;
	memcpy(&pa->cookie, (const char *)a + ep->page_cookie, sizeof(pa->cookie));
	memcpy(pa->verf, (const char *)a + ep->page_verf, NFS3_COOKIEVERFSIZE);
	pa->c1 = arg_u32(a, ep->page_count[0]);
	if (ep->page_ncounts > 1)
		pa->c2 = arg_u32(a, ep->page_count[1]);
	pa->kind = ep->blob;
	return 0;
}

static size_t pass_key(uint8_t *k, const nfs_fh3 *dir, uint64_t id)
{
	uint8_t b[8];

	put64(b, id);
	return mkey(k, 'V', dir, b, sizeof(b));
}

/* The pass id of the directory's current pass for these counts ('C'). */
static size_t current_key(uint8_t *k, const struct page_args *pa)
{
	uint8_t b[9];

	b[0] = (uint8_t)pa->kind;
	memcpy(b + 1, &pa->c1, 4);
	memcpy(b + 5, &pa->c2, 4);
	return mkey(k, 'C', pa->dir, b, sizeof(b));
}

static size_t page_rec_key(uint8_t *k, char kind, const nfs_fh3 *dir, uint64_t id,
                           uint64_t cookie)
{
	uint8_t b[16];

	put64(b, id);
	put64(b + 8, cookie);
	return mkey(k, kind, dir, b, sizeof(b));
}

static int pass_get(struct engine *e, const nfs_fh3 *dir, uint64_t id, struct pass *p)
{
	uint8_t k[KEY_MAX];
	const uint8_t *v;
	size_t kl, vlen;

	if (id == 0 || (kl = pass_key(k, dir, id)) == 0 ||
	    store_meta_get(e->store, k, kl, (const void **)&v, &vlen) != 0 || vlen != PASS_VLEN)
		return -ENOENT;
	p->id = id;
	p->start = get64(v);
	v += HDR;
	memcpy(p->up_verf, v, NFS3_COOKIEVERFSIZE);
	v += NFS3_COOKIEVERFSIZE;
	p->tip = get64(v);
	p->eof = v[8];
	p->kind = (char)v[9];
	memcpy(&p->c1, v + 10, 4);
	memcpy(&p->c2, v + 14, 4);
	p->prev = get64(v + 18);
	return 0;
}

static int pass_put(struct engine *e, const nfs_fh3 *dir, const struct pass *p)
{
	uint8_t k[KEY_MAX], v[PASS_VLEN], *w = v + HDR;
	size_t kl = pass_key(k, dir, p->id);

	if (kl == 0)
		return -ENAMETOOLONG;
	put64(v, p->start);
	memcpy(w, p->up_verf, NFS3_COOKIEVERFSIZE);
	w += NFS3_COOKIEVERFSIZE;
	put64(w, p->tip);
	w[8] = p->eof;
	w[9] = (uint8_t)p->kind;
	memcpy(w + 10, &p->c1, 4);
	memcpy(w + 14, &p->c2, 4);
	put64(w + 18, p->prev);
	return store_meta_put(e->store, k, kl, v, sizeof(v));
}

static uint64_t current_get(struct engine *e, const struct page_args *pa)
{
	uint8_t k[KEY_MAX];
	const uint8_t *v;
	size_t kl, vlen;

	if ((kl = current_key(k, pa)) == 0 ||
	    store_meta_get(e->store, k, kl, (const void **)&v, &vlen) != 0 || vlen != HDR + 8)
		return 0;
	return get64(v + HDR);
}

/* The pass answers calls like pa: of its kind and counts, and younger
 * than ttls times meta_ttl. */
static int pass_fits(const struct engine *e, const struct pass *p, const struct page_args *pa,
                     int ttls)
{
	return p->kind == pa->kind && p->c1 == pa->c1 && p->c2 == pa->c2 &&
	       fresh(e, p->start, e->cfg->meta_ttl * ttls);
}

/* The pass still has its first page: a change of the directory through
 * the proxy drops its pages (dir_changed()), and then it ends. */
static int pass_alive(struct engine *e, const nfs_fh3 *dir, const struct pass *p)
{
	uint8_t k[KEY_MAX];
	const void *v;
	size_t kl, vlen;

	return (kl = page_rec_key(k, p->kind, dir, p->id, 0)) != 0 &&
	       store_meta_get(e->store, k, kl, &v, &vlen) == 0;
}

/* The pages of pass id go. */
static void pass_drop_pages(struct engine *e, char kind, const nfs_fh3 *dir, uint64_t id)
{
	uint8_t k[KEY_MAX];
	size_t kl = mkey(k, kind, dir, NULL, 0);

	if (kl == 0 || kl + 8 > KEY_MAX)
		return;
	put64(k + kl, id);
	store_meta_del_prefix(e->store, k, kl + 8);
	if ((kl = mkey(k, 'W', dir, NULL, 0)) == 0)
		return;
	put64(k + kl, id);
	store_meta_del_prefix(e->store, k, kl + 8);
}

/* p supersedes the passes before it (p->prev, theirs, ...): those older
 * than twice meta_ttl answer nothing any more, and their pages go; the
 * younger stay for the listings that began on them. */
static void passes_trim(struct engine *e, const nfs_fh3 *dir, struct pass *p)
{
	struct pass *link = p, q, r;
	int cut = 0;

	for (uint64_t id = p->prev; id; id = q.prev) {
		if (pass_get(e, dir, id, &q) != 0) {
			link->prev = 0;
			break;
		}
		if (!cut && fresh(e, q.start, e->cfg->meta_ttl * 2)) {
			r = q;
			link = &r;
			continue;
		}
		if (!cut) {
			link->prev = 0;
			if (link != p)
				pass_put(e, dir, link);
			cut = 1;
		}
		pass_drop_pages(e, q.kind, dir, q.id);
	}
}

/* 'W' dir pass cred: the credential began a listing on the pass (was
 * given its first page, by the server or with evidence). */
static size_t reader_key(uint8_t *k, const nfs_fh3 *dir, uint64_t id, const struct cfs_cred *c)
{
	uint8_t b[8 + 4 * (3 + CFS_MAX_GIDS)];
	uint32_t ck[3 + CFS_MAX_GIDS];
	size_t n = 0;

	ck[n++] = c->flavor;
	ck[n++] = c->uid;
	ck[n++] = c->gid;
	for (uint32_t i = 0; i < c->ngids && i < CFS_MAX_GIDS; i++)
		ck[n++] = c->gids[i];
	put64(b, id);
	memcpy(b + 8, ck, n * sizeof(ck[0]));
	return mkey(k, 'W', dir, b, 8 + n * sizeof(ck[0]));
}

int meta_first_page_dir(uint32_t proc, const union cfs_args *a, uint8_t *buf, nfs_fh3 *dir)
{
	struct page_args pa;

	if (page_args(proc, a, &pa) != 0 || pa.cookie != 0 || pa.dir->data.data_len == 0 ||
	    pa.dir->data.data_len > NFS3_FHSIZE)
		return -ENOENT;
	memcpy(buf, pa.dir->data.data_val, pa.dir->data.data_len);
	dir->data.data_len = pa.dir->data.data_len;
	dir->data.data_val = (char *)buf;
	return 0;
}

uint64_t meta_page_pass(uint32_t proc, const void *res)
{
	const struct engine_proc *ep = engine_proc(proc);

	return ep && ep->page_ncounts ? get64((const uint8_t *)res + ep->page_res_verf) : 0;
}

int meta_pass_reader(struct engine *e, const struct engine_call *call, uint64_t id, int add)
{
	uint8_t k[KEY_MAX], v[HDR];
	struct page_args pa;
	const void *val;
	size_t kl, vlen;

	if (!meta_enabled(e) || id == 0 || page_args(call->proc, &call->args, &pa) != 0 ||
	    (kl = reader_key(k, pa.dir, id, &call->cred)) == 0)
		return 0;
	if (add) {
		if (pa.cookie == 0) {
			put64(v, wall_ms());
			store_meta_put(e->store, k, kl, v, sizeof(v));
		}
		return 0;
	}
	return pa.cookie != 0 && store_meta_get(e->store, k, kl, &val, &vlen) == 0;
}

/* A new pass id: never 0 (the verifier most servers give), unique across
 * runs (the records outlive the process). */
static uint64_t new_pass_id(void)
{
	static uint64_t n;
	uint64_t z;

	do {
		/* splitmix64 of the clock and a counter */
		z = (wall_ms() << 20) + ++n + 0x9e3779b97f4a7c15ull;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
	} while (z == 0);
	return z;
}

/* When call was received, by the wall clock (a pass's age counts from
 * the call that asked its first page, not from its answer). */
static uint64_t call_wall_ms(const struct engine_call *call)
{
	uint64_t now = wall_ms(), us = loop_clock_us();

	if (call->t_call_us == 0 || call->t_call_us > us || (us - call->t_call_us) / 1000 > now)
		return now;
	return now - (us - call->t_call_us) / 1000;
}

/* The rows' page_end: a page's entries, its last cookie and eof. */
uint32_t meta_page_end_dir(const void *res, uint64_t *last, int *eof)
{
	const READDIR3res *r = res;
	uint32_t n = 0;

	*last = 0;
	for (const entry3 *en = r->READDIR3res_u.resok.reply.entries; en; en = en->nextentry) {
		*last = en->cookie;
		n++;
	}
	*eof = r->READDIR3res_u.resok.reply.eof != 0;
	return n;
}

uint32_t meta_page_end_plus(const void *res, uint64_t *last, int *eof)
{
	const READDIRPLUS3res *r = res;
	const entryplus3 *next = r->READDIRPLUS3res_u.resok.reply.entries;
	uint32_t n = 0;

	*last = 0;
	while (next) {
		entryplus3 ent;
		memcpy(&ent, next, sizeof(ent));
		*last = ent.cookie;
		n++;
		next = ent.nextentry;
	}
	*eof = r->READDIRPLUS3res_u.resok.reply.eof != 0;
	return n;
}

/* A page call's answer from its pass (pa names it: the current pass for
 * cookie 0, else the one its verifier names), the verifier set to the
 * pass's id: 0, or -ENOENT. */
static int get_page(struct engine *e, const struct engine_call *call, zdrproc_t codec,
                    union nfs3_res *res, struct meta_rec *rec)
{
	const struct engine_proc *ep = engine_proc(call->proc);
	uint8_t k[KEY_MAX];
	struct page_args pa;
	struct pass p;
	uint64_t id;
	size_t kl;

	if (page_args(call->proc, &call->args, &pa) != 0)
		return -ENOENT;
	/* a listing starts only on a pass younger than meta_ttl; one that
	 * started goes on with it for as long again (it stays the snapshot it
	 * began with, at most meta_ttl older than its start) */
	id = pa.cookie == 0 ? current_get(e, &pa) : get64(pa.verf);
	if (pass_get(e, pa.dir, id, &p) != 0 || !pass_fits(e, &p, &pa, pa.cookie == 0 ? 1 : 2) ||
	    (kl = page_rec_key(k, pa.kind, pa.dir, id, pa.cookie)) == 0)
		return -ENOENT;
	memset(res, 0, sizeof(*res));
	if (get_xdr(e, k, kl, codec, res, rec) != 0)
		return -ENOENT;
	if (res->status != NFS3_OK) {
		meta_rec_free(rec);
		return -ENOENT;
	}
	put64((uint8_t *)res + ep->page_res_verf, id);
	return 0;
}

void meta_page_forward(struct engine *e, struct cfs_req *req)
{
	const struct engine_proc *ep = engine_proc(req->proc);
	struct page_args pa;
	struct pass p;

	if (!meta_enabled(e) || page_args(req->proc, &req->args, &pa) != 0 ||
	    pass_get(e, pa.dir, get64(pa.verf), &p) != 0)
		return; /* not a verifier of ours: the server's, as it is */
	/* the server gets its own verifier back (zero with cookie 0) */
	if (pa.cookie == 0) {
		memset((char *)&req->args + ep->page_verf, 0, NFS3_COOKIEVERFSIZE);
		return;
	}
	memcpy((char *)&req->args + ep->page_verf, p.up_verf, NFS3_COOKIEVERFSIZE);
	e->ctr.listing_left++;
}

int meta_pass_next(struct engine *e, uint32_t proc, const nfs_fh3 *dir, uint64_t id,
                   union cfs_args *a)
{
	const struct engine_proc *ep = engine_proc(proc);
	struct page_args pa;
	struct pass p;

	if (!meta_enabled(e) || ep == NULL || ep->page_ncounts == 0 ||
	    pass_get(e, dir, id, &p) != 0 || p.eof || p.kind != ep->blob)
		return -ENOENT;
	memset(&pa, 0, sizeof(pa));
	pa.dir = dir;
	pa.kind = p.kind;
	pa.c1 = p.c1;
	pa.c2 = p.c2;
	if (!pass_fits(e, &p, &pa, 1) || !pass_alive(e, dir, &p))
		return -ENOENT;
	memcpy((char *)a + ep->page_cookie, &p.tip, sizeof(p.tip));
	memcpy((char *)a + ep->page_verf, p.up_verf, NFS3_COOKIEVERFSIZE);
	memcpy((char *)a + ep->page_count[0], &p.c1, 4);
	if (ep->page_ncounts > 1)
		memcpy((char *)a + ep->page_count[1], &p.c2, 4);
	return 0;
}

/* A page the server answered (NFS3_OK): a first page starts a pass (the
 * directory's current one for these counts; the one before goes), the
 * next page of the current pass extends it. The client is told the pass's
 * id as verifier; a page kept by no pass keeps the server's. */
static void record_page(struct engine *e, const struct engine_call *call, zdrproc_t codec,
                        void *res)
{
	const struct engine_proc *ep = engine_proc(call->proc);
	uint8_t k[KEY_MAX], *verf = (uint8_t *)res + ep->page_res_verf;
	uint32_t hint = proc_row(NFS_PROGRAM, call->proc)->reply_want_args(&call->args);
	struct page_args pa;
	struct pass p;
	uint64_t last, old;
	int eof;
	size_t kl;

	if (page_args(call->proc, &call->args, &pa) != 0)
		return;
	if (ep->page_end(res, &last, &eof) == 0 && !eof)
		return; /* nothing to go on from */
	if (pa.cookie == 0) {
		memset(&p, 0, sizeof(p));
		p.id = new_pass_id();
		p.start = call_wall_ms(call);
		memcpy(p.up_verf, verf, NFS3_COOKIEVERFSIZE);
		p.tip = last;
		p.eof = (uint8_t)eof;
		p.kind = pa.kind;
		p.c1 = pa.c1;
		p.c2 = pa.c2;
		old = current_get(e, &pa);
		p.prev = old;
		passes_trim(e, pa.dir, &p);
		if ((kl = page_rec_key(k, pa.kind, pa.dir, p.id, 0)) == 0 ||
		    put_xdr(e, k, kl, codec, res, hint) != 0 || pass_put(e, pa.dir, &p) != 0)
			return;
		{
			uint8_t ck[KEY_MAX], v[HDR + 8];
			size_t ckl = current_key(ck, &pa);

			put64(v, p.start);
			put64(v + HDR, p.id);
			if (ckl == 0 || store_meta_put(e->store, ck, ckl, v, sizeof(v)) != 0)
				return;
		}
		e->ctr.listing_passes++;
		put64(verf, p.id);
		meta_pass_reader(e, call, p.id, 1);
		return;
	}
	if (call->listing_pass == 0)
		return;
	{
		const void *v;
		size_t vlen;

		if (pass_get(e, pa.dir, call->listing_pass, &p) != 0 || !pass_fits(e, &p, &pa, 1) ||
		    !pass_alive(e, pa.dir, &p) || p.eof || p.tip != pa.cookie ||
		    (kl = page_rec_key(k, pa.kind, pa.dir, p.id, pa.cookie)) == 0 ||
		    store_meta_get(e->store, k, kl, &v, &vlen) == 0)
			return; /* not the pass's next page (any more) */
	}
	if (put_xdr(e, k, kl, codec, res, hint) != 0)
		return;
	p.tip = last;
	p.eof = (uint8_t)eof;
	if (pass_put(e, pa.dir, &p) != 0)
		return;
	put64(verf, p.id);
}

/* --- READLINK, FS* ---------------------------------------------------------------- */

/* Key and codec of a cacheable reply of req that is not a page; 0 when it
 * is not one. The row says the record type; the key is its handle, the
 * codec its result's (both encode and decode). */
static size_t blob_key(const struct engine_call *req, uint8_t *k, zdrproc_t *codec)
{
	const struct engine_proc *ep = engine_proc(req->proc);
	const struct proc_row *row = proc_row(NFS_PROGRAM, req->proc);
	const nfs_fh3 *fh = proc_fh(row, &req->args);

	if (ep == NULL || ep->blob == 0 || fh == NULL)
		return 0;
	*codec = row->enc;
	return mkey(k, ep->blob, fh, NULL, 0);
}

/* --- recording upstream results -------------------------------------------------- */

/* READDIRPLUS's row: every entry is also a lookup answer. */
void meta_record_entries(struct engine *e, const union cfs_args *a, void *res)
{
	READDIRPLUS3res *r = res;
	const entryplus3 *next = r->READDIRPLUS3res_u.resok.reply.entries;

	while (next) {
		entryplus3 ent;
		memcpy(&ent, next, sizeof(ent));
		if (ent.name_handle.handle_follows && strcmp(ent.name, ".") != 0 &&
		    strcmp(ent.name, "..") != 0)
			meta_put_lookup(e, &a->readdirplus.dir, ent.name, NFS3_OK,
					&ent.name_handle.post_op_fh3_u.handle);
		next = ent.nextentry;
	}
}

/* Called for every successful upstream reply of a metadata call (ttl mode):
 * what a later call may be answered with. */
void meta_record(struct engine *e, const struct engine_call *req, void *res)
{
	union nfs3_res *r = res;
	const struct engine_proc *ep = engine_proc(req->proc);
	uint8_t k[KEY_MAX];
	size_t kl;
	zdrproc_t codec;

	if (!meta_enabled(e) || ep == NULL)
		return;
	if (ep->name != NAME_NONE) {
		/* a name's answer (LOOKUP), or a new name: later REMOVE/RENAME
		 * of it must know its handle */
		const diropargs3 *d = (const diropargs3 *)((const char *)&req->args + ep->name_args);
		const void *h = (const char *)res + ep->name_res;

		if (r->status == NFS3_OK && ep->name == NAME_LOOKUP)
			meta_put_lookup(e, &d->dir, d->name, NFS3_OK, h);
		else if (r->status == NFS3_OK && ((const post_op_fh3 *)h)->handle_follows)
			meta_put_lookup(e, &d->dir, d->name, NFS3_OK,
					&((const post_op_fh3 *)h)->post_op_fh3_u.handle);
		else if (r->status == NFS3ERR_NOENT && ep->name == NAME_LOOKUP)
			meta_put_lookup(e, &d->dir, d->name, NFS3ERR_NOENT, NULL);
		return;
	}
	if (r->status != NFS3_OK)
		return;
	if (ep->record_more)
		ep->record_more(e, &req->args, res);
	if (ep->page_ncounts) {
		record_page(e, req, proc_row(NFS_PROGRAM, req->proc)->enc, res);
		return;
	}
	kl = blob_key(req, k, &codec);
	if (kl == 0)
		return;
	put_xdr(e, k, kl, codec, res, 8192);
}

int meta_get_reply(struct engine *e, const struct engine_call *call, union nfs3_res *res,
                   struct meta_rec *rec)
{
	uint8_t k[KEY_MAX];
	size_t kl;
	zdrproc_t codec;

	if (engine_proc(call->proc) && engine_proc(call->proc)->page_ncounts)
		return get_page(e, call, proc_row(NFS_PROGRAM, call->proc)->enc, res, rec);
	kl = blob_key(call, k, &codec);
	if (kl == 0)
		return -ENOENT;
	memset(res, 0, sizeof(*res));
	if (get_xdr(e, k, kl, codec, res, rec) != 0)
		return -ENOENT;
	if (!fresh(e, rec->stored, e->cfg->meta_ttl) || res->status != NFS3_OK) {
		meta_rec_free(rec);
		return -ENOENT;
	}
	return 0;
}

/* --- invalidation ------------------------------------------------------------------ */

static void del_key(struct engine *e, char type, const nfs_fh3 *fh)
{
	uint8_t k[KEY_MAX];
	size_t kl = mkey(k, type, fh, NULL, 0);

	if (kl)
		store_meta_del(e->store, k, kl);
}

static void del_prefix(struct engine *e, char type, const nfs_fh3 *fh)
{
	uint8_t k[KEY_MAX];
	size_t kl = mkey(k, type, fh, NULL, 0);

	if (kl)
		store_meta_del_prefix(e->store, k, kl);
}

/* A directory's listing changed: its pages and attributes go, and no
 * pass of it is current (none is extended). Its passes ('V') stay: a
 * client in the middle of one goes on at the server, with the server's
 * own verifier. ('p', 'd': pages as kept before passes.) */
static void dir_changed(struct engine *e, const nfs_fh3 *dir)
{
	static const char types[] = {'P', 'D', 'C', 'W', 'p', 'd'};

	for (size_t i = 0; i < sizeof(types); i++)
		del_prefix(e, types[i], dir);
	del_key(e, 'a', dir);
}

/* What a name pointed to changed (nlink, ctime): forget its attributes. */
static void name_changed(struct engine *e, const nfs_fh3 *dir, const char *name)
{
	uint8_t child[NFS3_FHSIZE], k[KEY_MAX];
	uint32_t len;
	size_t kl;

	if (known_child(e, dir, name, child, &len) == 0) {
		nfs_fh3 c = {{len, (char *)child}};
		del_key(e, 'a', &c);
	}
	kl = lookup_key(k, dir, name);
	if (kl)
		store_meta_del(e->store, k, kl);
}

/* Everything about fh (it went stale upstream). */
void meta_purge(struct engine *e, const nfs_fh3 *fh)
{
	static const char types[] = {'a', 'r', 's', 'i', 'c'};

	if (!meta_enabled(e)) {
		if (e->cfg->strict_access_reuse)
			del_prefix(e, 'X', fh);
		return;
	}
	for (size_t i = 0; i < sizeof(types); i++)
		del_key(e, types[i], fh);
	del_prefix(e, 'x', fh);
	del_prefix(e, 'l', fh);
	del_prefix(e, 'V', fh);
	dir_changed(e, fh);
}

/* A call that changes the namespace or an object, made through the proxy:
 * delete what it makes stale. Called before forwarding and again with the
 * reply (a reply of a concurrent call may have brought old data back). */
void meta_mutation(struct engine *e, struct cfs_req *req)
{
	const struct engine_proc *ep = engine_proc(req->proc);

	if (!meta_enabled(e) || ep == NULL)
		return;
	for (const struct inv_ent *v = ep->inv; v < ep->inv + EP_MAXINV && v->what != INV_END;
	     v++) {
		const void *at = (const char *)&req->args + v->off;
		const diropargs3 *d = at;

		switch (v->what) {
		case INV_ATTRS:
			del_key(e, 'a', at);
			break;
		case INV_NAME:
			name_changed(e, &d->dir, d->name);
			break;
		case INV_DIR:
			dir_changed(e, &d->dir);
			break;
		}
	}
}

/* --- upkeep -------------------------------------------------------------------------- */

static int expired(const void *val, size_t vlen, void *arg)
{
	const struct engine *e = arg;
	uint64_t keep = (uint64_t)e->cfg->meta_ttl * 1000 * 4;

	if (keep < 3600 * 1000)
		keep = 3600 * 1000;
	return vlen < HDR || wall_ms() - get64(val) > keep;
}

/* Records long past their TTL are deleted a few hundred at a time. */
/* Strict mode keeps only the 'X' records: useless once strict_access_ttl old. */
static int strict_expired(const void *val, size_t vlen, void *arg)
{
	const struct engine *e = arg;
	const uint8_t *v = val;

	return vlen < HDR || wall_ms() - get64(v) > (uint64_t)e->cfg->strict_access_ttl * 1000;
}

void meta_sweep(struct engine *e)
{
	if (meta_enabled(e))
		store_meta_sweep(e->store, 256, expired, e);
	else if (store_meta_count(e->store) > 0)
		store_meta_sweep(e->store, 256, strict_expired, e);
}

/* Strict mode keeps no metadata: whatever an earlier ttl-mode run left
 * would be unknown-stale if ttl mode came back, so it goes at start. */
void meta_start(struct engine *e)
{
	static const uint8_t types[] = {'a', 'l', 'x', 'r', 'p', 'd', 's', 'i', 'c',
	                                'P', 'D', 'V', 'C', 'W'};
	int n = 0, rc;

	if (meta_enabled(e) || store_meta_count(e->store) == 0)
		return;
	/* 'X' (strict mode's own ACCESS answers) stays */
	for (size_t i = 0; i < sizeof(types); i++)
		if ((rc = store_meta_del_prefix(e->store, &types[i], 1)) > 0)
			n += rc;
	store_commit(e->store);
	if (n > 0)
		log_info("strict mode: dropped the metadata cache of an earlier ttl-mode run");
}
