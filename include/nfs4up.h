/* The NFSv4.0 upstream client (cachefsd/upstream/nfs4.c, its pure parts in
 * nfs4xdr.c): reads an NFSv4.0 filer in NFSv3 semantics. First step of
 * issue 19: not wired into the engine yet (the origin interface of
 * ../shared/DESIGN.md plugs it in); tests/tools/nfs4probe drives it on its
 * own loop.
 *
 * One connection (a libnfs rpc_context on the daemon's loop), one client ID
 * (SETCLIENTID / SETCLIENTID_CONFIRM: a stable id string for this daemon
 * and export, a verifier per start), renewed with RENEW every third of the
 * server's lease_time. Hard mount: while the connection is down or the
 * client ID is being re-established (the server restarted: the connection
 * drops, then RENEW says NFS4ERR_STALE_CLIENTID; or the lease expired:
 * NFS4ERR_EXPIRED) calls wait and are re-sent; NFS4ERR_DELAY and
 * NFS4ERR_GRACE are retried after a back-off.
 *
 * Calls are NFSv3 procedures with libnfs's v3 argument structs and give
 * libnfs's v3 result structs, each with the coherence token of the object
 * (its change attribute and size: struct n4_coh). Built: every NFSv3
 * procedure but NULL: the reads (GETATTR, LOOKUP, ACCESS, READ, READLINK,
 * READDIR, READDIRPLUS), and since the second step the writes and
 * namespace changes (WRITE, COMMIT, SETATTR, CREATE, MKDIR, SYMLINK,
 * MKNOD, REMOVE, RMDIR, RENAME, LINK) with wcc data, and FSSTAT, FSINFO,
 * PATHCONF (docs/design.md, "NFSv4.0 upstream" and its "Writes and
 * namespace changes"). WRITE and SETATTR(size) use the anonymous stateid,
 * then an OPEN by a name the module remembers (v4.0 has no OPEN by
 * handle); CREATE is OPEN(CREATE) + OPEN_CONFIRM + CLOSE; no open outlives
 * its call. WRITEs over 2 KiB go over a second connection (libnfs 4.0
 * encodes a COMPOUND into 4 KiB). */
#ifndef CFS_NFS4UP_H
#define CFS_NFS4UP_H

#include <stddef.h>
#include <stdint.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nfs4.h>

#include "loop.h"
#include "nfs3res.h"
#include "req.h"

#define N4_FHSIZE  NFS4_FHSIZE /* 128: v4 handles may exceed NFSv3's 64 */
#define N4_MAXOPS  32          /* operations in one COMPOUND */
#define N4_MAXPATH 24          /* components of the export's path */

struct n4_client;

struct n4_config {
	char host[256];      /* name or address of the filer */
	int port;            /* 0: 2049 */
	char path[1024];     /* the export in the server's pseudo-filesystem */
	char client_id[256]; /* "": "cachefsd/<hostname>/<host>:<port><path>" */
	/* user@domain owners: the domain that maps through getpwnam/getgrnam;
	 * "": any domain (the name part alone counts) */
	char idmap_domain[256];
	int timeout_s;       /* n4_start()'s deadline [30] */
	int reconnect_max_s; /* back-off cap between connects [30] */
};

struct n4_fh {
	uint32_t len;
	unsigned char data[N4_FHSIZE];
};

/* The coherence token of a call's object (and, for LOOKUP, READDIR and
 * READDIRPLUS, of the directory): the server's change attribute, exact
 * where mtime and ctime are not, with the size it came with. */
struct n4_coh {
	int has_change;
	uint64_t change;
	uint64_t size;
	int has_dir_change;
	uint64_t dir_change;
	/* the v3 attributes each came with (the origin's tokens match an
	 * fattr3 of the answer by them: struct origin_coh) */
	fattr3 obj_attrs, dir_attrs;
};

