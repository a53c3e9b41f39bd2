/* Fresh bytes for every READ reply (docs/coherence.md, "Fills and
 * changes"): a READ is answered from a fill, in flight or complete, only
 * when the fill began after the last change the proxy knows of for the
 * file and its attributes are the freshest known; every reply carries the
 * freshest attributes. The engine with a scripted upstream (engine_fx.h)
 * plays a filer that holds one version of a file at a time: each test
 * answers a fill that began before a change with the version from before
 * it (the filer served that READ first), and checks every READ reply the
 * clients get after the change's reply. */
#include "engine_fx.h"

/* A version of the file on the filer: its attributes and bytes. */
struct version {
	fattr3 a;
	const char *data;
	uint32_t len;
};

static struct version v_old, v_trunc, v_written, v_coarse, v_other;

static void versions(void)
{
	/* what every test starts from */
	v_old = (struct version){attrs(7, NF3REG, 13, 200, 200), "0123456789abc", 13};
	/* a SETATTR that cut it to 5 bytes */
	v_trunc = (struct version){attrs(7, NF3REG, 5, 201, 201), "01234", 5};
	/* a WRITE of g_wdata ("new bytes" and a NUL) at 0 */
	v_written = (struct version){attrs(7, NF3REG, 13, 202, 202), "new bytes\0abc", 13};
	/* the same WRITE on a filer with 1-second timestamps, in the same
	 * second: the attributes do not move */
	v_coarse = (struct version){v_old.a, "new bytes\0abc", 13};
	/* changed on the filer by someone else (not through the proxy) */
	v_other = (struct version){attrs(7, NF3REG, 13, 203, 203), "ZYXWVUTSRQPON", 13};
}

/* An engine in strict mode with write_quiesce q (0: cache as soon as
 * writes stop). */
static void start_q(int q)
{
	versions();
	fx_new(0);
	g->cfg.write_quiesce = q;
	start_cfg();
}

/* The i-th upstream call, which must be proc and waiting: taken. */
static struct call *take(int i, uint32_t proc)
{
	struct call *c = &g->up.calls[i];

	assert_true(i < g->up.ncalls);
	assert_int_equal(c->proc, proc);
	assert_false(c->answered);
	c->answered = 1;
	return c;
}

/* Answers READ call c as the filer holding v does. */
static void read_from(struct call *c, const struct version *v)
{
	const READ3args *args = c->args;
	READ3res res;
	uint64_t off = args->offset;
	uint32_t n = off >= v->len ? 0 : v->len - (uint32_t)off;

	if (n > args->count)
		n = args->count;
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READ3res_u.resok.file_attributes = post(&v->a);
	res.READ3res_u.resok.count = n;
	res.READ3res_u.resok.eof = off + n >= v->len;
	res.READ3res_u.resok.data.data_len = n;
	res.READ3res_u.resok.data.data_val = (char *)v->data + (n ? off : 0);
	c->cb(0, &res, c->priv);
}

/* Every call waiting (and every call their answers bring) is answered as
 * the filer holding v does. */
static void filer_is(const struct version *v)
{
	struct call *c;

	while ((c = peek_call()) != NULL) {
		switch (c->proc) {
		case NFS3_READ:
			c->answered = 1;
			read_from(c, v);
			break;
		case NFS3_ACCESS:
			answer_access(ACCESS3_READ, &v->a);
			break;
		case NFS3_GETATTR:
			answer_getattr(&v->a);
			break;
		default:
			fail_msg("an upstream call of procedure %u", c->proc);
		}
	}
}

/* The index of the READ call waiting last (a fill's). */
static int waiting_read(void)
{
	for (int i = g->up.ncalls - 1; i >= 0; i--)
		if (!g->up.calls[i].answered && g->up.calls[i].proc == NFS3_READ)
			return i;
	fail_msg("no READ waiting upstream");
	return -1;
}

static int same_snapshot(const fattr3 *x, const fattr3 *y)
{
	return x->size == y->size && x->mtime.seconds == y->mtime.seconds &&
	       x->mtime.nseconds == y->mtime.nseconds && x->ctime.seconds == y->ctime.seconds &&
	       x->ctime.nseconds == y->ctime.nseconds;
}

/* Every READ reply from the from-th answer on is v's: its bytes from
 * offset 0 (the tests read the whole file) and its attributes. Returns
 * how many there were. */
