/* The engine with a scripted upstream, for the engine's unit tests
 * (test_engine_flow.c, test_engine_read.c): a real loop, a real store in a
 * temporary cache directory, and an upstream (struct engine_io) that keeps
 * every call until the test answers it. Client calls are built here and
 * handed to engine_submit(); their answers are caught on their way to
 * proto_reply(). Everything is static inline: each test file uses a part. */
#ifndef CFS_TEST_ENGINE_FX_H
#define CFS_TEST_ENGINE_FX_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../cachefsd/engine/engine_int.h"
#include "config.h"
#include "engine.h"
#include "loop.h"
#include "proto.h"
#include "store.h"
#include "upstream.h"

/* --- the scripted upstream ------------------------------------------------ */

/* calls of one test, and answers: a test that leaves fills and READs in
 * flight sees them forwarded when stop() cancels them */
#define MAX_CALLS 64

struct call {
	uint32_t proc;
	void *args; /* the engine's: valid until the call is answered */
	struct cfs_cred cred;
	upstream_cb cb;
	void *priv;
	int answered;
};

/* struct origin is opaque to the engine: the test's own stands in */
struct origin {
	struct upstream_info info;
	struct upstream_counters ctr;
	struct call calls[MAX_CALLS];
	int ncalls;
	/* the change attributes an NFSv4 filer sends (up_change()): every
	 * answer carries them for the attributes they were set for */
	struct origin_coh coh;
};

static inline int up_call_for(struct origin *up, uint32_t proc, void *args,
                              const struct cfs_cred *cred, upstream_cb cb, upstream_alive_fn alive,
                              void *priv)
{
	(void)alive;
	assert_true(up->ncalls < MAX_CALLS);
	up->calls[up->ncalls++] = (struct call){proc, args, *cred, cb, priv, 0};
	return 0;
}

static inline int up_call(struct origin *up, uint32_t proc, void *args,
                          const struct cfs_cred *cred, upstream_cb cb, void *priv)
{
	return up_call_for(up, proc, args, cred, cb, NULL, priv);
}

static inline const struct upstream_info *up_info(const struct origin *up)
{
	return &up->info;
}

static inline const struct upstream_counters *up_counters(const struct origin *up)
{
	return &up->ctr;
}

static inline const struct origin_coh *up_answer_coh(const struct origin *up)
{
	return &up->coh;
}

static inline int up_max_inflight(const struct origin *up)
{
	(void)up;
	return 64;
}

/* the clients of these calls never go away (they have no connection) */
static inline int client_alive(const struct cfs_req *req)
{
	(void)req;
	return 1;
}

/* --- answers on their way to the client ----------------------------------- */

#define ANS_DATA 16384

struct answer {
	uint32_t proc;
	nfsstat3 status;
	/* GETATTR's, a LOOKUP's object's, READ's, ACCESS's, READLINK's, a
	 * READDIR(PLUS)'s directory's */
	int has_attrs;
	fattr3 attrs;
	uint32_t access; /* ACCESS: the bits granted */
	/* READ: its bytes; READLINK: the target; LOOKUP: the object's handle;
	 * READDIR(PLUS): the entries' names, each followed by a '/' */
	uint32_t len;
	int eof;            /* READ */
	fattr3 entry_attrs; /* READDIRPLUS: the first entry's attributes */
	uint8_t verf[NFS3_COOKIEVERFSIZE]; /* READDIR(PLUS): the cookie verifier told */
	char data[ANS_DATA];
};

static struct answer g_ans[MAX_CALLS];
static int g_nans;

static inline void ans_post(struct answer *a, const post_op_attr *pa)
{
	a->has_attrs = pa->attributes_follow;
	if (pa->attributes_follow)
		a->attrs = pa->post_op_attr_u.attributes;
}

static inline void ans_bytes(struct answer *a, const void *p, uint32_t n)
{
	assert_true(a->len + n <= ANS_DATA);
	memcpy(a->data + a->len, p, n);
	a->len += n;
}

