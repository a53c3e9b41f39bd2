/* The engine's decisions with a scripted upstream: a real loop, a real
 * store in a temporary cache directory, and an upstream (struct engine_io)
 * that keeps every call until the test answers it. Client calls are built
 * here and handed to engine_submit(); their answers are caught on their
 * way to proto_reply(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cachefsd/engine_int.h"
#include "config.h"
#include "engine.h"
#include "loop.h"
#include "proto.h"
#include "store.h"
#include "upstream.h"

/* --- the scripted upstream ------------------------------------------------ */

#define MAX_CALLS 16

struct call {
	uint32_t proc;
	void *args;
	upstream_cb cb;
	void *priv;
	int answered;
};

/* struct upstream is opaque to the engine: the test's own stands in */
struct upstream {
	struct upstream_info info;
	struct upstream_counters ctr;
	struct call calls[MAX_CALLS];
	int ncalls;
};

static int up_call_for(struct upstream *up, uint32_t proc, void *args, const struct cfs_cred *cred,
                       upstream_cb cb, upstream_alive_fn alive, void *priv)
{
	(void)cred;
	(void)alive;
	assert_true(up->ncalls < MAX_CALLS);
	up->calls[up->ncalls++] = (struct call){proc, args, cb, priv, 0};
	return 0;
}

static int up_call(struct upstream *up, uint32_t proc, void *args, const struct cfs_cred *cred,
                   upstream_cb cb, void *priv)
{
	return up_call_for(up, proc, args, cred, cb, NULL, priv);
}

static const struct upstream_info *up_info(const struct upstream *up)
{
	return &up->info;
}

static const struct upstream_counters *up_counters(const struct upstream *up)
{
	return &up->ctr;
}

static int up_max_inflight(const struct upstream *up)
{
	(void)up;
	return 64;
}

/* --- answers on their way to the client ----------------------------------- */

struct answer {
	uint32_t proc;
	nfsstat3 status;
	fattr3 attrs; /* GETATTR's, or a LOOKUP's object's */
};

static struct answer g_ans[MAX_CALLS];
static int g_nans;

static int catch_reply(struct cfs_req *req, void *res)
{
	const union nfs3_res *r = res;
	struct answer *a;

	assert_true(g_nans < MAX_CALLS);
	a = &g_ans[g_nans++];
	memset(a, 0, sizeof(*a));
	a->proc = req->proc;
	a->status = r ? r->status : NFS3_OK;
	if (r && r->status == NFS3_OK && req->proc == NFS3_GETATTR)
		a->attrs = r->getattr.GETATTR3res_u.resok.obj_attributes;
	if (r && r->status == NFS3_OK && req->proc == NFS3_LOOKUP)
		a->attrs = r->lookup.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	return proto_reply(req, res); /* no connection: frees req */
}

static const struct engine_io scripted = {
    .call = up_call,
    .call_for = up_call_for,
    .info = up_info,
    .counters = up_counters,
    .max_inflight = up_max_inflight,
    .reply = catch_reply,
};

/* --- the fixture ----------------------------------------------------------- */

struct fx {
	struct loop *loop;
	struct cfs_config cfg;
	struct upstream up;
	struct engine *e;
	char dir[64];
};

static struct fx *g;

/* An engine in strict mode (meta_ttl 0) or ttl mode. */
static void start(int meta_ttl)
{
	char err[256];

	g = calloc(1, sizeof(*g));
	assert_non_null(g);
	strcpy(g->dir, "/tmp/cfs-engflow-XXXXXX");
	assert_non_null(mkdtemp(g->dir));
	config_defaults(&g->cfg);
	g->cfg.cache_dir = strdup(g->dir);
	g->cfg.meta_ttl = meta_ttl;
	g->cfg.lookup_prefetch = 0; /* no READs of its own after a LOOKUP */
	g->cfg.io_threads = 1;
	strcpy(g->up.info.url.host, "127.0.0.1");
	strcpy(g->up.info.url.path, "/export");
	g->up.info.fsinfo.rtmax = 1 << 20;
	g->up.info.fsinfo.wtmax = 1 << 20;
	g->loop = loop_new();
	assert_non_null(g->loop);
	g_nans = 0;
	assert_int_equal(
	    engine_new_io(g->loop, &g->cfg, &g->up, &scripted, &g->e, err, sizeof(err)), 0);
}

