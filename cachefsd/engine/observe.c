/* Coherence: every upstream reply that carries attributes of a handle
 * (post-op attributes, wcc data, GETATTR, LOOKUP, READDIRPLUS entries)
 * updates the freshest known attributes of that handle; when they differ
 * from the snapshot the cached data was stored under, the data is dropped
 * before any later READ is answered. ACCESS replies and successful READs
 * also record what the caller may do (the evidence a READ from the cache
 * needs). Step 4 of the reply pipeline (reply.c), which hands it every
 * answer that is not STALE; it calls only the metadata cache's records
 * (meta.c). */
#include "engine_int.h"
#include "engine_procs.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

void engine_drop_data(struct engine *e, struct cobj *o, const char *why)
{
	struct store_obj rec;

	cobj_drop_chunks(e->objs, o);
	o->ra_next = 0;
	if (store_obj_get(e->store, o->fh, o->fhlen, &rec) != 0)
		return;
	if (rec.cached_bytes == 0 && !(rec.flags & STORE_OBJ_INLINE))
		return; /* no data to drop */
	if (store_obj_drop(e->store, o->fh, o->fhlen, 0) == 0) {
		e->ctr.data_drops++;
		log_debug("dropped cached data of a file: %s", why);
	}
}

/* --- the filer's clock (fclock.h) ------------------------------------------ */

static int64_t mono_ms(void)
{
	return (int64_t)(loop_clock_us() / 1000);
}

/* The proxy's wall clock minus its monotonic one, in ms. */
static int64_t wall_minus_mono(void)
{
	int64_t m = mono_ms();

	return (int64_t)wall_ms() - m;
}

/* Says once per episode that the clocks differ by more than
 * FCLOCK_WARN_MS, and when they agree again. */
static void clock_episode(struct engine *e, int64_t now)
{
	int64_t wm = wall_minus_mono();
	int ep = fclock_episode(&e->fclock, now, wm);
	struct fclock_view v;

	if (ep == 0)
		return;
	fclock_view(&e->fclock, now, wm, &v);
	if (ep < 0) {
		log_info("the filer's clock agrees with this host's again (%+.1f s, +-%.1f s)",
		         v.offset_ms / 1000.0, v.error_ms / 1000.0);
		return;
	}
	e->ctr.clock_skew_warnings++;
	if (v.known == 2 && v.hi_ms < -FCLOCK_WARN_MS)
		log_warn("the filer's clock runs %.1f s behind this host's (between %.1f and %.1f s, "
		         "from changes made through the proxy): data of a file is stored only once "
		         "the filer's own clock shows it fresh_guard old; check the clocks (NTP)",
		         -v.offset_ms / 1000.0, -v.hi_ms / 1000.0, -v.lo_ms / 1000.0);
	else
		log_warn("the filer's clock runs at least %.1f s ahead of this host's (the file "
		         "times it reports): data of a file is stored only once the filer's own "
		         "clock shows it fresh_guard old; check the clocks (NTP)",
		         v.lo_ms / 1000.0);
}

/* A successful call changed the object whose wcc data is w: when the
 * reply shows its ctime moving, that ctime was stamped by the filer's
 * clock while the call was out. */
static void clock_change(struct engine *e, const struct engine_call *call, const wcc_data *w)
{
	const fattr3 *after = &w->after.post_op_attr_u.attributes;
	const wcc_attr *before = &w->before.pre_op_attr_u.attributes;
	int64_t now = mono_ms();

	/* no "before": a call that changed nothing (CREATE of a name that
	 * is there) would look like one stamped long ago */
	if (!w->before.attributes_follow || !w->after.attributes_follow || call->t_call_us == 0 ||
	    (before->ctime.seconds == after->ctime.seconds &&
	     before->ctime.nseconds == after->ctime.nseconds))
		return;
	if (fclock_changed(&e->fclock, (int64_t)(call->t_call_us / 1000), now, &after->ctime)) {
		e->ctr.clock_steps++;
		log_info("the filer's clock stepped: a change's time does not fit the ones before "
		         "(measured again from it)");
	}
	clock_episode(e, now);
}