struct n4_stats {
	uint64_t calls;        /* n4_call()s accepted */
	uint64_t compounds;    /* COMPOUNDs sent (calls, their re-sends, state upkeep) */
	uint64_t replies;      /* calls answered to their caller */
	uint64_t resends;      /* calls sent again after a lost connection */
	uint64_t connects;     /* TCP connects started */
	uint64_t reconnects;   /* the connection came back after it was up */
	uint64_t setclientids; /* client IDs established (confirmed) */
	uint64_t renews;       /* RENEWs the server accepted */
	uint64_t recoveries;   /* client ID re-established (stale / expired) */
	uint64_t delays;       /* NFS4ERR_DELAY / NFS4ERR_GRACE waited out */
	uint64_t bypass_reads; /* READs re-sent with the all-ones stateid */
	uint64_t anon_refused; /* READs refused with both special stateids */
	uint64_t owner_nobody; /* owners or groups that fell back to nobody */
	uint32_t lease_s;      /* the server's lease_time */
	int up;                /* connected with a confirmed client ID */
	int waiting;           /* calls waiting for the connection or a retry */
	int inflight;          /* calls sent, not answered */
	/* the writes (added with them) */
	uint64_t opens;          /* OPENs granted (OPEN(CREATE) and the fallback) */
	uint64_t open_confirms;  /* ... that needed OPEN_CONFIRM */
	uint64_t open_fallbacks; /* WRITE / SETATTR(size) re-sent with an open's stateid */
	uint64_t write_refused;  /* ... refused, no name known to OPEN by */
	uint64_t close_errors;   /* OPEN_CONFIRM / CLOSE that failed (logged) */
	uint64_t reopens;        /* fallback opens lost with the client ID, opened again */
	uint64_t readdir_retries; /* READDIRs re-sent bigger after SERVERFAULT */
	uint32_t readdir_scale;   /* the v4 maxcount asked per client byte, 16ths */
};

/* status 0: res3 is the NFSv3 result of the call's procedure (GETATTR3res *,
 * LOOKUP3res *, ...), with any nfsstat3 (n4_stat3() of the server's
 * nfsstat4), and coh the coherence token; both valid only during the
 * callback. status < 0: no answer to give (res3 and coh NULL): an enum
 * upstream_rpc_status (include/upstream.h: the server answered at the RPC
 * level), -ENOTSUP (a READ the server refuses with the anonymous and the
 * all-ones stateids: the OPEN fallback needs the file's directory and name,
 * since v4.0 has no OPEN by handle, and comes with writes), -ECONNRESET
 * (the connection closed under it UPSTREAM_MAX_LOST times), -EPROTO (a
 * reply that does not decode), -ECANCELED (n4_stop()). A WRITE or
 * SETATTR(size) refused with the anonymous stateid and no name to OPEN by
 * is an answer (NFS3ERR_ACCES), not a status. */
typedef void (*n4_cb)(int status, void *res3, const struct n4_coh *coh, void *priv);

/* Connects, establishes the client ID and looks the export's root up
 * (PUTROOTFH + LOOKUP per component + GETFH + GETATTR), driving the loop
 * until done, until cfg->timeout_s passes or a stop is signalled. 0 or
 * -errno with a message in err. cfg is copied. */
int n4_start(struct loop *l, const struct n4_config *cfg, struct n4_client **out, char *err,
             size_t errlen);
/* Calls waiting or in flight complete with -ECANCELED. Not from inside an
 * n4_cb (the connection's rpc_service() is running): from the loop. */
void n4_stop(struct n4_client *c);

/* Sends NFSv3 procedure proc (GETATTR, LOOKUP, ACCESS, READ, READLINK,
 * READDIR, READDIRPLUS, and since the writes' step WRITE, COMMIT, SETATTR,
 * CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK, FSSTAT,
 * FSINFO, PATHCONF) with args3 (the libnfs *3args struct; its handles
 * may be up to N4_FHSIZE bytes) as cred. args3 is copied: it may go away at
 * once. Returns 0 (exactly one callback follows, never from inside this
 * call) or -errno (none): -EOPNOTSUPP (a procedure not built yet),
 * -EINVAL (a handle longer than N4_FHSIZE), -ENAMETOOLONG (a name over
 * 255 bytes), -ECANCELED (stopping), -ENOMEM. */
int n4_call(struct n4_client *c, uint32_t proc, const void *args3, const struct cfs_cred *cred,
            n4_cb cb, void *priv);

/* The export's root handle and its attributes at start-up. */
const struct n4_fh *n4_root_fh(const struct n4_client *c);
const fattr3 *n4_root_attr(const struct n4_client *c);
/* The server's maxread for the export (0: not given). */
uint64_t n4_maxread(const struct n4_client *c);
const struct n4_stats *n4_stats(const struct n4_client *c);
/* The client id string sent in SETCLIENTID. */
const char *n4_client_id(const struct n4_client *c);
/* Tells the module where a file is (v4.0 OPENs by directory and name
 * only): obj is name in dir. The module learns the same from its LOOKUP
 * and CREATE answers; a table of N4_NAMES entries, the oldest replaced.
 * Used only when a WRITE or a size-changing SETATTR is refused with the
 * anonymous stateid. */
#define N4_NAMES 1024
void n4_remember_name(struct n4_client *c, const struct n4_fh *obj, const struct n4_fh *dir,
                      const char *name);

/* --- the pure parts, public for the unit tests (tests/unit/test_nfs4.c) --- */

/* The nearest nfsstat3 for an nfsstat4 (a table; unknown codes give
 * NFS3ERR_SERVERFAULT). */
int n4_stat3(int nfsstat4);

/* Maps an fattr4 owner / owner_group string (not NUL-terminated) to a uid
 * / gid: a string of digits is the number itself; "name@domain" (or a bare
 * "name") is looked up with getpwnam_r / getgrnam_r when domain is "" or
 * NULL or equals the string's domain (ASCII case-insensitive). Returns 0
 * (numeric), 1 (a name found) or -ENOENT (not mappable: *id is nobody, the
 * uid of user "nobody" or the gid of group "nogroup"/"nobody", else
 * 65534). */
int n4_owner_to_id(const char *s, size_t len, int group, const char *domain, uint32_t *id);

/* The NSS lookups behind n4_owner_to_id(), cached (n4idmap.c): a name is
 * looked up once per N4_IDMAP_TTL_S, a name NSS does not know once per
 * N4_IDMAP_NEG_TTL_S. n4_idmap_lookup: 1 and the id, or -ENOENT and
 * nobody's id; n4_idmap_nobody: the uid of "nobody" / the gid of
 * "nogroup" or "nobody", else 65534. One thread only. */
#define N4_IDMAP_SLOTS     1024
#define N4_IDMAP_NAME_MAX  127
#define N4_IDMAP_TTL_S     600
#define N4_IDMAP_NEG_TTL_S 60
struct n4_idmap_stats {
	uint64_t hits;    /* answered from the cache */
	uint64_t lookups; /* NSS calls made */
};
int n4_idmap_lookup(const char *name, int group, uint32_t *id);
uint32_t n4_idmap_nobody(int group);
void n4_idmap_stats(struct n4_idmap_stats *out);
void n4_idmap_test_advance(int64_t seconds); /* the unit test's clock */

/* fattr4 attributes decoded: v3 attributes (absent ones keep defaults:
 * nlink 1, used = size, zero times), and the v4-only ones asked for. */
struct n4_attrs {
	uint32_t have[2]; /* FATTR4_* bits decoded (attributes 0..63) */
	fattr3 f;
	uint64_t change;
	uint32_t lease_time;
	uint32_t rdattr_error;
	uint64_t maxread, maxwrite;
	uint32_t fh_len;
	const char *fh; /* FATTR4_FILEHANDLE: points into the fattr4's bytes */
	int nobody;     /* owner or group not mappable: nobody */
	/* file system attributes (FSSTAT, FSINFO, PATHCONF; added with them) */
	uint64_t space_avail, space_free, space_total;
	uint64_t files_avail, files_free, files_total;
	uint64_t maxfilesize;
	uint32_t maxlink, maxname;
	nfstime3 time_delta;
	uint32_t homogeneous, link_support, symlink_support, cansettime;
	uint32_t no_trunc, chown_restricted, case_insensitive, case_preserving;
};