static int stop(void **state)
{
	char cmd[128];

	(void)state;
	if (g == NULL)
		return 0;
	/* calls a test left unanswered end as when their client went away */
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

/* --- client calls ------------------------------------------------------------ */

static struct cfs_req *new_req(uint32_t proc)
{
	struct cfs_req *req = calloc(1, sizeof(*req));

	assert_non_null(req);
	req->magic = CFS_REQ_MAGIC;
	req->prog = NFS_PROGRAM;
	req->vers = 3;
	req->proc = proc;
	req->cred.flavor = AUTH_UNIX;
	req->cred.uid = 1000;
	req->cred.gid = 1000;
	req->t_start_us = loop_clock_us();
	/* what proto_req_free() releases: an empty argument buffer */
	req->argbuf = malloc(1);
	assert_non_null(req->argbuf);
	zdrmem_create(&req->zdr, req->argbuf, 0, ZDR_DECODE);
	return req;
}

/* Handles and names the calls point to (they outlive every call). */
static char h_dir[] = "dir-handle", h_file[] = "file-handle", h_other[] = "other-handle";
static char n_a[] = "a", n_b[] = "b";

static nfs_fh3 fh_of(char *h)
{
	return (nfs_fh3){{(u_int)strlen(h), h}};
}

static void getattr(char *h)
{
	struct cfs_req *req = new_req(NFS3_GETATTR);

	req->args.getattr.object = fh_of(h);
	engine_submit(req, g->e);
}

static void lookup(char *dir, char *name)
{
	struct cfs_req *req = new_req(NFS3_LOOKUP);

	req->args.lookup.what.dir = fh_of(dir);
	req->args.lookup.what.name = name;
	engine_submit(req, g->e);
}

static char g_wdata[] = "new bytes";

static void write_file(char *h)
{
	struct cfs_req *req = new_req(NFS3_WRITE);

	req->args.write.file = fh_of(h);
	req->args.write.count = sizeof(g_wdata);
	req->args.write.stable = FILE_SYNC;
	req->args.write.data.data_len = sizeof(g_wdata);
	req->args.write.data.data_val = g_wdata;
	engine_submit(req, g->e);
}

static void read_file(char *h)
{
	struct cfs_req *req = new_req(NFS3_READ);

	req->args.read.file = fh_of(h);
	req->args.read.count = 4096;
	engine_submit(req, g->e);
}

/* set_size: a SETATTR that truncates; else one that changes the mode */
static void setattr(char *h, int set_size)
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

static void remove_name(char *dir, char *name)
{
	struct cfs_req *req = new_req(NFS3_REMOVE);

	req->args.remove.object.dir = fh_of(dir);
	req->args.remove.object.name = name;
	engine_submit(req, g->e);
}

static void rename_name(char *dir, char *from, char *to)
{
	struct cfs_req *req = new_req(NFS3_RENAME);

	req->args.rename.from.dir = fh_of(dir);
	req->args.rename.from.name = from;
	req->args.rename.to.dir = fh_of(dir);
	req->args.rename.to.name = to;
	engine_submit(req, g->e);
}

/* --- upstream answers --------------------------------------------------------- */

static fattr3 attrs(uint64_t fileid, ftype3 type, uint64_t size, uint32_t mtime, uint32_t ctime)
{
	fattr3 a;

	memset(&a, 0, sizeof(a));
	a.type = type;
	a.mode = type == NF3DIR ? 0755 : 0644;
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

/* The oldest call not answered yet: it must be proc. */
static struct call *next_call(uint32_t proc)
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

/* The oldest waiting call is proc: the engine forwarded it. It ends
 * unanswered (as when its client went away). */
static void forwarded(uint32_t proc)
{
	struct call *c = next_call(proc);

	c->cb(-ECANCELED, NULL, c->priv);
}

static int calls_waiting(void)
{
	int n = 0;

	for (int i = 0; i < g->up.ncalls; i++)
		n += !g->up.calls[i].answered;
	return n;
}

static void answer_getattr(const fattr3 *a)
{
	struct call *c = next_call(NFS3_GETATTR);
	GETATTR3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.GETATTR3res_u.resok.obj_attributes = *a;
	c->cb(0, &res, c->priv);
}

static void answer_lookup(char *child, const fattr3 *a)
{
	struct call *c = next_call(NFS3_LOOKUP);
	LOOKUP3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.LOOKUP3res_u.resok.object = fh_of(child);
	res.LOOKUP3res_u.resok.obj_attributes.attributes_follow = 1;
	res.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes = *a;
	res.LOOKUP3res_u.resok.dir_attributes.attributes_follow = 1;
	res.LOOKUP3res_u.resok.dir_attributes.post_op_attr_u.attributes = DIR_ATTRS;
	c->cb(0, &res, c->priv);
}

/* The answer to a call whose result is a status and wcc data (WRITE,
 * SETATTR, REMOVE, RENAME): their failure arms are all wcc_data, and so
 * is SETATTR's and REMOVE's success arm; WRITE's and RENAME's success
 * arms start with theirs. Attributes after: none. */
static void answer_status(uint32_t proc, nfsstat3 st)
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

static struct answer *last_answer(uint32_t proc)
{
	assert_true(g_nans > 0);
	assert_int_equal(g_ans[g_nans - 1].proc, proc);
	return &g_ans[g_nans - 1];
}

static const struct engine_counters *ctr(void)
{
	return engine_counters(g->e);
}

/* --- strict and ttl answers ------------------------------------------------------ */

/* ttl mode: a GETATTR the upstream answered is answered from the metadata
 * cache the next time, with the same attributes. */
static void test_ttl_getattr_from_cache(void **state)
{
	fattr3 a = attrs(7, NF3REG, 123, 200, 200);

	(void)state;
	start(60);
	getattr(h_file);
	answer_getattr(&a);
	assert_int_equal(last_answer(NFS3_GETATTR)->status, NFS3_OK);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_GETATTR][ENGINE_MISS], 1);

	getattr(h_file);
	assert_int_equal(calls_waiting(), 0); /* not asked upstream */
	assert_int_equal(g_nans, 2);
	assert_int_equal(last_answer(NFS3_GETATTR)->status, NFS3_OK);
	assert_true(last_answer(NFS3_GETATTR)->attrs.size == 123);
	assert_true(last_answer(NFS3_GETATTR)->attrs.fileid == 7);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_GETATTR][ENGINE_HIT], 1);
	assert_int_equal(ctr()->meta_hits, 1);
}

