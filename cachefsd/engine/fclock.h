/* The filer's clock as the proxy can know it (fclock.c), for the fresh
 * guard: two changes of a file within one tick of the filer's timestamps
 * leave (size, mtime, ctime) equal, so data is stored only when it was read
 * after the tick of its ctime was over, plus fresh_guard, by the filer's
 * own clock. Private to the engine; pure (no I/O, no clock of its own:
 * every time is a parameter), so its unit test drives it directly.
 *
 * Time domains. "mono": the proxy's CLOCK_MONOTONIC in ms (loop_clock_us()
 * / 1000), which no clock step moves. "filer": the filer's wall clock in
 * ms, as its ctimes are. The estimate is of off = filer - mono, kept as a
 * lower and an upper bound. The proxy's wall clock only enters where the
 * operator reads a skew (filer minus proxy wall clock) and in the one
 * assumption made when nothing is known (FCLOCK_ASSUMED_MS): callers pass
 * wm = wall ms - mono ms.
 *
 * What bounds off:
 *  - a change made through the proxy (a WRITE, SETATTR, CREATE, ... the
 *    filer answered OK, whose wcc data shows the object's ctime moving):
 *    the filer stamped that ctime C between the call's send S and its
 *    answer R, so C - R <= off <= C + g - S (g: the tick of C). Both
 *    directions, as tight as the round trip and the tick;
 *  - any ctime C the filer reports in an answer received at R: the
 *    filer's clock had passed C, so off >= C - R (only a lower bound: an
 *    old file says nothing about how far behind the filer is). These are
 *    kept for FCLOCK_WINDOW_MS only, and never above the upper bound of
 *    changes: a ctime from another clock, or from before the filer's
 *    clock stepped back, must not make files look older than they are.
 * Bounds widen with age by FCLOCK_DRIFT_PPM. Two changes that cannot both
 * be right (the filer's clock stepped) start over from the newer one.
 *
 * Granularity: a ctime whose nanoseconds are zero is taken as whole
 * seconds (two seconds when no odd second was ever seen among them); a
 * nonzero one as 10^k ns, k its trailing decimal zeros. */
#ifndef CFS_FCLOCK_H
#define CFS_FCLOCK_H

#include <stdint.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#define FCLOCK_ASSUMED_MS                                                                          \
	1000 /* with no change seen: the filer is taken as at most this far behind */
#define FCLOCK_WINDOW_MS  60000 /* reported ctimes bound the clock this long */
#define FCLOCK_DRIFT_PPM  200   /* bounds widen by this much of their age */
#define FCLOCK_STAMP_MS   20    /* a kernel stamps times from a clock a tick behind */
#define FCLOCK_WARN_MS    1000  /* a skew known to be larger is logged */
#define FCLOCK_COARSE_MIN 4     /* zero-ns ctimes before "whole seconds" is known */
#define FCLOCK_TWO_S_MIN  16    /* ... and even ones before "two seconds" is */

struct fclock {
	/* from changes through the proxy: off in [lo, hi] as of lo_at/hi_at
	 * (mono ms), each widening from then on */
	int have_changes;
	int64_t lo, hi;
	int64_t lo_at, hi_at;
	/* from reported ctimes: the largest C - R of two windows of
	 * FCLOCK_WINDOW_MS / 2 (the current one starts at win_at) */
	int have_seen[2];
	int64_t seen[2];
	int64_t win_at;
	/* granularity */
	uint64_t ctimes; /* ctimes looked at */
	uint64_t coarse; /* ... with zero nanoseconds */
	int odd_second;  /* a zero-ns ctime had an odd second */
	int fine_exp;    /* finest nonzero ns seen: 10^fine_exp ns (-1: none) */
	uint64_t steps;  /* changes that contradicted the bounds */
	int warned;      /* in a skew episode (logged once) */
};

/* How a fill's data may be kept (fclock_judge()). */
enum fclock_verdict {
	FCLOCK_FRESH,   /* perhaps read within the tick (+ fresh_guard): not stored */
	FCLOCK_SOUND,   /* read after it by the filer's clock as known */
	FCLOCK_ASSUMED, /* only by the assumption (nothing known from changes) */
};

void fclock_init(struct fclock *k);
/* A ctime the filer reported in an answer received at now (mono ms); 1
 * when it raised the lower bound of the current window. */
int fclock_seen(struct fclock *k, int64_t now, const nfstime3 *ctime);
/* A change through the proxy: the call was sent at sent (mono ms; or
 * earlier), answered at now, and the object's ctime moved to ctime. 1 when
 * it contradicted what was known (the bounds started over), else 0. */
int fclock_changed(struct fclock *k, int64_t sent, int64_t now, const nfstime3 *ctime);
/* The tick of a ctime, in ms (at least 1). */
int64_t fclock_tick_ms(const struct fclock *k, const nfstime3 *ctime);
/* Whether data read by READs sent from start (mono ms) on, of a file
 * whose ctime is ctime, may be stored, judged at now: by the filer's
 * clock, the READs came at least guard_ms after the ctime's tick ended. wm:
 * wall ms - mono ms now. */
enum fclock_verdict fclock_judge(const struct fclock *k, int64_t now, int64_t start,
                                 const nfstime3 *ctime, int64_t guard_ms, int64_t wm);
/* Whether what the assumption allowed is now known wrong: the filer is
 * behind by more than FCLOCK_ASSUMED_MS + guard_ms. */
int fclock_assumption_broken(const struct fclock *k, int64_t now, int64_t guard_ms, int64_t wm);

/* What is known, in the proxy's wall-clock terms (filer minus proxy). */
struct fclock_view {
	int known;         /* 0 nothing; 1 a lower bound (reported ctimes); 2 both (changes) */
	int64_t lo_ms;     /* known >= 1 */
	int64_t hi_ms;     /* known == 2 */
	int64_t offset_ms; /* known == 2: the middle; else 0 */
	int64_t error_ms;  /* known == 2: half the width; else -1 */
	uint64_t tick_ns;  /* the granularity taken (1e9 until known) */
	int tick_known;
};
void fclock_view(const struct fclock *k, int64_t now, int64_t wm, struct fclock_view *out);
/* After new samples: 1 when a skew above FCLOCK_WARN_MS is now known and
 * was not (an episode starts: log it), -1 when an episode ends (the skew
 * is no longer known above FCLOCK_WARN_MS / 2), 0 otherwise. */
int fclock_episode(struct fclock *k, int64_t now, int64_t wm);

#endif
