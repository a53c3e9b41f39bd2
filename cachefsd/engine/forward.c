/* Forwarding and answering: a call sent upstream unchanged, and every
 * answer the engine sends back to a client, counted on its way out.
 *
 * engine_forward() sends a call with the caller's credential and the
 * handle bytes unchanged; engine_forward_reply() takes the upstream's
 * answer through the reply pipeline (reply.c: what it says about handles,
 * what the metadata cache keeps) and back to the client with the saved
 * xid. A failure of the upstream is answered by engine_reply_failure(),
 * answers made without the upstream's by the engine's own parts are
 * counted by engine_count_reply(). Below the handlers (engine.c's
 * dispatch, read.c, mutate.c, passread.c, metaanswer.c), above the
 * pipeline. */
#include "engine_int.h"
#include "engine_procs.h"
#include "log.h"
#include "procs.h"
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Counts an NFS reply about to be sent for req: its status, latency and
 * outcome (enum engine_outcome; -1: counted elsewhere). */
static void count_reply(struct engine *e, const struct cfs_req *req, int failed, nfsstat3 status,
			int outcome)
{
	struct engine_counters *c = &e->ctr;
	uint64_t us;

	if (req->prog != NFS_PROGRAM || req->proc >= ENGINE_NPROCS)
		return;
	if (failed || status != NFS3_OK)
		c->nfs_errors[req->proc]++;
	us = loop_clock_us() - req->t_start_us;
	c->nfs_latency_us[req->proc] += us;
	c->nfs_latency_hist[req->proc][cfs_lat_bucket(us)]++;
	if (outcome >= 0)
		c->nfs_outcomes[req->proc][outcome]++;
}

/* Replies made by the engine's own parts without the upstream's answer to
 * this call: the metadata cache (meta.c), NULL, and READs from the data
 * cache, whose hit or miss read.c counts (read_hits, read_misses). */
void engine_count_reply(struct engine *e, const struct cfs_req *req, nfsstat3 status)
{
	count_reply(e, req, 0, status, req->proc == NFS3_READ ? -1 : ENGINE_HIT);
}

/* A forwarded call the cache might have answered (ttl mode) is a miss;
 * the others pass through. */
static int forwarded_outcome(const struct engine *e, uint32_t proc)
{
	const struct proc_row *r = proc_row(NFS_PROGRAM, proc);

	if (r && (r->flags & PROC_CACHED))
		return meta_enabled(e) ? ENGINE_MISS : ENGINE_PASSTHROUGH;
	return ENGINE_PASSTHROUGH;
}

void engine_reply_status(struct engine *e, struct cfs_req *req, nfsstat3 status)
{
	union nfs3_res res;

	memset(&res, 0, sizeof(res));
	res.status = status;
	engine_count_reply(e, req, status);
	engine_reply(e, req, &res);
}

void engine_reply_failure(struct engine *e, struct cfs_req *req, int status)
{
	if (status == -ECANCELED) {
		proto_drop(req);
		return;
	}
	if (status == -E2BIG && req->prog == NFS_PROGRAM && req->proc != NFS3_NULL) {
		/* the proxy's own limit: libnfs 4.0 encodes a call into 4 KiB
		 * (WRITE data aside), so names or paths of some KiB cannot be
		 * forwarded. A name too long for the server is NAMETOOLONG
		 * (RFC 1813), which every procedure with a name may answer. */
		union nfs3_res res;

		memset(&res, 0, sizeof(res));
		res.status = NFS3ERR_NAMETOOLONG;
		count_reply(e, req, 0, res.status, ENGINE_ERROR);
		engine_reply(e, req, &res);
		return;
	}
	e->ctr.upstream_failures++;
	count_reply(e, req, 1, NFS3ERR_IO, ENGINE_ERROR);
	switch (status) {
	case -ECONNRESET: /* the upstream closes the connection on this call */
	case -ETIMEDOUT:
		/* soft mode gave up */
		if (req->prog == NFS_PROGRAM && req->proc != NFS3_NULL) {
			union nfs3_res res;

			memset(&res, 0, sizeof(res));
			res.status = NFS3ERR_IO;
			engine_reply(e, req, &res);
		} else {
			proto_reply_accept_error(req, SYSTEM_ERR);
		}
		return;
	case UPSTREAM_E_DENIED:
		/* MSG_DENIED, reason unknown (libnfs 4.0 drops it): AUTH_TOOWEAK
		 * is what a server answers a flavour the export does not take,
		 * the one denial a forwarded AUTH_SYS call meets in practice
		 * (docs/design.md, "Errors from the upstream") */
		proto_reply_auth_error(req, AUTH_TOOWEAK);
		return;
	case UPSTREAM_E_PROG_MISMATCH:
		/* the server's low/high are lost; what the client talks to is
		 * the proxy: the versions its table has for the program */
		proto_reply_accept_error(req, PROG_MISMATCH);
		return;
	default:
		/* the accept_stat the server answered; SYSTEM_ERR for a
		 * failure that was not an answer (or not a decodable one) */
		proto_reply_accept_error(req, upstream_accept_stat(status) > 0
		                                  ? (uint32_t)upstream_accept_stat(status)
		                                  : SYSTEM_ERR);
		return;
	}
}

static void forward_done(int status, void *res, void *priv)
{
	struct cfs_req *req = priv;
	struct engine *e = req->engine;

	req->engine = NULL;
	engine_forward_reply(e, req, status, res);
}

