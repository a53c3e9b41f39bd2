/* Listener and client connections.
 *
 * Input: we read the socket ourselves and split it into RPC records (RFC
 * 5531 record marking), reassembling fragments up to CFS_MAX_RECORD bytes;
 * each complete record goes to proto_handle_record(). libnfs 4.0's own
 * server reader is not used: it calls a NULL function for a REPLY-direction
 * message, keeps any number of fragments, checks neither the RPC version
 * nor the credential flavour, and cannot send MSG_DENIED. See design.md.
 *
 * Output: one libnfs server context per connection queues and writes the
 * replies (rpc_send_reply() with the saved xid, rpc_service(POLLOUT)).
 *
 * Lifetime: a connection holds one reference for its socket and one per
 * request in flight. Closing it stops watching and destroys the libnfs
 * context at once (never while it is inside a callback of its own); the
 * struct stays until the last request is freed, and replies for a closed
 * connection are dropped. */
#include "log.h"
#include "proto.h"
#include "proto_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONN_MAGIC	   0x434f4e4eu /* "CONN" */
#define RECORDS_PER_WAKEUP 64	       /* one busy client cannot starve the others */
#define WRITES_PER_WAKEUP  64
#define ACCEPTS_PER_WAKEUP 64
#define INBUF_MIN	   (64 * 1024)
/* Replies queued and not yet written: beyond this the connection is not
 * read (a client that does not read its replies cannot make us buffer
 * without bound: at most this many replies of at most 1 MiB each, plus its
 * requests in flight). */
#define OUTQ_MAX 32
/* Largest record accepted, fragments included: what libnfs accepts, 1 MiB
 * of data plus 4 KiB of headers. */
#define CFS_MAX_RECORD (CFS_MAX_IO + 4096)

struct proto_conn {
	uint32_t magic;
	int refs;
	int closed;
	int busy; /* inside our own handlers: close later */
	int want_close;
	int fd;
	int inflight;
	struct rpc_context *rpc; /* writer */
	struct proto_server *srv;
	/* input: bytes [0, inlen) of inbuf are received and not yet parsed */
	uint8_t *inbuf;
	size_t incap, inlen;
	/* fragments of the record being reassembled */
	uint8_t *frag;
	size_t fraglen;
	struct sockaddr_storage peer;
	char peer_text[INET6_ADDRSTRLEN];
	/* on the server's kick list: complete records wait in inbuf */
	int kicked;
	struct proto_conn *next_kick;
};

struct proto_server {
	struct loop *loop;
	const struct cfs_config *cfg;
	proto_submit_fn submit;
	void *arg;
	int fd;
	int port;
	int nclients;
	struct proto_conn **byfd;
	int nbyfd;
	struct proto_conn *kick; /* connections to parse before sleeping */
};

struct proto_counters proto_counters;

static void conn_update(struct proto_conn *c);

/* May more requests be taken from this client now? */
static int conn_can_take(const struct proto_conn *c)
{
	return c->inflight < c->srv->cfg->client_max_inflight && rpc_queue_length(c->rpc) < OUTQ_MAX;
}

static void conn_free(struct proto_conn *c)
{
	assert(c->magic == CONN_MAGIC && c->refs == 0 && c->closed);
	c->magic = 0;
	free(c->inbuf);
	free(c->frag);
	free(c);
}

static void conn_unref(struct proto_conn *c)
{
	if (--c->refs == 0)
		conn_free(c);
}

void proto_conn_hold(struct proto_conn *c)
{
	assert(c->magic == CONN_MAGIC);
	c->refs++;
	c->inflight++;
}

void proto_conn_release(struct proto_conn *c)
{
	assert(c->magic == CONN_MAGIC);
	c->inflight--;
	if (!c->closed && !c->busy)
		conn_update(c);
	conn_unref(c);
}

void proto_conn_submit(struct proto_conn *c, struct cfs_req *req)
{
	req->conn = c;
	proto_conn_hold(c);
	c->srv->submit(req, c->srv->arg);
}

/* libnfs 4.0 calls a PDU's callback when it destroys a context with queued
 * PDUs, and reply PDUs have none: destroying a server context with unsent
 * replies would crash. So unsent replies are first written into a socket
 * pair and discarded. */
