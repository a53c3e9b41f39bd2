/* Lists of counters: the rows of the X-macro lists (engine_counters.def,
 * proto_counters.def, upstream_counters.def) as data, for the code that
 * writes them out: the stats lines and the /metrics families. One row is
 * one uint64_t field of a counters struct. */
#ifndef CFS_COUNTERS_H
#define CFS_COUNTERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a row is in /metrics. ELSEWHERE: the value is the sample
 * metric{label} of a family that other code renders (no label: the sum of
 * its samples). */
enum cfs_counter_type { CFS_CTR_COUNTER, CFS_CTR_GAUGE, CFS_CTR_ELSEWHERE };

struct cfs_counter_desc {
	const char *name; /* the stats name */
	size_t offset;    /* of the field in its counters struct */
	int sec;          /* where its stats line stands: the list's own enum */
	enum cfs_counter_type type;
	const char *metric; /* NULL: cachefsd_<name>_total, or cachefsd_<name> for a gauge */
	const char *label;  /* NULL, or key="value" */
	const char *help;   /* NULL for the second and later samples of one family */
};

/* The value of row d in the counters struct at base. */
static inline uint64_t cfs_counter_value(const void *base, const struct cfs_counter_desc *d)
{
	return *(const uint64_t *)((const char *)base + d->offset);
}

/* Writes "name value" lines for the rows of section sec, in the list's
 * order. */
void cfs_counters_write_stats(FILE *out, const void *base, const struct cfs_counter_desc *d,
                              size_t n, int sec);
/* Writes the /metrics families of the rows (not the ELSEWHERE ones), in the
 * list's order: the rows of one family are adjacent and the first carries
 * the HELP. */
void cfs_counters_render(FILE *f, const void *base, const struct cfs_counter_desc *d, size_t n);
/* The metric name of row d in buf (its own, or made from the stats name). */
void cfs_counter_metric(const struct cfs_counter_desc *d, char *buf, size_t len);

#endif
