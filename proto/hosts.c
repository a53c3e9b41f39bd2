/* Client hosts: the connections from one address, what they hold together,
 * and the fair share of client_memory_max each host may count on
 * (docs/design.md, "Bounds on what clients can make the proxy hold").
 *
 * A host is an IPv4 address or an IPv6 address (an IPv4-mapped IPv6 peer is
 * its IPv4 host); ports do not matter. The table lives in the server; a host
 * is made by its first connection and freed with its last one, so it holds
 * as many entries as there are client addresses connected. */
#include "proto_int.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* The host key of a peer: family and 4 or 16 bytes. */
static int host_key(const struct sockaddr_storage *ss, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			memcpy(addr, a->s6_addr + 12, 4);
			return AF_INET;
		}
		memcpy(addr, a->s6_addr, 16);
		return AF_INET6;
	}
	if (ss->ss_family == AF_INET) {
		memcpy(addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
		return AF_INET;
	}
	return ss->ss_family; /* AF_UNIX in tests: one host */
}

static unsigned host_hash(int family, const uint8_t addr[16])
{
	uint32_t h = 2166136261u ^ (uint32_t)family;

	for (int i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 16777619u;
	return h % PROTO_HOST_BUCKETS;
}

struct proto_host *proto_host_get(struct proto_hosts *t, const struct sockaddr_storage *ss)
{
	uint8_t addr[16];
	int family = host_key(ss, addr);
	unsigned b = host_hash(family, addr);
	struct proto_host *h;

	for (h = t->bucket[b]; h; h = h->chain)
		if (h->family == family && memcmp(h->addr, addr, 16) == 0)
			break;
	if (h == NULL) {
		h = calloc(1, sizeof(*h));
		if (h == NULL)
			return NULL;
		h->family = family;
		memcpy(h->addr, addr, 16);
		h->chain = t->bucket[b];
		t->bucket[b] = h;
		h->next = t->list;
		if (t->list)
			t->list->prev = h;
		t->list = h;
		t->n++;
	}
	h->nconns++;
	return h;
}

void proto_host_put(struct proto_hosts *t, struct proto_host *h)
{
	struct proto_host **pp;

	assert(h->nconns > 0);
	if (--h->nconns > 0)
		return;
	assert(h->held == 0 && h->conns == NULL);
	for (pp = &t->bucket[host_hash(h->family, h->addr)]; *pp != h; pp = &(*pp)->chain)
		;
	*pp = h->chain;
	if (h->prev)
		h->prev->next = h->next;
	else
		t->list = h->next;
	if (h->next)
		h->next->prev = h->prev;
	t->n--;
	free(h);
}

/* Max-min fairness in one pass: h, holding need more, stays at or below
 * the level where the cap is shared evenly among the hosts that want more
 * than it (each other host counted at most at h's new holding). */
int proto_host_fair(const struct proto_hosts *t, const struct proto_host *h, uint64_t need,
                    uint64_t cap)
{
	uint64_t level = h->held + need, sum = level;

	if (level > cap)
		return 0;
	for (const struct proto_host *o = t->list; o; o = o->next) {
		if (o == h)
			continue;
		sum += o->held < level ? o->held : level;
		if (sum > cap)
			return 0;
	}
	return 1;
}

struct proto_host *proto_host_biggest(const struct proto_hosts *t, uint64_t above, unsigned pass)
{
	struct proto_host *best = NULL;

	for (struct proto_host *o = t->list; o; o = o->next)
		if (o->held > above && o->held_in > 0 && o->reclaim_pass != pass &&
		    (best == NULL || o->held > best->held))
			best = o;
	return best;
}
