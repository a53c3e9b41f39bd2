/* A growing buffer with XDR (big-endian) encoding, for the hand-made RPC
 * records of the raw test clients (badrpc, churn). */
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

static inline void xb_free(struct xbuf *b)
{
	free(b->d);
	b->d = NULL;
	b->len = b->cap = 0;
}

static inline uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif
