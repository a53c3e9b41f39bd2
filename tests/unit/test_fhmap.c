/* Handles longer than 64 bytes (cachefsd/store/store_fhmap.c): an NFSv4
 * filer's handle of up to 128 bytes given to NFSv3 clients (64 at most) as
 * a mapped handle kept in the index. What a client would notice: a short
 * handle is the filer's own; a long one always gets the same 64-byte
 * handle, which leads back to it across restarts, culls, and on a second
 * proxy with the same key; a handle the map does not know is stale, never
 * another file's. Each test works in a fresh directory under /tmp;
 * damage is done through LMDB directly while the store is closed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "origin_fhmap.h"
#include "store.h"
#include "store_fx.h"
#include "../../cachefsd/store/store_int.h"

/* The export's root handle: the handle key (store_fh_set_key). */
static const char root_key[] = "root-handle-of-the-export";

struct ctx {
	char root[64];
	char dir[128], dir2[128];
	struct store_params p;
	struct store *s, *s2;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	strcpy(c->root, "/tmp/cfs-fhmap.XXXXXX");
	assert_non_null(mkdtemp(c->root));
	snprintf(c->dir, sizeof(c->dir), "%s/cache", c->root);
	snprintf(c->dir2, sizeof(c->dir2), "%s/cache2", c->root);
	store_fx_params(&c->p, c->dir, "nfs://filer/export");
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	store_close(c->s);
	store_close(c->s2);
	store_fx_rm(c->root);
	free(c);
	return 0;
}

static struct store *open_dir(struct ctx *c, const char *dir, struct store **out)
{
	struct store_params p = c->p;
	char err[512] = "";
	int rc;

	p.dir = dir;
	rc = store_open(&p, out, err, sizeof(err));
	if (rc)
		fail_msg("store_open %s: %d %s", dir, rc, err);
	return *out;
}

static struct store *open_keyed(struct ctx *c)
{
	open_dir(c, c->dir, &c->s);
	assert_int_equal(store_fh_set_key(c->s, root_key, sizeof(root_key)), 0);
	return c->s;
}

static void reopen(struct ctx *c)
{
	store_close(c->s);
	c->s = NULL;
	open_keyed(c);
}

/* An upstream handle of len bytes, different for each seed. */
static void up_fh(uint8_t *b, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 37 + i * 11 + 1);
}

/* encode, then decode: the upstream handle comes back. Returns encode's
 * answer; the client handle goes to fh (64 bytes). */
static int roundtrip(struct store *s, const uint8_t *up, uint32_t len, uint8_t *fh)
{
	uint8_t back[STORE_FH_UP_MAX];
	uint32_t fhlen = 0, backlen = 0;
	int rc = store_fh_encode(s, up, len, fh, &fhlen);

	assert_true(rc == 0 || rc == 1);
	assert_int_equal(store_fh_decode(s, fh, fhlen, back, &backlen), 0);
	assert_int_equal(backlen, len);
	assert_memory_equal(back, up, len);
	return rc;
}

static int decode(struct store *s, const uint8_t *fh, uint8_t *up, uint32_t *uplen)
{
	return store_fh_decode(s, fh, STORE_FH_MAPPED_LEN, up, uplen);
}

/* --- the encoding ------------------------------------------------------------ */

/* Handles a v3 client can take are its filer's own, unchanged, key or no
 * key; nothing is written for them. */
static void test_short_pass(void **state)
{
	struct ctx *c = *state;
	uint8_t up[64], fh[STORE_FH_MAX], back[STORE_FH_UP_MAX];
	uint32_t fhlen, backlen;
	static const uint32_t lens[] = {1, 8, 28, 36, 63, 64};

	open_dir(c, c->dir, &c->s);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		up_fh(up, lens[i], (unsigned)i);
		assert_false(store_fh_needs_map(up, lens[i]));
		assert_int_equal(store_fh_encode(c->s, up, lens[i], fh, &fhlen), 0);
		assert_int_equal(fhlen, lens[i]);
		assert_memory_equal(fh, up, lens[i]);
		assert_false(store_fh_is_mapped(fh, fhlen));
		assert_int_equal(store_fh_decode(c->s, fh, fhlen, back, &backlen), 0);
		assert_int_equal(backlen, lens[i]);
		assert_memory_equal(back, up, lens[i]);
	}
	assert_int_equal(store_fh_count(c->s), 0);
	assert_int_equal(store_commit_deferrable(c->s), 0); /* no batch open */
	/* lengths no protocol has */
	assert_int_equal(store_fh_encode(c->s, up, 0, fh, &fhlen), -EINVAL);
	assert_int_equal(store_fh_encode(c->s, up, STORE_FH_UP_MAX + 1, fh, &fhlen), -EINVAL);
	assert_int_equal(store_fh_decode(c->s, up, 0, back, &backlen), -EINVAL);
	assert_int_equal(store_fh_decode(c->s, up, STORE_FH_MAX + 1, back, &backlen), -EINVAL);
}

