/* The engine: what happens to each client call, its lifecycle and its
 * stats. The top of the engine's files (docs/design.md, "The engine's
 * files").
 *
 * engine_submit() dispatches: READ goes through the data cache (read.c);
 * in ttl mode metadata calls may be answered from the metadata cache
 * (metaanswer.c); calls that change something go through mutate.c; the
 * others are forwarded upstream with the caller's credential and the
 * handle bytes unchanged (forward.c), and the decoded upstream result goes
 * back to the client with the saved xid through the reply pipeline
 * (reply.c). MOUNT is answered by the proxy (mount.c). */
#include "engine_int.h"
#include "engine_procs.h"
#include "log.h"
#include "peers.h"
#include "procs.h"
#include "proto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* index changes wait at most this long for their commit (commit_hook) */
#define COMMIT_BATCH_MS 20

static struct engine_counters *ctr_of(struct engine *e)
{
	return &e->ctr;
}

/* WRITE's row: no more than the upstream takes (knfsd closes the
 * connection on a larger record): a short count is a legal answer, the
 * client writes the rest (RFC 1813 WRITE). */
void engine_write_prepare(struct engine *e, union cfs_args *a)
{
	uint32_t wtmax = engine_up_info(e)->fsinfo.wtmax;
	WRITE3args *w = &a->write;

	if (wtmax && w->count > wtmax)
		w->count = wtmax;
	if (w->data.data_len > w->count)
		w->data.data_len = w->count;
	ctr_of(e)->bytes_written += w->data.data_len;
}

/* A call that changes something: invalidate, then forward. */
static void mutation(struct engine *e, struct cfs_req *req)
{
	const struct engine_proc *ep = engine_proc(req->proc);

	if (ep->prepare)
		ep->prepare(e, &req->args);
	engine_mutate(e, req);
}

/* An NFSv3 call, by its row (engine_procs.c). */
static void nfs_submit(struct engine *e, struct cfs_req *req)
{
	assert(req->proc < ENGINE_NPROCS);
	ctr_of(e)->nfs_calls[req->proc]++;
	cobj_set_now(e->objs, loop_now(e->loop));
	if (proto_proc_mutates(req->proc)) {
		mutation(e, req);
		return;
	}
	/* ask for no more than the proxy carries (a server may always
	 * return less than asked): the row's counts */
	const struct engine_proc *ep = engine_proc(req->proc);
	for (int i = 0; i < ep->nclamp; i++) {
		uint32_t *count = (uint32_t *)((char *)&req->args + ep->clamp[i]);
		if (*count > CFS_MAX_IO)
			*count = CFS_MAX_IO;
	}
	switch (ep->dispatch) {
	case ED_PROXY:
		/* answered here: a client pinging the proxy learns the proxy lives */
		engine_count_reply(e, req, NFS3_OK);
		engine_reply(e, req, NULL);
		return;
	case ED_META:
		if (meta_answer(e, req) != 0 && strict_answer(e, req) != 0)
			engine_forward(e, req);
		return;
	case ED_READ:
		engine_read(e, req);
		return;
	default:
		engine_forward(e, req);
		return;
	}
}

/* A program a room above the engine answers (NLM: cachefsd/locks/locks.c,
 * NSM: cachefsd/locks/nsm.c): the engine hands its calls on, as main.c
 * said (engine_set_room()); PROG_UNAVAIL until then. */
static void room_submit(struct engine *e, struct cfs_req *req)
{
	for (size_t i = 0; i < ENGINE_ROOMS; i++)
		if (e->rooms[i].submit && e->rooms[i].prog == req->prog) {
			e->rooms[i].submit(req, e->rooms[i].arg);
			return;
		}
	proto_reply_accept_error(req, PROG_UNAVAIL);
}

static void nsm_count(struct engine *e, struct cfs_req *req)
{
	e->ctr.nsm_calls[req->proc]++;
	room_submit(e, req);
}

int engine_set_room(struct engine *e, uint32_t prog, proto_submit_fn submit, void *arg)
{
	for (size_t i = 0; i < ENGINE_ROOMS; i++)
		if (e->rooms[i].submit == NULL || e->rooms[i].prog == prog) {
			e->rooms[i].prog = prog;
			e->rooms[i].submit = submit;
			e->rooms[i].arg = arg;
			return 0;
		}
	return -ENOSPC;
}

void engine_set_peers(struct engine *e, struct peers *p)
{
	e->peers = p;
}

void engine_refresh_gauges(struct engine *e)
{
	e->ctr.peers_up = (uint64_t)peers_up(e->peers);
}

struct engine_counters *engine_counters_rw(struct engine *e)
{
	return &e->ctr;
}

/* The programs the engine takes: a program is a row here and its submit
 * function (the wire's rows, proto/procs.c, say which calls reach it). */
static const struct {
	uint32_t prog;
	void (*submit)(struct engine *e, struct cfs_req *req);
} programs[] = {
    {NFS_PROGRAM, nfs_submit},
    {MOUNT_PROGRAM, mount_submit},
    {NSM_PROGRAM, nsm_count},
    {NLM_PROGRAM, room_submit},
};

void engine_submit(struct cfs_req *req, void *arg)
{
	struct engine *e = arg;

	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++) {
		if (programs[i].prog == req->prog) {
			programs[i].submit(e, req);
			return;
		}
	}
	/* proto passes only the programs of its table */
	assert(!"a program the engine does not take");
	proto_reply_accept_error(req, PROG_UNAVAIL);
}

static void commit_tick(struct loop *l, void *arg)
{
	struct engine *e = arg;

	(void)l;
	e->commit_timer = NULL; /* a one-shot timer is gone once it fired */
	store_commit(e->store);
}

/* End of every loop pass. Index changes are committed in batches: a batch
 * that only adds waits for a one-shot timer armed when it was first left
 * open, so it is committed at most COMMIT_BATCH_MS later, busy or idle. A
 * commit writes every B-tree page the batch touched (LMDB without
 * WRITEMAP: a pwrite each), so committing after every call of a cold walk
 * cost about nine writes per file. A batch that removes data or metadata
 * is committed at once; a crash loses at most the last batch of new
 * entries, which leaves "no entry" (the crash contract). After a failed
 * commit (a full or read-only cache filesystem) the next one waits for the
 * store's backoff: the timer is armed for then, not every pass. */
static void commit_hook(struct loop *l, void *arg)
{
	struct engine *e = arg;
	uint64_t wait;

	/* a cull in progress goes on in the next pass, without sleeping, while
	 * its steps evict (store_cull_wanted) */
	if (store_cull_wanted(e->store) && store_cull_step(e->store, 256) > 0 &&
	    store_cull_wanted(e->store))
		loop_pending(l);
	wait = store_commit_wait_ms(e->store);
	if (wait == 0 && !store_commit_deferrable(e->store)) {
		store_commit(e->store);
		return;
	}
	store_pass_end(e->store);
	if (e->commit_timer == NULL)
		e->commit_timer = loop_timer_add(l, wait > COMMIT_BATCH_MS ? wait : COMMIT_BATCH_MS,
		                                 0, commit_tick, e);
}

static void cull_tick(struct loop *l, void *arg)
{
	struct engine *e = arg;

	(void)l;
	store_cull_step(e->store, 256);
	meta_sweep(e);
}

/* Half of MemAvailable: the index read ahead must not push out the rest. */
static uint64_t prefetch_limit(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long kib = 0;
	char line[128];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib ? (uint64_t)kib * 1024 / 2 : 256ull << 20;
}

static void prefetch_work(void *arg)
{
	struct engine *e = arg;

	e->prefetch_bytes =
	    store_index_prefetch(e->cfg->cache_dir, prefetch_limit(), &e->prefetch_stop);
}

static void prefetch_done(void *arg)
{
	struct engine *e = arg;

	if (e->prefetch_bytes >= (1u << 20))
		log_info("cache index: %" PRIu64 " MiB read into the page cache in %" PRIu64 " ms",
			 e->prefetch_bytes >> 20, loop_clock_ms() - e->prefetch_t0_ms);
}

const struct engine_io engine_io_real = {
    .call = origin_call,
    .call_for = origin_call_for,
    .info = origin_info,
    .counters = origin_counters,
    .max_inflight = origin_max_inflight,
    .answer_coh = origin_answer_coh,
    .reply = proto_reply,
    .req_alive = proto_req_alive,
    .reply_read = proto_reply_read,
};

int engine_new(struct loop *l, const struct cfs_config *cfg, struct origin *up,
	       struct engine **out, char *err, size_t errlen)
{
	return engine_new_io(l, cfg, up, &engine_io_real, out, err, errlen);
}

int engine_new_io(struct loop *l, const struct cfs_config *cfg, struct origin *up,
                  const struct engine_io *io, struct engine **out, char *err, size_t errlen)
{
	struct engine *e = calloc(1, sizeof(*e));
	const struct upstream_info *ui = io->info(up);
	struct store_params sp;
	char identity[1400];
	int rc;

	if (e == NULL)
		return -ENOMEM;
	e->loop = l;
	e->cfg = cfg;
	e->io = io;
	e->lookup_prefetch = engine_lookup_prefetch;
	e->obs_call_us = UINT64_MAX;
	loop_set_busy_poll(l, (unsigned)cfg->busy_poll);
	e->up = up;
	e->export_path = strdup(cfg->export_path ? cfg->export_path : ui->url.path);
	if (e->export_path == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	engine_normalize_path(e->export_path);

	/* the cache belongs to one upstream export (host and path; ports may
	 * change) */
	snprintf(identity, sizeof(identity), "nfs://%s%s", ui->url.host, ui->url.path);
	memset(&sp, 0, sizeof(sp));
	sp.dir = cfg->cache_dir;
	sp.identity = identity;
	sp.chunk_size = (uint32_t)cfg->chunk_size;
	sp.inline_max = (uint32_t)cfg->inline_max;
	sp.cache_size = cfg->cache_size;
	sp.brun = cfg->brun;
	sp.bcull = cfg->bcull;
	sp.bstop = cfg->bstop;
	sp.frun = cfg->frun;
	sp.fcull = cfg->fcull;
	sp.fstop = cfg->fstop;
	{
		/* test hook (93-metrics-alerts): a small LMDB map, so that a few
		 * files fill the index */
		const char *t = getenv("CFS_TEST_MAP_SIZE");

		if (t && *t) {
			sp.map_size = strtoull(t, NULL, 0);
			log_warn("CFS_TEST_MAP_SIZE: the cache index's map is %llu bytes",
			         (unsigned long long)sp.map_size);
		}
	}
	rc = store_open(&sp, &e->store, err, errlen);
	if (rc)
		goto fail;
	rc = workers_start(l, cfg->io_threads, &e->workers);
	if (rc) {
		snprintf(err, errlen, "cannot start %d I/O threads: %s", cfg->io_threads,
			 strerror(-rc));
		goto fail;
	}
	e->prefetch_t0_ms = loop_clock_ms();
	workers_submit(e->workers, prefetch_work, prefetch_done, e); /* best effort */
	engine_fills_init(e);
	fclock_init(&e->fclock);
	e->objs = cobj_table_new(cfg->memory_cache, 200000);
	if (e->objs == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	meta_start(e);
	loop_before_sleep(l, commit_hook, e);
	e->cull_timer = loop_timer_add(l, 0, 1000, cull_tick, e);
	*out = e;
	return 0;
fail:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	engine_free(e);
	return rc;
}

void engine_stop(struct engine *e)
{
	if (e == NULL || e->stopping)
		return;
	e->stopping = 1;
	if (e->cull_timer)
		loop_timer_cancel(e->loop, e->cull_timer);
	e->cull_timer = NULL;
	if (e->commit_timer)
		loop_timer_cancel(e->loop, e->commit_timer);
	e->commit_timer = NULL;
	/* finish disk jobs (their completions touch the store), then commit */
	__atomic_store_n(&e->prefetch_stop, 1, __ATOMIC_RELAXED);
	workers_stop(e->workers);
	e->workers = NULL;
	loop_before_sleep_del(e->loop, commit_hook, e);
	if (e->store)
		store_commit(e->store);
}

void engine_free(struct engine *e)
{
	if (e == NULL)
		return;
	engine_stop(e);
	if (e->store)
		store_close(e->store);
	cobj_table_free(e->objs);
	mount_free_all(e);
	engine_access_ahead_drop(e);
	free(e->export_path);
	free(e->inline_buf);
	free(e);
}

const struct cfs_counter_desc engine_counter_descs[] = {
#define ENGINE_COUNTER(field, sec, type, metric, label, help)                                      \
	{#field,                                                                                   \
	 offsetof(struct engine_counters, field),                                                  \
	 ENGINE_SEC_##sec,                                                                         \
	 CFS_CTR_##type,                                                                           \
	 metric,                                                                                   \
	 label,                                                                                    \
	 help},
#include "engine_counters.def"
#undef ENGINE_COUNTER
};
const size_t engine_counter_ndescs = sizeof(engine_counter_descs) / sizeof(engine_counter_descs[0]);

/* The stats lines of the rows of section sec. */
static void write_counters(const struct engine_counters *c, enum engine_counter_sec sec, FILE *out)
{
	cfs_counters_write_stats(out, c, engine_counter_descs, engine_counter_ndescs, (int)sec);
}

/* The stats lines of the upstream's rows of section sec. */
static void write_upstream(const struct upstream_counters *u, enum upstream_counter_sec sec,
                           FILE *out)
{
	cfs_counters_write_stats(out, u, upstream_counter_descs, upstream_counter_ndescs, (int)sec);
}

/* The stats lines of the cache's rows of section sec. */
static void write_store(const struct store_stats *ss, enum store_counter_sec sec, FILE *out)
{
	cfs_counters_write_stats(out, ss, store_counter_descs, store_counter_ndescs, (int)sec);
}

const struct engine_counters *engine_counters(const struct engine *e)
{
	return &e->ctr;
}

const char *engine_export_path(const struct engine *e)
{
	return e->export_path;
}

/* A counter kept by reason: PREFIX_REASON for each reason in [from, to),
 * then PREFIX, their sum. */
static void write_by_reason(FILE *out, const char *prefix, const uint64_t *v, int from, int to,
                            const char *(*name_of)(int))
{
	uint64_t n = 0;

	for (int r = from; r < to; r++) {
		n += v[r];
		fprintf(out, "%s_%s %llu\n", prefix, name_of(r), (unsigned long long)v[r]);
	}
	fprintf(out, "%s %llu\n", prefix, (unsigned long long)n);
}

void engine_dump_stats(const struct engine *e, FILE *out)
{
	const struct engine_counters *c = &e->ctr;

	fprintf(out, "%-12s %12s %12s %14s\n", "procedure", "calls", "errors", "avg latency");
	for (uint32_t p = 0; p < ENGINE_NPROCS; p++) {
		if (c->nfs_calls[p] == 0)
			continue;
		fprintf(out, "%-12s %12llu %12llu %12.0fus\n", proto_proc_name(NFS_PROGRAM, p),
			(unsigned long long)c->nfs_calls[p], (unsigned long long)c->nfs_errors[p],
			c->nfs_latency_us[p] ? (double)c->nfs_latency_us[p] / (double)c->nfs_calls[p]
					     : 0.0);
	}
	{
		struct store_stats ss;
		store_get_stats(e->store, &ss);
		fprintf(out, "cache objects            %llu\n", (unsigned long long)ss.objects);
		fprintf(out, "cache bytes              %llu\n", (unsigned long long)ss.bytes);
		fprintf(out, "evictions                %llu\n", (unsigned long long)ss.evictions);
		fprintf(out, "fill stopped             %d (%s)\n", (int)ss.fill_stopped,
		        store_fill_reason_name(ss.fill_reason));
	}
	fprintf(out, "read hits/misses/pass    %llu/%llu/%llu\n", (unsigned long long)c->read_hits,
		(unsigned long long)c->read_misses, (unsigned long long)c->read_passthrough);
	fprintf(out, "bytes from cache/fills   %llu/%llu\n", (unsigned long long)c->bytes_from_cache,
		(unsigned long long)c->fill_bytes);
	fprintf(out, "checksum failures        %llu\n", (unsigned long long)c->checksum_failures);
	fprintf(out, "bytes read by clients    %llu\n", (unsigned long long)c->bytes_read);
	fprintf(out, "bytes written by clients %llu\n", (unsigned long long)c->bytes_written);
	fprintf(out, "upstream failures        %llu\n", (unsigned long long)c->upstream_failures);
}

void engine_write_stats(const struct engine *e, FILE *out)
{
	const struct engine_counters *c = &e->ctr;
	const struct upstream_counters *u = engine_up_counters(e);
	uint64_t oc[ENGINE_NPROCS][ENGINE_NOUTCOMES];
	const void *const bases[CFS_PSRC_N] = {c, u, oc};
	struct store_stats ss;

	store_get_stats(e->store, &ss);
	engine_outcomes(e, oc);
#define KV(name, v) fprintf(out, "%s %llu\n", name, (unsigned long long)(v))
	cfs_proc_counters_write_stats(out, bases, CFS_PSEC_CALLS);
	write_counters(c, ENGINE_SEC_READ, out);
	{
		/* how fills fetch chunks, and whether the upstream lets them */
		const FSINFO3resok *fi = &engine_up_info(e)->fsinfo;
		struct engine_fill_state fs;

		engine_fill_state(e, &fs);
		KV("upstream_version", engine_up_info(e)->version);
		KV("upstream_rtmax", fi->rtmax);
		KV("upstream_rtpref", fi->rtpref);
		KV("upstream_wtmax", fi->wtmax);
		KV("fill_read_size", fs.read_size);
		KV("fill_reads_per_chunk", fs.reads_per_chunk);
		KV("fills_blocked", fs.blocked);
		write_counters(c, ENGINE_SEC_FILL, out);
	}
	{
		/* the filer's clock, as the fresh guard measures it */
		struct engine_clock_state cl;

		engine_filer_clock(e, &cl);
		KV("filer_clock_known", cl.known);
		fprintf(out, "filer_clock_offset_ms %lld\n", (long long)cl.offset_ms);
		fprintf(out, "filer_clock_error_ms %lld\n", (long long)cl.error_ms);
		KV("filer_time_granularity_ns", cl.tick_ns);
		KV("filer_time_granularity_known", cl.tick_known);
	}
	write_counters(c, ENGINE_SEC_META, out);
	KV("meta_records", store_meta_count(e->store));
	KV("fhmap_records", store_fh_count(e->store));
	write_counters(c, ENGINE_SEC_WRITER, out);
	write_store(&ss, STORE_SEC_CACHE, out);
	{
		uint64_t v[STORE_DMG_N];

		for (int r = 0; r < STORE_DMG_N; r++)
			v[r] = ss.index_recoveries[r];
		write_by_reason(out, "index_recoveries", v, STORE_DMG_NONE + 1, STORE_DMG_N,
		                store_damage_name);
	}
	write_store(&ss, STORE_SEC_INDEX, out);
	/* the one value that is a word: cachefsctl --json quotes it */
	fprintf(out, "fill_stopped_reason %s\n", store_fill_reason_name(ss.fill_reason));
	write_by_reason(out, "fills_refused", ss.fills_refused, STORE_FILL_ON + 1, STORE_REFUSED_N,
	                store_refused_name);
	write_store(&ss, STORE_SEC_SPACE, out);
	write_upstream(u, UPSTREAM_SEC_CALLS, out);
	cfs_proc_counters_write_stats(out, bases, CFS_PSEC_UPSTREAM);
	write_upstream(u, UPSTREAM_SEC_SENDS, out);
	KV("upstream_conns_up", u->conns_up);
	KV("upstream_waiting", u->waiting);
	write_counters(c, ENGINE_SEC_UPSTREAM, out);
	KV("memory_chunks_bytes", cobj_memory_used(e->objs));
	KV("memory_objects", cobj_count(e->objs));
	/* for the operator interfaces (docs/operations.md) */
	cfs_proc_counters_write_stats(out, bases, CFS_PSEC_OUTCOMES);
	write_counters(c, ENGINE_SEC_OPS, out);
	write_store(&ss, STORE_SEC_OLDEST, out);
	write_upstream(u, UPSTREAM_SEC_BYTES, out);
	KV("upstream_inflight", u->inflight);
	KV("upstream_conns_total", u->conns_total);
	write_counters(c, ENGINE_SEC_MOUNT, out);
	write_upstream(u, UPSTREAM_SEC_LAST, out);
	cfs_proc_counters_write_stats(out, bases, CFS_PSEC_LAST);
#undef KV
}

void engine_outcomes(const struct engine *e, uint64_t out[ENGINE_NPROCS][ENGINE_NOUTCOMES])
{
	memcpy(out, e->ctr.nfs_outcomes, sizeof(e->ctr.nfs_outcomes));
	out[NFS3_READ][ENGINE_HIT] = e->ctr.read_hits;
	out[NFS3_READ][ENGINE_MISS] = e->ctr.read_misses;
}

void engine_cache_stats(const struct engine *e, struct store_stats *out)
{
	store_get_stats(e->store, out);
}

struct store *engine_store(struct engine *e)
{
	return e->stopping ? NULL : e->store;
}

struct workers *engine_workers(struct engine *e)
{
	return e->stopping ? NULL : e->workers;
}

uint64_t engine_memory_used(const struct engine *e)
{
	return cobj_memory_used(e->objs);
}

int engine_invalidate_fh(struct engine *e, const void *fh, uint32_t fhlen)
{
	nfs_fh3 h;
	struct cobj *o;

	if (fhlen == 0 || fhlen > NFS3_FHSIZE)
		return -EINVAL;
	h.data.data_len = fhlen;
	h.data.data_val = (char *)fh;
	/* as for NFS3ERR_STALE (engine_purge), but counted apart */
	o = cobj_find(e->objs, fh, fhlen);
	if (o) {
		cobj_drop_chunks(e->objs, o);
		cobj_access_clear(o);
		o->have_attrs = 0;
		o->chg.has = 0;
		o->ra_next = 0;
	}
	store_obj_drop(e->store, fh, fhlen, 1);
	meta_purge(e, &h);
	ctr_of(e)->invalidations++;
	return 0;
}

void engine_invalidate_meta(struct engine *e)
{
	/* every record, whatever its type byte */
	for (int b = 0; b < 256; b++) {
		uint8_t prefix = (uint8_t)b;
		store_meta_del_prefix(e->store, &prefix, 1);
	}
}

void engine_reconfigure(struct engine *e)
{
	struct store_params sp;

	memset(&sp, 0, sizeof(sp));
	sp.cache_size = e->cfg->cache_size;
	sp.brun = e->cfg->brun;
	sp.bcull = e->cfg->bcull;
	sp.bstop = e->cfg->bstop;
	sp.frun = e->cfg->frun;
	sp.fcull = e->cfg->fcull;
	sp.fstop = e->cfg->fstop;
	store_set_limits(e->store, &sp);
	loop_set_busy_poll(e->loop, (unsigned)e->cfg->busy_poll);
	if (!meta_enabled(e) && store_meta_count(e->store) > 0) {
		engine_invalidate_meta(e);
		log_info("strict mode: dropped the metadata cache");
	}
}
