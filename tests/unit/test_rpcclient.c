/* proto/rpcclient.c: the small RPC client the locks room forwards NLM
 * with. Against a server in the test's own loop: a call whose connection
 * dies under it is sent again on a new one (hard, as NFS) and its answer
 * comes back with the credential and the argument bytes as given; an
 * RPCC_ONCE call to a port nobody listens on fails instead of waiting;
 * an RPC error is handed back as its accept_stat; a one-way call ends
 * once written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop.h"
#include "rpcclient.h"

struct srv {
	int lfd, conns;
	int close_first; /* the first connection dies with the call */
	uint32_t answer; /* accept_stat to answer */
	uint32_t prog, vers, proc, uid;
	uint8_t args[16];
	uint32_t arglen;
};

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void on_conn(struct loop *l, int fd, int revents, void *arg)
{
	struct srv *s = arg;
	uint8_t rec[1024], out[64];
	ssize_t n;

	(void)revents;
	n = read(fd, rec, sizeof(rec));
	if (n <= 0 || (s->conns == 1 && s->close_first)) {
		loop_del(l, fd);
		close(fd);
		return;
	}
	assert_true(n >= 4 + 40);
	/* mark, xid, CALL, 2, prog, vers, proc, cred AUTH_SYS ... */
	s->prog = get32(rec + 16);
	s->vers = get32(rec + 20);
	s->proc = get32(rec + 24);
	uint32_t clen = get32(rec + 32);
	const uint8_t *body = rec + 36;
	uint32_t mlen = get32(body + 4);
	s->uid = get32(body + 8 + ((mlen + 3) & ~3u));
	size_t args = 36 + clen + 8;
	s->arglen = (uint32_t)((size_t)n - args);
	memcpy(s->args, rec + args, s->arglen < 16 ? s->arglen : 16);
	/* REPLY: xid, 1, MSG_ACCEPTED, null verifier, accept_stat, [42] */
	memset(out, 0, sizeof(out));
	memcpy(out + 4, rec + 4, 4);
	put32(out + 8, 1);
	put32(out + 24, s->answer);
	put32(out + 28, 42);
	uint32_t len = s->answer == 0 ? 28 : 24;
	put32(out, 0x80000000u | len);
	assert_int_equal(write(fd, out, 4 + len), 4 + len);
}

static void on_accept(struct loop *l, int fd, int revents, void *arg)
{
	struct srv *s = arg;
	int c = accept(fd, NULL, NULL);

	(void)revents;
	assert_true(c >= 0);
	s->conns++;
	loop_add(l, c, POLLIN, on_conn, s);
}

struct outcome {
	int done, status;
	uint32_t value;
};

static void cb(int status, const uint8_t *res, uint32_t len, void *priv)
{
	struct outcome *o = priv;

	o->done = 1;
	o->status = status;
	if (status == 0 && len >= 4)
		o->value = get32(res);
}

static int listener(struct sockaddr_storage *ss)
{
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	socklen_t sl = sizeof(*a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(ss, 0, sizeof(*ss));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)a, sizeof(*a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	getsockname(fd, (struct sockaddr *)a, &sl);
	return fd;
}

static void run(struct loop *l, struct outcome *o)
{
	for (int i = 0; i < 500 && !o->done; i++)
		loop_once(l, 10);
}

static void test_resent_after_reconnect(void **state)
{
	struct loop *l = loop_new();
	struct srv s = {.close_first = 1};
	struct sockaddr_storage ss;
	struct cfs_cred cred = {.flavor = 1, .uid = 1234, .gid = 5};
	struct outcome o = {0};
	(void)state;
	strcpy(cred.machine, "client-a");
	s.lfd = listener(&ss);
	loop_add(l, s.lfd, POLLIN, on_accept, &s);
	struct rpcc *c = rpcc_new(l, &ss, 100021, 4, 2000);
	assert_non_null(c);
	assert_int_equal(rpcc_call(c, 2, &cred, "abcdefgh", 8, 0, cb, &o), 0);
	assert_false(o.done); /* never from inside the call */
	run(l, &o);
	assert_true(o.done);
	assert_int_equal(o.status, 0);
	assert_int_equal(o.value, 42);
	assert_int_equal(s.conns, 2); /* sent again on a new connection */
	assert_int_equal(s.prog, 100021);
	assert_int_equal(s.vers, 4);
	assert_int_equal(s.proc, 2);
	assert_int_equal(s.uid, 1234);
	assert_int_equal(s.arglen, 8);
	assert_memory_equal(s.args, "abcdefgh", 8);
	/* an RPC error comes back as its accept_stat */
	s.answer = 3; /* PROC_UNAVAIL */
	o = (struct outcome){0};
	assert_int_equal(rpcc_call(c, 17, NULL, NULL, 0, 0, cb, &o), 0);
	run(l, &o);
	assert_int_equal(o.status, 3);
	/* a one-way call ends once written; the server's answer to it (this
	 * one answers everything) is ignored and the next call is served */
	s.answer = 0;
	o = (struct outcome){0};
	assert_int_equal(rpcc_call(c, 12, NULL, "ab", 2, RPCC_NOREPLY, cb, &o), 0);
	run(l, &o);
	assert_int_equal(o.status, 0);
	assert_int_equal(o.value, 0); /* no result body */
	o = (struct outcome){0};
	assert_int_equal(rpcc_call(c, 2, NULL, "cd", 2, 0, cb, &o), 0);
	run(l, &o);
	assert_int_equal(o.status, 0);
	assert_int_equal(o.value, 42);
	assert_int_equal(s.proc, 2);
	/* freeing ends what waits */
	o = (struct outcome){0};
	s.close_first = 0;
	assert_int_equal(rpcc_call(c, 2, NULL, "x", 1, 0, cb, &o), 0);
	rpcc_free(c);
	assert_true(o.done);
	assert_int_equal(o.status, -ECANCELED);
	loop_del(l, s.lfd);
	close(s.lfd);
	loop_free(l);
}

static void test_once_fails(void **state)
{
	struct loop *l = loop_new();
	struct sockaddr_storage ss;
	struct outcome o = {0};
	(void)state;
	int fd = listener(&ss);
	close(fd); /* nobody listens there now */
	struct rpcc *c = rpcc_new(l, &ss, 100021, 4, 2000);
	assert_int_equal(rpcc_call(c, 5, NULL, "abcd", 4, RPCC_ONCE, cb, &o), 0);
	run(l, &o);
	assert_true(o.done);
	assert_int_equal(o.status, -ECONNREFUSED);
	assert_int_equal(rpcc_pending(c), 0);
	rpcc_free(c);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_resent_after_reconnect),
	    cmocka_unit_test(test_once_fails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
