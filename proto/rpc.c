/* NFSv3 and MOUNT (v3, v1) dispatch: call header checks, argument decoding into
 * requests, and reply encoding.
 *
 * What each procedure is (its name, argument walker, decoder, encoder,
 * reply size, whether the duplicate-request cache keeps it) is its row in
 * the procedure table (procs.c). Arguments are first walked by the row's
 * walker (libnfs 4.0's decoder trusts lengths), then copied into the request and decoded from that copy with
 * libnfs's own decoder into a zeroed struct: the request owns everything it
 * points to and outlives the record it came from. */
#include "procs.h"
#include "proto.h"
#include "proto_int.h"

#include <errno.h>
#include "loop.h"
#include <stdlib.h>
#include <string.h>

const char *proto_proc_name(uint32_t prog, uint32_t proc)
{
	const struct proc_row *d = proc_row(prog, proc);

	return d ? d->name : "?";
}

int cfs_cred_equal(const struct cfs_cred *a, const struct cfs_cred *b)
{
	if (a->flavor != b->flavor || a->uid != b->uid || a->gid != b->gid ||
	    a->ngids != b->ngids)
		return 0;
	return memcmp(a->gids, b->gids, a->ngids * sizeof(a->gids[0])) == 0;
}

struct cfs_req *proto_req_decode(uint32_t prog, uint32_t vers, uint32_t proc, const uint8_t *buf,
                                 size_t len)
{
	const struct proc_row *d = proc_row_vers(prog, vers, proc);
	struct cfs_req *req;

	if (d == NULL || proto_check_args(prog, vers, proc, buf, len) != 0) {
		errno = EBADMSG;
		return NULL;
	}
	req = calloc(1, sizeof(*req));
	if (req == NULL)
		return NULL;
	req->magic = CFS_REQ_MAGIC;
	req->prog = prog;
	req->vers = vers;
	req->proc = proc;
	req->arglen = (uint32_t)len;
	req->argbuf = malloc(len ? len : 1);
	if (req->argbuf == NULL) {
		free(req);
		return NULL;
	}
	memcpy(req->argbuf, buf, len);
	zdrmem_create(&req->zdr, req->argbuf, (uint32_t)len, ZDR_DECODE);
	if (!d->dec(&req->zdr, &req->args)) {
		proto_req_free(req);
		errno = EBADMSG;
		return NULL;
	}
	return req;
}

size_t proto_req_size(const struct cfs_req *req)
{
	size_t reply = 512;

	/* the reply is reserved with the call: replies to calls in flight
	 * are memory the connection will hold (256 READs of 1 MiB taken at
	 * once are 256 MiB of replies later) */
	const struct proc_row *r = proc_row(req->prog, req->proc);
	if (r && r->reply_want_args)
		reply += r->reply_want_args(&req->args);
	if (reply > CFS_MAX_IO + 512)
		reply = CFS_MAX_IO + 512;
	return sizeof(*req) + req->arglen + reply;
}

void proto_req_free(struct cfs_req *req)
{
	if (req == NULL)
		return;
	assert(req->magic == CFS_REQ_MAGIC);
	if (req->drc)
		drc_abort(req->drc); /* no result to keep: a retransmission runs again */
	if (req->conn)
		proto_conn_release(req->conn, req->held);
	zdr_destroy(&req->zdr);
	free(req->argbuf);
	req->magic = 0;
	free(req);
}

/* Room the encoder needs beyond libnfs's 4 KiB minimum buffer. */
static int reply_hint(const struct proc_row *d, const void *res)
{
	return (int)((d->reply_room ? d->reply_room(res) : 0) + 512);
}

/* Keeps the encoded result of req for retransmissions. */
static void drc_keep(struct cfs_req *req, const struct proc_row *d, void *res, int hint)
{
	size_t cap = (size_t)hint + 4096;
	char *buf = malloc(cap);
	ZDR z;

	if (buf == NULL)
		return; /* proto_req_free aborts the entry */
	zdrmem_create(&z, buf, (uint32_t)cap, ZDR_ENCODE);
	if (d->enc(&z, res)) {
		drc_done(req->drc, buf, zdr_getpos(&z), loop_clock_ms());
		req->drc = NULL;
	}
	zdr_destroy(&z);
	free(buf);
}

/* Replays a kept result: its bytes are the result part of the reply. */
struct raw_body {
	const void *p;
	uint32_t len;
};

static uint32_t enc_raw(ZDR *z, void *arg, ...)
{
	struct raw_body *b = arg;

	return zdr_opaque(z, (char *)b->p, b->len);
}

int proto_reply_raw(struct cfs_req *req, const void *body, uint32_t len)
{
	struct raw_body b = {body, len};
	int rc = 0;

	assert(req->magic == CFS_REQ_MAGIC);
	if (req->conn)
		rc = proto_conn_send(req->conn, req->xid, &b, (zdrproc_t)enc_raw, (int)len);
	proto_req_free(req);
	return rc;
}

const uint8_t *proto_req_args(const struct cfs_req *req, uint32_t *len)
{
	*len = req->arglen;
	return (const uint8_t *)req->argbuf;
}

