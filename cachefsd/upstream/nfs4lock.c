/* NLM's locks as NFSv4.0 state at the filer (include/nfs4up.h, "byte-range
 * locks"): the owners, their open and lock stateids and seqids, the ranges
 * they hold, and the COMPOUNDs, sent through nfs4.c's n4_compound_call()
 * (which waits, re-sends and recovers as for every call).
 *
 * An owner is (file, caller_name, owner handle, svid). Its open-owner is
 * "cachefsd-lo-<id>.<gen>", its lock-owner "cachefsd-lk-<id>.<gen>" (the id
 * names it in a LOCKT's or LOCK's denial: a holder behind this proxy is
 * reported with its svid and owner handle). Its operations run one at a
 * time from its queue: each seqid-mutating operation needs the seqid the
 * last one left (RFC 7530 section 9.1.7). docs/design.md, "The locks
 * room". */
#include "log.h"
#include "nfs4up.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LKS_MAGIC 0x4e344c4bu /* "N4LK" */
#define ALL_ONES  UINT64_MAX  /* v4's length "to the end" */

/* --- ranges ------------------------------------------------------------------ */

void n4_range_of(uint64_t offset, uint64_t len, uint64_t *s, uint64_t *e)
{
	*s = offset;
	*e = (len == 0 || len > UINT64_MAX - offset) ? UINT64_MAX : offset + len;
}

