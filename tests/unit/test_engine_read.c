/* READ through the engine with a scripted upstream (engine_fx.h): hits and
 * misses, the writer state, the READ evidence rules, READs split for an
 * upstream with a small rtmax, and STALE answers. */
#include "engine_fx.h"

/* The bytes of a small file the upstream holds (13 of them). */
static const char g_file[] = "0123456789abc";
#define FILE_LEN 13u

/* --- hits and misses --------------------------------------------------------- */

/* The upstream's READ of the file (offset 0): answered with all of it. */
static void upstream_has_file(const fattr3 *a)
{
	struct call *c = peek_call();

	assert_non_null(c);
	assert_int_equal(c->proc, NFS3_READ);
	assert_true(((READ3args *)c->args)->offset == 0);
	answer_read(g_file, FILE_LEN, 1, a);
}

/* A READ of a file the cache does not have is filled from the upstream
 * (with the caller's credential) and answered; the next READs of it are
 * answered from the cache, without the upstream. */
static void test_miss_fills_then_hits(void **state)
{
	fattr3 a = attrs(7, NF3REG, FILE_LEN, 200, 200);

	(void)state;
	start(0);
	g_uid = 1234;
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(peek_call()->cred.uid, 1234);
	upstream_has_file(&a);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3_OK);
	assert_int_equal(last_answer(NFS3_READ)->len, FILE_LEN);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_file, FILE_LEN);
	assert_true(last_answer(NFS3_READ)->eof);
	assert_int_equal(ctr()->read_misses, 1);
	assert_true(has_data(h_file));

	read_file(h_file);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_READ)->len, FILE_LEN);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_file, FILE_LEN);
	assert_true(last_answer(NFS3_READ)->has_attrs);
	assert_true(last_answer(NFS3_READ)->attrs.size == FILE_LEN);
	read_at(h_file, 5, 4); /* a range inside */
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_READ)->len, 4);
	assert_memory_equal(last_answer(NFS3_READ)->data, "5678", 4);
	assert_false(last_answer(NFS3_READ)->eof);
	read_at(h_file, 10, 100); /* past the end: the rest, and EOF */
	assert_int_equal(last_answer(NFS3_READ)->len, 3);
	assert_memory_equal(last_answer(NFS3_READ)->data, "abc", 3);
	assert_true(last_answer(NFS3_READ)->eof);
	read_at(h_file, 100, 10);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3_OK);
	assert_int_equal(last_answer(NFS3_READ)->len, 0);
	assert_true(last_answer(NFS3_READ)->eof);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(ctr()->read_hits, 4);
	assert_int_equal(ctr()->read_misses, 1);
}

/* A file changed within fresh_guard seconds is served but not stored:
 * two changes within one timestamp tick would leave its attributes
 * equal. */
static void test_fresh_file_not_stored(void **state)
{
	fattr3 a = attrs(7, NF3REG, FILE_LEN, 200, (uint32_t)time(NULL));

	(void)state;
	start(0);
	read_file(h_file);
	upstream_has_file(&a);
	assert_int_equal(last_answer(NFS3_READ)->len, FILE_LEN);
	assert_int_equal(ctr()->fresh_skips, 1);
	assert_false(has_data(h_file));
	read_file(h_file); /* asked again */
	assert_int_equal(calls_waiting(), 1);
	upstream_has_file(&a);
	assert_int_equal(last_answer(NFS3_READ)->len, FILE_LEN);
	assert_int_equal(ctr()->read_hits, 0);
	assert_int_equal(ctr()->read_misses, 2);
}

/* Data stored under other attributes than the freshest known is not
 * served: it is dropped, and the READ fills again. */
static void test_changed_file_refilled(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200), b = attrs(7, NF3REG, FILE_LEN, 201, 201);

	(void)state;
	start(0);
	seed_data(h_file, &a);
	getattr(h_file);
	answer_getattr(&b);
	assert_false(has_data(h_file));
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	upstream_has_file(&b);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_file, FILE_LEN);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 0);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_file, FILE_LEN);
}

/* An NFSv4 filer: the snapshot is its change attribute (with the times
 * and size). A rewrite that leaves size, mtime and ctime equal (a
 * filesystem with coarse timestamps, times set back) but moves the change
 * attribute drops the cached data: the next READ gets the new bytes from
 * the filer, which are then cached under the new change attribute. */
