/* Private to proto/: connections and dispatch. */
#ifndef CFS_PROTO_INT_H
#define CFS_PROTO_INT_H

#include <assert.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto.h"

/* Queues an encoded reply on the connection. 0, also when the connection
 * has closed (the reply is dropped); -EIO (cannot encode or write it) or
 * -ENOMEM (cannot count it): the connection is closed then, or at the end
 * of the callback it is in. */
int proto_conn_send(struct proto_conn *conn, uint32_t xid, void *res, zdrproc_t enc, int hint);
/* As proto_conn_send() (TCP only), for a result whose encoding ends in an
 * opaque of length 0: the record says tail_len there and carries the
 * tail's bytes (and XDR padding) from the caller's buffer, which stays
 * borrowed until release(a, b), called exactly once: when the record is
 * written or dropped, or before this returns when it cannot be queued. */
int proto_conn_send_borrowed(struct proto_conn *conn, uint32_t xid, void *res, zdrproc_t enc,
                             const uint8_t *tail, uint32_t tail_len, proto_release_fn release,
                             void *a, void *b);
/* Takes / drops one reference (one request of about bytes of memory,
 * counted against client_memory_max while the connection is open). */
void proto_conn_hold(struct proto_conn *conn, size_t bytes);
void proto_conn_release(struct proto_conn *conn, size_t bytes);
/* The memory a request holds (for the counts above). */
size_t proto_req_size(const struct cfs_req *req);
/* The client's address; whether it came from a privileged port (< 1024);
 * the configuration of its server. */
const struct sockaddr_storage *proto_conn_peer(const struct proto_conn *conn);
int proto_conn_privileged(const struct proto_conn *conn);
const struct cfs_config *c_cfg(const struct proto_conn *conn);
/* 1 for the pseudo-connection of one UDP datagram (its replies go to the
 * sender; it has no stream, no record marks). */
int proto_conn_udp(const struct proto_conn *conn);
/* Hands a decoded request to the submit function of conn's server. */
void proto_conn_submit(struct proto_conn *conn, struct cfs_req *req);

/* Handles one complete RPC record received on conn: replies to what is
 * wrong with it or submits a request. Returns 0, or a negative errno when
 * the connection must be closed: -EBADMSG when the record is not a CALL
 * or too short to reply to, or proto_conn_send()'s error for a reply that
 * could not be queued. */
int proto_handle_record(struct proto_conn *conn, const uint8_t *rec, size_t len);

/* Client hosts (hosts.c): the connections from one address and what they
 * hold together, for each host's fair share of client_memory_max
 * (docs/design.md, "Bounds on what clients can make the proxy hold"). A
 * host lives while it has connections; conn.c keeps its counts. */
#define PROTO_HOST_BUCKETS 256
struct proto_host {
	struct proto_host *chain;	/* its hash bucket */
	struct proto_host *prev, *next; /* every host of the table */
	int family;
	uint8_t addr[16];
	int nconns;
	uint64_t held;	  /* what its connections hold (conn.c's count) */
	uint64_t held_in; /* of which input buffers: records coming in */
	/* refused memory while clients are over the cap: its connections
	 * read only into the room they hold, until a retry (once a second) */
	int paused;
	unsigned reclaim_pass;	  /* the last reclaim that found nothing to close */
	struct proto_conn *conns; /* its connections (conn.c links them) */
};
struct proto_hosts {
	struct proto_host *bucket[PROTO_HOST_BUCKETS];
	struct proto_host *list;
	int n;
};
/* The host of a peer address (the port ignored; an IPv4-mapped IPv6
 * address is its IPv4 host), made when it has no connection yet; counts
 * one connection more. NULL when out of memory. */
struct proto_host *proto_host_get(struct proto_hosts *t, const struct sockaddr_storage *ss);
/* One connection of h fewer; h is freed with its last (it holds nothing
 * then). */
void proto_host_put(struct proto_hosts *t, struct proto_host *h);
/* 1 when h may hold need bytes more as its fair share of cap: every host,
 * each counted at most at what h would hold then, fits in cap (max-min
 * fairness: a host may come up to the level of the others; the hosts that
 * want more than that level share what is left evenly). */
int proto_host_fair(const struct proto_hosts *t, const struct proto_host *h, uint64_t need,
                    uint64_t cap);
/* The host holding the most, above bytes, with input buffers to give back
 * and not marked by reclaim pass; NULL when none. */
struct proto_host *proto_host_biggest(const struct proto_hosts *t, uint64_t above, unsigned pass);

/* The duplicate-request cache (drc.c): finished calls' replies are kept
 * DRC_LIFE_MS, at most DRC_MAX entries (the oldest finished go first). */
#define DRC_MAX	    4096
#define DRC_LIFE_MS (120 * 1000)
struct drc_entry;
enum drc_state { DRC_NEW, DRC_BUSY, DRC_REPLAY };
int drc_wanted(uint32_t prog, uint32_t proc);
/* Looks up (or starts) the entry of a call; *out is NULL when memory ran out. */
enum drc_state drc_begin(const struct sockaddr_storage *peer, uint32_t xid, uint32_t prog,
			 uint32_t proc, const uint8_t *args, size_t len, uint64_t now,
			 struct drc_entry **out);
/* The call's reply body (the encoded result) is kept for retransmissions. */
void drc_done(struct drc_entry *e, const void *reply, uint32_t len, uint64_t now);
/* The call ended without a result to keep (dropped, or an RPC error). */
void drc_abort(struct drc_entry *e);
const void *drc_reply(const struct drc_entry *e, uint32_t *len);
void drc_clear(void);

#endif
