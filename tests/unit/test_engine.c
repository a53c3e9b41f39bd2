/* Engine pieces that stand alone: MOUNT path rules, FSINFO clamping, the
 * upstream URL parser, and RPC-level errors of the upstream: libnfs's texts
 * mapped to statuses, and the reply a client gets for each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cachefsd/engine/engine_int.h"
#include "control.h"
#include "engine.h"
#include "procs.h"
#include "store.h"
#include "upstream.h"
#include "wire.h"

static void check_norm(const char *in, int rc, const char *out)
{
	char buf[256];

	strcpy(buf, in);
	assert_int_equal(engine_normalize_path(buf), rc);
	if (rc == 0)
		assert_string_equal(buf, out);
}

static void test_normalize(void **state)
{
	(void)state;
	check_norm("/export", 0, "/export");
	check_norm("/export/", 0, "/export");
	check_norm("//export//sub///", 0, "/export/sub");
	check_norm("/", 0, "/");
	check_norm("///", 0, "/");
	check_norm("export", -EINVAL, NULL);
	check_norm("/export/../etc", -EINVAL, NULL);
	check_norm("/export/..", -EINVAL, NULL);
	check_norm("/export/./x", -EINVAL, NULL);
	check_norm("/export/..x/.y", 0, "/export/..x/.y");
}

static void test_fsinfo_clamp(void **state)
{
	FSINFO3resok r;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.rtmax = 4 << 20;
	r.rtpref = 2 << 20;
	r.wtmax = 64 << 10;
	r.wtpref = 128 << 10;
	r.dtpref = 8 << 20;
	r.maxfilesize = 1ULL << 50;
	engine_clamp_fsinfo(&r, 1 << 20);
	assert_int_equal(r.rtmax, CFS_MAX_IO);
	assert_int_equal(r.rtpref, CFS_MAX_IO);
	assert_int_equal(r.wtmax, 64 << 10); /* smaller server limits stay */
	assert_int_equal(r.wtpref, 64 << 10);
	assert_int_equal(r.dtpref, CFS_MAX_IO);
	assert_true(r.maxfilesize == 1ULL << 50);

	/* a filer with a 64 KiB READ limit (ONTAP's default): clients are
	 * offered READs of a whole chunk (the proxy sends them in pieces),
	 * WRITEs of no more than the filer takes */
	memset(&r, 0, sizeof(r));
	r.rtmax = 64 << 10;
	r.rtpref = 32 << 10;
	r.wtmax = 64 << 10;
	engine_clamp_fsinfo(&r, 1 << 20);
	assert_int_equal(r.rtmax, 1 << 20);
	assert_int_equal(r.rtpref, 1 << 20);
	assert_int_equal(r.wtmax, 64 << 10);
	assert_int_equal(r.wtpref, 64 << 10);

	/* chunks smaller than the filer's limit: the filer's limit */
	memset(&r, 0, sizeof(r));
	r.rtmax = 256 << 10;
	r.rtpref = 128 << 10;
	engine_clamp_fsinfo(&r, 64 << 10);
	assert_int_equal(r.rtmax, 256 << 10);
	assert_int_equal(r.rtpref, 128 << 10);
}

static void test_url(void **state)
{
	struct upstream_url u;
	char err[256];

	(void)state;
	assert_int_equal(
	    upstream_parse_url("nfs://127.0.0.1/srv/export?nfsport=2049&mountport=20048", &u, err,
	                       sizeof(err)),
	    0);
	assert_string_equal(u.host, "127.0.0.1");
	assert_string_equal(u.path, "/srv/export");
	assert_int_equal(u.nfsport, 2049);
	assert_int_equal(u.mountport, 20048);
	assert_int_equal(upstream_parse_url("nfs://filer.example/", &u, err, sizeof(err)), 0);
	assert_string_equal(u.path, "/");
	assert_int_equal(u.nfsport, 0);
	assert_int_equal(upstream_parse_url("nfs://[::1]:2050/a/b/", &u, err, sizeof(err)), 0);
	assert_string_equal(u.host, "::1");
	assert_string_equal(u.path, "/a/b");
	assert_int_equal(u.nfsport, 2050);
	assert_int_not_equal(upstream_parse_url("http://x/y", &u, err, sizeof(err)), 0);
	assert_int_not_equal(upstream_parse_url("nfs://hostonly", &u, err, sizeof(err)), 0);
	assert_int_not_equal(upstream_parse_url("nfs://h/e?nfsport=0", &u, err, sizeof(err)), 0);
	assert_int_not_equal(upstream_parse_url("nfs://h/e?nfsport=99999", &u, err, sizeof(err)),
	                     0);
	assert_int_not_equal(upstream_parse_url("nfs://h/e?uid=3", &u, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "unsupported URL argument 'uid'"));
	assert_int_not_equal(upstream_parse_url("nfs:///e", &u, err, sizeof(err)), 0);
}