static void test_change_attr_snapshot(void **state)
{
	static const char newer[] = "ABCDEFGHIJKLM";
	fattr3 a = attrs(7, NF3REG, FILE_LEN, 200, 200);
	struct store_obj rec;

	(void)state;
	start(0);
	up_change(&a, 41);
	read_file(h_file);
	upstream_has_file(&a);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_file, FILE_LEN);
	assert_true(has_data(h_file));
	assert_int_equal(store_obj_get(engine_store(g->e), h_file, (uint32_t)strlen(h_file), &rec),
	                 0);
	assert_true(rec.snap.has_change && rec.snap.change == 41);
	read_file(h_file); /* a hit */
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(ctr()->read_hits, 1);

	/* the same attributes with another change attribute: an open's
	 * GETATTR shows it, and the data goes */
	up_change(&a, 42);
	getattr(h_file);
	answer_getattr(&a);
	assert_false(has_data(h_file));
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	answer_read(newer, FILE_LEN, 1, &a);
	assert_memory_equal(last_answer(NFS3_READ)->data, newer, FILE_LEN);
	read_file(h_file); /* cached again, under the new change attribute */
	assert_int_equal(calls_waiting(), 0);
	assert_memory_equal(last_answer(NFS3_READ)->data, newer, FILE_LEN);
	assert_int_equal(ctr()->read_hits, 2);

	/* attributes without a change attribute (as a READDIRPLUS entry
	 * of an NFSv4 filer) and the same times keep the known one */
	g->up.coh.n = 0;
	getattr(h_file);
	answer_getattr(&a);
	assert_true(has_data(h_file));
	read_file(h_file);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(ctr()->read_hits, 3);
}

/* Data a fill took from the filer under one change attribute is neither
 * served nor stored once another answer shows another change attribute
 * with the same times (the file rewritten while the fill was out). */
static void test_change_attr_fill_outdated(void **state)
{
	fattr3 a = attrs(7, NF3REG, FILE_LEN, 200, 200);

	(void)state;
	start(0);
	up_change(&a, 41);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	/* a GETATTR answered first says version 42 */
	getattr(h_file);
	up_change(&a, 42);
	{
		struct call *rd = next_call(NFS3_READ), *ga = next_call(NFS3_GETATTR);
		GETATTR3res gr;
		READ3res rr;

		memset(&gr, 0, sizeof(gr));
		gr.status = NFS3_OK;
		gr.GETATTR3res_u.resok.obj_attributes = a;
		ga->cb(0, &gr, ga->priv);
		/* the READ's answer comes back with version 41 */
		up_change(&a, 41);
		memset(&rr, 0, sizeof(rr));
		rr.status = NFS3_OK;
		rr.READ3res_u.resok.file_attributes = post(&a);
		rr.READ3res_u.resok.count = FILE_LEN;
		rr.READ3res_u.resok.eof = 1;
		rr.READ3res_u.resok.data.data_len = FILE_LEN;
		rr.READ3res_u.resok.data.data_val = (char *)g_file;
		rd->cb(0, &rr, rd->priv);
	}
	assert_false(has_data(h_file));
}

/* After a restart the proxy knows a file of an NFSv4 filer first from
 * attributes without a change attribute (a READDIRPLUS entry, an answer
 * the module gives none for): with the times and size of the stored
 * snapshot that is no change, so the data stays (the bench's warm-disk tar
 * over v4 refetched every file before); it is served once an answer with
 * the stored change attribute comes, and dropped by one with another. */
static void test_change_attr_record_kept_across_restart(void **state)
{
	fattr3 a = attrs(7, NF3REG, sizeof(g_cached), 200, 200);
	struct store_chg chg = {.has = 1, .change = 41};
	uint64_t hits;

	(void)state;
	start(0);
	assert_int_equal(store_inline_put(engine_store(g->e), h_file, (uint32_t)strlen(h_file), &a,
	                                  &chg, g_cached, sizeof(g_cached)),
	                 0);
	g->up.coh.n = 0; /* no change attribute in this answer */
	getattr(h_file);
	answer_getattr(&a);
	assert_true(has_data(h_file));
	/* an answer with the stored one: served from the cache */
	up_change(&a, 41);
	getattr(h_file);
	answer_getattr(&a);
	hits = ctr()->read_hits;
	read_file(h_file);
	/* the caller's first READ: the filer's ACCESS is the evidence, the
	 * bytes come from the cache (no READ upstream) */
	assert_int_equal(calls_waiting(), 1);
	answer_access(ACCESS3_READ, &a);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(ctr()->read_hits, hits + 1);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_cached, sizeof(g_cached));
	/* an answer with another one, the times the same: dropped */
	up_change(&a, 42);
	getattr(h_file);
	answer_getattr(&a);
	assert_false(has_data(h_file));
}