/* A long handle becomes a 64-byte mapped handle and back; the same one
 * each time; different handles, different mapped handles. */
static void test_long_maps(void **state)
{
	struct ctx *c = *state;
	uint8_t up[STORE_FH_UP_MAX], fh[3][STORE_FH_MAX], again[STORE_FH_MAX];
	static const uint32_t lens[] = {65, 100, STORE_FH_UP_MAX};
	uint32_t fhlen;

	open_dir(c, c->dir, &c->s);
	up_fh(up, 100, 1);
	/* the key comes with the export's root handle: none yet */
	assert_int_equal(store_fh_encode(c->s, up, 100, fh[0], &fhlen), -EAGAIN);
	assert_int_equal(store_fh_set_key(c->s, root_key, 0), -EINVAL);
	assert_int_equal(store_fh_set_key(c->s, root_key, sizeof(root_key)), 0);
	for (int i = 0; i < 3; i++) {
		up_fh(up, lens[i], (unsigned)i);
		assert_true(store_fh_needs_map(up, lens[i]));
		assert_int_equal(roundtrip(c->s, up, lens[i], fh[i]), 1);
		assert_true(store_fh_is_mapped(fh[i], STORE_FH_MAPPED_LEN));
		/* a new mapping is committed at the end of the pass, before
		 * the reply carrying it could be forgotten by a crash */
		assert_int_equal(store_commit_deferrable(c->s), 0);
		assert_int_equal(store_fh_encode(c->s, up, lens[i], again, &fhlen), 0);
		assert_int_equal(fhlen, STORE_FH_MAPPED_LEN);
		assert_memory_equal(again, fh[i], STORE_FH_MAPPED_LEN);
	}
	assert_memory_not_equal(fh[0], fh[1], STORE_FH_MAPPED_LEN);
	assert_memory_not_equal(fh[1], fh[2], STORE_FH_MAPPED_LEN);
	/* a handle one byte longer is another file */
	up_fh(up, 101, 1);
	assert_int_equal(roundtrip(c->s, up, 101, again), 1);
	assert_memory_not_equal(again, fh[1], STORE_FH_MAPPED_LEN);
	assert_int_equal(store_fh_count(c->s), 4);
	assert_int_equal(store_commit(c->s), 0);
	assert_int_equal(store_fh_count(c->s), 4);
}

/* The same upstream handle gets the same client handle after a restart
 * (decoding before the key is set), and from a second store in another
 * directory given the same key: two proxies in front of one export agree
 * without talking. Another key (another export), another handle. */