/* Every text libnfs 4.0's rpc_process_reply() (lib/pdu.c) gives a call
 * the server did not accept maps to its own status; anything else is not
 * an answer of the server. */
static void test_rpc_status_map(void **state)
{
	static const struct {
		const char *text;
		int status, accept_stat;
	} m[] = {
	    {"Server responded: Program not available", UPSTREAM_E_PROG_UNAVAIL, PROG_UNAVAIL},
	    {"Server responded: Program version mismatch", UPSTREAM_E_PROG_MISMATCH, PROG_MISMATCH},
	    {"Server responded: Procedure not available", UPSTREAM_E_PROC_UNAVAIL, PROC_UNAVAIL},
	    {"Server responded: Garbage arguments", UPSTREAM_E_GARBAGE_ARGS, GARBAGE_ARGS},
	    {"Server responded: System Error", UPSTREAM_E_SYSTEM_ERR, SYSTEM_ERR},
	    {"RPC Packet not accepted by the server", UPSTREAM_E_DENIED, -1},
	    {"Message rejected by server", UPSTREAM_E_BADREPLY, -1},
	    {"Unknown rpc response from server", UPSTREAM_E_BADREPLY, -1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		int st = upstream_rpc_status(m[i].text);
		assert_int_equal(st, m[i].status);
		assert_true(upstream_is_rpc_error(st));
		assert_int_equal(upstream_accept_stat(st), m[i].accept_stat);
		assert_non_null(strstr(upstream_strerror(st), "server"));
		for (size_t j = 0; j < i; j++)
			if (m[j].status != m[i].status)
				assert_string_not_equal(upstream_strerror(st),
				                        upstream_strerror(m[j].status));
	}
	/* not answers: connection failures, other texts, prefixes */
	assert_int_equal(upstream_rpc_status(NULL), -EPROTO);
	assert_int_equal(upstream_rpc_status("RPC ERROR: Failed to reconnect async"), -EPROTO);
	assert_int_equal(upstream_rpc_status("Server responded: Garbage"), -EPROTO);
	assert_int_equal(upstream_rpc_status(""), -EPROTO);
	/* the range stays clear of errno values and of the other statuses */
	assert_false(upstream_is_rpc_error(-EPROTO));
	assert_false(upstream_is_rpc_error(-ETIMEDOUT));
	assert_false(upstream_is_rpc_error(-ECANCELED));
	assert_false(upstream_is_rpc_error(0));
	assert_int_equal(upstream_accept_stat(-EPROTO), -1);
	assert_string_equal(upstream_strerror(-ETIMEDOUT), strerror(ETIMEDOUT));
}

/* engine_reply_failure() as a client sees it: one GETATTR call goes in
 * through a proto connection, the failure status comes back as an RPC
 * reply, whose words are checked here. */
static int g_status;
static struct engine g_engine;

static void fail_it(struct cfs_req *req, void *arg)
{
	(void)arg;
	engine_reply_failure(&g_engine, req, g_status);
}

/* The reply's words after the record mark; returns their number. */
static size_t reply_to_failure(int status, uint32_t *w, size_t max)
{
	size_t n;

	memset(&g_engine, 0, sizeof(g_engine));
	g_engine.io = &engine_io_real; /* its answers go through engine_reply() */
	g_status = status;
	n = wire_getattr_reply(fail_it, w, max);
	/* an ERROR outcome, counted as an upstream failure unless the proxy
	 * could not send the call (its own limit) */
	assert_int_equal(g_engine.ctr.nfs_outcomes[NFS3_GETATTR][ENGINE_ERROR], 1);
	assert_int_equal(g_engine.ctr.upstream_failures, status == -E2BIG ? 0 : 1);
	return n;
}

/* An accepted error goes back with the server's accept_stat, and nothing
 * after it (no result body). */
static void check_accepted(int status, uint32_t accept_stat)
{
	uint32_t w[16];

	assert_int_equal(reply_to_failure(status, w, 16), 6);
	assert_int_equal(w[2], MSG_ACCEPTED);
	assert_int_equal(w[3], AUTH_NONE); /* verifier */
	assert_int_equal(w[4], 0);
	assert_int_equal(w[5], accept_stat);
}

static void test_failure_replies(void **state)
{
	uint32_t w[16];

	(void)state;
	check_accepted(UPSTREAM_E_GARBAGE_ARGS, GARBAGE_ARGS);
	check_accepted(UPSTREAM_E_PROC_UNAVAIL, PROC_UNAVAIL);
	check_accepted(UPSTREAM_E_PROG_UNAVAIL, PROG_UNAVAIL);
	check_accepted(UPSTREAM_E_SYSTEM_ERR, SYSTEM_ERR);
	/* not the server's answer, or not a decodable one: the proxy's own
	 * SYSTEM_ERR */
	check_accepted(UPSTREAM_E_BADREPLY, SYSTEM_ERR);
	check_accepted(-EPROTO, SYSTEM_ERR);
	/* PROG_MISMATCH with the versions the proxy serves: 3..3 */
	assert_int_equal(reply_to_failure(UPSTREAM_E_PROG_MISMATCH, w, 16), 8);
	assert_int_equal(w[2], MSG_ACCEPTED);
	assert_int_equal(w[5], PROG_MISMATCH);
	assert_int_equal(w[6], 3);
	assert_int_equal(w[7], 3);
	/* MSG_DENIED: AUTH_ERROR AUTH_TOOWEAK */
	assert_int_equal(reply_to_failure(UPSTREAM_E_DENIED, w, 16), 5);
	assert_int_equal(w[2], MSG_DENIED);
	assert_int_equal(w[3], AUTH_ERROR);
	assert_int_equal(w[4], AUTH_TOOWEAK);
	/* soft mode's timeout is an NFS answer: GETATTR3res NFS3ERR_IO (its
	 * failure arm is empty) */
	assert_int_equal(reply_to_failure(-ETIMEDOUT, w, 16), 7);
	assert_int_equal(w[2], MSG_ACCEPTED);
	assert_int_equal(w[5], SUCCESS);
	assert_int_equal(w[6], NFS3ERR_IO);
	/* a call too large for libnfs to encode: the proxy's own NAMETOOLONG */
	assert_int_equal(reply_to_failure(-E2BIG, w, 16), 7);
	assert_int_equal(w[5], SUCCESS);
	assert_int_equal(w[6], NFS3ERR_NAMETOOLONG);
}

/* The lists of counters (engine_counters.def, proto_counters.def,
 * upstream_counters.def, control_counters.def, store_counters.def): each row its own stats name
 * and field; the rows of one /metrics family adjacent, the first with the
 * HELP, every one with a label; a family in one run of rows only. */
static void check_list(const struct cfs_counter_desc *descs, size_t n, size_t size)
{
	char name[96], prev[96] = "";

	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		const struct cfs_counter_desc *d = &descs[i];
		const int gauge = cfs_counter_is_gauge(d->type);

		assert_true(d->offset + sizeof(uint64_t) <= size);
		for (size_t j = 0; j < i; j++) {
			assert_string_not_equal(d->name, descs[j].name);
			assert_int_not_equal(d->offset, descs[j].offset);
		}
		if (d->type == CFS_CTR_ELSEWHERE) {
			/* it names the family that carries it (label: its sample) */
			assert_non_null(d->metric);
			continue;
		}
		cfs_counter_metric(d, name, sizeof(name));
		if (strcmp(name, prev) == 0) {
			/* a second sample of the family above */
			assert_null(d->help);
			assert_non_null(d->label);
			assert_int_equal(d->type, descs[i - 1].type);
		} else {
			assert_non_null(d->help);
			/* a family is one run of rows: not seen before */
			for (size_t j = 0; j < i; j++) {
				char other[96];

				cfs_counter_metric(&descs[j], other, sizeof(other));
				assert_string_not_equal(name, other);
			}
			if (!gauge)
				assert_non_null(strstr(name, "_total"));
		}
		strcpy(prev, name);
	}
}

