/* The engine: what happens to each client call.
 *
 * NFS calls are forwarded upstream with the caller's credential and the
 * handle bytes unchanged; the decoded upstream result goes straight back to
 * the client with the saved xid. MOUNT is answered by the proxy (mount.c). */
#include "engine_int.h"
#include "log.h"
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct engine_counters *ctr_of(struct engine *e)
{
	return &e->ctr;
}

/* Counts an NFS reply about to be sent for req. */
static void count_reply(struct engine *e, const struct cfs_req *req, nfsstat3 status)
{
	struct engine_counters *c = ctr_of(e);

	if (req->prog != NFS_PROGRAM || req->proc >= ENGINE_NPROCS)
		return;
	if (status != NFS3_OK)
		c->nfs_errors[req->proc]++;
	c->nfs_latency_us[req->proc] += loop_clock_us() - req->t_start_us;
}

void engine_clamp_fsinfo(FSINFO3resok *r)
{
	if (r->rtmax == 0 || r->rtmax > CFS_MAX_IO)
		r->rtmax = CFS_MAX_IO;
	if (r->wtmax == 0 || r->wtmax > CFS_MAX_IO)
		r->wtmax = CFS_MAX_IO;
	if (r->rtpref == 0 || r->rtpref > r->rtmax)
		r->rtpref = r->rtmax;
	if (r->wtpref == 0 || r->wtpref > r->wtmax)
		r->wtpref = r->wtmax;
	if (r->dtpref == 0 || r->dtpref > CFS_MAX_IO)
		r->dtpref = CFS_MAX_IO;
}

void engine_reply_status(struct engine *e, struct cfs_req *req, nfsstat3 status)
{
	union nfs3_res res;

	memset(&res, 0, sizeof(res));
	res.status = status;
	count_reply(e, req, status);
	proto_reply(req, &res);
}

void engine_reply_failure(struct engine *e, struct cfs_req *req, int status)
{
	switch (status) {
	case -ECANCELED:
		proto_drop(req);
		return;
	case -ETIMEDOUT:
		/* soft mode gave up */
		ctr_of(e)->upstream_failures++;
		if (req->prog == NFS_PROGRAM && req->proc != NFS3_NULL)
			engine_reply_status(e, req, NFS3ERR_IO);
		else
			proto_reply_accept_error(req, SYSTEM_ERR);
		return;
	case -EACCES:
		ctr_of(e)->upstream_failures++;
		proto_reply_auth_error(req, AUTH_TOOWEAK);
		return;
	default:
		ctr_of(e)->upstream_failures++;
		proto_reply_accept_error(req, SYSTEM_ERR);
		return;
	}
}

static void forward_done(int status, void *res, void *priv)
{
	struct cfs_req *req = priv;
	struct engine *e = req->engine;
	union nfs3_res *r = res;

	req->engine = NULL;
	if (status != 0) {
		engine_reply_failure(e, req, status);
		return;
	}
	count_reply(e, req, req->proc == NFS3_NULL ? NFS3_OK : r->status);
	if (req->proc != NFS3_NULL) {
		if (req->proc == NFS3_FSINFO && r->status == NFS3_OK)
			engine_clamp_fsinfo(&r->fsinfo.FSINFO3res_u.resok);
		if (req->proc == NFS3_READ && r->status == NFS3_OK)
			ctr_of(e)->bytes_read += r->read.READ3res_u.resok.count;
	}
	proto_reply(req, res);
}

static void forward(struct engine *e, struct cfs_req *req)
{
	int rc;

	req->engine = e;
	rc = upstream_call(e->up, req->proc, req->proc == NFS3_NULL ? NULL : &req->args,
			   &req->cred, forward_done, req);
	if (rc != 0) {
		req->engine = NULL;
		log_warn("client %s: cannot forward %s: %s", proto_req_peer(req),
			 proto_proc_name(req->prog, req->proc), strerror(-rc));
		engine_reply_failure(e, req, rc == -ECANCELED ? -ECANCELED : -EPROTO);
	}
}

void engine_submit(struct cfs_req *req, void *arg)
{
	struct engine *e = arg;

	if (req->prog == MOUNT_PROGRAM) {
		mount_submit(e, req);
		return;
	}
	assert(req->prog == NFS_PROGRAM && req->proc < ENGINE_NPROCS);
	ctr_of(e)->nfs_calls[req->proc]++;
	switch (req->proc) {
	case NFS3_NULL:
		/* answered here: a client pinging the proxy learns the proxy lives */
		count_reply(e, req, NFS3_OK);
		proto_reply(req, NULL);
		return;
	case NFS3_WRITE:
		ctr_of(e)->bytes_written += req->args.write.data.data_len;
		forward(e, req);
		return;
	/* A reply above libnfs's record limit would kill the upstream
	 * connection and come back forever: ask for no more than the proxy
	 * carries (a server may always return less than asked). */
	case NFS3_READ:
		if (req->args.read.count > CFS_MAX_IO)
			req->args.read.count = CFS_MAX_IO;
		forward(e, req);
		return;
	case NFS3_READDIR:
		if (req->args.readdir.count > CFS_MAX_IO)
			req->args.readdir.count = CFS_MAX_IO;
		forward(e, req);
		return;
	case NFS3_READDIRPLUS:
		if (req->args.readdirplus.maxcount > CFS_MAX_IO)
			req->args.readdirplus.maxcount = CFS_MAX_IO;
		if (req->args.readdirplus.dircount > CFS_MAX_IO)
			req->args.readdirplus.dircount = CFS_MAX_IO;
		forward(e, req);
		return;
	default:
		forward(e, req);
		return;
	}
}

int engine_new(struct loop *l, const struct cfs_config *cfg, struct upstream *up,
	       struct engine **out)
{
	struct engine *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return -ENOMEM;
	e->loop = l;
	e->cfg = cfg;
	e->up = up;
	e->export_path = strdup(cfg->export_path ? cfg->export_path : upstream_info(up)->url.path);
	if (e->export_path == NULL) {
		free(e);
		return -ENOMEM;
	}
	engine_normalize_path(e->export_path);
	*out = e;
	return 0;
}

void engine_free(struct engine *e)
{
	if (e == NULL)
		return;
	mount_free_all(e);
	free(e->export_path);
	free(e);
}

const struct engine_counters *engine_counters(const struct engine *e)
{
	return &e->ctr;
}

const char *engine_export_path(const struct engine *e)
{
	return e->export_path;
}

void engine_dump_stats(const struct engine *e, FILE *out)
{
	const struct engine_counters *c = &e->ctr;

	fprintf(out, "%-12s %12s %12s %14s\n", "procedure", "calls", "errors", "avg latency");
	for (uint32_t p = 0; p < ENGINE_NPROCS; p++) {
		if (c->nfs_calls[p] == 0)
			continue;
		fprintf(out, "%-12s %12llu %12llu %12.0fus\n", proto_proc_name(NFS_PROGRAM, p),
			(unsigned long long)c->nfs_calls[p], (unsigned long long)c->nfs_errors[p],
			c->nfs_latency_us[p] ? (double)c->nfs_latency_us[p] / (double)c->nfs_calls[p]
					     : 0.0);
	}
	fprintf(out, "bytes read by clients    %llu\n", (unsigned long long)c->bytes_read);
	fprintf(out, "bytes written by clients %llu\n", (unsigned long long)c->bytes_written);
	fprintf(out, "upstream failures        %llu\n", (unsigned long long)c->upstream_failures);
}
