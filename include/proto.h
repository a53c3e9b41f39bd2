/* proto/: the wire. Accepts TCP connections, runs one libnfs server context
 * per connection with the NFSv3 and MOUNT v3 tables, validates and copies
 * each call's arguments into a struct cfs_req, and encodes replies with the
 * saved xid. It knows nothing about the cache. */
#ifndef CFS_PROTO_H
#define CFS_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "loop.h"
#include "req.h"

struct sockaddr_storage;

struct proto_server;

/* Called for every decoded call. The callee owns req and must end it with
 * exactly one proto_reply*() or proto_drop(), now or later. */
typedef void (*proto_submit_fn)(struct cfs_req *req, void *arg);

/* Counters of the wire layer (monotonic except conns_open). */
/* Where a row of proto_counters.def stands in the stats lines. */
enum proto_counter_sec {
	PROTO_SEC_CALLS, /* after clients_connected */
	PROTO_SEC_BYTES, /* after log_lines_suppressed */
};

struct proto_counters {
	int64_t conns_open;
	/* one row each in proto_counters.def, which says what they mean */
#define PROTO_COUNTER(field, stat, sec, type, metric, label, help) uint64_t field;
#include "proto_counters.def"
#undef PROTO_COUNTER
};
extern struct proto_counters proto_counters;

/* Binds cfg->listen and starts accepting. Returns 0 or -errno with err. */
int proto_listen(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit, void *arg,
		 struct proto_server **out, char *err, size_t errlen);
/* Stops accepting and closes every connection (in-flight requests are
 * dropped when they complete). */
void proto_shutdown(struct proto_server *srv);
/* The bound port (useful with listen port 0). */
int proto_port(const struct proto_server *srv);
int proto_client_count(const struct proto_server *srv);

/* Replies with the procedure's result struct (e.g. GETATTR3res *, mountres3 *),
 * encoded with that procedure's encoder, then frees req. If the connection
 * has closed, the reply is dropped. Returns 0, or -errno when the reply
 * could not be queued (the connection is then closed). */
int proto_reply(struct cfs_req *req, void *res);
/* Gives back the buffer a borrowed reply used (proto_reply_read()). */
typedef void (*proto_release_fn)(void *a, void *b);
/* Replies to an NFSv3 READ with res (NFS3_OK), whose data bytes are
 * borrowed, not copied: they must stay unchanged until release(a, b) is
 * called, which happens exactly once, when the reply has been written to
 * the socket or dropped (possibly before this returns). Frees req; returns
 * as proto_reply(). Replies that are kept (duplicate-request cache) or go
 * by UDP are copied as proto_reply() does, and released at once. */
int proto_reply_read(struct cfs_req *req, READ3res *res, proto_release_fn release, void *a,
                     void *b);
/* Replies with an already encoded result body (a forwarded NLM answer,
 * its bytes unchanged), then frees req; returns as proto_reply(). */
int proto_reply_raw(struct cfs_req *req, const void *body, uint32_t len);
/* The call's argument bytes as the client sent them (valid while req
 * lives; decoding did not change them). */
const uint8_t *proto_req_args(const struct cfs_req *req, uint32_t *len);
/* Replies MSG_ACCEPTED with an error accept_stat (e.g. SYSTEM_ERR), frees
 * req. PROG_MISMATCH carries the lowest..highest version the procedure
 * table has for req's program (proc_versions()). These three
 * return as proto_reply() does. */
int proto_reply_accept_error(struct cfs_req *req, uint32_t accept_stat);
/* Replies MSG_ACCEPTED PROG_MISMATCH with the range low..high, frees req. */
int proto_reply_prog_mismatch(struct cfs_req *req, uint32_t low, uint32_t high);
/* Replies MSG_DENIED AUTH_ERROR with auth_stat why, frees req. */
int proto_reply_auth_error(struct cfs_req *req, uint32_t why);
/* Frees req without replying. */
void proto_drop(struct cfs_req *req);
/* 1 while the client connection of req is open. */
int proto_req_alive(const struct cfs_req *req);
/* The client's address as text ("127.0.0.1"), valid while req lives. */
const char *proto_req_peer(const struct cfs_req *req);
/* The client's socket address (struct sockaddr_storage *), or NULL. */
const struct sockaddr_storage *proto_req_peer_addr(const struct cfs_req *req);
/* The number of req's client connection: a TCP connection's, never given
 * to another in this process's life; 0 for a UDP datagram or no client. */
