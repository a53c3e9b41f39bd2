/* Operator actions on the store (cachefsctl, through control.c): verify
 * (a walk over the index checking every inline object and every chunk's
 * bytes against its checksum), cull to a target, the walk over objects
 * that invalidate --all uses, and live limits (reload).
 *
 * Everything here runs on the loop thread except store_verify_chunk(),
 * which only reads a data file. Walks keep their place as the last key
 * seen, not as an LMDB cursor: the index changes between steps (each step
 * opens a cursor in the pass's transaction and seeks past that key). */
#include "store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "log.h"

void store_set_limits(struct store *s, const struct store_params *p)
{
	s->cache_size = p->cache_size;
	s->brun = p->brun;
	s->bcull = p->bcull;
	s->bstop = p->bstop;
	s->frun = p->frun;
	s->fcull = p->fcull;
	s->fstop = p->fstop;
}

int store_cull_to(struct store *s, uint64_t target, int max)
{
	uint64_t freed;
	int n = 0, rc;

	if (s->broken)
		return -EIO;
	/* stale LRU entries and objects accessed since are skipped, not
	 * evicted: bound the attempts too */
	for (int tries = 0; n < max && tries < 2 * max + 16 && s->tot.bytes > target; tries++) {
		rc = store_evict_oldest(s, &freed);
		if (rc == -ENOENT)
			break;
		if (rc < 0)
			return n ? n : rc;
		n += rc;
	}
	return n;
}

/* Positions cur at the first key after w->key (or the first key). */
static int seek_after(MDB_cursor *cur, const uint8_t *key, uint32_t klen, int started, MDB_val *k,
                      MDB_val *v)
{
	int rc;

	if (!started)
		return mdb_cursor_get(cur, k, v, MDB_FIRST);
	k->mv_size = klen;
	k->mv_data = (void *)key;
	rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
	if (rc == 0 && k->mv_size == klen && memcmp(k->mv_data, key, klen) == 0)
		rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
	return rc;
}

int store_next_object(struct store *s, uint8_t *fh, uint32_t *fhlen)
{
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	int rc;

	txn = store_txn_read(s, &rc);
	if (txn == NULL)
		return rc;
	if (mdb_cursor_open(txn, s->db_obj, &cur) != 0)
		return -EIO;
	do {
		rc = seek_after(cur, fh, *fhlen, *fhlen > 0, &k, &v);
		if (rc == 0) {
			/* a key too long to be a handle cannot be one: skip it */
			uint32_t n = k.mv_size <= STORE_FH_MAX ? (uint32_t)k.mv_size : STORE_FH_MAX;
			memcpy(fh, k.mv_data, n);
			*fhlen = n;
		}
	} while (rc == 0 && (k.mv_size == 0 || k.mv_size > STORE_FH_MAX));
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	return rc ? -EIO : 0;
}

/* --- verify --------------------------------------------------------------- */

/* Keys a walk step looks at before it gives the loop back. */
#define WALK_BUDGET 4096

static void item_key(struct store_vitem *it, const MDB_val *k)
{
	it->klen = k->mv_size <= sizeof(it->key) ? (uint32_t)k->mv_size : sizeof(it->key);
	memcpy(it->key, k->mv_data, it->klen);
}

static void item_fh(struct store_vitem *it, const void *fh, size_t len)
{
	it->fhlen = len <= STORE_FH_MAX ? (uint32_t)len : STORE_FH_MAX;
	memcpy(it->fh, fh, it->fhlen);
}

/* Phase 0: one object record. Chunked objects yield nothing here (their
 * chunks come in phase 1): returns 1 to go on to the next key. */
static int verify_object(const MDB_val *k, const MDB_val *v, struct store_vitem *it)
{
	struct store_obj o;
	const uint8_t *inl;
	uint64_t csum;

	memset(it, 0, sizeof(*it));
	item_key(it, k);
	item_fh(it, k->mv_data, k->mv_size);
	if (k->mv_size == 0 || k->mv_size > STORE_FH_MAX ||
	    store_rec_unpack(v->mv_data, v->mv_size, &o, &csum, &inl) != 0) {
		it->kind = STORE_V_BAD_RECORD;
		return 0;
	}
	if (!(o.flags & STORE_OBJ_INLINE))
		return 1;
	it->kind = STORE_V_INLINE;
	it->len = o.inline_len;
	it->csum = csum;
	it->ok = XXH3_64bits(inl, o.inline_len) == csum;
	return 0;
}

