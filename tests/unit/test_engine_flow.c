/* The engine's decisions with a scripted upstream (engine_fx.h): strict
 * and ttl answers, writer state, attribute-driven data drops, and what the
 * metadata cache forgets after each call that changes something. */
#include "engine_fx.h"

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

/* ttl mode: a name is resolved from the cache only for a credential the
 * server let search the directory. */
static void test_ttl_lookup_other_credential(void **state)
{
	fattr3 a = attrs(7, NF3REG, 123, 200, 200);

	(void)state;
	start(60);
	lookup(h_dir, n_a);
	answer_lookup(h_file, &a);
	g_uid = 2000;
	lookup(h_dir, n_a);
	assert_int_equal(calls_waiting(), 1);
	answer_lookup(h_file, &a);
	lookup(h_dir, n_a); /* now its own */
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_LOOKUP)->status, NFS3_OK);
	assert_int_equal(ctr()->meta_no_evidence, 1);
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

/* The server answered ACCESS(READ | MODIFY) granting READ, and the proxy
 * answered one such call since: asking fewer bits gets the same answer
 * from the proxy (MODIFY: not granted); bits the server was not asked, or
 * another credential, go upstream. */
static void access_fewer_then_more(void)
{
	access_of(h_file, ACCESS3_MODIFY);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_ACCESS)->access, 0);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_ACCESS][ENGINE_HIT], 2);
	access_of(h_file, ACCESS3_READ | ACCESS3_EXECUTE);
	forwarded(NFS3_ACCESS);
	g_uid = 2000;
	access_of(h_file, ACCESS3_READ);
	forwarded(NFS3_ACCESS);
}

/* ttl mode: an ACCESS the server answered is answered from the cache to
 * the same credential asking no more bits; more bits, or another
 * credential, go upstream. */
static void test_ttl_access_from_cache(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(60);
	access_of(h_file, ACCESS3_READ | ACCESS3_MODIFY);
	answer_access(ACCESS3_READ, &a);
	assert_int_equal(last_answer(NFS3_ACCESS)->access, ACCESS3_READ);
	access_of(h_file, ACCESS3_READ | ACCESS3_MODIFY);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_ACCESS)->status, NFS3_OK);
	assert_int_equal(last_answer(NFS3_ACCESS)->access, ACCESS3_READ);
	access_fewer_then_more();
}

/* ttl mode, access_prefetch: a listing the upstream answered makes the
 * engine ask ACCESS for its entries, as the caller that listed them; the
 * answer then answers that caller's ACCESS, never another's. A listing
 * whose entries are known asks nothing; with the key at 0 nothing is
 * asked. */
static void test_ttl_access_ahead(void **state)
{
	fattr3 dir = DIR_ATTRS, fa = attrs(7, NF3REG, 13, 200, 200);
	struct call *c;

	(void)state;
	fx_new(60);
	g->cfg.access_prefetch = 4;
	start_cfg();
	readdirplus_of(h_dir);
	answer_readdirplus(&dir, &fa);
	assert_int_equal(last_answer(NFS3_READDIRPLUS)->status, NFS3_OK);
	/* the client has its listing; the ACCESS ahead is the engine's */
	c = peek_call();
	assert_non_null(c);
	assert_int_equal(c->proc, NFS3_ACCESS);
	assert_int_equal(c->cred.uid, 1000);
	assert_memory_equal(((ACCESS3args *)c->args)->object.data.data_val, h_file, strlen(h_file));
	assert_int_equal(((ACCESS3args *)c->args)->access & ACCESS3_READ, ACCESS3_READ);
	assert_int_equal(ctr()->access_prefetches, 1);
	answer_access(ACCESS3_READ | ACCESS3_EXECUTE, &fa);
	assert_int_equal(g->e->access_ahead_inflight, 0);
	/* the opener's ACCESS is answered here, with the server's bits */
	access_of(h_file, ACCESS3_READ | ACCESS3_MODIFY);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_ACCESS)->access, ACCESS3_READ);
	/* the same listing again (from the cache): all known, nothing asked */
	readdirplus_of(h_dir);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(ctr()->access_prefetches, 1);
	/* another uid has no answer of its own: the server is asked */
	g_uid = 2000;
	access_of(h_file, ACCESS3_READ);
	forwarded(NFS3_ACCESS);
	stop(NULL);

	fx_new(60); /* access_prefetch 0: off */
	start_cfg();
	readdirplus_of(h_dir);
	answer_readdirplus(&dir, &fa);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(ctr()->access_prefetches, 0);
}