void engine_filer_clock(const struct engine *e, struct engine_clock_state *out)
{
	struct fclock_view v;
	int64_t wm = wall_minus_mono();

	fclock_view(&e->fclock, mono_ms(), wm, &v);
	out->known = v.known;
	out->lo_ms = v.lo_ms;
	out->hi_ms = v.hi_ms;
	out->offset_ms = v.offset_ms;
	out->error_ms = v.error_ms;
	out->tick_ns = v.tick_ns;
	out->tick_known = v.tick_known;
}

enum fclock_verdict engine_fresh_judge(struct engine *e, uint64_t start_ms, const fattr3 *a)
{
	/* fresh_guard 0: the guard is off, by the operator's choice (a
	 * filer whose files never change twice within a tick, tests) */
	if (e->cfg->fresh_guard == 0)
		return FCLOCK_SOUND;
	return fclock_judge(&e->fclock, mono_ms(), (int64_t)start_ms, &a->ctime,
	                    (int64_t)e->cfg->fresh_guard * 1000, wall_minus_mono());
}

static uint16_t wall_hour(void)
{
	return (uint16_t)(wall_ms() / 3600000);
}

void engine_guard_of(enum fclock_verdict v, uint8_t *guard, uint16_t *hour)
{
	*guard = v == FCLOCK_ASSUMED ? STORE_GUARD_ASSUMED : STORE_GUARD_SOUND;
	*hour = v == FCLOCK_ASSUMED ? wall_hour() : 0;
}

int engine_stored_trusted(struct engine *e, const struct store_obj *rec)
{
	switch (rec->guard) {
	case STORE_GUARD_SOUND:
		return 1;
	case STORE_GUARD_ASSUMED:
		/* let in on an assumption about the filer's clock: not for
		 * ever (a skew never measured, fixed before a restart, would
		 * leave it wrong for good), and not once the assumption is
		 * known wrong */
		return (uint16_t)(wall_hour() - rec->guard_hour) <= 1 &&
		       !fclock_assumption_broken(&e->fclock, mono_ms(), (int64_t)e->cfg->fresh_guard * 1000,
		                                 wall_minus_mono());
	default:
		return 0; /* judged by the proxy's clock alone (an older build) */
	}
}

/* Replies of calls in flight together arrive in any order (parallel WRITEs
 * over several upstream connections, a GETATTR answered late): within this
 * long of learning attributes, a reply with an older ctime is older news. */
#define REORDER_MS 3000

static int ctime_before(const fattr3 *a, const fattr3 *b)
{
	return a->ctime.seconds < b->ctime.seconds ||
	       (a->ctime.seconds == b->ctime.seconds && a->ctime.nseconds < b->ctime.nseconds);
}

static int time_eq(const nfstime3 *a, const nfstime3 *b)
{
	return a->seconds == b->seconds && a->nseconds == b->nseconds;
}

/* 1 when attrs (with an NFSv4 filer's change attribute chg), from a reply
 * to a call issued at call_us, may be older than what the proxy knows of
 * o and must not replace it. A smaller change attribute under the same
 * ctime is older: the change attributes of Linux nfsd and nfs-ganesha
 * only grow (RFC 7530 promises only that they differ). */
static int outdated(struct engine *e, const struct cobj *o, const fattr3 *attrs,
                    const struct store_chg *chg, uint64_t call_us)
{
	/* o was changed through the proxy in a way no reply described (a
	 * name of it removed or replaced): only calls issued after that
	 * change's reply say what it is now */
	if (o->attrs_stale_us && call_us < o->attrs_stale_us)
		return 1;
	if (!o->have_attrs)
		return 0;
	if (!ctime_before(attrs, &o->attrs) &&
	    !(time_eq(&attrs->ctime, &o->attrs.ctime) && chg->has && o->chg.has &&
	      chg->change < o->chg.change))
		return 0;
	/* a call issued before a change made through the proxy (a slow
	 * fill's READ answered before a truncate) says what was before it */
	if (o->changed_us && call_us < o->changed_us)
		return 1;
	return loop_now(e->loop) - o->attrs_ms < REORDER_MS;
}