/* strict mode: every GETATTR goes upstream, and passes through. */
static void test_strict_getattr_forwarded(void **state)
{
	fattr3 a = attrs(7, NF3REG, 123, 200, 200);

	(void)state;
	start(0);
	getattr(h_file);
	answer_getattr(&a);
	getattr(h_file);
	assert_int_equal(calls_waiting(), 1);
	answer_getattr(&a);
	assert_int_equal(g_nans, 2);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_GETATTR][ENGINE_PASSTHROUGH], 2);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_GETATTR][ENGINE_HIT], 0);
	assert_int_equal(ctr()->meta_hits, 0);
}

/* ttl mode: a name the upstream resolved for this caller (who was thereby
 * allowed to search the directory) is resolved from the cache again. */
static void test_ttl_lookup_from_cache(void **state)
{
	fattr3 a = attrs(7, NF3REG, 123, 200, 200);

	(void)state;
	start(60);
	lookup(h_dir, n_a);
	answer_lookup(h_file, &a);
	assert_int_equal(last_answer(NFS3_LOOKUP)->status, NFS3_OK);

	lookup(h_dir, n_a);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(g_nans, 2);
	assert_int_equal(last_answer(NFS3_LOOKUP)->status, NFS3_OK);
	assert_true(last_answer(NFS3_LOOKUP)->attrs.fileid == 7);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_LOOKUP][ENGINE_HIT], 1);
}

static void test_strict_lookup_forwarded(void **state)
{
	fattr3 a = attrs(7, NF3REG, 123, 200, 200);

	(void)state;
	start(0);
	lookup(h_dir, n_a);
	answer_lookup(h_file, &a);
	lookup(h_dir, n_a);
	assert_int_equal(calls_waiting(), 1);
	answer_lookup(h_file, &a);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_LOOKUP][ENGINE_PASSTHROUGH], 2);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_LOOKUP][ENGINE_HIT], 0);
}

/* --- writer state ------------------------------------------------------------------ */

/* A file with cached bytes (inline in the store) under attributes a. */
static void seed_data(char *h, const fattr3 *a)
{
	static const char bytes[] = "cached bytes";

	assert_int_equal(
	    store_inline_put(engine_store(g->e), h, (uint32_t)strlen(h), a, bytes, sizeof(bytes)),
	    0);
}