/* Writers: a WRITE or size-changing SETATTR through the proxy, once the
 * server made it, drops the file's cached data and turns caching off for
 * it until write_quiesce seconds pass without another one. */
static void writer(struct engine *e, const nfs_fh3 *fh)
{
	struct cobj *o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);
	uint64_t now = loop_now(e->loop);

	if (o == NULL)
		return;
	if (o->nocache_until_ms <= now)
		e->ctr.writer_starts++;
	o->nocache_until_ms = now + (uint64_t)e->cfg->write_quiesce * 1000;
	engine_drop_data(e, o, "written through the proxy");
	cobj_put(e->objs, o);
}

/* The file a call whose success makes its writer: a WRITE, or a SETATTR
 * that changes the size (NULL: not such a call). A COMMIT changes nothing
 * the WRITEs before it did not. */
static const nfs_fh3 *written_file(const struct cfs_req *req)
{
	if (req->prog != NFS_PROGRAM)
		return NULL;
	if (req->proc == NFS3_WRITE)
		return &req->args.write.file;
	if (req->proc == NFS3_SETATTR && req->args.setattr.new_attributes.size.set_it)
		return &req->args.setattr.object;
	return NULL;
}

/* A call that may change a file's bytes (its row's `changes`) was
 * answered (status, r: as engine_forward_reply() got them): unless the
 * server refused it before changing anything, what was being read of the
 * file before is not served after this answer reaches its client. A
 * failure without an answer (a timeout) may have changed it too. */
static void data_changed(struct engine *e, const struct cfs_req *req, int status,
                         const union nfs3_res *r)
{
	const struct engine_proc *ep =
	    req->prog == NFS_PROGRAM && req->proc != NFS3_NULL ? engine_proc(req->proc) : NULL;

	if (ep == NULL || !ep->changes_data)
		return;
	if (status == 0 && r && (r->status == NFS3ERR_ACCES || r->status == NFS3ERR_PERM ||
	                         r->status == NFS3ERR_ROFS || r->status == NFS3ERR_STALE))
		return;
	engine_data_changed(e, (const nfs_fh3 *)((const char *)&req->args + ep->changes_fh));
}

void engine_forward_reply(struct engine *e, struct cfs_req *req, int status, void *res)
{
	union nfs3_res *r = res;

	data_changed(e, req, status, r);
	if (status != 0) {
		engine_reply_failure(e, req, status);
		return;
	}
	count_reply(e, req, 0, req->proc == NFS3_NULL ? NFS3_OK : r->status,
		    forwarded_outcome(e, req->proc));
	/* only a change the server made: one it refused (ACCES, ROFS, ...)
	 * must not let any user turn caching of anyone's file off */
	if (r && r->status == NFS3_OK && written_file(req))
		writer(e, written_file(req));
	struct cfs_cred lister;
	int listed =
	    req->prog == NFS_PROGRAM && req->proc == NFS3_READDIRPLUS && r && r->status == NFS3_OK;
	if (listed)
		lister = req->cred;
	/* a first page that started a listing pass: its other pages next
	 * (the directory copied: req is freed by the reply) */
	uint8_t dirfh[NFS3_FHSIZE];
	nfs_fh3 dir;
	int first_page = req->prog == NFS_PROGRAM && r && r->status == NFS3_OK &&
	                 meta_first_page_dir(req->proc, &req->args, dirfh, &dir) == 0;
	if (first_page)
		lister = req->cred;
	uint32_t proc = req->proc;
	if (req->proc != NFS3_NULL) {
		/* stale names first (a concurrent reply may have brought them
		 * back), then what this reply says */
		struct engine_call call;

		meta_mutation(e, req);
		engine_call_of(&call, req);
		engine_answered(e, &call, r);
		strict_lookup_seen(e, req, r);
		if (req->proc == NFS3_READ && r->status == NFS3_OK)
			e->ctr.bytes_read += r->read.READ3res_u.resok.count;
		if (req->proc == NFS3_READ && r->status == NFS3ERR_ACCES)
			e->ctr.access_denied++; /* the caller got the server's refusal */
	}
	engine_reply(e, req, res); /* frees req; res is the upstream's until we return */
	if (first_page)
		engine_pass_ahead(e, proc, &dir, &lister, res);
	if (listed) {
		engine_warm_ahead(e, res);
		engine_access_ahead(e, &lister, res);
	}
}

static int req_alive(void *priv)
{
	return proto_req_alive(priv);
}

void engine_forward(struct engine *e, struct cfs_req *req)
{
	int rc;

	req->engine = e;
	rc = engine_up_call_for(e, req->proc, req->proc == NFS3_NULL ? NULL : &req->args,
			        &req->cred, forward_done, req_alive, req);
	if (rc != 0) {
		req->engine = NULL;
		engine_send_failed(e, req, rc);
	}
}

void engine_send_failed(struct engine *e, struct cfs_req *req, int rc)
{
	static struct log_limit lim;

	log_limited(&lim, CFS_LOG_WARN, "client %s: cannot forward %s: %s", proto_req_peer(req),
	            proto_proc_name(req->prog, req->proc),
	            rc == -E2BIG ? "larger than libnfs's 4 KiB call buffer (NAMETOOLONG)"
	                         : strerror(-rc));
	engine_reply_failure(e, req, rc);
}