/* --- /metrics and stats --raw, one to one ----------------------------------
 *
 * The mapping rule, by the rows of the lists:
 *   a scalar row (engine, proto, upstream, control, store): the stats line
 *   `x` is the sample cachefsd_x_total (counter) or cachefsd_x (gauge:
 *   GAUGE, and PERCENT as a ratio, AGE as the seconds since), or the
 *   row's own metric{label} where it names one (older names); an ELSEWHERE
 *   row is a sample of a family by procedure (proc_counters.def), or the sum
 *   of its samples when it has no label;
 *   a row by procedure: the stats line <prefix><PROC> is the sample
 *   metric{proc="<PROC>"[,label]}; a HISTOGRAM row's line is the
 *   histogram's metric_sum{proc="<PROC>"}, in microseconds.
 * The test fills every row with its own value, runs the writers and checks
 * that each stats line and each sample is there exactly once, with the
 * value of the same row. */

/* The names seen over every list: a stats name or a sample is one row's. */
struct seen {
	char **names;
	size_t n, cap;
};

static void seen_add(struct seen *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0)
			fail_msg("%s comes from two rows", name);
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->names = realloc(s->names, s->cap * sizeof(*s->names));
		assert_non_null(s->names);
	}
	s->names[s->n++] = strdup(name);
}

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
}