void engine_reply_chg(const struct engine *e, const fattr3 *a, struct store_chg *out)
{
	const struct origin_coh *t = e->io->answer_coh ? e->io->answer_coh(e->up) : NULL;

	out->has = 0;
	out->change = 0;
	for (unsigned i = 0; t && i < t->n && i < ORIGIN_COH_MAX; i++) {
		const struct origin_chg *c = &t->c[i];

		if (c->fileid == a->fileid && c->fsid == a->fsid && c->size == a->size &&
		    time_eq(&c->mtime, &a->mtime) && time_eq(&c->ctime, &a->ctime)) {
			out->has = 1;
			out->change = c->change;
			return;
		}
	}
}

void engine_observe_attrs(struct engine *e, const nfs_fh3 *fh, const fattr3 *attrs)
{
	struct cobj *o;
	struct store_obj rec;
	struct store_snap now;
	struct store_chg chg;
	int same;

	if (fh->data.data_len == 0 || fh->data.data_len > NFS3_FHSIZE)
		return;
	/* the filer's clock had passed this ctime (older news too) */
	{
		int64_t t = mono_ms();
		if (fclock_seen(&e->fclock, t, &attrs->ctime))
			clock_episode(e, t);
	}
	o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);
	if (o == NULL)
		return;
	/* an NFSv4 filer's change attribute, where the answer has one for
	 * these attributes (engine_reply_chg()) */
	engine_reply_chg(e, attrs, &chg);
	if (outdated(e, o, attrs, &chg, e->obs_call_us)) {
		cobj_put(e->objs, o);
		return;
	}
	o->attrs_stale_us = 0;
	same = o->have_attrs && time_eq(&o->attrs.ctime, &attrs->ctime) &&
	       time_eq(&o->attrs.mtime, &attrs->mtime) && o->attrs.size == attrs->size;
	/* attributes without a change attribute (a READDIRPLUS entry)
	 * keep the one known when the times say the same version, and
	 * leave none when they do not (the cached data is then not served
	 * until an answer with one comes: a GETATTR, the READ itself) */
	if (!chg.has && same)
		chg = o->chg;
	if (same && chg.has == o->chg.has && chg.change == o->chg.change) {
		/* nothing that matters changed: no store lookup */
		o->attrs = *attrs;
		o->attrs_ms = loop_now(e->loop);
		meta_put_attrs(e, fh, attrs); /* fresh again */
		cobj_put(e->objs, o);
		return;
	}
	if (o->have_attrs && (!time_eq(&o->attrs.ctime, &attrs->ctime) ||
			      (chg.has && o->chg.has && chg.change != o->chg.change)))
		cobj_access_clear(o); /* mode, owner or ACL may have changed */
	o->attrs = *attrs;
	o->chg = chg;
	o->have_attrs = 1;
	o->attrs_ms = loop_now(e->loop);
	meta_put_attrs(e, fh, attrs);
	if (store_obj_get(e->store, o->fh, o->fhlen, &rec) == 0) {
		store_snap_of_chg(attrs, &chg, &now);
		if (!chg.has && rec.snap.has_change) {
			/* attributes without a change attribute (a READDIRPLUS
			 * entry, the first sight after a restart) cannot tell an
			 * NFSv4 filer's versions apart: the times decide whether
			 * the data is gone; whether it is served waits for an
			 * answer with one (read.c's fresh_attrs()), which is
			 * compared with the record then */
			now.has_change = 1;
			now.change = rec.snap.change;
		}
		if (!store_snap_equal(&now, &rec.snap))
			engine_drop_data(e, o, "attributes changed upstream");
	}
	cobj_put(e->objs, o);
}

