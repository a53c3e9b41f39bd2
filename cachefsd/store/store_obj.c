/* The store's records: objects, inline data, chunks, the LRU. Layouts are
 * in store_int.h. */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "log.h"

#define CHUNK_KEY_MAX (1 + STORE_FH_MAX + 4)
#define LRU_KEY_MAX   (8 + STORE_FH_MAX)

static int fh_ok(const void *fh, uint32_t fhlen)
{
	return fh != NULL && fhlen >= 1 && fhlen <= STORE_FH_MAX;
}

static void fh_hex(char *out, const void *fh, uint32_t fhlen)
{
	const uint8_t *b = fh;

	for (uint32_t i = 0; i < fhlen && i < STORE_FH_MAX; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * (fhlen < STORE_FH_MAX ? fhlen : STORE_FH_MAX)] = '\0';
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* --- keys ----------------------------------------------------------------- */

static size_t chunk_key(uint8_t *b, const void *fh, uint32_t fhlen, uint32_t idx)
{
	b[0] = (uint8_t)fhlen;
	memcpy(b + 1, fh, fhlen);
	b[1 + fhlen] = (uint8_t)(idx >> 24);
	b[2 + fhlen] = (uint8_t)(idx >> 16);
	b[3 + fhlen] = (uint8_t)(idx >> 8);
	b[4 + fhlen] = (uint8_t)idx;
	return 5 + fhlen;
}

static size_t lru_key(uint8_t *b, uint64_t when, const void *fh, uint32_t fhlen)
{
	store_put_be64(b, when);
	memcpy(b + 8, fh, fhlen);
	return 8 + fhlen;
}

/* --- LMDB helpers ----------------------------------------------------------- */

/* Every put/del in the write transaction goes through these: a failure
 * aborts the batch (LMDB leaves the transaction unusable). */
static int db_put(struct store *s, MDB_dbi dbi, const void *k, size_t klen, const void *v,
                  size_t vlen, const char *what)
{
	MDB_val key = {klen, (void *)k}, val = {vlen, (void *)v};
	int rc = mdb_put(s->wtxn, dbi, &key, &val, 0);

	if (rc)
		return store_txn_fail(s, rc, what);
	s->txn_bytes += klen + vlen;
	return 0;
}

static int db_del(struct store *s, MDB_dbi dbi, const void *k, size_t klen, const char *what)
{
	MDB_val key = {klen, (void *)k};
	int rc = mdb_del(s->wtxn, dbi, &key, NULL);

	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return store_txn_fail(s, rc, what);
	s->txn_bytes += klen;
	return 0;
}

static int lru_del(struct store *s, uint64_t when, const void *fh, uint32_t fhlen)
{
	uint8_t k[LRU_KEY_MAX];

	return db_del(s, s->db_lru, k, lru_key(k, when, fh, fhlen), "lru delete");
}

static int lru_put(struct store *s, uint64_t when, const void *fh, uint32_t fhlen)
{
	uint8_t k[LRU_KEY_MAX];

	return db_put(s, s->db_lru, k, lru_key(k, when, fh, fhlen), "", 0, "lru put");
}

/* A write transaction for a public call; commits early when the batch grew
 * large, so no caller ever holds values across this. */
static MDB_txn *op_txn(struct store *s, int *rc)
{
	if (s->wtxn && s->txn_bytes > STORE_TXN_SOFT_MAX) {
		*rc = store_txn_commit(s);
		if (*rc)
			return NULL;
	}
	return store_txn_write(s, rc);
}

static int read_fail(struct store *s, int rc, const char *what)
{
	log_err("cache index: %s: %s", what, mdb_strerror(rc));
	if (store_mdb_fatal(rc))
		store_set_broken(s, rc, what);
	return -EIO;
}

/* Deletes all chunk entries of fh; *n and *bytes get their count and sum. */
static int chunks_delete(struct store *s, const void *fh, uint32_t fhlen, uint64_t *n,
                         uint64_t *bytes)
{
	uint8_t kb[CHUNK_KEY_MAX];
	size_t klen = chunk_key(kb, fh, fhlen, 0);
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	*n = 0;
	*bytes = 0;
	rc = mdb_cursor_open(s->wtxn, s->db_chunk, &cur);
	if (rc)
		return store_txn_fail(s, rc, "chunk cursor");
	for (;;) {
		k.mv_size = klen;
		k.mv_data = kb;
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (rc == MDB_NOTFOUND)
			break;
		if (rc)
			goto fail;
		if (k.mv_size != klen || memcmp(k.mv_data, kb, 1 + fhlen) != 0)
			break;
		if (v.mv_size == STORE_CHUNK_VAL)
			*bytes += store_get_le32((const uint8_t *)v.mv_data + 8);
		(*n)++;
		rc = mdb_cursor_del(cur, 0);
		if (rc)
			goto fail;
		s->txn_bytes += klen;
	}
	mdb_cursor_close(cur);
	return 0;
fail:
	mdb_cursor_close(cur);
	return store_txn_fail(s, rc, "chunk delete");
}

/* A record that does not unpack is treated as absent and removed with its
 * chunks (its LRU entry cannot be found: the cull skips it later; its data
 * file, if any, is an orphan for the next start's scan). */
static int drop_bad(struct store *s, const void *fh, uint32_t fhlen, size_t len)
{
	char hex[2 * STORE_FH_MAX + 1];
	uint64_t n, bytes;
	int rc;

	fh_hex(hex, fh, fhlen);
	log_warn("cache index: bad object record (%zu bytes) for handle %s: dropped", len, hex);
	if (!store_txn_write(s, &rc))
		return rc;
	rc = db_del(s, s->db_obj, fh, fhlen, "bad record delete");
	if (rc == 0)
		rc = chunks_delete(s, fh, fhlen, &n, &bytes);
	if (rc)
		return rc;
	s->tot.objects = sub_sat(s->tot.objects, 1);
	s->tot.chunks = sub_sat(s->tot.chunks, n);
	s->tot.bytes = sub_sat(s->tot.bytes, bytes);
	return 0;
}

/* Loads the record of fh from txn. -ENOENT when absent or bad (then
 * dropped, which opens the write transaction). *inl points into the value:
 * valid until the next write. */
static int obj_load(struct store *s, MDB_txn *txn, const void *fh, uint32_t fhlen,
                    struct store_obj *o, uint64_t *csum, const uint8_t **inl)
{
	MDB_val k = {fhlen, (void *)fh}, v;
	int rc = mdb_get(txn, s->db_obj, &k, &v);

	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc)
		return read_fail(s, rc, "object lookup");
	if (store_rec_unpack(v.mv_data, v.mv_size, o, csum, inl) == 0)
		return 0;
	rc = drop_bad(s, fh, fhlen, v.mv_size);
	return rc ? rc : -ENOENT;
}

