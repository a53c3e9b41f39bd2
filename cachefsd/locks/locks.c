/* The locks room (include/locks.h): NLM v4 calls forwarded to the filer
 * with proto's small RPC client (include/rpcclient.h), the blocked-lock
 * entries that route grants, the poll for filers that cannot call back,
 * and revalidation at grant time. Results are decoded with libnfs's zdr
 * only to read their status; what the client gets is the filer's bytes. */
#include "locks.h"
#include "log.h"
#include "nfs4up.h"
#include "nlm.h"
#include "nsm.h"
#include "origin.h"
#include "proto.h"
#include "rpcclient.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOCKS_MAGIC 0x4c4f434bu /* "LOCK" */
#define FWD_MAGIC   0x46574431u /* "FWD1" */
/* a filer's NLM answers at once (BLOCKED is an answer): a call this long
 * unanswered means the connection is dead, and it is sent again */
#define NLM_TIMEOUT_MS 30000
/* a client host's NLM for a relayed GRANTED */
#define RELAY_TIMEOUT_MS 5000
/* over NFSv4 with lock_poll = 0: how often a blocked lock is tried again */
#define V4_POLL_DEFAULT_S 30

struct blk {
	struct blk *next;
	uint8_t fh[NLM4_MAXFH];
	uint32_t fhlen;
	char *caller, *oh;
	uint32_t svid;
	uint64_t offset, len;
	int exclusive;
	uint64_t seen_ms;   /* the client's last LOCK for it */
	uint64_t polled_ms; /* the proxy's last re-sent LOCK */
	int polling;        /* a re-sent LOCK is in flight: it frees a dead entry */
	int dead;           /* dropped from the table while polling */
	struct locks *lk;
	int has_client;                 /* client and args below are set */
	struct sockaddr_storage client; /* the client host (its NLM: portmapper) */
	struct cfs_cred cred;
	uint8_t *args; /* the client's LOCK arguments, unchanged */
	uint32_t arglen;
};

/* A client host's NLM, for relayed grants: kept while the room lives. */
struct relay_host {
	struct relay_host *next;
	struct sockaddr_storage addr;
	struct rpcc *rpc;
};

struct locks {
	uint32_t magic;
	struct loop *loop;
	const struct cfs_config *cfg;
	struct engine *e;
	struct engine_counters *ctr;
	struct rpcc *filer;
	struct sockaddr_storage filer_addr; /* the only sender of GRANTED */
	struct blk *blocked;
	int nblocked;
	struct relay_host *hosts;
	struct loop_timer *tick;
	/* an NFSv4.0 filer (no NLM there): locks are v4 state
	 * (locks_use_nfs4()); NULL: NLM relayed to the filer's NLM */
	struct n4_locks *v4;
	struct origin *origin; /* with v4: client handles to the filer's */
};

/* One forwarded call (or one poll, or one relay). */
struct fwd {
	uint32_t magic;
	struct locks *lk;
	struct cfs_req *req; /* NULL for the proxy's own calls */
	struct blk *poll;    /* a poll: the entry (checked still there) */
	uint8_t *res;        /* a grant's answer kept across revalidation */
	uint32_t reslen;
};

/* --- the blocked-lock table ---------------------------------------------- */

static int key_eq(const struct blk *b, const struct blk_key *k)
{
	return b->fhlen == k->fhlen && memcmp(b->fh, k->fh, k->fhlen) == 0 && b->svid == k->svid &&
	       b->offset == k->offset && b->len == k->len && strcmp(b->caller, k->caller) == 0 &&
	       strcmp(b->oh, k->oh) == 0;
}

static void blk_free(struct blk *b)
{
	free(b->caller);
	free(b->oh);
	free(b->args);
	free(b);
}

static struct blk *blk_find(const struct locks *lk, const struct blk_key *k)
{
	for (struct blk *b = lk->blocked; b; b = b->next)
		if (key_eq(b, k))
			return b;
	return NULL;
}

static void blk_unlink(struct locks *lk, struct blk *b)
{
	for (struct blk **pp = &lk->blocked; *pp; pp = &(*pp)->next) {
		if (*pp == b) {
			*pp = b->next;
			lk->nblocked--;
			if (lk->ctr)
				lk->ctr->nlm_blocked_entries = (uint64_t)lk->nblocked;
			return;
		}
	}
}

/* Takes b out of the table; a poll in flight frees it when it ends. */
static void blk_drop(struct locks *lk, struct blk *b)
{
	blk_unlink(lk, b);
	if (b->polling)
		b->dead = 1;
	else
		blk_free(b);
}

/* Adds or refreshes; the new entry, or NULL when memory is short. */
static struct blk *blk_add(struct locks *lk, const struct blk_key *k, uint64_t now)
{
	struct blk *b = blk_find(lk, k);

	if (b) {
		b->seen_ms = now;
		return b;
	}
	if (k->fhlen > NLM4_MAXFH)
		return NULL;
	if (lk->nblocked >= BLK_MAX) {
		/* the oldest goes: the list is newest first */
		struct blk *old = lk->blocked;

		while (old->next)
			old = old->next;
		blk_drop(lk, old);
	}
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	b->caller = strdup(k->caller);
	b->oh = strdup(k->oh);
	if (b->caller == NULL || b->oh == NULL) {
		blk_free(b);
		return NULL;
	}
	memcpy(b->fh, k->fh, k->fhlen);
	b->fhlen = k->fhlen;
	b->svid = k->svid;
	b->offset = k->offset;
	b->len = k->len;
	b->exclusive = k->exclusive;
	b->lk = lk;
	b->seen_ms = b->polled_ms = now;
	b->next = lk->blocked;
	lk->blocked = b;
	lk->nblocked++;
	if (lk->ctr)
		lk->ctr->nlm_blocked_entries = (uint64_t)lk->nblocked;
	return b;
}

