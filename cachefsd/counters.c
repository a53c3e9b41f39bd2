/* Writes out lists of counters (counters.h): stats lines and /metrics
 * families. */
#include "counters.h"

void cfs_counters_write_stats(FILE *out, const void *base, const struct cfs_counter_desc *d,
                              size_t n, int sec)
{
	for (size_t i = 0; i < n; i++)
		if (d[i].sec == sec)
			fprintf(out, "%s %llu\n", d[i].name,
			        (unsigned long long)cfs_counter_value(base, &d[i]));
}

void cfs_counter_metric(const struct cfs_counter_desc *d, char *buf, size_t len)
{
	if (d->metric)
		snprintf(buf, len, "%s", d->metric);
	else
		snprintf(buf, len, "cachefsd_%s%s", d->name,
		         d->type == CFS_CTR_GAUGE ? "" : "_total");
}

void cfs_counters_render(FILE *f, const void *base, const struct cfs_counter_desc *d, size_t n)
{
	char name[96];

	for (size_t i = 0; i < n; i++) {
		unsigned long long v = (unsigned long long)cfs_counter_value(base, &d[i]);

		if (d[i].type == CFS_CTR_ELSEWHERE)
			continue;
		cfs_counter_metric(&d[i], name, sizeof(name));
		if (d[i].help)
			fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, d[i].help, name,
			        d[i].type == CFS_CTR_GAUGE ? "gauge" : "counter");
		if (d[i].label)
			fprintf(f, "%s{%s} %llu\n", name, d[i].label, v);
		else
			fprintf(f, "%s %llu\n", name, v);
	}
}