void engine_observe_post(struct engine *e, const nfs_fh3 *fh, const post_op_attr *pa)
{
	if (pa->attributes_follow)
		engine_observe_attrs(e, fh, &pa->post_op_attr_u.attributes);
}

static void observe_wcc(struct engine *e, const nfs_fh3 *fh, const wcc_data *w)
{
	engine_observe_post(e, fh, &w->after);
}

/* ACCESS's row: what the caller may do, per credential, under the
 * attributes of a successful reply. */
uint32_t engine_observe_access(struct engine *e, const union cfs_args *a,
			       const struct cfs_cred *cred, const void *res)
{
	const ACCESS3res *r = res;
	const nfs_fh3 *fh = &a->access.object;
	const post_op_attr *pa = &r->ACCESS3res_u.resok.obj_attributes;
	struct cobj *o;

	if (r->status != NFS3_OK || !pa->attributes_follow)
		return 0;
	o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);
	if (o == NULL)
		return 0;
	cobj_access_set(o, cred, a->access.access, r->ACCESS3res_u.resok.access,
			&pa->post_op_attr_u.attributes, loop_now(e->loop));
	meta_put_access(e, fh, cobj_access_find(o, cred));
	meta_put_strict_access(e, fh, cobj_access_find(o, cred), &pa->post_op_attr_u.attributes);
	cobj_put(e->objs, o);
	return 0;
}

/* The server answered a call by cred about fh that needs the ACCESS3 bits
 * `bits` (status: its answer; ok: the answer means it was allowed):
 * evidence for answering that credential from the cache later, under the
 * attributes pa (none: nothing is recorded). */
static void answered(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred,
		     nfsstat3 status, int ok, const post_op_attr *pa, uint32_t bits)
{
	struct cobj *o;

	if (!pa->attributes_follow || (!ok && status != NFS3ERR_ACCES) || fh->data.data_len == 0 ||
	    fh->data.data_len > NFS3_FHSIZE)
		return;
	o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);
	if (o == NULL)
		return;
	const fattr3 *at = &pa->post_op_attr_u.attributes;
	struct access_ent *a = cobj_access_find(o, cred);
	/* a walk answers many LOOKUPs in one directory: the record is
	 * written when what is known changes, not for each of them */
	int same = a && a->ctime_s == at->ctime.seconds && a->ctime_ns == at->ctime.nseconds &&
		   (ok ? (a->proven & bits) == bits : (a->refused & bits) == bits);
	cobj_access_answered(o, cred, ok ? bits : 0, ok ? 0 : bits, at, loop_now(e->loop));
	if (!same)
		meta_put_access(e, fh, cobj_access_find(o, cred));
	cobj_put(e->objs, o);
}

uint64_t engine_evidence_age_ms(const struct engine *e)
{
	return (uint64_t)(meta_enabled(e) ? e->cfg->meta_ttl : e->cfg->evidence_ttl) * 1000;
}

enum evidence engine_evidence(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred,
			      uint32_t want, const fattr3 *attrs)
{
	struct cobj *o = cobj_find(e->objs, fh->data.data_val, fh->data.data_len);
	int rule = e->cfg->read_evidence;
	struct access_ent stored;
	enum evidence ev, ev2;

	ev = cobj_evidence(o ? cobj_access_find(o, cred) : NULL, attrs, cred, want, rule,
			   loop_now(e->loop), engine_evidence_age_ms(e));
	if (ev == EV_SERVE || ev == EV_REFUSED || meta_get_access(e, fh, cred, &stored) != 0)
		return ev;
	ev2 = cobj_evidence(&stored, attrs, cred, want, rule, 0, 0); /* meta checked its age */
	return ev2 == EV_UNKNOWN ? ev : ev2;
}

/* READDIRPLUS's row: every entry's attributes; a listing that gave the
 * caller the entries' handles proves what LOOKUPs in the directory would. */
