/* The NLM v4 shapes libnfs 4.0 lacks (include/nlm.h), composed from its
 * zdr primitives and its nlm4 pieces, in both directions. */
#include "nlm.h"
#include "xdrwalk.h"

#include <errno.h>
#include <string.h>

uint32_t zdr_NLM4_SHAREargs(ZDR *z, NLM4_SHAREargs *a)
{
	return zdr_nlm_cookie(z, &a->cookie) && zdr_nlm4_share(z, &a->share) &&
	       zdr_u_int(z, &a->reclaim);
}

uint32_t zdr_NLM4_SHAREres(ZDR *z, NLM4_SHAREres *r)
{
	return zdr_nlm_cookie(z, &r->cookie) && zdr_nlmstat4(z, &r->stat) &&
	       zdr_int(z, &r->sequence);
}

uint32_t zdr_NLM4_NOTIFYargs(ZDR *z, NLM4_NOTIFYargs *a)
{
	return zdr_string(z, &a->name, NLM4_MAXSTRLEN) && zdr_int(z, &a->state);
}

int nlm_granted_args(const uint8_t *lock_args, uint32_t len, uint8_t *out, uint32_t cap,
                     uint32_t *outlen)
{
	struct xcur c = {lock_args, len, 0, 0};
	size_t cookie_end, lock_start;

	/* LOCK: cookie, block, exclusive, lock, reclaim, state;
	 * GRANTED: cookie, exclusive, lock */
	x_opaque(&c, NLM4_MAXNETOBJ);
	cookie_end = c.pos;
	x_u32(&c);
	lock_start = c.pos;
	if (c.bad || len < lock_start + 8 || len - 4 > cap)
		return -EBADMSG;
	memcpy(out, lock_args, cookie_end);
	memcpy(out + cookie_end, lock_args + lock_start, len - 8 - lock_start);
	*outlen = (uint32_t)(cookie_end + len - 8 - lock_start);
	return 0;
}
