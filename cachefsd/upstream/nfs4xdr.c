/* The NFSv4.0 upstream's pure parts (include/nfs4up.h): nfsstat4 to
 * nfsstat3, owner strings to ids, fattr4 decoding and encoding, the
 * COMPOUND each NFSv3 call becomes, and its answer turned into the v3
 * result. No I/O, no state: tests/unit/test_nfs4.c runs all of it without
 * a server. The client on the loop is in nfs4.c; docs/design.md, "NFSv4.0
 * upstream (first step)", says which COMPOUNDs and mappings and why. */
#include "nfs4up.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* --- nfsstat4 -> nfsstat3 ------------------------------------------------- */

/* The nearest v3 code. Where v3 has the same condition the code is the
 * same; states v4 has and v3 lacks become what a v3 client does the right
 * thing with: a transient state (DELAY, GRACE, a lease or stateid being
 * recovered) is NFS3ERR_JUKEBOX (the client retries), a handle that
 * expired is NFS3ERR_STALE, a share or open-mode conflict NFS3ERR_ACCES,
 * a malformed name NFS3ERR_INVAL, a symlink met by LOOKUP NFS3ERR_NOTDIR,
 * protocol trouble between us and the server NFS3ERR_SERVERFAULT. */
static const struct {
	int v4, v3;
} stat_map[] = {
    {NFS4_OK, NFS3_OK},
    {NFS4ERR_PERM, NFS3ERR_PERM},
    {NFS4ERR_NOENT, NFS3ERR_NOENT},
    {NFS4ERR_IO, NFS3ERR_IO},
    {NFS4ERR_NXIO, NFS3ERR_NXIO},
    {NFS4ERR_ACCESS, NFS3ERR_ACCES},
    {NFS4ERR_EXIST, NFS3ERR_EXIST},
    {NFS4ERR_XDEV, NFS3ERR_XDEV},
    {NFS4ERR_NOTDIR, NFS3ERR_NOTDIR},
    {NFS4ERR_ISDIR, NFS3ERR_ISDIR},
    {NFS4ERR_INVAL, NFS3ERR_INVAL},
    {NFS4ERR_FBIG, NFS3ERR_FBIG},
    {NFS4ERR_NOSPC, NFS3ERR_NOSPC},
    {NFS4ERR_ROFS, NFS3ERR_ROFS},
    {NFS4ERR_MLINK, NFS3ERR_MLINK},
    {NFS4ERR_NAMETOOLONG, NFS3ERR_NAMETOOLONG},
    {NFS4ERR_NOTEMPTY, NFS3ERR_NOTEMPTY},
    {NFS4ERR_DQUOT, NFS3ERR_DQUOT},
    {NFS4ERR_STALE, NFS3ERR_STALE},
    {NFS4ERR_BADHANDLE, NFS3ERR_BADHANDLE},
    {NFS4ERR_BAD_COOKIE, NFS3ERR_BAD_COOKIE},
    {NFS4ERR_NOTSUPP, NFS3ERR_NOTSUPP},
    {NFS4ERR_TOOSMALL, NFS3ERR_TOOSMALL},
    {NFS4ERR_SERVERFAULT, NFS3ERR_SERVERFAULT},
    {NFS4ERR_BADTYPE, NFS3ERR_BADTYPE},
    {NFS4ERR_DELAY, NFS3ERR_JUKEBOX},
    {NFS4ERR_SAME, NFS3ERR_SERVERFAULT},
    {NFS4ERR_DENIED, NFS3ERR_ACCES},
    {NFS4ERR_EXPIRED, NFS3ERR_JUKEBOX},
    {NFS4ERR_LOCKED, NFS3ERR_JUKEBOX},
    {NFS4ERR_GRACE, NFS3ERR_JUKEBOX},
    {NFS4ERR_FHEXPIRED, NFS3ERR_STALE},
    {NFS4ERR_SHARE_DENIED, NFS3ERR_ACCES},
    {NFS4ERR_WRONGSEC, NFS3ERR_PERM},
    {NFS4ERR_CLID_INUSE, NFS3ERR_SERVERFAULT},
    {NFS4ERR_RESOURCE, NFS3ERR_SERVERFAULT},
    {NFS4ERR_MOVED, NFS3ERR_STALE},
    {NFS4ERR_NOFILEHANDLE, NFS3ERR_BADHANDLE},
    {NFS4ERR_MINOR_VERS_MISMATCH, NFS3ERR_NOTSUPP},
    {NFS4ERR_STALE_CLIENTID, NFS3ERR_JUKEBOX},
    {NFS4ERR_STALE_STATEID, NFS3ERR_JUKEBOX},
    {NFS4ERR_OLD_STATEID, NFS3ERR_JUKEBOX},
    {NFS4ERR_BAD_STATEID, NFS3ERR_ACCES},
    {NFS4ERR_BAD_SEQID, NFS3ERR_SERVERFAULT},
    {NFS4ERR_NOT_SAME, NFS3ERR_SERVERFAULT},
    {NFS4ERR_LOCK_RANGE, NFS3ERR_NOTSUPP},
    {NFS4ERR_SYMLINK, NFS3ERR_NOTDIR},
    {NFS4ERR_RESTOREFH, NFS3ERR_SERVERFAULT},
    {NFS4ERR_LEASE_MOVED, NFS3ERR_JUKEBOX},
    {NFS4ERR_ATTRNOTSUPP, NFS3ERR_NOTSUPP},
    {NFS4ERR_NO_GRACE, NFS3ERR_SERVERFAULT},
    {NFS4ERR_RECLAIM_BAD, NFS3ERR_SERVERFAULT},
    {NFS4ERR_RECLAIM_CONFLICT, NFS3ERR_SERVERFAULT},
    {NFS4ERR_BADZDR, NFS3ERR_SERVERFAULT},
    {NFS4ERR_LOCKS_HELD, NFS3ERR_ACCES},
    {NFS4ERR_OPENMODE, NFS3ERR_ACCES},
    {NFS4ERR_BADOWNER, NFS3ERR_INVAL},
    {NFS4ERR_BADCHAR, NFS3ERR_INVAL},
    {NFS4ERR_BADNAME, NFS3ERR_INVAL},
    {NFS4ERR_BAD_RANGE, NFS3ERR_INVAL},
    {NFS4ERR_LOCK_NOTSUPP, NFS3ERR_NOTSUPP},
    {NFS4ERR_OP_ILLEGAL, NFS3ERR_NOTSUPP},
    {NFS4ERR_DEADLOCK, NFS3ERR_ACCES},
    {NFS4ERR_FILE_OPEN, NFS3ERR_ACCES},
    {NFS4ERR_ADMIN_REVOKED, NFS3ERR_ACCES},
    {NFS4ERR_CB_PATH_DOWN, NFS3ERR_SERVERFAULT},
};

int n4_stat3(int nfsstat4)
{
	for (size_t i = 0; i < sizeof(stat_map) / sizeof(stat_map[0]); i++)
		if (stat_map[i].v4 == nfsstat4)
			return stat_map[i].v3;
	return NFS3ERR_SERVERFAULT;
}

enum n4_action n4_action_of(uint32_t proc, int st)
{
	switch (st) {
	case NFS4ERR_DELAY:
	case NFS4ERR_GRACE:
		return N4_DELAY;
	case NFS4ERR_STALE_CLIENTID:
	case NFS4ERR_EXPIRED:
	case NFS4ERR_LEASE_MOVED:
		return N4_RECOVER;
	case NFS4ERR_BAD_STATEID:
	case NFS4ERR_OPENMODE:
	case NFS4ERR_STALE_STATEID:
		return proc == NFS3_READ ? N4_STATEID : N4_ANSWER;
	default:
		return N4_ANSWER;
	}
}

enum n4_action n4_action_of_req(const struct n4_req *rq, int st)
{
	enum n4_action a = n4_action_of(rq->proc, st);

	if (a != N4_ANSWER || rq->phase != N4_PH_MAIN)
		return a == N4_STATEID && rq->phase != N4_PH_MAIN ? N4_ANSWER : a;
	switch (st) {
	case NFS4ERR_BAD_STATEID:
	case NFS4ERR_OPENMODE:
	case NFS4ERR_STALE_STATEID:
	case NFS4ERR_OLD_STATEID:
		/* a special stateid the server will not take for this
		 * write, or an open of ours it no longer knows */
		if (rq->proc == NFS3_WRITE || (rq->proc == NFS3_SETATTR && rq->has_size))
			return N4_STATEID;
		return N4_ANSWER;
	default:
		return N4_ANSWER;
	}
}

/* --- owners ---------------------------------------------------------------- */

int n4_owner_to_id(const char *s, size_t len, int group, const char *domain, uint32_t *id)
{
	char name[256];
	const char *at;
	size_t nl;

	if (len > 0 && len <= 10) {
		uint64_t v = 0;
		size_t i;
		for (i = 0; i < len && isdigit((unsigned char)s[i]); i++)
			v = v * 10 + (uint64_t)(s[i] - '0');
		if (i == len && v <= UINT32_MAX) {
			*id = (uint32_t)v;
			return 0;
		}
	}
	at = memrchr(s, '@', len);
	nl = at ? (size_t)(at - s) : len;
	if (nl == 0 || nl >= sizeof(name) || memchr(s, 0, len))
		goto nobody;
	if (at && domain && domain[0]) {
		size_t dl = len - nl - 1;
		if (dl != strlen(domain) || strncasecmp(at + 1, domain, dl) != 0)
			goto nobody;
	}
	memcpy(name, s, nl);
	name[nl] = 0;
	return n4_idmap_lookup(name, group, id);
nobody:
	*id = n4_idmap_nobody(group);
	return -ENOENT;
}

/* --- fattr4 ---------------------------------------------------------------- */

/* An XDR reader over an attribute list; a short read sets bad. */
struct xr {
	const unsigned char *p;
	size_t n;
	int bad;
};

static uint32_t xr32(struct xr *r)
{
	uint32_t v;

	if (r->n < 4) {
		r->bad = 1;
		r->n = 0;
		return 0;
	}
	v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->n -= 4;
	return v;
}

static uint64_t xr64(struct xr *r)
{
	uint64_t hi = xr32(r);

	return hi << 32 | xr32(r);
}

/* an opaque<max>: its bytes (in place) and length */
static const char *xrop(struct xr *r, uint32_t *len, uint32_t max)
{
	uint32_t l = xr32(r), padded;
	const char *p;

	padded = (l + 3) & ~3u;
	if (r->bad || l > max || padded > r->n) {
		r->bad = 1;
		r->n = 0;
		*len = 0;
		return NULL;
	}
	p = (const char *)r->p;
	r->p += padded;
	r->n -= padded;
	*len = l;
	return p;
}

static void xr_time(struct xr *r, nfstime3 *t)
{
	int64_t s = (int64_t)xr64(r);
	uint32_t ns = xr32(r);

	/* v3 times are unsigned 32-bit seconds */
	t->seconds = s < 0 ? 0 : s > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)s;
	t->nseconds = ns;
}

