/* Writes out lists of counters (counters.h): stats lines and /metrics
 * families. */
#include "counters.h"

#include <string.h>
#include <time.h>

#include "engine.h"
#include "proto.h"
#include "store.h"
#include "upstream.h"

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
		         cfs_counter_is_gauge(d->type) ? "" : "_total");
}

void cfs_counters_render(FILE *f, const void *base, const struct cfs_counter_desc *d, size_t n)
{
	const uint64_t now = (uint64_t)time(NULL);
	char name[96];

	for (size_t i = 0; i < n; i++) {
		unsigned long long v = (unsigned long long)cfs_counter_value(base, &d[i]);

		if (d[i].type == CFS_CTR_ELSEWHERE)
			continue;
		cfs_counter_metric(&d[i], name, sizeof(name));
		if (d[i].help)
			fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, d[i].help, name,
			        cfs_counter_is_gauge(d[i].type) ? "gauge" : "counter");
		if (d[i].label)
			fprintf(f, "%s{%s} ", name, d[i].label);
		else
			fprintf(f, "%s ", name);
		if (d[i].type == CFS_CTR_PERCENT)
			fprintf(f, "%.2f\n", (double)v / 100.0);
		else if (d[i].type == CFS_CTR_AGE)
			fprintf(f, "%llu\n", v && now > v ? (unsigned long long)(now - v) : 0ULL);
		else
			fprintf(f, "%llu\n", v);
	}
}

/* --- the cache's figures (store_counters.def) --------------------------- */

const struct cfs_counter_desc store_counter_descs[] = {
#define STORE_COUNTER(field, stat, sec, type, metric, label, help)                                 \
	{                                                                                          \
	    stat,                                                                                  \
	    offsetof(struct store_stats, field),                                                   \
	    STORE_SEC_##sec,                                                                       \
	    CFS_CTR_##type,                                                                        \
	    metric,                                                                                \
	    label,                                                                                 \
	    help},
#include "store_counters.def"
#undef STORE_COUNTER
};
const size_t store_counter_ndescs = sizeof(store_counter_descs) / sizeof(store_counter_descs[0]);

/* --- counters by procedure ------------------------------------------------ */

#define AT_ENGINE(field) CFS_PSRC_ENGINE, offsetof(struct engine_counters, field), sizeof(uint64_t)
#define AT_UPSTREAM(field)                                                                         \
	CFS_PSRC_UPSTREAM, offsetof(struct upstream_counters, field), sizeof(uint64_t)
#define AT_OUTCOME(o) CFS_PSRC_OUTCOMES, (o) * sizeof(uint64_t), ENGINE_NOUTCOMES * sizeof(uint64_t)
#define NFS_NPROCS    NFS3_NPROCS
#define MOUNT_NPROCS  MOUNT3_NPROCS
#define NSM_NPROCS    NSM1_NPROCS

const struct cfs_proc_counter_desc cfs_proc_counter_descs[CFS_PROC_NCOUNTERS] = {
#define PROC_COUNTER(id, at, prog, first, prefix, sec, type, metric, label, help)                  \
	[CFS_PROC_##id] = {at,                                                                     \
	                   prog##_PROGRAM,                                                         \
	                   first,                                                                  \
	                   prog##_NPROCS,                                                          \
	                   prefix,                                                                 \
	                   CFS_PSEC_##sec,                                                         \
	                   CFS_PTYPE_##type,                                                       \
	                   metric,                                                                 \
	                   label,                                                                  \
	                   help},
#include "proc_counters.def"
#undef PROC_COUNTER
};

void cfs_proc_stat_name(enum cfs_proc_counter id, uint32_t p, char *buf, size_t len)
{
	const struct cfs_proc_counter_desc *d = &cfs_proc_counter_descs[id];

	snprintf(buf, len, "%s%s", d->prefix, proto_proc_name(d->prog, p));
}

void cfs_proc_counters_write_stats(FILE *out, const void *const base[CFS_PSRC_N], int sec)
{
	uint32_t n = 0;

	for (int i = 0; i < CFS_PROC_NCOUNTERS; i++)
		if (cfs_proc_counter_descs[i].sec == sec && cfs_proc_counter_descs[i].nprocs > n)
			n = cfs_proc_counter_descs[i].nprocs;
	for (uint32_t p = 0; p < n; p++)
		for (int i = 0; i < CFS_PROC_NCOUNTERS; i++) {
			const struct cfs_proc_counter_desc *d = &cfs_proc_counter_descs[i];
			char name[64];

			if (d->sec != sec || p < d->first || p >= d->nprocs)
				continue;
			cfs_proc_stat_name((enum cfs_proc_counter)i, p, name, sizeof(name));
			fprintf(out, "%s %llu\n", name,
			        (unsigned long long)cfs_proc_counter_value(base, d, p));
		}
}

void cfs_proc_counters_render(FILE *f, const void *const base[CFS_PSRC_N], enum cfs_proc_counter id)
{
	const struct cfs_proc_counter_desc *d = &cfs_proc_counter_descs[id];
	int end = (int)id + 1;

	while (end < CFS_PROC_NCOUNTERS && cfs_proc_counter_descs[end].help == NULL &&
	       strcmp(cfs_proc_counter_descs[end].metric, d->metric) == 0)
		end++;
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", d->metric, d->help, d->metric);
	for (uint32_t p = d->first; p < d->nprocs; p++)
		for (int i = (int)id; i < end; i++) {
			const struct cfs_proc_counter_desc *r = &cfs_proc_counter_descs[i];

			fprintf(f, "%s{proc=\"%s\"%s%s} %llu\n", r->metric,
			        proto_proc_name(r->prog, p), r->label ? "," : "",
			        r->label ? r->label : "",
			        (unsigned long long)cfs_proc_counter_value(base, r, p));
		}
}
