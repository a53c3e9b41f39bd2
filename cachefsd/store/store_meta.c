/* The metadata cache's records: opaque keys and values in their own LMDB
 * database, written in the store's per-pass transaction.
 *
 * Each value is stored with an xxh3-64 of its key and bytes after it:
 * these records are served to clients (attributes, names, handles) with
 * nothing upstream to compare them with, so a value damaged in place on
 * the disk (which no structural check of the index sees) must not be
 * believed. One that fails is deleted and counted as a miss. */
#include "store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "log.h"

#define MKEY_MAX 500
#define MSUM     8 /* the checksum after the value */
/* in the meta database: the records carry MSUM (older ones did not) */
#define FORMAT_KEY "mcache_format"
#define FORMAT     2

static uint64_t msum(const void *key, size_t klen, const void *val, size_t vlen)
{
	return XXH3_64bits_withSeed(val, vlen, XXH3_64bits(key, klen));
}

static int sum_ok(const MDB_val *k, const MDB_val *v)
{
	return v->mv_size >= MSUM &&
	       store_get_le64((const uint8_t *)v->mv_data + v->mv_size - MSUM) ==
	           msum(k->mv_data, k->mv_size, v->mv_data, v->mv_size - MSUM);
}

int store_meta_open(struct store *s, MDB_txn *txn)
{
	MDB_val k = {sizeof(FORMAT_KEY) - 1, FORMAT_KEY}, v;
	uint8_t b[4];
	MDB_stat st;
	int rc = mdb_get(txn, s->db_meta, &k, &v);

	if (rc == 0 && v.mv_size == 4 && store_get_le32(v.mv_data) == FORMAT)
		return 0;
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	rc = mdb_stat(txn, s->db_mcache, &st);
	if (rc == 0 && st.ms_entries) {
		log_info("cache index: %zu metadata records of an older format dropped",
		         (size_t)st.ms_entries);
		rc = mdb_drop(txn, s->db_mcache, 0);
		store_meta_memo_clear(s);
	}
	store_put_le32(b, FORMAT);
	v.mv_size = sizeof(b);
	v.mv_data = b;
	return rc ? rc : mdb_put(txn, s->db_meta, &k, &v, 0);
}

static void bad_value(struct store *s, const void *key, size_t klen, size_t vlen)
{
	uint64_t now = store_now(s);

	s->mcache_bad++;
	if (s->mcache_bad_logged == 0 || now >= s->mcache_bad_logged + 60) {
		log_warn("cache index: a metadata record (%zu bytes) fails its checksum: dropped "
		         "(%" PRIu64 " so far)",
		         vlen, s->mcache_bad);
		s->mcache_bad_logged = now;
	}
	store_meta_del(s, key, klen);
}

static int key_ok(const void *key, size_t klen)
{
	return key != NULL && klen > 0 && klen <= MKEY_MAX;
}

/* --- the memo ------------------------------------------------------------------
 * A local answer reads two to five records (a LOOKUP: the name, the
 * directory's and the child's attributes, the evidence), and an LMDB get
 * with its checksum costs about as much as the rest of the call. The memo
 * keeps the last records read or written, by a hash of the key, one per
 * slot: the small ones (attributes, names, ACCESS answers; not directory
 * pages). It holds exactly what the index holds: every put writes its
 * slot, every delete empties it, and a lost write transaction (rollback())
 * empties them all. Only this file writes the metadata database and the
 * store's lock keeps other processes out, so nothing else can change a
 * record behind it. A value is checked once, when read from the index. */
#define MMEMO_SLOTS 16384 /* × sizeof(struct mmemo_slot): 3.2 MB at most */
#define MMEMO_KEY   96    /* 'a' and 'x' keys of handles up to 64 bytes, most names */
#define MMEMO_VAL   96    /* stamp + fattr3 (92), lookup, ACCESS records */

struct mmemo_slot {
	uint32_t gen; /* valid when s->mmemo_gen */
	uint16_t klen, vlen;
	uint8_t key[MMEMO_KEY];
	uint8_t val[MMEMO_VAL];
};

