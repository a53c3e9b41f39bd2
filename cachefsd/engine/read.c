/* READ through the cache.
 *
 * A READ is answered from the cache when the object's cached data was stored
 * under the same (size, mtime, ctime) as the freshest known attributes and
 * the caller has upstream ACCESS evidence allowing READ under those
 * attributes (asked upstream first when there is none). Inline objects are
 * answered from one index lookup. Chunked objects are gathered chunk by
 * chunk: from memory (recently verified chunks), from the cache disk (read
 * and checksummed by a worker), or filled from the upstream (one aligned
 * chunk per fill; concurrent misses on a chunk share the fill). A fill asks
 * its chunk as READs of at most the upstream's rtmax, up to FILL_WINDOW in
 * flight, and asks again for the rest of a short answer (fillplan.h); every
 * answer's attributes must agree. A client whose range lies in one chunk is
 * answered as soon as its bytes are in, others when their chunks are
 * complete; the chunk is written to the data file by a worker and its index
 * entry committed after that.
 *
 * Anything unusual (no post-op attributes, a file changing under the fill,
 * an upstream error, fills stopped on a full cache disk) falls back to
 * forwarding the client's READ as it was: the server's own answer. What
 * keeps fills from working is logged once and shown in the stats
 * (fill_trouble()).
 *
 * Every answer to a fill's READ and to a READ's ACCESS check goes through
 * the reply pipeline (engine_answered(), reply.c) once, as a client's
 * answer would: what it says about the file and the caller is observed
 * there. The pipeline's lookup prefetch comes back here through
 * e->lookup_prefetch, not by name (reply.c says why). */
#include "engine_int.h"
#include "fillplan.h"
#include "log.h"
#include "peers.h"
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define OP_MAGIC   0x524f5031u /* "ROP1" */
#define FILL_MAGIC 0x46494c31u /* "FIL1" */
#define PEER_READ_MAGIC 0x50524431u /* "PRD1" */
#define MAX_OP_CHUNKS 32       /* 1 MiB READ over 64 KiB chunks, unaligned: 17 */
#define MAX_READAHEAD_FILLS 32       /* memory: each holds a chunk buffer */
#define FILL_PAUSE_MS       60000    /* fills blocked by the upstream are tried again after */
#define FILL_TROUBLE_STREAK 3        /* consecutive fills in trouble before pausing */

struct read_op {
	uint32_t magic;
	struct engine *e;
	struct cfs_req *req;
	struct cobj *obj; /* pinned */
	uint64_t off;
	uint32_t count; /* as asked (capped at CFS_MAX_IO) */
	int have_rec;	/* cached data exists and is current */
	struct store_obj rec;
	uint32_t cs; /* chunk size */
	uint32_t lo, hi;
	struct chunk *chunks[MAX_OP_CHUNKS];
	int pending;
	int fallback;
	int filled; /* a chunk came from the upstream */
	uint64_t gen; /* obj->gen when the READ began: a change since ends it */
	ACCESS3args aargs;
};

struct fill;

/* One READ of a fill in flight; its arguments live until the callback (a
 * call may be re-sent after a reconnect). */
struct fill_read {
	struct fill *f;
	uint32_t slot; /* in f->plan */
	uint64_t t_us; /* when it was sent (loop_clock_us) */
	READ3args args;
};

struct fill {
	uint32_t magic;
	struct engine *e;
	struct chunk *c; /* held until the last READ came back */
	uint8_t fh[NFS3_FHSIZE];
	struct cfs_cred cred;
	uint64_t cstart; /* file offset of the chunk */
	int readahead;
	int finished;   /* completed or given up: READs still out are ignored */
	int have_attrs; /* attrs: of the latest answer; all must agree on the snapshot */
	fattr3 attrs;
	struct store_chg chg; /* the change attribute the latest answer had for attrs */
	struct store_snap snap;
	uint64_t start_ms; /* when its first READ was sent (loop_clock_us() / 1000) */
	uint64_t fetched; /* payload bytes received */
	uint32_t cap;     /* bytes allocated at c->buf */
	struct fill_plan plan;
	struct fill_read rd[FILL_WINDOW];
	struct peer_read *pr; /* the chunk asked of its owner (peers), until it answers */
	int unkept;           /* its bytes came from their owner: not stored (peer_keep) */
};

/* The READ of a whole chunk asked of the peer that owns it. It outlives
 * the fill when the fill stopped waiting for it (peer_timeout): f is NULL
 * then, and the answer, when it comes, is dropped. Its own copy of the
 * handle: the pool may send it again after a reconnect. */
struct peer_read {
	uint32_t magic;
	struct engine *e;
	struct fill *f;
	int peer;
	int probe; /* asked of the runner-up, cache only (PEERS_PROBE_MARK) */
	struct loop_timer *timer;
	struct cfs_cred cred;
	uint8_t fh[NFS3_FHSIZE];
	READ3args args;
};

struct disk_job {
	struct engine *e;
	struct chunk *c; /* held */
	uint8_t fh[NFS3_FHSIZE];
	uint32_t fhlen;
	uint64_t data_id;
	uint32_t idx;
	uint64_t off;
	uint32_t len;
	uint64_t csum;
	uint8_t *buf;
	int rc;
	int readahead; /* a load ahead of a sequential reader */
	int fresh;     /* a write: the first under a new data_id (creates the file) */
};

static void op_gather(struct read_op *op);
static int load_start(struct engine *e, struct chunk *c, uint64_t data_id, uint64_t csum,
		      uint32_t len, uint32_t cs, int ra);
static void op_finish(struct read_op *op);
static void fill_start(struct engine *e, struct chunk *c, const struct cfs_cred *cred,
                       uint64_t size_hint, int ra);
static int fills_allowed(struct engine *e);
static int readahead_room(const struct engine *e, uint64_t bytes);
static void fill_read_done(int status, void *res, void *priv);
static uint64_t size_hint(const struct cobj *o);
static void read_start(struct engine *e, struct cfs_req *req, int asked);
static int peer_ask(struct fill *f);
static int ahead_unkept(struct engine *e, const struct cobj *o, uint32_t idx);

static uint64_t chunk_off(const struct chunk *c, uint32_t cs)
{
	return (uint64_t)c->idx * cs;
}

/* --- ops ------------------------------------------------------------------ */

/* What a reply from bytes of the version snap describes carries: the
 * freshest attributes the proxy knows of o, when they are of that version;
 * NULL when they are not (the bytes are older than what the proxy knows,
 * or it knows nothing it may trust: a change no reply described). */
static const fattr3 *fresh_attrs(const struct cobj *o, const struct store_snap *snap)
{
	struct store_snap known;

	if (!o->have_attrs || o->attrs_stale_us)
		return NULL;
	store_snap_of_chg(&o->attrs, &o->chg, &known);
	return store_snap_equal(&known, snap) ? &o->attrs : NULL;
}

static void op_free(struct read_op *op)
{
	for (uint32_t i = 0; op->lo + i <= op->hi && i < MAX_OP_CHUNKS; i++)
		if (op->chunks[i])
			chunk_release(op->e->objs, op->chunks[i]);
	cobj_put(op->e->objs, op->obj);
	op->magic = 0;
	free(op);
}

/* A probe (PEERS_PROBE_MARK) the cache cannot answer: refused, never sent
 * to the filer (the node that asked fills the chunk itself). */
static void probe_refuse(struct engine *e, struct cfs_req *req)
{
	e->ctr.peer_probes_refused++;
	engine_reply_status(e, req, NFS3ERR_JUKEBOX);
}

static void op_forward(struct read_op *op)
{
	struct engine *e = op->e;
	struct cfs_req *req = op->req;

	op->req = NULL;
	op_free(op);
	if (peers_cred_is_probe(&req->cred)) {
		probe_refuse(e, req);
		return;
	}
	e->ctr.read_passthrough++;
	engine_forward_read(e, req);
}

/* Whether chunk c holds bytes of the version op reads: the stored data
 * it reads, or (a chunk taken from its owner and not kept) the snapshot of
 * that data. */
static int chunk_of_op(const struct read_op *op, const struct chunk *c)
{
	struct store_snap s;

	if (!op->have_rec || c->data_id == op->rec.data_id)
		return 1;
	if (!c->unkept || !c->have_attrs)
		return 0;
	store_snap_of(&c->attrs, &s);
	return store_snap_equal(&s, &op->rec.snap);
}