static inline void catch_ok(struct answer *a, uint32_t proc, const union nfs3_res *r)
{
	switch (proc) {
	case NFS3_GETATTR:
		a->has_attrs = 1;
		a->attrs = r->getattr.GETATTR3res_u.resok.obj_attributes;
		break;
	case NFS3_LOOKUP: {
		const LOOKUP3resok *ok = &r->lookup.LOOKUP3res_u.resok;
		ans_post(a, &ok->obj_attributes);
		ans_bytes(a, ok->object.data.data_val, ok->object.data.data_len);
		break;
	}
	case NFS3_ACCESS:
		ans_post(a, &r->access.ACCESS3res_u.resok.obj_attributes);
		a->access = r->access.ACCESS3res_u.resok.access;
		break;
	case NFS3_READ: {
		const READ3resok *ok = &r->read.READ3res_u.resok;
		ans_post(a, &ok->file_attributes);
		assert_int_equal(ok->count, ok->data.data_len);
		ans_bytes(a, ok->data.data_val, ok->data.data_len);
		a->eof = ok->eof;
		break;
	}
	case NFS3_READLINK: {
		const READLINK3resok *ok = &r->readlink.READLINK3res_u.resok;
		ans_post(a, &ok->symlink_attributes);
		ans_bytes(a, ok->data, (uint32_t)strlen(ok->data));
		break;
	}
	case NFS3_READDIR:
		ans_post(a, &r->readdir.READDIR3res_u.resok.dir_attributes);
		memcpy(a->verf, r->readdir.READDIR3res_u.resok.cookieverf, sizeof(a->verf));
		for (const entry3 *en = r->readdir.READDIR3res_u.resok.reply.entries; en;
		     en = en->nextentry) {
			ans_bytes(a, en->name, (uint32_t)strlen(en->name));
			ans_bytes(a, "/", 1);
		}
		break;
	case NFS3_READDIRPLUS:
		ans_post(a, &r->readdirplus.READDIRPLUS3res_u.resok.dir_attributes);
		memcpy(a->verf, r->readdirplus.READDIRPLUS3res_u.resok.cookieverf, sizeof(a->verf));
		for (const entryplus3 *en = r->readdirplus.READDIRPLUS3res_u.resok.reply.entries;
		     en; en = en->nextentry) {
			if (en == r->readdirplus.READDIRPLUS3res_u.resok.reply.entries)
				a->entry_attrs = en->name_attributes.post_op_attr_u.attributes;
			ans_bytes(a, en->name, (uint32_t)strlen(en->name));
			ans_bytes(a, "/", 1);
		}
		break;
	default:
		break;
	}
}

static inline int catch_reply(struct cfs_req *req, void *res)
{
	const union nfs3_res *r = res;
	struct answer *a;

	assert_true(g_nans < MAX_CALLS);
	a = &g_ans[g_nans++];
	memset(a, 0, sizeof(*a));
	a->proc = req->proc;
	a->status = r ? r->status : NFS3_OK;
	if (r && r->status == NFS3_OK)
		catch_ok(a, req->proc, r);
	return proto_reply(req, res); /* no connection: frees req */
}

static const struct engine_io scripted = {
    .call = up_call,
    .call_for = up_call_for,
    .info = up_info,
    .counters = up_counters,
    .max_inflight = up_max_inflight,
    .answer_coh = up_answer_coh,
    .reply = catch_reply,
    .req_alive = client_alive,
};

/* --- the fixture ----------------------------------------------------------- */

struct fx {
	struct loop *loop;
	struct cfs_config cfg;
	struct origin up;
	struct engine *e;
	char dir[64];
};

static struct fx *g;
static uint32_t g_uid; /* the uid of the next client calls */

/* The engine's configuration before start_cfg() starts it. */
static inline void fx_new(int meta_ttl)
{
	g = calloc(1, sizeof(*g));
	assert_non_null(g);
	strcpy(g->dir, "/tmp/cfs-engflow-XXXXXX");
	assert_non_null(mkdtemp(g->dir));
	config_defaults(&g->cfg);
	g->cfg.cache_dir = strdup(g->dir);
	g->cfg.meta_ttl = meta_ttl;
	g->cfg.lookup_prefetch = 0; /* no READs of its own after a LOOKUP */
	g->cfg.access_prefetch = 0; /* ... nor ACCESS calls after a listing */
	g->cfg.io_threads = 1;
	strcpy(g->up.info.url.host, "127.0.0.1");
	strcpy(g->up.info.url.path, "/export");
	g->up.info.fsinfo.rtmax = 1 << 20;
	g->up.info.fsinfo.wtmax = 1 << 20;
	g_nans = 0;
	g_uid = 1000;
}

