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

int store_meta_get(struct store *s, const void *key, size_t klen, const void **val, size_t *vlen)
{
	MDB_val k = {klen, (void *)key}, v;
	MDB_txn *txn;
	int rc;

	if (!key_ok(key, klen))
		return -EINVAL;
	txn = store_txn_read(s, &rc);
	if (txn == NULL)
		return rc;
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
	MDB_stat st;
	MDB_txn *txn;
	int rc;

	txn = store_txn_read(s, &rc);
	if (txn == NULL || mdb_stat(txn, s->db_mcache, &st) != 0)
		return 0;
	return st.ms_entries;
}