/* access_prefetch 1: a listing of three files has one ACCESS in flight at
 * a time, the others queued in the order listed; one the client asked
 * itself meanwhile is not asked again. */
static void test_ttl_access_ahead_queued(void **state)
{
	fattr3 dir = DIR_ATTRS, fa = attrs(7, NF3REG, 13, 200, 200);
	fattr3 fb = attrs(8, NF3REG, 14, 200, 200), fc = attrs(9, NF3REG, 15, 200, 200);
	struct call *c;
	entryplus3 ent[3];
	char *hs[3] = {h_file, h_other, h_dir};
	char *ns[3] = {n_a, n_b, n_c};
	fattr3 *as[3] = {&fa, &fb, &fc};
	READDIRPLUS3res res;

	(void)state;
	fx_new(60);
	g->cfg.access_prefetch = 1;
	start_cfg();
	readdirplus_of(h_dir);
	memset(ent, 0, sizeof(ent));
	for (int i = 0; i < 3; i++) {
		ent[i].fileid = as[i]->fileid;
		ent[i].name = ns[i];
		ent[i].cookie = (uint64_t)i + 1;
		ent[i].name_attributes = post(as[i]);
		ent[i].name_handle.handle_follows = 1;
		ent[i].name_handle.post_op_fh3_u.handle = fh_of(hs[i]);
		ent[i].nextentry = i < 2 ? &ent[i + 1] : NULL;
	}
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READDIRPLUS3res_u.resok.dir_attributes = post(&dir);
	res.READDIRPLUS3res_u.resok.reply.entries = ent;
	res.READDIRPLUS3res_u.resok.reply.eof = 1;
	c = next_call(NFS3_READDIRPLUS);
	c->cb(0, &res, c->priv);
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(g->e->ahead_queued, 2);
	answer_access(ACCESS3_READ, &fa); /* a's: then b's goes out */
	assert_int_equal(calls_waiting(), 1);
	c = peek_call();
	assert_memory_equal(((ACCESS3args *)c->args)->object.data.data_val, h_other,
	                    strlen(h_other));
	/* c's answer comes from the client's own ACCESS meanwhile */
	access_of(h_dir, ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
	                     ACCESS3_DELETE | ACCESS3_EXECUTE);
	assert_int_equal(calls_waiting(), 2);
	c = &g->up.calls[g->up.ncalls - 1];
	assert_int_equal(c->proc, NFS3_ACCESS);
	c->answered = 1;
	{
		ACCESS3res ar;
		memset(&ar, 0, sizeof(ar));
		ar.status = NFS3_OK;
		ar.ACCESS3res_u.resok.obj_attributes = post(&fc);
		ar.ACCESS3res_u.resok.access = ACCESS3_READ;
		c->cb(0, &ar, c->priv);
	}
	answer_access(ACCESS3_READ, &fb); /* b's: c is known, nothing more */
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(g->e->ahead_queued, 0);
	assert_int_equal(ctr()->access_prefetches, 2);
}

static void test_strict_access_forwarded(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(0);
	access_of(h_file, ACCESS3_READ);
	answer_access(ACCESS3_READ, &a);
	access_of(h_file, ACCESS3_READ);
	assert_int_equal(calls_waiting(), 1);
	answer_access(ACCESS3_READ, &a);
	assert_int_equal(last_answer(NFS3_ACCESS)->access, ACCESS3_READ);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_ACCESS][ENGINE_PASSTHROUGH], 2);
}

/* strict mode (strict_access_reuse): an open's ACCESS is answered with the
 * server's earlier ACCESS answer when the server's GETATTR of this
 * revalidation shows ctime, mode, owner and group unchanged; the reply
 * carries those fresh attributes and only the bits granted among those
 * asked. */
static void test_strict_access_reused(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200), fresh = a;

	(void)state;
	start(0);
	getattr(h_file);
	answer_getattr(&a);
	access_of(h_file, ACCESS3_READ | ACCESS3_MODIFY);
	answer_access(ACCESS3_READ, &a);
	/* the next open: GETATTR answered by the server, then ACCESS */
	fresh.atime.seconds = 300; /* read since: not what ACCESS depends on */
	getattr(h_file);
	answer_getattr(&fresh);
	access_of(h_file, ACCESS3_READ);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_ACCESS)->status, NFS3_OK);
	assert_int_equal(last_answer(NFS3_ACCESS)->access, ACCESS3_READ);
	assert_true(last_answer(NFS3_ACCESS)->attrs.atime.seconds == 300);
	access_fewer_then_more();
	assert_int_equal(ctr()->strict_access_reused, 2);
	assert_int_equal(ctr()->meta_hits, 0); /* strict mode keeps no metadata answers */
}