/* A chunk an op waits for is ready (or failed: fallback set). */
static void op_chunk_done(struct read_op *op)
{
	assert(op->magic == OP_MAGIC && op->pending > 0);
	if (--op->pending == 0)
		op_finish(op);
}

static void wake_waiters(struct chunk *c, int failed)
{
	struct op_wait *w = c->waiters;

	c->waiters = NULL;
	while (w) {
		struct op_wait *n = w->next;
		if (failed)
			w->op->fallback = 1;
		op_chunk_done(w->op);
		free(w);
		w = n;
	}
}

/* early: op needs only [from, to) of c and may be answered from a fill
 * before the chunk is complete. */
static int add_waiter(struct chunk *c, struct read_op *op, int early, uint32_t from, uint32_t to)
{
	struct op_wait *w = malloc(sizeof(*w));

	if (w == NULL)
		return -ENOMEM;
	w->op = op;
	w->early = early;
	w->from = from;
	w->to = to;
	w->next = c->waiters;
	c->waiters = w;
	op->pending++;
	return 0;
}

/* The sequential-reader window: chunks ahead of end that are neither in
 * memory nor coming are filled from the upstream or, when the store holds
 * them under data_id (the version being read; 0: none), loaded from disk, so
 * a warm sequential read keeps the disk busy ahead of the client. */
static void readahead(struct engine *e, struct cobj *o, const struct cfs_cred *cred, uint64_t end,
		      uint64_t size, uint32_t cs, uint64_t data_id)
{
	uint64_t ra = e->cfg->readahead;
	uint32_t first, last, idx;

	if (ra == 0 || o->seq < 1 || size <= e->cfg->inline_max || end >= size)
		return;
	/* a peer asks only the chunks this node owns: reading ahead for it
	 * would fetch the other owners' chunks from the filer */
	if (peers_cred_from_peer(cred))
		return;
	first = (uint32_t)(end / cs);
	if (o->ra_next > first)
		first = o->ra_next;
	last = (uint32_t)((end + ra - 1) / cs);
	if ((uint64_t)last * cs >= size)
		last = (uint32_t)((size - 1) / cs);
	for (idx = first; idx <= last; idx++) {
		uint64_t csum;
		uint32_t len;
		struct chunk *c;

		if (!readahead_room(e, cs))
			break;
		if (chunk_find(o, idx))
			continue;
		if (store_chunk_get(e->store, o->fh, o->fhlen, idx, &csum, &len) == 0) {
			if (data_id == 0)
				continue; /* another version's bytes: the reader decides */
			c = chunk_new(e->objs, o, idx, CH_LOADING);
			if (c == NULL)
				break;
			if (load_start(e, c, data_id, csum, len, cs, 1) != 0) {
				chunk_remove(e->objs, c);
				break;
			}
			continue;
		}
		if (!fills_allowed(e) || ahead_unkept(e, o, idx))
			continue;
		c = chunk_new(e->objs, o, idx, CH_FILLING);
		if (c == NULL)
			break;
		fill_start(e, c, cred, size, 1);
	}
	o->ra_next = idx;
}

/* A borrowed READ reply was written or dropped: what lent its bytes
 * (reply_data) is given back. */
static void release_chunk(void *objs, void *chunk)
{
	chunk_release(objs, chunk);
}

static void release_buf(void *buf, void *unused)
{
	(void)unused;
	free(buf);
}

/* Answers op with n bytes at data. lent_chunk (held here until the reply
 * is written) or lent_buf (malloc()ed, freed then) owns data and lets the
 * reply borrow it instead of copying it into the record; with neither,
 * data is copied now (a fill still running may move its buffer). */
static void reply_data(struct read_op *op, const fattr3 *attrs, const uint8_t *data, uint32_t n,
		       int eof, struct chunk *lent_chunk, uint8_t *lent_buf)
{
	struct engine *e = op->e;
	struct cfs_req *req = op->req;
	READ3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READ3res_u.resok.file_attributes.attributes_follow = 1;
	res.READ3res_u.resok.file_attributes.post_op_attr_u.attributes = *attrs;
	res.READ3res_u.resok.count = n;
	res.READ3res_u.resok.eof = eof;
	res.READ3res_u.resok.data.data_len = n;
	res.READ3res_u.resok.data.data_val = (char *)data;
	if (peers_cred_from_peer(&req->cred))
		e->ctr.peer_served++;
	if (op->filled) {
		e->ctr.read_misses++;
	} else {
		e->ctr.read_hits++;
		e->ctr.bytes_from_cache += n;
	}
	e->ctr.bytes_read += n;
	op->req = NULL;
	engine_count_reply(e, req, NFS3_OK);
	if (e->io->reply_read && lent_chunk) {
		chunk_hold(lent_chunk);
		e->ctr.reads_lent++;
		e->io->reply_read(req, &res, release_chunk, e->objs, lent_chunk);
	} else if (e->io->reply_read && lent_buf) {
		e->ctr.reads_lent++;
		e->io->reply_read(req, &res, release_buf, lent_buf, NULL);
	} else {
		engine_reply(e, req, &res);
		free(lent_buf);
	}
}

/* Answers op with n bytes at data (from its offset; size: the file's, as
 * attrs say), frees it and reads ahead for a sequential reader. The lent
 * arguments are reply_data()'s. */
static void op_answer(struct read_op *op, const fattr3 *attrs, const uint8_t *data, uint32_t n,
                      uint64_t size, struct chunk *lent_chunk, uint8_t *lent_buf)
{
	struct engine *e = op->e;
	struct cfs_cred cred = op->req->cred;
	struct cobj *o = op->obj;
	uint32_t cs = op->cs;
	uint64_t data_id = op->have_rec ? op->rec.data_id : 0;
	uint64_t end = op->off + n;

	reply_data(op, attrs, data, n, end >= size, lent_chunk, lent_buf);
	o->refs++; /* keep o across op_free */
	op_free(op);
	readahead(e, o, &cred, end, size, cs, data_id);
	cobj_put(e->objs, o);
}

/* All chunks are here: assemble the client's range and answer. */
static void op_finish(struct read_op *op)
{
	struct engine *e = op->e;
	const fattr3 *attrs = NULL;
	uint64_t size, end;
	uint32_t n;
	uint8_t *buf;

	if (op->fallback || op->gen != op->obj->gen) {
		/* a change through the proxy since the READ began: what it
		 * gathered may be from before (cobj_invalidate()) */
		op_forward(op);
		return;
	}
	if (op->have_rec) {
		attrs = op->obj->have_attrs || op->obj->attrs_stale_us
		            ? fresh_attrs(op->obj, &op->rec.snap)
		            : &op->rec.attrs;
	} else {
		/* a miss: every fill's attributes must be the freshest known */
		for (uint32_t i = 0; op->lo + i <= op->hi; i++) {
			struct chunk *c = op->chunks[i];
			struct store_snap s;

			store_snap_of_chg(&c->attrs, &c->chg, &s);
			attrs = c->have_attrs ? fresh_attrs(op->obj, &s) : NULL;
			if (attrs == NULL)
				break;
		}
	}
	if (attrs == NULL) {
		/* the bytes are of an older version than the proxy knows of
		 * (the file changed while they were read) */
		op_forward(op);
		return;
	}
	size = attrs->size;
	n = op->off >= size ? 0 : (uint32_t)(size - op->off < op->count ? size - op->off : op->count);
	end = op->off + n;
	if (op->lo == op->hi && n) {
		/* within one chunk (the common case: aligned READs of chunk
		 * size): answer straight from its buffer, no copy */
		struct chunk *c = op->chunks[0];
		/* from the op's own index: a chunk removed from its object
		 * (a fill that was not stored) no longer knows its index */
		uint64_t cstart = (uint64_t)op->lo * op->cs;
		if (op->off >= cstart && end <= cstart + c->len && chunk_of_op(op, c)) {
			if (c->idx != UINT32_MAX)
				chunk_touch(e->objs, c);
			/* a complete chunk: its buffer no longer moves */
			op_answer(op, attrs, c->buf + (op->off - cstart), n, size, c, NULL);
			return;
		}
	}
	buf = malloc(n ? n : 1);
	if (buf == NULL) {
		op_forward(op);
		return;
	}
	/* every byte of [off, end) must come from a chunk that holds it */
	uint64_t copied = 0;
	for (uint32_t i = 0; op->lo + i <= op->hi && n; i++) {
		struct chunk *c = op->chunks[i];
		uint64_t cstart = (uint64_t)(op->lo + i) * op->cs, cend = cstart + c->len;
		uint64_t from = op->off > cstart ? op->off : cstart;
		uint64_t to = end < cend ? end : cend;
		uint64_t need_to = end < cstart + op->cs ? end : cstart + op->cs;

		if (from >= end)
			break;
		if (to < need_to || !chunk_of_op(op, c)) {
			/* short chunk inside the file, or data of another version */
			free(buf);
			op_forward(op);
			return;
		}
		memcpy(buf + (from - op->off), c->buf + (from - cstart), to - from);
		copied += to - from;
		if (c->idx != UINT32_MAX)
			chunk_touch(e->objs, c);
	}
	if (copied != n) {
		/* never send bytes that did not come from the file */
		free(buf);
		op_forward(op);
		return;
	}
	op_answer(op, attrs, buf, n, size, NULL, buf); /* takes buf */
}

