/* A first pass over the index file, with pread, before LMDB maps it.
 *
 * LMDB trusts its file. It maps it and follows the page numbers, offsets
 * and sizes it finds there without checking them against the file's size
 * or a page's bounds: a truncated file turns the first access past its end
 * into a SIGBUS (at open, or later in the background scan), garbage in a
 * page sends a cursor through wild pointers (SIGSEGV) or into one of
 * LMDB's assertions (abort). It reports only a few kinds of damage itself
 * (a bad meta page, a page number past the last one). A daemon restarted
 * on failure would crash again at every start.
 *
 * So store_index_check() reads the file the way LMDB will use it, but with
 * pread, where a short file or an I/O error is a return code: both meta
 * pages, then every page reachable from the newest one (the free-page
 * tree, the main tree, every named database's tree, every overflow run),
 * each checked for what LMDB relies on. A file that passes can be mapped:
 * every page LMDB can reach lies inside the file, every node inside its
 * page, every tree is a tree (no page used twice, no cycle, every leaf at
 * the same depth, keys in order), and the free list names only pages no
 * tree uses. What it cannot see (a value's bytes changed in place) is
 * what our own checks catch: record unpacking, chunk and inline
 * checksums, the metadata records' checksum (store_meta.c).
 *
 * The format, from LMDB 0.9's mdb.c (data version 1; a 64-bit host: page
 * numbers, sizes and txnids are 8 bytes, host byte order). Offsets in
 * bytes:
 *
 *   page header (16): 0 pgno, 8 pad (u16), 10 flags (u16), 12 lower (u16)
 *     and 14 upper (u16): the free gap between the node offsets (u16 each,
 *     from 16 up to lower) and the nodes (from upper to the page's end);
 *     for an overflow page 12 is instead the run's page count (u32).
 *     Flags: 0x01 branch, 0x02 leaf, 0x04 overflow, 0x08 meta.
 *   meta page (pages 0 and 1): the header, then at 16: magic 0xBEEFC0DE
 *     (u32), version (u32), fixed map address, map size, two database
 *     records (free pages, main) of 48 bytes each, last page number,
 *     txnid. The page size is the free database record's first field; the
 *     meta page with the larger txnid is the current snapshot.
 *   database record (48): 0 page size or pad (u32), 4 flags (u16), 6 depth
 *     (u16), 8 branch pages, 16 leaf pages, 24 overflow pages, 32 entries,
 *     40 root page (all ones: empty).
 *   node (8 + key + data): 0 lo, 2 hi, 4 flags, 6 key size (u16 each). In
 *     a branch, lo | hi << 16 | flags << 32 is the child page and the key
 *     of node 0 is ignored (everything below the node-1 key); in a leaf,
 *     lo | hi << 16 is the data size, flags 0x01 puts the data on an
 *     overflow run (the node holds its page number), 0x02 makes the data a
 *     named database's record (main tree only), 0x04 is duplicate data
 *     (never ours).
 *   free database: key txnid (8 bytes, compared as an integer), data a
 *     list of page numbers, its count first, descending.
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(sizeof(size_t) == 8, "the index format check assumes a 64-bit host");

#define PG_HDR      16
#define PG_BRANCH   0x01
#define PG_LEAF     0x02
#define PG_OVERFLOW 0x04
#define PG_META     0x08
#define NODE_HDR    8
#define N_BIGDATA   0x01
#define N_SUBDATA   0x02
#define META_MAGIC  0xBEEFC0DEu
#define META_VER    1
#define META_LEN    136
#define META_DBS    24 /* offset of the two database records in the meta */
#define META_LAST   120
#define META_TXNID  128
#define DB_LEN      48
#define NO_PAGE     UINT64_MAX
#define MAX_DEPTH   32  /* LMDB's cursor stack */
#define MAX_KEY     511 /* LMDB's key size limit */
#define MAX_NAMED   64
#define MIN_PSIZE   512
#define MAX_PSIZE   32768
/* flags of a database record that change how nodes are read or keys
 * compared: none of our databases has them */
#define DB_ODD (MDB_REVERSEKEY | MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP | MDB_REVERSEDUP)

enum tree { T_FREE, T_MAIN, T_NAMED };

struct dbrec {
	uint16_t flags, depth;
	uint64_t branch, leaf, overflow, entries, root;
};

struct key {
	const uint8_t *p; /* NULL: no bound */
	size_t n;
};