static void destroy_writer(struct rpc_context *rpc)
{
	if (rpc_queue_length(rpc) > 0) {
		int sp[2];
		char junk[65536];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) != 0) {
			log_err("cannot discard unsent replies: %s; leaking a context",
				strerror(errno));
			return;
		}
		close(rpc_get_fd(rpc));
		rpc_set_fd(rpc, sp[0]);
		for (int i = 0; i < 1000000 && rpc_queue_length(rpc) > 0; i++) {
			if (rpc_service(rpc, POLLOUT) < 0)
				break;
			while (read(sp[1], junk, sizeof(junk)) > 0)
				;
		}
		close(sp[1]);
		if (rpc_queue_length(rpc) > 0) {
			log_err("cannot discard unsent replies; leaking a context");
			return;
		}
	}
	rpc_destroy_context(rpc); /* closes the fd */
}

static void conn_close(struct proto_conn *c, const char *why)
{
	struct proto_server *srv = c->srv;

	if (c->closed)
		return;
	if (c->busy) {
		c->want_close = 1;
		return;
	}
	log_debug("client %s: closing connection (%s)", c->peer_text, why);
	c->closed = 1;
	loop_del(srv->loop, c->fd);
	if (c->fd < srv->nbyfd && srv->byfd[c->fd] == c)
		srv->byfd[c->fd] = NULL;
	destroy_writer(c->rpc);
	c->rpc = NULL;
	srv->nclients--;
	proto_counters.conns_open--;
	conn_unref(c);
}

/* 1 when inbuf holds a whole fragment: parsing can go on without the
 * socket becoming readable again. */
static int has_complete(const struct proto_conn *c)
{
	if (c->inlen < 4)
		return 0;
	uint32_t len = ((uint32_t)c->inbuf[0] << 24 | (uint32_t)c->inbuf[1] << 16 |
			(uint32_t)c->inbuf[2] << 8 | c->inbuf[3]) &
		       0x7fffffffu;
	return c->inlen - 4 >= len;
}

static void conn_update(struct proto_conn *c)
{
	int ev = 0;

	if (c->closed)
		return;
	if (conn_can_take(c)) {
		ev |= POLLIN;
		if (has_complete(c) && !c->kicked) {
			/* records left by a capped wakeup: parse them before
			 * sleeping, the socket may stay quiet */
			c->kicked = 1;
			c->refs++;
			c->next_kick = c->srv->kick;
			c->srv->kick = c;
			loop_pending(c->srv->loop);
		}
	}
	if (rpc_queue_length(c->rpc) > 0)
		ev |= POLLOUT;
	loop_set(c->srv->loop, c->fd, ev);
}

static void conn_io(struct loop *l, int fd, int revents, void *arg);

static void kick_hook(struct loop *l, void *arg)
{
	struct proto_server *srv = arg;
	struct proto_conn *list = srv->kick;

	srv->kick = NULL;
	while (list) {
		struct proto_conn *c = list;
		list = c->next_kick;
		c->kicked = 0;
		if (!c->closed)
			conn_io(l, c->fd, POLLIN, c);
		conn_unref(c);
	}
}

/* Appends a fragment to the record being reassembled. */
static int frag_add(struct proto_conn *c, const uint8_t *p, size_t n)
{
	uint8_t *f;

	if (c->fraglen + n > CFS_MAX_RECORD)
		return -EMSGSIZE;
	f = realloc(c->frag, c->fraglen + n ? c->fraglen + n : 1);
	if (f == NULL)
		return -ENOMEM;
	memcpy(f + c->fraglen, p, n);
	c->frag = f;
	c->fraglen += n;
	return 0;
}