/* Starts the engine fx_new() configured (and the test changed). */
static inline void start_cfg(void)
{
	char err[256];

	g->loop = loop_new();
	assert_non_null(g->loop);
	assert_int_equal(
	    engine_new_io(g->loop, &g->cfg, &g->up, &scripted, &g->e, err, sizeof(err)), 0);
}

/* An engine in strict mode (meta_ttl 0) or ttl mode. */
static inline void start(int meta_ttl)
{
	fx_new(meta_ttl);
	start_cfg();
}

static inline int stop(void **state)
{
	char cmd[128];

	(void)state;
	if (g == NULL)
		return 0;
	/* calls a test left unanswered end as when their client went away
	 * (cancelled fills forward their READs: those are calls too) */
	for (int i = 0; i < g->up.ncalls; i++) {
		struct call *c = &g->up.calls[i];

		if (!c->answered) {
			c->answered = 1;
			c->cb(-ECANCELED, NULL, c->priv);
		}
	}
	engine_free(g->e);
	loop_free(g->loop);
	config_free(&g->cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g->dir);
	assert_int_equal(system(cmd), 0);
	free(g);
	g = NULL;
	return 0;
}

/* Lets the monotonic clock move on (calls made before and after differ
 * in their start times). */
static inline void tick(void)
{
	struct timespec ts = {0, 2000000};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Lets the loop's clock (loop_now()) and the wall clock move on by ms. */
static inline void pass_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
	loop_once(g->loop, 0);
}

/* --- client calls ------------------------------------------------------------ */

static inline struct cfs_req *new_req(uint32_t proc)
{
	struct cfs_req *req = calloc(1, sizeof(*req));

	assert_non_null(req);
	req->magic = CFS_REQ_MAGIC;
	req->prog = NFS_PROGRAM;
	req->vers = 3;
	req->proc = proc;
	req->cred.flavor = AUTH_UNIX;
	req->cred.uid = g_uid;
	req->cred.gid = 1000;
	req->t_start_us = loop_clock_us();
	/* what proto_req_free() releases: an empty argument buffer */
	req->argbuf = malloc(1);
	assert_non_null(req->argbuf);
	zdrmem_create(&req->zdr, req->argbuf, 0, ZDR_DECODE);
	return req;
}

/* Handles and names the calls point to (they outlive every call); a test
 * file may not use them all. */
#define FX_UNUSED __attribute__((unused))
static FX_UNUSED char h_dir[] = "dir-handle", h_file[] = "file-handle", h_other[] = "other-handle";
static FX_UNUSED char h_sub[] = "sub-handle", h_new[] = "new-handle";
static FX_UNUSED char n_a[] = "a", n_b[] = "b", n_c[] = "c";
static char g_target[] = "../target";

static inline nfs_fh3 fh_of(char *h)
{
	return (nfs_fh3){{(u_int)strlen(h), h}};
}

static inline void getattr(char *h)
{
	struct cfs_req *req = new_req(NFS3_GETATTR);

	req->args.getattr.object = fh_of(h);
	engine_submit(req, g->e);
}

static inline void lookup(char *dir, char *name)
{
	struct cfs_req *req = new_req(NFS3_LOOKUP);

	req->args.lookup.what.dir = fh_of(dir);
	req->args.lookup.what.name = name;
	engine_submit(req, g->e);
}

static inline void access_of(char *h, uint32_t bits)
{
	struct cfs_req *req = new_req(NFS3_ACCESS);

	req->args.access.object = fh_of(h);
	req->args.access.access = bits;
	engine_submit(req, g->e);
}

static inline void readlink_of(char *h)
{
	struct cfs_req *req = new_req(NFS3_READLINK);

	req->args.readlink.symlink = fh_of(h);
	engine_submit(req, g->e);
}

/* The first page of dir's listing. */
static inline void readdir_of(char *dir)
{
	struct cfs_req *req = new_req(NFS3_READDIR);

	req->args.readdir.dir = fh_of(dir);
	req->args.readdir.count = 4096;
	engine_submit(req, g->e);
}