static int blk_expire(struct locks *lk, uint64_t now)
{
	int n = 0;
	struct blk **pp = &lk->blocked;

	while (*pp) {
		struct blk *b = *pp;

		if (now - b->seen_ms > BLK_IDLE_MS && !b->polling) {
			*pp = b->next;
			lk->nblocked--;
			blk_free(b);
			n++;
		} else {
			pp = &b->next;
		}
	}
	if (lk->ctr)
		lk->ctr->nlm_blocked_entries = (uint64_t)lk->nblocked;
	return n;
}

static struct blk_key key_of(const nlm4_lock *l, int exclusive)
{
	struct blk_key k = {(const uint8_t *)l->fh.data.data_val,
	                    l->fh.data.data_len,
	                    l->caller_name ? l->caller_name : "",
	                    l->oh ? l->oh : "",
	                    l->svid,
	                    l->l_offset,
	                    l->l_len,
	                    exclusive};
	return k;
}

struct locks *locks_table_new(void)
{
	struct locks *lk = calloc(1, sizeof(*lk));

	if (lk)
		lk->magic = LOCKS_MAGIC;
	return lk;
}

int locks_table_add(struct locks *lk, const struct blk_key *k, uint64_t now)
{
	return blk_add(lk, k, now) ? 0 : -ENOMEM;
}

int locks_table_has(const struct locks *lk, const struct blk_key *k)
{
	return blk_find(lk, k) != NULL;
}

int locks_table_drop(struct locks *lk, const struct blk_key *k)
{
	struct blk *b = blk_find(lk, k);

	if (b == NULL)
		return 0;
	blk_drop(lk, b);
	return 1;
}

int locks_table_expire(struct locks *lk, uint64_t now)
{
	return blk_expire(lk, now);
}

int locks_blocked_count(const struct locks *lk)
{
	return lk->nblocked;
}

/* --- relaying a grant to the client host --------------------------------- */

static struct rpcc *relay_rpc(struct locks *lk, const struct sockaddr_storage *addr)
{
	struct sockaddr_storage a = *addr;
	struct relay_host *h;

	/* the client host's NLM is asked of its portmapper */
	if (a.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&a)->sin6_port = 0;
	else
		((struct sockaddr_in *)&a)->sin_port = 0;
	for (h = lk->hosts; h; h = h->next)
		if (memcmp(&h->addr, &a, sizeof(a)) == 0)
			return h->rpc;
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return NULL;
	h->addr = a;
	h->rpc = rpcc_new(lk->loop, &a, NLM_PROGRAM, NLM_V4, RELAY_TIMEOUT_MS);
	if (h->rpc == NULL) {
		free(h);
		return NULL;
	}
	h->next = lk->hosts;
	lk->hosts = h;
	return h->rpc;
}

static int lock_status(const uint8_t *res, uint32_t len);

/* The client host's answer to a relayed GRANTED (an nlm4_res): only
 * GRANTED says it took the lock. One that no longer waits (DENIED) keeps
 * the filer's lock for its owner all the same: its next LOCK is granted,
 * and an owner that never asks again unlocks or is freed by NSM. */
static void relay_done(int status, const uint8_t *res, uint32_t len, void *priv)
{
	struct locks *lk = priv;
	static struct log_limit lim;

	if (status == -ECANCELED)
		return;
	assert(lk->magic == LOCKS_MAGIC);
	if (status == 0 && lock_status(res, len) == NLM4_GRANTED) {
		lk->ctr->nlm_relayed++;
		return;
	}
	lk->ctr->nlm_relay_failures++;
	log_limited(&lim, CFS_LOG_INFO,
	            "NLM: a granted lock could not be relayed to its client host (%s); it "
	            "gets it when it asks again",
	            status == 0 ? "it did not take it" : strerror(status < 0 ? -status : EPROTO));
}

/* GRANTED to the client host that asked b, then the entry goes. */
static void relay_grant(struct locks *lk, struct blk *b)
{
	uint8_t buf[4096];
	uint32_t n;
	struct rpcc *rpc;

	if (!b->has_client || nlm_granted_args(b->args, b->arglen, buf, sizeof(buf), &n) != 0 ||
	    (rpc = relay_rpc(lk, &b->client)) == NULL ||
	    rpcc_call(rpc, NLM4_GRANT, NULL, buf, n, RPCC_ONCE, relay_done, lk) != 0)
		lk->ctr->nlm_relay_failures++;
}

/* The grant of entry b (out of the table) after its file was
 * revalidated: the client host is told, the entry goes. */
static void granted_revalidated(int status, void *priv)
{
	struct blk *b = priv;

	if (status != -ECANCELED) /* shutting down: the room may be gone */
		relay_grant(b->lk, b);
	blk_free(b);
}

/* A client host holds a lock through the proxy now: NSM remembers it, so
 * that a restart of the filer or of cachefsd is told to it (it then
 * reclaims). A client on the proxy's own host is not: it shares the
 * proxy's portmapper, where NSM is cachefsd's own, so nothing could tell
 * its statd. */