static int reads_are(int from, const struct version *v)
{
	int n = 0;

	for (int i = from; i < g_nans; i++) {
		const struct answer *a = &g_ans[i];

		if (a->proc != NFS3_READ)
			continue;
		n++;
		assert_int_equal(a->status, NFS3_OK);
		assert_true(a->has_attrs);
		if (!same_snapshot(&a->attrs, &v->a))
			fail_msg("READ reply %d: size %llu ctime %u, the freshest known is size %llu "
			         "ctime %u",
			         i, (unsigned long long)a->attrs.size, a->attrs.ctime.seconds,
			         (unsigned long long)v->a.size, v->a.ctime.seconds);
		assert_int_equal(a->len, v->len);
		assert_memory_equal(a->data, v->data, v->len);
		assert_true(a->eof);
	}
	return n;
}

/* --- the changes ------------------------------------------------------------ */

enum change {
	CH_SETATTR_SIZE, /* a second client's truncate through the proxy */
	CH_WRITE,	 /* ... WRITE */
	CH_WRITE_COARSE, /* ... WRITE on a filer whose attributes did not move */
	CH_COMMIT,	 /* ... COMMIT after an UNSTABLE WRITE, attributes unmoved */
	CH_ATTRS,	 /* newer attributes from the filer in another client's GETATTR */
	CH_LOCK,	 /* a lock granted: the revalidation's GETATTR, attributes unmoved */
};

static void reval_done(int status, void *priv)
{
	*(int *)priv = status == 0 ? 1 : -1;
}

static const struct version *change_now(enum change ch);

/* A second client (uid 2000) makes change ch through the proxy, or the
 * proxy learns of it, and the filer answers it at once, while the READs
 * already with it wait (engine_fx.h answers the oldest call of a kind):
 * returns the version the filer holds after it. */
static const struct version *change(enum change ch)
{
	int aside[MAX_CALLS], n = 0;
	const struct version *v;

	for (int i = 0; i < g->up.ncalls; i++)
		if (!g->up.calls[i].answered && g->up.calls[i].proc == NFS3_READ) {
			g->up.calls[i].answered = 1;
			aside[n++] = i;
		}
	v = change_now(ch);
	for (int i = 0; i < n; i++)
		g->up.calls[aside[i]].answered = 0;
	return v;
}

static const struct version *change_now(enum change ch)
{
	struct cfs_req *req;
	static int revalidated;
	struct cfs_cred cred = {.flavor = AUTH_UNIX, .uid = 2000, .gid = 1000};
	uint32_t uid = g_uid;

	g_uid = 2000;
	switch (ch) {
	case CH_SETATTR_SIZE:
		req = new_req(NFS3_SETATTR);
		req->args.setattr.object = fh_of(h_file);
		req->args.setattr.new_attributes.size.set_it = 1;
		req->args.setattr.new_attributes.size.set_size3_u.size = v_trunc.len;
		engine_submit(req, g->e);
		answer_after(NFS3_SETATTR, &v_trunc.a);
		g_uid = uid;
		return &v_trunc;
	case CH_WRITE:
		write_file(h_file);
		answer_after(NFS3_WRITE, &v_written.a);
		g_uid = uid;
		return &v_written;
	case CH_WRITE_COARSE:
		write_file(h_file);
		answer_after(NFS3_WRITE, &v_coarse.a);
		g_uid = uid;
		return &v_coarse;
	case CH_COMMIT:
		commit_file(h_file);
		answer_after(NFS3_COMMIT, &v_coarse.a);
		g_uid = uid;
		return &v_coarse;
	case CH_ATTRS:
		getattr(h_file);
		answer_getattr(&v_other.a);
		g_uid = uid;
		return &v_other;
	case CH_LOCK:
		revalidated = 0;
		assert_int_equal(engine_revalidate(g->e, h_file, (uint32_t)strlen(h_file), &cred,
		                                   reval_done, &revalidated),
		                 0);
		answer_getattr(&v_coarse.a);
		assert_int_equal(revalidated, 1);
		g_uid = uid;
		return &v_coarse;
	}
	fail();
	return NULL;
}

/* The client knows the file (a GETATTR through the proxy, as at open). */
static void opened(void)
{
	getattr(h_file);
	answer_getattr(&v_old.a);
}

/* --- fill started before the change ----------------------------------------- */

/* Client A's READ starts a fill; the change is answered while the fill's
 * READ is with the filer, which served it before the change; its reply
 * reaches the proxy after the change's. A's READ and a READ of A's after
 * the change get the new version (bytes and attributes), never the old. */
