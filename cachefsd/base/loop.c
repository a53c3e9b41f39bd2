#include "loop.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define LOOP_MAX_EVENTS 128
#define LOOP_MAX_HOOKS	8

struct loop_slot {
	loop_io_fn fn;
	void *arg;
	int events;
	uint32_t gen; /* bumped on every add/del: stale events are dropped */
};

struct loop_timer {
	uint64_t when;
	uint64_t period;
	loop_fn fn;
	void *arg;
	int cancelled;
	struct loop_timer *next;
};

struct loop {
	int epfd;
	int stop;
	int pending;
	uint64_t now;
	struct loop_slot *slots;
	int nslots;
	struct loop_timer *timers;
	struct {
		loop_fn fn;
		void *arg;
	} hooks[LOOP_MAX_HOOKS];
	int nhooks;
	unsigned spin_us;  /* busy-poll window (0: off) */
	int gap_short;     /* the last wait ended in events within spin_us */
};

uint64_t loop_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t loop_clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

struct loop *loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	l->now = loop_clock_ms();
	return l;
}

void loop_free(struct loop *l)
{
	struct loop_timer *t, *n;

	if (l == NULL)
		return;
	for (t = l->timers; t; t = n) {
		n = t->next;
		free(t);
	}
	close(l->epfd);
	free(l->slots);
	free(l);
}

static int slot_reserve(struct loop *l, int fd)
{
	if (fd < l->nslots)
		return 0;
	int n = l->nslots ? l->nslots : 64;
	while (n <= fd)
		n *= 2;
	struct loop_slot *s = realloc(l->slots, (size_t)n * sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	memset(s + l->nslots, 0, (size_t)(n - l->nslots) * sizeof(*s));
	l->slots = s;
	l->nslots = n;
	return 0;
}

static uint32_t to_epoll(int events)
{
	uint32_t e = 0;

	if (events & POLLIN)
		e |= EPOLLIN;
	if (events & POLLOUT)
		e |= EPOLLOUT;
	return e;
}

int loop_add(struct loop *l, int fd, int events, loop_io_fn fn, void *arg)
{
	struct epoll_event ev;
	int rc = slot_reserve(l, fd);

	if (rc)
		return rc;
	struct loop_slot *s = &l->slots[fd];
	s->gen++;
	memset(&ev, 0, sizeof(ev));
	ev.events = to_epoll(events);
	ev.data.u64 = (uint64_t)(uint32_t)fd | ((uint64_t)s->gen << 32);
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	s->fn = fn;
	s->arg = arg;
	s->events = events;
	return 0;
}

int loop_set(struct loop *l, int fd, int events)
{
	struct epoll_event ev;

	if (fd < 0 || fd >= l->nslots || l->slots[fd].fn == NULL)
		return -EBADF;
	struct loop_slot *s = &l->slots[fd];
	if (s->events == events)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = to_epoll(events);
	ev.data.u64 = (uint64_t)(uint32_t)fd | ((uint64_t)s->gen << 32);
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	s->events = events;
	return 0;
}

void loop_del(struct loop *l, int fd)
{
	if (fd < 0 || fd >= l->nslots || l->slots[fd].fn == NULL)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->slots[fd].fn = NULL;
	l->slots[fd].arg = NULL;
	l->slots[fd].events = 0;
	l->slots[fd].gen++;
}

struct loop_timer *loop_timer_add(struct loop *l, uint64_t delay_ms, uint64_t period_ms,
				  loop_fn fn, void *arg)
{
	struct loop_timer *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->when = loop_clock_ms() + delay_ms;
	t->period = period_ms;
	t->fn = fn;
	t->arg = arg;
	t->next = l->timers;
	l->timers = t;
	return t;
}

void loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
	(void)l;
	if (t)
		t->cancelled = 1;
}

int loop_before_sleep(struct loop *l, loop_fn fn, void *arg)
{
	if (l->nhooks == LOOP_MAX_HOOKS)
		return -ENOSPC;
	l->hooks[l->nhooks].fn = fn;
	l->hooks[l->nhooks].arg = arg;
	l->nhooks++;
	return 0;
}