/* The revalidation must show nothing changed: a chmod (new ctime), a
 * chown under the same ctime (a coarse server clock), no GETATTR of the
 * server within the window, or the switch off, and ACCESS goes upstream. */
/* The next open of h_file: GETATTR (the server answers a), ACCESS(READ). */
static void reopen(const fattr3 *a)
{
	getattr(h_file);
	answer_getattr(a);
	access_of(h_file, ACCESS3_READ);
}

/* A READ of h_file answered from the cache, with no ACCESS call of the
 * proxy's own. */
static void read_served_without_check(void)
{
	int n = g_nans;

	read_file(h_file);
	for (int i = 0; i < 200 && g_nans == n; i++)
		pass_ms(1);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3_OK);
	assert_int_equal(ctr()->access_checks, 0);
}

/* Strict mode: an open of h_file under a (GETATTR, ACCESS(READ) granted),
 * both answered by the server. */
static void open_granted(const fattr3 *a)
{
	getattr(h_file);
	answer_getattr(a);
	access_of(h_file, ACCESS3_READ);
	answer_access(ACCESS3_READ, a);
}

static void test_strict_access_reuse_refused(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200), b;

	(void)state;
	start(0);
	open_granted(&a);
	/* chmod on the server: the GETATTR shows a new ctime and mode */
	b = a;
	b.mode = 0600;
	b.ctime.seconds = 201;
	reopen(&b);
	assert_int_equal(calls_waiting(), 1);
	answer_access(0, &b); /* uid 1000 owns it: refused only to show the answer passes */
	assert_int_equal(last_answer(NFS3_ACCESS)->access, 0);
	/* chown under the same ctime */
	b.uid = 1001;
	reopen(&b);
	assert_int_equal(calls_waiting(), 1);
	answer_access(0, &b);
	/* the same attributes again: now reused (the last answer: nothing) */
	reopen(&b);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_ACCESS)->access, 0);
	/* no GETATTR of the server within the window */
	pass_ms(1100);
	access_of(h_file, ACCESS3_READ);
	assert_int_equal(calls_waiting(), 1);
	answer_access(0, &b);
	/* the switch off */
	g->cfg.strict_access_reuse = 0;
	reopen(&b);
	forwarded(NFS3_ACCESS);
	assert_int_equal(ctr()->strict_access_reused, 1);
}

/* The server's ACCESS answers are kept across a restart (warm-disk): the
 * first open after it costs no ACCESS, and the answer is the evidence a
 * READ from the cache needs (no ACCESS check of its own). */
static void test_strict_access_after_restart(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);
	char err[256];

	(void)state;
	start(0);
	open_granted(&a);
	engine_free(g->e);
	assert_int_equal(
	    engine_new_io(g->loop, &g->cfg, &g->up, &scripted, &g->e, err, sizeof(err)), 0);
	seed_data(h_file, &a);
	reopen(&a);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_ACCESS)->access, ACCESS3_READ);
	assert_int_equal(ctr()->strict_access_reused, 1);
	read_served_without_check();
	assert_int_equal(ctr()->read_hits, 1);
	assert_int_equal(calls_waiting(), 0);
}

/* An answer older than evidence_ttl is still reused (strict_access_ttl
 * bounds that), and the reuse, which the server's fresh attributes just
 * confirmed, lets a READ be served from the cache without an ACCESS of the
 * proxy's own; past strict_access_ttl the server is asked again. */
static void test_strict_access_ttl(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	fx_new(0);
	g->cfg.evidence_ttl = 1;
	g->cfg.strict_access_ttl = 3;
	start_cfg();
	open_granted(&a);
	seed_data(h_file, &a);
	pass_ms(1500);
	reopen(&a);
	assert_int_equal(calls_waiting(), 0);
	read_served_without_check();
	pass_ms(2000);
	reopen(&a);
	forwarded(NFS3_ACCESS);
	assert_int_equal(ctr()->strict_access_reused, 1);
}

/* ttl mode: a READLINK answer (the server let this credential read the
 * link) is answered from the cache to it, not to another credential
 * with no evidence of its own. */
static void test_ttl_readlink_from_cache(void **state)
{
	fattr3 l = attrs(12, NF3LNK, 9, 200, 200);

	(void)state;
	start(60);
	readlink_of(h_other);
	answer_readlink(g_target, &l);
	assert_string_equal(last_answer(NFS3_READLINK)->data, g_target);
	readlink_of(h_other);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_READLINK)->status, NFS3_OK);
	assert_string_equal(last_answer(NFS3_READLINK)->data, g_target);
	assert_true(last_answer(NFS3_READLINK)->attrs.fileid == 12);
	g_uid = 2000;
	readlink_of(h_other);
	forwarded(NFS3_READLINK);
	assert_int_equal(ctr()->meta_no_evidence, 1);
}

