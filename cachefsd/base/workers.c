#include "workers.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct job {
	work_fn work;
	done_fn done;
	void *arg;
	uint64_t key; /* 0: none */
	struct job *next;
};

struct thread {
	struct workers *w;
	uint64_t key; /* under mu: the key of the job it runs (0: none) */
};

struct workers {
	struct loop *loop;
	int efd;
	int nthreads;
	pthread_t *threads;
	struct thread *ts;
	int nslots; /* entries of ts (set before any thread starts) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *todo_head, *todo_tail; /* under mu */
	struct job *done_head, *done_tail; /* under mu */
	int stopping;			   /* under mu */
	int pending;			   /* loop thread only */
};

static void push(struct job **head, struct job **tail, struct job *j)
{
	j->next = NULL;
	if (*tail)
		(*tail)->next = j;
	else
		*head = j;
	*tail = j;
}

static int key_running(const struct workers *w, uint64_t key)
{
	for (int i = 0; i < w->nslots; i++)
		if (w->ts[i].key == key)
			return 1;
	return 0;
}

/* Unlinks and returns the first queued job that may run now: unkeyed, or
 * of a key no thread runs (under mu). NULL when none may. */
static struct job *take(struct workers *w)
{
	struct job *prev = NULL;

	for (struct job *j = w->todo_head; j; prev = j, j = j->next) {
		if (j->key && key_running(w, j->key))
			continue;
		if (prev)
			prev->next = j->next;
		else
			w->todo_head = j->next;
		if (w->todo_tail == j)
			w->todo_tail = prev;
		return j;
	}
	return NULL;
}

static void *worker_main(void *arg)
{
	struct thread *t = arg;
	struct workers *w = t->w;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct job *j;

		while ((j = take(w)) == NULL && !(w->stopping && w->todo_head == NULL))
			pthread_cond_wait(&w->cv, &w->mu);
		if (j == NULL)
			break; /* stopping and drained */
		t->key = j->key;
		pthread_mutex_unlock(&w->mu);

		j->work(j->arg);

		pthread_mutex_lock(&w->mu);
		t->key = 0;
		if (j->key && w->todo_head)
			pthread_cond_broadcast(&w->cv); /* a job of that key may wait */
		int was_empty = w->done_head == NULL;
		push(&w->done_head, &w->done_tail, j);
		if (was_empty) {
			uint64_t one = 1;
			if (write(w->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
				log_err("workers: eventfd write: %d", errno);
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Runs the done functions of finished jobs (loop thread). */
static void reap(struct workers *w)
{
	struct job *list;
	uint64_t v;

	if (read(w->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_err("workers: eventfd read: %d", errno);
	pthread_mutex_lock(&w->mu);
	list = w->done_head;
	w->done_head = w->done_tail = NULL;
	pthread_mutex_unlock(&w->mu);
	while (list) {
		struct job *j = list;
		list = j->next;
		w->pending--;
		if (j->done)
			j->done(j->arg);
		free(j);
	}
}

static void efd_io(struct loop *l, int fd, int revents, void *arg)
{
	(void)l;
	(void)fd;
	(void)revents;
	reap(arg);
}

/* Tells the threads to finish what is queued, and waits for them. */
static void join_all(struct workers *w)
{
	pthread_mutex_lock(&w->mu);
	w->stopping = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	for (int i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
}

int workers_start(struct loop *l, int n, struct workers **out)
{
	struct workers *w = calloc(1, sizeof(*w));
	int rc;

	if (w == NULL)
		return -ENOMEM;
	w->loop = l;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		rc = -errno;
		free(w);
		return rc;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->threads = calloc((size_t)n, sizeof(pthread_t));
	w->ts = calloc((size_t)n, sizeof(*w->ts));
	if (w->threads == NULL || w->ts == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	w->nslots = n;
	for (int i = 0; i < n; i++) {
		w->ts[i].w = w;
		rc = -pthread_create(&w->threads[i], NULL, worker_main, &w->ts[i]);
		if (rc)
			goto fail;
		w->nthreads++;
	}
	rc = loop_add(l, w->efd, POLLIN, efd_io, w);
	if (rc)
		goto fail;
	*out = w;
	return 0;
fail:
	join_all(w);
	free(w->threads);
	free(w->ts);
	close(w->efd);
	free(w);
	return rc;
}

int workers_submit_keyed(struct workers *w, uint64_t key, work_fn work, done_fn done, void *arg)
{
	struct job *j = malloc(sizeof(*j));

	if (j == NULL)
		return -ENOMEM;
	j->work = work;
	j->done = done;
	j->arg = arg;
	j->key = key;
	w->pending++;
	pthread_mutex_lock(&w->mu);
	push(&w->todo_head, &w->todo_tail, j);
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

int workers_submit(struct workers *w, work_fn work, done_fn done, void *arg)
{
	return workers_submit_keyed(w, 0, work, done, arg);
}

int workers_pending(const struct workers *w)
{
	return w->pending;
}

void workers_stop(struct workers *w)
{
	if (w == NULL)
		return;
	join_all(w);
	reap(w);
	loop_del(w->loop, w->efd);
	close(w->efd);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->threads);
	free(w->ts);
	free(w);
}