/* The chunk phase's object: looked up once per handle. */
static void chunk_owner(struct store *s, MDB_txn *txn, struct store_walk *w, const uint8_t *fh,
                        uint32_t fhlen)
{
	MDB_val k = {fhlen, (void *)fh}, v;
	struct store_obj o;

	if (w->last_kind >= 0 && w->last_fhlen == fhlen && memcmp(w->last_fh, fh, fhlen) == 0)
		return;
	memcpy(w->last_fh, fh, fhlen);
	w->last_fhlen = fhlen;
	w->last_kind = 1;
	if (mdb_get(txn, s->db_obj, &k, &v) == 0 &&
	    store_rec_unpack(v.mv_data, v.mv_size, &o, NULL, NULL) == 0 &&
	    !(o.flags & STORE_OBJ_INLINE)) {
		w->last_kind = 0;
		w->last_data_id = o.data_id;
		w->last_chunk_size = o.chunk_size;
	}
}

/* Phase 1: one chunk entry; key = fhlen (1 byte) + fh + index (u32 BE). */
static int verify_chunk_entry(struct store *s, MDB_txn *txn, struct store_walk *w, const MDB_val *k,
                              const MDB_val *v, struct store_vitem *it)
{
	const uint8_t *kb = k->mv_data;
	uint32_t fhlen;

	memset(it, 0, sizeof(*it));
	item_key(it, k);
	fhlen = k->mv_size ? kb[0] : 0;
	if (fhlen == 0 || fhlen > STORE_FH_MAX || k->mv_size != 5 + (size_t)fhlen) {
		item_fh(it, kb, k->mv_size > STORE_FH_MAX ? STORE_FH_MAX : k->mv_size);
		it->kind = STORE_V_BAD_ENTRY;
		return 0;
	}
	item_fh(it, kb + 1, fhlen);
	it->idx = (uint32_t)kb[1 + fhlen] << 24 | (uint32_t)kb[2 + fhlen] << 16 |
	          (uint32_t)kb[3 + fhlen] << 8 | kb[4 + fhlen];
	if (v->mv_size != STORE_CHUNK_VAL) {
		it->kind = STORE_V_BAD_ENTRY;
		return 0;
	}
	it->csum = store_get_le64(v->mv_data);
	it->len = store_get_le32((const uint8_t *)v->mv_data + 8);
	chunk_owner(s, txn, w, it->fh, it->fhlen);
	if (w->last_kind != 0) {
		it->kind = STORE_V_ORPHAN;
		return 0;
	}
	it->kind = STORE_V_CHUNK;
	it->data_id = w->last_data_id;
	it->off = (uint64_t)it->idx * w->last_chunk_size;
	if (it->len > w->last_chunk_size)
		it->kind = STORE_V_BAD_ENTRY;
	return 0;
}

int store_verify_next(struct store *s, struct store_walk *w, struct store_vitem *it)
{
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	int rc, more, budget = WALK_BUDGET;

	if (!w->started && w->phase == 0)
		w->last_kind = -1;
	while (w->phase < 2) {
		if (budget <= 0)
			return -EAGAIN;
		txn = store_txn_read(s, &rc);
		if (txn == NULL)
			return rc;
		rc = mdb_cursor_open(txn, w->phase == 0 ? s->db_obj : s->db_chunk, &cur);
		if (rc)
			return -EIO;
		more = 1;
		rc = seek_after(cur, w->key, w->klen, w->started, &k, &v);
		while (rc == 0 && more) {
			w->klen =
			    k.mv_size <= sizeof(w->key) ? (uint32_t)k.mv_size : sizeof(w->key);
			memcpy(w->key, k.mv_data, w->klen);
			w->started = 1;
			if (k.mv_size > sizeof(w->key)) {
				/* cannot be seeked past exactly: report and stop the phase */
				memset(it, 0, sizeof(*it));
				it->kind = w->phase == 0 ? STORE_V_BAD_RECORD : STORE_V_BAD_ENTRY;
				item_key(it, &k);
				item_fh(it, k.mv_data, STORE_FH_MAX);
				mdb_cursor_close(cur);
				w->phase++;
				w->started = 0;
				return 0;
			}
			if (w->phase == 0)
				more = verify_object(&k, &v, it);
			else
				more = verify_chunk_entry(s, txn, w, &k, &v, it);
			if (more && --budget <= 0) {
				mdb_cursor_close(cur);
				return -EAGAIN;
			}
			if (more)
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		}
		mdb_cursor_close(cur);
		if (rc == 0)
			return 0; /* an item */
		if (rc != MDB_NOTFOUND)
			return -EIO;
		w->phase++;
		w->started = 0;
		w->klen = 0;
	}
	return -ENOENT;
}

