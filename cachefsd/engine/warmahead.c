/* Cached bytes read ahead from the cache disk (both modes): a client that
 * lists a directory with READDIRPLUS opens and reads what it listed next,
 * in the order listed. After a restart or with the page cache dropped
 * (warm-disk), each of those READs would wait on the loop thread for the
 * index pages that hold the file's record and, for a small file, its bytes
 * (a random read of the cache disk each). So when a listing reaches its
 * caller, a worker reads the records of its regular files (and the inline
 * bytes they hold) in the order listed, while the client does its LOOKUP,
 * GETATTR and ACCESS of the first ones: by the time it READs, the pages
 * are in memory.
 *
 * Only reads: nothing is decided from what the worker saw (the loop thread
 * reads the records again, with every check it always makes), so a record
 * changed meanwhile costs nothing but the read. Bounded: at most
 * warm_ahead entries of a listing, in jobs of WARM_BATCH run one at a time
 * on one worker (keyed), at most WARM_QUEUED jobs queued; listings beyond
 * are not read ahead. Called by forward.c and metaanswer.c next to
 * engine_access_ahead(); uses the store (store_warm_objs()) and the disk
 * workers. */
#include "engine_int.h"
#include "workers.h"

#include <stdlib.h>
#include <string.h>

#define WARM_BATCH  32
#define WARM_QUEUED 64
/* the workers' key of these jobs: one at a time, never more than one of
 * the io_threads busy with them */
#define WARM_KEY 0x7761726d61686561ull /* "warmahea" */

struct warm_job {
	struct engine *e;
	unsigned n, found;
	uint32_t len[WARM_BATCH];
	uint8_t fh[WARM_BATCH][NFS3_FHSIZE];
};

static void warm_work(void *arg)
{
	struct warm_job *j = arg;

	j->found = store_warm_objs(j->e->store, &j->fh[0][0], NFS3_FHSIZE, j->len, j->n);
}

static void warm_done(void *arg)
{
	struct warm_job *j = arg;

	j->e->warm_queued--;
	j->e->ctr.warm_ahead_objects += j->found;
	free(j);
}

/* Queues j (owned by the workers then); frees it when it cannot. */
static int warm_submit(struct engine *e, struct warm_job *j)
{
	if (workers_submit_keyed(e->workers, WARM_KEY, warm_work, warm_done, j) != 0) {
		free(j);
		return -1;
	}
	e->warm_queued++;
	return 0;
}

void engine_warm_ahead(struct engine *e, const void *res)
{
	const READDIRPLUS3res *r = res;
	const entryplus3 *en;
	struct warm_job *j = NULL;
	unsigned left = (unsigned)e->cfg->warm_ahead;

	if (left == 0 || e->workers == NULL || e->store == NULL || r == NULL ||
	    r->status != NFS3_OK || !store_fill_allowed(e->store))
		return;
	for (en = r->READDIRPLUS3res_u.resok.reply.entries; en && left; en = en->nextentry) {
		const nfs_fh3 *fh = &en->name_handle.post_op_fh3_u.handle;
		const fattr3 *a = &en->name_attributes.post_op_attr_u.attributes;

		if (!en->name_handle.handle_follows || !en->name_attributes.attributes_follow ||
		    a->type != NF3REG || a->size == 0 || fh->data.data_len == 0 ||
		    fh->data.data_len > NFS3_FHSIZE)
			continue;
		if (j == NULL) {
			if (e->warm_queued >= WARM_QUEUED)
				return;
			j = malloc(sizeof(*j));
			if (j == NULL)
				return;
			j->e = e;
			j->n = 0;
			j->found = 0;
		}
		memcpy(j->fh[j->n], fh->data.data_val, fh->data.data_len);
		j->len[j->n++] = fh->data.data_len;
		left--;
		if (j->n == WARM_BATCH) {
			if (warm_submit(e, j) != 0)
				return;
			j = NULL;
		}
	}
	if (j && j->n)
		warm_submit(e, j);
	else
		free(j);
}
