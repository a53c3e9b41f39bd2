/* nfslist: lists one directory again and again, as a client does (cookie 0
 * and a zero verifier, then each page's last cookie with the verifier of
 * the reply before), and checks every whole listing: no name twice, and
 * the names that do not change (--stable) each exactly once. For the
 * listings of a directory that changes on the server meanwhile.
 *
 *   nfslist --port P [--mountport M] [--host H] --export PATH --path REL
 *           [--plain] [--dircount N] [--maxcount N] [--seconds S]
 *           [--listings N] [--pages K] [--pause K:MS] [--max-names N]
 *           [--stable PREFIX:COUNT] [--timeout S]
 *     --plain      READDIR (count = --maxcount) instead of READDIRPLUS
 *     --dircount/--maxcount  the counts asked [8192 / 32768]
 *     --seconds S  list until S seconds have passed [10]
 *     --listings N stop after N listings [no limit]
 *     --pages K    stop every listing after K pages: partial listings
 *                  (the start of a directory, as `ls | head` reads it),
 *                  counted, not judged
 *     --pause K:MS wait MS ms after page K of every listing (a slow client)
 *     --max-names N  a listing longer than N names is cut: it would not
 *                  end (a bad listing) [10000000]
 *     --stable PREFIX:COUNT  the names starting with PREFIX never change
 *                  while it lists: each must appear exactly once, COUNT
 *                  of them
 * A listing that gets NFS3ERR_BAD_COOKIE starts again at cookie 0, as
 * clients do (counted as a restart, the listing is not judged); one that
 * gets NFS3ERR_STALE or NFS3ERR_NOENT too (counted as stale: nfs-ganesha
 * on a tmpfs says so now and then of a directory that changes, to direct
 * clients as well).
 * Prints the first bad listings ("bad listing ...") and one summary line:
 *   listings N pages P restarts R stale T endless E dup_listings D
 *   max_dups M stable_bad S min_names A max_names B verf_nonzero V
 *   verf_moved W partial P
 * (V listings had a verifier other than zero, in W it changed between
 * pages.)
 * Exit: 0 when every listing was right, 3 when one was not, 1 when a call
 * failed or was not answered, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfs3call.h"
#include "nfsnames.h"

static int timeout_ms = 30000;
static size_t max_names = 10000000;
static size_t stop_pages;  /* a partial listing: this many pages, not judged */
static size_t pause_page;  /* after this page of every listing ... */
static long pause_ms;      /* ... wait this long (a slow client) */

static void usage(void)
{
	fprintf(stderr, "usage: nfslist --port P [--mountport M] [--host H] --export PATH "
	                "--path REL [--plain] [--dircount N] [--maxcount N] [--seconds S] "
	                "[--listings N] [--pages K] [--pause K:MS] [--max-names N] "
	                "[--stable PREFIX:COUNT] [--timeout S]\n");
	exit(2);
}

static int wait_call(struct rpc_context *rpc, struct call *c, const char *what)
{
	enum wait_end w = call_wait(rpc, c, timeout_ms);

	if (w != WAIT_DONE || c->status != RPC_STATUS_SUCCESS) {
		fprintf(stderr, "nfslist: %s: %s\n", what,
		        w == WAIT_NOREPLY ? "no answer" : c->err[0] ? c->err : rpc_get_error(rpc));
		return -1;
	}
	return 0;
}

struct listing {
	char (*names)[256];
	size_t n, cap;
	size_t pages;
	int verf_nonzero; /* a reply's verifier was not all zero */
	int verf_moved;   /* the verifier changed within the listing */
};

static int add_name(struct listing *l, const char *name)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 4096;
		void *p = realloc(l->names, cap * sizeof(*l->names));
		if (p == NULL)
			return -1;
		l->names = p;
		l->cap = cap;
	}
	snprintf(l->names[l->n++], sizeof(l->names[0]), "%s", name);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* One whole listing into l: 0, 1 when the server said BAD_COOKIE, 2 when
 * it said STALE or NOENT (start again), 3 when it went on past max_names
 * names, 4 when it stopped after stop_pages pages, -1 on a failure. */