/* A record an NFSv3 run stored (no change attribute) is not taken by an
 * NFSv4 run: its first answer drops it. */
static void test_v3_record_not_taken_by_v4(void **state)
{
	fattr3 a = attrs(7, NF3REG, sizeof(g_cached), 200, 200);

	(void)state;
	start(0);
	seed_data(h_file, &a);
	up_change(&a, 9);
	getattr(h_file);
	answer_getattr(&a);
	assert_false(has_data(h_file));
}

/* Data let into the cache by a build that judged the fresh guard by this
 * host's clock alone (the index's LEGACY ground) is not served: it is
 * fetched again and judged again. So is data let in only on the
 * assumption about the filer's clock, once that is hours old. */
static void test_unsound_guard_fetched_again(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);
	uint32_t hl = (uint32_t)strlen(h_file);
	uint16_t hour = (uint16_t)(time(NULL) / 3600);
	struct store_obj o;

	(void)state;
	start(0);
	seed_data(h_file, &a);
	assert_int_equal(store_obj_set_guard(engine_store(g->e), h_file, hl, STORE_GUARD_LEGACY, 0), 0);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1); /* not from the cache */
	answer_read(g_cached, sizeof(g_cached), 1, &a);
	assert_int_equal(last_answer(NFS3_READ)->len, sizeof(g_cached));
	assert_int_equal(ctr()->guard_refetches, 1);
	/* stored again; nothing measured the filer's clock, and the file is
	 * old by this host's: on the assumption, now */
	assert_int_equal(store_obj_get(engine_store(g->e), h_file, hl, &o), 0);
	assert_int_equal(o.guard, STORE_GUARD_ASSUMED);
	assert_int_equal(ctr()->fresh_assumed, 1);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 0); /* trusted for now */
	assert_int_equal(ctr()->read_hits, 1);

	assert_int_equal(store_obj_set_guard(engine_store(g->e), h_file, hl, STORE_GUARD_ASSUMED,
	                                     (uint16_t)(hour - 3)),
	                 0);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	answer_read(g_cached, sizeof(g_cached), 1, &a);
	assert_int_equal(ctr()->guard_refetches, 2);
	assert_int_equal(ctr()->read_hits, 1);
}

/* --- writer state -------------------------------------------------------------- */

/* While a file is being written through the proxy (write_quiesce seconds
 * after its last WRITE) its READs go upstream as they came, and the
 * client gets the server's answer; after that, they are cached again. */
static void test_writer_passthrough_then_cached(void **state)
{
	fattr3 a = attrs(7, NF3REG, FILE_LEN, 200, 200);

	(void)state;
	fx_new(0);
	g->cfg.write_quiesce = 1;
	start_cfg();
	write_file(h_file);
	answer_status(NFS3_WRITE, NFS3_OK);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(((READ3args *)peek_call()->args)->count, 4096); /* the client's */
	answer_read(g_file, FILE_LEN, 1, &a);
	assert_int_equal(last_answer(NFS3_READ)->len, FILE_LEN);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_file, FILE_LEN);
	assert_false(has_data(h_file)); /* a forwarded READ stores nothing */
	assert_int_equal(ctr()->writer_passthrough, 1);

	pass_ms(1100);
	read_file(h_file); /* a fill */
	assert_int_equal(calls_waiting(), 1);
	upstream_has_file(&a);
	assert_int_equal(ctr()->read_misses, 1);
	assert_true(has_data(h_file));
	read_file(h_file);
	assert_int_equal(calls_waiting(), 0);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_file, FILE_LEN);
	assert_int_equal(ctr()->writer_passthrough, 1);
	assert_int_equal(ctr()->read_hits, 1);
}

/* --- READ evidence ------------------------------------------------------------ */

