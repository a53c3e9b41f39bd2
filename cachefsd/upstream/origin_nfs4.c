/* The NFSv4.0 backend of the origin interface (include/origin.h): nfs4.c's
 * client (include/nfs4up.h) behind the calls the engine makes in NFSv3
 * semantics. What it adds to the client:
 *   - the start: the URL's path is the export's pseudo-filesystem path, the
 *     port the URL's (2049 by default, no portmapper); the root handle is
 *     the handle key (store_fh_set_key) once the store is known;
 *   - NULL answered at once; every other procedure goes to n4_call(), which
 *     builds all of them; one it refused (-EOPNOTSUPP) would be answered
 *     NFS3ERR_NOTSUPP and counted (upstream_unsupported);
 *   - handles longer than 64 bytes: given to clients as 64-byte mapped
 *     handles, and mapped handles from clients turned back into the
 *     filer's, where they cross here (origin_fhmap.c over the store's
 *     map, store_fh_*): nothing above sees a handle over 64 bytes, the
 *     filer never sees a mapped one;
 *   - counters in struct upstream_counters, as the v3 pool's. */
#include "origin.h"
#include "log.h"
#include "nfs3res.h"
#include "nfs4up.h"
#include "origin_fhmap.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct o4;

struct o4_call {
	struct o4 *o;
	uint32_t proc; /* the client's procedure (GETATTR for FSINFO's is sent) */
	upstream_cb cb;
	void *priv;
	uint64_t t_us;
	int status;       /* a deferred answer: its status (< 0) or 0 with res */
	union nfs3_res res; /* a deferred or synthesized answer */
	struct o4_call *next;
};

struct o4 {
	struct loop *loop;
	const struct cfs_config *cfg;
	struct n4_client *c;
	struct upstream_info info;
	struct upstream_counters ctr;
	/* answers given without the filer, sent from the loop (never from
	 * inside call_for) */
	struct o4_call *later_head, *later_tail;
	struct loop_timer *later_timer;
	/* the handle map (o4_use_store); NULL until the engine opened it */
	struct store *store;
	uint8_t root_up[N4_FHSIZE]; /* the filer's root handle: the map's key */
	uint32_t root_up_len;
	/* the coherence tokens of the answer being delivered (answer_coh) */
	const struct origin_coh *cur_coh;
};

/* A fill's budget (engine_up_max_inflight): one connection, but the server
 * takes many calls on it at once. */
#define O4_MAX_INFLIGHT 32
/* libnfs 4.0 takes reply records of at most 1 MiB + 4 KiB (as upstream.c) */
#define O4_RTMAX_CAP (1u << 20)

static void count_answer(struct o4 *o, const struct o4_call *k, int status)
{
	uint64_t rtt = loop_clock_us() - k->t_us;

	o->ctr.replies++;
	o->ctr.rtt_us_sum += rtt;
	if (k->proc < NFS3_NPROCS) {
		o->ctr.rtt_hist[k->proc][cfs_lat_bucket(rtt)]++;
		o->ctr.rtt_us_by_proc[k->proc] += rtt;
	}
	if (upstream_is_rpc_error(status))
		o->ctr.rpc_errors++;
}

static void later_run(struct loop *l, void *arg)
{
	struct o4 *o = arg;
	struct o4_call *k;

	(void)l;
	o->later_timer = NULL;
	while ((k = o->later_head) != NULL) {
		o->later_head = k->next;
		if (o->later_head == NULL)
			o->later_tail = NULL;
		count_answer(o, k, k->status);
		k->cb(k->status, k->status == 0 ? &k->res : NULL, k->priv);
		free(k);
	}
}

/* k is answered from the loop: status < 0, or 0 with k->res */
static int answer_later(struct o4 *o, struct o4_call *k, int status)
{
	if (o->later_timer == NULL) {
		o->later_timer = loop_timer_add(o->loop, 0, 0, later_run, o);
		if (o->later_timer == NULL)
			return -ENOMEM;
	}
	k->status = status;
	k->next = NULL;
	if (o->later_tail)
		o->later_tail->next = k;
	else
		o->later_head = k;
	o->later_tail = k;
	return 0;
}

/* --- answers of the v4 client ------------------------------------------- */

static void chg_add(struct origin_coh *t, const fattr3 *a, uint64_t change)
{
	struct origin_chg *c;

	if (t->n == ORIGIN_COH_MAX)
		return;
	c = &t->c[t->n++];
	c->fsid = a->fsid;
	c->fileid = a->fileid;
	c->size = a->size;
	c->mtime = a->mtime;
	c->ctime = a->ctime;
	c->change = change;
}