/* Parses complete records out of inbuf. Returns 0, or -1 to close. */
static int parse_input(struct proto_conn *c, int *records)
{
	size_t off = 0;
	int rc = 0;

	while (c->inlen - off >= 4 && !c->want_close) {
		const uint8_t *m = c->inbuf + off;
		uint32_t marker = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 |
				  (uint32_t)m[2] << 8 | m[3];
		size_t len = marker & 0x7fffffffu;
		int last = (marker & 0x80000000u) != 0;

		if (len + c->fraglen > CFS_MAX_RECORD) {
			log_warn("client %s: record of %zu bytes exceeds %d; closing", c->peer_text,
				 len + c->fraglen, CFS_MAX_RECORD);
			rc = -1;
			break;
		}
		if (c->inlen - off - 4 < len) {
			/* incomplete: make room for the whole fragment */
			if (len + 4 > c->incap) {
				uint8_t *b;
				memmove(c->inbuf, c->inbuf + off, c->inlen - off);
				c->inlen -= off;
				off = 0;
				b = realloc(c->inbuf, len + 4);
				if (b == NULL) {
					rc = -1;
					break;
				}
				c->inbuf = b;
				c->incap = len + 4;
			}
			break;
		}
		if (*records >= RECORDS_PER_WAKEUP || !conn_can_take(c))
			break; /* come back on the next wakeup */
		off += 4 + len;
		proto_counters.bytes_in += 4 + len;
		if (!last || c->fraglen) {
			if (frag_add(c, m + 4, len) != 0) {
				rc = -1;
				break;
			}
			if (!last)
				continue;
			rc = proto_handle_record(c, c->frag, c->fraglen);
			free(c->frag);
			c->frag = NULL;
			c->fraglen = 0;
		} else {
			rc = proto_handle_record(c, m + 4, len);
		}
		(*records)++;
		if (rc != 0)
			break;
	}
	if (off) {
		memmove(c->inbuf, c->inbuf + off, c->inlen - off);
		c->inlen -= off;
	}
	/* give memory back after a large record */
	if (c->inlen == 0 && c->incap > INBUF_MIN) {
		uint8_t *b = realloc(c->inbuf, INBUF_MIN);
		if (b) {
			c->inbuf = b;
			c->incap = INBUF_MIN;
		}
	}
	return rc;
}

/* Reads what the socket has (bounded) and handles complete records.
 * Returns 0, or -1 to close. */
static int conn_read(struct proto_conn *c)
{
	int records = 0;

	for (int round = 0; round < 16; round++) {
		ssize_t n;
		size_t space = c->incap - c->inlen;

		if (space == 0)
			break; /* a full buffer of unparsed, capped records */
		n = recv(c->fd, c->inbuf + c->inlen, space, MSG_DONTWAIT);
		if (n == 0)
			return -1; /* peer closed */
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return -1;
		}
		c->inlen += (size_t)n;
		if (parse_input(c, &records) != 0)
			return -1;
		if (records >= RECORDS_PER_WAKEUP || !conn_can_take(c))
			break;
		if ((size_t)n < space)
			break; /* drained: epoll says when more arrives */
	}
	return 0;
}

/* Writes queued replies now, as far as the socket takes them: a reply
 * normally goes out in the pass that made it, without waiting for the
 * next POLLOUT (which would cost an epoll_ctl and a wakeup per reply).
 * Returns 0, or -1 when writing failed (close the connection). */
static int conn_flush(struct proto_conn *c)
{
	for (int i = 0; i < WRITES_PER_WAKEUP; i++) {
		int before = rpc_queue_length(c->rpc);
		if (before == 0)
			break;
		if (rpc_service(c->rpc, POLLOUT) < 0)
			return -1;
		if (rpc_queue_length(c->rpc) >= before)
			break; /* the socket is full: wait for POLLOUT */
	}
	return 0;
}

static void conn_io(struct loop *l, int fd, int revents, void *arg)
{
	struct proto_conn *c = arg;
	const char *why = NULL;

	(void)l;
	(void)fd;
	assert(c->magic == CONN_MAGIC);
	c->refs++; /* hold c across callbacks that may release requests */
	c->busy = 1;
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		/* parse what an earlier, capped wakeup left, then read more */
		int records = 0;
		if (parse_input(c, &records) != 0 || conn_read(c) != 0)
			why = "closed or bad record";
	}
	/* what the calls just read produced, and what POLLOUT allows */
	if (why == NULL && !c->want_close && conn_flush(c) != 0)
		why = "write failed";
	c->busy = 0;
	if (why || c->want_close)
		conn_close(c, why ? why : "reply encoding failed");
	else
		conn_update(c);
	conn_unref(c);
}

int proto_conn_send(struct proto_conn *c, uint32_t xid, void *res, zdrproc_t enc, int hint)
{
	struct rpc_msg stub;

	assert(c->magic == CONN_MAGIC);
	if (c->closed)
		return 0;
	memset(&stub, 0, sizeof(stub));
	stub.xid = xid; /* on TCP rpc_send_reply uses nothing else of the call */
	if (rpc_send_reply(c->rpc, &stub, res, enc, hint) != 0) {
		log_err("client %s: cannot encode reply: %s", c->peer_text,
			rpc_get_error(c->rpc));
		conn_close(c, "reply encoding failed");
		return -EIO;
	}
	proto_counters.replies++;
	proto_counters.bytes_out += (uint64_t)hint;
	if (!c->busy) {
		if (conn_flush(c) != 0) {
			conn_close(c, "write failed");
			return -EIO;
		}
		conn_update(c);
	}
	return 0;
}