static void test_strict_readlink_forwarded(void **state)
{
	fattr3 l = attrs(12, NF3LNK, 9, 200, 200);

	(void)state;
	start(0);
	readlink_of(h_other);
	answer_readlink(g_target, &l);
	readlink_of(h_other);
	assert_int_equal(calls_waiting(), 1);
	answer_readlink(g_target, &l);
	assert_string_equal(last_answer(NFS3_READLINK)->data, g_target);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_READLINK][ENGINE_PASSTHROUGH], 2);
}

/* ttl mode: a READDIR and a READDIRPLUS page are answered from the cache
 * the next time, with the same entries; the READDIRPLUS entry carries
 * the freshest attributes known of its object. */
static void test_ttl_readdir_from_cache(void **state)
{
	fattr3 dir = DIR_ATTRS, fa = attrs(7, NF3REG, 13, 200, 200);
	fattr3 grown = attrs(7, NF3REG, 14, 201, 201);

	(void)state;
	start(60);
	readdir_of(h_dir);
	answer_readdir(&dir);
	readdir_of(h_dir);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_READDIR)->status, NFS3_OK);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "a/b/");

	readdirplus_of(h_dir);
	answer_readdirplus(&dir, &fa);
	assert_true(last_answer(NFS3_READDIRPLUS)->entry_attrs.size == 13);
	getattr(h_file); /* the entry's attributes, from the page */
	assert_int_equal(calls_waiting(), 0);
	readdirplus_of(h_dir);
	assert_int_equal(calls_waiting(), 0);
	assert_string_equal(last_answer(NFS3_READDIRPLUS)->data, "a/");
	/* the entry's object changed (a WRITE; its reply's attributes) */
	write_file(h_file);
	answer_after(NFS3_WRITE, &grown);
	readdirplus_of(h_dir);
	assert_int_equal(calls_waiting(), 0);
	assert_true(last_answer(NFS3_READDIRPLUS)->entry_attrs.size == 14);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_READDIR][ENGINE_HIT], 1);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_READDIRPLUS][ENGINE_HIT], 2);
}

static void test_strict_readdir_forwarded(void **state)
{
	fattr3 dir = DIR_ATTRS, fa = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(0);
	readdir_of(h_dir);
	answer_readdir(&dir);
	readdir_of(h_dir);
	assert_int_equal(calls_waiting(), 1);
	answer_readdir(&dir);
	readdirplus_of(h_dir);
	answer_readdirplus(&dir, &fa);
	readdirplus_of(h_dir);
	assert_int_equal(calls_waiting(), 1);
	answer_readdirplus(&dir, &fa);
	assert_string_equal(last_answer(NFS3_READDIRPLUS)->data, "a/");
	getattr(h_file);
	assert_int_equal(calls_waiting(), 1);
	forwarded(NFS3_GETATTR);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_READDIR][ENGINE_PASSTHROUGH], 2);
	assert_int_equal(ctr()->nfs_outcomes[NFS3_READDIRPLUS][ENGINE_PASSTHROUGH], 2);
	assert_int_equal(ctr()->meta_hits, 0);
}

/* ttl mode: answers are reused only while younger than meta_ttl. */
static void test_ttl_answers_expire(void **state)
{
	fattr3 dir = DIR_ATTRS, a = attrs(7, NF3REG, 13, 200, 200);
	fattr3 l = attrs(12, NF3LNK, 9, 200, 200);

	(void)state;
	start(2); /* seconds: a loaded machine still serves round 0 in time */
	lookup(h_dir, n_a);
	answer_lookup(h_file, &a);
	access_of(h_file, ACCESS3_READ);
	answer_access(ACCESS3_READ, &a);
	readlink_of(h_other);
	answer_readlink(g_target, &l);
	readdir_of(h_dir);
	answer_readdir(&dir);
	readdirplus_of(h_dir);
	answer_readdirplus(&dir, &a);
	for (int round = 0; round < 2; round++) {
		int n = g_nans;

		getattr(h_file);
		lookup(h_dir, n_a);
		access_of(h_file, ACCESS3_READ);
		readlink_of(h_other);
		readdir_of(h_dir);
		readdirplus_of(h_dir);
		if (round == 0) {
			/* all from the cache */
			assert_int_equal(calls_waiting(), 0);
			assert_int_equal(g_nans, n + 6);
			pass_ms(2100);
		} else {
			/* all asked again */
			assert_int_equal(g_nans, n);
			forwarded(NFS3_GETATTR);
			forwarded(NFS3_LOOKUP);
			forwarded(NFS3_ACCESS);
			forwarded(NFS3_READLINK);
			forwarded(NFS3_READDIR);
			forwarded(NFS3_READDIRPLUS);
		}
	}
}

