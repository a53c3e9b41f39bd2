#include "cobj.h"
#include "config.h"
#include "log.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define MAX_ACCESS_PER_OBJ 16

struct cobj_table {
	struct cobj **buckets;
	uint32_t nbuckets; /* power of two */
	uint32_t count;
	uint32_t max_objects;
	struct cobj *lru_head, *lru_tail; /* head: most recently used */
	uint64_t mem_used, mem_cap;
	struct chunk *mhead, *mtail; /* READY chunks, head: most recent */
	uint64_t now_ms;
};

static void lru_unlink(struct cobj_table *t, struct cobj *o)
{
	if (o->lprev)
		o->lprev->lnext = o->lnext;
	else
		t->lru_head = o->lnext;
	if (o->lnext)
		o->lnext->lprev = o->lprev;
	else
		t->lru_tail = o->lprev;
	o->lprev = o->lnext = NULL;
}

static void lru_push(struct cobj_table *t, struct cobj *o)
{
	o->lprev = NULL;
	o->lnext = t->lru_head;
	if (t->lru_head)
		t->lru_head->lprev = o;
	t->lru_head = o;
	if (t->lru_tail == NULL)
		t->lru_tail = o;
}

struct cobj_table *cobj_table_new(uint64_t memory_cap, uint32_t max_objects)
{
	struct cobj_table *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->nbuckets = 1024;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (t->buckets == NULL) {
		free(t);
		return NULL;
	}
	t->mem_cap = memory_cap;
	t->max_objects = max_objects;
	return t;
}

static void obj_free(struct cobj *o)
{
	cobj_access_clear(o);
	free(o);
}

static void unhash(struct cobj_table *t, struct cobj *o)
{
	struct cobj **pp = &t->buckets[o->hash & (t->nbuckets - 1)];

	while (*pp != o)
		pp = &(*pp)->hnext;
	*pp = o->hnext;
	t->count--;
}

void cobj_table_free(struct cobj_table *t)
{
	if (t == NULL)
		return;
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		struct cobj *o = t->buckets[i];
		while (o) {
			struct cobj *n = o->hnext;
			while (o->chunks) {
				struct chunk *c = o->chunks;
				o->chunks = c->next;
				free(c->buf);
				free(c);
			}
			obj_free(o);
			o = n;
		}
	}
	free(t->buckets);
	free(t);
}