/* Rewrites plen bytes at off of fh's record (a copy: the old value may
 * live in pages the put frees). */
static int rec_patch(struct store *s, const void *fh, uint32_t fhlen, size_t off, const void *p,
                     size_t plen)
{
	MDB_val k = {fhlen, (void *)fh}, v;
	int rc = mdb_get(s->wtxn, s->db_obj, &k, &v);

	if (rc)
		return store_txn_fail(s, rc, "object lookup");
	if (v.mv_size > s->scratch_cap) {
		size_t cap = v.mv_size + 4096;
		uint8_t *n = realloc(s->scratch, cap);

		if (n == NULL)
			return store_txn_fail(s, ENOMEM, "object rewrite");
		s->scratch = n;
		s->scratch_cap = cap;
	}
	memcpy(s->scratch, v.mv_data, v.mv_size);
	memcpy(s->scratch + off, p, plen);
	return db_put(s, s->db_obj, fh, fhlen, s->scratch, v.mv_size, "object put");
}

static int rec_patch64(struct store *s, const void *fh, uint32_t fhlen, size_t off, uint64_t val)
{
	uint8_t b[8];

	store_put_le64(b, val);
	return rec_patch(s, fh, fhlen, off, b, 8);
}

static int rec_put(struct store *s, const void *fh, uint32_t fhlen, const struct store_obj *o)
{
	uint8_t b[STORE_REC_HDR_MAX];

	store_rec_pack(b, o, 0);
	return db_put(s, s->db_obj, fh, fhlen, b, store_rec_hdr(o), "object put");
}