static ftype3 ftype_of(uint32_t t4)
{
	switch (t4) {
	case NF4REG:
	case NF4NAMEDATTR:
		return NF3REG;
	case NF4DIR:
	case NF4ATTRDIR:
		return NF3DIR;
	case NF4BLK:
		return NF3BLK;
	case NF4CHR:
		return NF3CHR;
	case NF4LNK:
		return NF3LNK;
	case NF4SOCK:
		return NF3SOCK;
	case NF4FIFO:
		return NF3FIFO;
	default:
		return NF3REG;
	}
}

static int decode_one(struct xr *r, int bit, const char *domain, struct n4_attrs *a)
{
	uint32_t l, n;
	const char *s;

	switch (bit) {
	case FATTR4_SUPPORTED_ATTRS:
		n = xr32(r);
		if (n > 8)
			return -EPROTO;
		while (n--)
			xr32(r);
		break;
	case FATTR4_TYPE:
		a->f.type = ftype_of(xr32(r));
		break;
	case FATTR4_CHANGE:
		a->change = xr64(r);
		break;
	case FATTR4_SIZE:
		a->f.size = xr64(r);
		break;
	case FATTR4_FSID: {
		uint64_t major = xr64(r), minor = xr64(r);
		/* v3 has one 64-bit fsid: fold the minor in, turned round so
		 * that (major, minor) pairs with small numbers stay apart */
		a->f.fsid = major ^ (minor << 32 | minor >> 32);
		break;
	}
	case FATTR4_LEASE_TIME:
		a->lease_time = xr32(r);
		break;
	case FATTR4_RDATTR_ERROR:
		a->rdattr_error = xr32(r);
		break;
	case FATTR4_ACL:
		n = xr32(r);
		if (n > 1024)
			return -EPROTO;
		while (n-- && !r->bad) {
			xr32(r);
			xr32(r);
			xr32(r);
			xrop(r, &l, NFS4_OPAQUE_LIMIT);
		}
		break;
	case FATTR4_FILEHANDLE:
		a->fh = xrop(r, &a->fh_len, NFS4_FHSIZE);
		break;
	case FATTR4_FILEID:
		a->f.fileid = xr64(r);
		break;
	case FATTR4_MAXREAD:
		a->maxread = xr64(r);
		break;
	case FATTR4_MAXWRITE:
		a->maxwrite = xr64(r);
		break;
	case FATTR4_MIMETYPE:
		xrop(r, &l, NFS4_OPAQUE_LIMIT);
		break;
	case FATTR4_MODE:
		a->f.mode = xr32(r) & 07777;
		break;
	case FATTR4_NUMLINKS:
		a->f.nlink = xr32(r);
		break;
	case FATTR4_OWNER:
	case FATTR4_OWNER_GROUP:
		s = xrop(r, &l, NFS4_OPAQUE_LIMIT);
		if (s && n4_owner_to_id(s, l, bit == FATTR4_OWNER_GROUP, domain,
		                        bit == FATTR4_OWNER ? &a->f.uid : &a->f.gid) < 0)
			a->nobody = 1;
		break;
	case FATTR4_RAWDEV:
		a->f.rdev.specdata1 = xr32(r);
		a->f.rdev.specdata2 = xr32(r);
		break;
	case FATTR4_SPACE_USED:
		a->f.used = xr64(r);
		break;
	case FATTR4_TIME_ACCESS:
		xr_time(r, &a->f.atime);
		break;
	case FATTR4_TIME_METADATA:
		xr_time(r, &a->f.ctime);
		break;
	case FATTR4_TIME_MODIFY:
		xr_time(r, &a->f.mtime);
		break;
	case FATTR4_TIME_DELTA:
		xr_time(r, &a->time_delta);
		break;
	case FATTR4_TIME_BACKUP:
	case FATTR4_TIME_CREATE:
		xr64(r);
		xr32(r);
		break;
	case FATTR4_LINK_SUPPORT:
		a->link_support = xr32(r);
		break;
	case FATTR4_SYMLINK_SUPPORT:
		a->symlink_support = xr32(r);
		break;
	case FATTR4_CANSETTIME:
		a->cansettime = xr32(r);
		break;
	case FATTR4_CASE_INSENSITIVE:
		a->case_insensitive = xr32(r);
		break;
	case FATTR4_CASE_PRESERVING:
		a->case_preserving = xr32(r);
		break;
	case FATTR4_CHOWN_RESTRICTED:
		a->chown_restricted = xr32(r);
		break;
	case FATTR4_HOMOGENEOUS:
		a->homogeneous = xr32(r);
		break;
	case FATTR4_MAXLINK:
		a->maxlink = xr32(r);
		break;
	case FATTR4_MAXNAME:
		a->maxname = xr32(r);
		break;
	case FATTR4_NO_TRUNC:
		a->no_trunc = xr32(r);
		break;
	case FATTR4_FILES_AVAIL:
		a->files_avail = xr64(r);
		break;
	case FATTR4_FILES_FREE:
		a->files_free = xr64(r);
		break;
	case FATTR4_FILES_TOTAL:
		a->files_total = xr64(r);
		break;
	case FATTR4_MAXFILESIZE:
		a->maxfilesize = xr64(r);
		break;
	case FATTR4_SPACE_AVAIL:
		a->space_avail = xr64(r);
		break;
	case FATTR4_SPACE_FREE:
		a->space_free = xr64(r);
		break;
	case FATTR4_SPACE_TOTAL:
		a->space_total = xr64(r);
		break;
	/* 4 bytes we do not keep: booleans and small numbers */
	case FATTR4_FH_EXPIRE_TYPE:
	case FATTR4_NAMED_ATTR:
	case FATTR4_UNIQUE_HANDLES:
	case FATTR4_ACLSUPPORT:
	case FATTR4_ARCHIVE:
	case FATTR4_HIDDEN:
	case FATTR4_SYSTEM:
		xr32(r);
		break;
	/* 8 bytes */
	case FATTR4_QUOTA_AVAIL_HARD:
	case FATTR4_QUOTA_AVAIL_SOFT:
	case FATTR4_QUOTA_USED:
	case FATTR4_MOUNTED_ON_FILEID:
		xr64(r);
		break;
	default:
		/* fs_locations and the set-only times: never asked for, and
		 * their size is not fixed: the rest cannot be read */
		return -EPROTO;
	}
	return r->bad ? -EPROTO : 0;
}

int n4_fattr_decode(const fattr4 *f, const char *domain, struct n4_attrs *a)
{
	struct xr r = {(const unsigned char *)f->attr_vals.attrlist4_val,
	               f->attr_vals.attrlist4_len, 0};

	memset(a, 0, sizeof(*a));
	a->f.type = NF3REG;
	a->f.nlink = 1;
	for (u_int w = 2; w < f->attrmask.bitmap4_len; w++)
		if (f->attrmask.bitmap4_val[w])
			return -EPROTO; /* attributes past 63: none that v4.0 defines */
	for (int bit = 0; bit < 64; bit++) {
		u_int w = (u_int)bit / 32;
		if (w >= f->attrmask.bitmap4_len ||
		    !((f->attrmask.bitmap4_val[w] >> (bit % 32)) & 1))
			continue;
		int rc = decode_one(&r, bit, domain, a);
		if (rc)
			return rc;
		a->have[w] |= 1u << (bit % 32);
	}
	if (r.n != 0)
		return -EPROTO;
	if (!n4_has(a, FATTR4_SPACE_USED))
		a->f.used = a->f.size;
	return 0;
}

/* An XDR writer for n4_sattr3_encode(). */
struct xw {
	char *p;
	size_t n, cap;
};

static void xw32(struct xw *w, uint32_t v)
{
	if (w->n + 4 <= w->cap) {
		unsigned char *q = (unsigned char *)w->p + w->n;
		q[0] = (unsigned char)(v >> 24);
		q[1] = (unsigned char)(v >> 16);
		q[2] = (unsigned char)(v >> 8);
		q[3] = (unsigned char)v;
	}
	w->n += 4;
}

static void xw64(struct xw *w, uint64_t v)
{
	xw32(w, (uint32_t)(v >> 32));
	xw32(w, (uint32_t)v);
}

static void xwstr(struct xw *w, const char *s)
{
	uint32_t l = (uint32_t)strlen(s), padded = (l + 3) & ~3u;

	xw32(w, l);
	if (w->n + padded <= w->cap) {
		memset(w->p + w->n, 0, padded);
		memcpy(w->p + w->n, s, l);
	}
	w->n += padded;
}

static void xwsettime(struct xw *w, int how, const nfstime3 *t)
{
	/* SET_TO_SERVER_TIME = 1, SET_TO_CLIENT_TIME = 2 in v3 */
	if (how == SET_TO_CLIENT_TIME) {
		xw32(w, SET_TO_CLIENT_TIME4);
		xw64(w, t->seconds);
		xw32(w, t->nseconds);
	} else {
		xw32(w, SET_TO_SERVER_TIME4);
	}
}

int n4_sattr3_encode(const sattr3 *s, uint32_t mask[2], char *buf, size_t cap, size_t *len)
{
	struct xw w = {buf, 0, cap};
	char num[16];

	mask[0] = mask[1] = 0;
	/* bitmap order: size (4), mode (33), owner (36), owner_group (37),
	 * time_access_set (48), time_modify_set (54) */
	if (s->size.set_it) {
		mask[0] |= 1u << FATTR4_SIZE;
		xw64(&w, s->size.set_size3_u.size);
	}
	if (s->mode.set_it) {
		mask[1] |= 1u << (FATTR4_MODE - 32);
		xw32(&w, s->mode.set_mode3_u.mode & 07777);
	}
	if (s->uid.set_it) {
		mask[1] |= 1u << (FATTR4_OWNER - 32);
		snprintf(num, sizeof(num), "%u", s->uid.set_uid3_u.uid);
		xwstr(&w, num);
	}
	if (s->gid.set_it) {
		mask[1] |= 1u << (FATTR4_OWNER_GROUP - 32);
		snprintf(num, sizeof(num), "%u", s->gid.set_gid3_u.gid);
		xwstr(&w, num);
	}
	if (s->atime.set_it != DONT_CHANGE) {
		mask[1] |= 1u << (FATTR4_TIME_ACCESS_SET - 32);
		xwsettime(&w, s->atime.set_it, &s->atime.set_atime_u.atime);
	}
	if (s->mtime.set_it != DONT_CHANGE) {
		mask[1] |= 1u << (FATTR4_TIME_MODIFY_SET - 32);
		xwsettime(&w, s->mtime.set_it, &s->mtime.set_mtime_u.mtime);
	}
	*len = w.n;
	return w.n <= cap ? 0 : -ENOSPC;
}

/* --- COMPOUNDs -------------------------------------------------------------- */

#define BIT(a) (1u << ((a) % 32))
#define W0(a)  ((a) < 32 ? BIT(a) : 0)
#define W1(a)  ((a) >= 32 ? BIT(a) : 0)
#define V3_W0                                                                                      \
	(W0(FATTR4_TYPE) | W0(FATTR4_CHANGE) | W0(FATTR4_SIZE) | W0(FATTR4_FSID) |                 \
	 W0(FATTR4_FILEID))