static inline int n4_has(const struct n4_attrs *a, int bit)
{
	return bit >= 0 && bit < 64 && (a->have[bit / 32] >> (bit % 32)) & 1;
}

/* Decodes f (attributes in bitmap order, RFC 7530 section 5) into a.
 * domain as for n4_owner_to_id(). 0, or -EPROTO: bytes short or left over,
 * or an attribute this decoder does not know (it cannot be skipped). */
int n4_fattr_decode(const fattr4 *f, const char *domain, struct n4_attrs *a);

/* Encodes the settable attributes of s (mode, uid, gid, size, atime,
 * mtime) as fattr4 into buf (cap bytes): mask gets the bits, *len the byte
 * count; owners as numeric strings. For the writes of the next step
 * (SETATTR, OPEN(CREATE), CREATE); tested by round trip. 0 or -ENOSPC. */
int n4_sattr3_encode(const sattr3 *s, uint32_t mask[2], char *buf, size_t cap, size_t *len);

/* One NFSv3 call, its arguments copied, ready to become a COMPOUND. */
struct n4_req {
	uint32_t proc;
	struct n4_fh fh; /* the object, or the directory */
	char name[256];  /* LOOKUP */
	uint64_t offset; /* READ */
	uint32_t count;  /* READ; READDIR(PLUS)'s maxcount */
	uint32_t dircount;
	uint32_t rdmax; /* READDIR(PLUS): the v4 maxcount asked (n4_readdir_max()) */
	uint64_t cookie;
	char cookieverf[NFS3_COOKIEVERFSIZE];
	uint32_t access;
	int bypass;  /* READ: the all-ones stateid instead of the anonymous one */
	int is_root; /* READDIR(PLUS): the directory is the export's root */
	/* --- the writes (added with them) --- */
	struct n4_fh fh2;              /* RENAME: the target directory; LINK: the directory */
	char name2[256];               /* RENAME: the target name; LINK: the link's name */
	uint32_t stable;               /* WRITE: stable_how (v3's and v4's values agree) */
	uint32_t how;                  /* CREATE: createmode3; MKNOD: its ftype3 */
	char verf[NFS4_VERIFIER_SIZE]; /* CREATE EXCLUSIVE: the create verifier */
	specdata4 spec;                /* MKNOD: a device's major and minor */
	char *data;                    /* WRITE's bytes, SYMLINK's target (copied; n4_req_clear) */
	uint32_t datalen;
	/* the settable attributes as fattr4 (SETATTR, CREATE, MKDIR, SYMLINK,
	 * MKNOD: n4_sattr3_encode()) */
	uint32_t amask[2];
	char abuf[320];
	size_t alen;
	int has_size; /* SETATTR changes the size: the stateid matters */
	int guard;    /* SETATTR: VERIFY(time_metadata = guard ctime) first */
	uint32_t vmask[2];
	char vbuf[16];
	size_t vlen;
	/* state for the writes, set by the client before each send */
	int phase;          /* enum n4_phase */
	stateid4 sid;       /* WRITE/SETATTR: all zeros (anonymous) or an open's */
	clientid4 clientid; /* OPEN: the open-owner's client ID */
	uint32_t seqid;     /* OPEN (0), OPEN_CONFIRM, CLOSE: the open-owner's seqid */
	char owner[32];     /* OPEN: the open-owner (one per OPEN, see design.md) */
	struct n4_fh ofh;   /* OPEN_CONFIRM / CLOSE: the opened file */
	struct n4_fh odir;  /* the fallback OPEN of WRITE/SETATTR: the directory */
	char oname[256];    /* ... and the file's name in it */
};

/* The COMPOUNDs of one call: its own (N4_PH_MAIN: what the procedure
 * becomes), and the open-state ones that OPEN(CREATE) and the stateid
 * fallback of WRITE / SETATTR(size) add (docs/design.md). */