/* How often "\n<line>\n" occurs in text (which starts with "\n"). */
static int lines_of(const char *text, const char *line)
{
	char want[256 + 2]; /* a line of up to 255 bytes between two newlines */
	int k = 0;

	snprintf(want, sizeof(want), "\n%s\n", line);
	for (const char *p = text; (p = strstr(p, want)) != NULL; p++)
		k++;
	return k;
}

static int sample_lines(const char *text)
{
	int k = 0;

	for (const char *p = text; *p; p++)
		if (p[0] == '\n' && p[1] && p[1] != '#')
			k++;
	return k;
}

/* Output of a writer, after a "\n" (for lines_of). */
struct out {
	char *buf;
	size_t len;
	FILE *f;
};

static void out_open(struct out *o)
{
	o->buf = NULL;
	o->f = open_memstream(&o->buf, &o->len);
	assert_non_null(o->f);
	fputc('\n', o->f);
}

static void out_close(struct out *o)
{
	assert_int_equal(fclose(o->f), 0);
}

/* Is sample (metric, label) one of a family by procedure? */
static int by_procedure(const char *metric, const char *label)
{
	int k = 0;

	for (int i = 0; i < CFS_PROC_NCOUNTERS; i++) {
		const struct cfs_proc_counter_desc *r = &cfs_proc_counter_descs[i];

		if (strcmp(r->metric, metric) != 0)
			continue;
		if (label == NULL) {
			k += r->label == NULL; /* the sum of the family */
			continue;
		}
		for (uint32_t p = r->first; p < r->nprocs; p++) {
			char want[128];

			snprintf(want, sizeof(want), "proc=\"%s\"%s%s", proto_proc_name(r->prog, p),
			         r->label ? "," : "", r->label ? r->label : "");
			k += strcmp(want, label) == 0;
		}
	}
	return k;
}

