/* The upstream pool: libnfs async client contexts to the upstream NFS
 * server. Every call carries the caller's credential and the file handle
 * bytes unchanged. Calls wait while the upstream is unreachable and are
 * re-sent after reconnect (hard mount), unless configured soft.
 *
 * A connection counts as up only once the server answered an NFS NULL
 * sent on it: a TCP connect alone proves nothing (a balancer in front of a
 * stopped server accepts and closes). Until then connections retry with
 * exponential back-off, 50 ms doubling to reconnect_max seconds. */
#ifndef CFS_UPSTREAM_H
#define CFS_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "counters.h"
#include "loop.h"
#include "procs.h"
#include "req.h"

struct upstream;

struct upstream_url {
	char host[256];
	char path[1024];
	int nfsport;   /* 0: ask the portmapper */
	int mountport; /* 0: ask the portmapper */
};

/* Parses nfs://HOST[:PORT]/PATH[?nfsport=N&mountport=M]. Returns 0 or
 * -EINVAL with a message in err. */
int upstream_parse_url(const char *url, struct upstream_url *out, char *err, size_t errlen);

struct upstream_info {
	struct upstream_url url;
	char addr[64];	   /* numeric address connected to */
	uint8_t root_fh[NFS3_FHSIZE];
	uint32_t root_fh_len;
	FSINFO3resok fsinfo; /* of the export root, as the upstream reported it */
	int version;	     /* NFS version spoken to the upstream: 3 or 4 (origin.h) */
};

/* Latency histograms (client requests in the engine, upstream round trips
 * here): bucket i counts durations of at most cfs_lat_bound_us(i)
 * microseconds and more than the bound before it; the last bucket has no
 * bound (+Inf). Counts are per bucket, not cumulative. */
#define CFS_LAT_NBUCKETS 18

static inline uint64_t cfs_lat_bound_us(int i)
{
	static const uint64_t b[CFS_LAT_NBUCKETS - 1] = {
		50,	100,	250,	500,	 1000,	  2500,	   5000,    10000,  25000,
		50000,	100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
	};
	return i >= 0 && i < CFS_LAT_NBUCKETS - 1 ? b[i] : UINT64_MAX;
}

static inline int cfs_lat_bucket(uint64_t us)
{
	int i = 0;

	while (i < CFS_LAT_NBUCKETS - 1 && us > cfs_lat_bound_us(i))
		i++;
	return i;
}

/* Where a row of upstream_counters.def stands in the stats lines. */
enum upstream_counter_sec {
	UPSTREAM_SEC_CALLS, /* after cache_write_failures */
	UPSTREAM_SEC_SENDS, /* after upstream_calls_* */
	UPSTREAM_SEC_BYTES, /* after cache_oldest_access */
	UPSTREAM_SEC_LAST,  /* last */
};

struct upstream_counters {
	/* one row each in upstream_counters.def, which says what they mean */
#define UPSTREAM_COUNTER(field, sec, type, metric, label, help) uint64_t field;
#include "upstream_counters.def"
#undef UPSTREAM_COUNTER
	uint64_t rtt_us_sum;        /* sum of round-trip times of answered calls */
	uint64_t calls_by_proc[NFS3_NPROCS]; /* NFSv3 procedure numbers */
	int conns_up;
	int conns_total;
	int waiting;  /* calls waiting for a connection or a slot */
	int inflight; /* calls sent and not answered */
	/* round trips of answered calls by procedure (cfs_lat_bucket()) */
	uint64_t rtt_hist[NFS3_NPROCS][CFS_LAT_NBUCKETS];
	uint64_t rtt_us_by_proc[NFS3_NPROCS];
};
/* The rows of upstream_counters.def, in stats order (counters.h); static
 * storage. Their stats names are upstream_<field>. */