int store_unlink_later(struct store *s, uint64_t data_id, uint64_t bytes)
{
	if (s->txq_len == s->txq_cap) {
		size_t cap = s->txq_cap ? 2 * s->txq_cap : 64;
		struct store_unlink *n = realloc(s->txq, cap * sizeof(*n));

		if (n == NULL)
			return -ENOMEM;
		s->txq = n;
		s->txq_cap = cap;
	}
	s->txq[s->txq_len].data_id = data_id;
	s->txq[s->txq_len].bytes = bytes;
	s->txq_len++;
	s->txq_bytes += bytes;
	return 0;
}

/* Loads fh's record in the write transaction and removes its data: chunk
 * entries (the data file is queued for unlink after commit) or inline
 * bytes (accounting only: the caller rewrites or deletes the record).
 * *existed = 0 when there was no record. *freed gets the bytes removed. */
static int remove_data(struct store *s, const void *fh, uint32_t fhlen, struct store_obj *old,
                       int *existed, uint64_t *freed)
{
	uint64_t n = 0, bytes = 0;
	int rc = obj_load(s, s->wtxn, fh, fhlen, old, NULL, NULL);

	*existed = 0;
	*freed = 0;
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	*existed = 1;
	s->txn_drops = 1; /* dropped data is committed at the end of the pass */
	if (!(old->flags & STORE_OBJ_INLINE)) {
		rc = chunks_delete(s, fh, fhlen, &n, &bytes);
		if (rc)
			return rc;
		if (old->data_id != 0 &&
		    store_unlink_later(s, old->data_id, old->cached_bytes) != 0)
			return store_txn_fail(s, ENOMEM, "unlink queue");
	}
	/* The records' cached_bytes are what the total sums. */
	s->tot.chunks = sub_sat(s->tot.chunks, n);
	s->tot.bytes = sub_sat(s->tot.bytes, old->cached_bytes);
	*freed = old->cached_bytes;
	return 0;
}

static void obj_fill(struct store *s, struct store_obj *o, const fattr3 *attrs,
                     const struct store_chg *chg)
{
	memset(o, 0, sizeof(*o));
	store_snap_of_chg(attrs, chg, &o->snap);
	o->attrs = *attrs;
	o->chunk_size = s->chunk_size;
	o->last_access = store_now_ms(s);
	o->guard = STORE_GUARD_SOUND;
}

/* Common part of reset and inline_put: removes the old data and moves the
 * LRU entry to now. */
static int replace_begin(struct store *s, const void *fh, uint32_t fhlen, uint64_t now)
{
	struct store_obj old;
	uint64_t freed;
	int existed, rc;

	rc = remove_data(s, fh, fhlen, &old, &existed, &freed);
	if (rc)
		return rc;
	if (existed) {
		rc = lru_del(s, old.last_access, fh, fhlen);
		if (rc)
			return rc;
	} else {
		s->tot.objects++;
	}
	return lru_put(s, now, fh, fhlen);
}

/* The record as the API shows it: the last access including any pending
 * one, in seconds. */
static void api_obj(const struct store *s, const void *fh, uint32_t fhlen, struct store_obj *o)
{
	const struct store_touch_ent *e = store_touchset_find(&s->touched, fh, fhlen);

	if (e && e->when > o->last_access)
		o->last_access = e->when;
	o->last_access /= 1000;
}

/* --- objects -------------------------------------------------------------- */

unsigned store_warm_objs(struct store *s, const uint8_t *fhs, size_t stride, const uint32_t *lens,
                         unsigned n)
{
	uint8_t sink = 0;
	unsigned found = 0;
	MDB_txn *txn;

	/* a thread's own transaction: the loop's (s->rtxn) is not for others */
	if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn) != 0)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		MDB_val k = {lens[i], (void *)(fhs + (size_t)i * stride)}, v;
		const uint8_t *p;

		if (!fh_ok(k.mv_data, lens[i]) || mdb_get(txn, s->db_obj, &k, &v) != 0 ||
		    v.mv_size == 0)
			continue;
		p = v.mv_data;
		/* a byte of every page the value spans (an inline file's bytes
		 * are overflow pages after the record) */
		for (size_t off = 0; off < v.mv_size; off += 4096)
			sink ^= p[off];
		sink ^= p[v.mv_size - 1];
		found++;
	}
	/* the reads are the point: keep the compiler from dropping them */
	__asm__ volatile("" : : "r"(sink) : "memory");
	mdb_txn_abort(txn);
	return found;
}