#define V3_W1                                                                                      \
	(W1(FATTR4_MODE) | W1(FATTR4_NUMLINKS) | W1(FATTR4_OWNER) | W1(FATTR4_OWNER_GROUP) |       \
	 W1(FATTR4_RAWDEV) | W1(FATTR4_SPACE_USED) | W1(FATTR4_TIME_ACCESS) |                      \
	 W1(FATTR4_TIME_METADATA) | W1(FATTR4_TIME_MODIFY))

const uint32_t N4_ATTRS[2] = {V3_W0, V3_W1};
const uint32_t N4_ATTRS_DIRENT[2] = {V3_W0 | W0(FATTR4_RDATTR_ERROR) | W0(FATTR4_FILEHANDLE),
                                     V3_W1};
const uint32_t N4_ATTRS_FILEID[2] = {W0(FATTR4_FILEID), 0};
const uint32_t N4_ATTRS_WCC[2] = {W0(FATTR4_CHANGE) | W0(FATTR4_SIZE),
                                  W1(FATTR4_TIME_METADATA) | W1(FATTR4_TIME_MODIFY)};
const uint32_t N4_ATTRS_FS[2] = {
    V3_W0 | W0(FATTR4_LINK_SUPPORT) | W0(FATTR4_SYMLINK_SUPPORT) | W0(FATTR4_CANSETTIME) |
        W0(FATTR4_CASE_INSENSITIVE) | W0(FATTR4_CASE_PRESERVING) | W0(FATTR4_CHOWN_RESTRICTED) |
        W0(FATTR4_FILES_AVAIL) | W0(FATTR4_FILES_FREE) | W0(FATTR4_FILES_TOTAL) |
        W0(FATTR4_HOMOGENEOUS) | W0(FATTR4_MAXFILESIZE) | W0(FATTR4_MAXLINK) | W0(FATTR4_MAXNAME) |
        W0(FATTR4_MAXREAD) | W0(FATTR4_MAXWRITE),
    V3_W1 | W1(FATTR4_NO_TRUNC) | W1(FATTR4_SPACE_AVAIL) | W1(FATTR4_SPACE_FREE) |
        W1(FATTR4_SPACE_TOTAL) | W1(FATTR4_TIME_DELTA)};
const uint32_t N4_ATTRS_ROOT[2] = {
    V3_W0 | W0(FATTR4_LEASE_TIME) | W0(FATTR4_MAXREAD) | W0(FATTR4_MAXWRITE), V3_W1};

void n4_compound_init(struct n4_compound *b, const char *tag)
{
	memset(b, 0, sizeof(*b));
	snprintf(b->tag, sizeof(b->tag), "%s", tag ? tag : "");
	b->args.tag.utf8string_len = (u_int)strlen(b->tag);
	b->args.tag.utf8string_val = b->tag;
	b->args.minorversion = 0;
	b->args.argarray.argarray_val = b->ops;
}

static nfs_argop4 *op_add(struct n4_compound *b, nfs_opnum4 op)
{
	nfs_argop4 *o;

	if (b->args.argarray.argarray_len >= N4_MAXOPS)
		return NULL;
	o = &b->ops[b->args.argarray.argarray_len++];
	memset(o, 0, sizeof(*o));
	o->argop = op;
	return o;
}

nfs_argop4 *n4_op_add(struct n4_compound *b, nfs_opnum4 op)
{
	return op_add(b, op);
}

int n4_op_putrootfh(struct n4_compound *b)
{
	return op_add(b, OP_PUTROOTFH) ? 0 : -ENOSPC;
}

int n4_op_putfh(struct n4_compound *b, const struct n4_fh *fh)
{
	nfs_argop4 *o = op_add(b, OP_PUTFH);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opputfh.object.nfs_fh4_len = fh->len;
	o->nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)fh->data;
	return 0;
}

int n4_op_lookup(struct n4_compound *b, const char *name, uint32_t len)
{
	nfs_argop4 *o = op_add(b, OP_LOOKUP);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.oplookup.objname.utf8string_len = len;
	o->nfs_argop4_u.oplookup.objname.utf8string_val = (char *)name;
	return 0;
}

int n4_op_lookupp(struct n4_compound *b)
{
	return op_add(b, OP_LOOKUPP) ? 0 : -ENOSPC;
}

int n4_op_getfh(struct n4_compound *b)
{
	return op_add(b, OP_GETFH) ? 0 : -ENOSPC;
}

int n4_op_getattr(struct n4_compound *b, const uint32_t *mask, uint32_t nwords)
{
	nfs_argop4 *o = op_add(b, OP_GETATTR);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opgetattr.attr_request.bitmap4_len = nwords;
	o->nfs_argop4_u.opgetattr.attr_request.bitmap4_val = (uint32_t *)mask;
	return 0;
}

int n4_op_access(struct n4_compound *b, uint32_t bits)
{
	nfs_argop4 *o = op_add(b, OP_ACCESS);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opaccess.access = bits;
	return 0;
}

int n4_op_read(struct n4_compound *b, int bypass, uint64_t offset, uint32_t count)
{
	nfs_argop4 *o = op_add(b, OP_READ);

	if (o == NULL)
		return -ENOSPC;
	/* the special stateids (RFC 7530 section 9.1.4.3): all zeros is
	 * anonymous; all ones (seqid too) may bypass share reservations */
	if (bypass) {
		o->nfs_argop4_u.opread.stateid.seqid = 0xffffffffu;
		memset(o->nfs_argop4_u.opread.stateid.other, 0xff,
		       sizeof(o->nfs_argop4_u.opread.stateid.other));
	}
	o->nfs_argop4_u.opread.offset = offset;
	o->nfs_argop4_u.opread.count = count;
	return 0;
}

int n4_op_readlink(struct n4_compound *b)
{
	return op_add(b, OP_READLINK) ? 0 : -ENOSPC;
}

int n4_op_readdir(struct n4_compound *b, uint64_t cookie, const char *verf, uint32_t dircount,
                  uint32_t maxcount, const uint32_t *mask, uint32_t nwords)
{
	nfs_argop4 *o = op_add(b, OP_READDIR);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opreaddir.cookie = cookie;
	if (verf)
		memcpy(o->nfs_argop4_u.opreaddir.cookieverf, verf, NFS4_VERIFIER_SIZE);
	o->nfs_argop4_u.opreaddir.dircount = dircount;
	o->nfs_argop4_u.opreaddir.maxcount = maxcount;
	o->nfs_argop4_u.opreaddir.attr_request.bitmap4_len = nwords;
	o->nfs_argop4_u.opreaddir.attr_request.bitmap4_val = (uint32_t *)mask;
	return 0;
}

int n4_op_renew(struct n4_compound *b, clientid4 id)
{
	nfs_argop4 *o = op_add(b, OP_RENEW);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.oprenew.clientid = id;
	return 0;
}

int n4_op_setclientid(struct n4_compound *b, const char *id, const char *verifier)
{
	nfs_argop4 *o = op_add(b, OP_SETCLIENTID);
	SETCLIENTID4args *a;

	if (o == NULL)
		return -ENOSPC;
	a = &o->nfs_argop4_u.opsetclientid;
	memcpy(a->client.verifier, verifier, NFS4_VERIFIER_SIZE);
	a->client.id.id_len = (u_int)strlen(id);
	a->client.id.id_val = (char *)id;
	/* No callback service: program 0 at an address nobody listens on, so
	 * the server never grants delegations (we take no opens either). */
	a->callback.cb_program = 0;
	a->callback.cb_location.r_netid = (char *)"tcp";
	a->callback.cb_location.r_addr = (char *)"0.0.0.0.0.0";
	a->callback_ident = 0;
	return 0;
}

int n4_op_setclientid_confirm(struct n4_compound *b, clientid4 id, const char *confirm)
{
	nfs_argop4 *o = op_add(b, OP_SETCLIENTID_CONFIRM);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opsetclientid_confirm.clientid = id;
	memcpy(o->nfs_argop4_u.opsetclientid_confirm.setclientid_confirm, confirm,
	       NFS4_VERIFIER_SIZE);
	return 0;
}

/* --- the writes' operations ------------------------------------------------- */

int n4_op_savefh(struct n4_compound *b)
{
	return op_add(b, OP_SAVEFH) ? 0 : -ENOSPC;
}

int n4_op_restorefh(struct n4_compound *b)
{
	return op_add(b, OP_RESTOREFH) ? 0 : -ENOSPC;
}

int n4_op_write(struct n4_compound *b, const stateid4 *sid, uint64_t offset, uint32_t stable,
                const char *data, uint32_t len)
{
	nfs_argop4 *o = op_add(b, OP_WRITE);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opwrite.stateid = *sid;
	o->nfs_argop4_u.opwrite.offset = offset;
	/* stable_how4 and v3's stable_how have the same values */
	o->nfs_argop4_u.opwrite.stable = (stable_how4)stable;
	o->nfs_argop4_u.opwrite.data.data_len = len;
	o->nfs_argop4_u.opwrite.data.data_val = (char *)data;
	return 0;
}

int n4_op_commit(struct n4_compound *b, uint64_t offset, uint32_t count)
{
	nfs_argop4 *o = op_add(b, OP_COMMIT);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opcommit.offset = offset;
	o->nfs_argop4_u.opcommit.count = count;
	return 0;
}

static void fattr_set(fattr4 *f, const uint32_t *mask, const char *attrs, size_t len)
{
	f->attrmask.bitmap4_len = 2;
	f->attrmask.bitmap4_val = (uint32_t *)mask;
	f->attr_vals.attrlist4_len = (u_int)len;
	f->attr_vals.attrlist4_val = (char *)attrs;
}

int n4_op_setattr(struct n4_compound *b, const stateid4 *sid, const uint32_t *mask,
                  const char *attrs, size_t len)
{
	nfs_argop4 *o = op_add(b, OP_SETATTR);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opsetattr.stateid = *sid;
	fattr_set(&o->nfs_argop4_u.opsetattr.obj_attributes, mask, attrs, len);
	return 0;
}

int n4_op_verify(struct n4_compound *b, int negate, const uint32_t *mask, const char *attrs,
                 size_t len)
{
	nfs_argop4 *o = op_add(b, negate ? OP_NVERIFY : OP_VERIFY);

	if (o == NULL)
		return -ENOSPC;
	if (negate)
		fattr_set(&o->nfs_argop4_u.opnverify.obj_attributes, mask, attrs, len);
	else
		fattr_set(&o->nfs_argop4_u.opverify.obj_attributes, mask, attrs, len);
	return 0;
}

int n4_op_remove(struct n4_compound *b, const char *name, uint32_t len)
{
	nfs_argop4 *o = op_add(b, OP_REMOVE);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opremove.target.utf8string_len = len;
	o->nfs_argop4_u.opremove.target.utf8string_val = (char *)name;
	return 0;
}

int n4_op_rename(struct n4_compound *b, const char *from, uint32_t flen, const char *to,
                 uint32_t tlen)
{
	nfs_argop4 *o = op_add(b, OP_RENAME);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.oprename.oldname.utf8string_len = flen;
	o->nfs_argop4_u.oprename.oldname.utf8string_val = (char *)from;
	o->nfs_argop4_u.oprename.newname.utf8string_len = tlen;
	o->nfs_argop4_u.oprename.newname.utf8string_val = (char *)to;
	return 0;
}