static void test_persist_and_agree(void **state)
{
	struct ctx *c = *state;
	uint8_t up[120], fh[STORE_FH_MAX], fh2[STORE_FH_MAX], back[STORE_FH_UP_MAX];
	uint32_t fhlen, backlen;
	char log[4096];
	struct cap k;

	open_keyed(c);
	up_fh(up, sizeof(up), 7);
	assert_int_equal(roundtrip(c->s, up, sizeof(up), fh), 1);
	assert_int_equal(store_commit(c->s), 0);

	store_close(c->s);
	open_dir(c, c->dir, &c->s);
	assert_int_equal(decode(c->s, fh, back, &backlen), 0); /* no key needed */
	assert_int_equal(backlen, sizeof(up));
	assert_memory_equal(back, up, sizeof(up));
	cap_begin(&k, c->root, log, sizeof(log));
	assert_int_equal(store_fh_set_key(c->s, root_key, sizeof(root_key)), 0);
	fputs(cap_end(&k), stderr);
	assert_null(strstr(log, "is not the one")); /* the same root handle */
	assert_int_equal(store_fh_encode(c->s, up, sizeof(up), fh2, &fhlen), 0); /* known */
	assert_memory_equal(fh2, fh, STORE_FH_MAPPED_LEN);

	/* a second proxy: its own cache directory, the same export */
	open_dir(c, c->dir2, &c->s2);
	assert_int_equal(decode(c->s2, fh, back, &backlen), -ESTALE); /* never met it */
	assert_int_equal(store_fh_set_key(c->s2, root_key, sizeof(root_key)), 0);
	assert_int_equal(roundtrip(c->s2, up, sizeof(up), fh2), 1);
	assert_memory_equal(fh2, fh, STORE_FH_MAPPED_LEN);
	assert_int_equal(store_commit(c->s2), 0);

	/* the root handle changed (the export recreated): logged, across a
	 * restart too; what was mapped still decodes */
	store_close(c->s);
	c->s = NULL;
	open_dir(c, c->dir, &c->s);
	cap_begin(&k, c->root, log, sizeof(log));
	assert_int_equal(store_fh_set_key(c->s, "recreated", 9), 0);
	fputs(cap_end(&k), stderr);
	assert_non_null(strstr(log, "is not the one handles were mapped with"));
	assert_int_equal(decode(c->s, fh, back, &backlen), 0);
	assert_memory_equal(back, up, sizeof(up));
	assert_int_equal(store_commit(c->s), 0);
	reopen(c); /* the root handle as it was: logged again */

	/* another export's root handle: another handle for the same bytes */
	store_close(c->s2);
	c->s2 = NULL;
	store_fx_rm(c->dir2);
	open_dir(c, c->dir2, &c->s2);
	assert_int_equal(store_fh_set_key(c->s2, "another-root", 12), 0);
	assert_int_equal(roundtrip(c->s2, up, sizeof(up), fh2), 1);
	assert_memory_not_equal(fh2, fh, STORE_FH_MAPPED_LEN);
}

/* Two long handles whose hashes collide (forced: the hash ignores the
 * handle) get salts 0, 1, 2 in the order met, each decodes to its own, and
 * a store meeting them in the same order gives them the same handles. */
static void test_collision(void **state)
{
	struct ctx *c = *state;
	uint8_t up[3][90], fh[3][STORE_FH_MAX], fh2[STORE_FH_MAX], back[STORE_FH_UP_MAX];
	uint32_t fhlen, backlen;
	char log[4096];
	struct cap k;

	open_keyed(c);
	store_test_fh_collide(c->s, 1);
	cap_begin(&k, c->root, log, sizeof(log));
	for (int i = 0; i < 3; i++) {
		up_fh(up[i], sizeof(up[i]), 10 + (unsigned)i);
		assert_int_equal(roundtrip(c->s, up[i], sizeof(up[i]), fh[i]), 1);
		assert_int_equal(fh[i][7], i); /* the salt */
	}
	fputs(cap_end(&k), stderr);
	assert_non_null(strstr(log, "holds another upstream handle"));
	assert_memory_not_equal(fh[0], fh[1], STORE_FH_MAPPED_LEN);
	assert_memory_not_equal(fh[1], fh[2], STORE_FH_MAPPED_LEN);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(decode(c->s, fh[i], back, &backlen), 0);
		assert_memory_equal(back, up[i], sizeof(up[i]));
	}
	assert_int_equal(store_commit(c->s), 0);

	/* after a restart, the second keeps its salt */
	reopen(c);
	store_test_fh_collide(c->s, 1);
	assert_int_equal(store_fh_encode(c->s, up[1], sizeof(up[1]), fh2, &fhlen), 0);
	assert_memory_equal(fh2, fh[1], STORE_FH_MAPPED_LEN);

	/* another store meeting them in the same order: the same handles */
	open_dir(c, c->dir2, &c->s2);
	assert_int_equal(store_fh_set_key(c->s2, root_key, sizeof(root_key)), 0);
	store_test_fh_collide(c->s2, 1);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(roundtrip(c->s2, up[i], sizeof(up[i]), fh2), 1);
		assert_memory_equal(fh2, fh[i], STORE_FH_MAPPED_LEN);
	}
}