/* A file with cached bytes (g_cached) whose attributes a say who may read
 * it; the engine under read_evidence rule. */
static void cached_file(int rule, const fattr3 *a)
{
	fx_new(0);
	g->cfg.read_evidence = rule;
	start_cfg();
	seed_data(h_file, a);
}

/* The client got the file's bytes (g_cached), and nothing else waits
 * upstream. */
static void assert_got_bytes(void)
{
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3_OK);
	assert_int_equal(last_answer(NFS3_READ)->len, sizeof(g_cached));
	assert_memory_equal(last_answer(NFS3_READ)->data, g_cached, sizeof(g_cached));
}

/* A READ of the file answered from the cache: the upstream is not asked. */
static void read_from_cache(void)
{
	read_file(h_file);
	assert_got_bytes();
}

/* read_evidence mode: a caller the mode bits let read is asked ACCESS
 * once; the server's grant lets it read the cached bytes. */
static void test_evidence_mode_access_grant(void **state)
{
	fattr3 a = attrs(7, NF3REG, sizeof(g_cached), 200, 200);

	(void)state;
	cached_file(CFS_EVIDENCE_MODE, &a);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(((ACCESS3args *)peek_call()->args)->access, ACCESS3_READ);
	answer_access(ACCESS3_READ, &a);
	assert_got_bytes(); /* no READ upstream */
	read_from_cache();  /* the grant holds */
	assert_int_equal(ctr()->access_checks, 1);
	assert_int_equal(ctr()->read_hits, 2);
}

/* read_evidence mode: when the mode bits do not let the caller read (an
 * ACL may), an ACCESS grant is not enough: the READ goes upstream, and the
 * server's answer to it is the evidence. */
static void test_evidence_mode_bits_refuse(void **state)
{
	fattr3 a = attrs(7, NF3REG, sizeof(g_cached), 200, 200);

	(void)state;
	a.uid = 2000;
	a.mode = 0600;
	cached_file(CFS_EVIDENCE_MODE, &a);
	access_of(h_file, ACCESS3_READ); /* the client's own: granted */
	answer_access(ACCESS3_READ, &a);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(peek_call()->proc, NFS3_READ); /* no ACCESS */
	answer_read(g_cached, sizeof(g_cached), 1, &a);
	assert_got_bytes(); /* the server's bytes */
	assert_int_equal(ctr()->evidence_reads, 1);
	read_from_cache();
	assert_int_equal(ctr()->read_hits, 1);
	assert_int_equal(ctr()->access_checks, 0);
}

/* read_evidence access: any ACCESS grant lets the caller read the cached
 * bytes, whatever the mode bits say. */
static void test_evidence_access_grant_enough(void **state)
{
	fattr3 a = attrs(7, NF3REG, sizeof(g_cached), 200, 200);

	(void)state;
	a.uid = 2000;
	a.mode = 0600;
	cached_file(CFS_EVIDENCE_ACCESS, &a);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	answer_access(ACCESS3_READ, &a);
	assert_got_bytes();
	assert_int_equal(ctr()->read_hits, 1);
}

/* read_evidence read: only a READ the server answered counts; ACCESS is
 * never asked. */
static void test_evidence_read_only(void **state)
{
	fattr3 a = attrs(7, NF3REG, sizeof(g_cached), 200, 200);

	(void)state;
	cached_file(CFS_EVIDENCE_READ, &a);
	access_of(h_file, ACCESS3_READ); /* the client's own ACCESS: no evidence */
	answer_access(ACCESS3_READ, &a);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(peek_call()->proc, NFS3_READ);
	answer_read(g_cached, sizeof(g_cached), 1, &a);
	assert_got_bytes();
	read_from_cache();
	assert_int_equal(ctr()->read_hits, 1);
	assert_int_equal(ctr()->access_checks, 0);
}

/* The server's ACCESS denies READ: the READ goes upstream and the client
 * gets the server's refusal; later READs of that credential go upstream
 * too, without asking ACCESS again. */
static void test_access_denied_forwards(void **state)
{
	fattr3 a = attrs(7, NF3REG, sizeof(g_cached), 200, 200);

	(void)state;
	cached_file(CFS_EVIDENCE_MODE, &a);
	read_file(h_file);
	answer_access(0, &a);
	assert_int_equal(calls_waiting(), 1);
	answer_read_error(NFS3ERR_ACCES, &a);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3ERR_ACCES);
	assert_int_equal(ctr()->access_denied, 1);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(peek_call()->proc, NFS3_READ);
	answer_read_error(NFS3ERR_ACCES, &a);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3ERR_ACCES);
	assert_int_equal(ctr()->access_checks, 1);
	assert_int_equal(ctr()->read_hits, 0);
}

