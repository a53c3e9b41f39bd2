/* The NLM v4 shapes libnfs 4.0 lacks (include/nlm.h), composed from its
 * zdr primitives and its nlm4 pieces, in both directions. */
#include "nlm.h"

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