const struct sockaddr_storage *proto_conn_peer(const struct proto_conn *c)
{
	return &c->peer;
}

int proto_conn_privileged(const struct proto_conn *c)
{
	in_port_t port = c->peer.ss_family == AF_INET6
				 ? ((const struct sockaddr_in6 *)&c->peer)->sin6_port
				 : ((const struct sockaddr_in *)&c->peer)->sin_port;

	return ntohs(port) < 1024;
}

const struct cfs_config *c_cfg(const struct proto_conn *c)
{
	return c->srv->cfg;
}

int proto_req_alive(const struct cfs_req *req)
{
	return req->conn && !req->conn->closed;
}

const char *proto_req_peer(const struct cfs_req *req)
{
	return req->conn ? req->conn->peer_text : "local";
}

const struct sockaddr_storage *proto_req_peer_addr(const struct cfs_req *req)
{
	return req->conn ? &req->conn->peer : NULL;
}

static int byfd_put(struct proto_server *srv, int fd, struct proto_conn *c)
{
	if (fd >= srv->nbyfd) {
		int n = srv->nbyfd ? srv->nbyfd : 64;
		while (n <= fd)
			n *= 2;
		struct proto_conn **b = realloc(srv->byfd, (size_t)n * sizeof(*b));
		if (b == NULL)
			return -ENOMEM;
		memset(b + srv->nbyfd, 0, (size_t)(n - srv->nbyfd) * sizeof(*b));
		srv->byfd = b;
		srv->nbyfd = n;
	}
	srv->byfd[fd] = c;
	return 0;
}

static void peer_to_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	if (getnameinfo((const struct sockaddr *)ss, sizeof(*ss), buf, (socklen_t)len, NULL, 0,
			NI_NUMERICHOST) != 0)
		snprintf(buf, len, "?");
	if (strncmp(buf, "::ffff:", 7) == 0)
		memmove(buf, buf + 7, strlen(buf + 7) + 1);
}

static void accept_one(struct proto_server *srv, int fd, struct sockaddr_storage *ss)
{
	struct proto_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (c == NULL) {
		close(fd);
		return;
	}
	c->magic = CONN_MAGIC;
	c->refs = 1;
	c->fd = fd;
	c->srv = srv;
	c->peer = *ss;
	peer_to_text(ss, c->peer_text, sizeof(c->peer_text));
	if (!config_allowed(srv->cfg, ss)) {
		log_warn("client %s: refused (not in allow)", c->peer_text);
		proto_counters.conns_refused++;
		close(fd);
		free(c);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->incap = INBUF_MIN;
	c->inbuf = malloc(c->incap);
	c->rpc = c->inbuf ? rpc_init_server_context(fd) : NULL;
	if (c->rpc == NULL || byfd_put(srv, fd, c) != 0 ||
	    loop_add(srv->loop, fd, POLLIN, conn_io, c) != 0) {
		log_err("client %s: cannot set up the connection", c->peer_text);
		if (c->rpc)
			rpc_destroy_context(c->rpc);
		else
			close(fd);
		if (fd < srv->nbyfd && srv->byfd[fd] == c)
			srv->byfd[fd] = NULL;
		free(c->inbuf);
		free(c);
		return;
	}
	srv->nclients++;
	proto_counters.conns_accepted++;
	proto_counters.conns_open++;
	log_debug("client %s: connected", c->peer_text);
}

static void listen_io(struct loop *l, int lfd, int revents, void *arg)
{
	struct proto_server *srv = arg;

	(void)l;
	(void)revents;
	for (int i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("accept: %s", strerror(errno));
			return;
		}
		accept_one(srv, fd, &ss);
	}
}

/* "ADDR:PORT", "[V6]:PORT", ":PORT" */
static int parse_listen(const char *s, char *host, size_t hl, char *port, size_t pl)
{
	const char *colon;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (end == NULL || end[1] != ':')
			return -EINVAL;
		if ((size_t)(end - s - 1) >= hl)
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = 0;
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || (size_t)(colon - s) >= hl)
			return -EINVAL;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = 0;
	}
	if (strlen(colon + 1) == 0 || strlen(colon + 1) >= pl)
		return -EINVAL;
	strcpy(port, colon + 1);
	return 0;
}

