/* A growing buffer with XDR (big-endian) encoding, for the hand-made RPC
 * records of the raw test clients (badrpc, churn, hostile), and the ONC RPC call
 * header (RFC 5531) they build. */
#ifndef CFS_TEST_XDRBUF_H
#define CFS_TEST_XDRBUF_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xbuf {
	uint8_t *d;
	size_t len;
	size_t cap;
};

/* Appends n bytes of p (zeros when p is NULL). */
static inline void xb_raw(struct xbuf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *d = realloc(b->d, cap);
		if (!d) {
			perror("realloc");
			exit(2);
		}
		b->d = d;
		b->cap = cap;
	}
	if (p)
		memcpy(b->d + b->len, p, n);
	else
		memset(b->d + b->len, 0, n);
	b->len += n;
}

static inline void xb_u32(struct xbuf *b, uint32_t v)
{
	uint8_t be[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	xb_raw(b, be, 4);
}

static inline void xb_u64(struct xbuf *b, uint64_t v)
{
	xb_u32(b, (uint32_t)(v >> 32));
	xb_u32(b, (uint32_t)v);
}

/* variable-length opaque: length, bytes (NULL = zeros), pad to 4 */
static inline void xb_opaque(struct xbuf *b, const void *p, uint32_t n)
{
	xb_u32(b, n);
	xb_raw(b, p, n);
	xb_raw(b, NULL, (4 - (n & 3)) & 3);
}

/* Fills in the record marker reserved at offset mark (an xb_u32(b, 0)
 * before the record): one last fragment holding what followed it. */
static inline void xb_record_end(struct xbuf *b, size_t mark)
{
	uint32_t m = 0x80000000u | (uint32_t)(b->len - mark - 4);
	uint8_t be[4] = {(uint8_t)(m >> 24), (uint8_t)(m >> 16), (uint8_t)(m >> 8), (uint8_t)m};
	memcpy(b->d + mark, be, 4);
}

static inline void xb_free(struct xbuf *b)
{
	free(b->d);
	b->d = NULL;
	b->len = b->cap = 0;
}

/* --- ONC RPC calls ---------------------------------------------------------- */

/* xid, CALL, rpcvers, prog, vers, proc (cred and verf follow) */
static inline void xb_call_hdr(struct xbuf *b, uint32_t xid, uint32_t rpcvers, uint32_t prog,
                               uint32_t vers, uint32_t proc)
{
	xb_u32(b, xid);
	xb_u32(b, 0); /* CALL */
	xb_u32(b, rpcvers);
	xb_u32(b, prog);
	xb_u32(b, vers);
	xb_u32(b, proc);
}

/* Who the AUTH_SYS credentials of a tool's calls name: uid 0, gid 0, on
 * machine host, with the tool's own stamp. */
struct authsys {
	uint32_t stamp;
	const char *host;
};

/* an authsys_parms body: stamp, machinename, uid 0, gid 0, gids 0..ngids-1 */
static inline void xb_authsys_body(struct xbuf *b, const struct authsys *a, uint32_t ngids)
{
	xb_u32(b, a->stamp);
	xb_opaque(b, a->host, (uint32_t)strlen(a->host));
	xb_u32(b, 0);
	xb_u32(b, 0);
	xb_u32(b, ngids);
	for (uint32_t i = 0; i < ngids; i++)
		xb_u32(b, i);
}

/* an AUTH_SYS credential with one group (gid 0) */
static inline void xb_cred_sys(struct xbuf *b, const struct authsys *a)
{
	struct xbuf body = {0};

	xb_authsys_body(&body, a, 1);
	xb_u32(b, 1); /* AUTH_SYS */
	xb_opaque(b, body.d, (uint32_t)body.len);
	xb_free(&body);
}

static inline void xb_auth_none(struct xbuf *b)
{
	xb_u32(b, 0); /* AUTH_NONE */
	xb_u32(b, 0);
}

/* a well-formed call header: RPC version 2, AUTH_SYS credential, AUTH_NONE
 * verifier */
static inline void xb_call(struct xbuf *b, const struct authsys *a, uint32_t xid, uint32_t prog,
                           uint32_t vers, uint32_t proc)
{
	xb_call_hdr(b, xid, 2, prog, vers, proc);
	xb_cred_sys(b, a);
	xb_auth_none(b);
}

static inline uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif
