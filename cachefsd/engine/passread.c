/* A READ forwarded to an upstream whose READ limit is below what it asks.
 *
 * Clients are offered READs of a whole chunk (engine_clamp_fsinfo()): a
 * cached chunk is then one client call, not rtmax-sized pieces of it, which
 * is most of the cost of a warm read from a server with a small rtmax. A
 * READ the cache does not answer (a file being written, fills stopped, no
 * evidence yet) still goes to the server as it was, split into READs of at
 * most its rtmax sent together. The client is answered with the longest
 * prefix the pieces make: up to the first piece that is short, at the end
 * of the file, failed, or whose attributes say the file changed between
 * the pieces (size, mtime, ctime). A short answer is legal (RFC 1813 READ):
 * the client asks for the rest. A failed first piece is the server's own
 * answer to the client. Every READ the engine forwards comes through
 * engine_forward_read(), which splits it or cuts it to one READ of the
 * upstream's rtmax and hands it to engine_forward() (forward.c). */
#include "engine_int.h"
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PASS_MAGIC      0x50415331u /* "PAS1" */
#define PASS_MAX_PIECES 32	    /* beyond: the READ is cut (a short answer) */

struct pass_piece {
	struct passread *p;
	READ3args args; /* lives until the callback (a call may be re-sent) */
	int back;
	int status;	 /* the call's: 0 or -errno */
	nfsstat3 nfs;	 /* the server's */
	uint32_t got;
	int eof;
	post_op_attr pa; /* of the answer, success or failure */
};

struct passread {
	uint32_t magic;
	struct engine *e;
	struct cfs_req *req;
	uint8_t *buf;
	uint32_t n, back;
	struct pass_piece pc[PASS_MAX_PIECES];
};

static int same_file(const post_op_attr *a, const post_op_attr *b)
{
	const fattr3 *x = &a->post_op_attr_u.attributes, *y = &b->post_op_attr_u.attributes;

	if (!a->attributes_follow || !b->attributes_follow)
		return 0; /* nothing to tell a change by */
	return x->size == y->size && x->mtime.seconds == y->mtime.seconds &&
	       x->mtime.nseconds == y->mtime.nseconds && x->ctime.seconds == y->ctime.seconds &&
	       x->ctime.nseconds == y->ctime.nseconds;
}

static void pass_finish(struct passread *p)
{
	struct engine *e = p->e;
	struct cfs_req *req = p->req;
	const struct pass_piece *first = &p->pc[0], *last = first;
	READ3res res;
	uint32_t total;

	memset(&res, 0, sizeof(res));
	if (first->status != 0) {
		engine_forward_reply(e, req, first->status, NULL);
		goto out;
	}
	res.status = first->nfs;
	if (first->nfs != NFS3_OK) {
		res.READ3res_u.resfail.file_attributes = first->pa;
		engine_forward_reply(e, req, 0, &res);
		goto out;
	}
	total = first->got;
	for (uint32_t i = 1; i < p->n; i++) {
		const struct pass_piece *pc = &p->pc[i];

		if (last->eof || last->got < last->args.count || pc->status != 0 ||
		    pc->nfs != NFS3_OK || !same_file(&first->pa, &pc->pa))
			break;
		total += pc->got;
		last = pc;
	}
	res.READ3res_u.resok.file_attributes = last->pa;
	res.READ3res_u.resok.count = total;
	res.READ3res_u.resok.eof = last->eof;
	res.READ3res_u.resok.data.data_len = total;
	res.READ3res_u.resok.data.data_val = (char *)p->buf;
	engine_forward_reply(e, req, 0, &res);
out:
	p->magic = 0;
	free(p->buf);
	free(p);
}

static void piece_done(int status, void *res, void *priv)
{
	struct pass_piece *pc = priv;
	struct passread *p = pc->p;
	READ3res *r = res;

	assert(p->magic == PASS_MAGIC && !pc->back);
	pc->back = 1;
	pc->status = status;
	if (status == 0) {
		pc->nfs = r->status;
		if (r->status == NFS3_OK) {
			const READ3resok *ok = &r->READ3res_u.resok;
			uint32_t got = ok->data.data_len;

			if (got > pc->args.count) { /* more than asked: not usable */
				pc->status = -EPROTO;
			} else {
				memcpy(p->buf + (pc->args.offset - p->pc[0].args.offset),
				       ok->data.data_val, got);
				pc->got = got;
				pc->eof = ok->eof;
				pc->pa = ok->file_attributes;
			}
		} else {
			pc->pa = r->READ3res_u.resfail.file_attributes;
		}
	}
	if (++p->back == p->n)
		pass_finish(p);
}

static int req_alive(void *priv)
{
	struct pass_piece *pc = priv;

	return proto_req_alive(pc->p->req);
}

static int forward_split(struct engine *e, struct cfs_req *req, uint32_t piece)
{
	READ3args *a = &req->args.read;
	struct passread *p;
	uint32_t count = a->count;

	if (piece == 0 || count <= piece)
		return -EAGAIN; /* one READ does */
	if (count > PASS_MAX_PIECES * piece)
		count = PASS_MAX_PIECES * piece;
	p = calloc(1, sizeof(*p));
	if (p == NULL || (p->buf = malloc(count)) == NULL) {
		free(p);
		return -ENOMEM;
	}
	p->magic = PASS_MAGIC;
	p->e = e;
	p->req = req;
	p->n = (count + piece - 1) / piece;
	for (uint32_t i = 0; i < p->n; i++) {
		struct pass_piece *pc = &p->pc[i];

		pc->p = p;
		pc->args.file = a->file;
		pc->args.offset = a->offset + (uint64_t)i * piece;
		pc->args.count = i + 1 < p->n ? piece : count - i * piece;
	}
	e->ctr.read_splits++;
	for (uint32_t i = 0; i < p->n; i++) {
		struct pass_piece *pc = &p->pc[i];
		int rc = engine_up_call_for(e, NFS3_READ, &pc->args, &req->cred, piece_done,
					    req_alive, pc);

		if (rc != 0) {
			/* not sent: counts as back, failed (a first piece not
			 * sent is the client's answer) */
			pc->back = 1;
			pc->status = rc;
			if (++p->back == p->n) {
				pass_finish(p);
				return 0;
			}
		}
	}
	return 0;
}

void engine_forward_read(struct engine *e, struct cfs_req *req)
{
	/* clients may ask more than the upstream's rtmax */
	uint32_t rtmax = engine_up_info(e)->fsinfo.rtmax;

	if (forward_split(e, req, rtmax) == 0)
		return;
	if (rtmax && req->args.read.count > rtmax)
		req->args.read.count = rtmax; /* a short answer, legal */
	engine_forward(e, req);
}