uint32_t engine_observe_entries(struct engine *e, const union cfs_args *a,
				const struct cfs_cred *cred, const void *res)
{
	const READDIRPLUS3res *r = res;
	const entryplus3 *next = r->READDIRPLUS3res_u.resok.reply.entries;
	uint32_t shown = 0;

	(void)a;
	(void)cred;
	while (next) {
		/* libnfs places entries at 4-byte aligned addresses: copy out */
		entryplus3 ent;
		memcpy(&ent, next, sizeof(ent));
		if (ent.name_handle.handle_follows) {
			engine_observe_post(e, &ent.name_handle.post_op_fh3_u.handle,
					    &ent.name_attributes);
			shown |= ACCESS3_LOOKUP;
		}
		next = ent.nextentry;
	}
	return shown;
}

/* The handle an entry of a row is about; NULL: a new object's handle that
 * did not follow. */
static const nfs_fh3 *entry_fh(const struct obs_ent *o, const union cfs_args *a, const void *res)
{
	const post_op_fh3 *pf;

	switch (o->fh_in) {
	case FH_RES:
		return (const nfs_fh3 *)((const char *)res + o->fh_off);
	case FH_RES_OPT:
		pf = (const post_op_fh3 *)((const char *)res + o->fh_off);
		return pf->handle_follows ? &pf->post_op_fh3_u.handle : NULL;
	default:
		return (const nfs_fh3 *)((const char *)a + o->fh_off);
	}
}

static void observe_result(struct engine *e, const struct engine_call *call, void *res);

/* The server's answer to a GETATTR or LOOKUP of fh gave attrs: when they
 * are what the proxy now knows of it (taken, not older news), it has just
 * revalidated the handle (cobj.reval_ms). */
static void reval_stamp(struct engine *e, const nfs_fh3 *fh, const fattr3 *attrs)
{
	struct cobj *o = cobj_find(e->objs, fh->data.data_val, fh->data.data_len);

	if (o && o->have_attrs && o->attrs_stale_us == 0 &&
	    o->attrs.ctime.seconds == attrs->ctime.seconds &&
	    o->attrs.ctime.nseconds == attrs->ctime.nseconds && o->attrs.mode == attrs->mode &&
	    o->attrs.uid == attrs->uid && o->attrs.gid == attrs->gid)
		o->reval_ms = loop_now(e->loop);
}

/* A GETATTR of a handle the upstream called STALE in an answer about it. */
struct stale_check {
	struct engine *e;
	struct cobj *o; /* pinned */
	uint64_t t_us;	/* when it was asked */
	GETATTR3args args;
};

static void stale_check_done(int status, void *res, void *priv)
{
	struct stale_check *sc = priv;
	struct engine *e = sc->e;
	struct cobj *o = sc->o;
	GETATTR3res *r = res;
	nfs_fh3 fh = {{o->fhlen, (char *)o->fh}};

	o->stale_check = 0;
	if (status == 0 && r->status == NFS3ERR_STALE) {
		engine_purge(e, &fh);
	} else if (status == 0 && r->status == NFS3_OK) {
		/* alive: the STALE was about the call (a LOOKUP below a file, a
		 * name too long), not the handle */
		e->obs_call_us = sc->t_us;
		engine_observe_attrs(e, &fh, &r->GETATTR3res_u.resok.obj_attributes);
		e->obs_call_us = UINT64_MAX;
		log_debug("a STALE answer about a handle that is not stale: kept its cache");
	}
	/* no answer: keep everything; the next STALE asks again */
	cobj_put(e->objs, o);
	free(sc);
}

void engine_stale(struct engine *e, const nfs_fh3 *fh, const struct cfs_cred *cred)
{
	struct cobj *o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);
	struct stale_check *sc;

	if (o == NULL)
		return;
	if (o->stale_check || e->stopping || (sc = calloc(1, sizeof(*sc))) == NULL) {
		cobj_put(e->objs, o);
		return;
	}
	sc->e = e;
	sc->o = o;
	sc->t_us = loop_clock_us();
	sc->args.object.data.data_len = o->fhlen;
	sc->args.object.data.data_val = (char *)o->fh;
	o->stale_check = 1;
	e->ctr.stale_checks++;
	if (engine_up_call(e, NFS3_GETATTR, &sc->args, cred, stale_check_done, sc) != 0) {
		o->stale_check = 0;
		cobj_put(e->objs, o);
		free(sc);
	}
}

