/* Handles longer than 64 bytes: the map from a client's mapped handle to
 * the upstream handle it stands for (include/store.h, "handles longer than
 * 64 bytes"; docs/design.md, "Handles longer than 64 bytes").
 *
 * A mapped handle (STORE_FH_MAPPED_LEN bytes):
 *     0 magic (FH_MAGIC_LEN bytes)   6 u8 version (1)   7 u8 salt
 *     8 56 bytes: xxh3-128 of (salt, upstream length, upstream handle)
 *       under four seeds drawn from the handle key, big endian, cut
 * It is derived from the upstream handle, not numbered, so that every
 * proxy holding the same key gives a file the same handle without asking
 * anyone, and so that a map lost with a damaged index is rebuilt by
 * encoding the handles again (the same handles come back).
 *
 * The record of a mapped handle is written once and never removed, never
 * overwritten: a slot that holds another upstream handle (a collision of
 * the 56 bytes) or a record failing its checksum (its handle is unknown:
 * some client may hold it) is taken as used, and the next salt is tried.
 * Salts are tried from 0 up, so a store that meets the colliding handles
 * in the same order gives them the same handles. */
#include "store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <xxhash.h>

#include "log.h"

#define FH_MAGIC_LEN 6
#define FH_VERSION   1
#define FH_VER_OFF   6
#define FH_SALT_OFF  7
#define FH_HASH_OFF  8
/* More than a real collision of 56 hash bytes will ever need; a test
 * forces collisions (store_test_fh_collide) */
#define FH_SALT_MAX 16
#define FH_VAL_HDR  2 /* version, upstream length */
#define FH_SUM      8
/* the seeds' domain: the key's hash under these, one per seed */
#define FH_SEED_TAG 0x63667366686d6170ull /* "cfsfhmap" */

/* 0xcf 0x5d "cfh" 0x00: chosen to be unlike the first bytes of the handles
 * of the filers at hand (knfsd: fh_version 1, ganesha: its version byte);
 * a 64-byte upstream handle that starts with it anyway is mapped. */
static const uint8_t fh_magic[FH_MAGIC_LEN] = {0xcf, 0x5d, 'c', 'f', 'h', 0x00};

int store_fh_is_mapped(const void *fh, uint32_t fhlen)
{
	return fh != NULL && fhlen == STORE_FH_MAPPED_LEN &&
	       memcmp(fh, fh_magic, FH_MAGIC_LEN) == 0;
}

int store_fh_needs_map(const void *up, uint32_t uplen)
{
	return uplen > STORE_FH_MAX || store_fh_is_mapped(up, uplen);
}

static uint64_t fh_sum(const uint8_t *key, const uint8_t *val, size_t vlen)
{
	return XXH3_64bits_withSeed(val, vlen, XXH3_64bits(key, STORE_FH_MAPPED_LEN));
}

/* The key's fingerprint is kept in the meta database under this name, so
 * that a change across restarts is logged too. */
#define FH_KEY_META "fh_key"

/* The fingerprint of the key the map was last used with: 0 with *sum, or
 * -ENOENT (none, or unreadable: nothing to compare with). */
static int key_sum_get(struct store *s, uint64_t *sum)
{
	MDB_val k = {sizeof(FH_KEY_META) - 1, FH_KEY_META}, v;
	MDB_txn *txn;
	int rc;

	txn = store_txn_read(s, &rc);
	if (txn == NULL || mdb_get(txn, s->db_meta, &k, &v) != 0 || v.mv_size != 8)
		return -ENOENT;
	*sum = store_get_le64(v.mv_data);
	return 0;
}

