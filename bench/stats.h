/* stats.h — the bench's statistics: mean and standard error of the mean.
 *
 * The bench reports mean ± SEM over n measured runs, SEM = s / sqrt(n) with
 * s the sample standard deviation (n - 1 in the denominator). With n = 1
 * there is no spread to estimate: sd and sem are 0 and `spread` is 0, so a
 * report can print "n/a" instead of a misleading ± 0. */
#ifndef CACHEFSD_BENCH_STATS_H
#define CACHEFSD_BENCH_STATS_H

#include <stddef.h>

struct bstat {
	size_t n;
	double mean;
	double sd;  /* sample standard deviation (n - 1) */
	double sem; /* sd / sqrt(n) */
	double min, max;
	int spread; /* 1 when n >= 2 (sd and sem are estimates) */
};

/* Statistics of x[0..n). Returns 0, or -1 when n == 0 (out is zeroed).
 * Two-pass (mean first), so large offsets do not lose precision. */
int bstat_compute(const double *x, size_t n, struct bstat *out);

/* Ratio a / b of two means with its standard error by first-order error
 * propagation of independent samples:
 *   r = a/b, se(r) = |r| * sqrt((sem_a/a)^2 + (sem_b/b)^2).
 * Returns 0, or -1 when b's mean is 0 or either has n == 0. */
int bstat_ratio(const struct bstat *a, const struct bstat *b, double *ratio, double *se);

#endif