enum n4_phase {
	N4_PH_MAIN,
	N4_PH_OPEN,    /* PUTFH(odir) OPEN(nocreate, share write, oname) GETFH */
	N4_PH_CONFIRM, /* PUTFH(ofh) OPEN_CONFIRM(sid, seqid) */
	N4_PH_CLOSE,   /* PUTFH(ofh) CLOSE(seqid, sid) */
};

/* The v4 READDIR maxcount asked for a v3 client's count: v4's entries are
 * bigger than v3's (a bitmap, the attributes as fattr4, owner and group as
 * strings, the handle as an attribute), so the v3 count would bring fewer
 * entries than a v3 page holds. The count times N4_RD_SCALE_NUM /
 * scale16 / 16, at most N4_RD_MAX; what goes beyond the client's count is
 * trimmed off (each entry carries its own cookie: the client goes on from
 * the last one it got). The scale starts at N4_RD_SCALE (nfs-ganesha's v4
 * pages at the v3 count held 1/1.3 of the entries its v3 pages hold, plain
 * and plus) and the client raises it by 1/4 whenever a filer's page came
 * back short of the client's count (n4_out.rd_short: longer owner strings
 * or handles), up to N4_RD_SCALE_MAX. */
#define N4_RD_SCALE     24 /* 1.5 */
#define N4_RD_SCALE_MAX 64 /* 4 */
#define N4_RD_RETRY     24 /* the retry after SERVERFAULT: 1.5 times the last */
#define N4_RD_MAX       ((1u << 20) - 8192)
uint32_t n4_readdir_max(uint32_t count, uint32_t scale16);

/* Frees what n4_req_from_v3() copied (WRITE's bytes, SYMLINK's target). */
void n4_req_clear(struct n4_req *rq);

/* Fills rq from v3 args (a handle over N4_FHSIZE: -EINVAL; a name over 255
 * bytes: -ENAMETOOLONG; a procedure not built: -EOPNOTSUPP). */
int n4_req_from_v3(struct n4_req *rq, uint32_t proc, const void *args3);

/* A COMPOUND being built: the args point into this struct and into what
 * the builders were given (handles, names), which must outlive the send. */
struct n4_compound {
	COMPOUND4args args;
	nfs_argop4 ops[N4_MAXOPS];
	char tag[16];
};

void n4_compound_init(struct n4_compound *b, const char *tag);
/* Each adds one operation; -ENOSPC past N4_MAXOPS. */
/* One more operation of type op, zeroed, for an op this file has no
 * builder of (nfs4lock.c's OPEN, LOCK, LOCKU, LOCKT); NULL when the
 * COMPOUND is full (N4_MAXOPS). */
nfs_argop4 *n4_op_add(struct n4_compound *b, nfs_opnum4 op);
int n4_op_putrootfh(struct n4_compound *b);
int n4_op_putfh(struct n4_compound *b, const struct n4_fh *fh);
int n4_op_lookup(struct n4_compound *b, const char *name, uint32_t len);
int n4_op_lookupp(struct n4_compound *b);
int n4_op_getfh(struct n4_compound *b);
/* mask: FATTR4 bitmap words; must stay valid until sent */
int n4_op_getattr(struct n4_compound *b, const uint32_t *mask, uint32_t nwords);
int n4_op_access(struct n4_compound *b, uint32_t bits);
int n4_op_read(struct n4_compound *b, int bypass, uint64_t offset, uint32_t count);
int n4_op_readlink(struct n4_compound *b);
int n4_op_readdir(struct n4_compound *b, uint64_t cookie, const char *verf, uint32_t dircount,
                  uint32_t maxcount, const uint32_t *mask, uint32_t nwords);
int n4_op_renew(struct n4_compound *b, clientid4 id);
/* id: the client id string (kept by the caller); verifier 8 bytes */
int n4_op_setclientid(struct n4_compound *b, const char *id, const char *verifier);
int n4_op_setclientid_confirm(struct n4_compound *b, clientid4 id, const char *confirm);
/* the writes' operations (added with them) */
int n4_op_savefh(struct n4_compound *b);
int n4_op_restorefh(struct n4_compound *b);
int n4_op_write(struct n4_compound *b, const stateid4 *sid, uint64_t offset, uint32_t stable,
                const char *data, uint32_t len);