/* A "no such name" is reused for meta_neg_ttl seconds (0: never). */
static void test_negative_lookup_ttl(void **state)
{
	(void)state;
	for (int neg = 0; neg <= 5; neg += 5) {
		fx_new(60);
		g->cfg.meta_neg_ttl = neg;
		start_cfg();
		lookup(h_dir, n_c);
		answer_noent();
		assert_int_equal(last_answer(NFS3_LOOKUP)->status, NFS3ERR_NOENT);
		lookup(h_dir, n_c);
		if (neg) {
			assert_int_equal(calls_waiting(), 0);
			assert_int_equal(last_answer(NFS3_LOOKUP)->status, NFS3ERR_NOENT);
		} else {
			forwarded(NFS3_LOOKUP);
		}
		stop(NULL);
	}
}

/* --- writer state ------------------------------------------------------------------ */

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

/* A new name (CREATE, MKDIR, SYMLINK, MKNOD) forgets what the cache knew
 * of the name (here: that there was none) and the directory's listing and
 * attributes; its reply's attributes of the new object, and of the
 * directory when it carries them, are known again at once. */
static void test_make_name_invalidates(void **state)
{
	static const uint32_t procs[] = {NFS3_CREATE, NFS3_MKDIR, NFS3_SYMLINK, NFS3_MKNOD};
	static const ftype3 types[] = {NF3REG, NF3DIR, NF3LNK, NF3FIFO};

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		fattr3 obj = attrs(9, types[i], 0, 300, 300);
		fattr3 dir = DIR_ATTRS, dir_after = attrs(1, NF3DIR, 4096, 300, 300);
		int dir_said = i % 2 == 0; /* CREATE, SYMLINK: the reply has the dir's */

		start(60);
		lookup(h_dir, n_c);
		answer_noent();
		lookup(h_dir, n_c);
		assert_int_equal(calls_waiting(), 0); /* the NOENT, from the cache */
		assert_int_equal(last_answer(NFS3_LOOKUP)->status, NFS3ERR_NOENT);
		readdir_of(h_dir);
		answer_readdir(&dir);
		readdir_of(h_dir);
		assert_int_equal(calls_waiting(), 0);
		assert_string_equal(last_answer(NFS3_READDIR)->data, "a/b/");

		make_name(procs[i], h_dir, n_c);
		assert_int_equal(calls_waiting(), 1); /* no LOOKUP before it */
		answer_made(procs[i], h_new, &obj, dir_said ? &dir_after : NULL);
		assert_int_equal(last_answer(procs[i])->status, NFS3_OK);

		getattr(h_new); /* the reply said what it made */
		assert_int_equal(calls_waiting(), 0);
		assert_true(last_answer(NFS3_GETATTR)->attrs.fileid == 9);
		assert_int_equal(last_answer(NFS3_GETATTR)->attrs.type, types[i]);
		getattr(h_dir);
		if (dir_said) {
			assert_int_equal(calls_waiting(), 0);
			assert_true(last_answer(NFS3_GETATTR)->attrs.mtime.seconds == 300);
		} else {
			forwarded(NFS3_GETATTR);
		}
		/* the caller's evidence is renewed under the new ctime (its
		 * ACCESS is asked: the one the cache had was under the old) */
		access_of(h_dir, ACCESS3_READ | ACCESS3_LOOKUP);
		assert_int_equal(calls_waiting(), 1);
		answer_access(ACCESS3_READ | ACCESS3_LOOKUP, &dir_after);
		readdir_of(h_dir); /* the listing changed: not the old page */
		forwarded(NFS3_READDIR);
		lookup(h_dir, n_c); /* the reply's handle, not the NOENT */
		assert_int_equal(calls_waiting(), 0);
		assert_int_equal(last_answer(NFS3_LOOKUP)->status, NFS3_OK);
		assert_memory_equal(last_answer(NFS3_LOOKUP)->data, h_new, strlen(h_new));
		assert_true(last_answer(NFS3_LOOKUP)->attrs.fileid == 9);
		/* and removing it needs no LOOKUP first */
		if (procs[i] == NFS3_MKDIR)
			rmdir_name(h_dir, n_c);
		else
			remove_name(h_dir, n_c);
		assert_int_equal(calls_waiting(), 1);
		forwarded(procs[i] == NFS3_MKDIR ? NFS3_RMDIR : NFS3_REMOVE);
		stop(NULL);
	}
}

