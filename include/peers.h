/* Fills shared across a fleet (`peers = HOST:PORT,...`): a chunk this node
 * misses is asked of the node that owns it, chosen by rendezvous hashing
 * of (handle, chunk index) over the nodes usable now, before the filer.
 * The peers are other cachefsd nodes serving the same export; each has a
 * small NFSv3 pool here (upstream_open(): the filer's handles are theirs
 * too, so no MOUNT). This is the choice and the connections; the fill
 * itself (one READ, the snapshot check, the fallback) is read.c's.
 * docs/design.md, "Fleets". */
#ifndef CFS_PEERS_H
#define CFS_PEERS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "loop.h"
#include "req.h"
#include "upstream.h"

#define PEERS_MAX 32
/* The AUTH_SYS machine name a node puts before the caller's when it asks a
 * peer: the peer fills such a READ from the filer itself, never from
 * another peer (no chains, no loops when views of the live nodes differ). */
#define PEERS_MARK "cachefsd-peer:"
/* The mark of a probe: a node asks the chunk it owns of the node that
 * would own it without it (peers_runner_up()), which likely held it
 * before this node joined or came back empty. The asked node answers from
 * its cache only, with NFS3ERR_JUKEBOX when it holds nothing: it never
 * fills a probe from the filer nor forwards it. */
#define PEERS_PROBE_MARK     "cachefsd-probe:"
#define PEERS_BACKOFF_MIN_MS 1000
#define PEERS_BACKOFF_MAX_MS 30000

struct peers;

/* The state of one peer for stats: usable now or not. */
struct peers_node_state {
	const char *name; /* as written in `peers` */
	int self;
	int up;              /* a connection answered and no back-off runs */
	uint64_t down_until; /* loop_now() ms; 0: not down */
};

/* Parses cfg->peers and opens a pool to every peer but this node (found
 * by peer_self, else by the entry equal to `listen`); the pools connect in
 * the background. *out is NULL when cfg->peers is not set. cfg must
 * outlive the peers. 0 or -errno with a message in err. */
int peers_start(struct loop *l, const struct cfs_config *cfg, struct peers **out, char *err,
                size_t errlen);
/* Calls waiting or in flight complete with -ECANCELED. */
void peers_stop(struct peers *p);

/* Who owns chunk idx of handle fh among this node and the peers usable now
 * (not in a back-off, a connection up): -1 for this node (or a node that
 * is not in the list and nobody usable), else the peer's index. */
int peers_owner(struct peers *p, const uint8_t *fh, uint32_t fhlen, uint64_t idx);
/* Sends an NFSv3 call to peer i (upstream_call()'s contract). */
int peers_call(struct peers *p, int i, uint32_t proc, void *args, const struct cfs_cred *cred,
               upstream_cb cb, void *priv);
/* What came of a call to peer i: ok (an answer) resets its back-off; a
 * failure (no answer within peer_timeout, the connection lost) puts it
 * down for a back-off, 1 s doubling to 30 s. */
void peers_outcome(struct peers *p, int i, int ok);
int peers_timeout_ms(const struct peers *p);
const char *peers_name(const struct peers *p, int i);
/* Nodes in the list (this one included when it is in it) and their state. */
int peers_count(const struct peers *p);
void peers_state(const struct peers *p, int i, struct peers_node_state *out);
/* The other nodes usable now (a connection answered, no back-off): the
 * peers_up gauge. 0 for NULL. */
int peers_up(const struct peers *p);

/* Who held chunk idx before this node owned it: when this node is its
 * owner among the nodes usable now, the usable peer that would own it
 * without this node; else -1. */
int peers_runner_up(struct peers *p, const uint8_t *fh, uint32_t fhlen, uint64_t idx);

/* A credential a peer sent (its machine name starts with PEERS_MARK or
 * PEERS_PROBE_MARK). */
int peers_cred_from_peer(const struct cfs_cred *c);
/* A probe's credential (PEERS_PROBE_MARK): answered from the cache only. */
int peers_cred_is_probe(const struct cfs_cred *c);
/* The credential to ask a peer with: c's, machine name marked with
 * PEERS_PROBE_MARK when probe, else PEERS_MARK. */
void peers_mark_cred(struct cfs_cred *c, int probe);

/* The rendezvous choice alone (tests/unit/test_peers.c): the id of a node
 * is a hash of its name as written; the node whose id hashed with (key,
 * idx) weighs most wins. live[i] == 0 leaves node i out. -1 when no node
 * is live. */
uint64_t peers_node_id(const char *name);
int peers_rendezvous(const uint64_t *ids, const int *live, int n, const uint8_t *key,
                     uint32_t keylen, uint64_t idx);

#endif
