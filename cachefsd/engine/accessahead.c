/* ACCESS fetched ahead (ttl mode): a client that lists a directory with
 * READDIRPLUS opens what it listed next, and an open asks ACCESS. The
 * listing gave the attributes and the names (meta.c keeps them as GETATTR
 * and LOOKUP answers), but no ACCESS answer: what each entry allows is the
 * server's to say, per credential. So when a listing reaches its caller,
 * the ACCESS answers that caller has no fresh record of are asked now, in
 * the background, as that caller: by the time it opens the files, the
 * answers are there (metaanswer.c answer_access()).
 *
 * Bounded: at most access_prefetch calls in flight at once; the entries
 * of a listing wait in a queue for their turn (at most AHEAD_PER_LISTING
 * times access_prefetch of one listing, AHEAD_QUEUED times in all), in the
 * order listed, which is the order a walk opens them; entries beyond are
 * left to the client's own ACCESS. An answer goes through the reply
 * pipeline as the client's own would (engine_answered(): attributes
 * observed, the answer recorded for that credential only). Never on the
 * client's path: the listing is answered first, and nothing waits for
 * these calls.
 *
 * Called by forward.c (a listing the upstream answered) and metaanswer.c
 * (one answered from the cache); it calls the reply pipeline (reply.c)
 * and the metadata cache (meta.c). */
#include "engine_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define AHEAD_MAGIC 0x41484541u /* "AHEA" */

/* What a kernel client asks at an open (a directory: READ, LOOKUP, MODIFY,
 * EXTEND, DELETE; a file: READ, MODIFY, EXTEND, EXECUTE), so one answer
 * covers every later ACCESS of the entry (answer_access() answers a subset
 * of what was asked). */
#define AHEAD_MASK                                                                                 \
	(ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE |        \
	 ACCESS3_EXECUTE)

struct ahead {
	uint32_t magic;
	struct engine *e;
	struct engine_call call; /* args.access.object points at fh */
	uint8_t fh[NFS3_FHSIZE];
	uint32_t ctime_s, ctime_ns; /* the entry's, as listed */
	struct ahead *next;         /* while queued (e->ahead_head) */
};

/* A listing queues at most this many times access_prefetch entries, and
 * the queue holds at most AHEAD_QUEUED times: the rest are left to the
 * clients' own ACCESS calls. */
#define AHEAD_PER_LISTING 32
#define AHEAD_QUEUED      64

/* 1 when cred has a fresh ACCESS answer for fh covering AHEAD_MASK under
 * ctime (the listing's, the freshest known when it was listed). */
static int known(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred, uint32_t ctime_s,
                 uint32_t ctime_ns)
{
	struct access_ent ev;

	return meta_get_access(e, fh, cred, &ev) == 0 && (ev.asked & AHEAD_MASK) == AHEAD_MASK &&
	       ev.ctime_s == ctime_s && ev.ctime_ns == ctime_ns;
}

static void ahead_free(struct ahead *a)
{
	a->magic = 0;
	free(a);
}

static void send_queued(struct engine *e);

static void ahead_done(int status, void *res, void *priv)
{
	struct ahead *a = priv;
	struct engine *e = a->e;

	assert(a->magic == AHEAD_MAGIC);
	e->access_ahead_inflight--;
	/* an answer is recorded as the client's own would be; no answer
	 * (upstream trouble, stopping) records nothing */
	if (status == 0 && res != NULL)
		engine_answered(e, &a->call, res);
	ahead_free(a);
	send_queued(e);
}

/* Sends a; 0, or -1 when the upstream takes no call now (a is freed). */
static int ahead_send(struct engine *e, struct ahead *a)
{
	a->call.t_call_us = loop_clock_us();
	if (engine_up_call(e, NFS3_ACCESS, &a->call.args, &a->call.cred, ahead_done, a) != 0) {
		ahead_free(a);
		return -1;
	}
	e->access_ahead_inflight++;
	e->ctr.access_prefetches++;
	return 0;
}

/* Queued entries go out while there is room in flight; one answered
 * meanwhile (the client asked it itself) is not asked again. */
static void send_queued(struct engine *e)
{
	while (e->ahead_head && e->access_ahead_inflight < e->cfg->access_prefetch &&
	       !e->stopping && meta_enabled(e)) {
		struct ahead *a = e->ahead_head;
		e->ahead_head = a->next;
		if (e->ahead_head == NULL)
			e->ahead_tail = NULL;
		e->ahead_queued--;
		a->next = NULL;
		if (known(e, &a->call.args.access.object, &a->call.cred, a->ctime_s, a->ctime_ns)) {
			ahead_free(a);
			continue;
		}
		if (ahead_send(e, a) != 0)
			break;
	}
	if (e->stopping || !meta_enabled(e) || e->cfg->access_prefetch <= 0)
		engine_access_ahead_drop(e);
}

void engine_access_ahead_drop(struct engine *e)
{
	while (e->ahead_head) {
		struct ahead *a = e->ahead_head;
		e->ahead_head = a->next;
		ahead_free(a);
	}
	e->ahead_tail = NULL;
	e->ahead_queued = 0;
}

void engine_access_ahead(struct engine *e, const struct cfs_cred *cred, const void *res)
{
	const READDIRPLUS3res *r = res;
	const entryplus3 *next;
	int cap = e->cfg->access_prefetch, listed = 0;

	if (cap <= 0 || !meta_enabled(e) || e->stopping || r->status != NFS3_OK)
		return;
	next = r->READDIRPLUS3res_u.resok.reply.entries;
	while (next && listed < cap * AHEAD_PER_LISTING && e->ahead_queued < cap * AHEAD_QUEUED) {
		/* libnfs places entries at 4-byte aligned addresses: copy out */
		entryplus3 ent;
		memcpy(&ent, next, sizeof(ent));
		next = ent.nextentry;
		const nfs_fh3 *fh = &ent.name_handle.post_op_fh3_u.handle;
		const fattr3 *at = &ent.name_attributes.post_op_attr_u.attributes;
		if (!ent.name_handle.handle_follows || !ent.name_attributes.attributes_follow ||
		    fh->data.data_len == 0 || fh->data.data_len > NFS3_FHSIZE ||
		    strcmp(ent.name, ".") == 0 || strcmp(ent.name, "..") == 0 ||
		    known(e, fh, cred, at->ctime.seconds, at->ctime.nseconds))
			continue;
		struct ahead *a = calloc(1, sizeof(*a));
		if (a == NULL)
			break;
		a->magic = AHEAD_MAGIC;
		a->e = e;
		memcpy(a->fh, fh->data.data_val, fh->data.data_len);
		a->ctime_s = at->ctime.seconds;
		a->ctime_ns = at->ctime.nseconds;
		a->call.prog = NFS_PROGRAM;
		a->call.proc = NFS3_ACCESS;
		a->call.cred = *cred;
		a->call.args.access.object.data.data_len = fh->data.data_len;
		a->call.args.access.object.data.data_val = (char *)a->fh;
		a->call.args.access.access = AHEAD_MASK;
		if (e->ahead_tail)
			e->ahead_tail->next = a;
		else
			e->ahead_head = a;
		e->ahead_tail = a;
		e->ahead_queued++;
		listed++;
	}
	send_queued(e);
}