/* A WRITE forgets the file's attributes; those its reply carries are
 * answered from the cache (GETATTR, and the LOOKUP of its name, which
 * stays). */
static void test_write_invalidates(void **state)
{
	fattr3 b = attrs(7, NF3REG, 20, 300, 300);

	(void)state;
	start(60);
	known(n_a, h_file, 7);
	write_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	answer_after(NFS3_WRITE, &b);
	assert_int_equal(last_answer(NFS3_WRITE)->status, NFS3_OK);
	getattr(h_file);
	assert_int_equal(calls_waiting(), 0);
	assert_true(last_answer(NFS3_GETATTR)->attrs.size == 20);
	lookup(h_dir, n_a);
	assert_int_equal(calls_waiting(), 0);
	assert_true(last_answer(NFS3_LOOKUP)->attrs.size == 20);

	/* a reply without attributes: the next GETATTR asks */
	write_file(h_file);
	answer_status(NFS3_WRITE, NFS3_OK);
	getattr(h_file);
	forwarded(NFS3_GETATTR);
	lookup(h_dir, n_a); /* the object's attributes must be fresh too */
	forwarded(NFS3_LOOKUP);
}

/* A COMMIT forgets the file's attributes too, but is no writer: data
 * cached under attributes it does not change stays. */
static void test_commit_invalidates(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(60);
	known(n_a, h_file, 7);
	seed_data(h_file, &a);
	commit_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	answer_status(NFS3_COMMIT, NFS3_OK);
	assert_int_equal(last_answer(NFS3_COMMIT)->status, NFS3_OK);
	getattr(h_file);
	assert_int_equal(calls_waiting(), 1);
	answer_getattr(&a);
	assert_int_equal(ctr()->writer_starts, 0);
	assert_true(has_data(h_file));

	commit_file(h_file);
	answer_after(NFS3_COMMIT, &a);
	getattr(h_file);
	assert_int_equal(calls_waiting(), 0);
	assert_true(has_data(h_file));
}

/* A SETATTR reply's attributes are answered from the cache; a new ctime
 * drops the data cached under the old one, though no writer started. */
static void test_setattr_reply_attrs(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);
	fattr3 b = attrs(7, NF3REG, 13, 200, 300);

	(void)state;
	start(60);
	known(n_a, h_file, 7);
	seed_data(h_file, &a);
	b.mode = 0600;
	setattr(h_file, 0);
	answer_after(NFS3_SETATTR, &b);
	assert_int_equal(last_answer(NFS3_SETATTR)->status, NFS3_OK);
	getattr(h_file);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_GETATTR)->attrs.mode, 0600);
	assert_false(has_data(h_file));
	assert_int_equal(ctr()->data_drops, 1);
	assert_int_equal(ctr()->writer_starts, 0);
	lookup(h_dir, n_a); /* the name stays */
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_LOOKUP)->attrs.mode, 0600);
}

/* An RMDIR forgets, besides the name and the directory's attributes,
 * everything about the directory it removed: the names in it too. */
static void test_rmdir_invalidates(void **state)
{
	fattr3 sub = attrs(5, NF3DIR, 4096, 150, 150);
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);
	fattr3 dir_after = attrs(1, NF3DIR, 4096, 300, 300);

	(void)state;
	start(60);
	lookup(h_dir, n_b);
	answer_lookup(h_sub, &sub);
	lookup(h_sub, n_a);
	answer_lookup_in(h_file, &a, &sub);
	lookup(h_sub, n_a);
	assert_int_equal(calls_waiting(), 0);

	rmdir_name(h_dir, n_b);
	assert_int_equal(calls_waiting(), 1); /* the cache knew what b was */
	answer_after(NFS3_RMDIR, &dir_after);
	assert_int_equal(last_answer(NFS3_RMDIR)->status, NFS3_OK);

	getattr(h_sub);
	assert_int_equal(calls_waiting(), 1);
	answer_getattr(&sub);
	getattr(h_dir); /* the reply's */
	assert_int_equal(calls_waiting(), 0);
	assert_true(last_answer(NFS3_GETATTR)->attrs.mtime.seconds == 300);
	/* h_sub's attributes and the caller's evidence are as before: only
	 * the forgotten name sends this upstream */
	lookup(h_sub, n_a);
	forwarded(NFS3_LOOKUP);
	lookup(h_dir, n_b);
	forwarded(NFS3_LOOKUP);
}