static int ranges_grow(struct n4_ranges *rs, int n)
{
	if (n <= rs->cap)
		return 0;
	int cap = rs->cap ? rs->cap * 2 : 4;
	while (cap < n)
		cap *= 2;
	struct n4_range *r = realloc(rs->r, (size_t)cap * sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	rs->r = r;
	rs->cap = cap;
	return 0;
}

/* Kept sorted, disjoint and not touching. */
int n4_ranges_add(struct n4_ranges *rs, uint64_t s, uint64_t e)
{
	int i = 0, j;

	if (s >= e)
		return 0;
	while (i < rs->n && rs->r[i].e < s)
		i++;
	j = i;
	while (j < rs->n && rs->r[j].s <= e) {
		if (rs->r[j].s < s)
			s = rs->r[j].s;
		if (rs->r[j].e > e)
			e = rs->r[j].e;
		j++;
	}
	if (j == i) { /* nothing merged: insert at i */
		if (ranges_grow(rs, rs->n + 1) != 0)
			return -ENOMEM;
		memmove(&rs->r[i + 1], &rs->r[i], (size_t)(rs->n - i) * sizeof(rs->r[0]));
		rs->n++;
	} else if (j > i + 1) {
		memmove(&rs->r[i + 1], &rs->r[j], (size_t)(rs->n - j) * sizeof(rs->r[0]));
		rs->n -= j - i - 1;
	}
	rs->r[i].s = s;
	rs->r[i].e = e;
	return 0;
}

int n4_ranges_sub(struct n4_ranges *rs, uint64_t s, uint64_t e)
{
	if (s >= e)
		return 0;
	for (int i = 0; i < rs->n; i++) {
		struct n4_range *r = &rs->r[i];

		if (r->e <= s || r->s >= e)
			continue;
		if (r->s < s && r->e > e) { /* a hole in the middle: split */
			if (ranges_grow(rs, rs->n + 1) != 0)
				return -ENOMEM;
			r = &rs->r[i];
			memmove(&rs->r[i + 1], r, (size_t)(rs->n - i) * sizeof(*r));
			rs->n++;
			rs->r[i].e = s;
			rs->r[i + 1].s = e;
			return 0;
		}
		if (r->s >= s && r->e <= e) { /* all of it */
			memmove(r, r + 1, (size_t)(rs->n - i - 1) * sizeof(*r));
			rs->n--;
			i--;
		} else if (r->s < s) {
			r->e = s;
		} else {
			r->s = e;
		}
	}
	return 0;
}

void n4_ranges_clear(struct n4_ranges *rs)
{
	free(rs->r);
	memset(rs, 0, sizeof(*rs));
}

/* --- the state ------------------------------------------------------------------ */

enum opkind { K_LOCK, K_UNLOCK, K_TEST, K_TIDY, K_RELEASE, K_RECLAIM };

/* The COMPOUND an owner has in flight */
enum step {
	S_SCAN, /* PUTFH(dir) READDIR(filehandle, type): a page of it */
	S_OPEN,
	S_ROPEN, /* PUTFH(file) OPEN(CLAIM_PREVIOUS) GETFH: a reclaim */
	S_CONFIRM,
	S_LOCK,
	S_RLOCK, /* LOCK(reclaim) of one range held before the filer restarted */
	S_LOCKU,
	S_RELEASE,
	S_CLOSE,
	S_LOCKT,
	S_DROPLK
};

/* A file whose name is not in the names table is looked for from the
 * export's root, breadth first (v4.0 has no way from a file's handle to
 * its directory: LOOKUPP of a file is NOTDIR): at most SCAN_PAGES READDIR
 * pages of SCAN_MAXCOUNT bytes, SCAN_DIRS directories queued */
#define SCAN_PAGES    1024
#define SCAN_MAXCOUNT 32768
#define SCAN_DIRS     4096

struct lkop {
	struct lkop *next;
	struct n4_locks *lk;
	enum opkind kind;
	int status; /* the answer's, once answered */
	int exclusive, block;
	uint64_t s, e; /* the range [s, e) */
	struct cfs_cred cred;
	n4_lk_cb cb;
	void *priv;
	int inflight; /* a COMPOUND of it is out: its end frees it */
	int retried;  /* started again once after the state was lost */
	int scanned;  /* its file's name was looked for (S_PARENT, S_SCAN) */
	struct n4_lkres res;
	struct lkop *tnext; /* K_TEST: the list of tests in flight */
	/* K_TEST: what it asks */
	struct n4_fh fh;
	char lname[64];
};

struct lowner {
	struct lowner *next;
	struct n4_locks *lk;
	struct n4_fh fh;
	char *host, *oh;
	uint32_t svid;
	uint64_t id;
	uint32_t gen;
	char oname[64], lname[64];
	struct cfs_cred cred; /* the first caller's: the owners' principal */
	clientid4 clientid;   /* the client ID the state was made under */
	int opened;
	uint32_t access; /* OPEN4_SHARE_ACCESS_* held */
	stateid4 osid;
	uint32_t oseq;
	struct n4_fh ofh; /* the file the OPEN gave (checked against fh) */
	int locked;       /* a lock stateid */
	stateid4 lsid;
	uint32_t lseq;
	struct n4_ranges held;
	struct n4_ranges wr;    /* the exclusive ones among them (reclaim's lock types) */
	struct lkop *q, *qtail; /* the head runs */
	/* K_RECLAIM: the ranges to take again, exclusive first */
	struct rclm {
		uint64_t s, e;
		int excl;
	} * rc;
	int rc_n, rc_i;
	int busy; /* a COMPOUND of it is in flight */
	/* the COMPOUND being built: its arguments point here */
	struct n4_fh odir;
	char name[256];
	uint32_t want_access;
	/* S_SCAN: the directories to list (odir the one being listed, at
	 * scan_cookie) */
	struct n4_fh *scan_dirs;
	int scan_head, scan_n;
	uint64_t scan_cookie;
	char scan_verf[NFS4_VERIFIER_SIZE];
	int scan_pages;
};

static const uint32_t ATTR_SCAN[2] = {(1u << FATTR4_TYPE) | (1u << FATTR4_FILEHANDLE), 0};

struct n4_locks {
	uint32_t magic;
	struct loop *loop;
	struct n4_client *c;
	struct lowner *owners;
	struct lkop *tests;              /* K_TEST ops in flight */
	struct lkop *later, *later_tail; /* answers to give from the loop */
	struct loop_timer *later_timer;
	uint64_t next_id;
	int pending; /* COMPOUNDs in flight */
	int closing;
	struct n4_lkstats st;
};

/* one COMPOUND in flight */
struct lkcall {
	struct n4_locks *lk;
	struct lowner *ow; /* NULL: a TEST, or a lock-owner dropped */
	struct lkop *op;
	enum step step;
	/* S_LOCKT / S_DROPLK without an owner: its arguments */
	struct n4_fh fh;
	char lname[64];
	int exclusive;
	uint64_t s, e;
};

static void owner_run(struct lowner *ow);
static void scan_end(struct lowner *ow);
static void tidy_after(struct lowner *ow, struct lkop *op);
static void lk_maybe_free(struct n4_locks *lk);

static uint64_t len4(uint64_t s, uint64_t e)
{
	return e == UINT64_MAX ? ALL_ONES : e - s;
}

static uint64_t nlm_len(uint64_t off, uint64_t len)
{
	return len == ALL_ONES || len > UINT64_MAX - off ? 0 : len;
}

static int seq_moves(int st)
{
	/* RFC 7530 section 9.1.7: every answer moves the owner's seqid on
	 * but these, which never reached it */
	return st != NFS4ERR_STALE_CLIENTID && st != NFS4ERR_STALE_STATEID &&
	       st != NFS4ERR_BAD_STATEID && st != NFS4ERR_BAD_SEQID && st != NFS4ERR_BADZDR &&
	       st != NFS4ERR_RESOURCE && st != NFS4ERR_NOFILEHANDLE && st != NFS4ERR_MOVED;
}

/* the filer no longer knows the state (it restarted, or the lease ran out) */
static int state_lost(int st)
{
	return st == NFS4ERR_STALE_STATEID || st == NFS4ERR_BAD_STATEID || st == NFS4ERR_EXPIRED ||
	       st == NFS4ERR_ADMIN_REVOKED || st == NFS4ERR_OLD_STATEID || st == NFS4ERR_BAD_SEQID;
}

static void owner_names(struct lowner *ow)
{
	snprintf(ow->oname, sizeof(ow->oname), "cachefsd-lo-%" PRIu64 ".%u", ow->id, ow->gen);
	snprintf(ow->lname, sizeof(ow->lname), "cachefsd-lk-%" PRIu64 ".%u", ow->id, ow->gen);
}

/* Forgets the owner's state at the filer (gone there, or never to be used
 * again): new owner names, so that no seqid of the old ones matters. */
static void owner_reset(struct lowner *ow)
{
	ow->opened = ow->locked = 0;
	ow->access = 0;
	ow->oseq = ow->lseq = 0;
	n4_ranges_clear(&ow->held);
	n4_ranges_clear(&ow->wr);
	ow->gen++;
	owner_names(ow);
}

static void owner_lost(struct lowner *ow, const char *what, int st)
{
	static struct log_limit lim;

	if (!ow->opened && !ow->locked)
		return;
	ow->lk->st.lost++;
	log_limited(&lim, CFS_LOG_WARN,
	            "NLM over NFSv4: the filer lost the lock state of %s (svid %u) (%s: %s; it "
	            "restarted or the lease expired): its locks there are gone, the client is "
	            "not told (NLM has no such message); its next LOCK takes them anew",
	            ow->host, ow->svid, what,
	            st < 0 ? "client ID re-established" : nfsstat4_to_str((nfsstat4)st));
	owner_reset(ow);
}

static struct lowner *owner_find(struct n4_locks *lk, const struct n4_fh *fh,
                                 const struct n4_lkowner *o)
{
	for (struct lowner *ow = lk->owners; ow; ow = ow->next)
		if (ow->fh.len == fh->len && memcmp(ow->fh.data, fh->data, fh->len) == 0 &&
		    ow->svid == o->svid && strcmp(ow->host, o->host ? o->host : "") == 0 &&
		    strcmp(ow->oh, o->oh ? o->oh : "") == 0)
			return ow;
	return NULL;
}

static struct lowner *owner_get(struct n4_locks *lk, const struct n4_fh *fh,
                                const struct n4_lkowner *o, const struct cfs_cred *cred)
{
	struct lowner *ow = owner_find(lk, fh, o);

	if (ow)
		return ow;
	ow = calloc(1, sizeof(*ow));
	if (ow == NULL)
		return NULL;
	ow->host = strdup(o->host ? o->host : "");
	ow->oh = strdup(o->oh ? o->oh : "");
	if (ow->host == NULL || ow->oh == NULL) {
		free(ow->host);
		free(ow->oh);
		free(ow);
		return NULL;
	}
	ow->lk = lk;
	ow->fh = *fh;
	ow->svid = o->svid;
	ow->id = ++lk->next_id;
	ow->cred = *cred;
	owner_names(ow);
	ow->next = lk->owners;
	lk->owners = ow;
	lk->st.held++;
	return ow;
}

static void owner_free(struct lowner *ow)
{
	struct n4_locks *lk = ow->lk;

	for (struct lowner **pp = &lk->owners; *pp; pp = &(*pp)->next)
		if (*pp == ow) {
			*pp = ow->next;
			break;
		}
	lk->st.held--;
	n4_ranges_clear(&ow->held);
	n4_ranges_clear(&ow->wr);
	free(ow->rc);
	scan_end(ow);
	free(ow->host);
	free(ow->oh);
	free(ow);
}

/* An owner that holds nothing, waits for nothing and has nothing open goes. */
static void owner_maybe_free(struct lowner *ow)
{
	if (!ow->busy && ow->q == NULL && !ow->opened && !ow->locked)
		owner_free(ow);
}

/* --- answers ------------------------------------------------------------------ */

static void later_run(struct loop *l, void *arg)
{
	struct n4_locks *lk = arg;
	struct lkop *op;

	(void)l;
	lk->later_timer = NULL;
	while ((op = lk->later) != NULL) {
		lk->later = op->next;
		if (lk->later == NULL)
			lk->later_tail = NULL;
		if (op->cb)
			op->cb(op->status, op->status == 0 ? &op->res : NULL, op->priv);
		free(op);
	}
}

/* op's answer (res, or status < 0) to its caller, from the loop: never
 * from inside an n4_lk_*() call nor an owner's step; op freed then.
 * Internal ops (no callback) are freed at once. */
static void op_answer(struct lkop *op, int status)
{
	struct n4_locks *lk = op->lk;

	op->status = status;
	op->next = NULL;
	if (op->cb == NULL) {
		free(op);
		return;
	}
	if (lk->later_timer == NULL &&
	    (lk->later_timer = loop_timer_add(lk->loop, 0, 0, later_run, lk)) == NULL) {
		/* no timer: at once (the callers cope) */
		n4_lk_cb cb = op->cb;
		cb(status, status == 0 ? &op->res : NULL, op->priv);
		free(op);
		return;
	}
	if (lk->later_tail)
		lk->later_tail->next = op;
	else
		lk->later = op;
	lk->later_tail = op;
}

/* The owner's head op is done: the next one runs. */
static void owner_next(struct lowner *ow, int status)
{
	struct lkop *op = ow->q;

	ow->q = op->next;
	if (ow->q == NULL)
		ow->qtail = NULL;
	op->next = NULL;
	op_answer(op, status);
	if (ow->q)
		owner_run(ow);
	else
		owner_maybe_free(ow);
}

/* --- the COMPOUNDs ------------------------------------------------------------ */

static int op_lock_owner(lock_owner4 *lo, clientid4 id, const char *name)
{
	lo->clientid = id;
	lo->owner.owner_len = (u_int)strlen(name);
	lo->owner.owner_val = (char *)name;
	return 0;
}

/* OPEN of ow's file for ow's open-owner: by name in its directory (claim
 * CLAIM_NULL) or, reclaiming after a filer restart, by the current handle
 * (CLAIM_PREVIOUS). */
static int op_open(struct n4_compound *b, struct lowner *ow, clientid4 clientid, int reclaim)
{
	nfs_argop4 *o = n4_op_add(b, OP_OPEN);
	OPEN4args *a;

	if (!o)
		return -ENOSPC;
	a = &o->nfs_argop4_u.opopen;
	a->seqid = ow->oseq;
	a->share_access = ow->want_access;
	a->share_deny = OPEN4_SHARE_DENY_NONE;
	a->owner.clientid = clientid;
	a->owner.owner.owner_len = (u_int)strlen(ow->oname);
	a->owner.owner.owner_val = ow->oname;
	a->openhow.opentype = OPEN4_NOCREATE;
	if (reclaim) {
		a->claim.claim = CLAIM_PREVIOUS;
		a->claim.open_claim4_u.delegate_type = OPEN_DELEGATE_NONE;
	} else {
		a->claim.claim = CLAIM_NULL;
		a->claim.open_claim4_u.file.utf8string_len = (u_int)strlen(ow->name);
		a->claim.open_claim4_u.file.utf8string_val = ow->name;
	}
	return 0;
}

/* LOCK of [s, e) as ow's lock-owner: by its lock stateid once it holds
 * one, else a new lock-owner from its open (open_to_lock_owner4). */
static int op_lock(struct n4_compound *b, struct lowner *ow, clientid4 clientid, nfs_lock_type4 type,
                   int reclaim, uint64_t s, uint64_t e)
{
	nfs_argop4 *o = n4_op_add(b, OP_LOCK);
	LOCK4args *a;

	if (!o)
		return -ENOSPC;
	a = &o->nfs_argop4_u.oplock;
	a->locktype = type;
	a->reclaim = reclaim;
	a->offset = s;
	a->length = len4(s, e);
	if (ow->locked) {
		a->locker.new_lock_owner = 0;
		a->locker.locker4_u.lock_owner.lock_stateid = ow->lsid;
		a->locker.locker4_u.lock_owner.lock_seqid = ow->lseq;
	} else {
		open_to_lock_owner4 *n = &a->locker.locker4_u.open_owner;
		a->locker.new_lock_owner = 1;
		n->open_seqid = ow->oseq;
		n->open_stateid = ow->osid;
		n->lock_seqid = 0;
		op_lock_owner(&n->lock_owner, clientid, ow->lname);
	}
	return 0;
}

static int build(struct n4_compound *b, clientid4 clientid, void *priv)
{
	struct lkcall *k = priv;
	struct lowner *ow = k->ow;
	struct lkop *op = k->op;
	nfs_argop4 *o;
	int rc = 0;

	n4_compound_init(b, "cachefsd-lk");
	switch (k->step) {
	case S_SCAN:
		rc |= n4_op_putfh(b, &ow->odir);
		rc |= n4_op_readdir(b, ow->scan_cookie, ow->scan_verf, SCAN_MAXCOUNT / 4,
		                    SCAN_MAXCOUNT, ATTR_SCAN, 2);
		break;
	case S_OPEN:
		rc |= n4_op_putfh(b, &ow->odir);
		rc |= op_open(b, ow, clientid, 0);
		rc |= n4_op_getfh(b);
		break;
	case S_ROPEN:
		rc |= n4_op_putfh(b, &ow->fh);
		rc |= op_open(b, ow, clientid, 1);
		rc |= n4_op_getfh(b);
		break;
	case S_RLOCK: {
		const struct rclm *r = &ow->rc[ow->rc_i];
		rc |= n4_op_putfh(b, &ow->ofh);
		rc |= op_lock(b, ow, clientid, r->excl ? WRITE_LT : READ_LT, 1, r->s, r->e);
		break;
	}
	case S_CONFIRM:
		rc |= n4_op_putfh(b, &ow->ofh);
		rc |= n4_op_open_confirm(b, &ow->osid, ow->oseq);
		break;
	case S_LOCK:
		rc |= n4_op_putfh(b, &ow->ofh);
		rc |= op_lock(b, ow, clientid,
		              op->exclusive ? (op->block ? WRITEW_LT : WRITE_LT)
		                            : (op->block ? READW_LT : READ_LT),
		              0, op->s, op->e);
		break;
	case S_LOCKU:
		rc |= n4_op_putfh(b, &ow->ofh);
		if ((o = n4_op_add(b, OP_LOCKU)) == NULL)
			return -ENOSPC;
		o->nfs_argop4_u.oplocku.locktype = WRITE_LT;
		o->nfs_argop4_u.oplocku.seqid = ow->lseq;
		o->nfs_argop4_u.oplocku.lock_stateid = ow->lsid;
		o->nfs_argop4_u.oplocku.offset = op->s;
		o->nfs_argop4_u.oplocku.length = len4(op->s, op->e);
		break;
	case S_RELEASE:
	case S_DROPLK:
		if ((o = n4_op_add(b, OP_RELEASE_LOCKOWNER)) == NULL)
			return -ENOSPC;
		op_lock_owner(&o->nfs_argop4_u.oprelease_lockowner.lock_owner, clientid,
		              k->step == S_DROPLK ? k->lname : ow->lname);
		break;
	case S_CLOSE:
		rc |= n4_op_putfh(b, &ow->ofh);
		rc |= n4_op_close(b, &ow->osid, ow->oseq);
		break;
	case S_LOCKT:
		rc |= n4_op_putfh(b, &k->fh);
		if ((o = n4_op_add(b, OP_LOCKT)) == NULL)
			return -ENOSPC;
		o->nfs_argop4_u.oplockt.locktype = k->exclusive ? WRITE_LT : READ_LT;
		o->nfs_argop4_u.oplockt.offset = k->s;
		o->nfs_argop4_u.oplockt.length = len4(k->s, k->e);
		op_lock_owner(&o->nfs_argop4_u.oplockt.owner, clientid, k->lname);
		break;
	}
	return rc ? -ENOSPC : 0;
}

static void call_done(int status, void *res3, const struct n4_coh *coh, void *priv);

/* Sends step for ow's head op (or for k prepared by the caller). 0 or -errno. */
static int send_step(struct n4_locks *lk, struct lkcall *k)
{
	int rc;

	k->lk = lk;
	if (k->ow)
		k->ow->busy = 1;
	if (k->op)
		k->op->inflight = 1;
	rc = n4_compound_call(lk->c, build, k->op ? &k->op->cred : &k->ow->cred, call_done, k);
	if (rc) {
		if (k->ow)
			k->ow->busy = 0;
		if (k->op)
			k->op->inflight = 0;
		return rc;
	}
	lk->pending++;
	return 0;
}

static int owner_step(struct lowner *ow, enum step step)
{
	struct lkcall *k = calloc(1, sizeof(*k));
	int rc;

	if (k == NULL)
		return -ENOMEM;
	k->ow = ow;
	k->op = ow->q;
	k->step = step;
	rc = send_step(ow->lk, k);
	if (rc)
		free(k);
	return rc;
}

/* A lock-owner that a denied first LOCK made at the filer holds nothing:
 * released, so that polls do not pile them up there. */
static void drop_lock_owner(struct n4_locks *lk, const struct lowner *ow, const char *lname)
{
	struct lkcall *k = calloc(1, sizeof(*k));

	if (k == NULL)
		return;
	k->step = S_DROPLK;
	snprintf(k->lname, sizeof(k->lname), "%s", lname);
	k->ow = NULL;
	/* as the owner's principal */
	struct lkop *op = calloc(1, sizeof(*op));
	if (op == NULL) {
		free(k);
		return;
	}
	op->lk = lk;
	op->kind = K_TIDY;
	op->cred = ow->cred;
	k->op = op;
	if (send_step(lk, k) != 0) {
		free(op);
		free(k);
	}
}

/* --- the name of a file the names table does not know ----------------------- */

static void scan_end(struct lowner *ow)
{
	free(ow->scan_dirs);
	ow->scan_dirs = NULL;
	ow->scan_head = ow->scan_n = 0;
}

/* The next directory's first page (or the current one's next); 0, or
 * -ENOENT when the search is over. */
static int scan_next(struct lowner *ow)
{
	if (ow->scan_pages >= SCAN_PAGES)
		return -ENOENT;
	if (ow->scan_cookie == 0) {
		if (ow->scan_head >= ow->scan_n)
			return -ENOENT;
		ow->odir = ow->scan_dirs[ow->scan_head++];
		memset(ow->scan_verf, 0, sizeof(ow->scan_verf));
	}
	ow->scan_pages++;
	return owner_step(ow, S_SCAN);
}

static int scan_start(struct lowner *ow)
{
	ow->scan_dirs = calloc(SCAN_DIRS, sizeof(*ow->scan_dirs));
	if (ow->scan_dirs == NULL)
		return -ENOMEM;
	ow->scan_dirs[0] = *n4_root_fh(ow->lk->c);
	ow->scan_n = 1;
	ow->scan_head = 0;
	ow->scan_cookie = 0;
	ow->scan_pages = 0;
	if (scan_next(ow) != 0) {
		scan_end(ow);
		return -ENOMEM;
	}
	return 0;
}

/* A page of the listing: the file found (its name remembered: 0, the
 * caller goes on), or the next page sent (1). */
static int scan_page(struct lowner *ow, const READDIR4resok *ok)
{
	const entry4 *last = NULL;

	for (const entry4 *en = ok->reply.entries; en; en = en->nextentry) {
		struct n4_attrs a;

		last = en;
		if (n4_fattr_decode(&en->attrs, "", &a) != 0 || !n4_has(&a, FATTR4_FILEHANDLE) ||
		    a.fh_len == 0 || a.fh_len > N4_FHSIZE)
			continue;
		if (a.fh_len == ow->fh.len && memcmp(a.fh, ow->fh.data, a.fh_len) == 0 &&
		    en->name.utf8string_len < sizeof(ow->name)) {
			memcpy(ow->name, en->name.utf8string_val, en->name.utf8string_len);
			ow->name[en->name.utf8string_len] = 0;
			n4_remember_name(ow->lk->c, &ow->fh, &ow->odir, ow->name);
			log_info(
			    "NLM over NFSv4: the name of a file to lock found from the export's "
			    "root after %d READDIR pages: %s",
			    ow->scan_pages, ow->name);
			return 0;
		}
		if (n4_has(&a, FATTR4_TYPE) && a.f.type == NF3DIR && ow->scan_n < SCAN_DIRS) {
			ow->scan_dirs[ow->scan_n].len = a.fh_len;
			memcpy(ow->scan_dirs[ow->scan_n].data, a.fh, a.fh_len);
			ow->scan_n++;
		}
	}
	if (!ok->reply.eof && last) {
		ow->scan_cookie = last->cookie;
		memcpy(ow->scan_verf, ok->cookieverf, sizeof(ow->scan_verf));
	} else {
		ow->scan_cookie = 0;
	}
	return scan_next(ow) == 0;
}

/* --- reclaim after the filer restarted --------------------------------------- */

/* The reclaim could not be made: the locks are lost (logged, counted); what
 * the reclaim got is released. */
static void reclaim_failed(struct lowner *ow, const char *what, int st)
{
	struct lkop *op = ow->q;

	free(ow->rc);
	ow->rc = NULL;
	ow->rc_n = ow->rc_i = 0;
	n4_ranges_clear(&ow->held);
	n4_ranges_clear(&ow->wr);
	ow->lk->st.lost++;
	log_warn("NLM over NFSv4: the filer restarted and the locks of %s (svid %u) could not "
	         "be reclaimed (%s: %s): they are gone there, the client is not told (NLM has no "
	         "such message); its next LOCK takes them anew",
	         ow->host, ow->svid, what, st < 0 ? "not sent" : nfsstat4_to_str((nfsstat4)st));
	op->res.status = NFS4_OK;
	if (ow->opened || ow->locked)
		tidy_after(ow, op); /* RELEASE_LOCKOWNER, CLOSE */
	else
		owner_reset(ow);
	owner_next(ow, 0);
}

/* The ranges ow held, to take again: the exclusive ones, then the others. */
static int reclaim_list(struct lowner *ow)
{
	struct n4_ranges rd;
	int n = 0;

	memset(&rd, 0, sizeof(rd));
	for (int i = 0; i < ow->held.n; i++)
		if (n4_ranges_add(&rd, ow->held.r[i].s, ow->held.r[i].e) != 0)
			goto nomem;
	for (int i = 0; i < ow->wr.n; i++)
		if (n4_ranges_sub(&rd, ow->wr.r[i].s, ow->wr.r[i].e) != 0)
			goto nomem;
	free(ow->rc);
	ow->rc = calloc((size_t)(ow->wr.n + rd.n) + 1, sizeof(*ow->rc));
	if (ow->rc == NULL)
		goto nomem;
	for (int i = 0; i < ow->wr.n; i++, n++)
		ow->rc[n] = (struct rclm){ow->wr.r[i].s, ow->wr.r[i].e, 1};
	for (int i = 0; i < rd.n; i++, n++)
		ow->rc[n] = (struct rclm){rd.r[i].s, rd.r[i].e, 0};
	ow->rc_n = n;
	ow->rc_i = 0;
	n4_ranges_clear(&rd);
	return 0;
nomem:
	n4_ranges_clear(&rd);
	return -ENOMEM;
}

/* nfs4.c established a new client ID: the old one's state is gone. After a
 * restart of the filer (STALE_CLIENTID) the locks each idle owner holds
 * are reclaimed in its grace period (OPEN CLAIM_PREVIOUS, LOCK reclaim),
 * first in its queue; other owners' state is lost. */
static void lk_reset(int st, void *arg)
{
	struct n4_locks *lk = arg;

	assert(lk->magic == LKS_MAGIC);
	for (struct lowner *ow = lk->owners; ow; ow = ow->next) {
		struct lkop *op;
		uint32_t access = ow->access;

		if (!ow->opened && !ow->locked)
			continue;
		if (st != NFS4ERR_STALE_CLIENTID || ow->busy || ow->held.n == 0 ||
		    reclaim_list(ow) != 0 || (op = calloc(1, sizeof(*op))) == NULL) {
			owner_lost(ow, "a new client ID", st);
			continue;
		}
		/* the old state is gone: new owners, the same ranges */
		ow->opened = ow->locked = 0;
		ow->oseq = ow->lseq = 0;
		ow->gen++;
		owner_names(ow);
		ow->want_access = access ? access : OPEN4_SHARE_ACCESS_READ;
		op->lk = lk;
		op->kind = K_RECLAIM;
		op->cred = ow->cred;
		op->next = ow->q;
		ow->q = op;
		if (ow->qtail == NULL)
			ow->qtail = op;
		owner_run(ow);
	}
}

/* Where the head op of ow goes next, from the state the owner is in. */
/* The filer lost the owner's state under op (a restart, an expired
 * lease, a seqid out of step): op starts over once from a fresh owner,
 * then its status is the filer's answer. */
static void owner_lost_retry(struct lowner *ow, struct lkop *op, const char *what, int st)
{
	owner_lost(ow, what, st);
	if (!op->retried) {
		op->retried = 1;
		owner_run(ow);
		return;
	}
	op->res.status = st;
	owner_next(ow, 0);
}

static void owner_run(struct lowner *ow)
{
	struct n4_locks *lk = ow->lk;
	struct lkop *op = ow->q;
	int rc = 0;

	if (op == NULL || ow->busy || lk->closing)
		return;
	if (op->kind == K_RECLAIM) {
		if (ow->rc_n == 0 || owner_step(ow, S_ROPEN) != 0)
			reclaim_failed(ow, "cannot send", -1);
		return;
	}
	if ((ow->opened || ow->locked) && ow->clientid != n4_clientid(lk->c))
		owner_lost(ow, "a new client ID", -1);
	switch (op->kind) {
	case K_LOCK: {
		uint32_t need = op->exclusive ? OPEN4_SHARE_ACCESS_WRITE : OPEN4_SHARE_ACCESS_READ;
		if (!ow->opened || !(ow->access & need)) {
			if (n4_name_of(lk->c, &ow->fh, &ow->odir, ow->name, sizeof(ow->name)) !=
			        0 &&
			    !op->scanned) {
				/* looked for from the root */
				op->scanned = 1;
				rc = scan_start(ow);
				break;
			}
			if (n4_name_of(lk->c, &ow->fh, &ow->odir, ow->name, sizeof(ow->name)) !=
			    0) {
				static struct log_limit lim;
				lk->st.noname++;
				log_limited(&lim, CFS_LOG_WARN,
				            "NLM over NFSv4: a LOCK of %s for a file whose name "
				            "the proxy does not know and did not find from the "
				            "export's root (v4.0 OPENs by name): refused",
				            ow->host);
				op->res.status = -ENOENT;
				owner_next(ow, 0);
				return;
			}
			ow->want_access = ow->access | need;
			rc = owner_step(ow, S_OPEN);
		} else {
			rc = owner_step(ow, S_LOCK);
		}
		break;
	}
	case K_UNLOCK:
		if (!ow->locked) {
			op->res.status = NFS4_OK; /* nothing held: nothing to unlock */
			owner_next(ow, 0);
			return;
		}
		rc = owner_step(ow, S_LOCKU);
		break;
	case K_RELEASE:
		if (ow->locked) {
			rc = owner_step(ow, S_LOCKU);
			break;
		}
		/* fall through */
	case K_TIDY:
		if (ow->held.n > 0 && op->kind == K_TIDY) {
			op->res.status = NFS4_OK; /* locked again meanwhile */
			owner_next(ow, 0);
			return;
		}
		if (ow->locked)
			rc = owner_step(ow, S_RELEASE);
		else if (ow->opened)
			rc = owner_step(ow, S_CLOSE);
		else {
			op->res.status = NFS4_OK;
			owner_next(ow, 0);
			return;
		}
		break;
	case K_TEST:
	case K_RECLAIM:
		break;
	}
	if (rc) {
		op->res.status = NFS4ERR_RESOURCE;
		owner_next(ow, rc);
	}
}

static void denied(struct n4_locks *lk, struct n4_lkres *r, const LOCK4denied *d)
{
	uint64_t id;
	unsigned gen;
	char tail;

	r->offset = d->offset;
	r->len = nlm_len(d->offset, d->length);
	r->exclusive = d->locktype == WRITE_LT || d->locktype == WRITEW_LT;
	r->ours = 0;
	lk->st.denied++;
	if (d->owner.clientid != n4_clientid(lk->c) || d->owner.owner.owner_len >= 64)
		return;
	char name[64];
	memcpy(name, d->owner.owner.owner_val, d->owner.owner.owner_len);
	name[d->owner.owner.owner_len] = 0;
	if (sscanf(name, "cachefsd-lk-%" SCNu64 ".%u%c", &id, &gen, &tail) != 2)
		return;
	for (struct lowner *ow = lk->owners; ow; ow = ow->next)
		if (ow->id == id) {
			r->ours = 1;
			r->svid = ow->svid;
			snprintf(r->oh, sizeof(r->oh), "%s", ow->oh);
			return;
		}
}

/* A K_TIDY op queued right after op: RELEASE_LOCKOWNER and CLOSE when the
 * owner still holds nothing when it runs. */
static void tidy_after(struct lowner *ow, struct lkop *op)
{
	struct lkop *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return; /* the open stays until the owner's next unlock */
	t->lk = ow->lk;
	t->kind = K_TIDY;
	t->cred = ow->cred;
	t->next = op->next;
	op->next = t;
	if (ow->qtail == op)
		ow->qtail = t;
}

static int resop_status(const COMPOUND4res *res, u_int i, nfs_opnum4 op, const nfs_resop4 **r)
{
	*r = n4_resop(res, i, op);
	if (*r == NULL)
		return res->status == NFS4_OK ? -EPROTO : (int)res->status;
	/* every v4 result starts with its status */
	return (int)(*r)->nfs_resop4_u.opaccess.status;
}

/* An owner's COMPOUND answered (st: the operation's status). */
static void owner_done(struct lowner *ow, struct lkop *op, enum step step, const COMPOUND4res *res)
{
	struct n4_locks *lk = ow->lk;
	const nfs_resop4 *r;
	int st;

	switch (step) {
	case S_SCAN:
		st = resop_status(res, 1, OP_READDIR, &r);
		if (st == NFS4_OK && scan_page(ow, &r->nfs_resop4_u.opreaddir.READDIR4res_u.resok4))
			return;
		scan_end(ow);
		owner_run(ow); /* found: OPEN by the name; or refused */
		return;
	case S_ROPEN:
		st = resop_status(res, 1, OP_OPEN, &r);
		if (st >= 0 && seq_moves(st))
			ow->oseq++;
		if (st != NFS4_OK) {
			reclaim_failed(ow, "OPEN(CLAIM_PREVIOUS)", st);
			return;
		}
		ow->opened = 1;
		ow->clientid = n4_clientid(lk->c);
		ow->osid = r->nfs_resop4_u.opopen.OPEN4res_u.resok4.stateid;
		ow->access = ow->want_access;
		ow->ofh = ow->fh;
		if (r->nfs_resop4_u.opopen.OPEN4res_u.resok4.rflags & OPEN4_RESULT_CONFIRM) {
			if (owner_step(ow, S_CONFIRM) != 0)
				reclaim_failed(ow, "cannot send", -1);
			return;
		}
		if (owner_step(ow, S_RLOCK) != 0)
			reclaim_failed(ow, "cannot send", -1);
		return;
	case S_RLOCK: {
		int fresh = !ow->locked;
		st = resop_status(res, 1, OP_LOCK, &r);
		if (st >= 0 && seq_moves(st)) {
			if (fresh)
				ow->oseq++;
			else
				ow->lseq++;
		}
		if (st != NFS4_OK) {
			reclaim_failed(ow, "LOCK(reclaim)", st);
			return;
		}
		ow->lsid = r->nfs_resop4_u.oplock.LOCK4res_u.resok4.lock_stateid;
		if (fresh)
			ow->lseq = 1;
		ow->locked = 1;
		if (++ow->rc_i < ow->rc_n) {
			if (owner_step(ow, S_RLOCK) != 0)
				reclaim_failed(ow, "cannot send", -1);
			return;
		}
		lk->st.reclaimed++;
		log_info(
		    "NLM over NFSv4: the filer restarted: the %d lock range(s) of %s (svid %u) "
		    "reclaimed in its grace period",
		    ow->rc_n, ow->host, ow->svid);
		free(ow->rc);
		ow->rc = NULL;
		ow->rc_n = ow->rc_i = 0;
		op->res.status = NFS4_OK;
		owner_next(ow, 0);
		return;
	}
	case S_OPEN:
		st = resop_status(res, 1, OP_OPEN, &r);
		if (st >= 0 && seq_moves(st))
			ow->oseq++;
		if (st == NFS4_OK) {
			const OPEN4resok *ok = &r->nfs_resop4_u.opopen.OPEN4res_u.resok4;
			const nfs_resop4 *g = n4_resop(res, 2, OP_GETFH);
			const nfs_fh4 *h =
			    g ? &g->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object : NULL;
			if (!ow->opened)
				lk->st.owners++;
			ow->opened = 1;
			ow->clientid = n4_clientid(lk->c);
			ow->osid = ok->stateid;
			ow->access = ow->want_access;
			if (h == NULL || h->nfs_fh4_len == 0 || h->nfs_fh4_len > N4_FHSIZE) {
				ow->ofh = ow->fh; /* no GETFH: the name was right */
			} else {
				ow->ofh.len = h->nfs_fh4_len;
				memcpy(ow->ofh.data, h->nfs_fh4_val, h->nfs_fh4_len);
			}
			if (ow->ofh.len != ow->fh.len ||
			    memcmp(ow->ofh.data, ow->fh.data, ow->fh.len) != 0) {
				/* the name is another file's now: close it */
				static struct log_limit lim;
				log_limited(&lim, CFS_LOG_WARN,
				            "NLM over NFSv4: the name %s leads to another file "
				            "now: the LOCK is refused",
				            ow->name);
				op->res.status = -ENOENT;
				if (owner_step(ow, ok->rflags & OPEN4_RESULT_CONFIRM
				                       ? S_CONFIRM
				                       : S_CLOSE) != 0)
					owner_next(ow, 0);
				return;
			}
			if (ok->rflags & OPEN4_RESULT_CONFIRM) {
				if (owner_step(ow, S_CONFIRM) != 0) {
					op->res.status = NFS4ERR_RESOURCE;
					owner_next(ow, 0);
				}
				return;
			}
			if (owner_step(ow, S_LOCK) != 0) {
				op->res.status = NFS4ERR_RESOURCE;
				owner_next(ow, 0);
			}
			return;
		}
		if (st == NFS4ERR_BAD_SEQID || state_lost(st)) {
			owner_lost_retry(ow, op, "OPEN", st);
			return;
		}
		op->res.status = st;
		owner_next(ow, 0);
		return;
	case S_CONFIRM:
		st = resop_status(res, 1, OP_OPEN_CONFIRM, &r);
		if (st >= 0 && seq_moves(st))
			ow->oseq++;
		if (st == NFS4_OK) {
			ow->osid =
			    r->nfs_resop4_u.opopen_confirm.OPEN_CONFIRM4res_u.resok4.open_stateid;
			if (op->res.status == -ENOENT) { /* the wrong file's open */
				if (owner_step(ow, S_CLOSE) != 0)
					owner_next(ow, 0);
				return;
			}
			if (op->kind == K_RECLAIM) {
				if (owner_step(ow, S_RLOCK) != 0)
					reclaim_failed(ow, "cannot send", -1);
				return;
			}
			if (owner_step(ow, S_LOCK) != 0) {
				op->res.status = NFS4ERR_RESOURCE;
				owner_next(ow, 0);
			}
			return;
		}
		if (op->kind == K_RECLAIM) {
			reclaim_failed(ow, "OPEN_CONFIRM", st);
			return;
		}
		/* an unconfirmed open goes with its owner */
		ow->opened = 0;
		owner_reset(ow);
		if (op->res.status != -ENOENT)
			op->res.status = st;
		owner_next(ow, 0);
		return;
	case S_LOCK: {
		int fresh = !ow->locked;
		st = resop_status(res, 1, OP_LOCK, &r);
		if (st >= 0 && seq_moves(st)) {
			if (fresh)
				ow->oseq++;
			else
				ow->lseq++;
		}
		if (st == NFS4_OK) {
			ow->lsid = r->nfs_resop4_u.oplock.LOCK4res_u.resok4.lock_stateid;
			if (fresh)
				ow->lseq = 1;
			ow->locked = 1;
			lk->st.locks++;
			if (n4_ranges_add(&ow->held, op->s, op->e) != 0 ||
			    (op->exclusive ? n4_ranges_add(&ow->wr, op->s, op->e)
			                   : n4_ranges_sub(&ow->wr, op->s, op->e)) != 0)
				log_warn("NLM over NFSv4: out of memory for a held range");
			op->res.status = NFS4_OK;
			owner_next(ow, 0);
			return;
		}
		if (st == NFS4ERR_DENIED) {
			denied(lk, &op->res, &r->nfs_resop4_u.oplock.LOCK4res_u.denied);
			if (fresh) {
				/* the lock-owner the filer made holds nothing: it
				 * goes, the next try names a new one */
				char old[64];
				snprintf(old, sizeof(old), "%s", ow->lname);
				ow->gen++;
				snprintf(ow->lname, sizeof(ow->lname), "cachefsd-lk-%" PRIu64 ".%u",
				         ow->id, ow->gen);
				drop_lock_owner(lk, ow, old);
			}
			op->res.status = st;
			if (!ow->locked && op->next == NULL)
				tidy_after(ow, op); /* nothing held: the open goes too */
			owner_next(ow, 0);
			return;
		}
		if (state_lost(st)) {
			owner_lost_retry(ow, op, "LOCK", st);
			return;
		}
		op->res.status = st;
		owner_next(ow, 0);
		return;
	}
	case S_LOCKU:
		st = resop_status(res, 1, OP_LOCKU, &r);
		if (st >= 0 && seq_moves(st))
			ow->lseq++;
		if (st == NFS4_OK) {
			ow->lsid = r->nfs_resop4_u.oplocku.LOCKU4res_u.lock_stateid;
			lk->st.unlocks++;
			if (n4_ranges_sub(&ow->held, op->s, op->e) != 0 ||
			    n4_ranges_sub(&ow->wr, op->s, op->e) != 0)
				log_warn("NLM over NFSv4: out of memory for a held range");
		} else if (state_lost(st)) {
			owner_lost(ow, "LOCKU", st); /* the lock is gone anyway */
			st = NFS4_OK;
		}
		if (op->kind == K_RELEASE) {
			/* on to RELEASE_LOCKOWNER and CLOSE */
			n4_ranges_clear(&ow->held);
			n4_ranges_clear(&ow->wr);
			if (ow->locked && owner_step(ow, S_RELEASE) == 0)
				return;
			if (ow->opened && owner_step(ow, S_CLOSE) == 0)
				return;
			op->res.status = st;
			owner_next(ow, 0);
			return;
		}
		op->res.status = st;
		if (st == NFS4_OK && ow->held.n == 0 &&
		    (op->next == NULL || op->next->kind != K_TIDY))
			tidy_after(ow, op); /* holds nothing more: released after the answer */
		owner_next(ow, 0);
		return;
	case S_RELEASE:
		st = resop_status(res, 0, OP_RELEASE_LOCKOWNER, &r);
		if (st == NFS4ERR_LOCKS_HELD && op->kind == K_TIDY) {
			/* the filer says it holds some still: keep them */
			op->res.status = st;
			owner_next(ow, 0);
			return;
		}
		ow->locked = 0;
		if (ow->opened && owner_step(ow, S_CLOSE) == 0)
			return;
		op->res.status = st;
		owner_next(ow, 0);
		return;
	case S_CLOSE:
		st = resop_status(res, 1, OP_CLOSE, &r);
		if (st >= 0 && seq_moves(st))
			ow->oseq++;
		ow->opened = 0;
		ow->locked = 0;
		ow->access = 0;
		if (op->res.status != -ENOENT)
			lk->st.released++;
		if (st != NFS4_OK && !state_lost(st)) {
			static struct log_limit lim;
			log_limited(&lim, CFS_LOG_INFO, "NLM over NFSv4: CLOSE: %s",
			            st < 0 ? "no answer" : nfsstat4_to_str((nfsstat4)st));
		}
		owner_reset(ow);
		if (op->res.status != -ENOENT)
			op->res.status = NFS4_OK;
		owner_next(ow, 0);
		return;
	default:
		break;
	}
}

static void call_done(int status, void *res3, const struct n4_coh *coh, void *priv)
{
	struct lkcall *k = priv;
	struct n4_locks *lk = k->lk;
	struct lowner *ow = k->ow;
	struct lkop *op = k->op;
	const COMPOUND4res *res = res3;

	(void)coh;
	assert(lk->magic == LKS_MAGIC);
	lk->pending--;
	if (ow)
		ow->busy = 0;
	if (op)
		op->inflight = 0;
	if (lk->closing) {
		/* n4_locks_free() answered every op already; an owner's op
		 * stays in its queue until lk_maybe_free() */
		if (op && ow == NULL)
			free(op);
		free(k);
		lk_maybe_free(lk);
		return;
	}
	if (k->step == S_DROPLK) {
		free(op);
		free(k);
		return;
	}
	if (k->step == S_LOCKT) {
		const nfs_resop4 *r = NULL;
		int st = status == 0 ? resop_status(res, 1, OP_LOCKT, &r) : 0;
		for (struct lkop **pp = &lk->tests; *pp; pp = &(*pp)->tnext)
			if (*pp == op) {
				*pp = op->tnext;
				break;
			}
		if (status == 0) {
			op->res.status = st;
			if (st == NFS4ERR_DENIED && r)
				denied(lk, &op->res, &r->nfs_resop4_u.oplockt.LOCKT4res_u.denied);
		}
		free(k);
		op_answer(op, status);
		return;
	}
	enum step step = k->step;
	free(k);
	if (status != 0) {
		/* no answer from the filer (given up, cancelled): the op ends
		 * with it; a seqid that never reached the filer is still right */
		owner_next(ow, status);
		return;
	}
	owner_done(ow, op, step, res);
}

/* --- the API --------------------------------------------------------------------- */

struct n4_locks *n4_locks_new(struct loop *l, struct n4_client *c)
{
	struct n4_locks *lk = calloc(1, sizeof(*lk));

	if (lk == NULL)
		return NULL;
	lk->magic = LKS_MAGIC;
	lk->loop = l;
	lk->c = c;
	n4_on_reset(c, lk_reset, lk);
	return lk;
}

static void lk_maybe_free(struct n4_locks *lk)
{
	if (!lk->closing || lk->pending > 0)
		return;
	while (lk->owners) {
		struct lowner *ow = lk->owners;
		while (ow->q) {
			struct lkop *op = ow->q;
			ow->q = op->next;
			free(op);
		}
		owner_free(ow);
	}
	lk->magic = 0;
	free(lk);
}

void n4_locks_free(struct n4_locks *lk)
{
	if (lk == NULL)
		return;
	assert(lk->magic == LKS_MAGIC);
	lk->closing = 1;
	n4_on_reset(lk->c, NULL, NULL);
	if (lk->later_timer)
		loop_timer_cancel(lk->loop, lk->later_timer);
	lk->later_timer = NULL;
	while (lk->later) {
		struct lkop *op = lk->later;
		lk->later = op->next;
		if (op->cb)
			op->cb(-ECANCELED, NULL, op->priv);
		free(op);
	}
	for (struct lkop *op = lk->tests; op; op = op->tnext) {
		n4_lk_cb cb = op->cb;
		op->cb = NULL;
		if (cb)
			cb(-ECANCELED, NULL, op->priv);
	}
	lk->tests = NULL; /* each freed when its COMPOUND ends */
	for (struct lowner *ow = lk->owners; ow; ow = ow->next) {
		struct lkop **pp = &ow->q;
		while (*pp) {
			struct lkop *op = *pp;
			n4_lk_cb cb = op->cb;
			op->cb = NULL;
			if (cb)
				cb(-ECANCELED, NULL, op->priv);
			if (op->inflight) {
				pp = &op->next; /* its COMPOUND's end frees it */
			} else {
				*pp = op->next;
				free(op);
			}
		}
	}
	/* what the owners hold at the filer goes with the lease */
	lk_maybe_free(lk);
}

static struct lkop *op_new(struct n4_locks *lk, enum opkind kind, uint64_t offset, uint64_t len,
                           const struct cfs_cred *cred, n4_lk_cb cb, void *priv)
{
	struct lkop *op = calloc(1, sizeof(*op));

	if (op == NULL)
		return NULL;
	op->lk = lk;
	op->kind = kind;
	n4_range_of(offset, len, &op->s, &op->e);
	op->cred = *cred;
	op->cb = cb;
	op->priv = priv;
	return op;
}

/* Queues op on ow; it runs now when it is the head. */
static void owner_push(struct lowner *ow, struct lkop *op)
{
	if (ow->qtail)
		ow->qtail->next = op;
	else
		ow->q = op;
	ow->qtail = op;
	if (ow->q == op)
		owner_run(ow);
}

static int check(struct n4_locks *lk, const struct n4_fh *fh)
{
	if (lk->closing)
		return -ECANCELED;
	if (fh->len == 0 || fh->len > N4_FHSIZE)
		return -EINVAL;
	return 0;
}

int n4_lk_lock(struct n4_locks *lk, const struct n4_fh *fh, const struct n4_lkowner *o,
               int exclusive, int block, uint64_t offset, uint64_t len, const struct cfs_cred *cred,
               n4_lk_cb cb, void *priv)
{
	struct lowner *ow;
	struct lkop *op;
	int rc = check(lk, fh);

	if (rc)
		return rc;
	op = op_new(lk, K_LOCK, offset, len, cred, cb, priv);
	if (op == NULL)
		return -ENOMEM;
	op->exclusive = exclusive != 0;
	op->block = block != 0;
	ow = owner_get(lk, fh, o, cred);
	if (ow == NULL) {
		free(op);
		return -ENOMEM;
	}
	owner_push(ow, op);
	return 0;
}

int n4_lk_unlock(struct n4_locks *lk, const struct n4_fh *fh, const struct n4_lkowner *o,
                 uint64_t offset, uint64_t len, const struct cfs_cred *cred, n4_lk_cb cb,
                 void *priv)
{
	struct lowner *ow;
	struct lkop *op;
	int rc = check(lk, fh);

	if (rc)
		return rc;
	op = op_new(lk, K_UNLOCK, offset, len, cred, cb, priv);
	if (op == NULL)
		return -ENOMEM;
	ow = owner_find(lk, fh, o);
	if (ow == NULL) {
		/* this owner holds nothing on the file */
		op->res.status = NFS4_OK;
		op_answer(op, 0);
		return 0;
	}
	owner_push(ow, op);
	return 0;
}

int n4_lk_test(struct n4_locks *lk, const struct n4_fh *fh, const struct n4_lkowner *o,
               int exclusive, uint64_t offset, uint64_t len, const struct cfs_cred *cred,
               n4_lk_cb cb, void *priv)
{
	struct lowner *ow;
	struct lkcall *k;
	struct lkop *op;
	int rc = check(lk, fh);

	if (rc)
		return rc;
	op = op_new(lk, K_TEST, offset, len, cred, cb, priv);
	k = calloc(1, sizeof(*k));
	if (op == NULL || k == NULL) {
		free(op);
		free(k);
		return -ENOMEM;
	}
	/* the owner's own locks never conflict: its lock-owner asks */
	ow = owner_find(lk, fh, o);
	snprintf(k->lname, sizeof(k->lname), "%s", ow ? ow->lname : "cachefsd-lkt");
	k->fh = *fh;
	k->exclusive = exclusive != 0;
	k->s = op->s;
	k->e = op->e;
	k->op = op;
	k->step = S_LOCKT;
	rc = send_step(lk, k);
	if (rc) {
		free(op);
		free(k);
		return rc;
	}
	op->tnext = lk->tests;
	lk->tests = op;
	return 0;
}

int n4_lk_free_host(struct n4_locks *lk, const char *host)
{
	int n = 0;

	if (lk->closing)
		return 0;
	for (struct lowner *ow = lk->owners, *next; ow; ow = next) {
		next = ow->next;
		if (strcmp(ow->host, host) != 0)
			continue;
		/* the waiting LOCKs go first: the host that asked is gone */
		struct lkop *op = calloc(1, sizeof(*op));
		if (op == NULL)
			continue;
		op->lk = lk;
		op->kind = K_RELEASE;
		op->cred = ow->cred;
		op->s = 0;
		op->e = UINT64_MAX;
		n++;
		owner_push(ow, op);
	}
	return n;
}

const struct n4_lkstats *n4_lk_stats(const struct n4_locks *lk)
{
	return &lk->st;
}