int store_obj_get(struct store *s, const void *fh, uint32_t fhlen, struct store_obj *out)
{
	MDB_txn *txn;
	int rc;

	if (!fh_ok(fh, fhlen))
		return -EINVAL;
	txn = store_txn_read(s, &rc);
	if (txn == NULL)
		return rc;
	rc = obj_load(s, txn, fh, fhlen, out, NULL, NULL);
	if (rc == 0)
		api_obj(s, fh, fhlen, out);
	return rc;
}

int store_obj_reset(struct store *s, const void *fh, uint32_t fhlen, const fattr3 *attrs,
                    const struct store_chg *chg, struct store_obj *out)
{
	struct store_obj o;
	int rc;

	if (!fh_ok(fh, fhlen) || attrs == NULL)
		return -EINVAL;
	if (op_txn(s, &rc) == NULL)
		return rc;
	obj_fill(s, &o, attrs, chg);
	o.data_id = store_new_data_id(s);
	rc = replace_begin(s, fh, fhlen, o.last_access);
	if (rc == 0)
		rc = rec_put(s, fh, fhlen, &o);
	if (rc == 0 && out) {
		*out = o;
		api_obj(s, fh, fhlen, out);
	}
	return rc;
}

int store_obj_set_attrs(struct store *s, const void *fh, uint32_t fhlen, const fattr3 *attrs)
{
	uint8_t packed[STORE_ATTRS_LEN];
	MDB_val k = {fhlen, (void *)fh}, v;
	MDB_txn *txn;
	struct store_obj o;
	int rc;

	if (!fh_ok(fh, fhlen) || attrs == NULL)
		return -EINVAL;
	store_attrs_pack(packed, attrs);
	/* Most replies carry unchanged attributes: no write then. */
	txn = store_txn_read(s, &rc);
	if (txn == NULL)
		return rc;
	rc = obj_load(s, txn, fh, fhlen, &o, NULL, NULL);
	if (rc)
		return rc;
	rc = mdb_get(txn, s->db_obj, &k, &v);
	if (rc)
		return read_fail(s, rc, "object lookup");
	if (memcmp((const uint8_t *)v.mv_data + STORE_ATTRS_OFF, packed, STORE_ATTRS_LEN) == 0)
		return 0;
	if (op_txn(s, &rc) == NULL)
		return rc;
	rc = obj_load(s, s->wtxn, fh, fhlen, &o, NULL, NULL);
	if (rc)
		return rc;
	return rec_patch(s, fh, fhlen, STORE_ATTRS_OFF, packed, STORE_ATTRS_LEN);
}

int store_obj_set_guard(struct store *s, const void *fh, uint32_t fhlen, uint8_t guard,
                        uint16_t hour)
{
	uint8_t b[3] = {guard, (uint8_t)hour, (uint8_t)(hour >> 8)};
	struct store_obj o;
	int rc;

	if (!fh_ok(fh, fhlen))
		return -EINVAL;
	if (op_txn(s, &rc) == NULL)
		return rc;
	rc = obj_load(s, s->wtxn, fh, fhlen, &o, NULL, NULL);
	if (rc)
		return rc;
	if (o.guard == guard && o.guard_hour == hour)
		return 0;
	return rec_patch(s, fh, fhlen, 1, b, sizeof(b));
}

