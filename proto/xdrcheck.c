/* Bounds-checking walk over NFSv3 / MOUNT v3 call arguments.
 *
 * libnfs 4.0's XDR decoder trusts lengths: a string or opaque length with the
 * top bit set passes its bounds check (it is compared as a signed int) and a
 * declared maximum (NFS3_FHSIZE, MNTPATHLEN) is not enforced. Every call's
 * argument bytes are walked here first; only arguments that pass are handed
 * to the libnfs decoder, so a hostile length becomes GARBAGE_ARGS, never a
 * wild read. */
#include "proto.h"

#include <errno.h>
#include <string.h>

#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

struct xcur {
	const uint8_t *p;
	size_t len, pos;
	int bad;
};

static uint32_t x_u32(struct xcur *c)
{
	uint32_t v;

	if (c->bad || c->len - c->pos < 4) {
		c->bad = 1;
		return 0;
	}
	v = (uint32_t)c->p[c->pos] << 24 | (uint32_t)c->p[c->pos + 1] << 16 |
	    (uint32_t)c->p[c->pos + 2] << 8 | c->p[c->pos + 3];
	c->pos += 4;
	return v;
}

static void x_skip(struct xcur *c, size_t n)
{
	if (c->bad || c->len - c->pos < n) {
		c->bad = 1;
		return;
	}
	c->pos += n;
}

/* variable-length opaque or string: length, bytes, padding to 4 */
static void x_opaque(struct xcur *c, uint32_t max)
{
	uint32_t n = x_u32(c);

	if (n > max) {
		c->bad = 1;
		return;
	}
	x_skip(c, ((size_t)n + 3) & ~(size_t)3);
}

static uint32_t x_bool(struct xcur *c)
{
	uint32_t v = x_u32(c);

	if (v > 1)
		c->bad = 1;
	return v;
}

static uint32_t x_enum(struct xcur *c, uint32_t lo, uint32_t hi)
{
	uint32_t v = x_u32(c);

	if (v < lo || v > hi)
		c->bad = 1;
	return v;
}

static void x_fh(struct xcur *c)
{
	x_opaque(c, NFS3_FHSIZE);
}

static void x_name(struct xcur *c)
{
	x_opaque(c, CFS_MAX_NAME);
}

static void x_diropargs(struct xcur *c)
{
	x_fh(c);
	x_name(c);
}

static void x_settime(struct xcur *c)
{
	/* DONT_CHANGE, SET_TO_SERVER_TIME, SET_TO_CLIENT_TIME + nfstime3 */
	if (x_enum(c, 0, 2) == 2)
		x_skip(c, 8);
}

static void x_sattr3(struct xcur *c)
{
	for (int i = 0; i < 3; i++) /* mode, uid, gid */
		if (x_bool(c))
			x_skip(c, 4);
	if (x_bool(c)) /* size */
		x_skip(c, 8);
	x_settime(c); /* atime */
	x_settime(c); /* mtime */
}

static void x_createhow(struct xcur *c)
{
	switch (x_enum(c, UNCHECKED, EXCLUSIVE)) {
	case UNCHECKED:
	case GUARDED:
		x_sattr3(c);
		break;
	case EXCLUSIVE:
		x_skip(c, NFS3_CREATEVERFSIZE);
		break;
	}
}

static void x_mknoddata(struct xcur *c)
{
	switch (x_enum(c, NF3REG, NF3FIFO)) {
	case NF3CHR:
	case NF3BLK:
		x_sattr3(c);
		x_skip(c, 8); /* specdata3 */
		break;
	case NF3SOCK:
	case NF3FIFO:
		x_sattr3(c);
		break;
	default:
		break;
	}
}

static int check_nfs3(struct xcur *c, uint32_t proc)
{
	switch (proc) {
	case NFS3_NULL:
		break;
	case NFS3_GETATTR:
	case NFS3_READLINK:
	case NFS3_FSSTAT:
	case NFS3_FSINFO:
	case NFS3_PATHCONF:
		x_fh(c);
		break;
	case NFS3_SETATTR:
		x_fh(c);
		x_sattr3(c);
		if (x_bool(c)) /* guard ctime */
			x_skip(c, 8);
		break;
	case NFS3_LOOKUP:
	case NFS3_REMOVE:
	case NFS3_RMDIR:
		x_diropargs(c);
		break;
	case NFS3_ACCESS:
		x_fh(c);
		x_u32(c);
		break;
	case NFS3_READ:
	case NFS3_COMMIT:
		x_fh(c);
		x_skip(c, 8);
		x_u32(c);
		break;
	case NFS3_WRITE:
		x_fh(c);
		x_skip(c, 8);
		x_u32(c);
		x_enum(c, UNSTABLE, FILE_SYNC);
		x_opaque(c, CFS_MAX_IO);
		break;
	case NFS3_CREATE:
		x_diropargs(c);
		x_createhow(c);
		break;
	case NFS3_MKDIR:
		x_diropargs(c);
		x_sattr3(c);
		break;
	case NFS3_SYMLINK:
		x_diropargs(c);
		x_sattr3(c);
		x_opaque(c, CFS_MAX_PATH);
		break;
	case NFS3_MKNOD:
		x_diropargs(c);
		x_mknoddata(c);
		break;
	case NFS3_RENAME:
		x_diropargs(c);
		x_diropargs(c);
		break;
	case NFS3_LINK:
		x_fh(c);
		x_diropargs(c);
		break;
	case NFS3_READDIR:
		x_fh(c);
		x_skip(c, 8 + NFS3_COOKIEVERFSIZE + 4);
		break;
	case NFS3_READDIRPLUS:
		x_fh(c);
		x_skip(c, 8 + NFS3_COOKIEVERFSIZE + 4 + 4);
		break;
	default:
		return -ENOSYS;
	}
	return c->bad ? -EBADMSG : 0;
}

