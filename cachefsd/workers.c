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
	struct job *next;
};

struct workers {
	struct loop *loop;
	int efd;
	int nthreads;
	pthread_t *threads;
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

static void *worker_main(void *arg)
{
	struct workers *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct job *j;

		while (w->todo_head == NULL && !w->stopping)
			pthread_cond_wait(&w->cv, &w->mu);
		j = w->todo_head;
		if (j == NULL)
			break; /* stopping and drained */
		w->todo_head = j->next;
		if (w->todo_head == NULL)
			w->todo_tail = NULL;
		pthread_mutex_unlock(&w->mu);

		j->work(j->arg);

		pthread_mutex_lock(&w->mu);
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
	if (w->threads == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < n; i++) {
		rc = -pthread_create(&w->threads[i], NULL, worker_main, w);
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
	close(w->efd);
	free(w);
	return rc;
}

int workers_submit(struct workers *w, work_fn work, done_fn done, void *arg)
{
	struct job *j = malloc(sizeof(*j));

	if (j == NULL)
		return -ENOMEM;
	j->work = work;
	j->done = done;
	j->arg = arg;
	w->pending++;
	pthread_mutex_lock(&w->mu);
	push(&w->todo_head, &w->todo_tail, j);
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
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
	free(w);
}