static void remember(const char *caller, const struct sockaddr_storage *peer)
{
	static struct log_limit lim;
	int rc;

	if (peer == NULL || caller == NULL)
		return;
	if ((peer->ss_family == AF_INET &&
	     (ntohl(((const struct sockaddr_in *)peer)->sin_addr.s_addr) >> 24) == 127) ||
	    (peer->ss_family == AF_INET6 &&
	     IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)peer)->sin6_addr)))
		return;
	rc = nsm_monitor(caller, (const struct sockaddr *)peer,
	                 peer->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
	                                             : sizeof(struct sockaddr_in));
	if (rc != 0 && rc != -ENODEV)
		log_limited(&lim, CFS_LOG_WARN,
		            "NLM: client host %s not remembered for reboot notices: %s", caller,
		            strerror(-rc));
}

/* The filer granted b later (its callback, or a poll). */
static void granted_later(struct locks *lk, struct blk *b)
{
	lk->ctr->nlm_granted_callback++;
	if (b->has_client)
		remember(b->caller, &b->client);
	blk_unlink(lk, b);
	if (engine_revalidate(lk->e, b->fh, b->fhlen, &b->cred, granted_revalidated, b) != 0)
		granted_revalidated(-EIO, b);
}

/* --- forwarding ----------------------------------------------------------- */

static void fwd_free(struct fwd *f)
{
	f->magic = 0;
	free(f->res);
	free(f);
}

/* The filer's status in a LOCK answer (nlm4_res), or -1. */
static int lock_status(const uint8_t *res, uint32_t len)
{
	NLM4_LOCKres r;
	ZDR z;
	int st = -1;

	memset(&r, 0, sizeof(r));
	zdrmem_create(&z, (char *)res, len, ZDR_DECODE);
	if (zdr_NLM4_LOCKres(&z, &r))
		st = (int)r.status;
	zdr_destroy(&z);
	return st;
}

static void answer_failure(struct locks *lk, struct cfs_req *req, int status)
{
	static struct log_limit lim;

	if (status == -ECANCELED) {
		proto_drop(req);
		return;
	}
	lk->ctr->nlm_upstream_errors++;
	log_limited(&lim, CFS_LOG_WARN, "NLM %s for %s: the filer answered %d",
	            proto_proc_name(req->prog, req->proc), proto_req_peer(req), status);
	if (status == PROG_MISMATCH)
		proto_reply_prog_mismatch(req, NLM_V4, NLM_V4);
	else if (status > 0)
		proto_reply_accept_error(req, (uint32_t)status);
	else if (status == -EACCES)
		proto_reply_auth_error(req, AUTH_TOOWEAK);
	else if (status == -EPROTONOSUPPORT)
		/* the filer's portmapper has no NLM: the program is unavailable */
		proto_reply_accept_error(req, PROG_UNAVAIL);
	else
		proto_reply_accept_error(req, SYSTEM_ERR);
}

/* The procedures with a reply (the others are one-way: _MSG, _RES). */
static int has_reply(uint32_t proc)
{
	return proc <= NLM4_GRANT || (proc >= NLM4_SHARE && proc <= NLM4_NM_LOCK) ||
	       proc == NLM4_FREE_ALL;
}

static void grant_revalidated(int status, void *priv)
{
	struct fwd *f = priv;

	(void)status; /* a failed GETATTR does not hold the grant back */
	assert(f->magic == FWD_MAGIC);
	if (f->req)
		proto_reply_raw(f->req, f->res, f->reslen);
	fwd_free(f);
}

/* A grant of fh for cred: revalidate, then hand res to the client. */
static void grant(struct fwd *f, const nlm_fh4 *fh, const struct cfs_cred *cred, const uint8_t *res,
                  uint32_t len)
{
	f->res = malloc(len ? len : 1);
	if (f->res == NULL) {
		proto_reply_raw(f->req, res, len);
		fwd_free(f);
		return;
	}
	memcpy(f->res, res, len);
	f->reslen = len;
	if (engine_revalidate(f->lk->e, fh->data.data_val, fh->data.data_len, cred,
	                      grant_revalidated, f) != 0)
		grant_revalidated(-EIO, f);
}

static void fwd_done(int status, const uint8_t *res, uint32_t len, void *priv)
{
	struct fwd *f = priv;
	struct locks *lk = f->lk;
	struct cfs_req *req = f->req;

	assert(f->magic == FWD_MAGIC);
	if (status != 0) {
		answer_failure(lk, req, status);
		fwd_free(f);
		return;
	}
	if (!has_reply(req->proc)) {
		proto_drop(req);
		fwd_free(f);
		return;
	}
	if (req->proc == NLM4_LOCK || req->proc == NLM4_NM_LOCK) {
		const NLM4_LOCKargs *a = &req->args.nlm_lock;
		struct blk_key k = key_of(&a->lock, (int)a->exclusive);
		int st = lock_status(res, len);

		if (st == NLM4_GRANTED) {
			lk->ctr->nlm_granted++;
			locks_table_drop(lk, &k); /* a poll of its own granted it */
			remember(a->lock.caller_name, proto_req_peer_addr(req));
			grant(f, &a->lock.fh, &req->cred, res, len);
			return;
		}
		if (st == NLM4_BLOCKED) {
			lk->ctr->nlm_blocked++;
			struct blk *b = blk_add(lk, &k, loop_now(lk->loop));
			const struct sockaddr_storage *peer = proto_req_peer_addr(req);
			uint32_t n;
			const uint8_t *args = proto_req_args(req, &n);

			if (b && peer && !b->has_client && (b->args = malloc(n)) != NULL) {
				memcpy(b->args, args, n);
				b->arglen = n;
				b->client = *peer;
				b->cred = req->cred;
				b->has_client = 1;
			}
		} else if (st == NLM4_DENIED) {
			lk->ctr->nlm_denied++;
		}
	} else if (req->proc == NLM4_CANCEL) {
		const NLM4_CANCargs *a = &req->args.nlm_cancel;
		struct blk_key k = key_of(&a->lock, (int)a->exclusive);

		locks_table_drop(lk, &k);
	}
	proto_reply_raw(req, res, len);
	fwd_free(f);
}

static void forward(struct locks *lk, struct cfs_req *req)
{
	struct fwd *f = calloc(1, sizeof(*f));
	const uint8_t *args;
	uint32_t n;
	int rc;

	if (f == NULL) {
		proto_reply_accept_error(req, SYSTEM_ERR);
		return;
	}
	f->magic = FWD_MAGIC;
	f->lk = lk;
	f->req = req;
	args = proto_req_args(req, &n);
	lk->ctr->nlm_forwarded++;
	/* the _MSG calls are one-way: their answer is a _RES call back */
	rc = rpcc_call(lk->filer, req->proc, &req->cred, args, n,
	               has_reply(req->proc) ? 0 : RPCC_NOREPLY, fwd_done, f);
	if (rc != 0) {
		fwd_free(f);
		proto_reply_accept_error(req, SYSTEM_ERR);
	}
}

/* --- over an NFSv4.0 filer: locks as v4 state (nfs4lock.c) ----------------- */

/* The filer's handle for a client's: a mapped one (the filer's is over 64
 * bytes) through the store's map, never sent to the filer as it is.
 * -ESTALE, -EIO or -EINVAL: answered NLM4_STALE_FH. */
static int fh4_of(const struct locks *lk, const void *data, uint32_t len, struct n4_fh *fh)
{
	uint8_t up[ORIGIN_FH_MAX];
	uint32_t n = 0;
	int rc = origin_fh_upstream(lk->origin, data, len, up, &n);

	if (rc)
		return rc;
	if (n == 0 || n > N4_FHSIZE)
		return -EINVAL;
	fh->len = n;
	memcpy(fh->data, up, n);
	return 0;
}

static struct n4_lkowner owner_of(const nlm4_lock *l)
{
	struct n4_lkowner o = {l->caller_name ? l->caller_name : "", l->oh ? l->oh : "", l->svid};
	return o;
}

/* The NLM status for what the filer answered a LOCK (or TEST, UNLOCK). */
static nlmstat4 v4_nlmstat(int st)
{
	switch (st) {
	case NFS4_OK:
		return NLM4_GRANTED;
	case NFS4ERR_DENIED:
		return NLM4_DENIED;
	case NFS4ERR_DEADLOCK:
		return NLM4_DEADLCK;
	case NFS4ERR_GRACE:
	case NFS4ERR_NO_GRACE:
	case NFS4ERR_RECLAIM_BAD:
		return NLM4_DENIED_GRACE_PERIOD;
	case NFS4ERR_STALE:
	case NFS4ERR_FHEXPIRED:
	case NFS4ERR_BADHANDLE:
		return NLM4_STALE_FH;
	case NFS4ERR_ROFS:
		return NLM4_ROFS;
	case NFS4ERR_FBIG:
		return NLM4_FBIG;
	case NFS4ERR_RESOURCE:
		return NLM4_DENIED_NOLOCKS;
	default: /* no name to OPEN by, ACCESS, LOCK_RANGE, ... */
		return NLM4_FAILED;
	}
}

static void v4_failed(struct locks *lk, struct cfs_req *req, int st)
{
	static struct log_limit lim;

	lk->ctr->nlm_upstream_errors++;
	log_limited(&lim, CFS_LOG_WARN, "NLM %s for %s over NFSv4: %s: answered NLM4_FAILED",
	            proto_proc_name(req->prog, req->proc), proto_req_peer(req),
	            st == -ENOENT ? "the file's name is not known to OPEN it by"
	                          : nfsstat4_to_str((nfsstat4)st));
}

static struct fwd *fwd_new(struct locks *lk, struct cfs_req *req)
{
	struct fwd *f = calloc(1, sizeof(*f));

	if (f == NULL) {
		proto_reply_accept_error(req, SYSTEM_ERR);
		return NULL;
	}
	f->magic = FWD_MAGIC;
	f->lk = lk;
	f->req = req;
	lk->ctr->nlm_forwarded++;
	return f;
}