static void fill_before_reply_after(enum change ch, int quiesce)
{
	const struct version *now;
	int fill, mark;

	start_q(quiesce);
	opened();
	read_file(h_file);
	fill = waiting_read();
	now = change(ch);
	mark = g_nans;
	read_file(h_file); /* after the change: may not join the fill */
	read_from(take(fill, NFS3_READ), &v_old);
	filer_is(now);
	assert_int_equal(reads_are(mark, now), 2);
	/* and what the cache keeps is the new version */
	mark = g_nans;
	read_file(h_file);
	filer_is(now);
	assert_int_equal(reads_are(mark, now), 1);
}

static void test_setattr_during_fill(void **state)
{
	(void)state;
	fill_before_reply_after(CH_SETATTR_SIZE, 0);
}

static void test_setattr_during_fill_quiesce(void **state)
{
	(void)state;
	fill_before_reply_after(CH_SETATTR_SIZE, 30);
}

static void test_write_during_fill(void **state)
{
	(void)state;
	fill_before_reply_after(CH_WRITE, 0);
}

static void test_write_during_fill_quiesce(void **state)
{
	(void)state;
	fill_before_reply_after(CH_WRITE, 30);
}

/* The WRITE's attributes equal the old ones (1-second timestamps): only
 * the change itself says the fill is older. */
static void test_coarse_write_during_fill(void **state)
{
	(void)state;
	fill_before_reply_after(CH_WRITE_COARSE, 0);
}

static void test_commit_during_fill(void **state)
{
	(void)state;
	fill_before_reply_after(CH_COMMIT, 0);
	assert_true(ctr()->fill_outdated >= 1);
}

/* Newer attributes in another client's reply: the fill's older bytes are
 * neither served nor stored. */
static void test_newer_attrs_during_fill(void **state)
{
	(void)state;
	fill_before_reply_after(CH_ATTRS, 0);
	assert_true(ctr()->fill_outdated >= 1);
}

/* A lock granted through the proxy while the fill runs: the data read
 * under the lock is the filer's after the grant. */
static void test_lock_during_fill(void **state)
{
	(void)state;
	fill_before_reply_after(CH_LOCK, 0);
}

/* The fill's reply reaches the proxy before the change's: A's READ gets
 * the old version (nothing newer was known then); after the change, the
 * complete chunk and what was stored of it are not served. */
static void fill_before_reply_before(enum change ch)
{
	const struct version *now;
	int mark;

	start_q(0);
	opened();
	read_file(h_file);
	mark = g_nans;
	filer_is(&v_old);
	assert_int_equal(reads_are(mark, &v_old), 1);
	now = change(ch);
	mark = g_nans;
	read_file(h_file);
	filer_is(now);
	read_file(h_file);
	filer_is(now);
	assert_int_equal(reads_are(mark, now), 2);
}

static void test_setattr_after_fill(void **state)
{
	(void)state;
	fill_before_reply_before(CH_SETATTR_SIZE);
}

static void test_write_after_fill(void **state)
{
	(void)state;
	fill_before_reply_before(CH_WRITE);
}

static void test_coarse_write_after_fill(void **state)
{
	(void)state;
	fill_before_reply_before(CH_WRITE_COARSE);
}

static void test_newer_attrs_after_fill(void **state)
{
	(void)state;
	fill_before_reply_before(CH_ATTRS);
}

/* --- fill started after the change -------------------------------------------- */

/* A fill that begins after the change is served (with write_quiesce 0),
 * its bytes and attributes the new version's, and is cached. */
static void fill_after(enum change ch)
{
	const struct version *now;
	int mark;

	start_q(0);
	opened();
	now = change(ch);
	mark = g_nans;
	read_file(h_file);
	filer_is(now);
	assert_int_equal(ctr()->read_misses, 1); /* from its fill */
	assert_int_equal(ctr()->read_passthrough, 0);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 0); /* from the cache */
	assert_int_equal(reads_are(mark, now), 2);
	assert_int_equal(ctr()->fill_outdated, 0);
}

static void test_fill_after_setattr(void **state)
{
	(void)state;
	fill_after(CH_SETATTR_SIZE);
}

static void test_fill_after_write(void **state)
{
	(void)state;
	fill_after(CH_WRITE);
}

static void test_fill_after_newer_attrs(void **state)
{
	(void)state;
	fill_after(CH_ATTRS);
}

/* The fill's own reply is the first to say the file changed on the filer:
 * its bytes are of the version it describes, served and cached. */
