/* A small ONC RPC client over TCP (proto/rpcclient.c): calls of any
 * program, version and procedure with pre-encoded arguments and an
 * AUTH_SYS credential, replies matched by xid and handed back as the
 * encoded result body. The locks room forwards NLM with it (libnfs 4.0's
 * client has five of NLM's twenty procedures and no way to send a
 * procedure it does not know; docs/design.md, "The locks room").
 *
 * The server's port is fixed or asked of its portmapper (GETPORT, TCP),
 * and asked again after a connection fails. Calls wait while there is no
 * connection and are sent again after a reconnect (hard semantics, as
 * NFS), unless made with RPCC_ONCE. */
#ifndef CFS_RPCCLIENT_H
#define CFS_RPCCLIENT_H

#include <stdint.h>
#include <sys/socket.h>

#include "loop.h"
#include "req.h"

struct rpcc;

/* The outcome of a call:
 *   0            accepted, SUCCESS: res[0..len) is the result body, valid
 *                during the callback only;
 *   > 0          accepted with that accept_stat (PROG_UNAVAIL, PROC_UNAVAIL,
 *                PROG_MISMATCH, GARBAGE_ARGS, SYSTEM_ERR);
 *   -EACCES      MSG_DENIED (an auth error or RPC_MISMATCH);
 *   -EPROTONOSUPPORT  the portmapper has no such program (the filer
 *                serves no NLM): not retried;
 *   -ETIMEDOUT   an RPCC_ONCE call got no answer in its time;
 *   -ECONNREFUSED, -EHOSTUNREACH ...  an RPCC_ONCE call could not be sent;
 *   -ECANCELED   the client was freed first. */
typedef void (*rpcc_cb)(int status, const uint8_t *res, uint32_t len, void *priv);

/* The call is tried on one connection only and fails instead of waiting
 * (a relay to a client host, which polls anyway). */
#define RPCC_ONCE 1u
/* No reply is awaited (NLM's _MSG and _RES calls are one-way): the call
 * ends with status 0 once queued for writing on a connection. */
#define RPCC_NOREPLY 2u

/* A client of prog/vers at addr (IPv4 or IPv6; port 0: ask the
 * portmapper on port 111 of that host). timeout_ms: how long a sent call
 * may wait for its answer before the connection counts as dead (hard
 * calls are then sent again on a new one). NULL when memory is short. */
struct rpcc *rpcc_new(struct loop *l, const struct sockaddr_storage *addr, uint32_t prog,
                      uint32_t vers, uint32_t timeout_ms);
/* Fails every waiting call with -ECANCELED (their callbacks run here) and
 * frees the client. */
void rpcc_free(struct rpcc *c);
/* Sends proc with args[0..len) (the encoded arguments, copied) as cred
 * (AUTH_SYS; AUTH_NONE when cred is NULL or says so). Returns 0 (exactly
 * one callback follows, never from inside this call) or -ENOMEM / -E2BIG
 * (none). */
int rpcc_call(struct rpcc *c, uint32_t proc, const struct cfs_cred *cred, const void *args,
              uint32_t len, unsigned flags, rpcc_cb cb, void *priv);
/* Calls waiting or in flight. */
int rpcc_pending(const struct rpcc *c);

#endif