int store_fh_set_key(struct store *s, const void *key, size_t len)
{
	MDB_val k = {sizeof(FH_KEY_META) - 1, FH_KEY_META}, v;
	uint8_t b[8];
	uint64_t sum, old;
	int rc, had;

	if (key == NULL || len < 1 || len > STORE_FH_KEY_MAX)
		return -EINVAL;
	sum = XXH3_64bits(key, len);
	for (int i = 0; i < 4; i++)
		s->fh_seed[i] = XXH3_64bits_withSeed(key, len, FH_SEED_TAG + (uint64_t)i);
	s->fh_keyed = 1;
	had = key_sum_get(s, &old) == 0;
	if (had && old == sum)
		return 0;
	if (had)
		log_warn("cache %s: the handle key (the export's root handle) is not the one "
		         "handles were mapped with: handles mapped before still resolve here; new "
		         "ones follow the new key and differ from other proxies' that kept the old",
		         s->dir);
	/* remembered in the next commit; a failure only forgets the
	 * fingerprint (the map does not depend on it) */
	if (store_txn_write(s, &rc) == NULL)
		return 0;
	store_put_le64(b, sum);
	v.mv_size = sizeof(b);
	v.mv_data = b;
	rc = mdb_put(s->wtxn, s->db_meta, &k, &v, 0);
	if (rc)
		store_txn_fail(s, rc, "handle key put");
	return 0;
}

/* The mapped handle of up with this salt. */
static void fh_make(const struct store *s, uint8_t salt, const uint8_t *up, uint32_t uplen,
                    uint8_t *h)
{
	uint8_t msg[2 + STORE_FH_UP_MAX];
	size_t n = 2 + uplen;

	memcpy(h, fh_magic, FH_MAGIC_LEN);
	h[FH_VER_OFF] = FH_VERSION;
	h[FH_SALT_OFF] = salt;
	msg[0] = salt;
	msg[1] = (uint8_t)uplen;
	memcpy(msg + 2, up, uplen);
	if (s->fh_test_collide)
		n = 1; /* the salt alone: every handle collides with every other */
	for (int i = 0; i < 4; i++) {
		size_t off = FH_HASH_OFF + 16 * (size_t)i;
		size_t take = STORE_FH_MAPPED_LEN - off < 16 ? STORE_FH_MAPPED_LEN - off : 16;
		XXH128_canonical_t c;

		/* canonical (big endian): the same bytes on every host */
		XXH128_canonicalFromHash(&c, XXH3_128bits_withSeed(msg, n, s->fh_seed[i]));
		memcpy(h + off, c.digest, take);
	}
}

static void bad_record(struct store *s, size_t vlen)
{
	uint64_t now = store_now(s);

	if (s->fh_bad_logged == 0 || now >= s->fh_bad_logged + 60) {
		log_warn("cache index: a handle mapping (%zu bytes) fails its checksum: the "
		         "handle it maps is unknown (clients holding it get ESTALE); its slot "
		         "stays taken",
		         vlen);
		s->fh_bad_logged = now;
	}
}

/* The record of mapped handle h: 0 with the upstream handle in up and its
 * length in *uplen, -ENOENT, -EBADMSG (there, but not believed: logged),
 * -EIO. */
static int slot_read(struct store *s, const uint8_t *h, uint8_t *up, uint32_t *uplen)
{
	MDB_val k = {STORE_FH_MAPPED_LEN, (void *)h}, v;
	const uint8_t *b;
	MDB_txn *txn;
	uint32_t n;
	int rc;

	txn = store_txn_read(s, &rc);
	if (txn == NULL)
		return rc;
	rc = mdb_get(txn, s->db_fhmap, &k, &v);
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc) {
		log_err("cache index: handle map lookup: %s", mdb_strerror(rc));
		if (store_mdb_fatal(rc))
			store_set_broken(s, rc, "handle map lookup");
		return -EIO;
	}
	b = v.mv_data;
	n = v.mv_size > FH_VAL_HDR ? b[1] : 0;
	/* what only a good record can be: its checksum, its version, and an
	 * upstream handle that needs the map */
	if (v.mv_size < FH_VAL_HDR + FH_SUM || v.mv_size != FH_VAL_HDR + n + FH_SUM ||
	    store_get_le64(b + v.mv_size - FH_SUM) != fh_sum(h, b, v.mv_size - FH_SUM) ||
	    b[0] != FH_VERSION || n < 1 || n > STORE_FH_UP_MAX ||
	    !store_fh_needs_map(b + FH_VAL_HDR, n)) {
		bad_record(s, v.mv_size);
		return -EBADMSG;
	}
	memcpy(up, b + FH_VAL_HDR, n);
	*uplen = n;
	return 0;
}

/* Writes the record of h -> up in the batch, committed at the end of the
 * pass. 0, -EEXIST (the slot was taken after all), or -errno. */