static void n4_done(int status, void *res3, const struct n4_coh *coh, void *priv)
{
	struct o4_call *k = priv;
	struct o4 *o = k->o;
	struct ofh_res fhs;
	struct origin_coh toks;

	/* the change attributes the answer came with: the engine's snapshot
	 * of an NFSv4 filer's files (docs/coherence.md) */
	toks.n = 0;
	if (coh && coh->has_change)
		chg_add(&toks, &coh->obj_attrs, coh->change);
	if (coh && coh->has_dir_change)
		chg_add(&toks, &coh->dir_attrs, coh->dir_change);
	if (status == -ENOTSUP || status == -EPROTO) {
		/* a READ the filer refuses with both special stateids, or an
		 * answer that does not decode: the client gets an I/O error, as
		 * for a call the filer keeps dropping */
		static struct log_limit lim;

		log_limited(&lim, CFS_LOG_WARN,
		            "NFSv4 upstream: procedure %u: %s: answered NFS3ERR_IO", k->proc,
		            status == -ENOTSUP ? "READ refused with the anonymous stateid"
		                               : "answer does not decode");
		memset(&k->res, 0, sizeof(k->res));
		k->res.getattr.status = NFS3ERR_IO;
		res3 = &k->res;
		status = 0;
	}
	memset(&fhs, 0, sizeof(fhs));
	if (status == 0) {
		/* the filer's handles over 64 bytes become mapped ones, new
		 * mappings committed before this answer goes on */
		if (ofh_res_encode(o->store, k->proc, res3, &fhs) != 0) {
			memset(&k->res, 0, sizeof(k->res));
			k->res.status = NFS3ERR_JUKEBOX; /* out of memory: try again */
			res3 = &k->res;
		} else if (fhs.lookup_failed) {
			post_op_attr dir = ((LOOKUP3res *)res3)->LOOKUP3res_u.resok.dir_attributes;

			memset(&k->res, 0, sizeof(k->res));
			k->res.lookup.status = fhs.lookup_failed;
			k->res.lookup.LOOKUP3res_u.resfail.dir_attributes = dir;
			res3 = &k->res;
		}
		o->ctr.mapped_handles += fhs.mapped;
		o->ctr.mapped_new += fhs.created;
	}
	if (status == 0 && k->proc == NFS3_READ) {
		const READ3res *r = res3;

		if (r->status == NFS3_OK)
			o->ctr.read_bytes += r->READ3res_u.resok.count;
	}
	count_answer(o, k, status);
	o->cur_coh = status == 0 ? &toks : NULL;
	k->cb(status, status == 0 ? res3 : NULL, k->priv);
	ofh_res_restore(&fhs); /* nfs4.c frees its answer's own handles */
	o->cur_coh = NULL;
	free(k);
}

/* --- the ops ------------------------------------------------------------ */

static int mknod_type_ok(const void *args)
{
	switch (((const MKNOD3args *)args)->what.type) {
	case NF3CHR:
	case NF3BLK:
	case NF3SOCK:
	case NF3FIFO:
		return 1;
	default:
		return 0;
	}
}

static int o4_call_for(void *be, uint32_t proc, void *args, const struct cfs_cred *cred,
                       upstream_cb cb, upstream_alive_fn alive, void *priv)
{
	struct o4 *o = be;
	struct o4_call *k;
	int rc;

	(void)alive; /* the v4 client copies a call's arguments; it is sent anyway */
	if (proc >= NFS3_NPROCS)
		return -EINVAL;
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return -ENOMEM;
	k->o = o;
	k->proc = proc;
	k->cb = cb;
	k->priv = priv;
	k->t_us = loop_clock_us();
	o->ctr.calls++;
	o->ctr.calls_by_proc[proc]++;
	if (proc == NFS3_NULL)
		return answer_later(o, k, 0) == 0 ? 0 : (free(k), -ENOMEM);
	if (proc == NFS3_MKNOD && !mknod_type_ok(args)) {
		/* v3's MKNOD makes devices, sockets and FIFOs only; any other
		 * type is NFS3ERR_BADTYPE, as NFSv3 servers answer (v4's CREATE
		 * has no call for it to become) */
		k->res.mknod.status = NFS3ERR_BADTYPE;
		return answer_later(o, k, 0) == 0 ? 0 : (free(k), -ENOMEM);
	}
	{
		/* mapped handles back to the filer's (n4_call copies args at
		 * once: the caller's handles are put back right after) */
		struct ofh_args fa;

		rc = ofh_args_decode(o->store, proc, args, &fa);
		if (rc) {
			static struct log_limit lim;

			if (rc == -ESTALE)
				o->ctr.stale_mapped++;
			log_limited(&lim, CFS_LOG_INFO,
			            "NFSv4 upstream: procedure %u: a mapped handle %s: answered %s", proc,
			            rc == -ESTALE ? "this cache's index does not know"
			                          : "cannot be read from the index",
			            rc == -ESTALE ? "NFS3ERR_STALE" : "NFS3ERR_IO");
			k->res.status = rc == -ESTALE ? NFS3ERR_STALE : NFS3ERR_IO;
			rc = answer_later(o, k, 0);
			if (rc)
				free(k);
			return rc;
		}
		rc = n4_call(o->c, proc, args, cred, n4_done, k);
		ofh_args_restore(&fa);
	}
	if (rc == -EOPNOTSUPP) {
		static struct log_limit lim;

		o->ctr.unsupported++;
		log_limited(&lim, CFS_LOG_INFO,
		            "NFSv4 upstream: procedure %u is not built: answered NFS3ERR_NOTSUPP", proc);
		k->res.getattr.status = NFS3ERR_NOTSUPP; /* the first member of every result */
		rc = answer_later(o, k, 0);
	}
	if (rc == -ENAMETOOLONG)
		rc = -E2BIG; /* the engine's answer: NFS3ERR_NAMETOOLONG */
	if (rc)
		free(k);
	return rc;
}

static const struct upstream_info *o4_info(const void *be)
{
	return &((const struct o4 *)be)->info;
}

static const struct upstream_counters *o4_counters(const void *be)
{
	/* the connection's state, read when asked */
	struct o4 *o = (struct o4 *)(uintptr_t)be;
	const struct n4_stats *st = n4_stats(o->c);

	o->ctr.resends = st->resends;
	o->ctr.reconnects = st->reconnects;
	o->ctr.connect_attempts = st->connects;
	o->ctr.conns_up = st->up;
	o->ctr.conns_total = 1;
	o->ctr.waiting = st->waiting;
	o->ctr.inflight = st->inflight;
	return &o->ctr;
}

static const struct origin_coh *o4_answer_coh(const void *be)
{
	return ((const struct o4 *)be)->cur_coh;
}

static int o4_max_inflight(const void *be)
{
	(void)be;
	return O4_MAX_INFLIGHT;
}

static void o4_stop(void *be)
{
	struct o4 *o = be;
	struct o4_call *k;

	if (o->later_timer)
		loop_timer_cancel(o->loop, o->later_timer);
	while ((k = o->later_head) != NULL) {
		o->later_head = k->next;
		o->ctr.cancelled++;
		k->cb(-ECANCELED, NULL, k->priv);
		free(k);
	}
	if (o->c)
		n4_stop(o->c);
	free(o);
}

/* The export's root handle is the map's key (docs/design.md, "Handles
 * longer than 64 bytes": every proxy in front of the export learns the
 * same one) and, encoded, the handle MOUNT gives clients; a new mapping of
 * it is committed here, before any client is served. */
static int o4_use_store(void *be, struct store *s, char *err, size_t errlen)
{
	struct o4 *o = be;
	uint8_t fh[STORE_FH_MAX];
	uint32_t len = 0;
	int rc;

	rc = store_fh_set_key(s, o->root_up, o->root_up_len);
	if (rc == 0)
		rc = store_fh_encode(s, o->root_up, o->root_up_len, fh, &len);
	if (rc == 1)
		rc = store_commit(s);
	if (rc < 0) {
		snprintf(err, errlen, "NFSv4 upstream %s: the export's root handle (%u bytes): %s",
		         o->info.url.path, o->root_up_len, strerror(-rc));
		return rc;
	}
	o->store = s;
	memcpy(o->info.root_fh, fh, len);
	o->info.root_fh_len = len;
	if (len != o->root_up_len || memcmp(fh, o->root_up, len) != 0) {
		o->ctr.mapped_handles++;
		log_info("NFSv4 upstream %s: the root handle is %u bytes; handles over 64 bytes are "
		         "given to clients as 64-byte mapped handles (%llu in the index)",
		         o->info.url.path, o->root_up_len, (unsigned long long)store_fh_count(s));
	}
	return 0;
}

static struct n4_client *o4_nfs4_client(void *be)
{
	return ((struct o4 *)be)->c;
}