static int check_mount3(struct xcur *c, uint32_t proc)
{
	switch (proc) {
	case MOUNT3_NULL:
	case MOUNT3_DUMP:
	case MOUNT3_UMNTALL:
	case MOUNT3_EXPORT:
		break;
	case MOUNT3_MNT:
	case MOUNT3_UMNT:
		x_opaque(c, MNTPATHLEN);
		break;
	default:
		return -ENOSYS;
	}
	return c->bad ? -EBADMSG : 0;
}

int proto_check_args(uint32_t prog, uint32_t proc, const uint8_t *buf, size_t len)
{
	struct xcur c = {buf, len, 0, 0};

	if (prog == NFS_PROGRAM)
		return check_nfs3(&c, proc);
	if (prog == MOUNT_PROGRAM)
		return check_mount3(&c, proc);
	return -ENOSYS;
}

int proto_parse_authsys(const uint8_t *body, uint32_t len, struct cfs_cred *out)
{
	struct xcur c = {body, len, 0, 0};
	uint32_t namelen, ngids;

	if (len > CFS_MAX_AUTH_BYTES)
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	out->flavor = AUTH_UNIX;
	x_u32(&c); /* stamp */
	namelen = x_u32(&c);
	if (c.bad || namelen > CFS_MAX_MACHINE) {
		return -EBADMSG;
	}
	if (len - c.pos < namelen)
		return -EBADMSG;
	memcpy(out->machine, body + c.pos, namelen);
	out->machine[namelen] = 0;
	x_skip(&c, ((size_t)namelen + 3) & ~(size_t)3);
	out->uid = x_u32(&c);
	out->gid = x_u32(&c);
	ngids = x_u32(&c);
	if (c.bad || ngids > CFS_MAX_GIDS)
		return -EBADMSG;
	out->ngids = ngids;
	for (uint32_t i = 0; i < ngids; i++)
		out->gids[i] = x_u32(&c);
	if (c.bad || c.pos != len)
		return -EBADMSG;
	return 0;
}

int proto_parse_call(const uint8_t *rec, size_t len, struct proto_call_hdr *h)
{
	struct xcur c = {rec, len, 0, 0};

	memset(h, 0, sizeof(*h));
	h->xid = x_u32(&c);
	h->mtype = x_u32(&c);
	if (c.bad)
		return -EBADMSG;
	h->have_xid = 1;
	if (h->mtype != 0 /* CALL */)
		return -EBADMSG;
	h->rpcvers = x_u32(&c);
	h->prog = x_u32(&c);
	h->vers = x_u32(&c);
	h->proc = x_u32(&c);
	h->cred_flavor = x_u32(&c);
	h->cred_len = x_u32(&c);
	if (!c.bad && h->cred_len > CFS_MAX_AUTH_BYTES)
		h->bad_cred = 1;
	if (c.bad || h->bad_cred)
		return -EBADMSG;
	h->cred_body = rec + c.pos;
	x_skip(&c, ((size_t)h->cred_len + 3) & ~(size_t)3);
	h->verf_flavor = x_u32(&c);
	h->verf_len = x_u32(&c);
	if (c.bad || h->verf_len > CFS_MAX_AUTH_BYTES)
		return -EBADMSG;
	x_skip(&c, ((size_t)h->verf_len + 3) & ~(size_t)3);
	if (c.bad)
		return -EBADMSG;
	h->args_off = c.pos;
	return 0;
}

size_t proto_reply_estimate(const uint8_t *rec, size_t len)
{
	struct proto_call_hdr h;
	struct xcur c;
	uint32_t n = 0;

	if (proto_parse_call(rec, len, &h) != 0)
		return 512; /* an error reply */
	if (h.prog != NFS_PROGRAM)
		return h.prog == MOUNT_PROGRAM ? 4096 : 512;
	c = (struct xcur){rec + h.args_off, len - h.args_off, 0, 0};
	switch (h.proc) {
	case NFS3_READ: /* fh, offset, count */
		x_fh(&c);
		x_skip(&c, 8);
		n = x_u32(&c);
		break;
	case NFS3_READDIR: /* fh, cookie, verifier, count */
		x_fh(&c);
		x_skip(&c, 16);
		n = x_u32(&c);
		break;
	case NFS3_READDIRPLUS: /* fh, cookie, verifier, dircount, maxcount */
		x_fh(&c);
		x_skip(&c, 20);
		n = x_u32(&c);
		break;
	case NFS3_READLINK:
		n = 4096;
		break;
	default:
		n = 0;
		break;
	}
	if (c.bad || n > CFS_MAX_IO)
		n = CFS_MAX_IO; /* what the encoder may be asked for at most */
	return (size_t)n + 512;
}