int n4_op_link(struct n4_compound *b, const char *name, uint32_t len)
{
	nfs_argop4 *o = op_add(b, OP_LINK);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.oplink.newname.utf8string_len = len;
	o->nfs_argop4_u.oplink.newname.utf8string_val = (char *)name;
	return 0;
}

int n4_op_open_confirm(struct n4_compound *b, const stateid4 *sid, uint32_t seqid)
{
	nfs_argop4 *o = op_add(b, OP_OPEN_CONFIRM);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opopen_confirm.open_stateid = *sid;
	o->nfs_argop4_u.opopen_confirm.seqid = seqid;
	return 0;
}

int n4_op_close(struct n4_compound *b, const stateid4 *sid, uint32_t seqid)
{
	nfs_argop4 *o = op_add(b, OP_CLOSE);

	if (o == NULL)
		return -ENOSPC;
	o->nfs_argop4_u.opclose.open_stateid = *sid;
	o->nfs_argop4_u.opclose.seqid = seqid;
	return 0;
}

/* OPEN by (current directory, name) for writing, owned by rq's open-owner
 * with seqid rq->seqid: created as rq->how says (CREATE), or not (the
 * stateid fallback). Share deny none: v3 has no share reservations. */
static int op_open(struct n4_compound *b, const struct n4_req *rq, int create, const char *name)
{
	nfs_argop4 *o = op_add(b, OP_OPEN);
	OPEN4args *a;

	if (o == NULL)
		return -ENOSPC;
	a = &o->nfs_argop4_u.opopen;
	a->seqid = rq->seqid;
	a->share_access = OPEN4_SHARE_ACCESS_WRITE;
	a->share_deny = OPEN4_SHARE_DENY_NONE;
	a->owner.clientid = rq->clientid;
	a->owner.owner.owner_len = (u_int)strlen(rq->owner);
	a->owner.owner.owner_val = (char *)rq->owner;
	if (create) {
		a->openhow.opentype = OPEN4_CREATE;
		switch (rq->how) {
		case EXCLUSIVE:
			a->openhow.openflag4_u.how.mode = EXCLUSIVE4;
			memcpy(a->openhow.openflag4_u.how.createhow4_u.createverf, rq->verf,
			       NFS4_VERIFIER_SIZE);
			break;
		case GUARDED:
			a->openhow.openflag4_u.how.mode = GUARDED4;
			fattr_set(&a->openhow.openflag4_u.how.createhow4_u.createattrs, rq->amask,
			          rq->abuf, rq->alen);
			break;
		default:
			a->openhow.openflag4_u.how.mode = UNCHECKED4;
			fattr_set(&a->openhow.openflag4_u.how.createhow4_u.createattrs, rq->amask,
			          rq->abuf, rq->alen);
			break;
		}
	} else {
		a->openhow.opentype = OPEN4_NOCREATE;
	}
	a->claim.claim = CLAIM_NULL;
	a->claim.open_claim4_u.file.utf8string_len = (u_int)strlen(name);
	a->claim.open_claim4_u.file.utf8string_val = (char *)name;
	return 0;
}

/* CREATE (the v4 operation) of a directory, symlink or special file */
static int op_create(struct n4_compound *b, const struct n4_req *rq)
{
	nfs_argop4 *o = op_add(b, OP_CREATE);
	CREATE4args *a;

	if (o == NULL)
		return -ENOSPC;
	a = &o->nfs_argop4_u.opcreate;
	switch (rq->proc) {
	case NFS3_MKDIR:
		a->objtype.type = NF4DIR;
		break;
	case NFS3_SYMLINK:
		a->objtype.type = NF4LNK;
		a->objtype.createtype4_u.linkdata.utf8string_len = rq->datalen;
		a->objtype.createtype4_u.linkdata.utf8string_val = rq->data;
		break;
	default: /* MKNOD */
		switch (rq->how) {
		case NF3CHR:
			a->objtype.type = NF4CHR;
			a->objtype.createtype4_u.devdata = rq->spec;
			break;
		case NF3BLK:
			a->objtype.type = NF4BLK;
			a->objtype.createtype4_u.devdata = rq->spec;
			break;
		case NF3SOCK:
			a->objtype.type = NF4SOCK;
			break;
		default:
			a->objtype.type = NF4FIFO;
			break;
		}
	}
	a->objname.utf8string_len = (u_int)strlen(rq->name);
	a->objname.utf8string_val = (char *)rq->name;
	fattr_set(&a->createattrs, rq->amask, rq->abuf, rq->alen);
	return 0;
}

static int fh_in(struct n4_fh *dst, const nfs_fh3 *src)
{
	if (src->data.data_len == 0 || src->data.data_len > N4_FHSIZE)
		return -EINVAL;
	dst->len = src->data.data_len;
	memcpy(dst->data, src->data.data_val, dst->len);
	return 0;
}

static int name_in(char *dst, const char *src)
{
	size_t nl = src ? strlen(src) : 0;

	if (nl >= 256)
		return -ENAMETOOLONG;
	memcpy(dst, src ? src : "", nl + 1);
	return 0;
}

static int dirop_in(struct n4_fh *fh, char *name, const diropargs3 *d)
{
	int rc = name_in(name, d->name);

	return rc ? rc : fh_in(fh, &d->dir);
}

static int sattr_in(struct n4_req *rq, const sattr3 *sa)
{
	rq->has_size = sa->size.set_it != 0;
	return n4_sattr3_encode(sa, rq->amask, rq->abuf, sizeof(rq->abuf), &rq->alen) ? -EINVAL : 0;
}

static int data_in(struct n4_req *rq, const char *p, size_t len)
{
	if (len > UINT32_MAX - 1)
		return -EINVAL;
	rq->data = malloc(len + 1);
	if (rq->data == NULL)
		return -ENOMEM;
	memcpy(rq->data, p, len);
	rq->data[len] = 0;
	rq->datalen = (uint32_t)len;
	return 0;
}

/* The attributes VERIFY / NVERIFY compare with: type = directory
 * (REMOVE, RMDIR), or time_metadata = v3's guard ctime (SETATTR). */
static void verify_type_dir(struct n4_req *rq)
{
	struct xw w = {rq->vbuf, 0, sizeof(rq->vbuf)};

	rq->vmask[0] = 1u << FATTR4_TYPE;
	rq->vmask[1] = 0;
	xw32(&w, NF4DIR);
	rq->vlen = w.n;
}

static void verify_ctime(struct n4_req *rq, const nfstime3 *t)
{
	struct xw w = {rq->vbuf, 0, sizeof(rq->vbuf)};

	rq->vmask[0] = 0;
	rq->vmask[1] = 1u << (FATTR4_TIME_METADATA - 32);
	xw64(&w, t->seconds);
	xw32(&w, t->nseconds);
	rq->vlen = w.n;
}

void n4_req_clear(struct n4_req *rq)
{
	free(rq->data);
	rq->data = NULL;
	rq->datalen = 0;
}

int n4_req_from_v3(struct n4_req *rq, uint32_t proc, const void *args3)
{
	int rc;

	memset(rq, 0, sizeof(*rq));
	rq->proc = proc;
	switch (proc) {
	case NFS3_GETATTR:
		return fh_in(&rq->fh, &((const GETATTR3args *)args3)->object);
	case NFS3_LOOKUP: {
		const LOOKUP3args *a = args3;
		size_t nl = a->what.name ? strlen(a->what.name) : 0;
		if (nl >= sizeof(rq->name))
			return -ENAMETOOLONG;
		memcpy(rq->name, a->what.name ? a->what.name : "", nl + 1);
		return fh_in(&rq->fh, &a->what.dir);
	}
	case NFS3_ACCESS:
		rq->access = ((const ACCESS3args *)args3)->access;
		return fh_in(&rq->fh, &((const ACCESS3args *)args3)->object);
	case NFS3_READ:
		rq->offset = ((const READ3args *)args3)->offset;
		rq->count = ((const READ3args *)args3)->count;
		return fh_in(&rq->fh, &((const READ3args *)args3)->file);
	case NFS3_READLINK:
		return fh_in(&rq->fh, &((const READLINK3args *)args3)->symlink);
	case NFS3_READDIR: {
		const READDIR3args *a = args3;
		rq->cookie = a->cookie;
		memcpy(rq->cookieverf, a->cookieverf, sizeof(rq->cookieverf));
		rq->dircount = a->count;
		rq->count = a->count;
		rq->rdmax = n4_readdir_max(a->count, N4_RD_SCALE);
		return fh_in(&rq->fh, &a->dir);
	}
	case NFS3_READDIRPLUS: {
		const READDIRPLUS3args *a = args3;
		rq->cookie = a->cookie;
		memcpy(rq->cookieverf, a->cookieverf, sizeof(rq->cookieverf));
		rq->dircount = a->dircount;
		rq->count = a->maxcount;
		rq->rdmax = n4_readdir_max(a->maxcount, N4_RD_SCALE);
		rc = fh_in(&rq->fh, &a->dir);
		return rc;
	}
	case NFS3_WRITE: {
		const WRITE3args *a = args3;
		rq->offset = a->offset;
		rq->stable = (uint32_t)a->stable;
		rc = fh_in(&rq->fh, &a->file);
		if (rc == 0)
			rc = data_in(rq, a->data.data_val,
			             a->data.data_len < a->count ? a->data.data_len : a->count);
		break;
	}
	case NFS3_COMMIT:
		rq->offset = ((const COMMIT3args *)args3)->offset;
		rq->count = ((const COMMIT3args *)args3)->count;
		return fh_in(&rq->fh, &((const COMMIT3args *)args3)->file);
	case NFS3_SETATTR: {
		const SETATTR3args *a = args3;
		rc = sattr_in(rq, &a->new_attributes);
		if (rc == 0 && a->guard.check) {
			rq->guard = 1;
			verify_ctime(rq, &a->guard.sattrguard3_u.obj_ctime);
		}
		return rc ? rc : fh_in(&rq->fh, &a->object);
	}
	case NFS3_CREATE: {
		const CREATE3args *a = args3;
		rq->how = (uint32_t)a->how.mode;
		if (a->how.mode == EXCLUSIVE)
			memcpy(rq->verf, a->how.createhow3_u.verf, NFS4_VERIFIER_SIZE);
		else if ((rc = sattr_in(rq, &a->how.createhow3_u.obj_attributes)) != 0)
			return rc;
		return dirop_in(&rq->fh, rq->name, &a->where);
	}
	case NFS3_MKDIR: {
		const MKDIR3args *a = args3;
		rc = sattr_in(rq, &a->attributes);
		return rc ? rc : dirop_in(&rq->fh, rq->name, &a->where);
	}
	case NFS3_SYMLINK: {
		const SYMLINK3args *a = args3;
		const char *t = a->symlink.symlink_data ? a->symlink.symlink_data : "";
		rc = sattr_in(rq, &a->symlink.symlink_attributes);
		if (rc == 0)
			rc = dirop_in(&rq->fh, rq->name, &a->where);
		if (rc == 0)
			rc = data_in(rq, t, strlen(t));
		break;
	}
	case NFS3_MKNOD: {
		const MKNOD3args *a = args3;
		const sattr3 *sa;
		rq->how = (uint32_t)a->what.type;
		switch (a->what.type) {
		case NF3CHR:
		case NF3BLK:
			sa = &a->what.mknoddata3_u.chr_device.dev_attributes;
			rq->spec.specdata1 = a->what.mknoddata3_u.chr_device.spec.specdata1;
			rq->spec.specdata2 = a->what.mknoddata3_u.chr_device.spec.specdata2;
			break;
		case NF3SOCK:
		case NF3FIFO:
			sa = &a->what.mknoddata3_u.pipe_attributes;
			break;
		default:
			return -EINVAL; /* v3 says BADTYPE: the caller's to answer */
		}
		rc = sattr_in(rq, sa);
		return rc ? rc : dirop_in(&rq->fh, rq->name, &a->where);
	}
	case NFS3_REMOVE:
		verify_type_dir(rq);
		return dirop_in(&rq->fh, rq->name, &((const REMOVE3args *)args3)->object);
	case NFS3_RMDIR:
		verify_type_dir(rq);
		return dirop_in(&rq->fh, rq->name, &((const RMDIR3args *)args3)->object);
	case NFS3_RENAME: {
		const RENAME3args *a = args3;
		rc = dirop_in(&rq->fh, rq->name, &a->from);
		return rc ? rc : dirop_in(&rq->fh2, rq->name2, &a->to);
	}
	case NFS3_LINK: {
		const LINK3args *a = args3;
		rc = fh_in(&rq->fh, &a->file);
		return rc ? rc : dirop_in(&rq->fh2, rq->name2, &a->link);
	}
	case NFS3_FSSTAT:
		return fh_in(&rq->fh, &((const FSSTAT3args *)args3)->fsroot);
	case NFS3_FSINFO:
		return fh_in(&rq->fh, &((const FSINFO3args *)args3)->fsroot);
	case NFS3_PATHCONF:
		return fh_in(&rq->fh, &((const PATHCONF3args *)args3)->object);
	default:
		return -EOPNOTSUPP;
	}
	if (rc)
		n4_req_clear(rq);
	return rc;
}

