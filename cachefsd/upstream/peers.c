/* The fleet's peers (include/peers.h): the list, the owner choice
 * (rendezvous hashing), one small NFSv3 pool per peer and its back-off. */
#include "peers.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

struct peer {
	char name[280]; /* as written in the list */
	char host[256];
	int port;
	uint64_t id;
	int self;
	struct upstream *pool; /* NULL for this node */
	uint64_t down_until;   /* loop_now() ms */
	uint64_t backoff_ms;
};

struct peers {
	struct loop *loop;
	const struct cfs_config *cfg;
	/* what the peer pools run with: soft, so that calls to a peer that
	 * is gone do not wait for it forever (read.c stops waiting after
	 * peer_timeout; the pool frees them within upstream_timeout) */
	struct cfs_config pcfg;
	int n;
	struct peer p[PEERS_MAX];
};

/* splitmix64's finaliser: a good mix of two 64-bit values' xor */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t peers_node_id(const char *name)
{
	return XXH3_64bits(name, strlen(name));
}

int peers_rendezvous(const uint64_t *ids, const int *live, int n, const uint8_t *key,
                     uint32_t keylen, uint64_t idx)
{
	uint64_t k = XXH3_64bits_withSeed(key, keylen, idx), best = 0;
	int win = -1;

	for (int i = 0; i < n; i++) {
		uint64_t w;

		if (!live[i])
			continue;
		w = mix64(k ^ ids[i]);
		/* ties (never in practice) go to the smaller id: every node
		 * decides alike */
		if (win < 0 || w > best || (w == best && ids[i] < ids[win])) {
			best = w;
			win = i;
		}
	}
	return win;
}

int peers_cred_is_probe(const struct cfs_cred *c)
{
	return c->flavor == AUTH_UNIX &&
	       strncmp(c->machine, PEERS_PROBE_MARK, strlen(PEERS_PROBE_MARK)) == 0;
}

int peers_cred_from_peer(const struct cfs_cred *c)
{
	return (c->flavor == AUTH_UNIX &&
	        strncmp(c->machine, PEERS_MARK, strlen(PEERS_MARK)) == 0) ||
	       peers_cred_is_probe(c);
}

void peers_mark_cred(struct cfs_cred *c, int probe)
{
	char m[CFS_MAX_MACHINE + 1];
	const char *mark = probe ? PEERS_PROBE_MARK : PEERS_MARK;
	size_t k = strlen(mark), n = strnlen(c->machine, CFS_MAX_MACHINE);

	/* the caller's name after the mark, cut to the longest AUTH_SYS allows */
	if (k + n > CFS_MAX_MACHINE)
		n = CFS_MAX_MACHINE - k;
	memcpy(m, mark, k);
	memcpy(m + k, c->machine, n);
	m[k + n] = 0;
	memcpy(c->machine, m, sizeof(m));
}

/* "HOST:PORT" or "[V6]:PORT" into host and port; 0 or -EINVAL. */
static int split_host_port(const char *s, char *host, size_t hlen, int *port)
{
	const char *colon = strrchr(s, ':');
	const char *h = s;
	size_t n;
	char *end;
	long v;

	if (colon == NULL || colon == s)
		return -EINVAL;
	n = (size_t)(colon - s);
	if (s[0] == '[') {
		if (n < 3 || s[n - 1] != ']')
			return -EINVAL;
		h = s + 1;
		n -= 2;
	}
	if (n == 0 || n >= hlen)
		return -EINVAL;
	v = strtol(colon + 1, &end, 10);
	if (*end || v < 1 || v > 65535)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = 0;
	*port = (int)v;
	return 0;
}