static inline void readdirplus_of(char *dir)
{
	struct cfs_req *req = new_req(NFS3_READDIRPLUS);

	req->args.readdirplus.dir = fh_of(dir);
	req->args.readdirplus.dircount = 4096;
	req->args.readdirplus.maxcount = 32768;
	engine_submit(req, g->e);
}

static char g_wdata[] = "new bytes";

static inline void write_file(char *h)
{
	struct cfs_req *req = new_req(NFS3_WRITE);

	req->args.write.file = fh_of(h);
	req->args.write.count = sizeof(g_wdata);
	req->args.write.stable = FILE_SYNC;
	req->args.write.data.data_len = sizeof(g_wdata);
	req->args.write.data.data_val = g_wdata;
	engine_submit(req, g->e);
}

static inline void commit_file(char *h)
{
	struct cfs_req *req = new_req(NFS3_COMMIT);

	req->args.commit.file = fh_of(h);
	engine_submit(req, g->e);
}

static inline void read_at(char *h, uint64_t off, uint32_t count)
{
	struct cfs_req *req = new_req(NFS3_READ);

	req->args.read.file = fh_of(h);
	req->args.read.offset = off;
	req->args.read.count = count;
	engine_submit(req, g->e);
}

static inline void read_file(char *h)
{
	read_at(h, 0, 4096);
}

/* set_size: a SETATTR that truncates; else one that changes the mode */
static inline void setattr(char *h, int set_size)
{
	struct cfs_req *req = new_req(NFS3_SETATTR);

	req->args.setattr.object = fh_of(h);
	if (set_size) {
		req->args.setattr.new_attributes.size.set_it = 1;
		req->args.setattr.new_attributes.size.set_size3_u.size = 0;
	} else {
		req->args.setattr.new_attributes.mode.set_it = 1;
		req->args.setattr.new_attributes.mode.set_mode3_u.mode = 0600;
	}
	engine_submit(req, g->e);
}

/* A new name in dir: proc is CREATE, MKDIR, SYMLINK (to g_target) or
 * MKNOD (a FIFO). */
static inline void make_name(uint32_t proc, char *dir, char *name)
{
	struct cfs_req *req = new_req(proc);
	diropargs3 where = {fh_of(dir), name};

	switch (proc) {
	case NFS3_CREATE:
		req->args.create.where = where;
		req->args.create.how.mode = UNCHECKED;
		break;
	case NFS3_MKDIR:
		req->args.mkdir.where = where;
		break;
	case NFS3_SYMLINK:
		req->args.symlink.where = where;
		req->args.symlink.symlink.symlink_data = g_target;
		break;
	default:
		assert_int_equal(proc, NFS3_MKNOD);
		req->args.mknod.where = where;
		req->args.mknod.what.type = NF3FIFO;
		break;
	}
	engine_submit(req, g->e);
}

static inline void remove_name(char *dir, char *name)
{
	struct cfs_req *req = new_req(NFS3_REMOVE);

	req->args.remove.object.dir = fh_of(dir);
	req->args.remove.object.name = name;
	engine_submit(req, g->e);
}

static inline void rmdir_name(char *dir, char *name)
{
	struct cfs_req *req = new_req(NFS3_RMDIR);

	req->args.rmdir.object.dir = fh_of(dir);
	req->args.rmdir.object.name = name;
	engine_submit(req, g->e);
}

static inline void rename_between(char *fromdir, char *from, char *todir, char *to)
{
	struct cfs_req *req = new_req(NFS3_RENAME);

	req->args.rename.from.dir = fh_of(fromdir);
	req->args.rename.from.name = from;
	req->args.rename.to.dir = fh_of(todir);
	req->args.rename.to.name = to;
	engine_submit(req, g->e);
}

static inline void rename_name(char *dir, char *from, char *to)
{
	rename_between(dir, from, dir, to);
}

/* A hard link dir/name to file. */
static inline void link_name(char *file, char *dir, char *name)
{
	struct cfs_req *req = new_req(NFS3_LINK);

	req->args.link.file = fh_of(file);
	req->args.link.link.dir = fh_of(dir);
	req->args.link.link.name = name;
	engine_submit(req, g->e);
}