/* A 64-byte upstream handle that starts like a mapped handle is mapped
 * too: a client never holds a filer's handle that reads as a mapped one,
 * so what a client sends is decoded one way only. */
static void test_magic_64(void **state)
{
	struct ctx *c = *state;
	uint8_t look[64], fh[STORE_FH_MAX], back[STORE_FH_UP_MAX], other[64], up[100];
	uint32_t fhlen, backlen;

	open_keyed(c);
	/* a mapped handle's bytes, as if a filer had issued them */
	up_fh(up, sizeof(up), 3);
	assert_int_equal(store_fh_encode(c->s, up, sizeof(up), fh, &fhlen), 1);
	memcpy(look, fh, 64);
	look[63] ^= 0xff;
	assert_true(store_fh_is_mapped(look, 64));
	assert_true(store_fh_needs_map(look, 64));
	assert_int_equal(roundtrip(c->s, look, 64, fh), 1);
	assert_memory_not_equal(fh, look, 64);
	assert_true(store_fh_is_mapped(fh, 64));
	/* the filer's bytes as a client's handle: a mapped handle this index
	 * does not know, never the filer's file by accident */
	assert_int_equal(decode(c->s, look, back, &backlen), -ESTALE);
	/* shorter, or the magic differing in one byte: the filer's own */
	assert_false(store_fh_needs_map(look, 63));
	memcpy(other, look, 64);
	other[5] ^= 0x01;
	assert_false(store_fh_needs_map(other, 64));
	assert_int_equal(store_fh_encode(c->s, other, 64, fh, &fhlen), 0);
	assert_memory_equal(fh, other, 64);
}

/* --- the map in the store --------------------------------------------------- */

/* The client's handle keys the object; culling its data, or dropping its
 * record, leaves its mapping: the client's handle still leads upstream. */
static void test_cull_keeps(void **state)
{
	struct ctx *c = *state;
	uint8_t up[2][128], fh[2][STORE_FH_MAX], back[STORE_FH_UP_MAX], data[3000];
	uint32_t backlen;
	struct store_stats st;
	struct store_obj o;
	fattr3 a;

	memset(&a, 0, sizeof(a));
	a.type = NF3REG;
	a.size = sizeof(data);
	memset(data, 'x', sizeof(data));
	open_keyed(c);
	for (int i = 0; i < 2; i++) {
		up_fh(up[i], 128, 20 + (unsigned)i);
		roundtrip(c->s, up[i], 128, fh[i]);
		assert_int_equal(store_inline_put(c->s, fh[i], 64, &a, NULL, data, sizeof(data)), 0);
	}
	assert_int_equal(store_commit(c->s), 0);
	assert_int_equal(store_cull_to(c->s, 0, 100), 2);
	assert_int_equal(store_commit(c->s), 0);
	store_get_stats(c->s, &st);
	assert_int_equal(st.objects, 0);
	assert_int_equal(store_obj_get(c->s, fh[0], 64, &o), -ENOENT);
	/* a record forgotten (stale data, a REMOVE through the proxy) */
	assert_int_equal(store_obj_reset(c->s, fh[1], 64, &a, NULL, &o), 0);
	assert_int_equal(store_obj_drop(c->s, fh[1], 64, 1), 0);
	assert_int_equal(store_commit(c->s), 0);
	reopen(c);
	assert_int_equal(store_fh_count(c->s), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(decode(c->s, fh[i], back, &backlen), 0);
		assert_memory_equal(back, up[i], 128);
	}
}

/* A mapped handle the map does not know is stale: one made by another key
 * or never given out, one of a version this build does not read. */