int n4_op_commit(struct n4_compound *b, uint64_t offset, uint32_t count);
/* mask/attrs: fattr4 as n4_sattr3_encode() makes it, kept by the caller */
int n4_op_setattr(struct n4_compound *b, const stateid4 *sid, const uint32_t *mask,
                  const char *attrs, size_t len);
int n4_op_verify(struct n4_compound *b, int negate, const uint32_t *mask, const char *attrs,
                 size_t len);
int n4_op_remove(struct n4_compound *b, const char *name, uint32_t len);
int n4_op_rename(struct n4_compound *b, const char *from, uint32_t flen, const char *to,
                 uint32_t tlen);
int n4_op_link(struct n4_compound *b, const char *name, uint32_t len);
int n4_op_open_confirm(struct n4_compound *b, const stateid4 *sid, uint32_t seqid);
int n4_op_close(struct n4_compound *b, const stateid4 *sid, uint32_t seqid);

/* The attributes of wcc data (size, change, mtime, ctime: N4_ATTRS_WCC) and
 * of FSSTAT, FSINFO and PATHCONF (v3's plus the file system's: N4_ATTRS_FS). */
extern const uint32_t N4_ATTRS_WCC[2], N4_ATTRS_FS[2];

/* The attributes asked for (FATTR4 bitmaps of 2 words): v3's plus change
 * (N4_ATTRS), plus filehandle and rdattr_error (N4_ATTRS_DIRENT), fileid
 * only (N4_ATTRS_FILEID, plain READDIR), plus lease_time, maxread and
 * maxwrite (N4_ATTRS_ROOT). */
extern const uint32_t N4_ATTRS[2], N4_ATTRS_DIRENT[2], N4_ATTRS_FILEID[2], N4_ATTRS_ROOT[2];

/* The COMPOUND that carries rq (RFC 7530's operations, see docs/design.md):
 *   GETATTR      PUTFH GETATTR
 *   LOOKUP       PUTFH GETATTR(dir) LOOKUP|LOOKUPP GETFH GETATTR
 *                ("." : PUTFH GETATTR GETFH GETATTR)
 *   ACCESS       PUTFH ACCESS GETATTR
 *   READ         PUTFH READ(anonymous or all-ones stateid) GETATTR
 *   READLINK     PUTFH READLINK GETATTR
 *   READDIR(PLUS) PUTFH GETATTR(dir) READDIR, and on the first page of a
 *                directory other than the root LOOKUPP GETATTR(fileid),
 *                for "..".
 * b's arguments point into rq. 0 or -EOPNOTSUPP. */
int n4_build(struct n4_compound *b, const struct n4_req *rq);

/* A COMPOUND's answer turned into the v3 result of rq's procedure. The
 * result's pointers go into res (valid while res is) and into out's own
 * allocations, freed by n4_out_free(). */
struct n4_out {
	union nfs3_res u;
	struct n4_coh coh;
	/* CREATE (OPEN) answered NFS4_OK: its open to confirm and close, and
	 * the new file's handle copied (the v3 result points here, so the
	 * answer outlives the COMPOUND's; out must not move then) */
	int opened;
	stateid4 open_sid;
	uint32_t open_rflags;
	struct n4_fh objfh;
	void *ents; /* entry3 / entryplus3 array of READDIR(PLUS) */
	char *link; /* READLINK's target, NUL-terminated */
	int nobody; /* some owner fell back to nobody */
	int rd_short; /* READDIR(PLUS): neither trimmed nor the end, and room
	               * left for another entry: the maxcount asked was short */
};

/* 0 (out holds the v3 result, whatever its nfsstat3), or -EPROTO (the
 * answer does not decode: operations missing, attributes malformed). */
int n4_reply_to_v3(const struct n4_req *rq, const COMPOUND4res *res, const char *domain,
                   struct n4_out *out);
void n4_out_free(struct n4_out *out);