/* --- upstream answers --------------------------------------------------------- */

static inline fattr3 attrs(uint64_t fileid, ftype3 type, uint64_t size, uint32_t mtime,
                           uint32_t ctime)
{
	fattr3 a;

	memset(&a, 0, sizeof(a));
	a.type = type;
	a.mode = type == NF3DIR ? 0755 : type == NF3LNK ? 0777 : 0644;
	a.nlink = 1;
	a.uid = 1000;
	a.gid = 1000;
	a.size = size;
	a.used = size;
	a.fileid = fileid;
	a.mtime.seconds = mtime;
	a.ctime.seconds = ctime;
	a.atime.seconds = mtime;
	return a;
}

#define DIR_ATTRS attrs(1, NF3DIR, 4096, 100, 100)

/* From now on the scripted filer speaks NFSv4: its answers carrying
 * attributes *a come with change attribute change (replacing the one set
 * for the same file before). */
static inline void up_change(const fattr3 *a, uint64_t change)
{
	struct origin_coh *t = &g->up.coh;
	unsigned i;

	for (i = 0; i < t->n && t->c[i].fileid != a->fileid; i++)
		;
	assert_true(i < ORIGIN_COH_MAX);
	t->c[i] = (struct origin_chg){a->fsid, a->fileid, a->size, a->mtime, a->ctime, change};
	if (i == t->n)
		t->n++;
}

/* The oldest call not answered yet: it must be proc. */
static inline struct call *next_call(uint32_t proc)
{
	for (int i = 0; i < g->up.ncalls; i++) {
		if (!g->up.calls[i].answered) {
			assert_int_equal(g->up.calls[i].proc, proc);
			g->up.calls[i].answered = 1;
			return &g->up.calls[i];
		}
	}
	fail_msg("no upstream call of procedure %u waiting", proc);
	return NULL;
}

/* The oldest waiting call, not taken (NULL: none). */
static inline struct call *peek_call(void)
{
	for (int i = 0; i < g->up.ncalls; i++)
		if (!g->up.calls[i].answered)
			return &g->up.calls[i];
	return NULL;
}

/* The oldest waiting call is proc: the engine forwarded it. It ends
 * unanswered (as when its client went away). */
static inline void forwarded(uint32_t proc)
{
	struct call *c = next_call(proc);

	c->cb(-ECANCELED, NULL, c->priv);
}

/* The call made last (answered or not; NULL: none). */
static inline struct call *last_call(void)
{
	return g->up.ncalls ? &g->up.calls[g->up.ncalls - 1] : NULL;
}

static inline int calls_waiting(void)
{
	int n = 0;

	for (int i = 0; i < g->up.ncalls; i++)
		n += !g->up.calls[i].answered;
	return n;
}

static inline post_op_attr post(const fattr3 *a)
{
	post_op_attr pa;

	memset(&pa, 0, sizeof(pa));
	if (a) {
		pa.attributes_follow = 1;
		pa.post_op_attr_u.attributes = *a;
	}
	return pa;
}

static inline void answer_getattr(const fattr3 *a)
{
	struct call *c = next_call(NFS3_GETATTR);
	GETATTR3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.GETATTR3res_u.resok.obj_attributes = *a;
	c->cb(0, &res, c->priv);
}

/* The name points to child (attributes *a) in a directory whose
 * attributes are *dir. */
static inline void answer_lookup_in(char *child, const fattr3 *a, const fattr3 *dir)
{
	struct call *c = next_call(NFS3_LOOKUP);
	LOOKUP3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.LOOKUP3res_u.resok.object = fh_of(child);
	res.LOOKUP3res_u.resok.obj_attributes = post(a);
	res.LOOKUP3res_u.resok.dir_attributes = post(dir);
	c->cb(0, &res, c->priv);
}

static inline void answer_lookup(char *child, const fattr3 *a)
{
	fattr3 d = DIR_ATTRS;

	answer_lookup_in(child, a, &d);
}