static struct mmemo_slot *mmemo_slot(struct store *s, const void *key, size_t klen)
{
	if (klen > MMEMO_KEY)
		return NULL;
	if (s->mmemo == NULL) {
		/* untouched pages of it cost no memory */
		s->mmemo = calloc(MMEMO_SLOTS, sizeof(*s->mmemo));
		if (s->mmemo == NULL)
			return NULL;
		s->mmemo_gen = 1;
	}
	return &s->mmemo[XXH3_64bits(key, klen) & (MMEMO_SLOTS - 1)];
}

static int mmemo_is(const struct store *s, const struct mmemo_slot *m, const void *key, size_t klen)
{
	return m->gen == s->mmemo_gen && m->klen == klen && memcmp(m->key, key, klen) == 0;
}

/* Remembers key's value (or forgets whatever the slot held, when the value
 * does not fit). */
static void mmemo_set(struct store *s, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct mmemo_slot *m = mmemo_slot(s, key, klen);

	if (m == NULL)
		return;
	if (vlen > MMEMO_VAL) {
		if (mmemo_is(s, m, key, klen))
			m->gen = 0;
		return;
	}
	m->gen = s->mmemo_gen;
	m->klen = (uint16_t)klen;
	m->vlen = (uint16_t)vlen;
	memcpy(m->key, key, klen);
	if (vlen)
		memcpy(m->val, val, vlen);
}

static void mmemo_forget(struct store *s, const void *key, size_t klen)
{
	struct mmemo_slot *m;

	if (s->mmemo == NULL || (m = mmemo_slot(s, key, klen)) == NULL)
		return;
	if (mmemo_is(s, m, key, klen))
		m->gen = 0;
}

void store_meta_memo_clear(struct store *s)
{
	if (++s->mmemo_gen == 0) { /* wrapped: old slots could look current */
		if (s->mmemo)
			memset(s->mmemo, 0, MMEMO_SLOTS * sizeof(*s->mmemo));
		s->mmemo_gen = 1;
	}
}

void store_meta_memo_free(struct store *s)
{
	free(s->mmemo);
	s->mmemo = NULL;
}

int store_meta_get(struct store *s, const void *key, size_t klen, const void **val, size_t *vlen)
{
	MDB_val k = {klen, (void *)key}, v;
	MDB_txn *txn;
	int rc;

	if (!key_ok(key, klen))
		return -EINVAL;
	txn = store_txn_read(s, &rc); /* (also: a broken store answers nothing) */
	if (txn == NULL)
		return rc;
	struct mmemo_slot *m = mmemo_slot(s, key, klen);
	if (m && mmemo_is(s, m, key, klen)) {
		*val = m->val;
		*vlen = m->vlen;
		return 0;
	}
	rc = mdb_get(txn, s->db_mcache, &k, &v);
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc) {
		log_err("cache index: metadata get: %s", mdb_strerror(rc));
		if (store_mdb_fatal(rc))
			store_set_broken(s, rc, "metadata get");
		return store_mdb_errno(rc);
	}
	if (!sum_ok(&k, &v)) {
		bad_value(s, key, klen, v.mv_size);
		return -EBADMSG;
	}
	*val = v.mv_data;
	*vlen = v.mv_size - MSUM;
	mmemo_set(s, key, klen, *val, *vlen);
	return 0;
}

int store_meta_put(struct store *s, const void *key, size_t klen, const void *val, size_t vlen)
{
	MDB_val k = {klen, (void *)key}, v = {vlen + MSUM, NULL};
	int rc;

	if (!key_ok(key, klen) || (val == NULL && vlen > 0))
		return -EINVAL;
	if (store_txn_write(s, &rc) == NULL)
		return rc;
	rc = mdb_put(s->wtxn, s->db_mcache, &k, &v, MDB_RESERVE);
	if (rc)
		return store_txn_fail(s, rc, "metadata put");
	if (vlen)
		memcpy(v.mv_data, val, vlen);
	store_put_le64((uint8_t *)v.mv_data + vlen, msum(key, klen, val, vlen));
	s->txn_bytes += klen + vlen + MSUM;
	mmemo_set(s, key, klen, val, vlen);
	return 0;
}

int store_meta_del(struct store *s, const void *key, size_t klen)
{
	MDB_val k = {klen, (void *)key};
	int rc;

	if (!key_ok(key, klen))
		return -EINVAL;
	if (store_txn_write(s, &rc) == NULL)
		return rc;
	mmemo_forget(s, key, klen);
	rc = mdb_del(s->wtxn, s->db_mcache, &k, NULL);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return store_txn_fail(s, rc, "metadata delete");
	s->txn_drops = 1;
	return 0;
}

/* Keys are collected with a cursor and deleted afterwards with mdb_del: no
 * reliance on where a cursor stands after mdb_cursor_del. */
struct keylist {
	uint8_t *buf;
	size_t len, cap;
	int n;
};

static int keylist_add(struct keylist *l, const MDB_val *k)
{
	if (l->len + k->mv_size + 2 > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4096;
		while (cap < l->len + k->mv_size + 2)
			cap *= 2;
		uint8_t *b = realloc(l->buf, cap);
		if (b == NULL)
			return -ENOMEM;
		l->buf = b;
		l->cap = cap;
	}
	l->buf[l->len] = (uint8_t)(k->mv_size >> 8);
	l->buf[l->len + 1] = (uint8_t)k->mv_size;
	memcpy(l->buf + l->len + 2, k->mv_data, k->mv_size);
	l->len += k->mv_size + 2;
	l->n++;
	return 0;
}

static int keylist_delete(struct store *s, struct keylist *l)
{
	for (size_t off = 0; off < l->len;) {
		size_t n = (size_t)l->buf[off] << 8 | l->buf[off + 1];
		MDB_val k = {n, l->buf + off + 2};
		mmemo_forget(s, k.mv_data, k.mv_size);
		int rc = mdb_del(s->wtxn, s->db_mcache, &k, NULL);
		if (rc && rc != MDB_NOTFOUND)
			return store_txn_fail(s, rc, "metadata delete");
		if (rc == 0)
			s->txn_drops = 1;
		off += n + 2;
	}
	return 0;
}

int store_meta_del_prefix(struct store *s, const void *prefix, size_t plen)
{
	struct keylist l = {0};
	MDB_cursor *cur;
	MDB_val k = {plen, (void *)prefix}, v;
	int rc;

	if (!key_ok(prefix, plen))
		return -EINVAL;
	if (store_txn_write(s, &rc) == NULL)
		return rc;
	rc = mdb_cursor_open(s->wtxn, s->db_mcache, &cur);
	if (rc)
		return store_txn_fail(s, rc, "metadata cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0 && k.mv_size >= plen && memcmp(k.mv_data, prefix, plen) == 0) {
		if (keylist_add(&l, &k) != 0)
			break;
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	if (rc && rc != MDB_NOTFOUND) {
		free(l.buf);
		return store_txn_fail(s, rc, "metadata prefix walk");
	}
	rc = keylist_delete(s, &l);
	free(l.buf);
	return rc ? rc : l.n;
}

int store_meta_sweep(struct store *s, int max,
		     int (*expired)(const void *val, size_t vlen, void *arg), void *arg)
{
	struct keylist l = {0};
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	if (store_txn_write(s, &rc) == NULL)
		return rc;
	rc = mdb_cursor_open(s->wtxn, s->db_mcache, &cur);
	if (rc)
		return store_txn_fail(s, rc, "metadata cursor");
	if (s->mcache_cursor_len) {
		k.mv_size = s->mcache_cursor_len;
		k.mv_data = s->mcache_cursor;
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	} else {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	}
	for (int i = 0; i < max && rc == 0; i++) {
		/* a record that fails its checksum goes too */
		if ((!sum_ok(&k, &v) || expired(v.mv_data, v.mv_size - MSUM, arg)) &&
		    keylist_add(&l, &k) != 0)
			break;
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	if (rc == 0 && k.mv_size <= sizeof(s->mcache_cursor)) {
		memcpy(s->mcache_cursor, k.mv_data, k.mv_size);
		s->mcache_cursor_len = k.mv_size;
	} else {
		s->mcache_cursor_len = 0; /* the end: start over next time */
	}
	mdb_cursor_close(cur);
	if (rc && rc != MDB_NOTFOUND) {
		free(l.buf);
		return store_txn_fail(s, rc, "metadata sweep");
	}
	rc = keylist_delete(s, &l);
	free(l.buf);
	return rc ? rc : l.n;
}

uint64_t store_meta_count(struct store *s)
{
	return store_db_entries(s, s->db_mcache, "metadata count");
}