/* The result of operation i of res when it is there and is op, or NULL. */
const nfs_resop4 *n4_resop(const COMPOUND4res *res, u_int i, nfs_opnum4 op);

/* What a COMPOUND's status asks of the client before the answer can be
 * given: */
enum n4_action {
	N4_ANSWER,  /* give the answer */
	N4_DELAY,   /* NFS4ERR_DELAY, NFS4ERR_GRACE: send again after a pause */
	N4_RECOVER, /* NFS4ERR_STALE_CLIENTID, NFS4ERR_EXPIRED, NFS4ERR_LEASE_MOVED:
	               re-establish the client ID, then send again */
	N4_STATEID, /* a READ's special stateid refused (NFS4ERR_BAD_STATEID,
	               NFS4ERR_OPENMODE, NFS4ERR_STALE_STATEID); also a WRITE's or a
	               size-changing SETATTR's (n4_action_of_req) */
};
enum n4_action n4_action_of(uint32_t proc, int nfsstat4);
/* As n4_action_of(), for a request: a WRITE or a SETATTR that changes the
 * size gets N4_STATEID on a stateid refusal of its main COMPOUND (the
 * client then OPENs when it knows the file's directory and name); the
 * open-state phases never do. */
enum n4_action n4_action_of_req(const struct n4_req *rq, int nfsstat4);

/* What an open-state phase's answer gave: the open's stateid and rflags
 * (N4_PH_OPEN: and the file's handle into fh), or the new stateid
 * (N4_PH_CONFIRM). Returns the phase's nfsstat4, or -EPROTO. */
int n4_open_reply(const struct n4_req *rq, const COMPOUND4res *res, stateid4 *sid, uint32_t *rflags,
                  struct n4_fh *fh);

/* --- COMPOUNDs of the caller's own (the lock state of nfs4lock.c) --------- */

/* Builds the COMPOUND into b (n4_compound_init() first) for the client ID
 * of the moment; called at every send (again after a reconnect or a
 * recovery). 0, or -errno: the call completes with it. */
typedef int (*n4_build_fn)(struct n4_compound *b, clientid4 clientid, void *priv);
/* Sends what build() makes as cred: it waits for the connection, is re-sent,
 * waits out DELAY / GRACE and a client ID's recovery as n4_call()'s calls
 * do; cb then gets status 0 with res3 the COMPOUND4res (whatever its
 * status; valid during the callback) and coh NULL, or status < 0 as for
 * n4_call(). 0 (one callback follows, never from inside) or -errno. */
int n4_compound_call(struct n4_client *c, n4_build_fn build, const struct cfs_cred *cred, n4_cb cb,
                     void *priv);
/* fn(st, arg) is called when a client ID was established again because the
 * server no longer knew the old one: st NFS4ERR_STALE_CLIENTID (it
 * restarted: its grace period takes reclaims) or NFS4ERR_EXPIRED (the lease
 * ran out: the state is gone); before the waiting calls are sent again.
 * fn NULL: no more. */
typedef void (*n4_reset_fn)(int st, void *arg);
void n4_on_reset(struct n4_client *c, n4_reset_fn fn, void *arg);
/* The client ID now (it changes when the server lost it: state made under
 * another one is gone). */
clientid4 n4_clientid(const struct n4_client *c);
/* Where the module last saw obj (its names table): 0 with its directory
 * and name, or -ENOENT. */
int n4_name_of(const struct n4_client *c, const struct n4_fh *obj, struct n4_fh *dir, char *name,
               size_t cap);

/* --- byte-range locks for NLM (cachefsd/upstream/nfs4lock.c) --------------
 *
 * NLM locks of NFSv3 clients held as NFSv4.0 state at the filer: one
 * open-owner and one lock-owner per (file, NLM owner: caller_name, owner
 * handle, svid); the file OPENed by (directory, name) from the names table
 * (v4.0 has no OPEN by handle) with the share access the lock type needs,
 * then LOCK with open_to_lock_owner, later locks by the lock stateid; the
 * ranges held kept here, so that an owner that holds nothing more is
 * released (RELEASE_LOCKOWNER, CLOSE). One COMPOUND at a time per owner
 * (the seqids). docs/design.md, "The locks room", "Over an NFSv4.0 filer". */