/* --- disk loads ------------------------------------------------------------ */

static void load_work(void *arg)
{
	struct disk_job *j = arg;

	j->buf = malloc(j->len ? j->len : 1);
	if (j->buf == NULL) {
		j->rc = -ENOMEM;
		return;
	}
	j->rc = store_data_read(j->e->store, j->data_id, j->off, j->buf, j->len);
	if (j->rc == 0 && store_checksum(j->buf, j->len) != j->csum)
		j->rc = -EBADMSG;
}

static void load_done(void *arg)
{
	struct disk_job *j = arg;
	struct engine *e = j->e;
	struct chunk *c = j->c;

	if (j->readahead) {
		e->ra_inflight--;
		e->ctr.readahead_loads++;
	}
	if (c->idx == UINT32_MAX) {
		/* removed meanwhile (the file changed: cobj_invalidate()):
		 * its READs are forwarded */
		free(j->buf);
		wake_waiters(c, 1);
	} else if (j->rc == 0) {
		c->buf = j->buf;
		c->len = j->len;
		e->ctr.chunk_disk_reads++;
		chunk_ready(e->objs, c);
		wake_waiters(c, 0);
	} else {
		struct store_obj rec;

		free(j->buf);
		/* culled or replaced while the worker read it: the file went
		 * with it (or is being recreated, sparse, by a late write of the
		 * dropped data). A plain miss, not a failure. */
		int gone = store_obj_get(e->store, j->fh, j->fhlen, &rec) != 0 ||
			   rec.data_id != j->data_id;
		/* a data file that is not ours (or not there) loses its
		 * object's data at once, not chunk by chunk */
		if (!gone && store_data_lost(e->store, j->fh, j->fhlen, j->data_id, j->rc)) {
			gone = 1;
			if (j->rc == -ENOENT)
				e->ctr.checksum_failures++; /* cached bytes that failed to read */
		}
		if (j->rc != -ENOMEM && !gone) {
			e->ctr.checksum_failures++;
			log_warn("cached chunk %u of a file failed verification (%s): dropped, "
				 "fetching it again (data %016llx, %u bytes at %llu)",
				 c->idx, j->rc == -EBADMSG ? "checksum mismatch" : strerror(-j->rc),
				 (unsigned long long)j->data_id, j->len, (unsigned long long)j->off);
			store_chunk_drop(e->store, j->fh, j->fhlen, c->idx);
		}
		if (c->waiters && fills_allowed(e)) {
			/* refetch under the credential of a waiter (it has READ
			 * evidence: loads only happen for data that was current) */
			c->state = CH_FILLING;
			fill_start(e, c, &c->waiters->op->req->cred, size_hint(c->obj), 0);
		} else {
			wake_waiters(c, 1);
			chunk_remove(e->objs, c);
		}
	}
	chunk_release(e->objs, c);
	free(j);
}

static int load_start(struct engine *e, struct chunk *c, uint64_t data_id, uint64_t csum,
		      uint32_t len, uint32_t cs, int ra)
{
	struct disk_job *j;

	if (e->workers == NULL)
		return -ECANCELED;
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return -ENOMEM;
	j->e = e;
	j->c = c;
	memcpy(j->fh, c->obj->fh, c->obj->fhlen);
	j->fhlen = c->obj->fhlen;
	j->data_id = data_id;
	j->off = (uint64_t)c->idx * cs;
	j->len = len;
	j->csum = csum;
	j->readahead = ra;
	chunk_hold(c);
	c->data_id = data_id;
	if (workers_submit(e->workers, load_work, load_done, j) != 0) {
		chunk_release(e->objs, c);
		free(j);
		return -ENOMEM;
	}
	if (ra)
		e->ra_inflight++;
	return 0;
}

/* --- stores ----------------------------------------------------------------- */

static void write_work(void *arg)
{
	struct disk_job *j = arg;

	j->rc = store_data_write(j->e->store, j->data_id, j->off, j->buf, j->len, j->fresh);
	store_write_landed(j->e->store, j->len, j->rc);
	if (j->rc == 0)
		j->csum = store_checksum(j->buf, j->len);
}

static void write_done(void *arg)
{
	struct disk_job *j = arg;
	struct engine *e = j->e;

	/* a data file that is not ours (planted, a link, missing) is its
	 * object's loss, logged there; any other failed write is counted and
	 * logged by store_write_end (once per episode) */
	if (j->rc == 0 || !store_data_lost(e->store, j->fh, j->fhlen, j->data_id, j->rc)) {
		store_write_end(e->store, j->rc);
		if (j->rc != 0)
			store_fill_refused(e->store, j->rc);
	}
	/* data first, then the index entry pointing at it */
	if (j->rc == 0) {
		int rc =
		    store_chunk_put(e->store, j->fh, j->fhlen, j->data_id, j->idx, j->csum, j->len);

		if (rc == 0)
			e->ctr.stores++;
		else if (rc != -ESTALE) /* -ESTALE: the object was reset meanwhile */
			store_fill_refused(e->store, rc);
	}
	chunk_release(e->objs, j->c);
	free(j);
}

/* Two changes within one timestamp tick leave (size, mtime, ctime) equal:
 * data read before that tick was over (plus fresh_guard), by the filer's
 * clock as far as the proxy knows it, is served, not stored
 * (engine_fresh_judge(), fclock.h). What it was stored on is recorded with
 * it (STORE_GUARD_*). */
static void record_guard(struct engine *e, const struct cobj *o, enum fclock_verdict v)
{
	uint8_t guard;
	uint16_t hour;

	engine_guard_of(v, &guard, &hour);
	if (guard != STORE_GUARD_SOUND) {
		e->ctr.fresh_assumed++;
		store_obj_set_guard(e->store, o->fh, o->fhlen, guard, hour);
	}
}

/* Decides whether and how the filled chunk c, whose READs were sent from
 * start_ms on, is stored; returns the data_id its bytes belong to (0: not
 * stored as a chunk). */