static void one_to_one(const struct cfs_counter_desc *d, size_t n, size_t size, int nsec,
                       uint64_t first, struct seen *stats, struct seen *samples)
{
	void *base = calloc(1, size);
	struct out st, m;
	int elsewhere = 0;

	assert_non_null(base);
	for (size_t i = 0; i < n; i++) /* an AGE row: a time far ahead */
		*(uint64_t *)((char *)base + d[i].offset) =
		    d[i].type == CFS_CTR_AGE ? UINT64_MAX - i : first + i;
	out_open(&st);
	for (int sec = 0; sec < nsec; sec++)
		cfs_counters_write_stats(st.f, base, d, n, sec);
	out_close(&st);
	out_open(&m);
	cfs_counters_render(m.f, base, d, n);
	out_close(&m);
	for (size_t i = 0; i < n; i++) {
		char line[256], metric[96];

		snprintf(line, sizeof(line), "%s %llu", d[i].name,
		         (unsigned long long)cfs_counter_value(base, &d[i]));
		if (lines_of(st.buf, line) != 1)
			fail_msg("stats line %s: %d times", line, lines_of(st.buf, line));
		seen_add(stats, d[i].name);
		cfs_counter_metric(&d[i], metric, sizeof(metric));
		if (d[i].label)
			snprintf(line, sizeof(line), "%s{%s}", metric, d[i].label);
		else
			snprintf(line, sizeof(line), "%s", metric);
		if (d[i].type == CFS_CTR_ELSEWHERE) {
			/* rendered by procedure: not here, and not again as a row */
			elsewhere++;
			if (by_procedure(d[i].metric, d[i].label) != 1)
				fail_msg("%s (stats %s) is no sample by procedure", line,
				         d[i].name);
			continue;
		}
		seen_add(samples, line);
		if (d[i].type == CFS_CTR_PERCENT)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %.2f",
			         (double)(first + i) / 100.0);
		else if (d[i].type == CFS_CTR_AGE) /* a time to come: age 0 */
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " 0");
		else
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %llu",
			         (unsigned long long)(first + i));
		if (lines_of(m.buf, line) != 1)
			fail_msg("sample %s (stats %s): %d times", line, d[i].name,
			         lines_of(m.buf, line));
	}
	/* nothing else: a line per row, a sample per row rendered here */
	assert_int_equal(sample_lines(st.buf), (int)n);
	assert_int_equal(sample_lines(m.buf), (int)n - elsewhere);
	free(st.buf);
	free(m.buf);
	free(base);
}

static void proc_one_to_one(struct seen *stats, struct seen *samples)
{
	static struct engine_counters ec;
	static struct upstream_counters uc;
	static uint64_t oc[ENGINE_NPROCS][ENGINE_NOUTCOMES];
	const void *const bases[CFS_PSRC_N] = {&ec, &uc, oc};
	int nstats = 0, nsamples = 0;
	struct out st, m;

	for (int i = 0; i < CFS_PROC_NCOUNTERS; i++) {
		const struct cfs_proc_counter_desc *d = &cfs_proc_counter_descs[i];
		void *b = (void *)bases[d->src];

		for (uint32_t p = 0; p < d->nprocs; p++)
			*(uint64_t *)((char *)b + d->offset + p * d->stride) =
			    500000 + 100 * (uint64_t)i + p;
	}
	out_open(&st);
	for (int sec = CFS_PSEC_CALLS; sec <= CFS_PSEC_LAST; sec++)
		cfs_proc_counters_write_stats(st.f, bases, sec);
	out_close(&st);
	out_open(&m);
	for (int i = 0; i < CFS_PROC_NCOUNTERS; i++)
		if (cfs_proc_counter_descs[i].help &&
		    cfs_proc_counter_descs[i].type == CFS_PTYPE_COUNTER)
			cfs_proc_counters_render(m.f, bases, (enum cfs_proc_counter)i);
	out_close(&m);
	for (int i = 0; i < CFS_PROC_NCOUNTERS; i++) {
		const struct cfs_proc_counter_desc *d = &cfs_proc_counter_descs[i];

		/* a family's rows adjacent, the first with the HELP */
		if (d->help == NULL) {
			assert_true(i > 0);
			assert_string_equal(d->metric, cfs_proc_counter_descs[i - 1].metric);
			assert_non_null(d->label);
		}
		assert_true(d->nprocs == (d->prog == NFS_PROGRAM     ? NFS3_NPROCS
		                          : d->prog == MOUNT_PROGRAM ? MOUNT3_NPROCS
		                                                     : NSM1_NPROCS));
		for (uint32_t p = d->first; p < d->nprocs; p++) {
			const uint64_t v = 500000 + 100 * (uint64_t)i + p;
			char name[64], line[256];

			cfs_proc_stat_name((enum cfs_proc_counter)i, p, name, sizeof(name));
			snprintf(line, sizeof(line), "%s %llu", name, (unsigned long long)v);
			if (lines_of(st.buf, line) != 1)
				fail_msg("stats line %s: %d times", line, lines_of(st.buf, line));
			seen_add(stats, name);
			nstats++;
			if (d->type == CFS_PTYPE_HISTOGRAM) {
				/* metrics.c renders it: metric_sum{proc}, in seconds */
				assert_non_null(strstr(d->metric, "_seconds"));
				snprintf(line, sizeof(line), "%s_sum{proc=\"%s\"}", d->metric,
				         proto_proc_name(d->prog, p));
				seen_add(samples, line);
				continue;
			}
			snprintf(line, sizeof(line), "%s{proc=\"%s\"%s%s}", d->metric,
			         proto_proc_name(d->prog, p), d->label ? "," : "",
			         d->label ? d->label : "");
			seen_add(samples, line);
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %llu",
			         (unsigned long long)v);
			if (lines_of(m.buf, line) != 1)
				fail_msg("sample %s (stats %s): %d times", line, name,
				         lines_of(m.buf, line));
			nsamples++;
		}
	}
	assert_int_equal(sample_lines(st.buf), nstats);
	assert_int_equal(sample_lines(m.buf), nsamples);
	free(st.buf);
	free(m.buf);
}