static void test_fill_brings_newer_attrs(void **state)
{
	int mark;

	(void)state;
	start_q(0);
	opened();
	mark = g_nans;
	read_file(h_file);
	filer_is(&v_other);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(reads_are(mark, &v_other), 2);
	assert_int_equal(ctr()->read_passthrough, 0);
}

/* --- answers before the chunk is complete ---------------------------------------- */

#define BIG 10000u
static char g_big_old[BIG], g_big_new[BIG];

/* An upstream that reads at most 4 KiB: a 10000-byte file is one chunk of
 * three READs, and a READ of its first 4 KiB may be answered as soon as
 * the first is in. Its first 4 KiB change through the proxy while the
 * fill runs (their attributes do not move: only the change says so). */
static void test_early_answer_after_change(void **state)
{
	fattr3 a = attrs(7, NF3REG, BIG, 200, 200);
	struct version old = {a, g_big_old, BIG}, now = {a, g_big_new, BIG};
	int first, mark;

	(void)state;
	for (uint32_t i = 0; i < BIG; i++)
		g_big_old[i] = g_big_new[i] = (char)('a' + i % 23);
	memcpy(g_big_new, g_wdata, sizeof(g_wdata));
	versions();
	fx_new(0);
	g->cfg.write_quiesce = 0;
	g->up.info.fsinfo.rtmax = 4096;
	start_cfg();
	getattr(h_file);
	answer_getattr(&a);
	read_at(h_file, 0, 4096);
	assert_int_equal(calls_waiting(), 3);
	first = g->up.ncalls - 3;
	{
		/* the fill's READs wait with the filer (engine_fx.h answers the
		 * oldest call of a kind) */
		for (int i = first; i < first + 3; i++)
			g->up.calls[i].answered = 1;
		write_file(h_file);
		answer_after(NFS3_WRITE, &a);
		for (int i = first; i < first + 3; i++)
			g->up.calls[i].answered = 0;
	}
	mark = g_nans;
	read_from(take(first, NFS3_READ), &old); /* the filer read it before */
	filer_is(&now);
	assert_int_equal(ctr()->fill_early, 0); /* not from the old fill */
	read_at(h_file, 0, 4096);               /* a new fill, which may answer early */
	filer_is(&now);
	for (int i = mark; i < g_nans; i++) {
		assert_int_equal(g_ans[i].proc, NFS3_READ);
		assert_int_equal(g_ans[i].len, 4096);
		assert_memory_equal(g_ans[i].data, g_big_new, 4096);
	}
	assert_int_equal(g_nans - mark, 2);
}

/* --- readahead ------------------------------------------------------------------ */

#define RA_LEN (256u << 10)
static char g_ra_old[RA_LEN], g_ra_new[RA_LEN];

/* The proxy's own readahead fills of a sequential reader (64 KiB chunks)
 * are in flight when another client's WRITE into the chunk ahead is
 * answered: when the reader gets there, it reads the new bytes, with the
 * new attributes, not the readahead's. */
static void test_readahead_fill_during_write(void **state)
{
	fattr3 a = attrs(7, NF3REG, RA_LEN, 200, 200), b = attrs(7, NF3REG, RA_LEN, 201, 201);
	struct version old = {a, g_ra_old, RA_LEN}, now = {b, g_ra_new, RA_LEN};
	struct answer *ans;
	int ra;

	(void)state;
	for (uint32_t i = 0; i < RA_LEN; i++)
		g_ra_old[i] = g_ra_new[i] = (char)('A' + i % 26);
	memset(g_ra_new + 65536, 'w', 4096); /* what the WRITE put at 64 KiB */
	versions();
	fx_new(0);
	g->cfg.write_quiesce = 0;
	g->cfg.inline_max = 0;
	g->cfg.chunk_size = 64 << 10;
	g->cfg.readahead = 128 << 10;
	start_cfg();
	getattr(h_file);
	answer_getattr(&a);
	read_at(h_file, 0, 4096);
	filer_is(&old);
	read_at(h_file, 4096, 4096); /* sequential: fills of the chunks ahead */
	ra = calls_waiting();
	assert_true(ra >= 1);
	/* the readahead READs wait with the filer */
	int aside[MAX_CALLS], n = 0;
	for (int i = 0; i < g->up.ncalls; i++)
		if (!g->up.calls[i].answered) {
			g->up.calls[i].answered = 1;
			aside[n++] = i;
		}
	write_file(h_file);
	answer_after(NFS3_WRITE, &b);
	read_at(h_file, 65536, 4096); /* the reader gets there */
	for (int i = 0; i < g->up.ncalls; i++)
		if (!g->up.calls[i].answered && g->up.calls[i].proc == NFS3_ACCESS) {
			/* its READ evidence under the new attributes, first */
			struct call *c = take(i, NFS3_ACCESS);
			ACCESS3res res;

			memset(&res, 0, sizeof(res));
			res.status = NFS3_OK;
			res.ACCESS3res_u.resok.obj_attributes = post(&b);
			res.ACCESS3res_u.resok.access = ACCESS3_READ;
			c->cb(0, &res, c->priv);
		}
	for (int i = 0; i < n; i++) {
		/* the filer read them before the WRITE */
		g->up.calls[aside[i]].answered = 0;
		read_from(take(aside[i], NFS3_READ), &old);
	}
	filer_is(&now);
	ans = last_answer(NFS3_READ);
	assert_int_equal(ans->len, 4096);
	assert_memory_equal(ans->data, g_ra_new + 65536, 4096);
	assert_true(same_snapshot(&ans->attrs, &b));
	assert_int_equal(ctr()->fill_outdated, (uint64_t)ra);
}

