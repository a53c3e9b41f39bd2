/* A listing pass read to its end (ttl mode). When a client's READDIR or
 * READDIRPLUS from cookie 0 was forwarded and its answer started a pass
 * (meta.c "listing passes"), the engine asks the server the pass's next
 * pages itself, one after the other as the lister, until the last: the
 * pages of a pass come from one upstream listing read as fast as the
 * server answers, like a client's that does nothing else. A client that
 * follows the pass and asks a page it has not got yet waits for that page
 * (engine_pass_wait()) instead of asking the server with its own call: a
 * page asked twice at once could end at another cookie than the one the
 * pass kept, and a continuation sent on its own is no page of the pass.
 *
 * Bounded: at most LPASS_MAX passes read at once (others keep the pages
 * their clients' calls bring: their first only), at most LPASS_PAGES pages
 * a pass; the pass ends when the directory changes through the proxy (it
 * is no longer the current one), when it is older than meta_ttl, or on an
 * error (the waiting clients' calls then go to the server).
 *
 * Called by forward.c (a first page the server answered) and metaanswer.c
 * (a page a pass has not got yet); it calls the reply pipeline (reply.c),
 * the metadata cache (meta.c) and metaanswer.c for the waiting calls. */
#include "engine_int.h"
#include "engine_procs.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LPASS_MAGIC 0x4c504153u /* "LPAS" */
#define LPASS_MAX   16
#define LPASS_PAGES 16384

struct lpass {
	uint32_t magic;
	struct engine *e;
	uint64_t id;
	struct engine_call call; /* the page in flight: its dir handle points at fh */
	uint8_t fh[NFS3_FHSIZE];
	uint32_t pages;
	struct cfs_req *waiters; /* clients' calls for that page (req->next) */
	struct lpass *next;      /* e->lpasses */
};