int proto_reply(struct cfs_req *req, void *res)
{
	const struct proc_row *d = proc_row_vers(req->prog, req->vers, req->proc);
	int rc = 0;

	assert(req->magic == CFS_REQ_MAGIC);
	assert(d != NULL);
	if (req->drc)
		drc_keep(req, d, res, reply_hint(d, res));
	if (req->conn)
		rc = proto_conn_send(req->conn, req->xid, res, d->enc, reply_hint(d, res));
	proto_req_free(req);
	return rc;
}

int proto_reply_read(struct cfs_req *req, READ3res *res, proto_release_fn release, void *a,
                     void *b)
{
	const struct proc_row *d = proc_row_vers(req->prog, req->vers, req->proc);
	READ3res head;
	int rc = 0;

	assert(req->magic == CFS_REQ_MAGIC);
	assert(d != NULL && req->prog == NFS_PROGRAM && req->proc == NFS3_READ);
	assert(res->status == NFS3_OK);
	if (req->drc || req->conn == NULL || proto_conn_udp(req->conn)) {
		/* kept or sent as one datagram: copied now */
		rc = proto_reply(req, res);
		release(a, b);
		return rc;
	}
	/* the data's length is the last item of the encoding: sent as the
	 * tail, the bytes themselves never copied into the record */
	head = *res;
	head.READ3res_u.resok.data.data_len = 0;
	head.READ3res_u.resok.data.data_val = NULL;
	rc = proto_conn_send_borrowed(req->conn, req->xid, &head, d->enc,
	                              (const uint8_t *)res->READ3res_u.resok.data.data_val,
	                              res->READ3res_u.resok.data.data_len, release, a, b);
	proto_req_free(req);
	return rc;
}

/* An error reply through proto_conn_send(): the accepted-reply header
 * "MSG_ACCEPTED, null verifier, SUCCESS" (16 bytes) is already encoded
 * when it calls the result encoder (as libnfs's rpc_send_reply() does), and
 * the record is sized from the final position. This encoder steps
 * back over those 16 bytes and writes the reply body the error needs. */
struct err_reply {
	uint32_t reply_stat; /* MSG_ACCEPTED or MSG_DENIED */
	uint32_t stat;	     /* accept_stat, or reject_stat */
	uint32_t detail;     /* auth_stat for AUTH_ERROR */
	uint32_t lo, hi;     /* for PROG_MISMATCH / RPC_MISMATCH */
};

static uint32_t enc_err_reply(ZDR *z, void *arg, ...)
{
	struct err_reply *e = arg;
	uint32_t pos = zdr_getpos(z), zero = 0;

	if (pos < 16 + 12)
		return FALSE;
	zdr_setpos(z, pos - 16);
	if (!zdr_u_int(z, &e->reply_stat))
		return FALSE;
	if (e->reply_stat == MSG_ACCEPTED) {
		if (!zdr_u_int(z, &zero) || !zdr_u_int(z, &zero) || !zdr_u_int(z, &e->stat))
			return FALSE;
		if (e->stat == PROG_MISMATCH)
			return zdr_u_int(z, &e->lo) && zdr_u_int(z, &e->hi);
		return TRUE;
	}
	if (!zdr_u_int(z, &e->stat))
		return FALSE;
	if (e->stat == RPC_MISMATCH)
		return zdr_u_int(z, &e->lo) && zdr_u_int(z, &e->hi);
	return zdr_u_int(z, &e->detail);
}

static int send_err(struct cfs_req *req, struct err_reply *e)
{
	int rc = 0;

	if (req->conn)
		rc = proto_conn_send(req->conn, req->xid, e, (zdrproc_t)enc_err_reply, 0);
	proto_req_free(req);
	return rc;
}

int proto_reply_accept_error(struct cfs_req *req, uint32_t accept_stat)
{
	if (accept_stat == PROG_MISMATCH) {
		uint32_t lo = 0, hi = 0;

		proc_versions(req->prog, &lo, &hi);
		return proto_reply_prog_mismatch(req, lo, hi);
	}
	struct err_reply e = {MSG_ACCEPTED, accept_stat, 0, 0, 0};

	return send_err(req, &e);
}

int proto_reply_prog_mismatch(struct cfs_req *req, uint32_t low, uint32_t high)
{
	struct err_reply e = {MSG_ACCEPTED, PROG_MISMATCH, 0, low, high};

	return send_err(req, &e);
}

int proto_reply_auth_error(struct cfs_req *req, uint32_t why)
{
	struct err_reply e = {MSG_DENIED, AUTH_ERROR, why, 0, 0};

	return send_err(req, &e);
}

void proto_drop(struct cfs_req *req)
{
	proto_req_free(req);
}

/* Error replies for calls that never became requests. */
static int reject(struct proto_conn *c, uint32_t xid, struct err_reply e)
{
	if (e.reply_stat == MSG_DENIED && e.stat == AUTH_ERROR)
		proto_counters.auth_errors++;
	else if (e.stat == GARBAGE_ARGS)
		proto_counters.garbage_args++;
	else
		proto_counters.rpc_rejects++;
	return proto_conn_send(c, xid, &e, (zdrproc_t)enc_err_reply, 0);
}

