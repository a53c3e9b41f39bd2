/* The procedure table: one row per RPC procedure the proxy answers (NFSv3,
 * MOUNT v3 and v1, NSM v1 today), holding what the wire layer (proto/) and the
 * upstream pool (cachefsd/upstream/upstream.c) need to know about it. Adding a
 * procedure is adding a row in proto/procs.c; adding a program (or a
 * version of one) is adding its rows and one program row there: a program
 * row is one (program, version).
 *
 * The table is constant data shared by both layers, so it lives in its own
 * header: neither layer reaches into the other's private headers for it. */
#ifndef CFS_PROCS_H
#define CFS_PROCS_H

#include <stddef.h>
#include <stdint.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

/* Procedures per program: the numbers run 0 .. N-1 (RFC 1813). Arrays
 * indexed by procedure number are sized with these. */
#define NFS3_NPROCS   22 /* NULL .. COMMIT */
#define MOUNT3_NPROCS 6  /* NULL .. EXPORT */
#define NSM1_NPROCS   7  /* NULL .. NOTIFY (status monitor, RFC 1813 appendix) */

/* The cursor of the argument walkers (private to proto/). */
struct xcur;

/* What a procedure does, for the duplicate-request cache and the engine. */
enum proc_flags {
	PROC_MUTATES = 1 << 0, /* changes something on the server */
	PROC_DRC = 1 << 1,     /* not idempotent: its replies are kept for
	                        * retransmissions (proto/drc.c) */
	PROC_CACHED = 1 << 2,  /* the metadata cache may answer it (ttl mode) */
};

/* Sends the call upstream with libnfs (rpc_nfs3_*_async): 0 or libnfs's
 * negative code (-2: the call could not be encoded). */
typedef int (*proc_send_fn)(struct rpc_context *rpc, rpc_cb cb, void *args, void *priv);

struct proc_row {
	const char *name; /* for logs, stats and metrics ("GETATTR", "MNT") */
	/* Walks the argument bytes, bounding every length (xdrcheck.c says
	 * why libnfs's decoder cannot be trusted with them); marks the
	 * cursor bad when they are not well formed. */
	void (*check)(struct xcur *c);
	zdrproc_t dec;  /* libnfs argument decoder */
	zdrproc_t enc;  /* libnfs result encoder */
	unsigned flags; /* enum proc_flags */
	/* Bytes of reply the call may ask for, from its argument bytes (the
	 * cursor is at the arguments; a bad cursor means "the most"); NULL:
	 * none beyond the fixed part. */
	uint32_t (*reply_want)(struct xcur *c);
	/* The same from the decoded arguments (union cfs_args *). */
	uint32_t (*reply_want_args)(const void *args);
	/* Room the encoder needs for the result (beyond 512 bytes); NULL: none. */
	size_t (*reply_room)(const void *res);
	proc_send_fn send; /* upstream sender; NULL: answered by the proxy */
	/* The handle the call is about (which one a STALE answer calls
	 * stale): at fh_off in the decoded arguments when has_fh; directory
	 * operations have none (which of their handles is stale is unknown). */
	int has_fh;
	size_t fh_off;
};

/* What the daemon does with a program row. */
enum prog_flags {
	/* registered with a local rpcbind at start (cachefsd/ops/rpcbind.c),
	 * so that clients find it without port= options */
	PROG_REGISTER = 1 << 0,
	/* also served over UDP, on the TCP port (one datagram, one call):
	 * NSM, whose SM_NOTIFY sm-notify sends by UDP only */
	PROG_UDP = 1 << 1,
};

struct prog_row {
	uint32_t prog, vers;
	const char *name;
	unsigned flags;               /* enum prog_flags */
	const struct proc_row *procs; /* indexed by procedure number */
	uint32_t nprocs;
	/* reply_want for calls whose arguments are not walked (their replies
	 * are small or bounded) */
	uint32_t reply_default;
};

/* The program row of prog version vers, or NULL when the proxy does not
 * serve that version. Static storage. */
const struct prog_row *proc_prog(uint32_t prog, uint32_t vers);
/* The lowest and highest version of prog the table has (what a
 * PROG_MISMATCH reply names): 0, or -ENOENT when prog is not served. */
int proc_versions(uint32_t prog, uint32_t *low, uint32_t *high);
/* 1 when some program is served over UDP too; proc_udp: when a version
 * of prog is. */
int proc_any_udp(void);
int proc_udp(uint32_t prog);
/* Every program row, in table order; *n gets their number. */
const struct prog_row *proc_progs(size_t *n);
/* The row of prog/proc in prog's highest version, or NULL when there is
 * none: names, counters and the engine's NFSv3 rows, which are the same in
 * every version served. Static storage. */
const struct proc_row *proc_row(uint32_t prog, uint32_t proc);
/* The row of prog/proc in version vers (how the call is decoded and its
 * reply encoded), or NULL. Static storage. */
const struct proc_row *proc_row_vers(uint32_t prog, uint32_t vers, uint32_t proc);

/* The handle row's call is about, in its decoded arguments (union
 * cfs_args *), or NULL when it has none. Points into args. */
static inline const nfs_fh3 *proc_fh(const struct proc_row *row, const void *args)
{
	return row && row->has_fh ? (const nfs_fh3 *)((const char *)args + row->fh_off) : NULL;
}

#endif