uint32_t n4_readdir_max(uint32_t count, uint32_t scale16)
{
	uint64_t m = (uint64_t)count * scale16 / 16;

	return m > N4_RD_MAX ? N4_RD_MAX : (uint32_t)m;
}

/* v3 READDIR cookies 1 and 2 are ours: "." and "..", which v4 does not
 * list. RFC 7530 (section 16.24.4) reserves them: servers never issue
 * them. Both, and 0, start the v4 listing from its beginning. */
#define COOKIE_DOT    1
#define COOKIE_DOTDOT 2

int n4_build(struct n4_compound *b, const struct n4_req *rq)
{
	static const char zero_verf[NFS4_VERIFIER_SIZE];
	int rc = 0;

	n4_compound_init(b, "cachefsd");
	switch (rq->phase) {
	case N4_PH_OPEN:
		rc |= n4_op_putfh(b, &rq->odir);
		rc |= op_open(b, rq, 0, rq->oname);
		rc |= n4_op_getfh(b);
		return rc ? -ENOSPC : 0;
	case N4_PH_CONFIRM:
		rc |= n4_op_putfh(b, &rq->ofh);
		rc |= n4_op_open_confirm(b, &rq->sid, rq->seqid);
		return rc ? -ENOSPC : 0;
	case N4_PH_CLOSE:
		rc |= n4_op_putfh(b, &rq->ofh);
		rc |= n4_op_close(b, &rq->sid, rq->seqid);
		return rc ? -ENOSPC : 0;
	default:
		break;
	}
	rc |= n4_op_putfh(b, &rq->fh);
	switch (rq->proc) {
	case NFS3_GETATTR:
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_LOOKUP:
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		/* ".." of the export's root is the root, as v3 servers answer:
		 * LOOKUPP there would leave the export for the server's
		 * pseudo-filesystem */
		if (strcmp(rq->name, "..") == 0) {
			if (!rq->is_root)
				rc |= n4_op_lookupp(b);
		} else if (strcmp(rq->name, ".") != 0)
			rc |= n4_op_lookup(b, rq->name, (uint32_t)strlen(rq->name));
		rc |= n4_op_getfh(b);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_ACCESS:
		rc |= n4_op_access(b, rq->access);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_READ:
		rc |= n4_op_read(b, rq->bypass, rq->offset, rq->count);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_READLINK:
		rc |= n4_op_readlink(b);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_READDIR:
	case NFS3_READDIRPLUS: {
		int first = rq->cookie <= COOKIE_DOTDOT;
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		rc |=
		    n4_op_readdir(b, first ? 0 : rq->cookie, first ? zero_verf : rq->cookieverf,
		                  rq->dircount, rq->rdmax ? rq->rdmax : rq->count,
		                  rq->proc == NFS3_READDIR ? N4_ATTRS_FILEID : N4_ATTRS_DIRENT, 2);
		/* ".." comes next: its fileid, and for READDIRPLUS its handle
		 * and attributes as v3 servers give them (after READDIR, whose
		 * answer stands if LOOKUPP fails) */
		if (rq->cookie < COOKIE_DOTDOT && !rq->is_root) {
			rc |= n4_op_lookupp(b);
			if (rq->proc == NFS3_READDIRPLUS) {
				rc |= n4_op_getfh(b);
				rc |= n4_op_getattr(b, N4_ATTRS, 2);
			} else {
				rc |= n4_op_getattr(b, N4_ATTRS_FILEID, 2);
			}
		}
		break;
	}
	/* the writes: the attributes v3's wcc data needs before (N4_ATTRS_WCC)
	 * and after (N4_ATTRS) the change, in the same COMPOUND */
	case NFS3_WRITE:
		rc |= n4_op_getattr(b, N4_ATTRS_WCC, 2);
		rc |= n4_op_write(b, &rq->sid, rq->offset, rq->stable, rq->data, rq->datalen);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_COMMIT:
		rc |= n4_op_getattr(b, N4_ATTRS_WCC, 2);
		rc |= n4_op_commit(b, rq->offset, rq->count);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_SETATTR:
		rc |= n4_op_getattr(b, N4_ATTRS_WCC, 2);
		/* v3's guard: the ctime must still be the caller's */
		if (rq->guard)
			rc |= n4_op_verify(b, 0, rq->vmask, rq->vbuf, rq->vlen);
		rc |= n4_op_setattr(b, &rq->sid, rq->amask, rq->abuf, rq->alen);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_CREATE:
	case NFS3_MKDIR:
	case NFS3_SYMLINK:
	case NFS3_MKNOD:
		rc |= n4_op_getattr(b, N4_ATTRS_WCC, 2);
		if (rq->proc == NFS3_CREATE)
			rc |= op_open(b, rq, 1, rq->name);
		else
			rc |= op_create(b, rq);
		rc |= n4_op_getfh(b);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		rc |= n4_op_putfh(b, &rq->fh);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_REMOVE:
	case NFS3_RMDIR:
		/* v4 REMOVE takes files and directories alike: v3's REMOVE
		 * must not remove a directory, RMDIR nothing else */
		rc |= n4_op_getattr(b, N4_ATTRS_WCC, 2);
		rc |= n4_op_lookup(b, rq->name, (uint32_t)strlen(rq->name));
		rc |= n4_op_verify(b, rq->proc == NFS3_REMOVE, rq->vmask, rq->vbuf, rq->vlen);
		rc |= n4_op_putfh(b, &rq->fh);
		rc |= n4_op_remove(b, rq->name, (uint32_t)strlen(rq->name));
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_RENAME:
		rc |= n4_op_getattr(b, N4_ATTRS_WCC, 2);
		rc |= n4_op_savefh(b);
		rc |= n4_op_putfh(b, &rq->fh2);
		rc |= n4_op_getattr(b, N4_ATTRS_WCC, 2);
		rc |= n4_op_rename(b, rq->name, (uint32_t)strlen(rq->name), rq->name2,
		                   (uint32_t)strlen(rq->name2));
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		rc |= n4_op_restorefh(b);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_LINK:
		rc |= n4_op_savefh(b);
		rc |= n4_op_putfh(b, &rq->fh2);
		rc |= n4_op_getattr(b, N4_ATTRS_WCC, 2);
		rc |= n4_op_link(b, rq->name2, (uint32_t)strlen(rq->name2));
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		rc |= n4_op_restorefh(b);
		rc |= n4_op_getattr(b, N4_ATTRS, 2);
		break;
	case NFS3_FSSTAT:
	case NFS3_FSINFO:
	case NFS3_PATHCONF:
		rc |= n4_op_getattr(b, N4_ATTRS_FS, 2);
		break;
	default:
		return -EOPNOTSUPP;
	}
	return rc ? -ENOSPC : 0;
}

/* --- answers ----------------------------------------------------------------- */

const nfs_resop4 *n4_resop(const COMPOUND4res *res, u_int i, nfs_opnum4 op)
{
	if (i >= res->resarray.resarray_len || res->resarray.resarray_val[i].resop != op)
		return NULL;
	return &res->resarray.resarray_val[i];
}

/* Every XXX4res starts with its nfsstat4. */
static int rop_status(const nfs_resop4 *r)
{
	return r ? (int)r->nfs_resop4_u.opillegal.status : -1;
}

/* GETATTR at i, decoded into a when it succeeded: 1; 0 when absent or
 * failed; -EPROTO when malformed. */
static int attrs_at(const COMPOUND4res *res, u_int i, const char *domain, struct n4_attrs *a,
                    struct n4_out *out)
{
	const nfs_resop4 *r = n4_resop(res, i, OP_GETATTR);

	if (rop_status(r) != NFS4_OK)
		return 0;
	if (n4_fattr_decode(&r->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes, domain,
	                    a) != 0)
		return -EPROTO;
	out->nobody |= a->nobody;
	return 1;
}

static void post_op(post_op_attr *p, const struct n4_attrs *a, int have)
{
	p->attributes_follow = have > 0;
	if (have > 0)
		p->post_op_attr_u.attributes = a->f;
}

static void coh_obj(struct n4_coh *c, const struct n4_attrs *a, int have)
{
	if (have > 0 && n4_has(a, FATTR4_CHANGE)) {
		c->has_change = 1;
		c->change = a->change;
		c->size = a->f.size;
		c->obj_attrs = a->f;
	}
}

static void coh_dir(struct n4_coh *c, const struct n4_attrs *a, int have)
{
	if (have > 0 && n4_has(a, FATTR4_CHANGE)) {
		c->has_dir_change = 1;
		c->dir_change = a->change;
		c->dir_attrs = a->f;
	}
}

static uint32_t xdr_len(uint32_t n)
{
	return (n + 3) & ~3u;
}

/* Turns the READDIR at op 2 into READDIR3res / READDIRPLUS3res, with "."
 * and ".." in front on the first page, no bigger than rq->count bytes as
 * v3 encodes them. */
