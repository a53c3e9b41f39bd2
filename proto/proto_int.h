/* Private to proto/: connections and dispatch. */
#ifndef CFS_PROTO_INT_H
#define CFS_PROTO_INT_H

#include <assert.h>

#include "proto.h"

/* Queues an encoded reply on the connection (if still open). */
int proto_conn_send(struct proto_conn *conn, uint32_t xid, void *res, zdrproc_t enc, int hint);
/* Takes / drops one reference (one request) to the connection. */
void proto_conn_hold(struct proto_conn *conn);
void proto_conn_release(struct proto_conn *conn);
/* Hands a decoded request to the submit function of conn's server. */
void proto_conn_submit(struct proto_conn *conn, struct cfs_req *req);

/* Handles one complete RPC record received on conn: replies to what is
 * wrong with it or submits a request. Returns 0, or -1 when the connection
 * must be closed (not a CALL, or too short to reply to). */
int proto_handle_record(struct proto_conn *conn, const uint8_t *rec, size_t len);

#endif