static int o4_fh_upstream(void *be, const void *fh, uint32_t len, uint8_t *out,
                          uint32_t *outlen)
{
	struct o4 *o = be;
	int rc;

	if (!store_fh_is_mapped(fh, len)) {
		memcpy(out, fh, len);
		*outlen = len;
		return 0;
	}
	if (o->store == NULL)
		return -ESTALE;
	rc = store_fh_decode(o->store, fh, len, out, outlen);
	if (rc == -ESTALE)
		o->ctr.stale_mapped++;
	return rc == 0 || rc == -ESTALE ? rc : -EIO;
}

static const struct origin_ops o4_ops = {
    .version = 4,
    .call_for = o4_call_for,
    .info = o4_info,
    .counters = o4_counters,
    .max_inflight = o4_max_inflight,
    .stop = o4_stop,
    .use_store = o4_use_store,
    .nfs4_client = o4_nfs4_client,
    .fh_upstream = o4_fh_upstream,
    .answer_coh = o4_answer_coh,
};

/* --- start -------------------------------------------------------------- */

static int resolve(const char *host, char *addr, size_t len, char *err, size_t errlen)
{
	struct addrinfo hints, *ai = NULL;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, NULL, &hints, &ai);
	if (rc != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	rc =
	    getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, (socklen_t)len, NULL, 0, NI_NUMERICHOST);
	freeaddrinfo(ai);
	if (rc != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	return 0;
}

int origin_nfs4_start(struct loop *l, const struct cfs_config *cfg, struct origin **out, char *err,
                      size_t errlen)
{
	struct o4 *o = calloc(1, sizeof(*o));
	struct n4_config nc;
	const struct n4_fh *root;
	FSINFO3resok *fi;
	char host[256];
	uint64_t maxread;
	int rc;

	*out = NULL;
	if (o == NULL)
		return -ENOMEM;
	o->loop = l;
	o->cfg = cfg;
	rc = upstream_parse_url(cfg->upstream, &o->info.url, err, errlen);
	if (rc)
		goto fail;
	rc = resolve(o->info.url.host, o->info.addr, sizeof(o->info.addr), err, errlen);
	if (rc)
		goto fail;
	memset(&nc, 0, sizeof(nc));
	snprintf(nc.host, sizeof(nc.host), "%s", o->info.url.host);
	nc.port = o->info.url.nfsport;
	snprintf(nc.path, sizeof(nc.path), "%s", o->info.url.path);
	/* one client ID per daemon: two caches on one host differ by their
	 * directory (a shared id would make each one's SETCLIENTID end the
	 * other's state) */
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = 0;
	snprintf(nc.client_id, sizeof(nc.client_id), "cachefsd/%.60s/%.60s:%d%.60s/%.60s", host,
	         o->info.url.host, nc.port ? nc.port : 2049, o->info.url.path, cfg->cache_dir);
	nc.timeout_s = cfg->upstream_timeout;
	nc.reconnect_max_s = cfg->reconnect_max;
	rc = n4_start(l, &nc, &o->c, err, errlen);
	if (rc)
		goto fail;

	/* the root handle clients get is known once the store is (a long
	 * one is mapped): o4_use_store */
	root = n4_root_fh(o->c);
	memcpy(o->root_up, root->data, root->len);
	o->root_up_len = root->len;

	/* FSINFO, as a v3 server of the export would answer it */
	fi = &o->info.fsinfo;
	maxread = n4_maxread(o->c);
	fi->obj_attributes.attributes_follow = 1;
	fi->obj_attributes.post_op_attr_u.attributes = *n4_root_attr(o->c);
	fi->rtmax = maxread == 0             ? 65536
	            : maxread > O4_RTMAX_CAP ? O4_RTMAX_CAP
	                                     : (uint32_t)maxread;
	fi->rtpref = fi->rtmax;
	fi->rtmult = 4096;
	fi->wtmax = fi->rtmax; /* the start's; FSINFO calls get the filer's maxwrite from nfs4.c */
	fi->wtpref = fi->wtmax;
	fi->wtmult = 4096;
	fi->dtpref = 65536;
	fi->maxfilesize = INT64_MAX;
	fi->time_delta.seconds = 0;
	fi->time_delta.nseconds = 1;
	fi->properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
	o->ctr.conns_total = 1;
	o->info.version = 4;

	*out = origin_new(&o4_ops, o);
	if (*out == NULL) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	log_info("upstream %s:%d%s over NFSv4.0 (client id %s, lease %u s, rtmax %u)", o->info.addr,
	         nc.port ? nc.port : 2049, o->info.url.path, n4_client_id(o->c),
	         n4_stats(o->c)->lease_s, fi->rtmax);
	return 0;

fail:
	if (o->c)
		n4_stop(o->c);
	free(o);
	return rc;
}