static void test_unknown_stale(void **state)
{
	struct ctx *c = *state;
	uint8_t up[80], fh[STORE_FH_MAX], back[STORE_FH_UP_MAX];
	uint32_t fhlen, backlen;

	open_keyed(c);
	up_fh(up, sizeof(up), 5);
	assert_int_equal(roundtrip(c->s, up, sizeof(up), fh), 1);
	fh[40] ^= 0x10; /* a client's damaged or made-up handle */
	assert_int_equal(decode(c->s, fh, back, &backlen), -ESTALE);
	fh[40] ^= 0x10;
	fh[6] = 2; /* a later format */
	assert_int_equal(decode(c->s, fh, back, &backlen), -ESTALE);
	fh[6] = 1;
	assert_int_equal(decode(c->s, fh, back, &backlen), 0);
	assert_int_equal(store_fh_encode(c->s, up, sizeof(up), fh, &fhlen), 0);
}

/* A mapping damaged in place on the disk is not believed: its handle is
 * stale, and its slot is never given to another handle (some client may
 * hold it); the same upstream handle gets the next salt. */
static void test_bad_record(void **state)
{
	struct ctx *c = *state;
	uint8_t up[100], fh[STORE_FH_MAX], fh2[STORE_FH_MAX], back[STORE_FH_UP_MAX];
	uint32_t backlen;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = {STORE_FH_MAPPED_LEN, fh}, v;
	uint8_t copy[256];
	char path[256], log[4096];
	struct cap cp;

	open_keyed(c);
	up_fh(up, sizeof(up), 9);
	assert_int_equal(roundtrip(c->s, up, sizeof(up), fh), 1);
	assert_int_equal(store_commit(c->s), 0);
	store_close(c->s);
	c->s = NULL;

	snprintf(path, sizeof(path), "%s/index", c->dir);
	assert_int_equal(mdb_env_create(&env), 0);
	mdb_env_set_maxdbs(env, 8);
	mdb_env_set_mapsize(env, c->p.map_size);
	assert_int_equal(mdb_env_open(env, path, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "fhmap", 0, &dbi), 0);
	assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
	assert_int_equal(v.mv_size, 2 + sizeof(up) + 8);
	memcpy(copy, v.mv_data, v.mv_size);
	copy[2 + 50] ^= 0x04; /* one bit of the upstream handle */
	v.mv_data = copy;
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);

	open_keyed(c);
	cap_begin(&cp, c->root, log, sizeof(log));
	assert_int_equal(decode(c->s, fh, back, &backlen), -ESTALE);
	fputs(cap_end(&cp), stderr);
	assert_non_null(strstr(log, "fails its checksum"));
	assert_int_equal(roundtrip(c->s, up, sizeof(up), fh2), 1);
	assert_int_equal(fh2[7], 1);
	assert_memory_not_equal(fh2, fh, STORE_FH_MAPPED_LEN);
	assert_int_equal(decode(c->s, fh, back, &backlen), -ESTALE);
	assert_int_equal(store_fh_count(c->s), 2);
}

/* The index found damaged: while it runs broken, mapped handles cannot be
 * read (-EIO; short ones still pass); the next start replaces the index,
 * the map is empty and old mapped handles are stale until their upstream
 * handles are encoded again, which gives them the very same handles. */
static void test_index_damage(void **state)
{
	struct ctx *c = *state;
	uint8_t up[128], small[20], fh[STORE_FH_MAX], fh2[STORE_FH_MAX], back[STORE_FH_UP_MAX];
	uint32_t fhlen, backlen;
	struct store_stats st;
	char log[4096];
	struct cap k;

	open_keyed(c);
	up_fh(up, sizeof(up), 30);
	up_fh(small, sizeof(small), 31);
	assert_int_equal(roundtrip(c->s, up, sizeof(up), fh), 1);
	assert_int_equal(store_commit(c->s), 0);
	cap_begin(&k, c->root, log, sizeof(log));
	store_set_broken(c->s, MDB_CORRUPTED, "object lookup");
	fputs(cap_end(&k), stderr);
	assert_int_equal(decode(c->s, fh, back, &backlen), -EIO);
	assert_int_equal(store_fh_encode(c->s, up, sizeof(up), fh2, &fhlen), -EIO);
	assert_int_equal(store_fh_encode(c->s, small, sizeof(small), fh2, &fhlen), 0);
	assert_int_equal(store_fh_decode(c->s, small, sizeof(small), back, &backlen), 0);

	cap_begin(&k, c->root, log, sizeof(log));
	reopen(c);
	fputs(cap_end(&k), stderr);
	assert_non_null(strstr(log, "LMDB reported damage while it was in use"));
	store_get_stats(c->s, &st);
	assert_int_equal(st.index_recoveries[STORE_DMG_LMDB], 1);
	assert_int_equal(store_fh_count(c->s), 0);
	assert_int_equal(decode(c->s, fh, back, &backlen), -ESTALE);
	assert_int_equal(roundtrip(c->s, up, sizeof(up), fh2), 1);
	assert_memory_equal(fh2, fh, STORE_FH_MAPPED_LEN);
}