int proto_handle_record(struct proto_conn *c, const uint8_t *rec, size_t len)
{
	struct proto_call_hdr h;
	uint32_t vers_lo, vers_hi;
	struct cfs_cred cred;
	struct cfs_req *req;

	if (proto_parse_call(rec, len, &h) != 0) {
		if (!h.have_xid || h.mtype != 0) {
			proto_counters.conns_dropped_bad++;
			return -EBADMSG; /* nothing we could answer: not a call */
		}
		if (h.bad_cred) {
			reject(c, h.xid, (struct err_reply){MSG_DENIED, AUTH_ERROR, AUTH_BADCRED, 0, 0});
			return 0;
		}
		reject(c, h.xid, (struct err_reply){MSG_ACCEPTED, GARBAGE_ARGS, 0, 0, 0});
		return 0;
	}
	if (h.rpcvers != RPC_MSG_VERSION)
		return reject(c, h.xid, (struct err_reply){MSG_DENIED, RPC_MISMATCH, 0, 2, 2});
	if (proc_versions(h.prog, &vers_lo, &vers_hi) != 0)
		return reject(c, h.xid, (struct err_reply){MSG_ACCEPTED, PROG_UNAVAIL, 0, 0, 0});
	/* a program not served over UDP is not there for a datagram */
	if (proto_conn_udp(c) && !proc_udp(h.prog))
		return reject(c, h.xid, (struct err_reply){MSG_ACCEPTED, PROG_UNAVAIL, 0, 0, 0});
	if (proc_prog(h.prog, h.vers) == NULL) /* the versions the table has for it */
		return reject(c, h.xid,
		              (struct err_reply){MSG_ACCEPTED, PROG_MISMATCH, 0, vers_lo, vers_hi});
	if (proc_row_vers(h.prog, h.vers, h.proc) == NULL)
		return reject(c, h.xid, (struct err_reply){MSG_ACCEPTED, PROC_UNAVAIL, 0, 0, 0});
	memset(&cred, 0, sizeof(cred));
	switch (h.cred_flavor) {
	case AUTH_NONE:
		cred.flavor = AUTH_NONE;
		cred.uid = cred.gid = 65534;
		break;
	case AUTH_UNIX:
		if (proto_parse_authsys(h.cred_body, h.cred_len, &cred) != 0)
			return reject(c, h.xid,
				      (struct err_reply){MSG_DENIED, AUTH_ERROR, AUTH_BADCRED, 0, 0});
		break;
	default:
		return reject(c, h.xid, (struct err_reply){MSG_DENIED, AUTH_ERROR, AUTH_TOOWEAK, 0, 0});
	}
	/* the proxy's own export options */
	if (c_cfg(c)->secure_ports && !proto_conn_privileged(c) &&
	    !(h.proc == 0 /* NULL of either program */)) {
		if (h.prog == MOUNT_PROGRAM && h.proc == MOUNT3_MNT) {
			mountres3 m;
			memset(&m, 0, sizeof(m));
			m.fhs_status = MNT3ERR_ACCES;
			proto_counters.mounts_insecure++;
			return proto_conn_send(c, h.xid, &m, (zdrproc_t)zdr_mountres3, 0);
		}
		if (h.prog == NFS_PROGRAM)
			return reject(c, h.xid,
				      (struct err_reply){MSG_DENIED, AUTH_ERROR, AUTH_TOOWEAK, 0, 0});
	}
	if (c_cfg(c)->root_squash && cred.uid == 0) {
		cred.uid = (uint32_t)c_cfg(c)->anon_uid;
		cred.gid = (uint32_t)c_cfg(c)->anon_gid;
		cred.ngids = 0;
	}
	req = proto_req_decode(h.prog, h.vers, h.proc, rec + h.args_off, len - h.args_off);
	if (req == NULL) {
		if (errno == ENOMEM)
			return reject(c, h.xid, (struct err_reply){MSG_ACCEPTED, SYSTEM_ERR, 0, 0, 0});
		return reject(c, h.xid, (struct err_reply){MSG_ACCEPTED, GARBAGE_ARGS, 0, 0, 0});
	}
	if (drc_wanted(h.prog, h.proc)) {
		struct drc_entry *de;
		switch (drc_begin(proto_conn_peer(c), h.xid, h.prog, h.proc, rec + h.args_off,
				  len - h.args_off, loop_clock_ms(), &de)) {
		case DRC_BUSY:
			proto_counters.drc_busy++;
			proto_req_free(req);
			return 0;
		case DRC_REPLAY: {
			struct raw_body b;
			b.p = drc_reply(de, &b.len);
			proto_counters.drc_replays++;
			proto_req_free(req);
			return proto_conn_send(c, h.xid, &b, (zdrproc_t)enc_raw, (int)b.len);
		}
		case DRC_NEW:
			req->drc = de;
			break;
		}
	}
	req->xid = h.xid;
	req->cred = cred;
	req->t_start_us = loop_clock_us();
	proto_counters.calls++;
	proto_conn_submit(c, req);
	return 0;
}