static uint64_t store_fill(struct engine *e, struct chunk *c, uint64_t start_ms)
{
	struct cobj *o = c->obj;
	struct store_obj rec;
	struct store_snap snap;
	uint32_t cs = (uint32_t)e->cfg->chunk_size;
	uint64_t size;
	struct disk_job *j;
	int fresh = 0;
	enum fclock_verdict v;
	int rc;

	if (!c->have_attrs || e->workers == NULL || c->attrs.type != NF3REG)
		return 0;
	if (!store_fill_allowed(e->store)) {
		store_fill_refused(e->store, 0);
		return 0;
	}
	size = c->attrs.size;
	v = engine_fresh_judge(e, start_ms, &c->attrs);
	if (v == FCLOCK_FRESH) {
		e->ctr.fresh_skips++;
		return 0;
	}
	store_snap_of_chg(&c->attrs, &c->chg, &snap);
	if (fresh_attrs(o, &snap) == NULL) {
		/* the proxy knows of a newer version (or of a change no reply
		 * described): these bytes would be dropped at the next READ */
		e->ctr.fill_outdated++;
		return 0;
	}
	if (store_obj_get(e->store, o->fh, o->fhlen, &rec) == 0 &&
	    store_snap_equal(&rec.snap, &snap) && engine_stored_trusted(e, &rec)) {
		if ((rec.flags & STORE_OBJ_INLINE) || rec.chunk_size != cs)
			return 0;
		if (v == FCLOCK_ASSUMED && rec.guard == STORE_GUARD_SOUND)
			record_guard(e, o, v); /* the weaker ground of its chunks */
	} else {
		if (c->idx == 0 && size <= e->cfg->inline_max && c->len == size) {
			if (store_reserve(e->store, c->len + 256) != 0) {
				store_fill_refused(e->store, 0);
			} else if ((rc = store_inline_put(e->store, o->fh, o->fhlen, &c->attrs,
			                                  &c->chg, c->buf, c->len)) != 0) {
				store_fill_refused(e->store, rc);
			} else {
				e->ctr.stores++;
				record_guard(e, o, v);
			}
			return 0;
		}
		cobj_drop_chunks(e->objs, o);
		rc = store_obj_reset(e->store, o->fh, o->fhlen, &c->attrs, &c->chg, &rec);
		if (rc != 0) {
			store_fill_refused(e->store, rc);
			return 0;
		}
		record_guard(e, o, v);
		fresh = 1; /* a new data file: this chunk's write creates it */
	}
	if (c->len != cs && chunk_off(c, cs) + c->len != size)
		goto unstored; /* short, and not the end of the file */
	if (c->len == 0)
		goto unstored;
	if (store_reserve_write(e->store, c->len) != 0) {
		store_fill_refused(e->store, 0);
		goto unstored;
	}

	j = calloc(1, sizeof(*j));
	if (j == NULL) {
		store_write_landed(e->store, c->len, -ECANCELED);
		goto unstored;
	}
	j->e = e;
	j->c = c;
	memcpy(j->fh, o->fh, o->fhlen);
	j->fhlen = o->fhlen;
	j->data_id = rec.data_id;
	j->idx = c->idx;
	j->off = chunk_off(c, cs);
	j->len = c->len;
	j->buf = c->buf; /* c is held: its buffer stays */
	j->fresh = fresh;
	chunk_hold(c);
	/* one writer per data file at a time, in order: the fresh write
	 * runs first */
	if (workers_submit_keyed(e->workers, rec.data_id, write_work, write_done, j) != 0) {
		store_write_landed(e->store, c->len, -ECANCELED);
		chunk_release(e->objs, c);
		free(j);
		goto unstored;
	}
	return rec.data_id;
unstored:
	/* a new data_id whose creating write is not made has no file: give
	 * the record another one, so that the next fill starts over with a
	 * fresh write instead of finding no file */
	if (fresh)
		store_obj_drop(e->store, o->fh, o->fhlen, 0);
	return 0;
}

/* --- fills ------------------------------------------------------------------- */

/* The freshest known size of o's file, if any: the fill plans its READs up
 * to it (the answers' attributes correct it). */
static uint64_t size_hint(const struct cobj *o)
{
	return o->have_attrs && o->attrs.type == NF3REG ? o->attrs.size : FILL_SIZE_UNKNOWN;
}

static uint64_t left_from(uint64_t size, uint64_t cstart)
{
	if (size == FILL_SIZE_UNKNOWN)
		return FILL_SIZE_UNKNOWN;
	return size > cstart ? size - cstart : 0;
}

/* READs a new fill of `bytes` puts in flight at once. */
static int fill_cost(const struct engine *e, uint64_t bytes)
{
	uint64_t n = (bytes + e->fill_piece - 1) / e->fill_piece;

	return n == 0 ? 1 : n > FILL_WINDOW ? FILL_WINDOW : (int)n;
}

/* Room for one more readahead fill, disk load or lookup prefetch of
 * `bytes`: its buffer (MAX_READAHEAD_FILLS) and its READs (ra_read_budget,
 * which is at least FILL_WINDOW, so one always fits when none runs). */
static int readahead_room(const struct engine *e, uint64_t bytes)
{
	return e->ra_inflight < MAX_READAHEAD_FILLS &&
	       e->ra_reads + fill_cost(e, bytes) <= e->ra_read_budget;
}

static const char *const block_text[] = {
    [ENGINE_FILL_NO_ATTRS] = "the upstream's READ replies carry no file attributes, so no "
                             "fill can be stored",
    [ENGINE_FILL_BAD_READS] = "the upstream's READ replies cannot be used (more bytes than "
                              "asked, none before the end of the file, or no progress)",
};

const char *engine_fill_block_name(int blocked)
{
	switch (blocked) {
	case ENGINE_FILL_NO_ATTRS:
		return "no_read_attributes";
	case ENGINE_FILL_BAD_READS:
		return "bad_read_replies";
	default:
		return "none";
	}
}

/* A fill ran into something the upstream does that keeps chunks from being
 * cached (the fill is given up; its clients' READs are forwarded). After
 * FILL_TROUBLE_STREAK such fills in a row, fills pause for FILL_PAUSE_MS:
 * each READ would otherwise cost a useless fill READ besides the forwarded
 * one. Logged once per outage, shown in the stats (fills_blocked). */
static void fill_trouble(struct engine *e, int why)
{
	if (++e->fill_trouble_streak < FILL_TROUBLE_STREAK)
		return;
	e->fill_blocked = why;
	e->fill_blocked_until_ms = loop_now(e->loop) + FILL_PAUSE_MS;
	if (!(e->fill_logged & (1u << why))) {
		e->fill_logged |= 1u << why;
		log_warn(
		    "caching stopped: %s; READs are forwarded, fills are tried again every %d s",
		    block_text[why], FILL_PAUSE_MS / 1000);
	}
}

static void fill_went_well(struct engine *e)
{
	e->fill_trouble_streak = 0;
	if (e->fill_blocked) {
		log_info("caching resumed: a fill was stored again");
		e->fill_logged &= ~(1u << e->fill_blocked);
		e->fill_blocked = 0;
	}
}

static int fills_allowed(struct engine *e)
{
	return store_fill_allowed(e->store) &&
	       (!e->fill_blocked || loop_now(e->loop) >= e->fill_blocked_until_ms);
}

/* A server that answers less than its FSINFO rtmax: later fills ask what
 * it really returns, instead of following up every READ. */
static void fill_learn(struct engine *e, const struct fill_plan *p)
{
	uint32_t cs = (uint32_t)e->cfg->chunk_size;

	if (p->piece >= e->fill_piece)
		return;
	e->fill_piece = p->piece;
	log_warn("upstream answers READs with at most %u bytes (FSINFO rtmax %u): fills now use %u "
	         "READs of %u KiB per %u KiB chunk",
	         p->piece, engine_up_info(e)->fsinfo.rtmax, fill_reads_per_chunk(p->piece, cs),
	         p->piece / 1024, cs / 1024);
}

void engine_fills_init(struct engine *e)
{
	uint32_t rtmax = engine_up_info(e)->fsinfo.rtmax;
	const char *t = getenv("CFS_TEST_RTMAX");

	/* test hook (63-read-limits): fills believe the upstream allows
	 * more than it does, so a real server answers them short */
	if (t && *t) {
		rtmax = (uint32_t)strtoul(t, NULL, 0);
		log_warn("CFS_TEST_RTMAX: fills take the upstream's rtmax for %u", rtmax);
	}
	e->fill_piece = fill_read_size(rtmax, (uint32_t)e->cfg->chunk_size);
	e->ra_read_budget = engine_up_max_inflight(e) / 2;
	if (e->ra_read_budget < FILL_WINDOW)
		e->ra_read_budget = FILL_WINDOW;
}

void engine_fill_state(const struct engine *e, struct engine_fill_state *out)
{
	out->chunk_size = (uint32_t)e->cfg->chunk_size;
	out->read_size = e->fill_piece;
	out->reads_per_chunk = fill_reads_per_chunk(e->fill_piece, out->chunk_size);
	out->blocked = e->fill_blocked;
}

/* A chunk whose fill could not even start. */
static void fill_failed(struct engine *e, struct chunk *c)
{
	wake_waiters(c, 1);
	chunk_remove(e->objs, c);
}