static int list_once(struct rpc_context *rpc, const struct fh *dir, int plain, uint32_t dircount,
                     uint32_t maxcount, struct listing *l)
{
	unsigned char verf[8] = {0};
	uint64_t cookie = 0;
	struct call c;
	struct res r;

	l->n = 0;
	l->pages = 0;
	l->verf_nonzero = l->verf_moved = 0;
	for (;;) {
		memset(&r, 0, sizeof(r));
		call_prep(&c, &r);
		if ((plain ? send_readdir(rpc, &c, dir, cookie, verf, maxcount)
		           : send_readdirplus(rpc, &c, dir, cookie, verf, dircount, maxcount)) != 0 ||
		    wait_call(rpc, &c, plain ? "READDIR" : "READDIRPLUS") != 0)
			return -1;
		if (r.stat == NFS3ERR_BAD_COOKIE) {
			res_free(&r);
			return 1;
		}
		if (r.stat == NFS3ERR_STALE || r.stat == NFS3ERR_NOENT) {
			/* nfs-ganesha on a tmpfs, now and then, directly too:
			 * an entry gone while it listed */
			res_free(&r);
			return 2;
		}
		if (r.stat != NFS3_OK) {
			const char *s = nfsstat3_name(r.stat);
			fprintf(stderr, "nfslist: listing: %s\n", s ? s : "?");
			res_free(&r);
			return -1;
		}
		l->pages++;
		static const unsigned char zero[8];
		if (memcmp(r.cookieverf, zero, 8) != 0)
			l->verf_nonzero = 1;
		if (l->pages > 1 && memcmp(r.cookieverf, verf, 8) != 0)
			l->verf_moved = 1;
		for (size_t i = 0; i < r.nents; i++) {
			if (strcmp(r.ents[i].name, ".") == 0 || strcmp(r.ents[i].name, "..") == 0)
				continue;
			if (add_name(l, r.ents[i].name) != 0) {
				res_free(&r);
				return -1;
			}
		}
		if (r.eof) {
			res_free(&r);
			return 0;
		}
		if (stop_pages > 0 && l->pages >= stop_pages) {
			res_free(&r);
			return 4;
		}
		if (pause_ms > 0 && l->pages == pause_page)
			usleep((useconds_t)pause_ms * 1000);
		if (l->n > max_names) {
			res_free(&r);
			return 3; /* it would not end */
		}
		if (r.nents == 0) {
			fprintf(stderr, "nfslist: a page without entries and without eof\n");
			res_free(&r);
			return -1;
		}
		cookie = r.ents[r.nents - 1].cookie;
		memcpy(verf, r.cookieverf, 8);
		res_free(&r);
	}
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1", *export = NULL, *path = NULL, *stable = NULL;
	int port = 0, mountport = 0, plain = 0;
	uint32_t dircount = 8192, maxcount = 32768;
	double seconds = 10;
	long max_listings = -1, stable_want = -1;
	size_t stable_len = 0;
	struct rpc_context *rpc;
	struct fh dir;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--plain") == 0) {
			plain = 1;
			continue;
		}
		if (strncmp(argv[i], "--", 2) != 0 || i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		if (strcmp(argv[i - 1], "--port") == 0)
			port = atoi(v);
		else if (strcmp(argv[i - 1], "--mountport") == 0)
			mountport = atoi(v);
		else if (strcmp(argv[i - 1], "--host") == 0)
			host = v;
		else if (strcmp(argv[i - 1], "--export") == 0)
			export = v;
		else if (strcmp(argv[i - 1], "--path") == 0)
			path = v;
		else if (strcmp(argv[i - 1], "--dircount") == 0)
			dircount = (uint32_t)atol(v);
		else if (strcmp(argv[i - 1], "--maxcount") == 0)
			maxcount = (uint32_t)atol(v);
		else if (strcmp(argv[i - 1], "--seconds") == 0)
			seconds = atof(v);
		else if (strcmp(argv[i - 1], "--listings") == 0)
			max_listings = atol(v);
		else if (strcmp(argv[i - 1], "--pages") == 0)
			stop_pages = (size_t)atol(v);
		else if (strcmp(argv[i - 1], "--pause") == 0) {
			pause_page = (size_t)atol(v);
			const char *colon = strchr(v, ':');
			if (colon == NULL)
				usage();
			pause_ms = atol(colon + 1);
		} else if (strcmp(argv[i - 1], "--max-names") == 0)
			max_names = (size_t)atol(v);
		else if (strcmp(argv[i - 1], "--timeout") == 0)
			timeout_ms = atoi(v) * 1000;
		else if (strcmp(argv[i - 1], "--stable") == 0) {
			const char *colon = strrchr(v, ':');
			if (colon == NULL || colon == v)
				usage();
			stable = v;
			stable_len = (size_t)(colon - v);
			stable_want = atol(colon + 1);
		} else
			usage();
	}
	if (port <= 0 || export == NULL || path == NULL || maxcount == 0)
		usage();
	if (mountport <= 0)
		mountport = port;

	/* the export's root handle, from MOUNT, then the directory */
	if (mount_root("nfslist", host, mountport, export, timeout_ms, &dir) != 0)
		return 1;
	rpc = connect_nfs("nfslist", host, port, -1, -1, timeout_ms);
	if (rpc == NULL || walk_path("nfslist", rpc, &dir, path, timeout_ms) != 0)
		return 1;

	struct listing l = {0};
	long listings = 0, partial = 0, restarts = 0, stale = 0, endless = 0, verf_nonzero = 0, verf_moved = 0, dup_listings = 0, stable_bad = 0, bad_shown = 0;
	size_t pages = 0, max_dups = 0, min_names = (size_t)-1, most_names = 0;
	long long end = mono_ms() + (long long)(seconds * 1000);
	int rc = 0;

	while (mono_ms() < end && (max_listings < 0 || listings < max_listings)) {
		int got = list_once(rpc, &dir, plain, dircount, maxcount, &l);
		if (got < 0) {
			rc = 1;
			break;
		}
		if (got == 1) {
			restarts++;
			continue;
		}
		if (got == 4) {
			partial++;
			continue;
		}
		if (got == 2) {
			stale++;
			continue;
		}
		if (got == 3) {
			endless++;
			if (bad_shown++ < 3)
				printf("bad listing %ld: no end after %zu names in %zu pages\n",
				       listings + 1, l.n, l.pages);
			rc = rc ? rc : 3;
			listings++;
			continue;
		}
		listings++;
		pages += l.pages;
		verf_nonzero += l.verf_nonzero;
		verf_moved += l.verf_moved;
		min_names = l.n < min_names ? l.n : min_names;
		most_names = l.n > most_names ? l.n : most_names;
		qsort(l.names, l.n, sizeof(l.names[0]), name_cmp);
		size_t dups = 0, nstable = 0;
		const char *first_dup = NULL;
		for (size_t k = 0; k < l.n; k++) {
			if (k > 0 && strcmp(l.names[k], l.names[k - 1]) == 0) {
				dups++;
				if (first_dup == NULL)
					first_dup = l.names[k];
			}
			if (stable && strncmp(l.names[k], stable, stable_len) == 0)
				nstable++;
		}
		/* a stable name twice is a duplicate too: the count catches one missing */
		int bad_stable = stable && (long)nstable != stable_want;
		if (dups)
			dup_listings++;
		if (bad_stable)
			stable_bad++;
		if (dups > max_dups)
			max_dups = dups;
		if ((dups || bad_stable) && bad_shown++ < 3)
			printf("bad listing %ld: %zu names in %zu pages, %zu duplicated (first %s), "
			       "%zu stable names of %ld\n",
			       listings, l.n, l.pages, dups, first_dup ? first_dup : "-", nstable,
			       stable_want);
		if (dups || bad_stable)
			rc = rc ? rc : 3;
	}
	printf("listings %ld pages %zu restarts %ld stale %ld endless %ld dup_listings %ld "
	       "max_dups %zu stable_bad %ld min_names %zu max_names %zu verf_nonzero %ld "
	       "verf_moved %ld partial %ld\n",
	       listings, pages, restarts, stale, endless, dup_listings, max_dups, stable_bad,
	       listings ? min_names : 0, most_names, verf_nonzero, verf_moved, partial);
	free(l.names);
	rpc_destroy_context(rpc);
	return rc;
}
