/* The filer's clock as the proxy can know it: fclock.h says what bounds
 * it and why. */
#include "fclock.h"

#include <string.h>

static int64_t ctime_ms(const nfstime3 *t)
{
	return (int64_t)t->seconds * 1000 + (int64_t)(t->nseconds / 1000000);
}

/* How much a bound known for age ms may have drifted. */
static int64_t widen(int64_t age)
{
	return age > 0 ? age * FCLOCK_DRIFT_PPM / 1000000 : 0;
}

static int ns_exp(uint32_t ns)
{
	int e = 0;

	while (e < 8 && ns % 10 == 0) {
		ns /= 10;
		e++;
	}
	return e;
}

void fclock_init(struct fclock *k)
{
	memset(k, 0, sizeof(*k));
	k->fine_exp = -1;
}

static int two_seconds(const struct fclock *k)
{
	return k->coarse >= FCLOCK_TWO_S_MIN && !k->odd_second && k->fine_exp < 0;
}

int64_t fclock_tick_ms(const struct fclock *k, const nfstime3 *ctime)
{
	int64_t ns = 1;

	if (ctime->nseconds == 0)
		return two_seconds(k) ? 2000 : 1000;
	for (int e = ns_exp(ctime->nseconds); e > 0; e--)
		ns *= 10;
	return (ns + 999999) / 1000000;
}

/* The window of reported ctimes is current for FCLOCK_WINDOW_MS / 2; the
 * one before it is kept as long again. */
static void rotate(struct fclock *k, int64_t now)
{
	if (now - k->win_at < FCLOCK_WINDOW_MS / 2)
		return;
	if (now - k->win_at < FCLOCK_WINDOW_MS) {
		k->seen[1] = k->seen[0];
		k->have_seen[1] = k->have_seen[0];
	} else {
		k->have_seen[1] = 0;
	}
	k->have_seen[0] = 0;
	k->win_at = now;
}

/* The lower bound from reported ctimes still in the windows: 1 with *lo. */
static int seen_lo(const struct fclock *k, int64_t now, int64_t *lo)
{
	int have = 0;

	for (int i = 0; i < 2; i++) {
		/* samples of window 0 are at most now - win_at old, of window
		 * 1 half a window older: none older than FCLOCK_WINDOW_MS */
		if (!k->have_seen[i] ||
		    now - k->win_at >= (i ? FCLOCK_WINDOW_MS / 2 : FCLOCK_WINDOW_MS))
			continue;
		if (!have || k->seen[i] > *lo)
			*lo = k->seen[i];
		have = 1;
	}
	if (have)
		*lo -= widen(FCLOCK_WINDOW_MS);
	return have;
}

static int64_t lo_now(const struct fclock *k, int64_t now)
{
	return k->lo - widen(now - k->lo_at);
}

static int64_t hi_now(const struct fclock *k, int64_t now)
{
	return k->hi + widen(now - k->hi_at);
}

/* The best lower bound of off known now: 1 with *lo, 0 when none. */
static int known_lo(const struct fclock *k, int64_t now, int64_t *lo)
{
	int64_t s;
	int have_s = seen_lo(k, now, &s);

	if (k->have_changes) {
		*lo = lo_now(k, now);
		if (have_s) {
			/* never above what changes allow */
			if (s > hi_now(k, now))
				s = hi_now(k, now);
			if (s > *lo)
				*lo = s;
		}
		return 1;
	}
	if (have_s)
		*lo = s;
	return have_s;
}

int fclock_seen(struct fclock *k, int64_t now, const nfstime3 *ctime)
{
	int64_t l = ctime_ms(ctime) - now;

	k->ctimes++;
	if (ctime->nseconds == 0) {
		k->coarse++;
		if (ctime->seconds & 1)
			k->odd_second = 1;
	} else {
		int e = ns_exp(ctime->nseconds);
		if (k->fine_exp < 0 || e < k->fine_exp)
			k->fine_exp = e;
	}
	rotate(k, now);
	if (k->have_seen[0] && l <= k->seen[0])
		return 0;
	k->seen[0] = l;
	k->have_seen[0] = 1;
	return 1;
}