int proto_listen(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit, void *arg,
		 struct proto_server **out, char *err, size_t errlen)
{
	char host[256], port[32];
	struct addrinfo hints, *ai = NULL;
	struct proto_server *srv;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, one = 1, rc;

	if (parse_listen(cfg->listen, host, sizeof(host), port, sizeof(port)) != 0) {
		snprintf(err, errlen, "key 'listen': '%s' is not ADDR:PORT", cfg->listen);
		return -EINVAL;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (rc != 0) {
		snprintf(err, errlen, "key 'listen': cannot use '%s': %s", cfg->listen,
			 gai_strerror(rc));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 256) != 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", cfg->listen, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return rc;
	}
	freeaddrinfo(ai);
	srv = calloc(1, sizeof(*srv));
	if (srv == NULL) {
		close(fd);
		return -ENOMEM;
	}
	srv->loop = l;
	srv->cfg = cfg;
	srv->submit = submit;
	srv->arg = arg;
	srv->fd = fd;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	rc = loop_add(l, fd, POLLIN, listen_io, srv);
	if (rc == 0)
		rc = loop_before_sleep(l, kick_hook, srv);
	if (rc) {
		snprintf(err, errlen, "cannot watch the listener: %s", strerror(-rc));
		close(fd);
		free(srv);
		return rc;
	}
	*out = srv;
	return 0;
}

int proto_port(const struct proto_server *srv)
{
	return srv->port;
}

int proto_client_count(const struct proto_server *srv)
{
	return srv->nclients;
}

void proto_shutdown(struct proto_server *srv)
{
	if (srv == NULL)
		return;
	loop_del(srv->loop, srv->fd);
	loop_before_sleep_del(srv->loop, kick_hook, srv);
	close(srv->fd);
	for (int fd = 0; fd < srv->nbyfd; fd++)
		if (srv->byfd[fd])
			conn_close(srv->byfd[fd], "shutdown");
	while (srv->kick) {
		struct proto_conn *c = srv->kick;
		srv->kick = c->next_kick;
		c->kicked = 0;
		conn_unref(c);
	}
	drc_clear();
	free(srv->byfd);
	free(srv);
}

/* --- the fuzz and test entry point ------------------------------------------ */

int proto_test_feed(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit,
		    void *arg, const uint8_t *data, size_t len)
{
	return proto_test_exchange(l, cfg, submit, arg, data, len, NULL, 0, NULL);
}

int proto_test_exchange(struct loop *l, const struct cfs_config *cfg, proto_submit_fn submit,
                        void *arg, const uint8_t *data, size_t len, uint8_t *out, size_t outcap,
                        size_t *outlen)
{
	struct proto_server srv;
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct proto_conn *c;
	char junk[65536];
	size_t off = 0;
	int sp[2], shut = 0;

	if (outlen)
		*outlen = 0;

	memset(&srv, 0, sizeof(srv));
	srv.loop = l;
	srv.cfg = cfg;
	srv.submit = submit;
	srv.arg = arg;
	srv.fd = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) != 0)
		return -errno;
	memset(&ss, 0, sizeof(ss));
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	accept_one(&srv, sp[0], &ss);
	for (int round = 0; round < 100000; round++) {
		int progress = 0;
		ssize_t n;

		if (off < len) {
			n = write(sp[1], data + off, len - off);
			if (n > 0) {
				off += (size_t)n;
				progress = 1;
			}
		}
		if (off == len && !shut) {
			shutdown(sp[1], SHUT_WR);
			shut = 1;
		}
		c = sp[0] < srv.nbyfd ? srv.byfd[sp[0]] : NULL;
		if (c == NULL)
			break; /* closed */
		conn_io(l, sp[0], POLLIN | POLLOUT, c);
		kick_hook(l, &srv);
		while ((n = read(sp[1], junk, sizeof(junk))) > 0) {
			size_t room = outlen && *outlen < outcap ? outcap - *outlen : 0;
			if (room) {
				memcpy(out + *outlen, junk, (size_t)n < room ? (size_t)n : room);
				*outlen += (size_t)n < room ? (size_t)n : room;
			}
			progress = 1;
		}
		if (!progress && shut)
			break;
	}
	c = sp[0] < srv.nbyfd ? srv.byfd[sp[0]] : NULL;
	if (c)
		conn_close(c, "input done");
	close(sp[1]);
	free(srv.byfd);
	return 0;
}