int store_verify_chunk(struct store *s, const struct store_vitem *it)
{
	uint8_t *buf;
	int rc;

	if (it->kind != STORE_V_CHUNK)
		return -EINVAL;
	if (it->len == 0)
		return it->csum == XXH3_64bits("", 0) ? 0 : -EBADMSG;
	buf = malloc(it->len);
	if (buf == NULL)
		return -ENOMEM;
	rc = store_data_read(s, it->data_id, it->off, buf, it->len);
	if (rc == 0 && XXH3_64bits(buf, it->len) != it->csum)
		rc = -EBADMSG;
	free(buf);
	return rc;
}

static size_t chunk_key(uint8_t *b, const struct store_vitem *it)
{
	b[0] = (uint8_t)it->fhlen;
	memcpy(b + 1, it->fh, it->fhlen);
	b[1 + it->fhlen] = (uint8_t)(it->idx >> 24);
	b[2 + it->fhlen] = (uint8_t)(it->idx >> 16);
	b[3 + it->fhlen] = (uint8_t)(it->idx >> 8);
	b[4 + it->fhlen] = (uint8_t)it->idx;
	return 5 + it->fhlen;
}

int store_verify_current(struct store *s, const struct store_vitem *it)
{
	uint8_t kb[1 + STORE_FH_MAX + 4];
	struct store_obj o;
	const uint8_t *inl;
	uint64_t csum;
	MDB_txn *txn;
	MDB_val k, v;
	int rc;

	txn = store_txn_read(s, &rc);
	if (txn == NULL || it->fhlen == 0)
		return 0;
	switch (it->kind) {
	case STORE_V_CHUNK:
		k.mv_size = chunk_key(kb, it);
		k.mv_data = kb;
		if (mdb_get(txn, s->db_chunk, &k, &v) != 0 || v.mv_size != STORE_CHUNK_VAL ||
		    store_get_le64(v.mv_data) != it->csum ||
		    store_get_le32((const uint8_t *)v.mv_data + 8) != it->len)
			return 0;
		k.mv_size = it->fhlen;
		k.mv_data = (void *)it->fh;
		return mdb_get(txn, s->db_obj, &k, &v) == 0 &&
		       store_rec_unpack(v.mv_data, v.mv_size, &o, NULL, NULL) == 0 &&
		       !(o.flags & STORE_OBJ_INLINE) && o.data_id == it->data_id;
	case STORE_V_INLINE:
		k.mv_size = it->fhlen;
		k.mv_data = (void *)it->fh;
		return mdb_get(txn, s->db_obj, &k, &v) == 0 &&
		       store_rec_unpack(v.mv_data, v.mv_size, &o, &csum, &inl) == 0 &&
		       (o.flags & STORE_OBJ_INLINE) && csum == it->csum;
	default:
		return 1;
	}
}

/* Deletes a chunk entry with its accounting (not a checksum failure: an
 * entry nothing can use). */
static int entry_delete(struct store *s, const struct store_vitem *it)
{
	MDB_val k = {it->klen, (void *)it->key}, v;
	uint32_t len = 0;
	int rc;

	if (it->klen == 0 || it->klen >= sizeof(it->key))
		return -EINVAL; /* possibly cut short: not this key */
	if (store_txn_write(s, &rc) == NULL)
		return rc;
	rc = mdb_get(s->wtxn, s->db_chunk, &k, &v);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return store_txn_fail(s, rc, "chunk lookup");
	if (v.mv_size == STORE_CHUNK_VAL)
		len = store_get_le32((const uint8_t *)v.mv_data + 8);
	rc = mdb_del(s->wtxn, s->db_chunk, &k, NULL);
	if (rc)
		return store_txn_fail(s, rc, "chunk delete");
	s->tot.chunks = s->tot.chunks ? s->tot.chunks - 1 : 0;
	s->tot.bytes = s->tot.bytes > len ? s->tot.bytes - len : 0;
	return 0;
}

int store_verify_drop(struct store *s, const struct store_vitem *it)
{
	struct store_obj o;

	switch (it->kind) {
	case STORE_V_CHUNK:
		return store_chunk_drop(s, it->fh, it->fhlen, it->idx);
	case STORE_V_INLINE:
		s->tot.csum_failures++;
		return store_obj_drop(s, it->fh, it->fhlen, 0);
	case STORE_V_BAD_RECORD:
		/* looking it up drops it (with its chunks), logged */
		store_obj_get(s, it->fh, it->fhlen, &o);
		return 0;
	case STORE_V_ORPHAN:
		return entry_delete(s, it);
	case STORE_V_BAD_ENTRY:
		return entry_delete(s, it);
	}
	return -EINVAL;
}
