/* A small pool of worker threads for blocking disk work (pread, pwrite,
 * checksums), so the event loop never waits on the disk. A job's work
 * function runs on a worker; its done function runs afterwards on the loop
 * thread (completions are posted through an eventfd). */
#ifndef CFS_WORKERS_H
#define CFS_WORKERS_H

#include "loop.h"

#include <stdint.h>

struct workers;

typedef void (*work_fn)(void *arg); /* on a worker thread */
typedef void (*done_fn)(void *arg); /* on the loop thread, after work */

/* Starts n threads (1..64). Returns 0 or -errno. */
int workers_start(struct loop *l, int n, struct workers **out);
/* Queues a job. Returns 0 (done will run exactly once, later, on the loop
 * thread) or -ENOMEM (neither runs). */
int workers_submit(struct workers *w, work_fn work, done_fn done, void *arg);
/* The same, but jobs of one nonzero key run one at a time, in the order they
 * were queued (writes to one file: concurrent writers of one file spin on
 * its inode lock). Jobs of other keys and unkeyed jobs pass them. */
int workers_submit_keyed(struct workers *w, uint64_t key, work_fn work, done_fn done, void *arg);
/* Jobs queued or running. */
int workers_pending(const struct workers *w);
/* Finishes every queued job (running done functions), stops the threads. */
void workers_stop(struct workers *w);

#endif
