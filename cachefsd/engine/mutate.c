/* Changes that alter an object their reply does not describe.
 *
 * REMOVE, RMDIR and RENAME reply with the directories' attributes only,
 * but the object a removed name pointed to loses a link and gets a new
 * ctime, a renamed object gets a new ctime, and a RENAME target that is
 * replaced loses a link. In ttl mode the proxy would go on answering
 * GETATTR (and LOOKUP, READDIRPLUS) with the attributes it had. So the
 * objects those names point to are found first (the metadata cache, or a
 * LOOKUP upstream as the caller when it does not know them fresh), and
 * their attributes are forgotten before the call is sent and again when
 * its reply comes back; replies to calls issued before that may not bring
 * them back (engine_attrs_changed()). */
#include "engine_int.h"
#include "engine_procs.h"
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MUT_MAGIC 0x4d555431u /* "MUT1" */

struct mut;

struct mut_lookup {
	struct mut *m;
	LOOKUP3args args; /* points into the request's own arguments */
};

struct mut {
	uint32_t magic;
	struct engine *e;
	struct cfs_req *req;
	int nkids;
	struct {
		uint8_t fh[NFS3_FHSIZE];
		uint32_t len;
	} kids[2];
	int pending; /* LOOKUPs in flight */
	struct mut_lookup lk[2];
};

/* The names req removes or replaces (its row's); returns how many (0..2). */
static int names_of(struct cfs_req *req, nfs_fh3 **dirs, char **names)
{
	const struct engine_proc *ep = engine_proc(req->proc);
	int n = ep ? ep->nnamed : 0;

	for (int i = 0; i < n; i++) {
		diropargs3 *d = (diropargs3 *)((char *)&req->args + ep->named[i]);
		dirs[i] = &d->dir;
		names[i] = d->name;
	}
	return n;
}

static void add_kid(struct mut *m, const void *fh, uint32_t len)
{
	if (len == 0 || len > NFS3_FHSIZE || m->nkids >= 2)
		return;
	memcpy(m->kids[m->nkids].fh, fh, len);
	m->kids[m->nkids].len = len;
	m->nkids++;
}

static void kids_changed(struct mut *m)
{
	for (int i = 0; i < m->nkids; i++) {
		nfs_fh3 fh = {{m->kids[i].len, (char *)m->kids[i].fh}};

		engine_attrs_changed(m->e, &fh);
		if (engine_proc(m->req->proc)->purge_named)
			meta_purge(m->e, &fh); /* its listing and names went with it */
	}
}

static void mut_free(struct mut *m)
{
	m->magic = 0;
	free(m);
}

static void mut_done(int status, void *res, void *priv)
{
	struct mut *m = priv;
	struct engine *e = m->e;
	struct cfs_req *req = m->req;

	assert(m->magic == MUT_MAGIC);
	if (status == 0)
		kids_changed(m); /* calls issued before now are old news */
	mut_free(m);
	engine_forward_reply(e, req, status, res);
}

static int mut_alive(void *priv)
{
	struct mut *m = priv;

	return engine_req_alive(m->e, m->req);
}

static void mut_send(struct mut *m)
{
	struct engine *e = m->e;
	struct cfs_req *req = m->req;
	int rc;

	meta_mutation(e, req);
	kids_changed(m);
	rc = engine_up_call_for(e, req->proc, &req->args, &req->cred, mut_done, mut_alive, m);
	if (rc != 0) {
		mut_free(m);
		engine_send_failed(e, req, rc);
	}
}

static void looked_up(int status, void *res, void *priv)
{
	struct mut_lookup *l = priv;
	struct mut *m = l->m;
	LOOKUP3res *r = res;

	assert(m->magic == MUT_MAGIC);
	if (status == 0 && r->status == NFS3_OK)
		add_kid(m, r->LOOKUP3res_u.resok.object.data.data_val,
			r->LOOKUP3res_u.resok.object.data.data_len);
	if (--m->pending > 0)
		return;
	if (status == -ECANCELED || !engine_req_alive(m->e, m->req)) {
		struct cfs_req *req = m->req;
		mut_free(m);
		proto_drop(req);
		return;
	}
	mut_send(m);
}

void engine_mutate(struct engine *e, struct cfs_req *req)
{
	nfs_fh3 *dirs[2];
	char *names[2];
	int n = meta_enabled(e) ? names_of(req, dirs, names) : 0;
	struct mut *m = NULL;

	if (n == 0 || (m = calloc(1, sizeof(*m))) == NULL) {
		meta_mutation(e, req);
		engine_forward(e, req);
		return;
	}
	m->magic = MUT_MAGIC;
	m->e = e;
	m->req = req;
	for (int i = 0; i < n; i++) {
		uint8_t fh[NFS3_FHSIZE];
		uint32_t len = 0;
		int known = meta_child(e, dirs[i], names[i], fh, &len);

		if (known == 1)
			add_kid(m, fh, len);
		else if (known != 0)
			m->pending++;
	}
	if (m->pending == 0) {
		mut_send(m);
		return;
	}
	/* not known fresh: ask the server what the names point to, as the
	 * caller (pending counts both before either can complete) */
	for (int i = 0, j = 0; i < n; i++) {
		uint8_t fh[NFS3_FHSIZE];
		uint32_t len = 0;

		if (meta_child(e, dirs[i], names[i], fh, &len) >= 0)
			continue;
		struct mut_lookup *l = &m->lk[j++];
		l->m = m;
		l->args.what.dir = *dirs[i];
		l->args.what.name = names[i];
		if (engine_up_call(e, NFS3_LOOKUP, &l->args, &req->cred, looked_up, l) != 0)
			looked_up(-EIO, NULL, l);
	}
}
