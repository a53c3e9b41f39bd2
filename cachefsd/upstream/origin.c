/* The origin interface (include/origin.h): the dispatch, the NFSv3 backend
 * (the pool of upstream.c, unchanged behind four thin wrappers) and the
 * choice of backend at start. */
#include "origin.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct origin {
	const struct origin_ops *ops;
	void *be;
};

struct origin *origin_new(const struct origin_ops *ops, void *be)
{
	struct origin *o = calloc(1, sizeof(*o));

	if (o == NULL)
		return NULL;
	o->ops = ops;
	o->be = be;
	return o;
}

void origin_stop(struct origin *o)
{
	if (o == NULL)
		return;
	o->ops->stop(o->be);
	free(o);
}

int origin_use_store(struct origin *o, struct store *s, char *err, size_t errlen)
{
	return o->ops->use_store ? o->ops->use_store(o->be, s, err, errlen) : 0;
}

int origin_version(const struct origin *o)
{
	return o->ops->version;
}

int origin_call_for(struct origin *o, uint32_t proc, void *args, const struct cfs_cred *cred,
                    upstream_cb cb, upstream_alive_fn alive, void *priv)
{
	return o->ops->call_for(o->be, proc, args, cred, cb, alive, priv);
}

int origin_call(struct origin *o, uint32_t proc, void *args, const struct cfs_cred *cred,
                upstream_cb cb, void *priv)
{
	return o->ops->call_for(o->be, proc, args, cred, cb, NULL, priv);
}

const struct upstream_info *origin_info(const struct origin *o)
{
	return o->ops->info(o->be);
}

const struct upstream_counters *origin_counters(const struct origin *o)
{
	return o->ops->counters(o->be);
}

int origin_max_inflight(const struct origin *o)
{
	return o->ops->max_inflight(o->be);
}

struct n4_client *origin_nfs4_client(struct origin *o)
{
	return o->ops->nfs4_client ? o->ops->nfs4_client(o->be) : NULL;
}

int origin_fh_upstream(struct origin *o, const void *fh, uint32_t len, uint8_t *out,
                       uint32_t *outlen)
{
	if (len == 0 || len > ORIGIN_FH_MAX)
		return -EINVAL;
	if (o->ops->fh_upstream)
		return o->ops->fh_upstream(o->be, fh, len, out, outlen);
	memcpy(out, fh, len);
	*outlen = len;
	return 0;
}

const struct origin_coh *origin_answer_coh(const struct origin *o)
{
	return o->ops->answer_coh ? o->ops->answer_coh(o->be) : NULL;
}

/* --- NFSv3: upstream.c ---------------------------------------------------- */

static int v3_call_for(void *be, uint32_t proc, void *args, const struct cfs_cred *cred,
                       upstream_cb cb, upstream_alive_fn alive, void *priv)
{
	return upstream_call_for(be, proc, args, cred, cb, alive, priv);
}

static const struct upstream_info *v3_info(const void *be)
{
	return upstream_info(be);
}

static const struct upstream_counters *v3_counters(const void *be)
{
	return upstream_counters(be);
}

static int v3_max_inflight(const void *be)
{
	return upstream_max_inflight(be);
}

static void v3_stop(void *be)
{
	upstream_stop(be);
}

static const struct origin_ops v3_ops = {
    .version = 3,
    .call_for = v3_call_for,
    .info = v3_info,
    .counters = v3_counters,
    .max_inflight = v3_max_inflight,
    .stop = v3_stop,
};

static int v3_start(struct loop *l, const struct cfs_config *cfg, struct origin **out, char *err,
                    size_t errlen)
{
	struct upstream *up = NULL;
	int rc = upstream_start(l, cfg, &up, err, errlen);

	if (rc)
		return rc;
	*out = origin_new(&v3_ops, up);
	if (*out == NULL) {
		upstream_stop(up);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int origin_start(struct loop *l, const struct cfs_config *cfg, struct origin **out, char *err,
                 size_t errlen)
{
	char err3[512];
	int rc;

	*out = NULL;
	if (cfg->upstream_version == CFS_UPV_3)
		return v3_start(l, cfg, out, err, errlen);
	if (cfg->upstream_version == CFS_UPV_4)
		return origin_nfs4_start(l, cfg, out, err, errlen);
	/* auto: NFSv3 where the server offers it (MOUNT of the export and
	 * NFSv3 answer), NFSv4.0 otherwise. A server that is down fails both,
	 * each after upstream_timeout. */
	rc = v3_start(l, cfg, out, err3, sizeof(err3));
	if (rc == 0 || rc == -EINTR || loop_stop_signalled()) {
		if (rc)
			snprintf(err, errlen, "%s", err3);
		return rc;
	}
	/* a warning: a v3 start that failed for a passing reason (the
	 * filer's MOUNT still starting) leaves this daemon on NFSv4.0 until
	 * it restarts; upstream_version 3 pins the version */
	log_warn("upstream_version auto: NFSv3 not offered (%s); trying NFSv4.0", err3);
	rc = origin_nfs4_start(l, cfg, out, err, errlen);
	if (rc && rc != -EINTR) {
		char err4[512];

		snprintf(err4, sizeof(err4), "%s", err);
		snprintf(err, errlen, "neither NFSv3 (%s) nor NFSv4.0 (%s)", err3, err4);
	}
	return rc;
}