int store_obj_drop(struct store *s, const void *fh, uint32_t fhlen, int forget)
{
	struct store_obj old;
	uint64_t freed;
	int existed, rc;

	if (!fh_ok(fh, fhlen))
		return -EINVAL;
	if (op_txn(s, &rc) == NULL)
		return rc;
	rc = remove_data(s, fh, fhlen, &old, &existed, &freed);
	if (rc)
		return rc;
	if (!existed)
		return -ENOENT;
	if (forget) {
		rc = lru_del(s, old.last_access, fh, fhlen);
		if (rc == 0)
			rc = db_del(s, s->db_obj, fh, fhlen, "object delete");
		if (rc == 0)
			s->tot.objects = sub_sat(s->tot.objects, 1);
		return rc;
	}
	/* The record stays (its attributes still serve replies) as an empty
	 * chunked object: a new data_id makes chunk puts in flight fail with
	 * -ESTALE, and a zero snapshot matches no real file, so whoever fills
	 * it next starts with a reset (or an inline put). */
	old.flags = 0;
	memset(&old.snap, 0, sizeof(old.snap));
	old.chunk_size = s->chunk_size;
	old.data_id = store_new_data_id(s);
	old.cached_bytes = 0;
	old.inline_len = 0;
	return rec_put(s, fh, fhlen, &old);
}