/* A fill's READ the server refused: the client's READ goes upstream and
 * gets the server's answer, and that credential's later READs of the file,
 * cached meanwhile, go upstream without asking ACCESS first. */
static void test_refused_fill_remembered(void **state)
{
	fattr3 a = attrs(7, NF3REG, sizeof(g_cached), 200, 200);

	(void)state;
	start(0);
	read_file(h_file);
	answer_read_error(NFS3ERR_ACCES, &a); /* the fill's */
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(((READ3args *)peek_call()->args)->count, 4096); /* the client's */
	answer_read_error(NFS3ERR_ACCES, &a);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3ERR_ACCES);
	seed_data(h_file, &a); /* another credential's fill */
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(peek_call()->proc, NFS3_READ);
	answer_read_error(NFS3ERR_ACCES, &a);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3ERR_ACCES);
	assert_int_equal(ctr()->access_checks, 0);
	assert_int_equal(ctr()->read_hits, 0);
}

/* A READ the server refused one credential is not served from the cache
 * to it, while another credential the server let read is. */
static void test_refused_read_per_credential(void **state)
{
	fattr3 a = attrs(7, NF3REG, sizeof(g_cached), 200, 200);

	(void)state;
	cached_file(CFS_EVIDENCE_READ, &a);
	g_uid = 1000;
	read_file(h_file);
	answer_read_error(NFS3ERR_ACCES, &a);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3ERR_ACCES);
	g_uid = 2000;
	read_file(h_file);
	assert_int_equal(peek_call()->cred.uid, 2000);
	answer_read(g_cached, sizeof(g_cached), 1, &a);
	assert_got_bytes();
	for (int i = 0; i < 2; i++) {
		g_uid = 2000;
		read_from_cache();
		g_uid = 1000;
		read_file(h_file);
		assert_int_equal(calls_waiting(), 1);
		assert_int_equal(peek_call()->cred.uid, 1000);
		answer_read_error(NFS3ERR_ACCES, &a);
		assert_int_equal(last_answer(NFS3_READ)->status, NFS3ERR_ACCES);
	}
	assert_int_equal(ctr()->read_hits, 2);
	assert_int_equal(ctr()->access_denied, 3);
}

/* A new ctime (mode, owner or ACL may have changed) ends the evidence:
 * the caller is asked again. */
static void test_new_ctime_asks_again(void **state)
{
	fattr3 a = attrs(7, NF3REG, sizeof(g_cached), 200, 200);

	(void)state;
	cached_file(CFS_EVIDENCE_MODE, &a);
	read_file(h_file);
	answer_access(ACCESS3_READ, &a);
	assert_got_bytes();
	/* the ctime moves on (a chmod elsewhere) and the bytes are cached
	 * under the new attributes: the grant was under the old */
	fattr3 b = a;
	b.ctime.nseconds = 1;
	seed_data(h_file, &b);
	getattr(h_file);
	answer_getattr(&b);
	read_file(h_file);
	assert_int_equal(calls_waiting(), 1);
	answer_access(ACCESS3_READ, &b);
	assert_got_bytes();
	assert_int_equal(ctr()->access_checks, 2);
}

/* --- READs larger than the upstream's rtmax ----------------------------------- */

#define SPLIT_LEN 10000u
static char g_big[SPLIT_LEN];

/* An engine whose upstream reads at most 4 KiB, and a file being written
 * (its READs are forwarded). */
static void split_start(void)
{
	for (uint32_t i = 0; i < SPLIT_LEN; i++)
		g_big[i] = (char)('a' + i % 23);
	fx_new(0);
	g->up.info.fsinfo.rtmax = 4096;
	start_cfg();
	write_file(h_file);
	answer_status(NFS3_WRITE, NFS3_OK);
	read_at(h_file, 0, SPLIT_LEN);
}

