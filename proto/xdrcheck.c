/* Bounds-checking walk over RPC call headers and NFSv3 / MOUNT v3 call
 * arguments (each procedure's walker is in its row of procs.c).
 *
 * libnfs 4.0's XDR decoder trusts lengths: a string or opaque length with the
 * top bit set passes its bounds check (it is compared as a signed int) and a
 * declared maximum (NFS3_FHSIZE, MNTPATHLEN) is not enforced. Every call's
 * argument bytes are walked here first; only arguments that pass are handed
 * to the libnfs decoder, so a hostile length becomes GARBAGE_ARGS, never a
 * wild read. */
#include "procs.h"
#include "proto.h"
#include "xdrwalk.h"

#include <errno.h>
#include <string.h>

#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

int proto_check_args(uint32_t prog, uint32_t vers, uint32_t proc, const uint8_t *buf, size_t len)
{
	const struct proc_row *r = proc_row_vers(prog, vers, proc);
	struct xcur c = {buf, len, 0, 0};

	if (r == NULL)
		return -ENOSYS;
	r->check(&c);
	return c.bad ? -EBADMSG : 0;
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
	const struct prog_row *p;
	const struct proc_row *r;
	struct xcur c;
	uint32_t n;

	if (proto_parse_call(rec, len, &h) != 0)
		return 512; /* an error reply */
	p = proc_prog(h.prog, h.vers);
	if (p == NULL)
		return 512;
	r = proc_row_vers(h.prog, h.vers, h.proc);
	if (r == NULL || r->reply_want == NULL)
		return (size_t)p->reply_default + 512;
	c = (struct xcur){rec + h.args_off, len - h.args_off, 0, 0};
	n = r->reply_want(&c);
	if (c.bad || n > CFS_MAX_IO)
		n = CFS_MAX_IO; /* what the encoder may be asked for at most */
	return (size_t)n + 512;
}