static void v4_test_done(int status, const struct n4_lkres *r, void *priv)
{
	struct fwd *f = priv;
	struct cfs_req *req = f->req;
	NLM4_TESTres res;

	assert(f->magic == FWD_MAGIC);
	if (status != 0) {
		answer_failure(f->lk, req, status);
		fwd_free(f);
		return;
	}
	memset(&res, 0, sizeof(res));
	res.cookie = req->args.nlm_test.cookie;
	res.reply.status = v4_nlmstat(r->status);
	if (res.reply.status == NLM4_DENIED) {
		nlm4_holder *h = &res.reply.nlm4_testreply_u.lock.holder;
		/* a holder behind this proxy is named; another client of the
		 * filer has no svid or owner handle NLM could show */
		h->exclusive = (uint32_t)r->exclusive;
		h->svid = r->ours ? r->svid : 0;
		h->oh = (char *)(r->ours ? r->oh : "");
		h->l_offset = r->offset;
		h->l_len = r->len;
	} else if (res.reply.status != NLM4_GRANTED) {
		v4_failed(f->lk, req, r->status);
	}
	proto_reply(req, &res);
	fwd_free(f);
}

static void v4_test(struct locks *lk, struct cfs_req *req)
{
	const NLM4_TESTargs *a = &req->args.nlm_test;
	struct n4_lkowner o = owner_of(&a->lock);
	struct n4_fh fh;
	struct fwd *f;

	if (fh4_of(lk, a->lock.fh.data.data_val, a->lock.fh.data.data_len, &fh) != 0) {
		NLM4_TESTres res = {.cookie = a->cookie, .reply.status = NLM4_STALE_FH};
		proto_reply(req, &res);
		return;
	}
	if ((f = fwd_new(lk, req)) == NULL)
		return;
	if (n4_lk_test(lk->v4, &fh, &o, (int)a->exclusive, a->lock.l_offset, a->lock.l_len,
	               &req->cred, v4_test_done, f) != 0) {
		fwd_free(f);
		proto_reply_accept_error(req, SYSTEM_ERR);
	}
}

/* An NLM4_LOCKres (cookie, status) for grant(), which takes bytes. */
static int lockres_bytes(const nlm_cookie *cookie, nlmstat4 st, uint8_t *buf, uint32_t cap,
                         uint32_t *len)
{
	NLM4_LOCKres r;
	ZDR z;
	int ok;

	memset(&r, 0, sizeof(r));
	r.cookie = *cookie;
	r.status = st;
	zdrmem_create(&z, (char *)buf, cap, ZDR_ENCODE);
	ok = zdr_NLM4_LOCKres(&z, &r);
	*len = zdr_getpos(&z);
	zdr_destroy(&z);
	return ok ? 0 : -ENOSPC;
}

static void v4_lock_done(int status, const struct n4_lkres *r, void *priv)
{
	struct fwd *f = priv;
	struct locks *lk = f->lk;
	struct cfs_req *req = f->req;
	const NLM4_LOCKargs *a = &req->args.nlm_lock;
	struct blk_key k = key_of(&a->lock, (int)a->exclusive);
	uint8_t buf[NLM4_MAXNETOBJ + 64];
	uint32_t n;
	nlmstat4 st;

	assert(f->magic == FWD_MAGIC);
	if (status != 0) {
		answer_failure(lk, req, status);
		fwd_free(f);
		return;
	}
	st = v4_nlmstat(r->status);
	if (st == NLM4_GRANTED) {
		lk->ctr->nlm_granted++;
		locks_table_drop(lk, &k); /* a poll of its own granted it */
		remember(a->lock.caller_name, proto_req_peer_addr(req));
		if (lockres_bytes(&a->cookie, st, buf, sizeof(buf), &n) == 0) {
			grant(f, &a->lock.fh, &req->cred, buf, n);
			return;
		}
	} else if (st == NLM4_DENIED && a->block) {
		/* the proxy tries again for it (tick) and tells the client
		 * host when the filer grants it (GRANTED) */
		const struct sockaddr_storage *peer = proto_req_peer_addr(req);
		struct blk *b = blk_add(lk, &k, loop_now(lk->loop));
		const uint8_t *args = proto_req_args(req, &n);

		lk->ctr->nlm_blocked++;
		st = NLM4_BLOCKED;
		if (b && peer && !b->has_client && (b->args = malloc(n)) != NULL) {
			memcpy(b->args, args, n);
			b->arglen = n;
			b->client = *peer;
			b->cred = req->cred;
			b->has_client = 1;
		}
	} else if (st == NLM4_DENIED) {
		lk->ctr->nlm_denied++;
	} else {
		v4_failed(lk, req, r->status);
	}
	{
		NLM4_LOCKres res;
		memset(&res, 0, sizeof(res));
		res.cookie = a->cookie;
		res.status = st;
		proto_reply(req, &res);
	}
	fwd_free(f);
}

static void v4_lock(struct locks *lk, struct cfs_req *req)
{
	const NLM4_LOCKargs *a = &req->args.nlm_lock;
	struct n4_lkowner o = owner_of(&a->lock);
	struct n4_fh fh;
	struct fwd *f;

	if (fh4_of(lk, a->lock.fh.data.data_val, a->lock.fh.data.data_len, &fh) != 0) {
		NLM4_LOCKres res = {.cookie = a->cookie, .status = NLM4_STALE_FH};
		proto_reply(req, &res);
		return;
	}
	if ((f = fwd_new(lk, req)) == NULL)
		return;
	/* a reclaim is a lock like another: the proxy's own v4 state is
	 * what the filer knows (docs/design.md, "Over an NFSv4.0 filer") */
	if (n4_lk_lock(lk->v4, &fh, &o, (int)a->exclusive, (int)a->block, a->lock.l_offset,
	               a->lock.l_len, &req->cred, v4_lock_done, f) != 0) {
		fwd_free(f);
		proto_reply_accept_error(req, SYSTEM_ERR);
	}
}