void engine_purge(struct engine *e, const nfs_fh3 *fh)
{
	struct cobj *o = cobj_find(e->objs, fh->data.data_val, fh->data.data_len);

	if (o) {
		cobj_invalidate(e->objs, o); /* fills in flight too */
		cobj_access_clear(o);
		o->have_attrs = 0;
		o->chg.has = 0;
	}
	store_obj_drop(e->store, fh->data.data_val, fh->data.data_len, 1);
	meta_purge(e, fh);
	e->ctr.stale_purges++;
}

void engine_data_changed(struct engine *e, const nfs_fh3 *fh)
{
	struct cobj *o = cobj_find(e->objs, fh->data.data_val, fh->data.data_len);

	if (o == NULL)
		return; /* nothing of it is known or being read */
	e->ctr.fill_outdated += (uint64_t)cobj_invalidate(e->objs, o);
	o->changed_us = loop_clock_us();
	if (o->changed_us == 0)
		o->changed_us = 1;
}

/* Changed through the proxy without a reply that says how (a removed or
 * replaced name of it): its attributes are forgotten, and replies to calls
 * issued before now may not bring the old ones back (outdated()). */
void engine_attrs_changed(struct engine *e, const nfs_fh3 *fh)
{
	struct cobj *o = cobj_get(e->objs, fh->data.data_val, fh->data.data_len);

	meta_forget_attrs(e, fh);
	if (o == NULL)
		return;
	o->attrs_stale_us = loop_clock_us();
	if (o->attrs_stale_us == 0)
		o->attrs_stale_us = 1;
	cobj_put(e->objs, o);
}

void engine_observe_result(struct engine *e, const struct engine_call *call, void *res)
{
	e->obs_call_us = call->t_call_us; /* 0 (not known): as old as can be */
	observe_result(e, call, res);
	e->obs_call_us = UINT64_MAX;
}

static void observe_result(struct engine *e, const struct engine_call *call, void *res)
{
	union nfs3_res *r = res;
	const union cfs_args *a = &call->args;
	int ok = r->status == NFS3_OK;

	/* what the reply says, entry by entry, in the row's order */
	const struct engine_proc *ep = engine_proc(call->proc);
	uint32_t shown = 0; /* evidence a row's observe_more() found */
	if (ep == NULL)
		return;
	for (const struct obs_ent *o = ep->obs; o < ep->obs + EP_MAXOBS && o->what != OBS_END;
	     o++) {
		if (o->arm != (ok ? ARM_OK : ARM_FAIL))
			continue;
		const void *at = (const char *)res + o->at_off;
		const nfs_fh3 *fh = entry_fh(o, a, res);
		switch (o->what) {
		case OBS_FATTR:
			engine_observe_attrs(e, fh, at);
			if (o->reval)
				reval_stamp(e, fh, at);
			break;
		case OBS_POST:
			if (fh)
				engine_observe_post(e, fh, at);
			if (fh && o->reval && ((const post_op_attr *)at)->attributes_follow)
				reval_stamp(e, fh,
				            &((const post_op_attr *)at)->post_op_attr_u.attributes);
			break;
		case OBS_WCC:
			observe_wcc(e, fh, at);
			if (o->changes && ok)
				clock_change(e, call, at);
			break;
		case OBS_EVIDENCE:
			answered(e, fh, &call->cred, r->status,
				 ok || (o->noent_allowed && r->status == NFS3ERR_NOENT), at,
				 o->bits | shown);
			break;
		case OBS_MORE:
			shown |= ep->observe_more(e, a, &call->cred, res);
			break;
		}
	}
}
