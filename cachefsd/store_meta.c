/* The metadata cache's records: opaque keys and values in their own LMDB
 * database, written in the store's per-pass transaction. */
#include "store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define MKEY_MAX 500

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
		return store_mdb_errno(rc);
	}
	*val = v.mv_data;
	*vlen = v.mv_size;
	return 0;
}

int store_meta_put(struct store *s, const void *key, size_t klen, const void *val, size_t vlen)
{
	MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
	int rc;

	if (!key_ok(key, klen))
		return -EINVAL;
	if (store_txn_write(s, &rc) == NULL)
		return rc;
	rc = mdb_put(s->wtxn, s->db_mcache, &k, &v, 0);
	if (rc)
		return store_txn_fail(s, rc, "metadata put");
	s->txn_bytes += klen + vlen;
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
		if (expired(v.mv_data, v.mv_size, arg) && keylist_add(&l, &k) != 0)
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