/* --- disk loads ---------------------------------------------------------------- */

/* Runs the loop until the workers stored n chunks (or 2 s passed). */
static void stored(uint64_t n)
{
	for (int i = 0; i < 200 && ctr()->stores < n; i++)
		pass_ms(10);
	assert_true(ctr()->stores >= n);
}

/* The engine starts again on the same cache directory. */
static void restart(void)
{
	char err[256];

	engine_free(g->e);
	assert_int_equal(
	    engine_new_io(g->loop, &g->cfg, &g->up, &scripted, &g->e, err, sizeof(err)), 0);
}

/* A chunk being read from the cache disk when the file changes through
 * the proxy (same size, the attributes move) is not served: the READ that
 * waited for it gets the new bytes, with the new attributes. */
static void test_load_during_write(void **state)
{
	int mark;

	(void)state;
	versions();
	fx_new(0);
	g->cfg.write_quiesce = 0;
	g->cfg.inline_max = 0; /* chunks in a data file, read by a worker */
	g->cfg.chunk_size = 64 << 10;
	start_cfg();
	opened();
	read_file(h_file);
	filer_is(&v_old);
	stored(1);
	restart(); /* nothing of it in memory */
	opened();
	read_file(h_file);
	if (peek_call() && peek_call()->proc == NFS3_ACCESS)
		answer_access(ACCESS3_READ, &v_old.a);
	/* a load from the cache disk: the loop has not run */
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(ctr()->read_hits + ctr()->read_misses, 0);
	write_file(h_file);
	answer_after(NFS3_WRITE, &v_written.a);
	mark = g_nans;
	for (int i = 0; i < 200 && g_nans == mark && calls_waiting() == 0; i++)
		pass_ms(10); /* the load comes back */
	filer_is(&v_written);
	assert_int_equal(reads_are(mark, &v_written), 1);
	assert_int_equal(ctr()->read_passthrough, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_setattr_during_fill, stop),
	    cmocka_unit_test_teardown(test_setattr_during_fill_quiesce, stop),
	    cmocka_unit_test_teardown(test_write_during_fill, stop),
	    cmocka_unit_test_teardown(test_write_during_fill_quiesce, stop),
	    cmocka_unit_test_teardown(test_coarse_write_during_fill, stop),
	    cmocka_unit_test_teardown(test_commit_during_fill, stop),
	    cmocka_unit_test_teardown(test_newer_attrs_during_fill, stop),
	    cmocka_unit_test_teardown(test_lock_during_fill, stop),
	    cmocka_unit_test_teardown(test_setattr_after_fill, stop),
	    cmocka_unit_test_teardown(test_write_after_fill, stop),
	    cmocka_unit_test_teardown(test_coarse_write_after_fill, stop),
	    cmocka_unit_test_teardown(test_newer_attrs_after_fill, stop),
	    cmocka_unit_test_teardown(test_fill_after_setattr, stop),
	    cmocka_unit_test_teardown(test_fill_after_write, stop),
	    cmocka_unit_test_teardown(test_fill_after_newer_attrs, stop),
	    cmocka_unit_test_teardown(test_fill_brings_newer_attrs, stop),
	    cmocka_unit_test_teardown(test_early_answer_after_change, stop),
	    cmocka_unit_test_teardown(test_readahead_fill_during_write, stop),
	    cmocka_unit_test_teardown(test_load_during_write, stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