struct chk {
	int fd;
	uint32_t psize;
	uint64_t file_pages, last_pg;
	uint8_t *used;  /* pages some tree uses */
	uint8_t *freed; /* pages the free list names */
	uint8_t *buf[MAX_DEPTH];
	/* the tree being walked */
	enum tree tree;
	const char *name;
	int leaf_level; /* -1 until the first leaf */
	uint64_t branch, leaf, overflow, entries;
	struct dbrec named[MAX_NAMED];
	char names[MAX_NAMED][64];
	int nnamed;
	int *reason;
	char *why;
	size_t whylen;
	/* the quick check (store_index_check_quick): the named databases'
	 * trees to this many levels, no free list, no counts */
	int depth_max;   /* -1: every level */
	const int *stop; /* nonzero: give up (-ECANCELED) */
};

static uint16_t u16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Damage found: says what, returns 1. */
__attribute__((format(printf, 3, 4))) static int bad(struct chk *c, int reason, const char *fmt,
                                                     ...)
{
	va_list ap;

	*c->reason = reason;
	va_start(ap, fmt);
	vsnprintf(c->why, c->whylen, fmt, ap);
	va_end(ap);
	return 1;
}

static int bit_get(const uint8_t *m, uint64_t i)
{
	return (m[i >> 3] >> (i & 7)) & 1;
}

