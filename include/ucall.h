/* A small RPC client over UDP (proto/ucall.c): calls to other hosts' RPC
 * services that libnfs 4.0 cannot make for us. libnfs has the encoders
 * (zdr_*) but its UDP context (rpc_init_udp_context, rpc_bind_udp,
 * rpc_set_udp_destination) is not in its installed headers, and its
 * timeouts give up instead of retransmitting: a datagram RPC client needs
 * both. Used for NSM's SM_NOTIFY and the portmapper GETPORT before it
 * (cachefsd/locks/nsm.c), as sm-notify sends them.
 *
 * Calls carry AUTH_NONE. Each call is sent at once and again after 1 s,
 * 2 s, 4 s ... (at most UCALL_RESEND_MAX_MS apart) until a reply with its
 * xid arrives from the address it was sent to, or until its give-up time.
 * Everything runs on the event loop thread. */
#ifndef CFS_UCALL_H
#define CFS_UCALL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>

struct loop;
struct ucall_client;

#define UCALL_MAX           4096 /* calls in flight; more are refused (-EAGAIN) */
#define UCALL_RESEND_MAX_MS 16000
#define UCALL_RES_MAX       256 /* bytes of a decoded result struct */

/* The outcome of a call: status 0 and res (the decoded result, valid only
 * during the callback), -ETIMEDOUT (no reply by the give-up time), -EPROTO
 * (the reply was an RPC error, or its result did not decode), or
 * -ECANCELED (the client was freed; res NULL). */
typedef void (*ucall_cb)(int status, void *res, void *arg);

/* A client on loop: 0 or -errno. Its sockets are opened on first use. */
int ucall_client_new(struct loop *l, struct ucall_client **out);
/* Ends every call in flight with -ECANCELED, then frees the client. */
void ucall_client_free(struct ucall_client *u);

/* Calls prog/vers/proc at to with args (encoded with enc, now: args may
 * go away after the return); the reply's result is decoded with dec into
 * a zeroed struct of res_size (<= UCALL_RES_MAX). Gives up after
 * giveup_ms. Returns 0 (cb is called exactly once, never before the
 * return) or -errno (-EAGAIN: too many calls in flight; -EINVAL; -ENOMEM;
 * the socket's error): cb is not called then. */
int ucall_call(struct ucall_client *u, const struct sockaddr *to, socklen_t tolen, uint32_t prog,
               uint32_t vers, uint32_t proc, zdrproc_t enc, void *args, zdrproc_t dec,
               size_t res_size, uint64_t giveup_ms, ucall_cb cb, void *arg);

#endif