int peers_start(struct loop *l, const struct cfs_config *cfg, struct peers **out, char *err,
                size_t errlen)
{
	struct peers *p;
	char *list, *save = NULL;
	int rc = 0, nself = 0;

	*out = NULL;
	if (cfg->peers == NULL)
		return 0;
	p = calloc(1, sizeof(*p));
	list = strdup(cfg->peers);
	if (p == NULL || list == NULL) {
		free(p);
		free(list);
		return -ENOMEM;
	}
	p->loop = l;
	p->cfg = cfg;
	p->pcfg.soft = 1;
	/* at least a second past the bound read.c waits */
	p->pcfg.upstream_timeout = cfg->peer_timeout / 1000 + 1;
	p->pcfg.reconnect_max = cfg->reconnect_max;
	for (char *tok = strtok_r(list, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		struct peer *pe;

		if (p->n == PEERS_MAX) {
			snprintf(err, errlen, "peers: more than %d nodes", PEERS_MAX);
			rc = -EINVAL;
			goto fail;
		}
		pe = &p->p[p->n];
		snprintf(pe->name, sizeof(pe->name), "%s", tok);
		if (split_host_port(tok, pe->host, sizeof(pe->host), &pe->port) != 0) {
			snprintf(err, errlen, "peers: '%s' is not HOST:PORT", tok);
			rc = -EINVAL;
			goto fail;
		}
		for (int i = 0; i < p->n; i++) {
			if (strcmp(p->p[i].name, tok) == 0) {
				snprintf(err, errlen, "peers: '%s' is listed twice", tok);
				rc = -EINVAL;
				goto fail;
			}
		}
		pe->id = peers_node_id(pe->name);
		pe->backoff_ms = PEERS_BACKOFF_MIN_MS;
		pe->self = strcmp(tok, cfg->peer_self ? cfg->peer_self : cfg->listen) == 0;
		nself += pe->self;
		p->n++;
	}
	if (p->n == 0) {
		snprintf(err, errlen, "peers: no node listed");
		rc = -EINVAL;
		goto fail;
	}
	if (cfg->peer_self && nself == 0) {
		snprintf(err, errlen, "peer_self '%s' is not in peers", cfg->peer_self);
		rc = -EINVAL;
		goto fail;
	}
	for (int i = 0; i < p->n; i++) {
		struct peer *pe = &p->p[i];

		if (pe->self)
			continue;
		rc = upstream_open(l, &p->pcfg, pe->host, pe->port, cfg->peer_connections,
		                   &pe->pool, err, errlen);
		if (rc)
			goto fail;
	}
	if (nself)
		log_info("peers: %d nodes, this one %s; chunks missed are asked of their owner "
		         "(waiting at most %d ms) before the filer",
		         p->n, cfg->peer_self ? cfg->peer_self : cfg->listen, cfg->peer_timeout);
	else
		log_warn(
		    "peers: %d nodes, this one not among them (set peer_self, or list `listen` "
		    "as written): it asks the others and owns no chunk",
		    p->n);
	free(list);
	*out = p;
	return 0;
fail:
	free(list);
	peers_stop(p);
	return rc;
}

void peers_stop(struct peers *p)
{
	if (p == NULL)
		return;
	for (int i = 0; i < p->n; i++)
		upstream_stop(p->p[i].pool);
	free(p);
}

static int usable(const struct peers *p, const struct peer *pe)
{
	if (pe->self)
		return 1;
	return pe->pool && upstream_counters(pe->pool)->conns_up > 0 &&
	       loop_now(p->loop) >= pe->down_until;
}

int peers_owner(struct peers *p, const uint8_t *fh, uint32_t fhlen, uint64_t idx)
{
	uint64_t ids[PEERS_MAX];
	int live[PEERS_MAX];
	int win;

	for (int i = 0; i < p->n; i++) {
		ids[i] = p->p[i].id;
		live[i] = usable(p, &p->p[i]);
	}
	win = peers_rendezvous(ids, live, p->n, fh, fhlen, idx);
	return win < 0 || p->p[win].self ? -1 : win;
}

int peers_runner_up(struct peers *p, const uint8_t *fh, uint32_t fhlen, uint64_t idx)
{
	uint64_t ids[PEERS_MAX];
	int live[PEERS_MAX];
	int win;

	for (int i = 0; i < p->n; i++) {
		ids[i] = p->p[i].id;
		live[i] = usable(p, &p->p[i]);
	}
	win = peers_rendezvous(ids, live, p->n, fh, fhlen, idx);
	if (win < 0 || !p->p[win].self)
		return -1;
	/* the choice without this node: the rest weigh as before, so the
	 * next heaviest is who won while this node was out of the list */
	live[win] = 0;
	return peers_rendezvous(ids, live, p->n, fh, fhlen, idx);
}

int peers_call(struct peers *p, int i, uint32_t proc, void *args, const struct cfs_cred *cred,
               upstream_cb cb, void *priv)
{
	if (i < 0 || i >= p->n || p->p[i].pool == NULL)
		return -EINVAL;
	return upstream_call(p->p[i].pool, proc, args, cred, cb, priv);
}

void peers_outcome(struct peers *p, int i, int ok)
{
	struct peer *pe = &p->p[i];

	if (ok) {
		if (pe->down_until)
			log_info("peer %s answers again", pe->name);
		pe->down_until = 0;
		pe->backoff_ms = PEERS_BACKOFF_MIN_MS;
		return;
	}
	if (loop_now(p->loop) < pe->down_until)
		return; /* already down: one back-off step per outage step */
	pe->down_until = loop_now(p->loop) + pe->backoff_ms;
	log_warn("peer %s did not answer a fill in time: its chunks go to the others for %llu ms",
	         pe->name, (unsigned long long)pe->backoff_ms);
	pe->backoff_ms *= 2;
	if (pe->backoff_ms > PEERS_BACKOFF_MAX_MS)
		pe->backoff_ms = PEERS_BACKOFF_MAX_MS;
}

int peers_timeout_ms(const struct peers *p)
{
	return p->cfg->peer_timeout;
}

const char *peers_name(const struct peers *p, int i)
{
	return p->p[i].name;
}

int peers_count(const struct peers *p)
{
	return p->n;
}

void peers_state(const struct peers *p, int i, struct peers_node_state *out)
{
	const struct peer *pe = &p->p[i];

	out->name = pe->name;
	out->self = pe->self;
	out->up = usable(p, pe);
	out->down_until = pe->down_until;
}

int peers_up(const struct peers *p)
{
	int n = 0;

	for (int i = 0; p && i < p->n; i++)
		n += !p->p[i].self && usable(p, &p->p[i]);
	return n;
}
