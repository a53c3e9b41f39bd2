/* NLM v4 (RFC 1813, appendix II "Network Lock Manager protocol"): the
 * procedure numbers libnfs 4.0 does not define and the argument and
 * result shapes it has no types or decoders for (share arguments and
 * results, the FREE_ALL notification). Their decoders are composed from
 * libnfs's zdr primitives in proto/nlm.c: the wire is proto's, and
 * cachefsd/ parses no XDR by hand. The shapes libnfs has (NLM4_LOCKargs,
 * NLM4_TESTres, ...) are used as they are. */
#ifndef CFS_NLM_H
#define CFS_NLM_H

#include <stdint.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nlm.h>

/* Procedures 0 .. 23; 16 .. 19 are not part of version 4. */
#define NLM4_NPROCS      24
#define NLM4_GRANTED_MSG 10
#define NLM4_TEST_RES    11
#define NLM4_LOCK_RES    12
#define NLM4_CANCEL_RES  13
#define NLM4_UNLOCK_RES  14
#define NLM4_GRANTED_RES 15
#define NLM4_SHARE       20
#define NLM4_UNSHARE     21
#define NLM4_NM_LOCK     22
#define NLM4_FREE_ALL    23

/* Limits: the caller_name is a string<LM_MAXSTRLEN>, cookie and owner
 * handle are netobj (opaque<MAXNETOBJ_SZ>), the handle is an NFSv3 one. */
#define NLM4_MAXSTRLEN 1024
#define NLM4_MAXNETOBJ 1024
#define NLM4_MAXFH     64

/* nlm4_shareargs: SHARE and UNSHARE. */
typedef struct {
	nlm_cookie cookie;
	nlm4_share share;
	uint32_t reclaim;
} NLM4_SHAREargs;

/* nlm4_shareres. */
typedef struct {
	nlm_cookie cookie;
	nlmstat4 stat;
	int32_t sequence;
} NLM4_SHAREres;

/* nlm4_notify: FREE_ALL. */
typedef struct {
	char *name;
	int32_t state;
} NLM4_NOTIFYargs;

uint32_t zdr_NLM4_SHAREargs(ZDR *z, NLM4_SHAREargs *a);
uint32_t zdr_NLM4_SHAREres(ZDR *z, NLM4_SHAREres *r);
uint32_t zdr_NLM4_NOTIFYargs(ZDR *z, NLM4_NOTIFYargs *a);

/* The arguments of GRANTED for the lock a LOCK asked (its cookie,
 * exclusive flag and nlm4_lock, bytes unchanged) into out[0..cap):
 * 0 with *outlen, or -EBADMSG. */
int nlm_granted_args(const uint8_t *lock_args, uint32_t len, uint8_t *out, uint32_t cap,
                     uint32_t *outlen);

#endif