/* The index full: a new mapping fails with -ENOSPC (the batch is lost),
 * what was committed stays; culling makes room by evicting cached data,
 * never mappings, and the mapping can be made. */
static void test_index_full(void **state)
{
	struct ctx *c = *state;
	uint8_t up[128], fh[STORE_FH_MAX], data[60000], back[STORE_FH_UP_MAX];
	uint32_t fhlen, backlen;
	fattr3 a;
	char name[16], log[8192];
	struct cap k;
	int i, n = 0, rc = 0;

	memset(&a, 0, sizeof(a));
	a.type = NF3REG;
	a.size = sizeof(data);
	memset(data, 3, sizeof(data));
	c->p.map_size = 1 << 20;
	open_keyed(c);
	/* as in test_store's test_index_full: the orphan scan's read
	 * transaction would keep freed pages from reuse */
	assert_int_equal(store_test_wait_idle(c->s, 10000), 0);
	cap_begin(&k, c->root, log, sizeof(log));
	/* cached data fills most of the index, mappings the rest */
	for (i = 0; rc == 0 && i < 12; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		store_test_set_now(c->s, 1000 + (uint64_t)i);
		rc = store_inline_put(c->s, name, (uint32_t)strlen(name), &a, NULL, data, sizeof(data));
		if (rc == 0)
			rc = store_commit(c->s);
	}
	for (rc = 0; rc >= 0 && n < 20000; n++) {
		up_fh(up, sizeof(up), (unsigned)n);
		memcpy(up, &n, sizeof(n));
		rc = store_fh_encode(c->s, up, sizeof(up), fh, &fhlen);
		if (rc >= 0)
			rc = store_commit(c->s);
	}
	fputs(cap_end(&k), stderr);
	n--; /* the one that failed */
	assert_int_equal(rc, -ENOSPC);
	assert_true(n > 100);
	assert_non_null(strstr(log, "index is full"));
	assert_int_equal(store_fh_count(c->s), (uint64_t)n);
	/* culling evicts data; the map stays whole */
	assert_true(store_cull_step(c->s, 4) > 0);
	assert_int_equal(store_commit(c->s), 0);
	up_fh(up, sizeof(up), (unsigned)n);
	memcpy(up, &n, sizeof(n));
	assert_int_equal(roundtrip(c->s, up, sizeof(up), fh), 1);
	assert_int_equal(store_commit(c->s), 0);
	assert_int_equal(store_fh_count(c->s), (uint64_t)n + 1);
	for (i = 0; i <= n; i += 97) {
		up_fh(up, sizeof(up), (unsigned)i);
		memcpy(up, &i, sizeof(i));
		assert_int_equal(store_fh_encode(c->s, up, sizeof(up), fh, &fhlen), 0);
		assert_int_equal(decode(c->s, fh, back, &backlen), 0);
		assert_memory_equal(back, up, sizeof(up));
	}
}

/* --- the seam: origin_fhmap.c ------------------------------------------------ */

static void set_fh(nfs_fh3 *fh, uint8_t *b, uint32_t len)
{
	fh->data.data_val = (char *)b;
	fh->data.data_len = len;
}

/* A READDIRPLUS answer as the NFSv4.0 client gives it: the long handles
 * become 64-byte mapped ones, committed before the answer goes on (no
 * batch left open), the short one and an entry without a handle stay as
 * they are; afterwards the filer's handles are put back (their owner
 * frees them). A second page with the same handles makes nothing new. */
