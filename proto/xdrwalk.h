/* Private to proto/: the cursor over XDR bytes that the argument walkers
 * (procs.c) and the call-header parser (xdrcheck.c) share. Every read is
 * bounded by len; a short or out-of-range field sets bad, after which
 * reads return 0 and the walk's result is "not well formed". */
#ifndef CFS_XDRWALK_H
#define CFS_XDRWALK_H

#include <stddef.h>
#include <stdint.h>

#include "req.h"

struct xcur {
	const uint8_t *p;
	size_t len, pos;
	int bad;
};

static inline uint32_t x_u32(struct xcur *c)
{
	uint32_t v;

	if (c->bad || c->len - c->pos < 4) {
		c->bad = 1;
		return 0;
	}
	v = (uint32_t)c->p[c->pos] << 24 | (uint32_t)c->p[c->pos + 1] << 16 |
	    (uint32_t)c->p[c->pos + 2] << 8 | c->p[c->pos + 3];
	c->pos += 4;
	return v;
}

static inline void x_skip(struct xcur *c, size_t n)
{
	if (c->bad || c->len - c->pos < n) {
		c->bad = 1;
		return;
	}
	c->pos += n;
}

/* variable-length opaque or string: length, bytes, padding to 4 */
static inline void x_opaque(struct xcur *c, uint32_t max)
{
	uint32_t n = x_u32(c);

	if (n > max) {
		c->bad = 1;
		return;
	}
	x_skip(c, ((size_t)n + 3) & ~(size_t)3);
}

static inline uint32_t x_bool(struct xcur *c)
{
	uint32_t v = x_u32(c);

	if (v > 1)
		c->bad = 1;
	return v;
}

static inline uint32_t x_enum(struct xcur *c, uint32_t lo, uint32_t hi)
{
	uint32_t v = x_u32(c);

	if (v < lo || v > hi)
		c->bad = 1;
	return v;
}

static inline void x_fh(struct xcur *c)
{
	x_opaque(c, NFS3_FHSIZE);
}

static inline void x_name(struct xcur *c)
{
	x_opaque(c, CFS_MAX_NAME);
}

static inline void x_diropargs(struct xcur *c)
{
	x_fh(c);
	x_name(c);
}

#endif