static int readdir_to_v3(const struct n4_req *rq, const COMPOUND4res *res, const char *domain,
                         struct n4_out *out)
{
	int plus = rq->proc == NFS3_READDIRPLUS;
	struct n4_attrs dir, pa;
	int hdir = attrs_at(res, 1, domain, &dir, out), hpa;
	const nfs_resop4 *pfh = plus ? n4_resop(res, 4, OP_GETFH) : NULL;
	const nfs_fh4 *dotdot_fh = NULL;
	const nfs_resop4 *r = n4_resop(res, 2, OP_READDIR);
	int st = r ? rop_status(r) : (int)res->status;
	post_op_attr *dattr = plus ? &out->u.readdirplus.READDIRPLUS3res_u.resok.dir_attributes
	                           : &out->u.readdir.READDIR3res_u.resok.dir_attributes;
	const READDIR4resok *ok;
	size_t n = 0, names = 0, esz = plus ? sizeof(entryplus3) : sizeof(entry3);
	uint32_t ent_n = 0, ent_bytes = 0; /* the filer's entries given, their v3 bytes */
	uint64_t dotdot_id;
	uint32_t used, cap = rq->count;
	int eof, truncated = 0;
	char *namebuf;
	entry4 e;

	if (hdir < 0)
		return -EPROTO;
	coh_dir(&out->coh, &dir, hdir);
	coh_obj(&out->coh, &dir, hdir);
	if (st != NFS4_OK) {
		/* resfail's post_op_attr sits where resok's does */
		if (plus) {
			out->u.readdirplus.status = (nfsstat3)n4_stat3(st);
			post_op(&out->u.readdirplus.READDIRPLUS3res_u.resfail.dir_attributes, &dir,
			        hdir);
		} else {
			out->u.readdir.status = (nfsstat3)n4_stat3(st);
			post_op(&out->u.readdir.READDIR3res_u.resfail.dir_attributes, &dir, hdir);
		}
		return 0;
	}
	ok = &r->nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
	/* ".." is the parent's fileid; at the root (or when LOOKUPP failed)
	 * the directory's own, as v3 servers give for an export's root */
	dotdot_id = hdir > 0 ? dir.f.fileid : 0;
	if (rop_status(pfh) == NFS4_OK)
		dotdot_fh = &pfh->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
	hpa = attrs_at(res, plus ? 5 : 4, domain, &pa, out);
	if (hpa < 0)
		return -EPROTO;
	if (hpa > 0 && n4_has(&pa, FATTR4_FILEID))
		dotdot_id = pa.f.fileid;
	else
		dotdot_fh = NULL; /* the handle goes with its attributes */

	for (const void *p = ok->reply.entries; p; p = e.nextentry) {
		memcpy(&e, p, sizeof(e)); /* libnfs: 4-byte aligned entries */
		n++;
		names += e.name.utf8string_len + 1;
	}
	n += 2;
	names += 3 + 2;
	out->ents = calloc(1, n * esz + names);
	if (out->ents == NULL)
		return -ENOMEM;
	namebuf = (char *)out->ents + n * esz;

	/* v3 sizes: status, dir attributes (4 + 84), verifier, list end, eof */
	used = 4 + 4 + 84 + 8 + 4 + 4;
	n = 0;
	eof = ok->reply.eof != 0;
#define ENT_SIZE(namelen, fhlen, hasattr)                                                          \
	(4 + 8 + 4 + xdr_len(namelen) + 8 +                                                        \
	 (plus ? 4 + ((hasattr) ? 84 : 0) + 4 + ((fhlen) ? 4 + xdr_len(fhlen) : 0) : 0))
	for (int dot = rq->cookie == 0 ? 0 : rq->cookie == COOKIE_DOT ? 1 : 2; dot < 2; dot++) {
		const char *nm = dot == 0 ? "." : "..";
		/* ".." at the export's root (no LOOKUPP sent) is the root */
		int parent = dot == 1 && dotdot_fh != NULL;
		int attrs = plus && (parent || ((dot == 0 || rq->is_root) && hdir > 0));
		const struct n4_attrs *aa = parent ? &pa : &dir;
		uint32_t fhlen = parent ? dotdot_fh->nfs_fh4_len : rq->fh.len;
		const char *fhval = parent ? dotdot_fh->nfs_fh4_val : (const char *)rq->fh.data;
		uint32_t sz = ENT_SIZE((uint32_t)strlen(nm), attrs ? fhlen : 0, attrs);
		if (used + sz > cap) {
			truncated = 1;
			break;
		}
		used += sz;
		strcpy(namebuf, nm);
		if (plus) {
			entryplus3 *x = (entryplus3 *)out->ents + n;
			x->fileid = dot == 0 ? (hdir > 0 ? dir.f.fileid : 0) : dotdot_id;
			x->name = namebuf;
			x->cookie = dot == 0 ? COOKIE_DOT : COOKIE_DOTDOT;
			if (attrs) {
				post_op(&x->name_attributes, aa, 1);
				x->name_handle.handle_follows = 1;
				x->name_handle.post_op_fh3_u.handle.data.data_len = fhlen;
				x->name_handle.post_op_fh3_u.handle.data.data_val = (char *)fhval;
			}
		} else {
			entry3 *x = (entry3 *)out->ents + n;
			x->fileid = dot == 0 ? (hdir > 0 ? dir.f.fileid : 0) : dotdot_id;
			x->name = namebuf;
			x->cookie = dot == 0 ? COOKIE_DOT : COOKIE_DOTDOT;
		}
		namebuf += strlen(nm) + 1;
		n++;
	}
	for (const void *p = truncated ? NULL : ok->reply.entries; p; p = e.nextentry) {
		struct n4_attrs a;
		int ha;
		uint32_t nl, sz;

		memcpy(&e, p, sizeof(e));
		nl = e.name.utf8string_len;
		if (nl == 0 || memchr(e.name.utf8string_val, 0, nl) || nl > 255)
			return -EPROTO;
		if (n4_fattr_decode(&e.attrs, domain, &a) != 0)
			return -EPROTO;
		out->nobody |= a.nobody;
		ha = a.rdattr_error == 0 && n4_has(&a, FATTR4_TYPE);
		sz = ENT_SIZE(nl, ha && a.fh ? a.fh_len : 0, ha);
		if (used + sz > cap) {
			truncated = 1;
			break;
		}
		used += sz;
		ent_n++;
		ent_bytes += sz;
		memcpy(namebuf, e.name.utf8string_val, nl);
		namebuf[nl] = 0;
		if (plus) {
			entryplus3 *x = (entryplus3 *)out->ents + n;
			x->fileid = a.f.fileid;
			x->name = namebuf;
			x->cookie = e.cookie;
			if (ha) {
				post_op(&x->name_attributes, &a, 1);
				if (a.fh && a.fh_len) {
					x->name_handle.handle_follows = 1;
					x->name_handle.post_op_fh3_u.handle.data.data_len =
					    a.fh_len;
					x->name_handle.post_op_fh3_u.handle.data.data_val =
					    (char *)a.fh;
				}
			}
		} else {
			entry3 *x = (entry3 *)out->ents + n;
			x->fileid = a.f.fileid;
			x->name = namebuf;
			x->cookie = e.cookie;
		}
		namebuf += nl + 1;
		n++;
	}
#undef ENT_SIZE
	if (n == 0 && truncated) {
		/* not even one entry fits the client's count */
		if (plus)
			out->u.readdirplus.status = NFS3ERR_TOOSMALL;
		else
			out->u.readdir.status = NFS3ERR_TOOSMALL;
		return 0;
	}
	/* the filer's page ended with room for another entry as big as
	 * these: its entries are bigger than the maxcount asked allowed for */
	out->rd_short = !truncated && !eof && ent_n > 0 && cap - used >= ent_bytes / ent_n;
	/* link the array */
	for (size_t i = 0; i + 1 < n; i++) {
		if (plus)
			((entryplus3 *)out->ents)[i].nextentry = (entryplus3 *)out->ents + i + 1;
		else
			((entry3 *)out->ents)[i].nextentry = (entry3 *)out->ents + i + 1;
	}
	post_op(dattr, &dir, hdir);
	if (plus) {
		READDIRPLUS3resok *v = &out->u.readdirplus.READDIRPLUS3res_u.resok;
		out->u.readdirplus.status = NFS3_OK;
		memcpy(v->cookieverf, ok->cookieverf, NFS3_COOKIEVERFSIZE);
		v->reply.entries = n ? (entryplus3 *)out->ents : NULL;
		v->reply.eof = eof && !truncated;
	} else {
		READDIR3resok *v = &out->u.readdir.READDIR3res_u.resok;
		out->u.readdir.status = NFS3_OK;
		memcpy(v->cookieverf, ok->cookieverf, NFS3_COOKIEVERFSIZE);
		v->reply.entries = n ? (entry3 *)out->ents : NULL;
		v->reply.eof = eof && !truncated;
	}
	return 0;
}

/* --- the writes' answers ----------------------------------------------------- */

/* wcc data from the GETATTRs around the change. The attributes before are
 * given when the GETATTR had size and both times and, for a namespace
 * change (cinfo: the server's change_info4), when the directory's change
 * it saw is the one the operation started from: else something else
 * changed the directory in between, and v3 says "no pre-op attributes"
 * rather than wrong ones (the client then drops what it cached). */
static void wcc_of(wcc_data *w, const struct n4_attrs *pre, int hpre, const struct n4_attrs *post,
                   int hpost, const change_info4 *cinfo)
{
	int before = hpre > 0 && n4_has(pre, FATTR4_SIZE) && n4_has(pre, FATTR4_TIME_MODIFY) &&
	             n4_has(pre, FATTR4_TIME_METADATA);

	if (before && cinfo && (!n4_has(pre, FATTR4_CHANGE) || cinfo->before != pre->change))
		before = 0;
	w->before.attributes_follow = before;
	if (before) {
		w->before.pre_op_attr_u.attributes.size = pre->f.size;
		w->before.pre_op_attr_u.attributes.mtime = pre->f.mtime;
		w->before.pre_op_attr_u.attributes.ctime = pre->f.ctime;
	}
	post_op(&w->after, post, hpost);
}

/* The status of the procedure: the main operation's when it succeeded
 * (a GETATTR failing after it does not undo it), else the COMPOUND's. */
static int main_status(const COMPOUND4res *res, u_int i, nfs_opnum4 op, const nfs_resop4 **r)
{
	*r = n4_resop(res, i, op);
	if (*r && rop_status(*r) == NFS4_OK)
		return NFS4_OK;
	return (int)res->status;
}

static void fh_out(struct n4_out *out, post_op_fh3 *pfh, const nfs_resop4 *gfh)
{
	const nfs_fh4 *h;

	if (rop_status(gfh) != NFS4_OK)
		return;
	h = &gfh->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
	if (h->nfs_fh4_len == 0 || h->nfs_fh4_len > N4_FHSIZE)
		return;
	out->objfh.len = h->nfs_fh4_len;
	memcpy(out->objfh.data, h->nfs_fh4_val, h->nfs_fh4_len);
	pfh->handle_follows = 1;
	pfh->post_op_fh3_u.handle.data.data_len = out->objfh.len;
	pfh->post_op_fh3_u.handle.data.data_val = (char *)out->objfh.data;
}

/* WRITE, COMMIT, SETATTR: PUTFH GETATTR(wcc) [VERIFY] OP GETATTR */
static int file_change_to_v3(const struct n4_req *rq, const COMPOUND4res *res, const char *domain,
                             struct n4_out *out)
{
	struct n4_attrs pre, post;
	u_int iop = rq->proc == NFS3_SETATTR && rq->guard ? 3 : 2;
	nfs_opnum4 op = rq->proc == NFS3_WRITE    ? OP_WRITE
	                : rq->proc == NFS3_COMMIT ? OP_COMMIT
	                                          : OP_SETATTR;
	const nfs_resop4 *r;
	int hpre = attrs_at(res, 1, domain, &pre, out);
	int hpost = attrs_at(res, iop + 1, domain, &post, out);
	int st = main_status(res, iop, op, &r), st3;
	wcc_data *w;

	if (hpre < 0 || hpost < 0)
		return -EPROTO;
	st3 = n4_stat3(st);
	/* the guard's VERIFY said the ctime is not the caller's */
	if (rq->proc == NFS3_SETATTR && rq->guard && st == NFS4ERR_NOT_SAME &&
	    n4_resop(res, 2, OP_VERIFY))
		st3 = NFS3ERR_NOT_SYNC;
	coh_obj(&out->coh, &post, hpost);
	switch (rq->proc) {
	case NFS3_WRITE:
		out->u.write.status = (nfsstat3)st3;
		w = st == NFS4_OK ? &out->u.write.WRITE3res_u.resok.file_wcc
		                  : &out->u.write.WRITE3res_u.resfail.file_wcc;
		if (st == NFS4_OK) {
			const WRITE4resok *ok = &r->nfs_resop4_u.opwrite.WRITE4res_u.resok4;
			out->u.write.WRITE3res_u.resok.count = ok->count;
			out->u.write.WRITE3res_u.resok.committed = (stable_how)ok->committed;
			memcpy(out->u.write.WRITE3res_u.resok.verf, ok->writeverf,
			       NFS3_WRITEVERFSIZE);
		}
		break;
	case NFS3_COMMIT:
		out->u.commit.status = (nfsstat3)st3;
		w = st == NFS4_OK ? &out->u.commit.COMMIT3res_u.resok.file_wcc
		                  : &out->u.commit.COMMIT3res_u.resfail.file_wcc;
		if (st == NFS4_OK)
			memcpy(out->u.commit.COMMIT3res_u.resok.verf,
			       r->nfs_resop4_u.opcommit.COMMIT4res_u.resok4.writeverf,
			       NFS3_WRITEVERFSIZE);
		break;
	default:
		out->u.setattr.status = (nfsstat3)st3;
		w = st == NFS4_OK ? &out->u.setattr.SETATTR3res_u.resok.obj_wcc
		                  : &out->u.setattr.SETATTR3res_u.resfail.obj_wcc;
		break;
	}
	wcc_of(w, &pre, hpre, &post, hpost, NULL);
	return 0;
}

/* CREATE, MKDIR, SYMLINK, MKNOD: PUTFH(dir) GETATTR(wcc) OPEN|CREATE GETFH
 * GETATTR PUTFH(dir) GETATTR */
static int create_to_v3(const struct n4_req *rq, const COMPOUND4res *res, const char *domain,
                        struct n4_out *out)
{
	struct n4_attrs pre, obj, post;
	int open = rq->proc == NFS3_CREATE;
	const nfs_resop4 *r;
	int st = main_status(res, 2, open ? OP_OPEN : OP_CREATE, &r);
	int hpre = attrs_at(res, 1, domain, &pre, out);
	int hobj = attrs_at(res, 4, domain, &obj, out);
	int hpost = attrs_at(res, 6, domain, &post, out);
	const change_info4 *ci = NULL;
	post_op_fh3 *pfh;
	post_op_attr *pa;
	wcc_data *w;
	int st3 = n4_stat3(st);

	if (hpre < 0 || hobj < 0 || hpost < 0)
		return -EPROTO;
	if (st == NFS4_OK) {
		if (open) {
			const OPEN4resok *ok = &r->nfs_resop4_u.opopen.OPEN4res_u.resok4;
			ci = &ok->cinfo;
			out->opened = 1;
			out->open_sid = ok->stateid;
			out->open_rflags = ok->rflags;
		} else {
			ci = &r->nfs_resop4_u.opcreate.CREATE4res_u.resok4.cinfo;
		}
	}
	coh_dir(&out->coh, &post, hpost);
	coh_obj(&out->coh, &obj, hobj);
	/* the v3 results of the four have the same shape */
	switch (rq->proc) {
	case NFS3_CREATE:
		out->u.create.status = (nfsstat3)st3;
		pfh = &out->u.create.CREATE3res_u.resok.obj;
		pa = &out->u.create.CREATE3res_u.resok.obj_attributes;
		w = st == NFS4_OK ? &out->u.create.CREATE3res_u.resok.dir_wcc
		                  : &out->u.create.CREATE3res_u.resfail.dir_wcc;
		break;
	case NFS3_MKDIR:
		out->u.mkdir.status = (nfsstat3)st3;
		pfh = &out->u.mkdir.MKDIR3res_u.resok.obj;
		pa = &out->u.mkdir.MKDIR3res_u.resok.obj_attributes;
		w = st == NFS4_OK ? &out->u.mkdir.MKDIR3res_u.resok.dir_wcc
		                  : &out->u.mkdir.MKDIR3res_u.resfail.dir_wcc;
		break;
	case NFS3_SYMLINK:
		out->u.symlink.status = (nfsstat3)st3;
		pfh = &out->u.symlink.SYMLINK3res_u.resok.obj;
		pa = &out->u.symlink.SYMLINK3res_u.resok.obj_attributes;
		w = st == NFS4_OK ? &out->u.symlink.SYMLINK3res_u.resok.dir_wcc
		                  : &out->u.symlink.SYMLINK3res_u.resfail.dir_wcc;
		break;
	default:
		out->u.mknod.status = (nfsstat3)st3;
		pfh = &out->u.mknod.MKNOD3res_u.resok.obj;
		pa = &out->u.mknod.MKNOD3res_u.resok.obj_attributes;
		w = st == NFS4_OK ? &out->u.mknod.MKNOD3res_u.resok.dir_wcc
		                  : &out->u.mknod.MKNOD3res_u.resfail.dir_wcc;
		break;
	}
	if (st == NFS4_OK) {
		fh_out(out, pfh, n4_resop(res, 3, OP_GETFH));
		post_op(pa, &obj, hobj);
	}
	wcc_of(w, &pre, hpre, &post, hpost, ci);
	return 0;
}

/* REMOVE, RMDIR: PUTFH(dir) GETATTR(wcc) LOOKUP VERIFY|NVERIFY(type dir)
 * PUTFH(dir) REMOVE GETATTR */
static int remove_to_v3(const struct n4_req *rq, const COMPOUND4res *res, const char *domain,
                        struct n4_out *out)
{
	struct n4_attrs pre, post;
	const nfs_resop4 *r;
	int st = main_status(res, 5, OP_REMOVE, &r), st3;
	int hpre = attrs_at(res, 1, domain, &pre, out);
	int hpost = attrs_at(res, 6, domain, &post, out);
	wcc_data *w;

	if (hpre < 0 || hpost < 0)
		return -EPROTO;
	st3 = n4_stat3(st);
	/* the type check: a directory for REMOVE, anything else for RMDIR */
	if (rq->proc == NFS3_REMOVE && st == NFS4ERR_SAME && n4_resop(res, 3, OP_NVERIFY))
		st3 = NFS3ERR_ISDIR;
	if (rq->proc == NFS3_RMDIR && st == NFS4ERR_NOT_SAME && n4_resop(res, 3, OP_VERIFY))
		st3 = NFS3ERR_NOTDIR;
	coh_dir(&out->coh, &post, hpost);
	if (rq->proc == NFS3_REMOVE) {
		out->u.remove.status = (nfsstat3)st3;
		w = st3 == NFS3_OK ? &out->u.remove.REMOVE3res_u.resok.dir_wcc
		                   : &out->u.remove.REMOVE3res_u.resfail.dir_wcc;
	} else {
		out->u.rmdir.status = (nfsstat3)st3;
		w = st3 == NFS3_OK ? &out->u.rmdir.RMDIR3res_u.resok.dir_wcc
		                   : &out->u.rmdir.RMDIR3res_u.resfail.dir_wcc;
	}
	wcc_of(w, &pre, hpre, &post, hpost,
	       st == NFS4_OK ? &r->nfs_resop4_u.opremove.REMOVE4res_u.resok4.cinfo : NULL);
	return 0;
}

/* RENAME: PUTFH(from) GETATTR(wcc) SAVEFH PUTFH(to) GETATTR(wcc) RENAME
 * GETATTR(to) RESTOREFH GETATTR(from) */
static int rename_to_v3(const COMPOUND4res *res, const char *domain, struct n4_out *out)
{
	struct n4_attrs fpre, tpre, tpost, fpost;
	const nfs_resop4 *r;
	int st = main_status(res, 5, OP_RENAME, &r);
	int hfpre = attrs_at(res, 1, domain, &fpre, out);
	int htpre = attrs_at(res, 4, domain, &tpre, out);
	int htpost = attrs_at(res, 6, domain, &tpost, out);
	int hfpost = attrs_at(res, 8, domain, &fpost, out);
	RENAME3res *v = &out->u.rename;
	const RENAME4resok *ok =
	    st == NFS4_OK ? &r->nfs_resop4_u.oprename.RENAME4res_u.resok4 : NULL;

	if (hfpre < 0 || htpre < 0 || htpost < 0 || hfpost < 0)
		return -EPROTO;
	v->status = (nfsstat3)n4_stat3(st);
	coh_dir(&out->coh, &tpost, htpost);
	/* resok and resfail have the same two wcc_data */
	wcc_of(&v->RENAME3res_u.resok.fromdir_wcc, &fpre, hfpre, &fpost, hfpost,
	       ok ? &ok->source_cinfo : NULL);
	wcc_of(&v->RENAME3res_u.resok.todir_wcc, &tpre, htpre, &tpost, htpost,
	       ok ? &ok->target_cinfo : NULL);
	return 0;
}

/* LINK: PUTFH(file) SAVEFH PUTFH(dir) GETATTR(wcc) LINK GETATTR(dir)
 * RESTOREFH GETATTR(file) */
static int link_to_v3(const COMPOUND4res *res, const char *domain, struct n4_out *out)
{
	struct n4_attrs pre, post, file;
	const nfs_resop4 *r;
	int st = main_status(res, 4, OP_LINK, &r);
	int hpre = attrs_at(res, 3, domain, &pre, out);
	int hpost = attrs_at(res, 5, domain, &post, out);
	int hfile = attrs_at(res, 7, domain, &file, out);
	LINK3res *v = &out->u.link;

	if (hpre < 0 || hpost < 0 || hfile < 0)
		return -EPROTO;
	v->status = (nfsstat3)n4_stat3(st);
	coh_dir(&out->coh, &post, hpost);
	coh_obj(&out->coh, &file, hfile);
	/* resok and resfail have the same shape */
	post_op(&v->LINK3res_u.resok.file_attributes, &file, hfile);
	wcc_of(&v->LINK3res_u.resok.linkdir_wcc, &pre, hpre, &post, hpost,
	       st == NFS4_OK ? &r->nfs_resop4_u.oplink.LINK4res_u.resok4.cinfo : NULL);
	return 0;
}

static uint32_t u32_of(uint64_t v, uint32_t dflt)
{
	return v == 0 ? dflt : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* FSSTAT, FSINFO, PATHCONF: PUTFH GETATTR(N4_ATTRS_FS) */
static int fs_to_v3(const struct n4_req *rq, const COMPOUND4res *res, const char *domain,
                    struct n4_out *out)
{
	struct n4_attrs a;
	int h = attrs_at(res, 1, domain, &a, out);
	int st = (int)res->status, st3 = n4_stat3(st);

	if (h < 0 || (st == NFS4_OK && h == 0))
		return -EPROTO;
	coh_obj(&out->coh, &a, h);
	switch (rq->proc) {
	case NFS3_FSSTAT: {
		FSSTAT3resok *v = &out->u.fsstat.FSSTAT3res_u.resok;
		out->u.fsstat.status = (nfsstat3)st3;
		/* resfail's post_op_attr sits where resok's does */
		post_op(&v->obj_attributes, &a, h);
		if (st != NFS4_OK)
			break;
		v->tbytes = a.space_total;
		v->fbytes = a.space_free;
		v->abytes = a.space_avail;
		v->tfiles = a.files_total;
		v->ffiles = a.files_free;
		v->afiles = a.files_avail;
		v->invarsec = 0; /* v4 has no such promise: ask again */
		break;
	}
	case NFS3_FSINFO: {
		FSINFO3resok *v = &out->u.fsinfo.FSINFO3res_u.resok;
		out->u.fsinfo.status = (nfsstat3)st3;
		post_op(&v->obj_attributes, &a, h);
		if (st != NFS4_OK)
			break;
		/* v4 has maxima only: the preferred sizes are the maxima */
		v->rtmax = v->rtpref = u32_of(a.maxread, 65536);
		v->wtmax = v->wtpref = u32_of(a.maxwrite, 65536);
		v->rtmult = v->wtmult = 4096;
		v->dtpref = v->rtmax < 65536 ? v->rtmax : 65536;
		v->maxfilesize = a.maxfilesize ? a.maxfilesize : INT64_MAX;
		v->time_delta = a.time_delta;
		v->properties =
		    (a.link_support ? FSF3_LINK : 0) | (a.symlink_support ? FSF3_SYMLINK : 0) |
		    (a.homogeneous ? FSF3_HOMOGENEOUS : 0) | (a.cansettime ? FSF3_CANSETTIME : 0);
		break;
	}
	default: {
		PATHCONF3resok *v = &out->u.pathconf.PATHCONF3res_u.resok;
		out->u.pathconf.status = (nfsstat3)st3;
		post_op(&v->obj_attributes, &a, h);
		if (st != NFS4_OK)
			break;
		v->linkmax = a.maxlink;
		v->name_max = a.maxname ? a.maxname : 255;
		v->no_trunc = a.no_trunc;
		v->chown_restricted = a.chown_restricted;
		v->case_insensitive = a.case_insensitive;
		v->case_preserving = a.case_preserving;
		break;
	}
	}
	return 0;
}

int n4_open_reply(const struct n4_req *rq, const COMPOUND4res *res, stateid4 *sid, uint32_t *rflags,
                  struct n4_fh *fh)
{
	const nfs_resop4 *r;

	if (res->status != NFS4_OK)
		return (int)res->status;
	switch (rq->phase) {
	case N4_PH_OPEN: {
		const nfs_resop4 *g = n4_resop(res, 2, OP_GETFH);
		const nfs_fh4 *h;
		r = n4_resop(res, 1, OP_OPEN);
		if (r == NULL || g == NULL)
			return -EPROTO;
		*sid = r->nfs_resop4_u.opopen.OPEN4res_u.resok4.stateid;
		*rflags = r->nfs_resop4_u.opopen.OPEN4res_u.resok4.rflags;
		h = &g->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
		if (h->nfs_fh4_len == 0 || h->nfs_fh4_len > N4_FHSIZE)
			return -EPROTO;
		fh->len = h->nfs_fh4_len;
		memcpy(fh->data, h->nfs_fh4_val, fh->len);
		return NFS4_OK;
	}
	case N4_PH_CONFIRM:
		r = n4_resop(res, 1, OP_OPEN_CONFIRM);
		if (r == NULL)
			return -EPROTO;
		*sid = r->nfs_resop4_u.opopen_confirm.OPEN_CONFIRM4res_u.resok4.open_stateid;
		return NFS4_OK;
	case N4_PH_CLOSE:
		return n4_resop(res, 1, OP_CLOSE) ? NFS4_OK : -EPROTO;
	default:
		return -EPROTO;
	}
}

int n4_reply_to_v3(const struct n4_req *rq, const COMPOUND4res *res, const char *domain,
                   struct n4_out *out)
{
	struct n4_attrs a, d;
	int st = (int)res->status, h, hd, rc = 0;
	const nfs_resop4 *r;

	memset(out, 0, sizeof(*out));
	switch (rq->proc) {
	case NFS3_GETATTR:
		h = attrs_at(res, 1, domain, &a, out);
		if (h < 0 || (st == NFS4_OK && h == 0))
			return -EPROTO;
		out->u.getattr.status = (nfsstat3)n4_stat3(st);
		if (h > 0)
			out->u.getattr.GETATTR3res_u.resok.obj_attributes = a.f;
		coh_obj(&out->coh, &a, h);
		break;
	case NFS3_LOOKUP: {
		/* "." and the root's "..": no LOOKUP(P) in the COMPOUND */
		int dot = strcmp(rq->name, ".") == 0 || (rq->is_root && !strcmp(rq->name, ".."));
		u_int ifh = dot ? 2 : 3, iat = ifh + 1;
		LOOKUP3res *v = &out->u.lookup;

		hd = attrs_at(res, 1, domain, &d, out);
		h = attrs_at(res, iat, domain, &a, out);
		r = n4_resop(res, ifh, OP_GETFH);
		if (hd < 0 || h < 0 || (st == NFS4_OK && (h == 0 || rop_status(r) != NFS4_OK)))
			return -EPROTO;
		v->status = (nfsstat3)n4_stat3(st);
		coh_dir(&out->coh, &d, hd);
		if (st != NFS4_OK) {
			post_op(&v->LOOKUP3res_u.resfail.dir_attributes, &d, hd);
			break;
		}
		v->LOOKUP3res_u.resok.object.data.data_len =
		    r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_len;
		v->LOOKUP3res_u.resok.object.data.data_val =
		    r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object.nfs_fh4_val;
		post_op(&v->LOOKUP3res_u.resok.obj_attributes, &a, h);
		post_op(&v->LOOKUP3res_u.resok.dir_attributes, &d, hd);
		coh_obj(&out->coh, &a, h);
		break;
	}
	case NFS3_ACCESS: {
		ACCESS3res *v = &out->u.access;

		r = n4_resop(res, 1, OP_ACCESS);
		h = attrs_at(res, 2, domain, &a, out);
		if (h < 0 || (st == NFS4_OK && rop_status(r) != NFS4_OK))
			return -EPROTO;
		v->status = (nfsstat3)n4_stat3(st);
		coh_obj(&out->coh, &a, h);
		if (st != NFS4_OK) {
			post_op(&v->ACCESS3res_u.resfail.obj_attributes, &a, h);
			break;
		}
		/* the v4 ACCESS bits are v3's (RFC 7530 section 16.1) */
		v->ACCESS3res_u.resok.access =
		    r->nfs_resop4_u.opaccess.ACCESS4res_u.resok4.access & rq->access;
		post_op(&v->ACCESS3res_u.resok.obj_attributes, &a, h);
		break;
	}
	case NFS3_READ: {
		READ3res *v = &out->u.read;
		const READ4resok *ok;

		r = n4_resop(res, 1, OP_READ);
		h = attrs_at(res, 2, domain, &a, out);
		if (h < 0 || (st == NFS4_OK && rop_status(r) != NFS4_OK))
			return -EPROTO;
		if (r && rop_status(r) == NFS4_OK)
			st = NFS4_OK; /* the READ stands if only GETATTR failed */
		v->status = (nfsstat3)n4_stat3(st);
		coh_obj(&out->coh, &a, h);
		if (st != NFS4_OK) {
			post_op(&v->READ3res_u.resfail.file_attributes, &a, h);
			break;
		}
		ok = &r->nfs_resop4_u.opread.READ4res_u.resok4;
		post_op(&v->READ3res_u.resok.file_attributes, &a, h);
		v->READ3res_u.resok.count = ok->data.data_len;
		v->READ3res_u.resok.eof = ok->eof;
		v->READ3res_u.resok.data.data_len = ok->data.data_len;
		v->READ3res_u.resok.data.data_val = ok->data.data_val;
		break;
	}
	case NFS3_READLINK: {
		READLINK3res *v = &out->u.readlink;
		const linktext4 *lt;

		r = n4_resop(res, 1, OP_READLINK);
		h = attrs_at(res, 2, domain, &a, out);
		if (h < 0 || (st == NFS4_OK && rop_status(r) != NFS4_OK))
			return -EPROTO;
		if (r && rop_status(r) == NFS4_OK)
			st = NFS4_OK;
		v->status = (nfsstat3)n4_stat3(st);
		coh_obj(&out->coh, &a, h);
		if (st != NFS4_OK) {
			post_op(&v->READLINK3res_u.resfail.symlink_attributes, &a, h);
			break;
		}
		lt = &r->nfs_resop4_u.opreadlink.READLINK4res_u.resok4.link;
		out->link = malloc(lt->utf8string_len + 1);
		if (out->link == NULL)
			return -ENOMEM;
		memcpy(out->link, lt->utf8string_val, lt->utf8string_len);
		out->link[lt->utf8string_len] = 0;
		post_op(&v->READLINK3res_u.resok.symlink_attributes, &a, h);
		v->READLINK3res_u.resok.data = out->link;
		break;
	}
	case NFS3_READDIR:
	case NFS3_READDIRPLUS:
		rc = readdir_to_v3(rq, res, domain, out);
		break;
	case NFS3_WRITE:
	case NFS3_COMMIT:
	case NFS3_SETATTR:
		rc = file_change_to_v3(rq, res, domain, out);
		break;
	case NFS3_CREATE:
	case NFS3_MKDIR:
	case NFS3_SYMLINK:
	case NFS3_MKNOD:
		rc = create_to_v3(rq, res, domain, out);
		break;
	case NFS3_REMOVE:
	case NFS3_RMDIR:
		rc = remove_to_v3(rq, res, domain, out);
		break;
	case NFS3_RENAME:
		rc = rename_to_v3(res, domain, out);
		break;
	case NFS3_LINK:
		rc = link_to_v3(res, domain, out);
		break;
	case NFS3_FSSTAT:
	case NFS3_FSINFO:
	case NFS3_PATHCONF:
		rc = fs_to_v3(rq, res, domain, out);
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (rc)
		n4_out_free(out);
	return rc;
}

void n4_out_free(struct n4_out *out)
{
	free(out->ents);
	free(out->link);
	out->ents = NULL;
	out->link = NULL;
}