static void grow(struct cobj_table *t)
{
	uint32_t n = t->nbuckets * 2;
	struct cobj **b = calloc(n, sizeof(*b));

	if (b == NULL)
		return;
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		struct cobj *o = t->buckets[i];
		while (o) {
			struct cobj *next = o->hnext;
			o->hnext = b[o->hash & (n - 1)];
			b[o->hash & (n - 1)] = o;
			o = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

/* Forgets idle entries beyond the limit, least recently used first. */
static void trim(struct cobj_table *t)
{
	struct cobj *o = t->lru_tail;

	while (t->count > t->max_objects && o) {
		struct cobj *prev = o->lprev;
		/* a file in the writer state must stay known as one */
		if (o->refs == 0 && o->chunks == NULL && o->nocache_until_ms <= t->now_ms) {
			lru_unlink(t, o);
			unhash(t, o);
			obj_free(o);
		}
		o = prev;
	}
}

struct cobj *cobj_find(struct cobj_table *t, const void *fh, uint32_t fhlen)
{
	uint32_t h;

	if (fhlen == 0 || fhlen > NFS3_FHSIZE)
		return NULL;
	h = (uint32_t)XXH3_64bits(fh, fhlen);
	for (struct cobj *o = t->buckets[h & (t->nbuckets - 1)]; o; o = o->hnext)
		if (o->hash == h && o->fhlen == fhlen && memcmp(o->fh, fh, fhlen) == 0)
			return o;
	return NULL;
}

struct cobj *cobj_get(struct cobj_table *t, const void *fh, uint32_t fhlen)
{
	struct cobj *o = cobj_find(t, fh, fhlen);

	if (o == NULL) {
		if (fhlen == 0 || fhlen > NFS3_FHSIZE)
			return NULL;
		o = calloc(1, sizeof(*o));
		if (o == NULL)
			return NULL;
		memcpy(o->fh, fh, fhlen);
		o->fhlen = fhlen;
		o->hash = (uint32_t)XXH3_64bits(fh, fhlen);
		if (t->count >= t->nbuckets)
			grow(t);
		o->hnext = t->buckets[o->hash & (t->nbuckets - 1)];
		t->buckets[o->hash & (t->nbuckets - 1)] = o;
		t->count++;
		lru_push(t, o);
		o->refs++;
		trim(t);
		return o;
	}
	lru_unlink(t, o);
	lru_push(t, o);
	o->refs++;
	return o;
}

void cobj_put(struct cobj_table *t, struct cobj *o)
{
	(void)t;
	assert(o->refs > 0);
	o->refs--;
}

struct chunk *chunk_find(struct cobj *o, uint32_t idx)
{
	for (struct chunk *c = o->chunks; c; c = c->next)
		if (c->idx == idx)
			return c;
	return NULL;
}

struct chunk *chunk_new(struct cobj_table *t, struct cobj *o, uint32_t idx, enum chunk_state st)
{
	struct chunk *c = calloc(1, sizeof(*c));

	(void)t;
	if (c == NULL)
		return NULL;
	c->obj = o;
	c->idx = idx;
	c->state = st;
	c->next = o->chunks;
	o->chunks = c;
	o->refs++; /* the chunk pins its object */
	return c;
}

static void mlru_unlink(struct cobj_table *t, struct chunk *c)
{
	if (c->mprev)
		c->mprev->mnext = c->mnext;
	else if (t->mhead == c)
		t->mhead = c->mnext;
	else
		return; /* not on the list */
	if (c->mnext)
		c->mnext->mprev = c->mprev;
	else
		t->mtail = c->mprev;
	c->mprev = c->mnext = NULL;
	t->mem_used -= c->len;
}

static void chunk_free(struct cobj_table *t, struct chunk *c)
{
	struct cobj *o = c->obj;

	assert(c->waiters == NULL);
	free(c->buf);
	free(c);
	cobj_put(t, o);
}

void chunk_remove(struct cobj_table *t, struct chunk *c)
{
	struct cobj *o = c->obj;
	struct chunk **pp = &o->chunks;

	while (*pp && *pp != c)
		pp = &(*pp)->next;
	if (*pp == NULL)
		return; /* already removed */
	*pp = c->next;
	c->next = NULL;
	mlru_unlink(t, c);
	c->idx = UINT32_MAX; /* detached: owners see it is gone */
	if (c->refs == 0)
		chunk_free(t, c);
}

void chunk_hold(struct chunk *c)
{
	c->refs++;
}

static int chunk_attached(const struct chunk *c)
{
	for (struct chunk *x = c->obj->chunks; x; x = x->next)
		if (x == c)
			return 1;
	return 0;
}

void chunk_release(struct cobj_table *t, struct chunk *c)
{
	assert(c->refs > 0);
	if (--c->refs == 0 && !chunk_attached(c))
		chunk_free(t, c);
}

/* Puts a READY chunk at the most recent end of the memory LRU. */
static void mlru_push(struct cobj_table *t, struct chunk *c)
{
	c->mprev = NULL;
	c->mnext = t->mhead;
	if (t->mhead)
		t->mhead->mprev = c;
	t->mhead = c;
	if (t->mtail == NULL)
		t->mtail = c;
	t->mem_used += c->len;
}

void chunk_ready(struct cobj_table *t, struct chunk *c)
{
	c->state = CH_READY;
	mlru_push(t, c);
	/* evict least recently used READY chunks beyond the cap */
	while (t->mem_used > t->mem_cap && t->mtail && t->mtail != c) {
		struct chunk *old = t->mtail;
		chunk_remove(t, old);
	}
}

void chunk_touch(struct cobj_table *t, struct chunk *c)
{
	if (c->state != CH_READY || t->mhead == c)
		return;
	mlru_unlink(t, c);
	mlru_push(t, c);
}

void cobj_drop_chunks(struct cobj_table *t, struct cobj *o)
{
	struct chunk *c = o->chunks;

	o->inline_known = 0; /* the store's copy goes too, or is gone */
	while (c) {
		struct chunk *n = c->next;
		if (c->state == CH_READY)
			chunk_remove(t, c);
		c = n;
	}
}

int cobj_invalidate(struct cobj_table *t, struct cobj *o)
{
	int inflight = 0;

	o->gen++;
	o->inline_known = 0;
	o->ra_next = 0;
	while (o->chunks) {
		inflight += o->chunks->state != CH_READY;
		chunk_remove(t, o->chunks);
	}
	return inflight;
}

struct access_ent *cobj_access_find(struct cobj *o, const struct cfs_cred *cred)
{
	for (struct access_ent *a = o->access; a; a = a->next)
		if (cfs_cred_equal(&a->cred, cred))
			return a;
	return NULL;
}

void access_ent_merge(struct access_ent *a, uint32_t asked, uint32_t bits, uint32_t proven,
		      uint32_t refused, const fattr3 *attrs, uint64_t now_ms)
{
	if (a->ctime_s != attrs->ctime.seconds || a->ctime_ns != attrs->ctime.nseconds ||
	    (a->asked == 0 && a->proven == 0 && a->refused == 0)) {
		/* other attributes: what was known then says nothing now */
		a->asked = a->bits = a->proven = a->refused = 0;
		a->acc_ms = 0;
		a->ctime_s = attrs->ctime.seconds;
		a->ctime_ns = attrs->ctime.nseconds;
	}
	a->bits = (a->bits & ~asked) | (bits & asked);
	a->asked |= asked;
	a->proven = (a->proven & ~refused) | proven;
	a->refused = (a->refused & ~proven) | refused;
	a->when_ms = now_ms;
}

static struct access_ent *access_get(struct cobj *o, const struct cfs_cred *cred)
{
	struct access_ent *a = cobj_access_find(o, cred);

	if (a)
		return a;
	if (o->naccess >= MAX_ACCESS_PER_OBJ) {
		/* forget the oldest evidence */
		struct access_ent **pp = &o->access, **oldest = pp;
		for (; *pp; pp = &(*pp)->next)
			if ((*pp)->when_ms < (*oldest)->when_ms)
				oldest = pp;
		a = *oldest;
		*oldest = a->next;
		free(a);
		o->naccess--;
	}
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return NULL;
	a->cred = *cred;
	a->next = o->access;
	o->access = a;
	o->naccess++;
	return a;
}

/* 1 when a's ACCESS answer was given under attrs' mode, owner and group. */
static int acc_attrs_same(const struct access_ent *a, const fattr3 *attrs)
{
	return a->acc_mode == attrs->mode && a->acc_uid == attrs->uid && a->acc_gid == attrs->gid;
}

static void acc_attrs_set(struct access_ent *a, const fattr3 *attrs, uint64_t when_ms)
{
	a->acc_mode = attrs->mode;
	a->acc_uid = attrs->uid;
	a->acc_gid = attrs->gid;
	a->acc_ms = when_ms ? when_ms : 1;
}

void cobj_access_set(struct cobj *o, const struct cfs_cred *cred, uint32_t asked, uint32_t bits,
		     const fattr3 *attrs, uint64_t now_ms)
{
	struct access_ent *a = access_get(o, cred);

	if (a == NULL)
		return;
	/* a server whose ctime did not move with a chmod or chown (a coarse
	 * clock): the bits granted under the other mode say nothing now */
	if (a->acc_ms && !acc_attrs_same(a, attrs))
		a->asked = a->bits = 0;
	access_ent_merge(a, asked, bits, 0, 0, attrs, now_ms);
	acc_attrs_set(a, attrs, now_ms);
}

void cobj_access_restore(struct cobj *o, const struct cfs_cred *cred, uint32_t asked, uint32_t bits,
                         const fattr3 *attrs, uint64_t when_ms)
{
	struct access_ent *a = cobj_access_find(o, cred);

	if (a && a->ctime_s == attrs->ctime.seconds && a->ctime_ns == attrs->ctime.nseconds &&
	    a->acc_ms)
		return; /* an answer of this run is newer */
	a = access_get(o, cred);
	if (a == NULL)
		return;
	access_ent_merge(a, asked, bits, 0, 0, attrs, when_ms);
	acc_attrs_set(a, attrs, when_ms);
}

int cobj_access_reusable(const struct access_ent *a, const fattr3 *attrs, uint64_t reval_ms,
                         uint32_t asked, uint64_t now_ms, uint64_t window_ms, uint64_t max_age_ms,
                         uint32_t *bits)
{
	if (a == NULL || a->acc_ms == 0 || reval_ms == 0 || asked == 0)
		return 0;
	/* the server answered this revalidation: its GETATTR or LOOKUP */
	if (now_ms < reval_ms || now_ms - reval_ms > window_ms)
		return 0;
	/* ... showing nothing an AUTH_SYS check reads changed since the
	 * ACCESS answer (a chmod, chown or ACL change moves the ctime) */
	if (a->ctime_s != attrs->ctime.seconds || a->ctime_ns != attrs->ctime.nseconds ||
	    !acc_attrs_same(a, attrs))
		return 0;
	if ((a->asked & asked) != asked)
		return 0; /* bits the server was not asked */
	if (max_age_ms && (now_ms < a->acc_ms || now_ms - a->acc_ms >= max_age_ms))
		return 0;
	*bits = a->bits & asked;
	return 1;
}

void cobj_access_answered(struct cobj *o, const struct cfs_cred *cred, uint32_t proven,
			  uint32_t refused, const fattr3 *attrs, uint64_t now_ms)
{
	struct access_ent *a = access_get(o, cred);

	if (a)
		access_ent_merge(a, 0, 0, proven, refused, attrs, now_ms);
}

int cfs_mode_allows(const fattr3 *attrs, const struct cfs_cred *cred, uint32_t want)
{
	uint32_t need = 0, m = attrs->mode, have;

	if (want & ACCESS3_READ)
		need |= 4;
	if (want & (ACCESS3_LOOKUP | ACCESS3_EXECUTE))
		need |= 1;
	if (cred->flavor != AUTH_UNIX) {
		have = m & 7;
	} else if (cred->uid == attrs->uid) {
		have = (m >> 6) & 7;
	} else {
		int member = cred->gid == attrs->gid;
		for (uint32_t i = 0; !member && i < cred->ngids && i < CFS_MAX_GIDS; i++)
			member = cred->gids[i] == attrs->gid;
		have = member ? (m >> 3) & 7 : m & 7;
	}
	return (have & need) == need;
}

enum evidence cobj_evidence(const struct access_ent *a, const fattr3 *attrs,
			    const struct cfs_cred *cred, uint32_t want, int rule,
			    uint64_t now_ms, uint64_t max_age_ms)
{
	int usable = a && a->ctime_s == attrs->ctime.seconds &&
		     a->ctime_ns == attrs->ctime.nseconds &&
		     (max_age_ms == 0 || now_ms - a->when_ms < max_age_ms);

	if (usable && (a->refused & want))
		return EV_REFUSED;
	if (usable && (a->proven & want) == want)
		return EV_SERVE;
	/* not proven by the server's answers to this credential's calls */
	if (rule == CFS_EVIDENCE_READ)
		return EV_ASK_CALL;
	if (usable && (a->asked & want) == want) {
		if ((a->bits & want) != want)
			return EV_REFUSED;
		if (rule == CFS_EVIDENCE_ACCESS || cfs_mode_allows(attrs, cred, want))
			return EV_SERVE;
		return EV_ASK_CALL; /* the grant and the mode bits disagree */
	}
	/* an ACCESS grant could not be enough when the mode bits say no */
	if (rule == CFS_EVIDENCE_MODE && !cfs_mode_allows(attrs, cred, want))
		return EV_ASK_CALL;
	return EV_UNKNOWN;
}

void cobj_access_clear(struct cobj *o)
{
	while (o->access) {
		struct access_ent *a = o->access;
		o->access = a->next;
		free(a);
	}
	o->naccess = 0;
}

void cobj_set_now(struct cobj_table *t, uint64_t now_ms)
{
	t->now_ms = now_ms;
}

uint64_t cobj_memory_used(const struct cobj_table *t)
{
	return t->mem_used;
}

uint32_t cobj_count(const struct cobj_table *t)
{
	return t->count;
}