static void fill_free(struct fill *f)
{
	assert(f->finished && f->plan.nout == 0 && f->pr == NULL);
	chunk_release(f->e->objs, f->c);
	f->magic = 0;
	free(f);
}

/* The fill is over: completed or given up. READs still out come back to
 * fill_read_done(), which frees the fill after the last. */
static void fill_end(struct fill *f)
{
	struct engine *e = f->e;

	f->finished = 1;
	f->c->fill = NULL;
	e->fills_inflight--;
	if (f->readahead)
		e->ra_inflight--;
}

static void fill_give_up(struct fill *f)
{
	struct chunk *c = f->c;

	if (f->finished)
		return;
	fill_end(f);
	/* they forward their READs (a chunk detached by a change too) */
	wake_waiters(c, 1);
	if (c->idx != UINT32_MAX)
		chunk_remove(f->e->objs, c);
}

static void fill_complete(struct fill *f)
{
	struct engine *e = f->e;
	struct chunk *c = f->c;
	uint32_t len = fill_plan_end(&f->plan);

	fill_end(f);
	fill_went_well(e);
	if (c->idx == UINT32_MAX) {
		wake_waiters(c, 1); /* detached by a change: nothing served */
		return;
	}
	c->unkept = f->unkept;
	if (len < f->cap) {
		/* the end of the file: give back what it does not use */
		uint8_t *b = realloc(c->buf, len ? len : 1);
		if (b)
			c->buf = b;
	}
	c->len = len;
	c->eof = f->plan.eof_at == len;
	c->have_attrs = 1;
	c->attrs = f->attrs;
	c->chg = f->chg;
	e->ctr.fills++;
	if (f->readahead)
		e->ctr.readahead_fills++;
	/* a chunk another node owns is served, not stored (peer_keep = no):
	 * the fleet keeps one copy, on the owner */
	c->data_id = f->unkept ? 0 : store_fill(e, c, f->start_ms);
	if (f->unkept)
		e->ctr.peer_unkept++;
	chunk_ready(e->objs, c);
	wake_waiters(c, 0);
	if (c->data_id == 0)
		chunk_remove(e->objs, c); /* not reusable without a snapshot */
}

/* Sends the READs the plan has room for. */
static int fill_send(struct fill *f)
{
	struct engine *e = f->e;
	struct fill_range r;
	uint32_t slot;

	while (fill_plan_next(&f->plan, &slot, &r)) {
		struct fill_read *rd = &f->rd[slot];

		rd->f = f;
		rd->slot = slot;
		rd->args.file.data.data_len = f->c->obj->fhlen;
		rd->args.file.data.data_val = (char *)f->fh;
		rd->args.offset = f->cstart + r.off;
		rd->args.count = r.len;
		rd->t_us = loop_clock_us();
		if (engine_up_call(e, NFS3_READ, &rd->args, &f->cred, fill_read_done, rd) != 0) {
			fill_plan_cancel(&f->plan, slot);
			return -EIO;
		}
		e->fill_reads_inflight++;
		e->ctr.fill_reads++;
		if (f->readahead)
			e->ra_reads++;
	}
	return 0;
}

/* Waiters whose range lies in this chunk are answered as soon as their
 * bytes are in: every answer so far agreed on (size, mtime, ctime), so the
 * bytes are those of one version of the file, the one f->attrs describes,
 * when that is the freshest the proxy knows and nothing changed since the
 * fill began (a detached chunk: cobj_invalidate()). Multi-chunk ranges
 * wait for complete chunks (op_finish checks them). */
static void fill_serve_early(struct fill *f)
{
	struct engine *e = f->e;
	struct chunk *c = f->c;
	const fattr3 *attrs;

	if (!f->have_attrs || f->finished || !f->plan.size_known || c->idx == UINT32_MAX)
		return;
	attrs = fresh_attrs(c->obj, &f->snap);
	if (attrs == NULL)
		return; /* older than what is known: op_finish forwards them */
again:
	for (struct op_wait **pp = &c->waiters; *pp; pp = &(*pp)->next) {
		struct op_wait *w = *pp;
		struct read_op *op = w->op;
		uint64_t size = f->attrs.size;
		uint32_t n;

		if (!w->early || !fill_plan_covered(&f->plan, w->from, w->to) ||
		    op->gen != c->obj->gen)
			continue;
		n = op->off >= size
		        ? 0
		        : (uint32_t)(size - op->off < op->count ? size - op->off : op->count);
		if (op->off + n > f->cstart + fill_plan_end(&f->plan))
			continue; /* EOF said earlier than the size: wait for the whole chunk */
		*pp = w->next;
		free(w);
		op->pending--;
		e->ctr.fill_early++;
		/* copied: the fill may still move c->buf (realloc) */
		op_answer(op, attrs, c->buf + (op->off - f->cstart), n, size, NULL, NULL);
		goto again; /* answering may have changed the list */
	}
}

/* One READ of the fill came back with data. */
static void fill_piece_in(struct fill *f, struct fill_read *rd, const READ3resok *ok)
{
	struct engine *e = f->e;
	struct chunk *c = f->c;
	struct fill_range want = f->plan.out[rd->slot];
	uint32_t n = ok->data.data_len;
	const fattr3 *a = &ok->file_attributes.post_op_attr_u.attributes;
	struct store_snap snap;
	struct store_chg chg;

	if (!ok->file_attributes.attributes_follow) {
		/* no snapshot: nothing of this chunk could be stored */
		e->ctr.fill_noattrs++;
		fill_plan_cancel(&f->plan, rd->slot);
		fill_give_up(f);
		fill_trouble(e, ENGINE_FILL_NO_ATTRS);
		return;
	}
	engine_reply_chg(e, a, &chg);
	store_snap_of_chg(a, &chg, &snap);
	if (f->have_attrs && !store_snap_equal(&snap, &f->snap)) {
		/* the file changed between two READs of the chunk: its bytes
		 * are of two versions. The clients' READs are forwarded. */
		e->ctr.fill_mixed++;
		fill_plan_cancel(&f->plan, rd->slot);
		fill_give_up(f);
		return;
	}
	f->have_attrs = 1;
	f->attrs = *a;
	f->chg = chg;
	f->snap = snap;
	if (n > want.len || fill_plan_reply(&f->plan, rd->slot, n, ok->eof) != 0) {
		e->ctr.fill_bad_replies++;
		fill_plan_cancel(&f->plan, rd->slot);
		fill_give_up(f);
		fill_trouble(e, ENGINE_FILL_BAD_READS);
		return;
	}
	/* want lies within the plan's end when it was asked, and f->cap only
	 * grows with that end */
	memcpy(c->buf + want.off, ok->data.data_val, n);
	f->fetched += n;
	e->ctr.fill_bytes += n;
	if (!ok->eof && n < want.len)
		e->ctr.fill_short_reads++;
	fill_learn(e, &f->plan);
	fill_plan_size(&f->plan, left_from(a->size, f->cstart));
	if (fill_plan_end(&f->plan) > f->cap) {
		/* the file grew, or its size was not known */
		uint32_t cap = fill_plan_end(&f->plan);
		uint8_t *b = realloc(c->buf, cap);
		if (b == NULL) {
			fill_give_up(f);
			return;
		}
		c->buf = b;
		f->cap = cap;
	}
	if (fill_plan_done(&f->plan)) {
		fill_complete(f);
		return;
	}
	if (fill_send(f) != 0) {
		fill_give_up(f);
		return;
	}
	fill_serve_early(f);
}

static void fill_read_done(int status, void *res, void *priv)
{
	struct fill_read *rd = priv;
	struct fill *f = rd->f;
	struct engine *e = f->e;
	READ3res *r = res;

	assert(f->magic == FILL_MAGIC);
	e->fill_reads_inflight--;
	if (f->readahead)
		e->ra_reads--;
	if (status == 0) {
		/* what the upstream said about the file and the caller */
		struct engine_call call = {.prog = NFS_PROGRAM,
		                           .proc = NFS3_READ,
		                           .t_call_us = rd->t_us,
		                           .cred = f->cred,
		                           .args.read = rd->args};

		engine_answered(e, &call, r);
	}
	if (f->finished || f->c->idx == UINT32_MAX || status != 0 || r->status != NFS3_OK) {
		fill_plan_cancel(&f->plan, rd->slot);
		fill_give_up(f);
	} else {
		fill_piece_in(f, rd, &r->READ3res_u.resok);
	}
	if (f->finished && f->plan.nout == 0)
		fill_free(f);
}