int store_data_lost(struct store *s, const void *fh, uint32_t fhlen, uint64_t data_id, int rc)
{
	char path[64], what[96];
	struct store_obj o;
	struct stat st;
	int uses;

	if (rc != -EEXIST && rc != -ENOENT && rc != -ELOOP && rc != -EPERM)
		return 0;
	if (!fh_ok(fh, fhlen))
		return 1;
	uses = store_obj_get(s, fh, fhlen, &o) == 0 && !(o.flags & STORE_OBJ_INLINE) &&
	       o.data_id == data_id;
	/* a file culled or replaced while a worker used it is gone as it
	 * should be: only a missing file still in use is news */
	if (rc != -ENOENT || uses)
		s->data_refused++;
	if (s->lost_logged != data_id && (rc != -ENOENT || uses)) {
		store_data_path(path, sizeof(path), data_id);
		if (fstatat(s->dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
			snprintf(what, sizeof(what), "%s",
			         rc == -ELOOP ? "a link on its path" : "missing");
		else
			snprintf(what, sizeof(what), "%s of uid %u with %u link(s)",
			         S_ISLNK(st.st_mode)   ? "a symbolic link"
			         : S_ISREG(st.st_mode) ? "a file"
			                               : "not a file",
			         (unsigned)st.st_uid, (unsigned)st.st_nlink);
		if (rc == -EEXIST)
			log_warn(
			    "cache %s: data file %s already existed when a new object needed "
			    "it (%s): not used, nothing was written to it; removed, the object "
			    "is cached in a new data file",
			    s->dir, path, what);
		else if (rc == -ENOENT)
			log_warn("cache %s: data file %s is missing: its object's data is dropped "
			         "and cached again in a new data file",
			         s->dir, path);
		else
			log_warn("cache %s: data file %s is not a file of ours (%s): not used, "
			         "nothing was written to or read from it; removed, its object is "
			         "cached again in a new data file",
			         s->dir, path, what);
		s->lost_logged = data_id;
	}
	if (uses)
		store_obj_drop(s, fh, fhlen, 0);
	return 1;
}

void store_touch(struct store *s, const void *fh, uint32_t fhlen)
{
	if (!fh_ok(fh, fhlen) || s->broken)
		return;
	/* Beyond 4 rounds' worth (writing cannot keep up) or out of memory,
	 * an access is not recorded: the order is a little off. */
	store_touchset_put(&s->touched, fh, fhlen, store_now_ms(s), 4 * STORE_TOUCH_MAX);
}

/* Writes one pending access: moves the LRU entry, updates the record. */
static int touch_write(struct store *s, struct store_touch_ent *e)
{
	struct store_obj o;
	MDB_txn *txn;
	int rc;

	txn = store_txn_read(s, &rc);
	if (txn == NULL)
		return rc;
	rc = obj_load(s, txn, e->fh, e->len, &o, NULL, NULL);
	if (rc == -ENOENT || (rc == 0 && e->when <= o.last_access)) {
		e->applied = e->when; /* gone, or reset since */
		return 0;
	}
	if (rc || op_txn(s, &rc) == NULL)
		return rc;
	rc = lru_del(s, o.last_access, e->fh, e->len);
	if (rc == 0)
		rc = lru_put(s, e->when, e->fh, e->len);
	if (rc == 0)
		rc = rec_patch64(s, e->fh, e->len, STORE_ACCESS_OFF, e->when);
	if (rc == 0)
		e->applied = e->when;
	return rc;
}

int store_touch_flush(struct store *s, uint32_t budget, int force)
{
	struct store_touch_set *t = &s->touched;
	uint64_t now = store_now_ms(s);
	int rc = 0;

	if (!s->touch_round) {
		if (t->n == 0)
			s->touch_round_ms = now;
		/* Not due yet (a clock gone back makes it due). */
		if (t->n == 0 || (!force && t->n < STORE_TOUCH_MAX && now >= s->touch_round_ms &&
		                  now - s->touch_round_ms < STORE_TOUCH_ROUND_SECONDS * 1000))
			return 0;
		s->touch_round = 1;
		s->touch_pos = 0;
	}
	/* Entries added meanwhile are appended: the round takes them too. */
	for (; s->touch_pos < t->n && budget > 0 && rc == 0; budget--)
		rc = touch_write(s, &t->ents[s->touch_pos++]);
	if (rc) {
		/* The batch is lost with the accesses written in it. */
		for (uint32_t i = 0; i < s->touch_pos; i++)
			t->ents[i].applied = 0;
	}
	if (rc || s->touch_pos == t->n) {
		store_touchset_compact(t);
		s->touch_round = 0;
		s->touch_round_ms = now;
	}
	return rc;
}

/* --- inline objects ------------------------------------------------------- */

int store_inline_put(struct store *s, const void *fh, uint32_t fhlen, const fattr3 *attrs,
                     const struct store_chg *chg, const void *data, uint32_t len)
{
	struct store_obj o;
	MDB_val k = {fhlen, (void *)fh}, v;
	int rc;

	if (!fh_ok(fh, fhlen) || attrs == NULL || (data == NULL && len > 0))
		return -EINVAL;
	if (len > s->inline_max || attrs->size != len)
		return -EINVAL;
	if (op_txn(s, &rc) == NULL)
		return rc;
	obj_fill(s, &o, attrs, chg);
	o.flags = STORE_OBJ_INLINE;
	o.cached_bytes = len;
	o.inline_len = len;
	rc = replace_begin(s, fh, fhlen, o.last_access);
	if (rc)
		return rc;
	v.mv_size = store_rec_hdr(&o) + (size_t)len;
	rc = mdb_put(s->wtxn, s->db_obj, &k, &v, MDB_RESERVE);
	if (rc)
		return store_txn_fail(s, rc, "inline put");
	store_rec_pack(v.mv_data, &o, XXH3_64bits(data, len));
	if (len)
		memcpy((uint8_t *)v.mv_data + store_rec_hdr(&o), data, len);
	s->txn_bytes += fhlen + v.mv_size;
	s->tot.bytes += len;
	return 0;
}

int store_inline_get(struct store *s, const void *fh, uint32_t fhlen, struct store_obj *obj,
                     void *buf, uint32_t buflen, uint32_t *len)
{
	char hex[2 * STORE_FH_MAX + 1];
	const uint8_t *inl;
	struct store_obj o;
	uint64_t csum;
	MDB_txn *txn;
	int rc;

	if (!fh_ok(fh, fhlen))
		return -EINVAL;
	txn = store_txn_read(s, &rc);
	if (txn == NULL)
		return rc;
	rc = obj_load(s, txn, fh, fhlen, &o, &csum, &inl);
	if (rc)
		return rc;
	if (!(o.flags & STORE_OBJ_INLINE))
		return -ENOENT;
	if (buflen < o.inline_len || (buf == NULL && o.inline_len > 0))
		return -ERANGE;
	if (o.inline_len)
		memcpy(buf, inl, o.inline_len);
	if (XXH3_64bits(buf, o.inline_len) != csum) {
		fh_hex(hex, fh, fhlen);
		log_warn("cache: inline data of handle %s fails its checksum: dropped", hex);
		s->tot.csum_failures++;
		rc = store_obj_drop(s, fh, fhlen, 0);
		return rc && rc != -ENOENT ? rc : -EBADMSG;
	}
	if (obj) {
		*obj = o;
		api_obj(s, fh, fhlen, obj);
	}
	if (len)
		*len = o.inline_len;
	return 0;
}

/* --- chunks --------------------------------------------------------------- */

/* The chunk entry's length in the write transaction: 0 and *len, or
 * -ENOENT (a malformed entry counts as present with length 0). */
static int chunk_len(struct store *s, const uint8_t *kb, size_t klen, uint32_t *len)
{
	MDB_val k = {klen, (void *)kb}, v;
	int rc = mdb_get(s->wtxn, s->db_chunk, &k, &v);

	*len = 0;
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc)
		return read_fail(s, rc, "chunk lookup");
	if (v.mv_size == STORE_CHUNK_VAL)
		*len = store_get_le32((const uint8_t *)v.mv_data + 8);
	return 0;
}

/* Removes chunk idx in the write transaction, with its accounting. */
static int chunk_remove(struct store *s, const void *fh, uint32_t fhlen, uint32_t idx)
{
	uint8_t kb[CHUNK_KEY_MAX];
	size_t klen;
	struct store_obj o;
	uint32_t oldlen;
	int rc;

	klen = chunk_key(kb, fh, fhlen, idx);
	rc = chunk_len(s, kb, klen, &oldlen);
	if (rc)
		return rc;
	rc = db_del(s, s->db_chunk, kb, klen, "chunk delete");
	if (rc)
		return rc;
	s->tot.chunks = sub_sat(s->tot.chunks, 1);
	s->tot.bytes = sub_sat(s->tot.bytes, oldlen);
	rc = obj_load(s, s->wtxn, fh, fhlen, &o, NULL, NULL);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	return rec_patch64(s, fh, fhlen, STORE_CACHED_OFF, sub_sat(o.cached_bytes, oldlen));
}

int store_chunk_get(struct store *s, const void *fh, uint32_t fhlen, uint32_t idx, uint64_t *csum,
                    uint32_t *len)
{
	uint8_t kb[CHUNK_KEY_MAX];
	MDB_val k = {0, kb}, v;
	MDB_txn *txn;
	int rc;

	if (!fh_ok(fh, fhlen))
		return -EINVAL;
	txn = store_txn_read(s, &rc);
	if (txn == NULL)
		return rc;
	k.mv_size = chunk_key(kb, fh, fhlen, idx);
	rc = mdb_get(txn, s->db_chunk, &k, &v);
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc)
		return read_fail(s, rc, "chunk lookup");
	if (v.mv_size != STORE_CHUNK_VAL) {
		log_warn("cache index: bad chunk entry (%zu bytes): dropped", v.mv_size);
		if (op_txn(s, &rc) != NULL)
			chunk_remove(s, fh, fhlen, idx);
		return -ENOENT;
	}
	if (csum)
		*csum = store_get_le64(v.mv_data);
	if (len)
		*len = store_get_le32((const uint8_t *)v.mv_data + 8);
	return 0;
}