/* The oldest waiting call is the READ of [off, off + count). */
static void piece_is(uint64_t off, uint32_t count)
{
	struct call *c = peek_call();

	assert_non_null(c);
	assert_int_equal(c->proc, NFS3_READ);
	assert_true(((READ3args *)c->args)->offset == off);
	assert_int_equal(((READ3args *)c->args)->count, count);
}

/* Answers the pieces [0, 4096), [4096, 8192), [8192, 10000) with the
 * file's bytes; short: the second is answered with 1000 only; other:
 * the third's attributes are of another version. */
static void answer_pieces(int short_second, int other_third)
{
	fattr3 a = attrs(7, NF3REG, SPLIT_LEN, 200, 200), b = attrs(7, NF3REG, SPLIT_LEN, 201, 201);

	assert_int_equal(calls_waiting(), 3);
	piece_is(0, 4096);
	answer_read(g_big, 4096, 0, &a);
	piece_is(4096, 4096);
	answer_read(g_big + 4096, short_second ? 1000 : 4096, 0, &a);
	piece_is(8192, SPLIT_LEN - 8192);
	answer_read(g_big + 8192, SPLIT_LEN - 8192, 1, other_third ? &b : &a);
}

/* A forwarded READ larger than rtmax goes upstream as READs of rtmax sent
 * together; the client gets all their bytes in one answer. */
static void test_split_read_whole(void **state)
{
	(void)state;
	split_start();
	answer_pieces(0, 0);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3_OK);
	assert_int_equal(last_answer(NFS3_READ)->len, SPLIT_LEN);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_big, SPLIT_LEN);
	assert_true(last_answer(NFS3_READ)->eof);
	assert_int_equal(ctr()->read_splits, 1);
}

/* A short piece ends the answer there (a short READ, legal). */
static void test_split_read_short_piece(void **state)
{
	(void)state;
	split_start();
	answer_pieces(1, 0);
	assert_int_equal(last_answer(NFS3_READ)->len, 4096 + 1000);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_big, 4096 + 1000);
	assert_false(last_answer(NFS3_READ)->eof);
}

/* A piece whose attributes say the file changed between the pieces ends
 * the answer before it: the bytes are of one version. */
static void test_split_read_changed_file(void **state)
{
	(void)state;
	split_start();
	answer_pieces(0, 1);
	assert_int_equal(last_answer(NFS3_READ)->len, 8192);
	assert_memory_equal(last_answer(NFS3_READ)->data, g_big, 8192);
	assert_false(last_answer(NFS3_READ)->eof);
}

/* A first piece the server refused is the client's answer. */
static void test_split_read_first_fails(void **state)
{
	fattr3 a = attrs(7, NF3REG, SPLIT_LEN, 200, 200);

	(void)state;
	split_start();
	answer_read_error(NFS3ERR_ACCES, &a);
	answer_read(g_big + 4096, 4096, 0, &a);
	assert_int_equal(g_nans, 1); /* the WRITE's: the READ waits for all */
	answer_read(g_big + 8192, SPLIT_LEN - 8192, 1, &a);
	assert_int_equal(last_answer(NFS3_READ)->status, NFS3ERR_ACCES);
}

/* --- STALE ---------------------------------------------------------------------- */

/* A STALE answer purges nothing by itself: a GETATTR of the handle (as
 * the caller) checks first, READs of it pass through meanwhile, and only
 * its STALE drops what was cached. */
static void test_stale_checked_then_purged(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(0);
	seed_data(h_file, &a);
	g_uid = 1234;
	getattr(h_file);
	answer_status(NFS3_GETATTR, NFS3ERR_STALE);
	assert_int_equal(last_answer(NFS3_GETATTR)->status, NFS3ERR_STALE);
	assert_int_equal(calls_waiting(), 1); /* the check */
	assert_int_equal(peek_call()->proc, NFS3_GETATTR);
	assert_int_equal(peek_call()->cred.uid, 1234);
	assert_true(has_data(h_file));

	read_file(h_file); /* passes through */
	assert_int_equal(calls_waiting(), 2);
	assert_int_equal(last_call()->proc, NFS3_READ);
	assert_int_equal(((READ3args *)last_call()->args)->count, 4096);
	getattr(h_file); /* another STALE: no second check */
	assert_int_equal(last_call()->proc, NFS3_GETATTR);
	assert_int_equal(calls_waiting(), 3);

	answer_status(NFS3_GETATTR, NFS3ERR_STALE); /* the check says it */
	assert_false(has_data(h_file));
	assert_int_equal(ctr()->stale_purges, 1);
	forwarded(NFS3_READ);
	answer_status(NFS3_GETATTR, NFS3ERR_STALE);
	assert_int_equal(calls_waiting(), 1); /* a new check: the first is over */
	assert_int_equal(ctr()->stale_checks, 2);
}