/* A LINK forgets the file's attributes (its reply's are known), the new
 * name (here: that there was none), and the directory's listing and
 * attributes; other names stay. */
static void test_link_invalidates(void **state)
{
	fattr3 linked = attrs(7, NF3REG, 13, 200, 300), dir = DIR_ATTRS;

	(void)state;
	start(60);
	known(n_a, h_file, 7);
	lookup(h_dir, n_c);
	answer_noent();
	readdir_of(h_dir);
	answer_readdir(&dir);
	linked.nlink = 2;

	link_name(h_file, h_dir, n_c);
	assert_int_equal(calls_waiting(), 1);
	answer_after(NFS3_LINK, &linked);
	assert_int_equal(last_answer(NFS3_LINK)->status, NFS3_OK);
	getattr(h_file);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_GETATTR)->attrs.nlink, 2);
	getattr(h_dir);
	assert_int_equal(calls_waiting(), 1);
	answer_getattr(&dir); /* as before: the evidence stays */
	readdir_of(h_dir);
	forwarded(NFS3_READDIR);
	lookup(h_dir, n_c);
	forwarded(NFS3_LOOKUP);
	lookup(h_dir, n_a);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_LOOKUP)->attrs.nlink, 2);
	/* a reply without the file's attributes: they are asked */
	link_name(h_file, h_dir, n_b);
	answer_status(NFS3_LINK, NFS3_OK);
	getattr(h_file);
	forwarded(NFS3_GETATTR);
}

/* ttl mode: a RENAME of names the cache does not know first looks them up
 * upstream as the caller; what they point to loses its attributes, though
 * they were fresh. */
static void test_rename_unknown_names(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(60);
	getattr(h_file);
	answer_getattr(&a);
	g_uid = 1234;
	rename_name(h_dir, n_a, n_b);
	assert_int_equal(calls_waiting(), 2);
	assert_int_equal(peek_call()->cred.uid, 1234);
	answer_lookup(h_file, &a);
	assert_int_equal(calls_waiting(), 1); /* the other LOOKUP */
	answer_noent();
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(last_call()->proc, NFS3_RENAME);
	assert_int_equal(last_call()->cred.uid, 1234);
	answer_status(NFS3_RENAME, NFS3_OK);
	assert_int_equal(last_answer(NFS3_RENAME)->status, NFS3_OK);
	g_uid = 1000;
	getattr(h_file);
	forwarded(NFS3_GETATTR);
}

/* strict mode: REMOVE, RMDIR and RENAME go upstream alone. */
static void test_strict_remove_no_lookup(void **state)
{
	(void)state;
	start(0);
	remove_name(h_dir, n_a);
	assert_int_equal(calls_waiting(), 1);
	forwarded(NFS3_REMOVE);
	rmdir_name(h_dir, n_b);
	assert_int_equal(calls_waiting(), 1);
	forwarded(NFS3_RMDIR);
	rename_name(h_dir, n_a, n_b);
	assert_int_equal(calls_waiting(), 1);
	forwarded(NFS3_RENAME);
}

/* strict mode: a REMOVE changes nothing the proxy serves: the removed
 * name's file (another name may remain) is still read from the cache. */
static void test_strict_remove_keeps_data(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(0);
	seed_data(h_file, &a);
	lookup(h_dir, n_a);
	answer_lookup(h_file, &a);
	remove_name(h_dir, n_a);
	answer_status(NFS3_REMOVE, NFS3_OK);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(peek_call()->proc, NFS3_ACCESS); /* the caller's evidence */
	answer_access(ACCESS3_READ, &a);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3_OK);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_cached, sizeof(g_cached));
	assert_true(has_data(h_file));
	assert_int_equal(ctr()->read_passthrough, 0);
}

/* ttl mode: after a REMOVE of one of a file's names, a GETATTR issued
 * before its reply brings no attributes back (they may be older than the
 * REMOVE); READs of the file pass through until one issued after it did.
 * Its new ctime then drops the data. */
