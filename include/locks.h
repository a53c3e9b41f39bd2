/* The locks room (cachefsd/locks/): NLM v4 forwarded to the filer's NLM.
 *
 * Locks are the filer's: every NLM call goes to the filer with the
 * caller's AUTH_SYS credential and its argument bytes unchanged
 * (caller_name, owner handle, svid and cookie are the client's, so locks
 * of different clients and processes never merge), and the filer's
 * answer goes back unchanged. The only state kept is one entry per lock
 * the filer answered BLOCKED, to route its GRANTED callback (or the
 * proxy's own poll) to the client host that asked, and to drop on CANCEL.
 * A grant passing through revalidates the file's attributes first
 * (engine_revalidate()). Over an NFSv4.0-only filer (locks_use_nfs4())
 * the calls become v4 byte-range locks the proxy holds (nfs4lock.c), the
 * blocked entries polled. docs/design.md, "The locks room". */
#ifndef CFS_LOCKS_H
#define CFS_LOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "loop.h"
#include "req.h"

struct locks;

/* The filer is filer_addr (numeric, as upstream_info()->addr); its NLM
 * port is asked of its portmapper. Counts into the engine's NLM
 * counters. Returns 0 or -errno with a message in err. */
int locks_new(struct loop *l, const struct cfs_config *cfg, struct engine *e,
              const char *filer_addr, struct locks **out, char *err, size_t errlen);
/* The filer speaks NFSv4.0 only (origin_nfs4_client(o) is not NULL): NLM
 * calls become v4 byte-range locks held by the proxy through that client
 * (nfs4lock.c) instead of being relayed to an NLM the filer does not run;
 * clients' handles reach the filer through origin_fh_upstream(). 0 or
 * -ENOMEM. */
struct origin;
int locks_use_nfs4(struct locks *lk, struct origin *o);
/* Ends calls in flight (their clients get no answer) and frees. */
void locks_free(struct locks *lk);
/* proto_submit_fn for NLM_PROGRAM calls (engine_set_room()). */
void locks_submit(struct cfs_req *req, void *locks);

/* --- the blocked-lock table, exposed for unit tests ------------------- */

/* Blocked entries live until the filer grants them, the client cancels,
 * or BLK_IDLE_MS pass without the client asking again (a kernel client
 * re-sends a blocked LOCK every 30 s); at most BLK_MAX (the oldest goes). */
#define BLK_IDLE_MS (5 * 60 * 1000)
#define BLK_MAX     4096
struct blk_key {
	const uint8_t *fh;
	uint32_t fhlen;
	const char *caller, *oh;
	uint32_t svid;
	uint64_t offset, len;
	int exclusive;
};
int locks_blocked_count(const struct locks *lk);
/* The table alone, for unit tests: add (or refresh) an entry for key at
 * now, find, drop, expire. */
struct locks *locks_table_new(void);
int locks_table_add(struct locks *lk, const struct blk_key *k, uint64_t now);
int locks_table_has(const struct locks *lk, const struct blk_key *k);
int locks_table_drop(struct locks *lk, const struct blk_key *k);
int locks_table_expire(struct locks *lk, uint64_t now);

#endif