struct n4_locks;

#define N4_LK_OHMAX 1024 /* NLM's owner handle */

struct n4_lkowner {
	const char *host; /* caller_name */
	const char *oh;   /* owner handle (a string: libnfs decodes it so) */
	uint32_t svid;
};

/* What a TEST or a LOCK met. status: the nfsstat4 (NFS4_OK,
 * NFS4ERR_DENIED, ...), or -ENOENT: no name known to OPEN the file by. */
struct n4_lkres {
	int status;
	/* NFS4ERR_DENIED: the holder's range (NLM's: len 0 to the end), type,
	 * and when it is an owner of this proxy, its svid and owner handle */
	uint64_t offset, len;
	int exclusive;
	int ours;
	uint32_t svid;
	char oh[N4_LK_OHMAX + 1];
};

/* status 0: r says what the filer answered; < 0: no answer (-ECANCELED:
 * n4_locks_free(), or n4_call()'s statuses). */
typedef void (*n4_lk_cb)(int status, const struct n4_lkres *r, void *priv);

struct n4_lkstats {
	uint64_t owners;    /* owners made (an OPEN each) */
	uint64_t locks;     /* LOCKs granted */
	uint64_t denied;    /* LOCKs and LOCKTs denied */
	uint64_t unlocks;   /* LOCKUs */
	uint64_t released;  /* owners released (RELEASE_LOCKOWNER + CLOSE) */
	uint64_t lost;      /* owners whose state the filer no longer had */
	uint64_t noname;    /* LOCKs refused: no name to OPEN by */
	uint64_t reclaimed; /* owners whose locks were reclaimed after a filer restart */
	int held;           /* owners now */
};

struct n4_locks *n4_locks_new(struct loop *l, struct n4_client *c);
/* Every call not answered yet gets -ECANCELED now; the rest is freed once
 * the COMPOUNDs in flight have ended (n4_stop() ends them). */
void n4_locks_free(struct n4_locks *lk);
/* Each: 0 and one callback later (never from inside), or -errno.
 * offset/len are NLM's (len 0: to the end of the file); fh the file's v4
 * handle; cred the NLM caller's. block: READW/WRITEW (the filer may queue
 * the owner). */
int n4_lk_test(struct n4_locks *lk, const struct n4_fh *fh, const struct n4_lkowner *o,
               int exclusive, uint64_t offset, uint64_t len, const struct cfs_cred *cred,
               n4_lk_cb cb, void *priv);
int n4_lk_lock(struct n4_locks *lk, const struct n4_fh *fh, const struct n4_lkowner *o,
               int exclusive, int block, uint64_t offset, uint64_t len, const struct cfs_cred *cred,
               n4_lk_cb cb, void *priv);
int n4_lk_unlock(struct n4_locks *lk, const struct n4_fh *fh, const struct n4_lkowner *o,
                 uint64_t offset, uint64_t len, const struct cfs_cred *cred, n4_lk_cb cb,
                 void *priv);
/* Releases every lock of host's owners (FREE_ALL, a reboot): LOCKU of
 * everything, RELEASE_LOCKOWNER, CLOSE. Returns how many owners. */
int n4_lk_free_host(struct n4_locks *lk, const char *host);
const struct n4_lkstats *n4_lk_stats(const struct n4_locks *lk);

/* The pure parts, for the unit tests: a set of byte ranges [s, e). */
struct n4_ranges {
	struct n4_range {
		uint64_t s, e;
	} * r;
	int n, cap;
};
/* NLM's (offset, len) as [s, e): len 0 or past 2^64 is to the end */
void n4_range_of(uint64_t offset, uint64_t len, uint64_t *s, uint64_t *e);
int n4_ranges_add(struct n4_ranges *rs, uint64_t s, uint64_t e);
int n4_ranges_sub(struct n4_ranges *rs, uint64_t s, uint64_t e);
void n4_ranges_clear(struct n4_ranges *rs);

#endif
