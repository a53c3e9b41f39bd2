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