int store_chunk_put(struct store *s, const void *fh, uint32_t fhlen, uint64_t data_id, uint32_t idx,
                    uint64_t csum, uint32_t len)
{
	uint8_t kb[CHUNK_KEY_MAX], vb[STORE_CHUNK_VAL];
	size_t klen;
	struct store_obj o;
	uint32_t oldlen;
	int rc, had;

	if (!fh_ok(fh, fhlen))
		return -EINVAL;
	if (op_txn(s, &rc) == NULL)
		return rc;
	rc = obj_load(s, s->wtxn, fh, fhlen, &o, NULL, NULL);
	if (rc && rc != -ENOENT)
		return rc;
	if (rc == -ENOENT || (o.flags & STORE_OBJ_INLINE) || o.data_id != data_id) {
		/* The writer may have recreated a file already unlinked: every
		 * write is followed by its put, so the last one cleans up. */
		if (data_id != 0 && data_id < s->next_data_id)
			store_unlink_later(s, data_id, 0);
		return -ESTALE;
	}
	if (len > o.chunk_size || (uint64_t)idx * o.chunk_size + len > INT64_MAX)
		return -EINVAL;
	klen = chunk_key(kb, fh, fhlen, idx);
	rc = chunk_len(s, kb, klen, &oldlen);
	if (rc && rc != -ENOENT)
		return rc;
	had = rc == 0;
	store_put_le64(vb, csum);
	store_put_le32(vb + 8, len);
	rc = db_put(s, s->db_chunk, kb, klen, vb, sizeof(vb), "chunk put");
	if (rc)
		return rc;
	o.cached_bytes = sub_sat(o.cached_bytes, oldlen) + len;
	rc = rec_patch64(s, fh, fhlen, STORE_CACHED_OFF, o.cached_bytes);
	if (rc)
		return rc;
	s->tot.bytes = sub_sat(s->tot.bytes, oldlen) + len;
	if (!had)
		s->tot.chunks++;
	return 0;
}

