/* The upstream pool: libnfs async client contexts to the upstream NFS
 * server. Every call carries the caller's credential and the file handle
 * bytes unchanged. Calls wait while the upstream is unreachable and are
 * re-sent after reconnect (hard mount), unless configured soft. */
#ifndef CFS_UPSTREAM_H
#define CFS_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "loop.h"
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

struct upstream_counters {
	uint64_t calls;	     /* calls sent (including re-sends) */
	uint64_t resends;    /* calls re-sent after a lost connection */
	uint64_t replies;
	uint64_t rpc_errors; /* RPC-level errors from the upstream */
	uint64_t reconnects;
	uint64_t rtt_us_sum; /* sum of round-trip times of answered calls */
	uint64_t timeouts;
	uint64_t cancelled; /* waiting calls dropped: their client went away */
	uint64_t calls_by_proc[22]; /* NFSv3 procedure numbers */
	int conns_up;
	int conns_total;
	int waiting;  /* calls waiting for a connection or a slot */
	int inflight; /* calls sent and not answered */
	/* round trips of answered calls by procedure (cfs_lat_bucket()) */
	uint64_t rtt_hist[22][CFS_LAT_NBUCKETS];
	uint64_t rtt_us_by_proc[22];
	uint64_t read_bytes;  /* READ payload received */
	uint64_t write_bytes; /* WRITE payload sent (re-sends included) */
};

/* status 0: res is the decoded result of proc (e.g. READ3res *), valid only
 * during the callback. -EPROTO: the upstream answered with an RPC error;
 * -EACCES: it rejected the credential; -ETIMEDOUT: soft mode gave up;
 * -ECANCELED: shutting down. res is NULL unless status is 0. */
typedef void (*upstream_cb)(int status, void *res, void *priv);
/* Asked before a waiting call is sent: 0 means nobody wants the answer any
 * more (the client went away); the call then completes with -ECANCELED
 * without being sent. */
typedef int (*upstream_alive_fn)(void *priv);

/* Connects and mounts the export, driving the loop until done or until
 * cfg->upstream_timeout passes. Returns 0 or -errno with err. */
int upstream_start(struct loop *l, const struct cfs_config *cfg, struct upstream **out,
		   char *err, size_t errlen);
void upstream_stop(struct upstream *up);

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