static void test_remove_old_reply_ignored(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);
	fattr3 now = attrs(7, NF3REG, 13, 200, 201);

	(void)state;
	start(60);
	known(n_a, h_file, 7);
	seed_data(h_file, &a);
	remove_name(h_dir, n_a);
	getattr(h_file); /* forgotten when the REMOVE was sent */
	assert_int_equal(calls_waiting(), 2);
	tick();
	answer_status(NFS3_REMOVE, NFS3_OK);
	answer_getattr(&a); /* the client gets it as the server said */
	assert_int_equal(last_answer(NFS3_GETATTR)->status, NFS3_OK);
	assert_true(last_answer(NFS3_GETATTR)->attrs.ctime.seconds == 200);

	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(((READ3args *)peek_call()->args)->count, 4096); /* the client's */
	forwarded(NFS3_READ);
	assert_int_equal(ctr()->read_passthrough, 1);
	assert_true(has_data(h_file));

	getattr(h_file);
	assert_int_equal(calls_waiting(), 1);
	answer_getattr(&now);
	assert_false(has_data(h_file));
	getattr(h_file);
	assert_int_equal(calls_waiting(), 0);
	assert_true(last_answer(NFS3_GETATTR)->attrs.ctime.seconds == 201);
}

/* Both modes: a reply of SETATTR, LINK or COMMIT whose attributes of the
 * file are those its data was stored under keeps the data; new ones (a
 * new ctime) drop it. */
static void test_mutation_reply_drops_data(void **state)
{
	static const uint32_t procs[] = {NFS3_SETATTR, NFS3_LINK, NFS3_COMMIT};
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);
	fattr3 b = attrs(7, NF3REG, 13, 200, 300);

	(void)state;
	for (int ttl = 0; ttl <= 60; ttl += 60) {
		for (size_t i = 0; i < 3; i++) {
			start(ttl);
			seed_data(h_file, &a);
			for (int round = 0; round < 2; round++) {
				if (procs[i] == NFS3_SETATTR)
					setattr(h_file, 0);
				else if (procs[i] == NFS3_LINK)
					link_name(h_file, h_dir, n_c);
				else
					commit_file(h_file);
				answer_after(procs[i], round == 0 ? &a : &b);
				assert_int_equal(last_answer(procs[i])->status, NFS3_OK);
				assert_int_equal(has_data(h_file), round == 0);
			}
			assert_int_equal(ctr()->data_drops, 1);
			assert_int_equal(ctr()->writer_starts, 0);
			stop(NULL);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_ttl_getattr_from_cache, stop),
	    cmocka_unit_test_teardown(test_strict_getattr_forwarded, stop),
	    cmocka_unit_test_teardown(test_ttl_lookup_from_cache, stop),
	    cmocka_unit_test_teardown(test_ttl_lookup_other_credential, stop),
	    cmocka_unit_test_teardown(test_strict_lookup_forwarded, stop),
	    cmocka_unit_test_teardown(test_ttl_access_from_cache, stop),
	    cmocka_unit_test_teardown(test_ttl_access_ahead, stop),
	    cmocka_unit_test_teardown(test_ttl_access_ahead_queued, stop),
	    cmocka_unit_test_teardown(test_strict_access_forwarded, stop),
	    cmocka_unit_test_teardown(test_strict_access_reused, stop),
	    cmocka_unit_test_teardown(test_strict_access_reuse_refused, stop),
	    cmocka_unit_test_teardown(test_strict_access_after_restart, stop),
	    cmocka_unit_test_teardown(test_strict_access_ttl, stop),
	    cmocka_unit_test_teardown(test_ttl_readlink_from_cache, stop),
	    cmocka_unit_test_teardown(test_strict_readlink_forwarded, stop),
	    cmocka_unit_test_teardown(test_ttl_readdir_from_cache, stop),
	    cmocka_unit_test_teardown(test_strict_readdir_forwarded, stop),
	    cmocka_unit_test_teardown(test_ttl_answers_expire, stop),
	    cmocka_unit_test_teardown(test_negative_lookup_ttl, stop),
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
	    cmocka_unit_test_teardown(test_make_name_invalidates, stop),
	    cmocka_unit_test_teardown(test_write_invalidates, stop),
	    cmocka_unit_test_teardown(test_commit_invalidates, stop),
	    cmocka_unit_test_teardown(test_setattr_reply_attrs, stop),
	    cmocka_unit_test_teardown(test_rmdir_invalidates, stop),
	    cmocka_unit_test_teardown(test_link_invalidates, stop),
	    cmocka_unit_test_teardown(test_rename_unknown_names, stop),
	    cmocka_unit_test_teardown(test_strict_remove_no_lookup, stop),
	    cmocka_unit_test_teardown(test_strict_remove_keeps_data, stop),
	    cmocka_unit_test_teardown(test_remove_old_reply_ignored, stop),
	    cmocka_unit_test_teardown(test_mutation_reply_drops_data, stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
