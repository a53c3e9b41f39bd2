/* How one chunk is fetched from the upstream: the engine's fills (read.c)
 * use it, and the upstream pool logs with it what a chunk costs.
 *
 * A server answers a READ with at most its rtmax bytes (FSINFO), and may
 * answer fewer than asked before the end of the file (RFC 1813 allows it).
 * A chunk is therefore asked as READs of at most `piece` bytes, up to
 * `window` of them in flight, and the rest of a short answer is asked
 * again. This is the bookkeeping alone: which byte ranges to ask next,
 * which are in, where the file ends. No I/O, no allocation, so it can be
 * tested by itself (tests/unit/test_fillplan.c); read.c sends the READs.
 *
 * Offsets are relative to the chunk's first byte. A byte counts as in when
 * it lies below `next` (it was asked) and in no READ still out and no range
 * waiting to be asked again. */
#ifndef CFS_FILLPLAN_H
#define CFS_FILLPLAN_H

#include <stdint.h>

#define FILL_WINDOW       16 /* READs of one fill in flight at most */
#define FILL_REDO_MAX     32 /* ranges waiting to be asked again */
#define FILL_MIN_PIECE    4096
#define FILL_SIZE_UNKNOWN UINT64_MAX

struct fill_range {
	uint32_t off, len;
};

struct fill_plan {
	uint32_t chunk;  /* most bytes the chunk holds (chunk_size) */
	uint32_t piece;  /* bytes per READ; lowered by a short answer */
	uint32_t window; /* READs in flight at most (<= FILL_WINDOW) */
	uint32_t limit;  /* bytes wanted: to the chunk's end or the file's, as known */
	int size_known;  /* limit comes from the file's size, not a first probe */
	uint32_t next;   /* first byte not asked yet */
	uint32_t eof_at; /* where the server said the file ends; UINT32_MAX: not seen */
	uint32_t nout;
	int out_busy[FILL_WINDOW];
	struct fill_range out[FILL_WINDOW]; /* READs in flight, by slot */
	uint32_t nredo;
	struct fill_range redo[FILL_REDO_MAX]; /* sorted, disjoint */
	uint32_t reads;                        /* READs handed out */
	uint32_t short_reads;                  /* answers with fewer bytes than asked, before EOF */
	uint32_t max_reads;                    /* beyond this the server makes no real progress */
};

/* The READ size a fill uses for a server's rtmax: at most the chunk, a
 * multiple of 4 KiB when rtmax allows (servers like aligned reads); rtmax 0
 * (not said) means the whole chunk. */
uint32_t fill_read_size(uint32_t rtmax, uint32_t chunk);
/* READs one full chunk takes at that size. */
uint32_t fill_reads_per_chunk(uint32_t piece, uint32_t chunk);

/* Starts a plan for a chunk of `chunk` bytes whose file has `left` bytes
 * from the chunk's start on (FILL_SIZE_UNKNOWN: not known; then only a
 * first READ is planned until fill_plan_size() says more). */
void fill_plan_init(struct fill_plan *p, uint32_t chunk, uint32_t piece, uint32_t window,
                    uint64_t left);
/* The file has `left` bytes from the chunk's start on (from a reply's
 * attributes): the plan grows or shrinks to it. */
void fill_plan_size(struct fill_plan *p, uint64_t left);
/* The next READ to send: 1 with its slot and range, 0 when none now (the
 * window is full or everything wanted was asked). */
int fill_plan_next(struct fill_plan *p, uint32_t *slot, struct fill_range *r);
/* The READ in slot was answered with got bytes (eof: the server said the
 * file ends there). Returns 0, or -EPROTO when the answer cannot be used
 * (more bytes than asked, none before EOF, no progress in many tries, or
 * too many short answers to keep track of): the fill must be given up. */
int fill_plan_reply(struct fill_plan *p, uint32_t slot, uint32_t got, int eof);
/* The READ in slot failed or will be ignored: forget it (nothing is in). */
void fill_plan_cancel(struct fill_plan *p, uint32_t slot);
/* Nothing out and nothing more to ask. */
int fill_plan_done(const struct fill_plan *p);
/* Bytes of the chunk that exist, as far as the plan knows: min(limit, eof_at). */
uint32_t fill_plan_end(const struct fill_plan *p);
/* Every existing byte of [from, to) is in (bytes at or past
 * fill_plan_end() do not exist). Only meaningful when size_known. */
int fill_plan_covered(const struct fill_plan *p, uint32_t from, uint32_t to);

#endif