static int has_data(char *h)
{
	struct store_obj o;
	char buf[64];
	uint32_t n;

	return store_inline_get(engine_store(g->e), h, (uint32_t)strlen(h), &o, buf, sizeof(buf),
	                        &n) == 0;
}

/* A WRITE the server made drops the file's data and stops caching it: the
 * next READ goes upstream as it came. */
static void test_write_starts_writer(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(0);
	seed_data(h_file, &a);
	write_file(h_file);
	answer_status(NFS3_WRITE, NFS3_OK);
	assert_int_equal(last_answer(NFS3_WRITE)->status, NFS3_OK);
	assert_int_equal(ctr()->writer_starts, 1);
	assert_false(has_data(h_file));
	assert_int_equal(ctr()->data_drops, 1);

	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	forwarded(NFS3_READ);
	assert_int_equal(ctr()->writer_passthrough, 1);
	assert_int_equal(ctr()->read_passthrough, 1);
}

/* A WRITE the server refused changes nothing: no user may turn caching of
 * anyone's file off by asking. */
static void test_refused_write_no_writer(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(0);
	seed_data(h_file, &a);
	write_file(h_file);
	answer_status(NFS3_WRITE, NFS3ERR_ACCES);
	assert_int_equal(last_answer(NFS3_WRITE)->status, NFS3ERR_ACCES);
	assert_int_equal(ctr()->writer_starts, 0);
	assert_true(has_data(h_file));
	assert_int_equal(ctr()->data_drops, 0);
}

/* A SETATTR is a writer when it changes the size, not otherwise. */
static void test_setattr_size_writer(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(0);
	seed_data(h_file, &a);
	setattr(h_file, 0);
	answer_status(NFS3_SETATTR, NFS3_OK);
	assert_int_equal(ctr()->writer_starts, 0);
	assert_true(has_data(h_file));
	setattr(h_file, 1);
	answer_status(NFS3_SETATTR, NFS3_OK);
	assert_int_equal(ctr()->writer_starts, 1);
	assert_false(has_data(h_file));
}

/* --- attribute-driven data drops ------------------------------------------------------ */

/* Attributes equal to those the data was stored under keep it; a newer
 * mtime drops it. */
static void test_new_mtime_drops_data(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);
	fattr3 b = attrs(7, NF3REG, 13, 201, 201);

	(void)state;
	start(0);
	seed_data(h_file, &a);
	getattr(h_file);
	answer_getattr(&a);
	assert_true(has_data(h_file));
	assert_int_equal(ctr()->data_drops, 0);
	getattr(h_file);
	answer_getattr(&b);
	assert_false(has_data(h_file));
	assert_int_equal(ctr()->data_drops, 1);
	assert_true(last_answer(NFS3_GETATTR)->attrs.mtime.seconds == 201);
}

static void test_new_size_drops_data(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);
	fattr3 b = attrs(7, NF3REG, 14, 200, 201);

	(void)state;
	start(0);
	seed_data(h_file, &a);
	lookup(h_dir, n_a); /* attributes of a LOOKUP's object count too */
	answer_lookup(h_file, &b);
	assert_false(has_data(h_file));
	assert_int_equal(ctr()->data_drops, 1);
}

/* Replies of calls in flight together come in any order: attributes with
 * an older ctime than those just learned are older news, and drop
 * nothing. */
static void test_older_attrs_ignored(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);
	fattr3 old = attrs(7, NF3REG, 12, 190, 190);

	(void)state;
	start(0);
	seed_data(h_file, &a);
	getattr(h_file);
	getattr(h_file);
	answer_getattr(&a);
	answer_getattr(&old);
	assert_true(has_data(h_file));
	assert_int_equal(ctr()->data_drops, 0);
}

/* --- invalidation after mutating procedures (ttl mode) --------------------------------- */

/* dir/name resolved to child, and child's attributes, both in the cache. */
static void known(char *name, char *child, uint64_t fileid)
{
	fattr3 a = attrs(fileid, NF3REG, 13, 200, 200);
	int n = g_nans;

	lookup(h_dir, name);
	answer_lookup(child, &a);
	getattr(child);
	assert_int_equal(calls_waiting(), 0); /* from the cache */
	assert_int_equal(g_nans, n + 2);
}

