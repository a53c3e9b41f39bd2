/* Packing of object records (layout in store_int.h): fixed offsets, little
 * endian, checked when unpacked so a damaged value is never trusted. */
#include "store_int.h"

#include <errno.h>
#include <string.h>

/* --- record packing ------------------------------------------------------- */

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	store_put_le32(p, v);
	return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	store_put_le64(p, v);
	return p + 8;
}

static uint8_t *pack_time(uint8_t *p, const nfstime3 *t)
{
	p = put32(p, t->seconds);
	return put32(p, t->nseconds);
}

void store_attrs_pack(uint8_t *p, const fattr3 *a)
{
	p = put32(p, (uint32_t)a->type);
	p = put32(p, a->mode);
	p = put32(p, a->nlink);
	p = put32(p, a->uid);
	p = put32(p, a->gid);
	p = put64(p, a->size);
	p = put64(p, a->used);
	p = put32(p, a->rdev.specdata1);
	p = put32(p, a->rdev.specdata2);
	p = put64(p, a->fsid);
	p = put64(p, a->fileid);
	p = pack_time(p, &a->atime);
	p = pack_time(p, &a->mtime);
	pack_time(p, &a->ctime);
}

static void unpack_attrs(const uint8_t *p, fattr3 *a)
{
	memset(a, 0, sizeof(*a));
	a->type = (ftype3)store_get_le32(p);
	a->mode = store_get_le32(p + 4);
	a->nlink = store_get_le32(p + 8);
	a->uid = store_get_le32(p + 12);
	a->gid = store_get_le32(p + 16);
	a->size = store_get_le64(p + 20);
	a->used = store_get_le64(p + 28);
	a->rdev.specdata1 = store_get_le32(p + 36);
	a->rdev.specdata2 = store_get_le32(p + 40);
	a->fsid = store_get_le64(p + 44);
	a->fileid = store_get_le64(p + 52);
	a->atime.seconds = store_get_le32(p + 60);
	a->atime.nseconds = store_get_le32(p + 64);
	a->mtime.seconds = store_get_le32(p + 68);
	a->mtime.nseconds = store_get_le32(p + 72);
	a->ctime.seconds = store_get_le32(p + 76);
	a->ctime.nseconds = store_get_le32(p + 80);
}

size_t store_rec_hdr(const struct store_obj *o)
{
	return o->snap.has_change ? STORE_REC_HDR2 : STORE_REC_HDR;
}

void store_rec_pack(uint8_t *b, const struct store_obj *o, uint64_t csum)
{
	uint8_t *p = b;

	/* version 1 without a change attribute: an NFSv3 run writes what
	 * builds before version 2 read */
	*p++ = o->snap.has_change ? STORE_REC_VERSION2 : STORE_REC_VERSION;
	*p++ = o->guard;
	*p++ = (uint8_t)o->guard_hour;
	*p++ = (uint8_t)(o->guard_hour >> 8);
	p = put32(p, o->flags);
	p = put64(p, o->snap.size);
	p = put32(p, o->snap.mtime_s);
	p = put32(p, o->snap.mtime_ns);
	p = put32(p, o->snap.ctime_s);
	p = put32(p, o->snap.ctime_ns);
	store_attrs_pack(p, &o->attrs);
	p += STORE_ATTRS_LEN;
	p = put32(p, o->chunk_size);
	p = put64(p, o->data_id);
	p = put64(p, o->cached_bytes);
	p = put64(p, o->last_access);
	p = put32(p, o->inline_len);
	p = put64(p, csum);
	if (o->snap.has_change)
		put64(p, o->snap.change);
}

int store_rec_unpack(const void *val, size_t len, struct store_obj *o, uint64_t *csum,
                     const uint8_t **inl)
{
	const uint8_t *b = val;
	size_t hdr;

	if (len < STORE_REC_HDR || (b[0] != STORE_REC_VERSION && b[0] != STORE_REC_VERSION2))
		return -EINVAL;
	hdr = b[0] == STORE_REC_VERSION2 ? STORE_REC_HDR2 : STORE_REC_HDR;
	if (len < hdr)
		return -EINVAL;
	memset(o, 0, sizeof(*o));
	if (b[0] == STORE_REC_VERSION2) {
		o->snap.has_change = 1;
		o->snap.change = store_get_le64(b + STORE_REC_HDR);
	}
	/* an unknown ground is no ground: the engine treats it as LEGACY */
	o->guard = b[1] <= STORE_GUARD_ASSUMED ? b[1] : STORE_GUARD_LEGACY;
	o->guard_hour = (uint16_t)(b[2] | (b[3] << 8));
	o->flags = store_get_le32(b + 4);
	o->snap.size = store_get_le64(b + 8);
	o->snap.mtime_s = store_get_le32(b + 16);
	o->snap.mtime_ns = store_get_le32(b + 20);
	o->snap.ctime_s = store_get_le32(b + 24);
	o->snap.ctime_ns = store_get_le32(b + 28);
	unpack_attrs(b + STORE_ATTRS_OFF, &o->attrs);
	o->chunk_size = store_get_le32(b + 116);
	o->data_id = store_get_le64(b + 120);
	o->cached_bytes = store_get_le64(b + STORE_CACHED_OFF);
	o->last_access = store_get_le64(b + STORE_ACCESS_OFF);
	o->inline_len = store_get_le32(b + 144);
	if (o->flags & ~STORE_OBJ_INLINE)
		return -EINVAL;
	/* what store_open accepts as chunk_size: a damaged one must not size
	 * a buffer or an offset */
	if (o->chunk_size < (64u << 10) || o->chunk_size > (1u << 20) ||
	    (o->chunk_size & (o->chunk_size - 1)) != 0)
		return -EINVAL;
	if (o->flags & STORE_OBJ_INLINE) {
		if (len != hdr + (size_t)o->inline_len || o->cached_bytes != o->inline_len ||
		    o->data_id != 0)
			return -EINVAL;
	} else if (len != hdr || o->inline_len != 0) {
		return -EINVAL;
	}
	if (csum)
		*csum = store_get_le64(b + 148);
	if (inl)
		*inl = b + hdr;
	return 0;
}