static void bit_set(uint8_t *m, uint64_t i)
{
	m[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/* Reads len bytes at off; 1 (damage) when the file ends or cannot be read. */
static int read_at(struct chk *c, uint64_t off, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = pread(c->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return bad(c, STORE_DMG_READ, "cannot read at byte %" PRIu64 ": %s", off,
			           strerror(errno));
		if (n == 0)
			return bad(c, STORE_DMG_SIZE, "the file ends at byte %" PRIu64, off);
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Claims pages pgno .. pgno+n-1 for a tree: inside the snapshot and the
 * file, used once. */
static int take(struct chk *c, uint64_t pgno, uint64_t n, const char *what)
{
	if (pgno < 2 || pgno > c->last_pg || n == 0 || n - 1 > c->last_pg - pgno)
		return bad(c, STORE_DMG_PAGE,
		           "%s: %s page %" PRIu64 " (+%" PRIu64 ") is outside the snapshot "
		           "(pages 2..%" PRIu64 ")",
		           c->name, what, pgno, n, c->last_pg);
	if (pgno + n > c->file_pages)
		return bad(c, STORE_DMG_SIZE,
		           "%s: %s page %" PRIu64 " is past the end of the file (%" PRIu64
		           " pages): truncated",
		           c->name, what, pgno + n - 1, c->file_pages);
	for (uint64_t i = pgno; i < pgno + n; i++) {
		if (bit_get(c->used, i))
			return bad(c, STORE_DMG_PAGE, "%s: page %" PRIu64 " is used twice", c->name,
			           i);
		bit_set(c->used, i);
	}
	return 0;
}

/* LMDB's order: memcmp, then the shorter first; integer keys (the free
 * database's txnids) as numbers. */
static int key_cmp(const struct chk *c, struct key a, struct key b)
{
	size_t n = a.n < b.n ? a.n : b.n;
	int d;

	if (c->tree == T_FREE) {
		uint64_t x = u64(a.p), y = u64(b.p);

		return x < y ? -1 : x > y;
	}
	d = memcmp(a.p, b.p, n);
	if (d)
		return d;
	return a.n < b.n ? -1 : a.n > b.n;
}

/* One free-list record: count, then that many page numbers, descending.
 * A record may have room for more (LMDB reserves them before it knows how
 * many pages will be free): only the count is read. */
static int free_list(struct chk *c, const uint8_t *d, uint64_t len)
{
	uint64_t n, prev = NO_PAGE;

	if (len < 8 || len % 8 != 0 || (n = u64(d)) > len / 8 - 1)
		return bad(c, STORE_DMG_PAGE, "free list: a record of %" PRIu64 " bytes", len);
	for (uint64_t i = 1; i <= n; i++) {
		uint64_t pg = u64(d + 8 * i);

		if (pg < 2 || pg > c->last_pg || pg >= prev)
			return bad(
			    c, STORE_DMG_PAGE,
			    "free list: page %" PRIu64 " out of order or outside the snapshot", pg);
		if (bit_get(c->freed, pg))
			return bad(c, STORE_DMG_PAGE, "free list: page %" PRIu64 " listed twice",
			           pg);
		bit_set(c->freed, pg);
		prev = pg;
	}
	return 0;
}

/* A leaf's data on an overflow run: the run's header; for the free list
 * its bytes too. */
static int overflow(struct chk *c, const uint8_t *node, uint64_t dsize)
{
	uint8_t hdr[PG_HDR];
	uint64_t pgno = u64(node + NODE_HDR + u16(node + 6)), need, pages;
	uint8_t *d;
	int rc;

	need = (PG_HDR - 1 + dsize) / c->psize + 1;
	if (pgno < 2 || pgno > c->last_pg || pgno >= c->file_pages)
		return take(c, pgno, 1, "overflow");
	rc = read_at(c, pgno * c->psize, hdr, sizeof(hdr));
	if (rc)
		return rc;
	pages = u32(hdr + 12);
	if (u64(hdr) != pgno || u16(hdr + 10) != PG_OVERFLOW || pages < need)
		return bad(c, STORE_DMG_PAGE,
		           "%s: overflow page %" PRIu64 " has a bad header (number %" PRIu64
		           ", flags 0x%x, %" PRIu64 " pages for %" PRIu64 " bytes)",
		           c->name, pgno, u64(hdr), u16(hdr + 10), pages, dsize);
	rc = take(c, pgno, pages, "overflow");
	if (rc)
		return rc;
	c->overflow += pages;
	if (c->tree != T_FREE)
		return 0;
	if (dsize > 8 * (c->last_pg + 2))
		return bad(c, STORE_DMG_PAGE, "free list: a record of %" PRIu64 " bytes", dsize);
	d = malloc(dsize);
	if (d == NULL)
		return -ENOMEM;
	rc = read_at(c, pgno * c->psize + PG_HDR, d, dsize);
	if (rc == 0)
		rc = free_list(c, d, dsize);
	free(d);
	return rc;
}

static void dbrec_read(struct dbrec *r, const uint8_t *d)
{
	r->flags = u16(d + 4);
	r->depth = u16(d + 6);
	r->branch = u64(d + 8);
	r->leaf = u64(d + 16);
	r->overflow = u64(d + 24);
	r->entries = u64(d + 32);
	r->root = u64(d + 40);
}

/* One leaf node's data, by tree. */
static int leaf_data(struct chk *c, const uint8_t *node, size_t room)
{
	uint16_t flags = u16(node + 4), ks = u16(node + 6);
	uint64_t dsize = (uint64_t)u16(node) | (uint64_t)u16(node + 2) << 16;
	const uint8_t *d = node + NODE_HDR + ks;

	if (flags & ~(N_BIGDATA | N_SUBDATA) ||
	    (flags & N_SUBDATA) != (c->tree == T_MAIN ? N_SUBDATA : 0))
		return bad(c, STORE_DMG_PAGE, "%s: a leaf node with flags 0x%x", c->name, flags);
	if (flags & N_BIGDATA) {
		if (NODE_HDR + (size_t)ks + 8 > room || c->tree == T_MAIN)
			return bad(c, STORE_DMG_PAGE, "%s: a node ends past its page", c->name);
		return overflow(c, node, dsize);
	}
	if (NODE_HDR + (size_t)ks + dsize > room)
		return bad(c, STORE_DMG_PAGE, "%s: a node ends past its page", c->name);
	if (c->tree == T_FREE)
		return free_list(c, d, dsize);
	if (c->tree == T_MAIN) {
		if (dsize != DB_LEN || c->nnamed == MAX_NAMED)
			return bad(c, STORE_DMG_PAGE,
			           "main: a database record of %" PRIu64 " bytes", dsize);
		dbrec_read(&c->named[c->nnamed], d);
		snprintf(c->names[c->nnamed], sizeof(c->names[0]), "%.*s", ks < 60 ? ks : 60,
		         (const char *)node + NODE_HDR);
		c->nnamed++;
	}
	return 0;
}

static int walk(struct chk *c, uint64_t pgno, int level, struct key lo, struct key hi)
{
	uint8_t *p;
	uint16_t flags, lower, upper;
	size_t nkeys;
	struct key prev = {NULL, 0};
	int rc;

	if (level >= MAX_DEPTH)
		return bad(c, STORE_DMG_PAGE, "%s: deeper than %d levels", c->name, MAX_DEPTH);
	if (c->stop && __atomic_load_n(c->stop, __ATOMIC_RELAXED))
		return -ECANCELED;
	rc = take(c, pgno, 1, level ? "child" : "root");
	if (rc)
		return rc;
	if (c->buf[level] == NULL && (c->buf[level] = malloc(c->psize)) == NULL)
		return -ENOMEM;
	p = c->buf[level];
	rc = read_at(c, pgno * c->psize, p, c->psize);
	if (rc)
		return rc;
	flags = u16(p + 10);
	lower = u16(p + 12);
	upper = u16(p + 14);
	if (u64(p) != pgno || (flags != PG_BRANCH && flags != PG_LEAF))
		return bad(c, STORE_DMG_PAGE,
		           "%s: page %" PRIu64 " is not a tree page (number %" PRIu64
		           ", flags 0x%x)",
		           c->name, pgno, u64(p), flags);
	nkeys = lower >= PG_HDR ? (size_t)(lower - PG_HDR) / 2 : 0;
	if (lower < PG_HDR || (lower - PG_HDR) % 2 != 0 || upper > c->psize || lower > upper ||
	    nkeys < (flags == PG_LEAF || c->tree == T_FREE ? 1u : 2u))
		return bad(c, STORE_DMG_PAGE,
		           "%s: page %" PRIu64 " has bad bounds (lower %u, upper %u, page size %u)",
		           c->name, pgno, lower, upper, c->psize);
	if (flags == PG_LEAF) {
		if (c->leaf_level < 0)
			c->leaf_level = level;
		if (c->leaf_level != level)
			return bad(c, STORE_DMG_PAGE, "%s: leaves at depths %d and %d", c->name,
			           c->leaf_level, level);
		c->leaf++;
	} else {
		c->branch++;
	}
	for (size_t i = 0; i < nkeys; i++) {
		size_t off = u16(p + PG_HDR + 2 * i), room;
		const uint8_t *node = p + off;
		struct key k;

		if (off < upper || off % 2 != 0 || off + NODE_HDR > c->psize)
			return bad(c, STORE_DMG_PAGE,
			           "%s: page %" PRIu64 " node %zu at a bad offset (%zu)", c->name,
			           pgno, i, off);
		room = c->psize - off;
		k.p = node + NODE_HDR;
		k.n = u16(node + 6);
		if (k.n > MAX_KEY || NODE_HDR + k.n > room)
			return bad(c, STORE_DMG_PAGE,
			           "%s: page %" PRIu64 " node %zu has a bad key size (%zu)",
			           c->name, pgno, i, k.n);
		if (flags == PG_BRANCH && i == 0)
			continue; /* node 0's key is not used */
		if (k.n == 0 || (c->tree == T_FREE && k.n != 8))
			return bad(c, STORE_DMG_PAGE,
			           "%s: page %" PRIu64 " node %zu has a bad key size (%zu)",
			           c->name, pgno, i, k.n);
		if ((prev.p && key_cmp(c, prev, k) >= 0) || (lo.p && key_cmp(c, k, lo) < 0) ||
		    (hi.p && key_cmp(c, k, hi) >= 0))
			return bad(c, STORE_DMG_PAGE, "%s: page %" PRIu64 " has keys out of order",
			           c->name, pgno);
		prev = k;
		if (flags == PG_LEAF) {
			c->entries++;
			rc = leaf_data(c, node, room);
			if (rc)
				return rc;
		}
	}
	if (flags == PG_LEAF ||
	    (c->depth_max >= 0 && c->tree == T_NAMED && level + 1 >= c->depth_max))
		return 0;
	/* the children, each between its key and the next */
	for (size_t i = 0; i < nkeys; i++) {
		const uint8_t *node = p + u16(p + PG_HDR + 2 * i);
		uint64_t child = (uint64_t)u16(node) | (uint64_t)u16(node + 2) << 16 |
		                 (uint64_t)u16(node + 4) << 32;
		struct key clo = lo, chi = hi;

		if (i > 0) {
			clo.p = node + NODE_HDR;
			clo.n = u16(node + 6);
		}
		if (i + 1 < nkeys) {
			const uint8_t *next = p + u16(p + PG_HDR + 2 * (i + 1));

			chi.p = next + NODE_HDR;
			chi.n = u16(next + 6);
		}
		rc = walk(c, child, level + 1, clo, chi);
		if (rc)
			return rc;
	}
	return 0;
}

/* Walks one tree and compares what it found with the database record. */
static int tree(struct chk *c, enum tree t, const char *name, const struct dbrec *r)
{
	struct key none = {NULL, 0};
	int rc;

	c->tree = t;
	c->name = name;
	c->leaf_level = -1;
	c->branch = c->leaf = c->overflow = c->entries = 0;
	if ((r->flags & DB_ODD) || (t == T_FREE) != ((r->flags & MDB_INTEGERKEY) != 0))
		return bad(c, STORE_DMG_HEADER, "%s: database flags 0x%x", name, r->flags);
	if (r->root == NO_PAGE) {
		if (r->depth != 0 || r->entries != 0 || r->branch || r->leaf || r->overflow)
			return bad(c, STORE_DMG_HEADER,
			           "%s: an empty database with %" PRIu64 " entries", name,
			           r->entries);
		return 0;
	}
	rc = walk(c, r->root, 0, none, none);
	if (rc || (c->depth_max >= 0 && t == T_NAMED))
		return rc;
	if (r->depth != c->leaf_level + 1 || r->entries != c->entries || r->branch != c->branch ||
	    r->leaf != c->leaf || r->overflow != c->overflow)
		return bad(c, STORE_DMG_HEADER,
		           "%s: its record says depth %u, %" PRIu64 " entries, %" PRIu64 "/%" PRIu64
		           "/%" PRIu64 " branch/leaf/overflow pages; the tree has %d, %" PRIu64
		           ", %" PRIu64 "/%" PRIu64 "/%" PRIu64,
		           name, r->depth, r->entries, r->branch, r->leaf, r->overflow,
		           c->leaf_level + 1, c->entries, c->branch, c->leaf, c->overflow);
	return 0;
}

/* Meta page i at off into m (the META_LEN bytes after the page header). */
static int meta_read(struct chk *c, int i, uint64_t off, uint8_t *m)
{
	uint8_t b[PG_HDR + META_LEN];
	int rc = read_at(c, off, b, sizeof(b));

	if (rc)
		return rc;
	memcpy(m, b + PG_HDR, META_LEN);
	if (u64(b) != (uint64_t)i || !(u16(b + 10) & PG_META) || u32(m) != META_MAGIC)
		return bad(c, STORE_DMG_HEADER, "meta page %d is not an LMDB meta page", i);
	if (u32(m + 4) != META_VER)
		return bad(c, STORE_DMG_HEADER, "meta page %d: format version %u, not %u", i,
		           u32(m + 4), META_VER);
	return 0;
}

static int check(int fd, uint64_t map_size, int *reason, char *why, size_t whylen, uint64_t *pages,
                 size_t max, size_t *npages, int depth_max, const int *stop)
{
	struct chk c = {.fd = fd,
	                .reason = reason,
	                .why = why,
	                .whylen = whylen,
	                .depth_max = depth_max,
	                .stop = stop};
	uint8_t m0[META_LEN], m1[META_LEN], *m;
	struct dbrec fr, mr;
	struct stat st;
	uint64_t size, max_pages;
	int rc;

	*reason = STORE_DMG_NONE;
	snprintf(why, whylen, "intact");
	if (fstat(fd, &st) != 0)
		return bad(&c, STORE_DMG_READ, "cannot stat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return bad(&c, STORE_DMG_NOT_FILE, "not a regular file");
	size = (uint64_t)st.st_size;
	if (size == 0)
		return bad(&c, STORE_DMG_EMPTY, "0 bytes");
	if (size < PG_HDR + META_LEN)
		return bad(&c, STORE_DMG_SIZE, "%" PRIu64 " bytes: shorter than a meta page", size);
	rc = meta_read(&c, 0, 0, m0);
	if (rc)
		return rc;
	c.psize = u32(m0 + META_DBS);
	if (c.psize < MIN_PSIZE || c.psize > MAX_PSIZE || (c.psize & (c.psize - 1)) != 0)
		return bad(&c, STORE_DMG_HEADER, "meta page 0: page size %u", c.psize);
	if (size < 2ull * c.psize || size % c.psize != 0)
		return bad(&c, STORE_DMG_SIZE,
		           "%" PRIu64 " bytes: not a whole number of %u-byte pages, at least 2",
		           size, c.psize);
	rc = meta_read(&c, 1, c.psize, m1);
	if (rc)
		return rc;
	if (u32(m1 + META_DBS) != c.psize)
		return bad(&c, STORE_DMG_HEADER,
		           "the meta pages disagree on the page size (%u, %u)", c.psize,
		           u32(m1 + META_DBS));
	/* LMDB uses the later snapshot (page 0 on a tie) */
	m = u64(m1 + META_TXNID) > u64(m0 + META_TXNID) ? m1 : m0;
	c.file_pages = size / c.psize;
	c.last_pg = u64(m + META_LAST);
	/* LMDB grows its map to the last page: bound it by the file or the
	 * map asked for (pages past the file's end may be free ones) */
	max_pages = c.file_pages > map_size / c.psize ? c.file_pages : map_size / c.psize;
	if (c.last_pg < 1 || c.last_pg >= max_pages)
		return bad(&c, STORE_DMG_HEADER,
		           "meta page %d: last page %" PRIu64 " (the file has %" PRIu64 " pages)",
		           m == m1, c.last_pg, c.file_pages);
	dbrec_read(&fr, m + META_DBS);
	dbrec_read(&mr, m + META_DBS + DB_LEN);
	c.used = calloc(c.last_pg / 8 + 1, 1);
	c.freed = calloc(c.last_pg / 8 + 1, 1);
	if (c.used == NULL || c.freed == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = tree(&c, T_MAIN, "main", &mr);
	for (int i = 0; rc == 0 && i < c.nnamed; i++) {
		struct dbrec r = c.named[i];
		char name[80];

		snprintf(name, sizeof(name), "database '%s'", c.names[i]);
		rc = tree(&c, T_NAMED, name, &r);
	}
	if (rc == 0 && depth_max < 0)
		rc = tree(&c, T_FREE, "free list", &fr);
	for (uint64_t i = 2; rc == 0 && depth_max < 0 && i <= c.last_pg; i++) {
		if (bit_get(c.used, i) && bit_get(c.freed, i))
			rc = bad(&c, STORE_DMG_PAGE, "page %" PRIu64 " is both in use and free", i);
		if (bit_get(c.used, i) && pages && *npages < max)
			pages[(*npages)++] = i;
	}
out:
	for (int i = 0; i < MAX_DEPTH; i++)
		free(c.buf[i]);
	free(c.used);
	free(c.freed);
	if (rc == 0)
		*reason = STORE_DMG_NONE;
	return rc;
}

int store_index_check(int fd, uint64_t map_size, int *reason, char *why, size_t whylen)
{
	return check(fd, map_size, reason, why, whylen, NULL, 0, NULL, -1, NULL);
}

int store_index_check_quick(int fd, uint64_t map_size, int *reason, char *why, size_t whylen)
{
	return check(fd, map_size, reason, why, whylen, NULL, 0, NULL, STORE_CHECK_QUICK_DEPTH,
	             NULL);
}

int store_index_check_stop(int fd, uint64_t map_size, int *reason, char *why, size_t whylen,
                           const int *stop)
{
	return check(fd, map_size, reason, why, whylen, NULL, 0, NULL, -1, stop);
}

int store_index_pages(int fd, uint64_t map_size, uint64_t *pages, size_t max, size_t *n, char *why,
                      size_t whylen)
{
	int reason;

	*n = 0;
	return check(fd, map_size, &reason, why, whylen, pages, max, n, -1, NULL);
}

int store_index_check_path(const char *path, uint64_t map_size, int *reason, char *why,
                           size_t whylen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), rc;

	if (fd < 0 && errno == ELOOP) {
		*reason = STORE_DMG_NOT_FILE;
		snprintf(why, whylen, "a symbolic link");
		return 1;
	}
	if (fd < 0)
		return -errno;
	rc = store_index_check(fd, map_size ? map_size : STORE_DEFAULT_MAP_SIZE, reason, why,
	                       whylen);
	close(fd);
	return rc;
}

const char *store_damage_name(int reason)
{
	static const char *const names[STORE_DMG_N] = {
	    [STORE_DMG_NONE] = "none",           [STORE_DMG_EMPTY] = "empty",
	    [STORE_DMG_NOT_FILE] = "not_a_file", [STORE_DMG_SIZE] = "size",
	    [STORE_DMG_HEADER] = "header",       [STORE_DMG_PAGE] = "page",
	    [STORE_DMG_READ] = "read_error",     [STORE_DMG_LMDB] = "lmdb",
	};

	return reason >= 0 && reason < STORE_DMG_N ? names[reason] : "?";
}