/* A REMOVE forgets the name and the attributes of what it pointed to (its
 * link count and ctime changed), without asking the upstream which that
 * was: the cache knew. */
static void test_remove_invalidates(void **state)
{
	(void)state;
	start(60);
	known(n_a, h_file, 7);
	remove_name(h_dir, n_a);
	answer_status(NFS3_REMOVE, NFS3_OK); /* the only call: no LOOKUP first */
	assert_int_equal(last_answer(NFS3_REMOVE)->status, NFS3_OK);

	getattr(h_file);
	assert_int_equal(calls_waiting(), 1);
	fattr3 now = attrs(7, NF3REG, 13, 200, 201);
	answer_getattr(&now);
	/* its attributes are known again; the name is not */
	lookup(h_dir, n_a);
	assert_int_equal(calls_waiting(), 1);
	forwarded(NFS3_LOOKUP);
}

/* A RENAME forgets both names, both objects' attributes, and the
 * directory's attributes. */
static void test_rename_invalidates(void **state)
{
	(void)state;
	start(60);
	known(n_a, h_file, 7);
	known(n_b, h_other, 8);
	getattr(h_dir); /* the LOOKUPs brought the directory's attributes */
	assert_int_equal(calls_waiting(), 0);
	rename_name(h_dir, n_a, n_b);
	answer_status(NFS3_RENAME, NFS3_OK);

	char *asked[] = {h_file, h_other, h_dir};
	for (size_t i = 0; i < 3; i++) {
		/* the directory's as before: the caller's evidence for
		 * searching it stays valid, only the names can send the
		 * LOOKUPs upstream */
		fattr3 now = i == 2 ? DIR_ATTRS : attrs(7 + i, NF3REG, 13, 200, 201);

		getattr(asked[i]);
		assert_int_equal(calls_waiting(), 1);
		answer_getattr(&now);
	}
	/* all attributes are known again; neither name is */
	lookup(h_dir, n_a);
	forwarded(NFS3_LOOKUP);
	lookup(h_dir, n_b);
	forwarded(NFS3_LOOKUP);
	assert_int_equal(calls_waiting(), 0);
}

/* A SETATTR forgets the object's attributes; the name stays. */
static void test_setattr_invalidates(void **state)
{
	(void)state;
	start(60);
	known(n_a, h_file, 7);
	setattr(h_file, 0);
	answer_status(NFS3_SETATTR, NFS3_OK);
	getattr(h_file);
	assert_int_equal(calls_waiting(), 1);
	forwarded(NFS3_GETATTR);
	assert_int_equal(ctr()->writer_starts, 0);
}

/* A REMOVE the server refused still forgot what it would have made stale
 * (before it was sent): the next answers come from the upstream. */
static void test_refused_remove_forgets(void **state)
{
	(void)state;
	start(60);
	known(n_a, h_file, 7);
	remove_name(h_dir, n_a);
	answer_status(NFS3_REMOVE, NFS3ERR_ACCES);
	assert_int_equal(last_answer(NFS3_REMOVE)->status, NFS3ERR_ACCES);
	lookup(h_dir, n_a);
	assert_int_equal(calls_waiting(), 1);
	forwarded(NFS3_LOOKUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_ttl_getattr_from_cache, stop),
	    cmocka_unit_test_teardown(test_strict_getattr_forwarded, stop),
	    cmocka_unit_test_teardown(test_ttl_lookup_from_cache, stop),
	    cmocka_unit_test_teardown(test_strict_lookup_forwarded, stop),
	    cmocka_unit_test_teardown(test_write_starts_writer, stop),
	    cmocka_unit_test_teardown(test_refused_write_no_writer, stop),
	    cmocka_unit_test_teardown(test_setattr_size_writer, stop),
	    cmocka_unit_test_teardown(test_new_mtime_drops_data, stop),
	    cmocka_unit_test_teardown(test_new_size_drops_data, stop),
	    cmocka_unit_test_teardown(test_older_attrs_ignored, stop),
	    cmocka_unit_test_teardown(test_remove_invalidates, stop),
	    cmocka_unit_test_teardown(test_rename_invalidates, stop),
	    cmocka_unit_test_teardown(test_setattr_invalidates, stop),
	    cmocka_unit_test_teardown(test_refused_remove_forgets, stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
