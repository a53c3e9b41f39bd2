/* stats.c — mean, SEM and ratios for the bench (see stats.h). */
#include "stats.h"

#include <math.h>
#include <string.h>

int bstat_compute(const double *x, size_t n, struct bstat *out)
{
	double sum = 0, ss = 0;

	memset(out, 0, sizeof(*out));
	if (n == 0)
		return -1;
	out->n = n;
	out->min = out->max = x[0];
	for (size_t i = 0; i < n; i++) {
		sum += x[i];
		if (x[i] < out->min)
			out->min = x[i];
		if (x[i] > out->max)
			out->max = x[i];
	}
	out->mean = sum / (double)n;
	if (n < 2)
		return 0;
	for (size_t i = 0; i < n; i++)
		ss += (x[i] - out->mean) * (x[i] - out->mean);
	out->sd = sqrt(ss / (double)(n - 1));
	out->sem = out->sd / sqrt((double)n);
	out->spread = 1;
	return 0;
}

int bstat_ratio(const struct bstat *a, const struct bstat *b, double *ratio, double *se)
{
	if (a->n == 0 || b->n == 0 || b->mean == 0)
		return -1;
	*ratio = a->mean / b->mean;
	double ra = a->mean != 0 ? a->sem / a->mean : 0, rb = b->sem / b->mean;
	*se = fabs(*ratio) * sqrt(ra * ra + rb * rb);
	return 0;
}
