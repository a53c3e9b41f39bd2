/* pmapset: make or remove one TCP registration with the local rpcbind
 * (127.0.0.1:111) through the portmapper protocol, as a server would; for
 * tests that need a registration nobody serves (a "stale" one). rpcinfo can
 * only delete registrations, not make them.
 *
 *   pmapset set PROG VERS PORT
 *   pmapset unset PROG VERS
 * Exit 0 when rpcbind said yes, 1 when it said no or did not answer within
 * 2 s (run as root: rpcbind takes SET only from a privileged port). */
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-portmap.h>

struct result {
	int done, ok;
	uint32_t val;
};

static void cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct result *r = priv;

	(void)rpc;
	r->done = 1;
	r->ok = status == RPC_STATUS_SUCCESS;
	if (r->ok && data)
		r->val = *(uint32_t *)data;
	else if (status == RPC_STATUS_ERROR && data)
		fprintf(stderr, "pmapset: %s\n", (const char *)data);
}

/* Drives rpc until r is done or 2 s passed; 0 when done. */
static int wait_for(struct rpc_context *rpc, struct result *r)
{
	time_t end = time(NULL) + 2;

	while (!r->done && time(NULL) <= end) {
		struct pollfd p = {rpc_get_fd(rpc), (short)rpc_which_events(rpc), 0};
		int n = poll(&p, 1, 100);

		if (rpc_service(rpc, n > 0 ? p.revents : 0) < 0 && !r->done)
			return -1;
	}
	return r->done ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct rpc_context *rpc;
	struct result r = {0, 0, 0};
	int set, rc;

	if (argc < 4 || (strcmp(argv[1], "set") != 0 && strcmp(argv[1], "unset") != 0) ||
	    (strcmp(argv[1], "set") == 0 && argc < 5)) {
		fprintf(stderr, "usage: pmapset set PROG VERS PORT | unset PROG VERS\n");
		return 2;
	}
	set = strcmp(argv[1], "set") == 0;
	rpc = rpc_init_context();
	if (rpc == NULL || rpc_connect_async(rpc, "127.0.0.1", 111, cb, &r) != 0 ||
	    wait_for(rpc, &r) != 0 || !r.ok) {
		fprintf(stderr, "pmapset: cannot connect to rpcbind at 127.0.0.1:111\n");
		return 1;
	}
	memset(&r, 0, sizeof(r));
	if (set)
		rc = rpc_pmap2_set_async(rpc, atoi(argv[2]), atoi(argv[3]), IPPROTO_TCP,
		                         atoi(argv[4]), cb, &r);
	else
		rc = rpc_pmap2_unset_async(rpc, atoi(argv[2]), atoi(argv[3]), IPPROTO_TCP, 0, cb,
		                           &r);
	if (rc != 0 || wait_for(rpc, &r) != 0 || !r.ok) {
		fprintf(stderr, "pmapset: no answer from rpcbind\n");
		return 1;
	}
	rpc_destroy_context(rpc);
	if (!r.val) {
		fprintf(stderr, "pmapset: rpcbind refused the %s\n", argv[1]);
		return 1;
	}
	return 0;
}