static void v4_unlock_done(int status, const struct n4_lkres *r, void *priv)
{
	struct fwd *f = priv;
	struct cfs_req *req = f->req;
	NLM4_UNLOCKres res;

	assert(f->magic == FWD_MAGIC);
	if (status != 0) {
		answer_failure(f->lk, req, status);
		fwd_free(f);
		return;
	}
	memset(&res, 0, sizeof(res));
	res.cookie = req->args.nlm_unlock.cookie;
	res.status = v4_nlmstat(r->status);
	if (res.status != NLM4_GRANTED)
		v4_failed(f->lk, req, r->status);
	proto_reply(req, &res);
	fwd_free(f);
}

static void v4_unlock(struct locks *lk, struct cfs_req *req)
{
	const NLM4_UNLOCKargs *a = &req->args.nlm_unlock;
	struct n4_lkowner o = owner_of(&a->lock);
	struct n4_fh fh;
	struct fwd *f;

	if (fh4_of(lk, a->lock.fh.data.data_val, a->lock.fh.data.data_len, &fh) != 0) {
		NLM4_UNLOCKres res = {.cookie = a->cookie, .status = NLM4_STALE_FH};
		proto_reply(req, &res);
		return;
	}
	if ((f = fwd_new(lk, req)) == NULL)
		return;
	if (n4_lk_unlock(lk->v4, &fh, &o, a->lock.l_offset, a->lock.l_len, &req->cred,
	                 v4_unlock_done, f) != 0) {
		fwd_free(f);
		proto_reply_accept_error(req, SYSTEM_ERR);
	}
}

/* A blocked lock's CANCEL: the proxy stops trying for it (a try in
 * flight that gets it gives it back, v4_poll_done()). */
static void v4_cancel(struct locks *lk, struct cfs_req *req)
{
	const NLM4_CANCargs *a = &req->args.nlm_cancel;
	struct blk_key k = key_of(&a->lock, (int)a->exclusive);
	NLM4_CANCres res;

	lk->ctr->nlm_forwarded++;
	memset(&res, 0, sizeof(res));
	res.cookie = a->cookie;
	res.status = locks_table_drop(lk, &k) ? NLM4_GRANTED : NLM4_DENIED;
	proto_reply(req, &res);
}

/* A host's locks released (FREE_ALL, or its reboot through NSM): its
 * waiting locks dropped, its owners' locks unlocked at the filer. */
static void v4_free_host(struct locks *lk, const char *host)
{
	int n;

	for (struct blk *b = lk->blocked, *next; b; b = next) {
		next = b->next;
		if (strcmp(b->caller, host) == 0)
			blk_drop(lk, b);
	}
	n = n4_lk_free_host(lk->v4, host);
	lk->ctr->nlm_free_all++;
	log_info("NLM: client host %s restarted: its locks released at the filer (%d owners, "
	         "NFSv4 LOCKU/RELEASE_LOCKOWNER/CLOSE)",
	         host, n);
}

static void v4_poll_done(int status, const struct n4_lkres *r, void *priv)
{
	struct fwd *f = priv;
	struct locks *lk = f->lk;
	struct blk *b = f->poll;

	assert(f->magic == FWD_MAGIC);
	b->polling = 0;
	if (status == -ECANCELED) {
		if (b->dead)
			blk_free(b);
		fwd_free(f);
		return;
	}
	if (b->dead) {
		/* cancelled (or its host restarted) while the try was out: a
		 * lock it got is nobody's, given back */
		if (status == 0 && r->status == NFS4_OK) {
			struct n4_fh fh;
			struct n4_lkowner o = {b->caller, b->oh, b->svid};
			if (fh4_of(lk, b->fh, b->fhlen, &fh) == 0)
				n4_lk_unlock(lk->v4, &fh, &o, b->offset, b->len, &b->cred, NULL, NULL);
		}
		blk_free(b);
		fwd_free(f);
		return;
	}
	if (status == 0 && r->status == NFS4_OK)
		granted_later(lk, b);
	fwd_free(f);
}

/* The tick's try for blocked entry f->poll: LOCK again (READW/WRITEW). */
static int v4_poll(struct locks *lk, struct fwd *f)
{
	struct blk *b = f->poll;
	struct n4_fh fh;
	struct n4_lkowner o = {b->caller, b->oh, b->svid};
	int rc = fh4_of(lk, b->fh, b->fhlen, &fh);

	if (rc)
		return rc;
	return n4_lk_lock(lk->v4, &fh, &o, b->exclusive, 1, b->offset, b->len, &b->cred,
	                  v4_poll_done, f);
}

static void v4_submit(struct locks *lk, struct cfs_req *req)
{
	static struct log_limit lim;

	switch (req->proc) {
	case NLM4_TEST:
		v4_test(lk, req);
		return;
	case NLM4_LOCK:
	case NLM4_NM_LOCK:
		v4_lock(lk, req);
		return;
	case NLM4_UNLOCK:
		v4_unlock(lk, req);
		return;
	case NLM4_CANCEL:
		v4_cancel(lk, req);
		return;
	case NLM4_FREE_ALL:
		v4_free_host(lk, req->args.nlm_notify.name ? req->args.nlm_notify.name : "");
		proto_reply(req, NULL);
		return;
	case NLM4_SHARE:
	case NLM4_UNSHARE:
		/* DOS share reservations: not kept over v4 */
		proto_reply_accept_error(req, PROC_UNAVAIL);
		return;
	default:
		/* the asynchronous _MSG calls: clients that matter use the
		 * synchronous ones */
		log_limited(&lim, CFS_LOG_INFO, "NLM %s from %s over NFSv4: not served, dropped",
		            proto_proc_name(req->prog, req->proc), proto_req_peer(req));
		proto_drop(req);
		return;
	}
}