/* No such name in a directory whose attributes are DIR_ATTRS. */
static inline void answer_noent(void)
{
	struct call *c = next_call(NFS3_LOOKUP);
	LOOKUP3res res;
	fattr3 d = DIR_ATTRS;

	memset(&res, 0, sizeof(res));
	res.status = NFS3ERR_NOENT;
	res.LOOKUP3res_u.resfail.dir_attributes = post(&d);
	c->cb(0, &res, c->priv);
}

/* The answer to a call whose result is a status and wcc data (WRITE,
 * SETATTR, REMOVE, RENAME): their failure arms are all wcc_data, and so
 * is SETATTR's and REMOVE's success arm; WRITE's and RENAME's success
 * arms start with theirs. Attributes after: none. Any other failure (a
 * zeroed failure arm says "no attributes") too. */
static inline void answer_status(uint32_t proc, nfsstat3 st)
{
	struct call *c = next_call(proc);
	union nfs3_res res;

	memset(&res, 0, sizeof(res));
	res.status = st;
	if (proc == NFS3_WRITE && st == NFS3_OK) {
		res.write.WRITE3res_u.resok.count = sizeof(g_wdata);
		res.write.WRITE3res_u.resok.committed = FILE_SYNC;
	}
	c->cb(0, &res, c->priv);
}

/* A success whose wcc data (or LINK's file attributes) says the object is
 * now *after (NULL: no attributes): SETATTR, WRITE and COMMIT of the
 * file, REMOVE and RMDIR of the directory, RENAME of both directories,
 * LINK of the linked file (the directory's: none). */
static inline void answer_after(uint32_t proc, const fattr3 *after)
{
	struct call *c = next_call(proc);
	union nfs3_res res;
	post_op_attr pa = post(after);

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	switch (proc) {
	case NFS3_SETATTR:
		res.setattr.SETATTR3res_u.resok.obj_wcc.after = pa;
		break;
	case NFS3_WRITE:
		res.write.WRITE3res_u.resok.file_wcc.after = pa;
		res.write.WRITE3res_u.resok.count = sizeof(g_wdata);
		res.write.WRITE3res_u.resok.committed = FILE_SYNC;
		break;
	case NFS3_COMMIT:
		res.commit.COMMIT3res_u.resok.file_wcc.after = pa;
		break;
	case NFS3_REMOVE:
		res.remove.REMOVE3res_u.resok.dir_wcc.after = pa;
		break;
	case NFS3_RMDIR:
		res.rmdir.RMDIR3res_u.resok.dir_wcc.after = pa;
		break;
	case NFS3_RENAME:
		res.rename.RENAME3res_u.resok.fromdir_wcc.after = pa;
		res.rename.RENAME3res_u.resok.todir_wcc.after = pa;
		break;
	default:
		assert_int_equal(proc, NFS3_LINK);
		res.link.LINK3res_u.resok.file_attributes = pa;
		break;
	}
	c->cb(0, &res, c->priv);
}

/* A new object child (its attributes obj) made by proc (CREATE, MKDIR,
 * SYMLINK, MKNOD); the directory is *dir after (NULL: not said). */
static inline void answer_made(uint32_t proc, char *child, const fattr3 *obj, const fattr3 *dir)
{
	struct call *c = next_call(proc);
	union nfs3_res res;
	post_op_fh3 fh = {1, {fh_of(child)}};
	post_op_attr pa = post(obj), da = post(dir);

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	switch (proc) {
	case NFS3_CREATE:
		res.create.CREATE3res_u.resok = (CREATE3resok){fh, pa, {{0}, da}};
		break;
	case NFS3_MKDIR:
		res.mkdir.MKDIR3res_u.resok = (MKDIR3resok){fh, pa, {{0}, da}};
		break;
	case NFS3_SYMLINK:
		res.symlink.SYMLINK3res_u.resok = (SYMLINK3resok){fh, pa, {{0}, da}};
		break;
	default:
		res.mknod.MKNOD3res_u.resok = (MKNOD3resok){fh, pa, {{0}, da}};
		break;
	}
	c->cb(0, &res, c->priv);
}

/* n bytes of a READ (the file's attributes *a; NULL: none). */
static inline void answer_read(const void *data, uint32_t n, int eof, const fattr3 *a)
{
	struct call *c = next_call(NFS3_READ);
	READ3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READ3res_u.resok.file_attributes = post(a);
	res.READ3res_u.resok.count = n;
	res.READ3res_u.resok.eof = eof;
	res.READ3res_u.resok.data.data_len = n;
	res.READ3res_u.resok.data.data_val = (char *)data;
	c->cb(0, &res, c->priv);
}

