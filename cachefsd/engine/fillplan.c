/* The bookkeeping of one chunk fill. See fillplan.h. */
#include "fillplan.h"

#include <errno.h>
#include <string.h>

uint32_t fill_read_size(uint32_t rtmax, uint32_t chunk)
{
	if (rtmax == 0 || rtmax >= chunk)
		return chunk;
	if (rtmax >= FILL_MIN_PIECE)
		return rtmax & ~(uint32_t)(FILL_MIN_PIECE - 1);
	return rtmax; /* a tiny server: slow, but it works */
}

uint32_t fill_reads_per_chunk(uint32_t piece, uint32_t chunk)
{
	return piece ? (chunk + piece - 1) / piece : 1;
}

void fill_plan_init(struct fill_plan *p, uint32_t chunk, uint32_t piece, uint32_t window,
                    uint64_t left)
{
	memset(p, 0, sizeof(*p));
	p->chunk = chunk;
	p->piece = piece == 0 || piece > chunk ? chunk : piece;
	p->window = window == 0 ? 1 : window > FILL_WINDOW ? FILL_WINDOW : window;
	p->eof_at = UINT32_MAX;
	/* every answer brings at least FILL_MIN_PIECE bytes or lowers the
	 * piece no further than that; more READs than this means a server
	 * that dribbles */
	p->max_reads = chunk / FILL_MIN_PIECE + 2 * FILL_WINDOW;
	if (left == FILL_SIZE_UNKNOWN || left == 0) {
		/* one READ first: its answer says how big the file is (a known
		 * size of 0 is asked too: the server's answer is the truth) */
		p->limit = p->piece;
	} else {
		p->limit = left < chunk ? (uint32_t)left : chunk;
		p->size_known = 1;
	}
}

uint32_t fill_plan_end(const struct fill_plan *p)
{
	return p->limit < p->eof_at ? p->limit : p->eof_at;
}

void fill_plan_size(struct fill_plan *p, uint64_t left)
{
	if (left == FILL_SIZE_UNKNOWN)
		return;
	p->limit = left < p->chunk ? (uint32_t)left : p->chunk;
	p->size_known = 1;
}

/* Ranges to ask again that still matter: cut at the end of the file. */
static void trim_redo(struct fill_plan *p)
{
	uint32_t end = fill_plan_end(p), n = 0;

	for (uint32_t i = 0; i < p->nredo; i++) {
		struct fill_range r = p->redo[i];
		if (r.off >= end)
			continue;
		if (r.len > end - r.off)
			r.len = end - r.off;
		p->redo[n++] = r;
	}
	p->nredo = n;
}

static int more_to_ask(const struct fill_plan *p)
{
	uint32_t end = fill_plan_end(p);

	for (uint32_t i = 0; i < p->nredo; i++)
		if (p->redo[i].off < end)
			return 1;
	return p->next < end;
}

int fill_plan_next(struct fill_plan *p, uint32_t *slot, struct fill_range *r)
{
	uint32_t s;

	trim_redo(p);
	if (p->nout >= p->window || !more_to_ask(p))
		return 0;
	if (p->nredo > 0) {
		/* the rest of a short answer first: the oldest bytes are the
		 * ones a waiting client most likely needs */
		struct fill_range *x = &p->redo[0];
		r->off = x->off;
		r->len = x->len < p->piece ? x->len : p->piece;
		x->off += r->len;
		x->len -= r->len;
		if (x->len == 0) {
			memmove(&p->redo[0], &p->redo[1], (p->nredo - 1) * sizeof(p->redo[0]));
			p->nredo--;
		}
	} else {
		uint32_t end = fill_plan_end(p);
		r->off = p->next;
		r->len = end - p->next < p->piece ? end - p->next : p->piece;
		p->next += r->len;
	}
	for (s = 0; s < FILL_WINDOW && p->out_busy[s]; s++)
		;
	/* nout < window <= FILL_WINDOW: a free slot exists */
	p->out_busy[s] = 1;
	p->out[s] = *r;
	p->nout++;
	p->reads++;
	*slot = s;
	return 1;
}

/* Adds [off, off + len) to the sorted, disjoint redo list, merging
 * neighbours. -ENOSPC when it would need more entries than there are. */
static int add_redo(struct fill_plan *p, uint32_t off, uint32_t len)
{
	uint32_t i = 0;

	while (i < p->nredo && p->redo[i].off < off)
		i++;
	if (i > 0 && p->redo[i - 1].off + p->redo[i - 1].len == off) {
		p->redo[i - 1].len += len;
		if (i < p->nredo && off + len == p->redo[i].off) {
			p->redo[i - 1].len += p->redo[i].len;
			memmove(&p->redo[i], &p->redo[i + 1],
			        (p->nredo - i - 1) * sizeof(p->redo[0]));
			p->nredo--;
		}
		return 0;
	}
	if (i < p->nredo && off + len == p->redo[i].off) {
		p->redo[i].off = off;
		p->redo[i].len += len;
		return 0;
	}
	if (p->nredo == FILL_REDO_MAX)
		return -ENOSPC;
	memmove(&p->redo[i + 1], &p->redo[i], (p->nredo - i) * sizeof(p->redo[0]));
	p->redo[i].off = off;
	p->redo[i].len = len;
	p->nredo++;
	return 0;
}

int fill_plan_reply(struct fill_plan *p, uint32_t slot, uint32_t got, int eof)
{
	struct fill_range r;

	if (slot >= FILL_WINDOW || !p->out_busy[slot])
		return -EINVAL;
	r = p->out[slot];
	p->out_busy[slot] = 0;
	p->nout--;
	if (got > r.len)
		return -EPROTO; /* more than asked */
	if (eof) {
		if (r.off + got < p->eof_at)
			p->eof_at = r.off + got;
	} else if (got < r.len) {
		/* RFC 1813 lets a server answer less than asked before EOF:
		 * ask again for the rest. An answer of nothing, not at EOF,
		 * would be asked again forever. */
		if (got == 0)
			return -EPROTO;
		p->short_reads++;
		if (got >= FILL_MIN_PIECE && got < p->piece)
			p->piece = got & ~(uint32_t)(FILL_MIN_PIECE - 1);
		if (add_redo(p, r.off + got, r.len - got) != 0)
			return -EPROTO;
	}
	if (p->reads >= p->max_reads && more_to_ask(p))
		return -EPROTO;
	return 0;
}

void fill_plan_cancel(struct fill_plan *p, uint32_t slot)
{
	if (slot < FILL_WINDOW && p->out_busy[slot]) {
		p->out_busy[slot] = 0;
		p->nout--;
	}
}

int fill_plan_done(const struct fill_plan *p)
{
	return p->nout == 0 && !more_to_ask(p);
}

static int overlaps(const struct fill_range *r, uint32_t from, uint32_t to)
{
	return r->len && r->off < to && from < r->off + r->len;
}

int fill_plan_covered(const struct fill_plan *p, uint32_t from, uint32_t to)
{
	uint32_t end = fill_plan_end(p);

	if (to > end)
		to = end;
	if (from >= to)
		return 1;
	if (to > p->next)
		return 0;
	for (uint32_t s = 0; s < FILL_WINDOW; s++)
		if (p->out_busy[s] && overlaps(&p->out[s], from, to))
			return 0;
	for (uint32_t i = 0; i < p->nredo; i++)
		if (overlaps(&p->redo[i], from, to))
			return 0;
	return 1;
}