extern const struct cfs_counter_desc upstream_counter_descs[];
extern const size_t upstream_counter_ndescs;
/* The stats name of counter FIELD, checked at compile time (as ENGINE_STAT). */
#define UPSTREAM_STAT(field)                                                                       \
	(sizeof(((struct upstream_counters *)0)->field) ? "upstream_" #field : "upstream_" #field)

/* RPC-level answers of the upstream: a reserved range of negative codes
 * below every errno value, one per answer libnfs 4.0 tells apart (it hands
 * them over as strings only; upstream_rpc_status() maps them). Such calls
 * are not retried; the engine hands the answer on to the client as it came
 * (engine_reply_failure()). libnfs keeps neither PROG_MISMATCH's low/high
 * nor MSG_DENIED's reject_stat and auth_stat: see docs/design.md, "Errors
 * from the upstream", for what the client gets instead. */
#define UPSTREAM_E_BASE 20000
enum upstream_rpc_status {
	/* MSG_ACCEPTED with this accept_stat (RFC 5531): -(BASE + accept_stat) */
	UPSTREAM_E_PROG_UNAVAIL = -(UPSTREAM_E_BASE + PROG_UNAVAIL),
	UPSTREAM_E_PROG_MISMATCH = -(UPSTREAM_E_BASE + PROG_MISMATCH),
	UPSTREAM_E_PROC_UNAVAIL = -(UPSTREAM_E_BASE + PROC_UNAVAIL),
	UPSTREAM_E_GARBAGE_ARGS = -(UPSTREAM_E_BASE + GARBAGE_ARGS),
	UPSTREAM_E_SYSTEM_ERR = -(UPSTREAM_E_BASE + SYSTEM_ERR),
	/* MSG_DENIED (RPC_MISMATCH or AUTH_ERROR; which one, libnfs drops) */
	UPSTREAM_E_DENIED = -(UPSTREAM_E_BASE + 16),
	/* a reply libnfs could not decode, or an accept_stat it does not know */
	UPSTREAM_E_BADREPLY = -(UPSTREAM_E_BASE + 17),
};

/* 1 when status is one of enum upstream_rpc_status. */
static inline int upstream_is_rpc_error(int status)
{
	return status <= UPSTREAM_E_PROG_UNAVAIL && status >= UPSTREAM_E_BADREPLY;
}

/* The accept_stat a MSG_ACCEPTED answer carried (PROG_UNAVAIL .. SYSTEM_ERR),
 * or -1 when status is not such an answer. */
static inline int upstream_accept_stat(int status)
{
	return status <= UPSTREAM_E_PROG_UNAVAIL && status >= UPSTREAM_E_SYSTEM_ERR
	           ? -status - UPSTREAM_E_BASE
	           : -1;
}

/* Maps the error text libnfs 4.0's rpc_process_reply() hands to a callback
 * with RPC_STATUS_ERROR to an enum upstream_rpc_status; -EPROTO for any
 * other text (not an answer of the server) and for NULL. */
int upstream_rpc_status(const char *libnfs_msg);

/* Text for a status of upstream_cb: the RPC answer for enum
 * upstream_rpc_status, strerror() otherwise. Static storage. */
const char *upstream_strerror(int status);

/* status 0: res is the decoded result of proc (e.g. READ3res *), valid only
 * during the callback. An enum upstream_rpc_status: the upstream answered
 * with that RPC-level error; -E2BIG: the call is too large for libnfs to
 * encode (4 KiB without WRITE data: names or paths of some KiB); -EPROTO
 * or -EINVAL: it could not be sent or failed otherwise; -ETIMEDOUT: soft
 * mode gave up; -ECONNRESET: the upstream closed the connection every
 * time the call was sent (UPSTREAM_MAX_LOST times, while it answered
 * others: a call it will not take, such as a WRITE over its wtmax);
 * -ECANCELED: shutting down or nobody waits for it. res is
 * NULL unless status is 0. upstream_call*() return -E2BIG and -EINVAL
 * too, for a call that could be sent at once. */
typedef void (*upstream_cb)(int status, void *res, void *priv);
/* Hard mount: a call whose connection dies under it is sent again once one
 * is up. A server that drops the connection on one call (knfsd on a record
 * above its limit) would get it forever; this many losses, each time on a
 * connection the server had answered, end it with -ECONNRESET. */
#define UPSTREAM_MAX_LOST 5
/* Asked before a waiting call is sent: 0 means nobody wants the answer any
 * more (the client went away); the call then completes with -ECANCELED
 * without being sent. */
typedef int (*upstream_alive_fn)(void *priv);

/* Connects and mounts the export, driving the loop until done, until
 * cfg->upstream_timeout passes or until a stop is signalled
 * (loop_stop_signalled()). Returns 0 or -errno with err (-EINTR: the
 * stop). */
int upstream_start(struct loop *l, const struct cfs_config *cfg, struct upstream **out,
		   char *err, size_t errlen);
void upstream_stop(struct upstream *up);
/* A pool to HOST:NFSPORT without MOUNT, FSINFO or a wait: its connections
 * connect in the background (the fleet's peers, include/peers.h: another
 * cachefsd that takes the filer's handles). cfg's soft, upstream_timeout
 * and reconnect_max apply; cfg must outlive the pool. info's root handle
 * and FSINFO stay empty. 0 or -errno with a message in err. */
int upstream_open(struct loop *l, const struct cfs_config *cfg, const char *host, int nfsport,
                  int nconns, struct upstream **out, char *err, size_t errlen);

/* Sends NFSv3 procedure proc with args (a libnfs *3args struct, or NULL for
 * NULL) as cred. args and everything it points to must stay valid until the
 * callback: a call may be re-sent after a reconnect. Returns 0 (exactly one
 * callback follows, never from inside this call) or -errno (none). */
int upstream_call(struct upstream *up, uint32_t proc, void *args, const struct cfs_cred *cred,
		  upstream_cb cb, void *priv);
/* The same, for a call made on behalf of one client: alive (may be NULL) is
 * asked before a call that had to wait is sent. */
int upstream_call_for(struct upstream *up, uint32_t proc, void *args,
		      const struct cfs_cred *cred, upstream_cb cb, upstream_alive_fn alive,
		      void *priv);

/* Calls the pool sends at once at most (beyond, they wait in its queue):
 * budgets for the proxy's own calls (fills, readahead) are taken from it. */
int upstream_max_inflight(const struct upstream *up);
const struct upstream_info *upstream_info(const struct upstream *up);
const struct upstream_counters *upstream_counters(const struct upstream *up);

#endif