/* A READ the server failed with st (the file's attributes *a; NULL: none). */
static inline void answer_read_error(nfsstat3 st, const fattr3 *a)
{
	struct call *c = next_call(NFS3_READ);
	READ3res res;

	memset(&res, 0, sizeof(res));
	res.status = st;
	res.READ3res_u.resfail.file_attributes = post(a);
	c->cb(0, &res, c->priv);
}

static inline void answer_access(uint32_t granted, const fattr3 *a)
{
	struct call *c = next_call(NFS3_ACCESS);
	ACCESS3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.ACCESS3res_u.resok.obj_attributes = post(a);
	res.ACCESS3res_u.resok.access = granted;
	c->cb(0, &res, c->priv);
}

static inline void answer_readlink(char *target, const fattr3 *a)
{
	struct call *c = next_call(NFS3_READLINK);
	READLINK3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READLINK3res_u.resok.symlink_attributes = post(a);
	res.READLINK3res_u.resok.data = target;
	c->cb(0, &res, c->priv);
}

/* A READDIR of a directory (attributes *dir) holding names a and b. */
static inline void answer_readdir(const fattr3 *dir)
{
	struct call *c = next_call(NFS3_READDIR);
	READDIR3res res;
	entry3 eb = {8, n_b, 2, NULL}, ea = {7, n_a, 1, &eb};

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READDIR3res_u.resok.dir_attributes = post(dir);
	res.READDIR3res_u.resok.reply.entries = &ea;
	res.READDIR3res_u.resok.reply.eof = 1;
	c->cb(0, &res, c->priv);
}

/* A READDIRPLUS of a directory (attributes *dir) holding a, pointing to
 * h_file whose attributes are *fa. */
static inline void answer_readdirplus(const fattr3 *dir, const fattr3 *fa)
{
	struct call *c = next_call(NFS3_READDIRPLUS);
	READDIRPLUS3res res;
	entryplus3 ea;

	memset(&ea, 0, sizeof(ea));
	ea.fileid = fa->fileid;
	ea.name = n_a;
	ea.cookie = 1;
	ea.name_attributes = post(fa);
	ea.name_handle.handle_follows = 1;
	ea.name_handle.post_op_fh3_u.handle = fh_of(h_file);
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READDIRPLUS3res_u.resok.dir_attributes = post(dir);
	res.READDIRPLUS3res_u.resok.reply.entries = &ea;
	res.READDIRPLUS3res_u.resok.reply.eof = 1;
	c->cb(0, &res, c->priv);
}

static inline struct answer *last_answer(uint32_t proc)
{
	assert_true(g_nans > 0);
	assert_int_equal(g_ans[g_nans - 1].proc, proc);
	return &g_ans[g_nans - 1];
}

static inline const struct engine_counters *ctr(void)
{
	return engine_counters(g->e);
}

/* --- state the tests start from -------------------------------------------------- */

/* A file with cached bytes (inline in the store) under attributes a. */
static const char g_cached[] = "cached bytes";

static inline void seed_data(char *h, const fattr3 *a)
{
	assert_int_equal(store_inline_put(engine_store(g->e), h, (uint32_t)strlen(h), a, NULL, g_cached,
	                                  sizeof(g_cached)),
	                 0);
}

static inline int has_data(char *h)
{
	struct store_obj o;
	char buf[64];
	uint32_t n;

	return store_inline_get(engine_store(g->e), h, (uint32_t)strlen(h), &o, buf, sizeof(buf),
	                        &n) == 0;
}

/* dir/name resolved to child, and child's attributes, both in the cache
 * (ttl mode). */
static inline void known(char *name, char *child, uint64_t fileid)
{
	fattr3 a = attrs(fileid, NF3REG, 13, 200, 200);
	int n = g_nans;

	lookup(h_dir, name);
	answer_lookup(child, &a);
	getattr(child);
	assert_int_equal(calls_waiting(), 0); /* from the cache */
	assert_int_equal(g_nans, n + 2);
}

#endif
