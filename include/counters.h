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
 * its samples). PERCENT: a gauge of percents, a ratio in /metrics (value /
 * 100). AGE: a unix time, in /metrics a gauge of the seconds since (0 while
 * the time is 0 or ahead). */
enum cfs_counter_type {
	CFS_CTR_COUNTER,
	CFS_CTR_GAUGE,
	CFS_CTR_ELSEWHERE,
	CFS_CTR_PERCENT,
	CFS_CTR_AGE
};

/* A gauge in /metrics (no _total), however it is rendered. */
static inline int cfs_counter_is_gauge(enum cfs_counter_type t)
{
	return t == CFS_CTR_GAUGE || t == CFS_CTR_PERCENT || t == CFS_CTR_AGE;
}

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

/* --- counters by procedure (proc_counters.def) --- */

enum cfs_proc_counter {
#define PROC_COUNTER(id, at, prog, first, prefix, sec, type, metric, label, help) CFS_PROC_##id,
#include "proc_counters.def"
#undef PROC_COUNTER
	CFS_PROC_NCOUNTERS
};

/* Where a row's stats lines stand (engine_write_stats()). */
enum cfs_proc_counter_sec {
	CFS_PSEC_CALLS,    /* first */
	CFS_PSEC_UPSTREAM, /* after upstream_calls */
	CFS_PSEC_OUTCOMES, /* after memory_objects */
	CFS_PSEC_LAST,     /* after upstream_cancelled */
};

/* COUNTER: a counter family; HISTOGRAM: the sum, in microseconds, of a
 * histogram that other code renders. */
enum cfs_proc_type { CFS_PTYPE_COUNTER, CFS_PTYPE_HISTOGRAM };

/* The arrays a row reads: its index into the bases a writer is given. */
enum cfs_proc_src { CFS_PSRC_ENGINE, CFS_PSRC_UPSTREAM, CFS_PSRC_OUTCOMES, CFS_PSRC_N };

struct cfs_proc_counter_desc {
	enum cfs_proc_src src;
	size_t offset, stride;  /* of procedure 0 in its base, and between two */
	uint32_t prog;          /* NFS_PROGRAM or MOUNT_PROGRAM */
	uint32_t first, nprocs; /* lines for procedures first .. nprocs-1 */
	const char *prefix;     /* the stats name: prefix + procedure name */
	int sec;
	enum cfs_proc_type type;
	const char *metric;
	const char *label; /* NULL, or key="value" after proc="..." */
	const char *help;  /* NULL for the second and later rows of one family */
};

extern const struct cfs_proc_counter_desc cfs_proc_counter_descs[CFS_PROC_NCOUNTERS];

static inline uint64_t cfs_proc_counter_value(const void *const base[CFS_PSRC_N],
                                              const struct cfs_proc_counter_desc *d, uint32_t p)
{
	return *(const uint64_t *)((const char *)base[d->src] + d->offset + p * d->stride);
}

/* The stats name of row id for procedure p in buf. */
void cfs_proc_stat_name(enum cfs_proc_counter id, uint32_t p, char *buf, size_t len);
/* Writes the stats lines of the rows of section sec: procedure by
 * procedure, a line of each row. */
void cfs_proc_counters_write_stats(FILE *out, const void *const base[CFS_PSRC_N], int sec);
/* Writes the /metrics family of the counter row id and of the rows after it
 * with the same metric: HELP, TYPE, then the samples procedure by
 * procedure. */
void cfs_proc_counters_render(FILE *f, const void *const base[CFS_PSRC_N],
                              enum cfs_proc_counter id);

#endif