int store_chunk_drop(struct store *s, const void *fh, uint32_t fhlen, uint32_t idx)
{
	int rc;

	if (!fh_ok(fh, fhlen))
		return -EINVAL;
	if (op_txn(s, &rc) == NULL)
		return rc;
	s->tot.csum_failures++;
	return chunk_remove(s, fh, fhlen, idx);
}

/* --- LRU ------------------------------------------------------------------ */

int store_evict_oldest(struct store *s, uint64_t *freed)
{
	uint8_t kb[LRU_KEY_MAX], fh[STORE_FH_MAX];
	size_t klen = 0;
	uint32_t fhlen;
	uint64_t when;
	struct store_touch_ent *e;
	struct store_obj o;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, existed;

	*freed = 0;
	if (store_txn_write(s, &rc) == NULL)
		return rc;
	rc = mdb_cursor_open(s->wtxn, s->db_lru, &cur);
	if (rc)
		return store_txn_fail(s, rc, "lru cursor");
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	if (rc == 0) {
		klen = k.mv_size < sizeof(kb) ? k.mv_size : sizeof(kb);
		memcpy(kb, k.mv_data, klen);
	}
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc)
		return read_fail(s, rc, "lru first");
	if (k.mv_size < 9 || k.mv_size > sizeof(kb)) {
		rc = db_del(s, s->db_lru, k.mv_data, k.mv_size, "lru delete");
		return rc ? rc : 0;
	}
	when = store_get_be64(kb);
	fhlen = (uint32_t)klen - 8;
	memcpy(fh, kb + 8, fhlen);
	rc = obj_load(s, s->wtxn, fh, fhlen, &o, NULL, NULL);
	if (rc && rc != -ENOENT)
		return rc;
	if (rc == -ENOENT || o.last_access != when) {
		/* Left behind by a bad record: skip it. */
		rc = db_del(s, s->db_lru, kb, klen, "lru delete");
		return rc ? rc : 0;
	}
	e = store_touchset_find(&s->touched, fh, fhlen);
	if (e && e->when > when) {
		/* Accessed since: its turn comes later. */
		return touch_write(s, e);
	}
	rc = remove_data(s, fh, fhlen, &o, &existed, freed);
	if (rc == 0)
		rc = db_del(s, s->db_lru, kb, klen, "lru delete");
	if (rc == 0)
		rc = db_del(s, s->db_obj, fh, fhlen, "object delete");
	if (rc)
		return rc;
	s->tot.objects = sub_sat(s->tot.objects, 1);
	s->tot.evictions++;
	s->tot.evicted_bytes += *freed;
	return 1;
}

uint64_t store_lru_oldest(struct store *s)
{
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	uint64_t when = 0;
	int rc;

	txn = store_txn_read(s, &rc);
	if (txn == NULL)
		return 0;
	rc = mdb_cursor_open(txn, s->db_lru, &cur);
	if (rc == 0) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		if (rc == 0 && k.mv_size >= 8)
			when = store_get_be64(k.mv_data) / 1000;
		mdb_cursor_close(cur);
	}
	/* damage found here leaves the transaction (maybe the batch's)
	 * unusable: it is the index's, not this lookup's */
	if (store_mdb_fatal(rc))
		store_set_broken(s, rc, "lru lookup");
	return when;
}