void loop_before_sleep_del(struct loop *l, loop_fn fn, void *arg)
{
	for (int i = 0; i < l->nhooks; i++) {
		if (l->hooks[i].fn == fn && l->hooks[i].arg == arg) {
			memmove(&l->hooks[i], &l->hooks[i + 1],
				(size_t)(l->nhooks - i - 1) * sizeof(l->hooks[0]));
			l->nhooks--;
			return;
		}
	}
}

void loop_pending(struct loop *l)
{
	l->pending = 1;
}

void loop_stop(struct loop *l)
{
	l->stop = 1;
}

static volatile sig_atomic_t stop_signalled;

void loop_signal_stop(void)
{
	stop_signalled = 1;
}

int loop_stop_signalled(void)
{
	return stop_signalled != 0;
}

uint64_t loop_now(struct loop *l)
{
	return l->now;
}

static int next_timeout(struct loop *l, int cap)
{
	int64_t best = cap;

	for (struct loop_timer *t = l->timers; t; t = t->next) {
		if (t->cancelled)
			return 0; /* reap it soon */
		int64_t d = (int64_t)t->when - (int64_t)l->now;
		if (d < 0)
			d = 0;
		if (best < 0 || d < best)
			best = d;
	}
	return (int)best;
}

static void run_timers(struct loop *l)
{
	struct loop_timer *t, **pp;

	/* Timers added by a callback go to the list head and wait a pass;
	 * timers are only marked cancelled here and reaped below. */
	for (t = l->timers; t; t = t->next) {
		if (t->cancelled || t->when > l->now)
			continue;
		t->fn(l, t->arg);
		if (t->period && !t->cancelled)
			t->when = l->now + t->period;
		else
			t->cancelled = 1;
	}
	for (pp = &l->timers; *pp;) {
		t = *pp;
		if (t->cancelled) {
			*pp = t->next;
			free(t);
		} else {
			pp = &t->next;
		}
	}
}

void loop_once(struct loop *l, int timeout_ms)
{
	struct epoll_event evs[LOOP_MAX_EVENTS];
	int to = l->pending ? 0 : next_timeout(l, timeout_ms), n = 0;
	uint64_t t0 = 0;

	if (l->spin_us && to != 0) {
		/* Busy-poll. A client that waits for each reply sends its next
		 * call some microseconds after the last reply, and an upstream
		 * answers within a fraction of a millisecond; sleeping in between
		 * costs a context switch and a wake-up per call, which on a
		 * virtual machine is most of the per-call cost. Poll only while
		 * the last wait was that short, so sparse traffic and an idle
		 * daemon still sleep, and never past a timer. */
		uint64_t spin = l->spin_us;

		t0 = loop_clock_us();
		if (to > 0 && (uint64_t)to * 1000 < spin)
			spin = (uint64_t)to * 1000;
		while (l->gap_short && n == 0 && loop_clock_us() - t0 < spin)
			n = epoll_wait(l->epfd, evs, LOOP_MAX_EVENTS, 0);
	}
	if (n == 0)
		n = epoll_wait(l->epfd, evs, LOOP_MAX_EVENTS, to);
	if (t0)
		l->gap_short = n > 0 && loop_clock_us() - t0 <= l->spin_us;
	l->pending = 0;
	l->now = loop_clock_ms();
	for (int i = 0; i < n; i++) {
		int fd = (int)(uint32_t)evs[i].data.u64;
		uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
		struct loop_slot *s;
		int rev = 0;

		if (fd >= l->nslots)
			continue;
		s = &l->slots[fd];
		if (s->fn == NULL || s->gen != gen)
			continue;
		if (evs[i].events & EPOLLIN)
			rev |= POLLIN;
		if (evs[i].events & EPOLLOUT)
			rev |= POLLOUT;
		if (evs[i].events & EPOLLERR)
			rev |= POLLERR;
		if (evs[i].events & EPOLLHUP)
			rev |= POLLHUP;
		s->fn(l, fd, rev, s->arg);
	}
	run_timers(l);
	for (int i = 0; i < l->nhooks; i++)
		l->hooks[i].fn(l, l->hooks[i].arg);
}

void loop_set_busy_poll(struct loop *l, unsigned us)
{
	l->spin_us = us;
}

int loop_run(struct loop *l)
{
	l->stop = 0;
	while (!l->stop)
		loop_once(l, 1000);
	return 0;
}
