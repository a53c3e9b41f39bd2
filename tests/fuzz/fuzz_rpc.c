/* libFuzzer target: bytes a client could send → RPC record splitting and
 * reassembly → call header, credential and argument checks → libnfs
 * decoding into a request → duplicate-request cache → reply encoding
 * through the libnfs writer; and the same bytes (past the first record
 * mark) as a UDP datagram, whose replies proto/ encodes itself. The engine is replaced by a stand-in that
 * answers every call at once (or drops it), so every reply encoder runs.
 *
 *   make fuzz                 build and run (FUZZ_SECONDS, default 3600)
 *   build-fuzz/fuzz_rpc FILE  replay one input (regression) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "loop.h"
#include "proto.h"

static struct loop *loop;
static struct cfs_config cfg;

/* Every NFSv3 result starts with its status; the failure arms are all
 * "no attributes" when zeroed. */
union any_res {
	nfsstat3 status;
	GETATTR3res getattr;
	READDIRPLUS3res readdirplus;
	READ3res read;
	WRITE3res write;
	CREATE3res create;
	RENAME3res rename;
	FSINFO3res fsinfo;
};

static void answer(struct cfs_req *req, void *arg)
{
	(void)arg;
	if ((req->xid & 7) == 7) {
		proto_drop(req); /* as if the call were still out */
		return;
	}
	if (req->prog == NLM_PROGRAM) {
		/* as the locks room answers: a filer's answer passed on as its
		 * bytes (an empty cookie and a status), GRANTED callbacks and
		 * NULL encoded by their rows' encoders */
		static const uint8_t denied[8] = {0, 0, 0, 0, 0, 0, 0, NLM4_DENIED};
		NLM4_GRANTEDres g;
		switch (req->proc) {
		case NLM4_NULL:
			proto_reply(req, NULL);
			return;
		case NLM4_GRANT:
			memset(&g, 0, sizeof(g));
			g.cookie = req->args.nlm_granted.cookie;
			g.status = NLM4_DENIED;
			proto_reply(req, &g);
			return;
		default:
			proto_reply_raw(req, denied, sizeof(denied));
			return;
		}
	}
	if (req->prog == MOUNT_PROGRAM) {
		mountres3 m;
		exports ex = NULL;
		mountlist ml = NULL;
		switch (req->proc) {
		case MOUNT3_MNT:
			memset(&m, 0, sizeof(m));
			m.fhs_status = MNT3ERR_NOENT;
			proto_reply(req, &m);
			return;
		case MOUNT3_EXPORT:
			proto_reply(req, &ex);
			return;
		case MOUNT3_DUMP:
			proto_reply(req, &ml);
			return;
		default:
			proto_reply(req, NULL);
			return;
		}
	}
	if (req->proc == NFS3_NULL) {
		proto_reply(req, NULL);
		return;
	}
	if ((req->xid & 7) == 6) {
		proto_reply_accept_error(req, SYSTEM_ERR);
		return;
	}
	union any_res r;
	memset(&r, 0, sizeof(r));
	r.status = (req->xid & 1) ? NFS3ERR_IO : NFS3ERR_ACCES;
	proto_reply(req, &r);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_init(0, CFS_LOG_ERR);
	config_defaults(&cfg);
	cfg.client_max_inflight = 8; /* reach backpressure with small inputs */
	loop = loop_new();
	return loop ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (2u << 20))
		return 0;
	proto_test_feed(loop, &cfg, answer, NULL, data, size);
	/* the same bytes past the first record mark as one UDP datagram: the
	 * seeds' first call, as NSM's callers send it */
	if (size > 4 && size - 4 <= 65507)
		proto_test_datagram(loop, &cfg, answer, NULL, data + 4, size - 4, NULL, 0, NULL);
	return 0;
}