/* --- fills from peers (include/peers.h) ----------------------------------- */

/* The fill goes to the filer after all: the plan starts over as fill_start()
 * made it (nothing of it was used while the peer was asked). */
static void peer_fallback(struct fill *f, int count)
{
	struct engine *e = f->e;

	if (count)
		e->ctr.peer_fallbacks++;
	if (f->c->idx == UINT32_MAX) {
		fill_give_up(f); /* detached by a change meanwhile */
		return;
	}
	f->have_attrs = 0;
	fill_plan_init(&f->plan, (uint32_t)e->cfg->chunk_size, e->fill_piece, FILL_WINDOW,
	               left_from(size_hint(f->c->obj), f->cstart));
	if (fill_plan_end(&f->plan) > f->cap) {
		uint32_t cap = fill_plan_end(&f->plan);
		uint8_t *b = realloc(f->c->buf, cap);

		if (b == NULL) {
			fill_give_up(f);
			return;
		}
		f->c->buf = b;
		f->cap = cap;
	}
	f->start_ms = loop_clock_us() / 1000;
	if (fill_send(f) != 0 || f->plan.nout == 0)
		fill_give_up(f);
}

/* The owner's answer: taken only when it is the whole chunk and its
 * attributes are the snapshot this node knows as the freshest from the
 * filer (fresh_attrs(): what a cached chunk must match to be served), so
 * the bytes are those a fill from the filer would have brought. 1 when
 * taken (the fill is complete). */
static int peer_take(struct fill *f, const READ3resok *ok, int probe)
{
	struct engine *e = f->e;
	struct chunk *c = f->c;
	const fattr3 *a = &ok->file_attributes.post_op_attr_u.attributes;
	uint32_t n = ok->data.data_len, slot;
	uint32_t cs = (uint32_t)e->cfg->chunk_size;
	struct fill_range r;
	struct store_snap snap;

	if (!ok->file_attributes.attributes_follow)
		return 0;
	store_snap_of(a, &snap);
	if (fresh_attrs(c->obj, &snap) == NULL)
		return 0;
	/* one READ of the whole chunk as the file's size says; the plan
	 * starts over for the filer when the answer is not that */
	fill_plan_init(&f->plan, cs, cs, 1, left_from(a->size, f->cstart));
	if (!fill_plan_next(&f->plan, &slot, &r))
		return 0;
	if (n != r.len || r.len > f->cap || fill_plan_reply(&f->plan, slot, n, ok->eof) != 0) {
		fill_plan_cancel(&f->plan, slot);
		return 0;
	}
	if (!fill_plan_done(&f->plan))
		return 0; /* nothing out: the file ends later than its size says */
	memcpy(c->buf, ok->data.data_val, n);
	f->have_attrs = 1;
	f->attrs = *a;
	f->snap = snap;
	f->fetched = n;
	/* a probe brought a chunk this node owns: kept */
	f->unkept = !probe && !e->cfg->peer_keep;
	e->ctr.peer_bytes += n;
	e->ctr.peer_fills++;
	if (probe)
		e->ctr.peer_probe_hits++;
	fill_complete(f);
	return 1;
}

static void peer_read_done(int status, void *res, void *priv)
{
	struct peer_read *pr = priv;
	struct fill *f = pr->f;
	struct engine *e = pr->e;
	READ3res *r = res;

	assert(pr->magic == PEER_READ_MAGIC);
	if (f == NULL) {
		/* the fill stopped waiting (peer_timeout); a late answer still
		 * says the peer is alive */
		if (status == 0)
			peers_outcome(e->peers, pr->peer, 1);
		pr->magic = 0;
		free(pr);
		return;
	}
	assert(f->magic == FILL_MAGIC && f->pr == pr);
	f->pr = NULL;
	if (pr->timer)
		loop_timer_cancel(e->loop, pr->timer);
	if (status == -ECANCELED) {
		fill_give_up(f); /* shutting down */
	} else if (status != 0) {
		/* no answer: the connection was lost, or the pool gave up */
		e->ctr.peer_timeouts++;
		peers_outcome(e->peers, pr->peer, 0);
		peer_fallback(f, 1);
	} else {
		peers_outcome(e->peers, pr->peer, 1);
		if (f->finished || f->c->idx == UINT32_MAX) {
			fill_give_up(f);
		} else if (r->status != NFS3_OK ||
		           !peer_take(f, &r->READ3res_u.resok, pr->probe)) {
			/* a probe the runner-up could not answer from its
			 * cache: the filer, as without peers */
			if (pr->probe)
				e->ctr.peer_probe_misses++;
			else
				e->ctr.peer_refused++;
			peer_fallback(f, !pr->probe);
		}
	}
	pr->magic = 0;
	free(pr);
	if (f->finished && f->plan.nout == 0)
		fill_free(f);
}

/* peer_timeout passed without an answer: the peer is left out for a
 * back-off and the fill goes to the filer now; the READ is dropped when
 * it comes back (the peer pool, soft, ends it within a second or two). */
static void peer_read_timeout(struct loop *l, void *arg)
{
	struct peer_read *pr = arg;
	struct fill *f = pr->f;
	struct engine *e = pr->e;

	(void)l;
	assert(pr->magic == PEER_READ_MAGIC && f && f->pr == pr);
	pr->timer = NULL;
	pr->f = NULL;
	f->pr = NULL;
	e->ctr.peer_timeouts++;
	peers_outcome(e->peers, pr->peer, 0);
	peer_fallback(f, 1);
	if (f->finished && f->plan.nout == 0)
		fill_free(f);
}

/* A chunk another node owns, with peer_keep = no: not read ahead (nor
 * prefetched), since the bytes would be dropped before the READ that
 * wants them comes (they are served only to READs waiting for the fill). */
static int ahead_unkept(struct engine *e, const struct cobj *o, uint32_t idx)
{
	/* (a file with a change attribute is never asked of a peer:
	 * peer_ask(); its chunks are read ahead as without peers) */
	return e->peers && !e->cfg->peer_keep && !o->chg.has &&
	       peers_owner(e->peers, o->fh, o->fhlen, idx) >= 0;
}

/* Asks the chunk of the peer that owns it, when there is one other than
 * this node; when this node owns it, probes the runner-up, the node that
 * owned it before this one joined or came back empty (a warm replacement:
 * it answers from its cache only). 1 when asked (the answer or the timeout
 * goes on with the fill), 0 when the fill goes to the filer. A READ a peer
 * sent is only probed for (its owner fills from the filer otherwise: no
 * chains; a probe goes no further). Not without a size known from the
 * filer (the snapshot the answer must match), not for AUTH_NONE (the mark
 * is in the AUTH_SYS machine name), not for a file whose snapshot holds
 * an NFSv4 change attribute (a peer answers over NFSv3, without one: its
 * bytes could never match, and asking would make the owner fetch them from
 * the filer for nothing). */
static int peer_ask(struct fill *f)
{
	struct engine *e = f->e;
	struct chunk *c = f->c;
	struct peer_read *pr;
	int peer, probe = 0;

	if (e->peers == NULL || f->cred.flavor != AUTH_UNIX || peers_cred_is_probe(&f->cred) ||
	    !f->plan.size_known || fill_plan_end(&f->plan) == 0 || !c->obj->have_attrs ||
	    c->obj->attrs_stale_us || c->obj->chg.has)
		return 0;
	peer = peers_cred_from_peer(&f->cred) ? -1
	                                      : peers_owner(e->peers, f->fh, c->obj->fhlen, c->idx);
	if (peer < 0) {
		peer = peers_runner_up(e->peers, f->fh, c->obj->fhlen, c->idx);
		probe = 1;
	}
	if (peer < 0)
		return 0;
	pr = calloc(1, sizeof(*pr));
	if (pr == NULL)
		return 0;
	pr->magic = PEER_READ_MAGIC;
	pr->e = e;
	pr->f = f;
	pr->peer = peer;
	pr->probe = probe;
	pr->cred = f->cred;
	peers_mark_cred(&pr->cred, probe);
	memcpy(pr->fh, f->fh, c->obj->fhlen);
	pr->args.file.data.data_len = c->obj->fhlen;
	pr->args.file.data.data_val = (char *)pr->fh;
	pr->args.offset = f->cstart;
	pr->args.count = fill_plan_end(&f->plan);
	if (peers_call(e->peers, peer, NFS3_READ, &pr->args, &pr->cred, peer_read_done, pr) != 0) {
		free(pr);
		if (!probe)
			e->ctr.peer_fallbacks++;
		return 0;
	}
	if (probe)
		e->ctr.peer_probes++;
	pr->timer = loop_timer_add(e->loop, (uint64_t)peers_timeout_ms(e->peers), 0,
	                           peer_read_timeout, pr);
	f->pr = pr;
	return 1;
}