int locks_use_nfs4(struct locks *lk, struct origin *o)
{
	lk->origin = o;
	lk->v4 = n4_locks_new(lk->loop, origin_nfs4_client(o));
	return lk->v4 ? 0 : -ENOMEM;
}

/* --- the filer's callbacks and the poll ------------------------------------ */

static void poll_done(int status, const uint8_t *res, uint32_t len, void *priv)
{
	struct fwd *f = priv;
	struct locks *lk = f->lk;
	struct blk *b = f->poll;

	assert(f->magic == FWD_MAGIC);
	b->polling = 0;
	if (b->dead || status == -ECANCELED) {
		/* cancelled meanwhile (a grant the poll got is the client's
		 * to ask for again), or shutting down */
		if (b->dead)
			blk_free(b);
		fwd_free(f);
		return;
	}
	if (status == 0 && lock_status(res, len) == NLM4_GRANTED)
		granted_later(lk, b);
	fwd_free(f);
}

static void tick(struct loop *l, void *arg)
{
	struct locks *lk = arg;
	uint64_t now = loop_now(l);

	/* over v4 nobody calls back: the poll is how a blocked lock is
	 * granted, lock_poll 0 meaning its default */
	uint64_t every_ms = (uint64_t)(lk->cfg->lock_poll > 0 ? lk->cfg->lock_poll
	                               : lk->v4               ? V4_POLL_DEFAULT_S
	                                                      : 0) *
	                    1000;

	blk_expire(lk, now);
	if (lk->v4) {
		const struct n4_lkstats *st = n4_lk_stats(lk->v4);
		lk->ctr->nlm_v4_owners = (uint64_t)st->held;
		lk->ctr->nlm_v4_state_lost = st->lost;
	}
	if (every_ms == 0)
		return;
	for (struct blk *b = lk->blocked; b; b = b->next) {
		struct fwd *f;

		if (b->polling || !b->has_client || now - b->polled_ms < every_ms)
			continue;
		f = calloc(1, sizeof(*f));
		if (f == NULL)
			return;
		f->magic = FWD_MAGIC;
		f->lk = lk;
		f->poll = b;
		b->polled_ms = now;
		if (lk->v4) {
			if (v4_poll(lk, f) != 0) {
				fwd_free(f);
				return;
			}
		} else if (rpcc_call(lk->filer, NLM4_LOCK, &b->cred, b->args, b->arglen, 0, poll_done,
		                     f) != 0) {
			fwd_free(f);
			return;
		}
		b->polling = 1;
		lk->ctr->nlm_polls++;
	}
}

static void res_sent(int status, const uint8_t *res, uint32_t len, void *priv)
{
	/* nothing to do either way: the filer keeps the grant */
	(void)status;
	(void)res;
	(void)len;
	(void)priv;
}

/* 1 when peer is the filer's host (any port: its lockd calls from its own). */
static int from_filer(const struct locks *lk, const struct sockaddr_storage *peer)
{
	return peer != NULL && proto_same_host(peer, &lk->filer_addr);
}

/* The filer's GRANTED (or GRANTED_MSG) for a lock it answered BLOCKED. */
static void callback(struct locks *lk, struct cfs_req *req)
{
	const NLM4_GRANTEDargs *a = &req->args.nlm_granted;
	struct blk_key k = key_of(&a->lock, (int)a->exclusive);
	/* only the filer grants: a GRANTED from a client host must not tell
	 * another client it holds a lock the filer never gave it (over v4
	 * nobody does: the proxy's own poll is the grant) */
	int filer = !lk->v4 && from_filer(lk, proto_req_peer_addr(req));
	struct blk *b = filer ? blk_find(lk, &k) : NULL;
	NLM4_GRANTEDres r;

	memset(&r, 0, sizeof(r));
	r.cookie = a->cookie;
	r.status = b ? NLM4_GRANTED : NLM4_DENIED; /* nobody waits for it */
	if (b && !b->polling)
		granted_later(lk, b);
	if (!filer) {
		static struct log_limit lim;

		log_limited(&lim, CFS_LOG_WARN, "NLM: a GRANTED from %s, not the filer: refused",
		            proto_req_peer(req));
	}
	if (req->proc == NLM4_GRANT || !filer) {
		if (req->proc == NLM4_GRANT)
			proto_reply(req, &r);
		else
			proto_drop(req);
		return;
	}
	/* GRANTED_MSG is one-way: the answer is a GRANTED_RES call to the
	 * filer's NLM (the same cookie) */
	uint8_t buf[NLM4_MAXNETOBJ + 64];
	ZDR z;

	zdrmem_create(&z, (char *)buf, sizeof(buf), ZDR_ENCODE);
	if (zdr_NLM4_GRANTEDres(&z, &r))
		rpcc_call(lk->filer, NLM4_GRANTED_RES, NULL, buf, zdr_getpos(&z),
		          RPCC_ONCE | RPCC_NOREPLY, res_sent, NULL);
	zdr_destroy(&z);
	proto_drop(req);
}