static int slot_put(struct store *s, const uint8_t *h, const uint8_t *up, uint32_t uplen)
{
	MDB_val k = {STORE_FH_MAPPED_LEN, (void *)h}, v = {FH_VAL_HDR + uplen + FH_SUM, NULL};
	uint8_t *b;
	int rc;

	if (store_txn_write(s, &rc) == NULL)
		return rc;
	/* never over a record, whatever it holds (MDB_KEYEXIST leaves the
	 * transaction usable) */
	rc = mdb_put(s->wtxn, s->db_fhmap, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
	if (rc == MDB_KEYEXIST)
		return -EEXIST;
	if (rc)
		return store_txn_fail(s, rc, "handle map put");
	b = v.mv_data;
	b[0] = FH_VERSION;
	b[1] = (uint8_t)uplen;
	memcpy(b + FH_VAL_HDR, up, uplen);
	store_put_le64(b + FH_VAL_HDR + uplen, fh_sum(h, b, FH_VAL_HDR + uplen));
	s->txn_bytes += STORE_FH_MAPPED_LEN + v.mv_size;
	/* a handle about to reach a client: not left for the batch timer */
	s->txn_drops = 1;
	return 0;
}

static void collided(struct store *s, uint8_t salt)
{
	uint64_t now = store_now(s);

	s->fh_collisions++;
	if (s->fh_collide_logged == 0 || now >= s->fh_collide_logged + 60) {
		log_warn("cache index: a mapped handle's slot (salt %u) holds another upstream "
		         "handle: the next salt is used (%" PRIu64 " since start)",
		         (unsigned)salt, s->fh_collisions);
		s->fh_collide_logged = now;
	}
}

int store_fh_encode(struct store *s, const void *up, uint32_t uplen, uint8_t *out, uint32_t *outlen)
{
	uint8_t h[STORE_FH_MAPPED_LEN], have[STORE_FH_UP_MAX];
	uint32_t havelen;
	int rc;

	if (up == NULL || uplen < 1 || uplen > STORE_FH_UP_MAX)
		return -EINVAL;
	if (!store_fh_needs_map(up, uplen)) {
		memcpy(out, up, uplen);
		*outlen = uplen;
		return 0;
	}
	if (!s->fh_keyed)
		return -EAGAIN;
	for (unsigned salt = 0; salt < FH_SALT_MAX; salt++) {
		fh_make(s, (uint8_t)salt, up, uplen, h);
		rc = slot_read(s, h, have, &havelen);
		if (rc == -ENOENT) {
			rc = slot_put(s, h, up, uplen);
			if (rc == -EEXIST) { /* cannot be: read through the same batch */
				collided(s, (uint8_t)salt);
				continue;
			}
			if (rc)
				return rc;
			memcpy(out, h, sizeof(h));
			*outlen = sizeof(h);
			return 1;
		}
		if (rc == 0 && havelen == uplen && memcmp(have, up, uplen) == 0) {
			memcpy(out, h, sizeof(h));
			*outlen = sizeof(h);
			return 0;
		}
		if (rc != 0 && rc != -EBADMSG)
			return rc;
		collided(s, (uint8_t)salt);
	}
	log_err("cache index: all %d slots of an upstream handle of %u bytes are taken by others: "
	        "it cannot be given to clients",
	        FH_SALT_MAX, (unsigned)uplen);
	return -EOVERFLOW;
}

int store_fh_decode(struct store *s, const void *fh, uint32_t fhlen, uint8_t *out, uint32_t *outlen)
{
	const uint8_t *h = fh;
	int rc;

	if (fh == NULL || fhlen < 1 || fhlen > STORE_FH_MAX)
		return -EINVAL;
	if (!store_fh_is_mapped(fh, fhlen)) {
		memcpy(out, fh, fhlen);
		*outlen = fhlen;
		return 0;
	}
	if (h[FH_VER_OFF] != FH_VERSION)
		return -ESTALE;
	rc = slot_read(s, h, out, outlen);
	return rc == -ENOENT || rc == -EBADMSG ? -ESTALE : rc;
}

uint64_t store_fh_count(struct store *s)
{
	return store_db_entries(s, s->db_fhmap, "handle map count");
}

void store_test_fh_collide(struct store *s, int on)
{
	s->fh_test_collide = on;
}