static void fill_start(struct engine *e, struct chunk *c, const struct cfs_cred *cred,
                       uint64_t size_hint, int ra)
{
	struct fill *f = calloc(1, sizeof(*f));
	uint32_t cs = (uint32_t)e->cfg->chunk_size;

	assert(c->buf == NULL && c->fill == NULL);
	if (f == NULL) {
		fill_failed(e, c);
		return;
	}
	f->magic = FILL_MAGIC;
	f->e = e;
	f->c = c;
	f->cred = *cred;
	f->readahead = ra;
	memcpy(f->fh, c->obj->fh, c->obj->fhlen);
	f->cstart = chunk_off(c, cs);
	f->start_ms = loop_clock_us() / 1000;
	fill_plan_init(&f->plan, cs, e->fill_piece, FILL_WINDOW, left_from(size_hint, f->cstart));
	f->cap = fill_plan_end(&f->plan);
	c->buf = malloc(f->cap ? f->cap : 1);
	if (c->buf == NULL) {
		free(f);
		fill_failed(e, c);
		return;
	}
	c->state = CH_FILLING;
	c->fill = f;
	chunk_hold(c);
	e->fills_inflight++;
	if (ra)
		e->ra_inflight++;
	if (peer_ask(f))
		return;
	if (fill_send(f) != 0 || f->plan.nout == 0) {
		fill_give_up(f);
		if (f->plan.nout == 0)
			fill_free(f);
	}
}

/* --- lookup prefetch ----------------------------------------------------------- */

/* A client that looks a file up usually opens it next (GETATTR, ACCESS)
 * and reads it: `tar`, `cp -r`, a compiler reading headers. A small file's
 * bytes are fetched at once, during those round trips, so its READ is
 * answered here instead of waiting on the upstream. Files of at most
 * inline_max bytes (a fill of one chunk, a READ or a few), within the
 * readahead budget; the fill runs with the caller's credential, and the
 * READ still needs its own caller's READ evidence (engine_read). */
void engine_lookup_prefetch(struct engine *e, const nfs_fh3 *fh, const post_op_attr *pa,
			    const struct cfs_cred *cred)
{
	const fattr3 *a = &pa->post_op_attr_u.attributes;
	struct store_obj rec;
	struct store_snap snap;
	struct store_chg chg;
	struct cobj *o;
	struct chunk *c;

	if (!e->cfg->lookup_prefetch || !pa->attributes_follow || a->type != NF3REG ||
	    a->size == 0 || a->size > e->cfg->inline_max || e->workers == NULL ||
	    !readahead_room(e, a->size) || !fills_allowed(e))
		return;
	if (engine_fresh_judge(e, loop_clock_us() / 1000, a) == FCLOCK_FRESH)
		return; /* it would not be stored: the READ would fetch it again */
	o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);
	if (o == NULL)
		return;
	engine_reply_chg(e, a, &chg);
	store_snap_of_chg(a, &chg, &snap);
	/* a warm walk: the last READ of this version came from the store */
	if (o->inline_known && store_snap_equal(&o->inline_snap, &snap)) {
		cobj_put(e->objs, o);
		return;
	}
	if (o->chunks == NULL && o->nocache_until_ms <= loop_now(e->loop) && !ahead_unkept(e, o, 0) &&
	    !(store_obj_get(e->store, o->fh, o->fhlen, &rec) == 0 &&
	      store_snap_equal(&rec.snap, &snap) && (rec.flags & STORE_OBJ_INLINE) &&
	      engine_stored_trusted(e, &rec))) {
		c = chunk_new(e->objs, o, 0, CH_FILLING);
		if (c) {
			e->ctr.lookup_prefetches++;
			fill_start(e, c, cred, a->size, 1);
		}
	}
	cobj_put(e->objs, o);
}

/* --- gathering ---------------------------------------------------------------- */

/* Collects the chunks [lo, hi] for op: each ready, loading or filling. */
static void op_gather(struct read_op *op)
{
	struct engine *e = op->e;
	struct cobj *o = op->obj;
	/* a probe is answered from the cache only */
	int fill_ok = fills_allowed(e) && !peers_cred_is_probe(&op->req->cred);
	struct chunk *early_c = NULL;

	op->pending = 1; /* held until every chunk is requested */
	for (uint32_t idx = op->lo; idx <= op->hi; idx++) {
		struct chunk *c = chunk_find(o, idx);
		uint64_t csum;
		uint32_t len;

		if (c && c->state == CH_READY && op->have_rec && c->data_id != op->rec.data_id) {
			chunk_remove(e->objs, c); /* bytes of an older version */
			c = NULL;
		}
		if (c && c->state == CH_FILLING && peers_cred_is_probe(&op->req->cred)) {
			/* a probe does not wait for a fill: that fill may be
			 * the asking node's own, waiting on this node */
			op->fallback = 1;
			break;
		}
		if (c == NULL) {
			if (op->have_rec &&
			    store_chunk_get(e->store, o->fh, o->fhlen, idx, &csum, &len) == 0) {
				c = chunk_new(e->objs, o, idx, CH_LOADING);
				if (c && load_start(e, c, op->rec.data_id, csum, len, op->cs, 0) != 0) {
					chunk_remove(e->objs, c);
					c = NULL;
				}
			} else if (fill_ok) {
				c = chunk_new(e->objs, o, idx, CH_FILLING);
				if (c) {
					op->filled = 1;
					fill_start(e, c, &op->req->cred, size_hint(o), 0);
					/* a failed start removed c */
					c = chunk_find(o, idx);
				}
			} else if (!store_fill_allowed(e->store)) {
				/* the store's refusal, counted by reason (the
				 * filer's, fills_blocked, is not) */
				store_fill_refused(e->store, 0);
			}
			if (c == NULL) {
				op->fallback = 1;
				break;
			}
		} else if (c->state == CH_READY) {
			e->ctr.chunk_mem_hits++;
		} else if (c->state == CH_FILLING) {
			op->filled = 1;
		}
		chunk_hold(c);
		op->chunks[idx - op->lo] = c;
		if (c->state != CH_READY) {
			/* a range within one chunk being filled can be answered
			 * before the chunk is complete (fill_serve_early) */
			int early = c->state == CH_FILLING && op->lo == op->hi && !op->have_rec;
			uint64_t cstart = (uint64_t)idx * op->cs;
			uint64_t to = op->off + op->count - cstart;

			if (add_waiter(c, op, early, early ? (uint32_t)(op->off - cstart) : 0,
			               to > op->cs ? op->cs : (uint32_t)to) != 0) {
				op->fallback = 1;
				break;
			}
			if (early)
				early_c = c;
		}
	}
	if (early_c)
		chunk_hold(early_c); /* op may be gone after op_chunk_done() */
	op_chunk_done(op);
	if (early_c) {
		/* the bytes may be in already (another reader's fill) */
		if (early_c->fill)
			fill_serve_early(early_c->fill);
		chunk_release(e->objs, early_c);
	}
}

/* --- the READ entry point ------------------------------------------------------- */

/* What lets cred read o's cached bytes under attrs (engine_evidence()). */
static enum evidence evidence_of(struct engine *e, struct cobj *o, const struct cfs_cred *cred,
				 const fattr3 *attrs)
{
	nfs_fh3 fh = {{o->fhlen, (char *)o->fh}};

	return engine_evidence(e, &fh, cred, ACCESS3_READ, attrs);
}