static void free_all_sent(int status, const uint8_t *res, uint32_t len, void *priv)
{
	(void)res;
	(void)len;
	(void)priv;
	if (status != 0 && status != -ECANCELED)
		log_warn("NLM: FREE_ALL to the filer failed (%d): the rebooted host's locks stay "
		         "until the filer's own monitor notices",
		         status);
}

/* A client host rebooted (its SM_NOTIFY reached NSM): its locks are
 * released at the filer with FREE_ALL for its name. The filer must tell
 * the proxy's clients apart by name: the Linux nfsd does (its hosts are
 * address and name); nfs-ganesha only with NSM_Use_Caller_Name = true,
 * else it releases the locks of every client behind this proxy
 * (docs/operations.md, "Locks through the proxy"). */
static void client_rebooted(const char *caller_name, uint32_t state, void *arg)
{
	struct locks *lk = arg;
	NLM4_NOTIFYargs a = {(char *)caller_name, (int32_t)state};
	uint8_t buf[NLM4_MAXSTRLEN + 64];
	ZDR z;

	assert(lk->magic == LOCKS_MAGIC);
	if (lk->v4) {
		v4_free_host(lk, caller_name);
		return;
	}
	zdrmem_create(&z, (char *)buf, sizeof(buf), ZDR_ENCODE);
	if (!zdr_NLM4_NOTIFYargs(&z, &a) ||
	    rpcc_call(lk->filer, NLM4_FREE_ALL, NULL, buf, zdr_getpos(&z), 0, free_all_sent,
	              NULL) != 0)
		log_warn("NLM: cannot send FREE_ALL for %s to the filer", caller_name);
	else {
		lk->ctr->nlm_free_all++;
		log_info("NLM: client host %s restarted: its locks released at the filer (FREE_ALL)",
		         caller_name);
	}
	zdr_destroy(&z);
}

void locks_submit(struct cfs_req *req, void *arg)
{
	struct locks *lk = arg;

	assert(lk->magic == LOCKS_MAGIC);
	assert(req->prog == NLM_PROGRAM);
	switch (req->proc) {
	case NLM4_NULL:
		/* a client pinging the proxy's NLM learns the proxy lives */
		proto_reply(req, NULL);
		return;
	case NLM4_GRANT:
	case NLM4_GRANTED_MSG:
		callback(lk, req);
		return;
	default:
		break;
	}
	if (lk->v4) {
		v4_submit(lk, req);
		return;
	}
	switch (req->proc) {
	case NLM4_TEST_RES:
	case NLM4_LOCK_RES:
	case NLM4_CANCEL_RES:
	case NLM4_UNLOCK_RES:
	case NLM4_GRANTED_RES:
		/* answers to _MSG calls come back to whoever sent them: the
		 * filer's reach the proxy, which has no client to give them
		 * to (clients use the synchronous calls: Linux, BSD) */
		proto_drop(req);
		return;
	default:
		forward(lk, req);
		return;
	}
}

int locks_new(struct loop *l, const struct cfs_config *cfg, struct engine *e,
              const char *filer_addr, struct locks **out, char *err, size_t errlen)
{
	struct addrinfo hints, *ai = NULL;
	struct sockaddr_storage a;
	struct locks *lk;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(filer_addr, NULL, &hints, &ai);
	if (rc != 0) {
		snprintf(err, errlen, "NLM: filer address '%s': %s", filer_addr, gai_strerror(rc));
		return -EINVAL;
	}
	memset(&a, 0, sizeof(a));
	memcpy(&a, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	lk = calloc(1, sizeof(*lk));
	if (lk == NULL)
		goto nomem;
	lk->magic = LOCKS_MAGIC;
	lk->loop = l;
	lk->cfg = cfg;
	lk->e = e;
	lk->ctr = engine_counters_rw(e);
	lk->filer_addr = a;
	lk->filer = rpcc_new(l, &a, NLM_PROGRAM, NLM_V4, NLM_TIMEOUT_MS);
	lk->tick = loop_timer_add(l, 1000, 1000, tick, lk);
	if (lk->filer == NULL || lk->tick == NULL) {
		locks_free(lk);
		goto nomem;
	}
	nsm_on_reboot(client_rebooted, lk);
	*out = lk;
	return 0;
nomem:
	snprintf(err, errlen, "NLM: out of memory");
	return -ENOMEM;
}

void locks_free(struct locks *lk)
{
	if (lk == NULL)
		return;
	nsm_on_reboot(NULL, NULL);
	assert(lk->magic == LOCKS_MAGIC);
	if (lk->tick)
		loop_timer_cancel(lk->loop, lk->tick);
	/* its calls not answered end with -ECANCELED: no answer (as below) */
	n4_locks_free(lk->v4);
	/* in-flight calls end with -ECANCELED: their clients get no answer */
	rpcc_free(lk->filer);
	while (lk->hosts) {
		struct relay_host *h = lk->hosts;

		lk->hosts = h->next;
		rpcc_free(h->rpc);
		free(h);
	}
	while (lk->blocked) {
		struct blk *b = lk->blocked;

		lk->blocked = b->next;
		blk_free(b); /* no poll is in flight: the filer's client ended them */
	}
	lk->magic = 0;
	free(lk);
}