int fclock_changed(struct fclock *k, int64_t sent, int64_t now, const nfstime3 *ctime)
{
	int64_t c = ctime_ms(ctime);
	int64_t l = c - now, h = c + fclock_tick_ms(k, ctime) + FCLOCK_STAMP_MS - sent;

	if (k->have_changes && (l > hi_now(k, now) || h < lo_now(k, now))) {
		/* both cannot be right: the filer's clock stepped. Start over
		 * from this change; ctimes reported before may be from before
		 * the step (too far ahead, if it stepped back): forgotten */
		k->steps++;
		k->lo = l;
		k->hi = h;
		k->lo_at = k->hi_at = now;
		k->have_seen[0] = k->have_seen[1] = 0;
		return 1;
	}
	if (!k->have_changes || l > lo_now(k, now)) {
		k->lo = l;
		k->lo_at = now;
	}
	if (!k->have_changes || h < hi_now(k, now)) {
		k->hi = h;
		k->hi_at = now;
	}
	k->have_changes = 1;
	return 0;
}

enum fclock_verdict fclock_judge(const struct fclock *k, int64_t now, int64_t start,
                                 const nfstime3 *ctime, int64_t guard_ms, int64_t wm)
{
	/* the filer time the READs must have come after */
	int64_t need = ctime_ms(ctime) + fclock_tick_ms(k, ctime) + FCLOCK_STAMP_MS + guard_ms;
	int64_t lo;

	if (known_lo(k, now, &lo) && start + lo >= need)
		return FCLOCK_SOUND;
	/* nothing known from changes: the filer's clock is taken as at most
	 * FCLOCK_ASSUMED_MS behind the proxy's wall clock */
	if (!k->have_changes && start + wm - FCLOCK_ASSUMED_MS >= need)
		return FCLOCK_ASSUMED;
	return FCLOCK_FRESH;
}

int fclock_assumption_broken(const struct fclock *k, int64_t now, int64_t guard_ms, int64_t wm)
{
	return k->have_changes && hi_now(k, now) - wm < -(FCLOCK_ASSUMED_MS + guard_ms);
}

void fclock_view(const struct fclock *k, int64_t now, int64_t wm, struct fclock_view *out)
{
	int64_t lo;

	memset(out, 0, sizeof(*out));
	out->error_ms = -1;
	if (known_lo(k, now, &lo)) {
		out->known = 1;
		out->lo_ms = lo - wm;
	}
	if (k->have_changes) {
		out->known = 2;
		out->hi_ms = hi_now(k, now) - wm;
		out->offset_ms = out->lo_ms + (out->hi_ms - out->lo_ms) / 2;
		out->error_ms = (out->hi_ms - out->lo_ms + 1) / 2;
	}
	out->tick_ns = 1000000000;
	if (k->fine_exp >= 0) {
		out->tick_ns = 1;
		for (int e = 0; e < k->fine_exp; e++)
			out->tick_ns *= 10;
		out->tick_known = 1;
	} else if (k->coarse >= FCLOCK_COARSE_MIN) {
		out->tick_ns = two_seconds(k) ? 2000000000 : 1000000000;
		out->tick_known = 1;
	}
}

int fclock_episode(struct fclock *k, int64_t now, int64_t wm)
{
	struct fclock_view v;

	fclock_view(k, now, wm, &v);
	if (!k->warned && ((v.known >= 1 && v.lo_ms > FCLOCK_WARN_MS) ||
	                   (v.known == 2 && v.hi_ms < -FCLOCK_WARN_MS))) {
		k->warned = 1;
		return 1;
	}
	/* over only when changes show the clocks close again: a lower bound
	 * alone falls whenever the filer is quiet */
	if (k->warned && v.known == 2 && v.lo_ms >= -FCLOCK_WARN_MS / 2 &&
	    v.hi_ms <= FCLOCK_WARN_MS / 2) {
		k->warned = 0;
		return -1;
	}
	return 0;
}