uint64_t proto_req_conn_serial(const struct cfs_req *req);
/* 1 when a and b are the same host: family and address, any port. */
int proto_same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b);

/* Procedure names for logs and stats ("GETATTR", "MNT", ...). */
const char *proto_proc_name(uint32_t prog, uint32_t proc);
/* 1 for the NFSv3 procedures that change something on the server (WRITE,
 * COMMIT, SETATTR and the namespace calls). */
int proto_proc_mutates(uint32_t proc);

/* --- pieces exposed for unit tests and the fuzz harness ----------------- */

/* Walks the XDR arguments of prog version vers, procedure proc, in
 * buf[0..len). Returns 0 when they are well formed and within the limits in
 * req.h, -EBADMSG when not, -ENOSYS for an unknown procedure. */
int proto_check_args(uint32_t prog, uint32_t vers, uint32_t proc, const uint8_t *buf, size_t len);
/* About how many bytes the reply to the call in rec[0..len) can take (a
 * READ's count, a READDIR's maxcount, ...; 512 for the small ones): what
 * the connection may hold for it while memory is short. */
size_t proto_reply_estimate(const uint8_t *rec, size_t len);
/* The RPC call header of one record (RFC 5531). Pointers point into the
 * record. */
struct proto_call_hdr {
	uint32_t xid;
	int have_xid; /* the record was long enough to reply to */
	int bad_cred; /* credential longer than RFC 5531 allows (400 bytes) */
	uint32_t mtype;
	uint32_t rpcvers, prog, vers, proc;
	uint32_t cred_flavor, cred_len;
	const uint8_t *cred_body;
	uint32_t verf_flavor, verf_len;
	size_t args_off; /* arguments start here */
};
/* Parses the call header. Returns 0, or -EBADMSG when the record is not a
 * well-formed CALL (h->have_xid tells whether an error reply is possible). */
int proto_parse_call(const uint8_t *rec, size_t len, struct proto_call_hdr *h);
/* Parses an AUTH_SYS credential body. Returns 0 or -EBADMSG. */
int proto_parse_authsys(const uint8_t *body, uint32_t len, struct cfs_cred *out);
/* Validates buf as arguments of prog version vers, procedure proc, copies
 * it and decodes the copy into a new request (conn NULL). Returns NULL on
 * bad arguments (errno EBADMSG) or no memory. Free with proto_req_free(). */
struct cfs_req *proto_req_decode(uint32_t prog, uint32_t vers, uint32_t proc, const uint8_t *buf,
                                 size_t len);
void proto_req_free(struct cfs_req *req);
/* Runs data through a connection as if a client sent it (over a socket
 * pair, with its replies read and discarded), calling submit for each
 * decoded call; returns when the input is consumed and the connection is
 * idle or closed. For the fuzz harness and tests. 0, or -errno when the
 * socket pair cannot be made. */
int proto_test_feed(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit,
		    void *arg, const uint8_t *data, size_t len);
/* The same, keeping the first outcap bytes the connection sent back (the
 * reply records, with their record marks) in out; *outlen gets their
 * number. */
int proto_test_exchange(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit,
                        void *arg, const uint8_t *data, size_t len, uint8_t *out, size_t outcap,
                        size_t *outlen);

/* One datagram data[0..len) sent to the UDP server from a loopback
 * socket, as a client's call over UDP; the first reply datagram it sends
 * back is kept in out (at most outcap bytes, *outlen). For the fuzz
 * harness and tests. 0, or -errno when the sockets cannot be made. */
int proto_test_datagram(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit,
                        void *arg, const uint8_t *data, size_t len, uint8_t *out, size_t outcap,
                        size_t *outlen);

#endif