/* The pass id a verifier holds (meta.c puts it little endian). */
static uint64_t verf_id(const void *res_or_args, size_t off)
{
	const uint8_t *p = (const uint8_t *)res_or_args + off;
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static nfs_fh3 *call_dir(struct lpass *lp)
{
	return (nfs_fh3 *)proc_fh(proc_row(NFS_PROGRAM, lp->call.proc), &lp->call.args);
}

static void unlink_lpass(struct engine *e, struct lpass *lp)
{
	for (struct lpass **pp = &e->lpasses; *pp; pp = &(*pp)->next)
		if (*pp == lp) {
			*pp = lp->next;
			e->nlpasses--;
			return;
		}
}

/* The waiting calls, answered from the pass now, or sent to the server. */
static void release(struct engine *e, struct cfs_req *w, int answerable)
{
	while (w) {
		struct cfs_req *req = w;
		w = req->next;
		req->next = NULL;
		if (e->stopping) {
			engine_reply_failure(e, req, -ECANCELED);
			continue;
		}
		if (answerable && meta_answer(e, req) == 0)
			continue;
		if (!answerable)
			meta_page_forward(e, req);
		engine_forward(e, req);
	}
}

static void lpass_done(int status, void *res, void *priv);

/* The cookie a page call asks from. */
static uint64_t call_cookie(const struct lpass *lp)
{
	uint64_t c;

	memcpy(&c, (const char *)&lp->call.args + engine_proc(lp->call.proc)->page_cookie,
	       sizeof(c));
	return c;
}

/* Asks the pass's next page; 0, or -1 when it has none to ask (the pass
 * ended, or did not move on from the cookie *prev: its last page was not
 * kept), or the server takes no call. */
static int ask_next(struct engine *e, struct lpass *lp, const uint64_t *prev)
{
	nfs_fh3 dir = *call_dir(lp);

	if (e->stopping || lp->pages >= LPASS_PAGES ||
	    meta_pass_next(e, lp->call.proc, &dir, lp->id, &lp->call.args) != 0 ||
	    (prev && call_cookie(lp) == *prev))
		return -1;
	lp->call.t_call_us = loop_clock_us();
	if (engine_up_call(e, lp->call.proc, &lp->call.args, &lp->call.cred, lpass_done, lp) != 0)
		return -1;
	lp->pages++;
	return 0;
}

static void lpass_done(int status, void *res, void *priv)
{
	struct lpass *lp = priv;
	struct engine *e = lp->e;
	const union nfs3_res *r = res;
	struct cfs_req *w;
	int ok = status == 0 && r != NULL && r->status == NFS3_OK;
	uint64_t asked;

	assert(lp->magic == LPASS_MAGIC);
	asked = call_cookie(lp);
	/* recorded as the pass's next page (meta_record(): listing_pass),
	 * observed as the lister's own answer */
	if (status == 0 && r != NULL)
		engine_answered(e, &lp->call, res);
	w = lp->waiters;
	lp->waiters = NULL;
	if (!ok || ask_next(e, lp, &asked) != 0) {
		unlink_lpass(e, lp);
		lp->magic = 0;
		free(lp);
	}
	/* the page is kept (or the pass ended: they go to the server) */
	release(e, w, ok);
}

void engine_pass_ahead(struct engine *e, uint32_t proc, const nfs_fh3 *dir,
                       const struct cfs_cred *cred, const void *res)
{
	const struct engine_proc *ep = engine_proc(proc);
	const union nfs3_res *r = res;
	struct lpass *lp;

	if (!meta_enabled(e) || e->stopping || ep == NULL || ep->page_ncounts == 0 ||
	    r->status != NFS3_OK || e->nlpasses >= LPASS_MAX || dir->data.data_len == 0 ||
	    dir->data.data_len > NFS3_FHSIZE)
		return;
	lp = calloc(1, sizeof(*lp));
	if (lp == NULL)
		return;
	lp->magic = LPASS_MAGIC;
	lp->e = e;
	/* the verifier the client was told: the pass's id when one started */
	lp->id = verf_id(res, ep->page_res_verf);
	lp->call.prog = NFS_PROGRAM;
	lp->call.proc = proc;
	lp->call.cred = *cred;
	lp->call.listing_pass = lp->id;
	memcpy(lp->fh, dir->data.data_val, dir->data.data_len);
	{
		nfs_fh3 *d = (nfs_fh3 *)proc_fh(proc_row(NFS_PROGRAM, proc), &lp->call.args);
		d->data.data_len = dir->data.data_len;
		d->data.data_val = (char *)lp->fh;
	}
	if (lp->id == 0 || ask_next(e, lp, NULL) != 0) {
		free(lp);
		return;
	}
	lp->next = e->lpasses;
	e->lpasses = lp;
	e->nlpasses++;
}

int engine_pass_wait(struct engine *e, struct cfs_req *req)
{
	const struct engine_proc *ep = engine_proc(req->proc);
	uint64_t id, cookie;

	if (ep == NULL || ep->page_ncounts == 0)
		return -ENOENT;
	memcpy(&cookie, (const char *)&req->args + ep->page_cookie, sizeof(cookie));
	id = verf_id(&req->args, ep->page_verf);
	if (cookie == 0 || id == 0)
		return -ENOENT;
	for (struct lpass *lp = e->lpasses; lp; lp = lp->next) {
		uint64_t want;
		const nfs_fh3 *d = proc_fh(proc_row(NFS_PROGRAM, req->proc), &req->args);

		memcpy(&want, (const char *)&lp->call.args + ep->page_cookie, sizeof(want));
		if (lp->id != id || lp->call.proc != req->proc || want != cookie || d == NULL ||
		    d->data.data_len != call_dir(lp)->data.data_len ||
		    memcmp(d->data.data_val, lp->fh, d->data.data_len) != 0 ||
		    memcmp((const char *)&req->args + ep->page_count[0],
		           (const char *)&lp->call.args + ep->page_count[0], 4) != 0 ||
		    (ep->page_ncounts > 1 &&
		     memcmp((const char *)&req->args + ep->page_count[1],
		            (const char *)&lp->call.args + ep->page_count[1], 4) != 0))
			continue;
		req->next = lp->waiters;
		lp->waiters = req;
		return 0;
	}
	return -ENOENT;
}