static void test_seam_readdirplus(void **state)
{
	struct ctx *c = *state;
	uint8_t h[4][STORE_FH_UP_MAX], want[STORE_FH_MAX];
	static const uint32_t lens[4] = {20, 80, 128, 0};
	entryplus3 en[4];
	READDIRPLUS3res res;
	struct ofh_res r;
	uint32_t wlen;

	open_keyed(c);
	memset(&res, 0, sizeof(res));
	memset(en, 0, sizeof(en));
	for (int i = 0; i < 4; i++) {
		up_fh(h[i], STORE_FH_UP_MAX, (unsigned)i + 10);
		en[i].name_handle.handle_follows = lens[i] != 0;
		set_fh(&en[i].name_handle.post_op_fh3_u.handle, h[i], lens[i]);
		en[i].nextentry = i < 3 ? &en[i + 1] : NULL;
	}
	res.READDIRPLUS3res_u.resok.reply.entries = &en[0];
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(ofh_res_encode(c->s, NFS3_READDIRPLUS, &res, &r), 0);
		assert_int_equal(r.mapped, 2);
		assert_int_equal(r.created, pass == 0 ? 2 : 0);
		assert_null(c->s->wtxn); /* committed */
		assert_int_equal(en[0].name_handle.post_op_fh3_u.handle.data.data_len, 20);
		assert_ptr_equal(en[0].name_handle.post_op_fh3_u.handle.data.data_val, h[0]);
		for (int i = 1; i < 3; i++) {
			nfs_fh3 *fh = &en[i].name_handle.post_op_fh3_u.handle;

			assert_int_equal(fh->data.data_len, STORE_FH_MAPPED_LEN);
			assert_int_equal(store_fh_encode(c->s, h[i], lens[i], want, &wlen), 0);
			assert_memory_equal(fh->data.data_val, want, STORE_FH_MAPPED_LEN);
		}
		assert_int_equal(en[3].name_handle.handle_follows, 0);
		ofh_res_restore(&r);
		for (int i = 0; i < 3; i++) {
			assert_ptr_equal(en[i].name_handle.post_op_fh3_u.handle.data.data_val, h[i]);
			assert_int_equal(en[i].name_handle.post_op_fh3_u.handle.data.data_len, lens[i]);
			assert_int_equal(en[i].name_handle.handle_follows, 1);
		}
	}
	assert_int_equal(store_fh_count(c->s), 2);
}

/* LOOKUP and MKDIR answers; before the store is known (NULL) a long
 * handle cannot be given: LOOKUP says try again (JUKEBOX), MKDIR's answer
 * leaves the handle out (the client LOOKUPs it later). */
static void test_seam_lookup_create(void **state)
{
	struct ctx *c = *state;
	uint8_t h[100], want[STORE_FH_MAX];
	LOOKUP3res lr;
	MKDIR3res mr;
	struct ofh_res r;
	uint32_t wlen;

	up_fh(h, sizeof(h), 5);
	memset(&lr, 0, sizeof(lr));
	set_fh(&lr.LOOKUP3res_u.resok.object, h, sizeof(h));
	memset(&mr, 0, sizeof(mr));
	mr.MKDIR3res_u.resok.obj.handle_follows = 1;
	set_fh(&mr.MKDIR3res_u.resok.obj.post_op_fh3_u.handle, h, sizeof(h));

	assert_int_equal(ofh_res_encode(NULL, NFS3_LOOKUP, &lr, &r), 0);
	assert_int_equal(r.lookup_failed, NFS3ERR_JUKEBOX);
	ofh_res_restore(&r);
	assert_int_equal(ofh_res_encode(NULL, NFS3_MKDIR, &mr, &r), 0);
	assert_int_equal(mr.MKDIR3res_u.resok.obj.handle_follows, 0);
	ofh_res_restore(&r);
	assert_int_equal(mr.MKDIR3res_u.resok.obj.handle_follows, 1);

	open_keyed(c);
	assert_int_equal(ofh_res_encode(c->s, NFS3_MKDIR, &mr, &r), 0);
	assert_int_equal(r.created, 1);
	assert_null(c->s->wtxn);
	assert_int_equal(store_fh_encode(c->s, h, sizeof(h), want, &wlen), 0);
	assert_memory_equal(mr.MKDIR3res_u.resok.obj.post_op_fh3_u.handle.data.data_val, want,
	                    STORE_FH_MAPPED_LEN);
	ofh_res_restore(&r);
	assert_int_equal(ofh_res_encode(c->s, NFS3_LOOKUP, &lr, &r), 0);
	assert_int_equal(r.lookup_failed, 0);
	assert_int_equal(r.created, 0);
	assert_int_equal(lr.LOOKUP3res_u.resok.object.data.data_len, STORE_FH_MAPPED_LEN);
	assert_memory_equal(lr.LOOKUP3res_u.resok.object.data.data_val, want, STORE_FH_MAPPED_LEN);
	ofh_res_restore(&r);
	assert_ptr_equal(lr.LOOKUP3res_u.resok.object.data.data_val, h);
	/* a failed LOOKUP is not looked at */
	lr.status = NFS3ERR_NOENT;
	assert_int_equal(ofh_res_encode(c->s, NFS3_LOOKUP, &lr, &r), 0);
	assert_int_equal(r.mapped, 0);
}

