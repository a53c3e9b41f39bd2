/* The set of recently accessed objects: handle -> time of the last access
 * (unix ms), an open-addressing hash over an append-only array. The LRU
 * index is brought up to date from it in rounds (store_obj.c). */
#include "store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static uint32_t slot_of(const struct store_touch_set *t, const void *fh, uint32_t fhlen)
{
	uint32_t mask = t->nslots - 1, i = (uint32_t)XXH3_64bits(fh, fhlen) & mask;

	while (t->slots[i]) {
		const struct store_touch_ent *e = &t->ents[t->slots[i] - 1];

		if (e->len == fhlen && memcmp(e->fh, fh, fhlen) == 0)
			break;
		i = (i + 1) & mask;
	}
	return i;
}

static int grow(struct store_touch_set *t)
{
	uint32_t nslots = t->nslots ? 2 * t->nslots : 256;
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	struct store_touch_ent *ents;

	if (slots == NULL)
		return -ENOMEM;
	ents = realloc(t->ents, (nslots / 2) * sizeof(*ents));
	if (ents == NULL) {
		free(slots);
		return -ENOMEM;
	}
	free(t->slots);
	t->ents = ents;
	t->slots = slots;
	t->nslots = nslots;
	for (uint32_t e = 0; e < t->n; e++)
		t->slots[slot_of(t, t->ents[e].fh, t->ents[e].len)] = e + 1;
	return 0;
}

struct store_touch_ent *store_touchset_find(const struct store_touch_set *t, const void *fh,
                                            uint32_t fhlen)
{
	uint32_t i;

	if (t->n == 0)
		return NULL;
	i = slot_of(t, fh, fhlen);
	return t->slots[i] ? &t->ents[t->slots[i] - 1] : NULL;
}

int store_touchset_put(struct store_touch_set *t, const void *fh, uint32_t fhlen, uint64_t when,
                       uint32_t max)
{
	struct store_touch_ent *e = store_touchset_find(t, fh, fhlen);

	if (e) {
		if (when > e->when)
			e->when = when;
		return 0;
	}
	if (t->n >= max)
		return -ENOSPC;

	if ((t->n + 1) * 2 > t->nslots && grow(t) != 0)
		return -ENOMEM;
	e = &t->ents[t->n];
	e->len = (uint8_t)fhlen;
	memcpy(e->fh, fh, fhlen);
	e->when = when;
	e->applied = 0;
	t->slots[slot_of(t, fh, fhlen)] = ++t->n;

	return 0;
}

void store_touchset_compact(struct store_touch_set *t)
{
	uint32_t keep = 0;

	for (uint32_t i = 0; i < t->n; i++)
		if (t->ents[i].when > t->ents[i].applied)
			t->ents[keep++] = t->ents[i];
	/* A burst may have grown the table: give the memory back. */
	if (keep == 0 && t->nslots > 4096) {
		store_touchset_free(t);
		return;
	}
	t->n = keep;
	if (t->nslots == 0)
		return;
	memset(t->slots, 0, t->nslots * sizeof(*t->slots));
	for (uint32_t e = 0; e < t->n; e++)
		t->slots[slot_of(t, t->ents[e].fh, t->ents[e].len)] = e + 1;
}

void store_touchset_free(struct store_touch_set *t)
{
	free(t->slots);
	free(t->ents);
	t->slots = NULL;
	t->ents = NULL;
	t->n = 0;
	t->nslots = 0;
}