/* A STALE about a call, not its handle (unfs3 answers one to a LOOKUP
 * below a regular file): the check finds the handle alive, and nothing
 * is purged; ttl mode goes on answering its attributes. */
static void test_stale_handle_alive(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(60);
	seed_data(h_file, &a);
	getattr(h_file);
	answer_getattr(&a);
	lookup(h_file, n_a);
	answer_status(NFS3_LOOKUP, NFS3ERR_STALE);
	assert_int_equal(last_answer(NFS3_LOOKUP)->status, NFS3ERR_STALE);
	assert_int_equal(calls_waiting(), 1);
	getattr(h_file); /* from the cache while checked */
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(last_answer(NFS3_GETATTR)->status, NFS3_OK);
	answer_getattr(&a); /* alive */
	assert_int_equal(ctr()->stale_purges, 0);
	assert_true(has_data(h_file));
	getattr(h_file);
	assert_int_equal(calls_waiting(), 0);
	read_file(h_file); /* the cache's again: its evidence is asked */
	assert_int_equal(calls_waiting(), 1);
	answer_access(ACCESS3_READ, &a);
	assert_got_bytes();
}

/* ttl mode: the check's STALE purges the metadata too. */
static void test_stale_purges_metadata(void **state)
{
	fattr3 a = attrs(7, NF3REG, 13, 200, 200);

	(void)state;
	start(60);
	getattr(h_file);
	answer_getattr(&a);
	access_of(h_file, ACCESS3_READ);
	answer_access(ACCESS3_READ, &a);
	readlink_of(h_file); /* a STALE answer to anything about it */
	answer_status(NFS3_READLINK, NFS3ERR_STALE);
	getattr(h_file);
	assert_int_equal(calls_waiting(), 1); /* still from the cache */
	answer_status(NFS3_GETATTR, NFS3ERR_STALE);
	getattr(h_file);
	forwarded(NFS3_GETATTR);
	access_of(h_file, ACCESS3_READ);
	forwarded(NFS3_ACCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_miss_fills_then_hits, stop),
	    cmocka_unit_test_teardown(test_fresh_file_not_stored, stop),
	    cmocka_unit_test_teardown(test_changed_file_refilled, stop),
	    cmocka_unit_test_teardown(test_change_attr_snapshot, stop),
	    cmocka_unit_test_teardown(test_change_attr_fill_outdated, stop),
	    cmocka_unit_test_teardown(test_v3_record_not_taken_by_v4, stop),
	    cmocka_unit_test_teardown(test_change_attr_record_kept_across_restart, stop),
	    cmocka_unit_test_teardown(test_unsound_guard_fetched_again, stop),
	    cmocka_unit_test_teardown(test_writer_passthrough_then_cached, stop),
	    cmocka_unit_test_teardown(test_evidence_mode_access_grant, stop),
	    cmocka_unit_test_teardown(test_evidence_mode_bits_refuse, stop),
	    cmocka_unit_test_teardown(test_evidence_access_grant_enough, stop),
	    cmocka_unit_test_teardown(test_evidence_read_only, stop),
	    cmocka_unit_test_teardown(test_access_denied_forwards, stop),
	    cmocka_unit_test_teardown(test_refused_fill_remembered, stop),
	    cmocka_unit_test_teardown(test_refused_read_per_credential, stop),
	    cmocka_unit_test_teardown(test_new_ctime_asks_again, stop),
	    cmocka_unit_test_teardown(test_split_read_whole, stop),
	    cmocka_unit_test_teardown(test_split_read_short_piece, stop),
	    cmocka_unit_test_teardown(test_split_read_changed_file, stop),
	    cmocka_unit_test_teardown(test_split_read_first_fails, stop),
	    cmocka_unit_test_teardown(test_stale_checked_then_purged, stop),
	    cmocka_unit_test_teardown(test_stale_handle_alive, stop),
	    cmocka_unit_test_teardown(test_stale_purges_metadata, stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