/* A call's handles: a mapped one is the filer's handle while the call is
 * made, a short one is left alone, the caller's come back after; a mapped
 * handle the index does not know is -ESTALE and leaves the call as it
 * was. */
static void test_seam_args(void **state)
{
	struct ctx *c = *state;
	uint8_t up[90], mapped[STORE_FH_MAX], other[10], bad[STORE_FH_MAX];
	RENAME3args ra;
	READ3args rd;
	struct ofh_args a;
	uint32_t len;

	open_keyed(c);
	up_fh(up, sizeof(up), 7);
	up_fh(other, sizeof(other), 8);
	assert_int_equal(store_fh_encode(c->s, up, sizeof(up), mapped, &len), 1);
	assert_int_equal(store_commit(c->s), 0);
	memset(&ra, 0, sizeof(ra));
	set_fh(&ra.from.dir, mapped, STORE_FH_MAPPED_LEN);
	set_fh(&ra.to.dir, other, sizeof(other));
	assert_int_equal(ofh_args_decode(c->s, NFS3_RENAME, &ra, &a), 0);
	assert_int_equal(ra.from.dir.data.data_len, sizeof(up));
	assert_memory_equal(ra.from.dir.data.data_val, up, sizeof(up));
	assert_ptr_equal(ra.to.dir.data.data_val, other);
	ofh_args_restore(&a);
	assert_ptr_equal(ra.from.dir.data.data_val, mapped);
	assert_int_equal(ra.from.dir.data.data_len, STORE_FH_MAPPED_LEN);

	memcpy(bad, mapped, sizeof(bad));
	bad[STORE_FH_MAPPED_LEN - 1] ^= 1;
	memset(&rd, 0, sizeof(rd));
	set_fh(&rd.file, bad, STORE_FH_MAPPED_LEN);
	assert_int_equal(ofh_args_decode(c->s, NFS3_READ, &rd, &a), -ESTALE);
	assert_ptr_equal(rd.file.data.data_val, bad);
	/* a rename from a known handle into an unknown one: nothing changed */
	set_fh(&ra.to.dir, bad, STORE_FH_MAPPED_LEN);
	assert_int_equal(ofh_args_decode(c->s, NFS3_RENAME, &ra, &a), -ESTALE);
	assert_ptr_equal(ra.from.dir.data.data_val, mapped);
	assert_ptr_equal(ra.to.dir.data.data_val, bad);
	/* before the store is known no mapped handle resolves */
	set_fh(&rd.file, mapped, STORE_FH_MAPPED_LEN);
	assert_int_equal(ofh_args_decode(NULL, NFS3_READ, &rd, &a), -ESTALE);
	set_fh(&rd.file, other, sizeof(other));
	assert_int_equal(ofh_args_decode(NULL, NFS3_READ, &rd, &a), 0);
	assert_int_equal(a.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_short_pass, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_long_maps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_persist_and_agree, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_collision, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_magic_64, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cull_keeps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unknown_stale, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_record, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_index_damage, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_index_full, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_seam_readdirplus, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_seam_lookup_create, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_seam_args, setup, teardown),
	};

	/* Expected warnings are captured and checked where they matter. */
	log_set_level(CFS_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