static void access_done(int status, void *res, void *priv)
{
	struct read_op *op = priv;
	struct engine *e = op->e;
	ACCESS3res *r = res;

	assert(op->magic == OP_MAGIC);
	if (status != 0 || r->status != NFS3_OK) {
		op_forward(op);
		return;
	}
	struct engine_call call = {
	    .prog = NFS_PROGRAM, .proc = NFS3_ACCESS, .cred = op->req->cred, .args.access = op->aargs};
	engine_answered(e, &call, r);
	if (!(r->ACCESS3res_u.resok.access & ACCESS3_READ)) {
		/* the server's own answer to this READ is the right one */
		op_forward(op);
		return;
	}
	/* the attributes may have moved on: look again (once: an answer that
	 * could not be recorded must not make the READ ask forever) */
	{
		struct cfs_req *req = op->req;
		op->req = NULL;
		op_free(op);
		read_start(e, req, 1);
	}
}

void engine_read(struct engine *e, struct cfs_req *req)
{
	read_start(e, req, 0);
}

/* asked: an ACCESS call was already made for this READ. */
/* A small file's bytes in the store failed their checksum (the store
 * dropped them): counted and said; the READ fetches them again. */
static void inline_bad(struct engine *e)
{
	e->ctr.checksum_failures++;
	log_warn("cached small file failed verification: dropped, fetching it again");
}

static void read_start(struct engine *e, struct cfs_req *req, int asked)
{
	READ3args *a = &req->args.read;
	struct read_op *op;
	struct cobj *o;
	const fattr3 *known;
	uint32_t cs = (uint32_t)e->cfg->chunk_size;

	o = cobj_get(e->objs, a->file.data.data_val, a->file.data.data_len);
	if (o == NULL || a->count == 0 || o->nocache_until_ms > loop_now(e->loop) ||
	    o->stale_check || o->attrs_stale_us || (o->have_attrs && o->attrs.type != NF3REG)) {
		if (o && o->nocache_until_ms > loop_now(e->loop))
			e->ctr.writer_passthrough++; /* being written: not cached */
		if (o)
			cobj_put(e->objs, o);
		if (peers_cred_is_probe(&req->cred)) {
			probe_refuse(e, req);
			return;
		}
		e->ctr.read_passthrough++;
		engine_forward_read(e, req);
		return;
	}
	op = calloc(1, sizeof(*op));
	if (op == NULL) {
		cobj_put(e->objs, o);
		if (peers_cred_is_probe(&req->cred))
			probe_refuse(e, req);
		else
			engine_forward_read(e, req);
		return;
	}
	op->magic = OP_MAGIC;
	op->e = e;
	op->req = req;
	op->obj = o;
	op->off = a->offset;
	op->count = a->count > CFS_MAX_IO ? CFS_MAX_IO : a->count;
	op->cs = cs;
	op->gen = o->gen;

	/* sequential detection (parallel readers arrive a little out of order) */
	if (o->next_off && a->offset + 2ULL * cs >= o->next_off && a->offset <= o->next_off + 2ULL * cs) {
		o->seq++;
		if (o->next_off < a->offset + op->count)
			o->next_off = a->offset + op->count;
	} else {
		o->seq = 0;
		o->ra_next = 0;
		o->next_off = a->offset + op->count;
	}

	/* A small file read before from the store (o->inline_known): its
	 * record and bytes in one look at the index, into e->inline_buf.
	 * Otherwise (or when it is not inline now) the record alone. */
	uint8_t *inl = NULL;
	uint32_t inl_len = 0;
	int rrc = -ENOENT;
	if (o->inline_known && (e->inline_buf != NULL ||
	                        (e->inline_buf = malloc(e->cfg->inline_max ? e->cfg->inline_max : 1)))) {
		rrc = store_inline_get(e->store, o->fh, o->fhlen, &op->rec, e->inline_buf,
		                       (uint32_t)e->cfg->inline_max, &inl_len);
		if (rrc == 0)
			inl = e->inline_buf;
		else if (rrc == -EBADMSG)
			inline_bad(e);
	}
	if (rrc == 0 || (rrc != -EBADMSG && store_obj_get(e->store, o->fh, o->fhlen, &op->rec) == 0)) {
		struct store_snap s;
		known = o->have_attrs ? &o->attrs : &op->rec.attrs;
		/* not in memory (a restart): the record's attributes are
		 * those it was stored under, with its change attribute */
		store_snap_of_chg(known,
		                  o->have_attrs ? &o->chg
		                                : &(struct store_chg){op->rec.snap.change,
		                                                      (int)op->rec.snap.has_change},
		                  &s);
		if (!store_snap_equal(&s, &op->rec.snap))
			engine_drop_data(e, o, "attributes changed upstream");
		else if (!engine_stored_trusted(e, &op->rec)) {
			/* its fresh guard rested on a clock that may have been
			 * wrong: fetched again, judged again */
			if (op->rec.cached_bytes || (op->rec.flags & STORE_OBJ_INLINE))
				e->ctr.guard_refetches++;
			engine_drop_data(e, o, "stored without a sound fresh guard");
		} else if (op->rec.flags & STORE_OBJ_INLINE || op->rec.chunk_size == cs)
			op->have_rec = 1;
	}

	if (!op->have_rec)
		cobj_drop_chunks(e->objs, o); /* bytes of data the store no longer has */
	if (op->have_rec || o->chunks) {
		/* cached bytes, or others' fills of this file in flight (a
		 * lookup prefetch, another reader): the caller needs READ
		 * evidence of its own, and then shares them */
		known = o->have_attrs ? &o->attrs : op->have_rec ? &op->rec.attrs : NULL;
		switch (known ? evidence_of(e, o, &req->cred, known) : EV_ASK_CALL) {
		case EV_REFUSED:
			op_forward(op);
			return;
		case EV_ASK_CALL:
			/* the server's own answer to this READ is the evidence */
			e->ctr.evidence_reads++;
			op_forward(op);
			return;
		case EV_UNKNOWN:
			if (asked) {
				e->ctr.evidence_reads++;
				op_forward(op);
				return;
			}
			e->ctr.access_checks++;
			op->aargs.object = a->file;
			op->aargs.access = ACCESS3_READ;
			if (engine_up_call(e, NFS3_ACCESS, &op->aargs, &req->cred, access_done,
					   op) != 0)
				op_forward(op);
			return;
		case EV_SERVE:
			break;
		}
	}

	store_touch(e->store, o->fh, o->fhlen);
	if (op->have_rec && (op->rec.flags & STORE_OBJ_INLINE)) {
		uint8_t *buf = inl;
		uint32_t len = inl_len;
		int rc = 0;
		if (buf == NULL) {
			buf = malloc(op->rec.inline_len ? op->rec.inline_len : 1);
			rc = buf ? store_inline_get(e->store, o->fh, o->fhlen, &op->rec, buf,
			                            op->rec.inline_len, &len)
			         : -ENOMEM;
		}
		if (rc != 0) {
			if (buf != inl)
				free(buf);
			if (rc == -EBADMSG)
				inline_bad(e);
			op->have_rec = 0;
			op_forward(op);
			return;
		}
		const fattr3 *attrs = o->have_attrs ? &o->attrs : &op->rec.attrs;
		o->inline_known = 1;
		o->inline_snap = op->rec.snap;
		uint32_t n = op->off >= len ? 0
					    : (uint32_t)(len - op->off < op->count ? len - op->off
										  : op->count);
		reply_data(op, attrs, buf + (op->off < len ? op->off : 0), n, op->off + n >= len, NULL,
			   NULL);
		if (buf != inl)
			free(buf);
		op_free(op);
		return;
	}

	/* chunked: the range this READ covers, within the known size */
	{
		uint64_t size = op->have_rec ? op->rec.snap.size : UINT64_MAX;
		uint64_t end = op->off + op->count;

		if (op->have_rec && op->off >= size) {
			static const uint8_t none[1];
			const fattr3 *attrs = o->have_attrs ? &o->attrs : &op->rec.attrs;
			reply_data(op, attrs, none, 0, 1, NULL, NULL);
			op_free(op);
			return;
		}
		if (end > size)
			end = size;
		op->lo = (uint32_t)(op->off / cs);
		op->hi = (uint32_t)((end - 1) / cs);
		if (op->hi - op->lo >= MAX_OP_CHUNKS) {
			op_forward(op);
			return;
		}
	}
	op_gather(op);
}