static void test_one_to_one(void **state)
{
	struct seen stats = {0}, samples = {0};

	(void)state;
	one_to_one(engine_counter_descs, engine_counter_ndescs, sizeof(struct engine_counters),
	           ENGINE_SEC_MOUNT + 1, 1000, &stats, &samples);
	one_to_one(proto_counter_descs, proto_counter_ndescs, sizeof(struct proto_counters),
	           PROTO_SEC_BYTES + 1, 2000, &stats, &samples);
	one_to_one(upstream_counter_descs, upstream_counter_ndescs,
	           sizeof(struct upstream_counters), UPSTREAM_SEC_LAST + 1, 3000, &stats, &samples);
	one_to_one(control_counter_descs, control_counter_ndescs, sizeof(struct control_counters),
	           1, 4000, &stats, &samples);
	one_to_one(store_counter_descs, store_counter_ndescs, sizeof(struct store_stats),
	           STORE_SEC_OLDEST + 1, 5000, &stats, &samples);
	proc_one_to_one(&stats, &samples);
	/* the names that drifted before the list stay, both of them, in one row */
	assert_int_equal(
	    by_procedure("cachefsd_nfs_requests_total", "proc=\"READ\",outcome=\"hit\""), 1);
	seen_free(&stats);
	seen_free(&samples);
}

static void test_counter_list(void **state)
{
	(void)state;
	check_list(engine_counter_descs, engine_counter_ndescs, sizeof(struct engine_counters));
	check_list(proto_counter_descs, proto_counter_ndescs, sizeof(struct proto_counters));
	check_list(upstream_counter_descs, upstream_counter_ndescs,
	           sizeof(struct upstream_counters));
	check_list(control_counter_descs, control_counter_ndescs, sizeof(struct control_counters));
	check_list(store_counter_descs, store_counter_ndescs, sizeof(struct store_stats));
	/* names are fields: ENGINE_STAT is the field's name */
	assert_string_equal(ENGINE_STAT(writer_passthrough), "writer_passthrough");
	assert_string_equal(UPSTREAM_STAT(resends), "upstream_resends");
	assert_string_equal(STORE_STAT(objects), "cache_objects");
	assert_string_equal(CONTROL_STAT(verify_runs), "verify_runs");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_normalize),
	    cmocka_unit_test(test_counter_list),
	    cmocka_unit_test(test_one_to_one),
	    cmocka_unit_test(test_fsinfo_clamp),
	    cmocka_unit_test(test_url),
	    cmocka_unit_test(test_rpc_status_map),
	    cmocka_unit_test(test_failure_replies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
