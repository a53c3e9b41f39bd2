/* The duplicate-request cache: a client that did not get the reply to a
 * non-idempotent call (CREATE, REMOVE, RENAME, ...) sends it again with the
 * same xid, often on a new connection after a reconnect. Applying it twice
 * would turn a successful REMOVE into NOENT, a CREATE into EXIST. So the
 * reply of such a call is kept for a while, keyed by the client's address,
 * the xid, the procedure and a hash of the arguments; a retransmission gets
 * the kept reply, and one arriving while the call is still in progress is
 * dropped (the client retransmits again later). */
#include "procs.h"
#include "proto_int.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <xxhash.h>

struct drc_entry {
	uint8_t addr[16];
	uint32_t xid, prog, proc;
	uint64_t args_hash;
	uint64_t hash;
	int done;   /* the reply is kept: in the age list */
	int orphan; /* forgotten by drc_clear while in progress */
	uint8_t *reply;
	uint32_t len;
	uint64_t when_ms;
	struct drc_entry *hnext;
	struct drc_entry *prev, *next; /* finished entries by age, head: newest */
};

#define NBUCKETS 1024

static struct {
	struct drc_entry *buckets[NBUCKETS];
	struct drc_entry *head, *tail;
	int count;
} drc;

int proto_proc_mutates(uint32_t proc)
{
	const struct proc_row *r = proc_row(NFS_PROGRAM, proc);

	return r && (r->flags & PROC_MUTATES);
}

int drc_wanted(uint32_t prog, uint32_t proc)
{
	const struct proc_row *r = proc_row(prog, proc);

	return r && (r->flags & PROC_DRC);
}

static void addr_of(const struct sockaddr_storage *ss, uint8_t out[16])
{
	memset(out, 0, 16);
	if (ss == NULL)
		return;
	if (ss->ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
}

static void unhash(struct drc_entry *e)
{
	struct drc_entry **pp = &drc.buckets[e->hash % NBUCKETS];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	drc.count--;
}

/* Only finished entries are in the age list: in-progress ones cannot be
 * forgotten (their replies are coming), and keeping them out keeps expiry
 * O(1) per call however many are outstanding. */
static void unlink_entry(struct drc_entry *e)
{
	if (!e->orphan)
		unhash(e);
	if (e->done) {
		if (e->prev)
			e->prev->next = e->next;
		else
			drc.head = e->next;
		if (e->next)
			e->next->prev = e->prev;
		else
			drc.tail = e->prev;
	}
	free(e->reply);
	free(e);
}

/* Forgets finished entries past their life, and the oldest beyond the cap. */
static void expire(uint64_t now)
{
	while (drc.tail && (now >= drc.tail->when_ms + DRC_LIFE_MS || drc.count > DRC_MAX))
		unlink_entry(drc.tail);
}

enum drc_state drc_begin(const struct sockaddr_storage *peer, uint32_t xid, uint32_t prog,
			 uint32_t proc, const uint8_t *args, size_t len, uint64_t now,
			 struct drc_entry **out)
{
	uint8_t addr[16];
	uint64_t ah = XXH3_64bits(args, len), h;
	struct drc_entry *e;

	addr_of(peer, addr);
	h = XXH3_64bits_withSeed(addr, sizeof(addr), ((uint64_t)xid << 32) ^ proc ^ ah);
	for (e = drc.buckets[h % NBUCKETS]; e; e = e->hnext) {
		if (e->hash == h && e->xid == xid && e->proc == proc && e->prog == prog &&
		    e->args_hash == ah && memcmp(e->addr, addr, 16) == 0) {
			*out = e;
			return e->done ? DRC_REPLAY : DRC_BUSY;
		}
	}
	expire(now);
	e = calloc(1, sizeof(*e));
	if (e == NULL) {
		*out = NULL;
		return DRC_NEW; /* no memory: just run it */
	}
	memcpy(e->addr, addr, 16);
	e->xid = xid;
	e->prog = prog;
	e->proc = proc;
	e->args_hash = ah;
	e->hash = h;
	e->when_ms = now;
	e->hnext = drc.buckets[h % NBUCKETS];
	drc.buckets[h % NBUCKETS] = e;
	drc.count++;
	*out = e;
	return DRC_NEW;
}

void drc_done(struct drc_entry *e, const void *reply, uint32_t len, uint64_t now)
{
	if (e->orphan) {
		unlink_entry(e);
		return;
	}
	e->reply = malloc(len ? len : 1);
	if (e->reply == NULL) {
		unlink_entry(e);
		return;
	}
	memcpy(e->reply, reply, len);
	e->len = len;
	e->done = 1;
	e->when_ms = now;
	e->prev = NULL;
	e->next = drc.head;
	if (drc.head)
		drc.head->prev = e;
	drc.head = e;
	if (drc.tail == NULL)
		drc.tail = e;
	expire(now);
}

void drc_abort(struct drc_entry *e)
{
	unlink_entry(e);
}

const void *drc_reply(const struct drc_entry *e, uint32_t *len)
{
	*len = e->len;
	return e->reply;
}

/* Forgets everything; calls still in progress keep their entries until
 * they finish or are dropped, which then frees them. */
void drc_clear(void)
{
	while (drc.head)
		unlink_entry(drc.head);
	for (int b = 0; b < NBUCKETS; b++) {
		while (drc.buckets[b]) {
			struct drc_entry *e = drc.buckets[b];
			unhash(e);
			e->orphan = 1;
		}
	}
}
