/* Listing passes (ttl mode; meta.c "listing passes", listpass.c): a
 * listing answered from the cache is one upstream pass. The pages of two
 * passes are never stitched, whatever cookies they share; the verifier a
 * client is told names its pass; the rest of a pass is read by the engine
 * and a client that asks a page being read waits for it; the server gets
 * its own verifier back; a change through the proxy ends a pass; a page
 * the server fails reaches the client as it is, its counts as the client
 * asked them. The engine with a scripted upstream (engine_fx.h). */
#include "engine_fx.h"

static const uint8_t g_srv_verf[NFS3_COOKIEVERFSIZE] = {'S', 'R', 'V', 'V', 'E', 'R', 'F', '1'};
static char n_x1[] = "x1", n_x2[] = "x2", n_x3[] = "x3", n_x4[] = "x4";
static char n_y1[] = "y1", n_y2[] = "y2", n_y3[] = "y3", n_y4[] = "y4";

/* A READDIR of h_dir from cookie with verf (NULL: zero), count 4096. */
static void readdir_at(uint64_t cookie, const uint8_t *verf)
{
	struct cfs_req *req = new_req(NFS3_READDIR);

	req->args.readdir.dir = fh_of(h_dir);
	req->args.readdir.cookie = cookie;
	if (verf)
		memcpy(req->args.readdir.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	req->args.readdir.count = 4096;
	engine_submit(req, g->e);
}

/* The oldest waiting call is a READDIR from cookie (checked) with the
 * verifier want (NULL: zero): it is answered with the entries a, b (at
 * cookies cookie + 1, cookie + 2), eof, and the server's verifier. */
static void answer_page(uint64_t cookie, const uint8_t *want, char *a, char *b, int eof)
{
	static const uint8_t zero[NFS3_COOKIEVERFSIZE];
	struct call *c = next_call(NFS3_READDIR);
	const READDIR3args *args = c->args;
	fattr3 dir = DIR_ATTRS;
	entry3 eb = {cookie + 20, b, cookie + 2, NULL}, ea = {cookie + 10, a, cookie + 1, &eb};
	READDIR3res res;

	assert_int_equal(args->cookie, cookie);
	assert_memory_equal(args->cookieverf, want ? want : zero, NFS3_COOKIEVERFSIZE);
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READDIR3res_u.resok.dir_attributes = post(&dir);
	memcpy(res.READDIR3res_u.resok.cookieverf, g_srv_verf, NFS3_COOKIEVERFSIZE);
	res.READDIR3res_u.resok.reply.entries = &ea;
	res.READDIR3res_u.resok.reply.eof = eof;
	c->cb(0, &res, c->priv);
}

/* A pass of two pages, x1 x2 | x3 x4, read by a client's listing from
 * cookie 0 (forwarded) and the engine (the second page); the verifier the
 * client was told into pass. */
static void first_pass(uint8_t *pass)
{
	readdir_at(0, NULL);
	answer_page(0, NULL, n_x1, n_x2, 0);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "x1/x2/");
	memcpy(pass, last_answer(NFS3_READDIR)->verf, NFS3_COOKIEVERFSIZE);
	/* not the server's: the pass's */
	assert_memory_not_equal(pass, g_srv_verf, NFS3_COOKIEVERFSIZE);
	/* the engine reads the rest of the pass, with the server's verifier */
	assert_int_equal(calls_waiting(), 1);
	answer_page(2, g_srv_verf, n_x3, n_x4, 1);
	assert_int_equal(calls_waiting(), 0);
	assert_int_equal(ctr()->listing_passes, 1);
}

/* A listing from the cache: both pages from the pass, its verifier told. */
static void test_listing_from_pass(void **state)
{
	uint8_t p1[NFS3_COOKIEVERFSIZE];

	(void)state;
	start(60);
	first_pass(p1);
	readdir_at(0, NULL);
	assert_int_equal(calls_waiting(), 0);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "x1/x2/");
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, p1, NFS3_COOKIEVERFSIZE);
	readdir_at(2, p1);
	assert_int_equal(calls_waiting(), 0);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "x3/x4/");
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, p1, NFS3_COOKIEVERFSIZE);
}

/* Two passes with the same cookies: a listing that began on the first
 * goes on with the first, one that began on the second with the second;
 * never a page of the other. A pass too old for a new listing still ends
 * the listings that began on it (twice meta_ttl); after that they go to
 * the server, with the server's verifier, and are told the server's. */
static void test_passes_never_stitched(void **state)
{
	uint8_t p1[NFS3_COOKIEVERFSIZE], p2[NFS3_COOKIEVERFSIZE];

	(void)state;
	start(1);
	first_pass(p1);
	/* a listing begins on the first pass */
	readdir_at(0, NULL);
	assert_int_equal(calls_waiting(), 0);
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, p1, NFS3_COOKIEVERFSIZE);
	pass_ms(1100);
	/* too old to begin a listing on: a new pass, other names, same cookies */
	readdir_at(0, NULL);
	answer_page(0, NULL, n_y1, n_y2, 0);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "y1/y2/");
	memcpy(p2, last_answer(NFS3_READDIR)->verf, NFS3_COOKIEVERFSIZE);
	assert_memory_not_equal(p1, p2, NFS3_COOKIEVERFSIZE);
	answer_page(2, g_srv_verf, n_y3, n_y4, 1);
	assert_int_equal(ctr()->listing_passes, 2);
	/* the listing that began on the first pass ends with it */
	readdir_at(2, p1);
	assert_int_equal(calls_waiting(), 0);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "x3/x4/");
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, p1, NFS3_COOKIEVERFSIZE);
	/* and the one on the second with the second */
	readdir_at(2, p2);
	assert_int_equal(calls_waiting(), 0);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "y3/y4/");
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, p2, NFS3_COOKIEVERFSIZE);
	/* a new listing begins on the second */
	readdir_at(0, NULL);
	assert_int_equal(calls_waiting(), 0);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "y1/y2/");
	pass_ms(1000);
	/* the first pass is past twice meta_ttl: the server answers, as to a
	 * client that listed it slowly, and its verifier is told */
	readdir_at(2, p1);
	assert_int_equal(calls_waiting(), 1);
	answer_page(2, g_srv_verf, n_y3, n_y4, 1);
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, g_srv_verf, NFS3_COOKIEVERFSIZE);
	assert_int_equal(ctr()->listing_left, 1);
}

/* A client that asks the page the engine is reading waits for it: no
 * second call of the same page (it could end elsewhere than the kept one). */
static void test_wait_for_page_ahead(void **state)
{
	uint8_t p1[NFS3_COOKIEVERFSIZE];

	(void)state;
	start(60);
	readdir_at(0, NULL);
	answer_page(0, NULL, n_x1, n_x2, 0);
	memcpy(p1, last_answer(NFS3_READDIR)->verf, NFS3_COOKIEVERFSIZE);
	int n = g_nans;
	readdir_at(2, p1);
	/* only the engine's call of that page */
	assert_int_equal(calls_waiting(), 1);
	assert_int_equal(g_nans, n);
	answer_page(2, g_srv_verf, n_x3, n_x4, 1);
	assert_int_equal(g_nans, n + 1);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "x3/x4/");
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, p1, NFS3_COOKIEVERFSIZE);
	assert_int_equal(calls_waiting(), 0);
}

/* The engine's read of a pass fails: the waiting client's call goes to the
 * server, with the server's verifier. */
static void test_ahead_fails_waiters_forwarded(void **state)
{
	uint8_t p1[NFS3_COOKIEVERFSIZE];
	struct call *c;

	(void)state;
	start(60);
	readdir_at(0, NULL);
	answer_page(0, NULL, n_x1, n_x2, 0);
	memcpy(p1, last_answer(NFS3_READDIR)->verf, NFS3_COOKIEVERFSIZE);
	readdir_at(2, p1);
	c = next_call(NFS3_READDIR); /* the engine's */
	c->cb(-EIO, NULL, c->priv);
	assert_int_equal(calls_waiting(), 1);
	answer_page(2, g_srv_verf, n_x3, n_x4, 1);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "x3/x4/");
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, g_srv_verf, NFS3_COOKIEVERFSIZE);
}

/* A change of the directory through the proxy ends its passes: a listing
 * in the middle of one goes on at the server (its verifier), a new one
 * starts a new pass. */
static void test_dir_change_ends_pass(void **state)
{
	uint8_t p1[NFS3_COOKIEVERFSIZE];
	fattr3 fa = attrs(7, NF3REG, 0, 200, 200);

	(void)state;
	start(60);
	first_pass(p1);
	make_name(NFS3_CREATE, h_dir, n_c);
	answer_made(NFS3_CREATE, h_new, &fa, NULL);
	readdir_at(2, p1);
	assert_int_equal(calls_waiting(), 1);
	answer_page(2, g_srv_verf, n_x3, n_c, 1);
	assert_string_equal(last_answer(NFS3_READDIR)->data, "x3/c/");
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, g_srv_verf, NFS3_COOKIEVERFSIZE);
	readdir_at(0, NULL);
	assert_int_equal(calls_waiting(), 1);
	answer_page(0, NULL, n_x1, n_x2, 0);
	assert_memory_not_equal(last_answer(NFS3_READDIR)->verf, p1, NFS3_COOKIEVERFSIZE);
	assert_int_equal(ctr()->listing_passes, 2);
}

/* A page of the pass that does not move it on (no entries, no eof: not
 * kept) ends the engine's reading: no call of the same page again, and the
 * client waiting for it goes to the server. */
static void test_ahead_stuck_page_ends(void **state)
{
	uint8_t p1[NFS3_COOKIEVERFSIZE];
	fattr3 dir = DIR_ATTRS;
	READDIR3res res;
	struct call *c;

	(void)state;
	start(60);
	readdir_at(0, NULL);
	answer_page(0, NULL, n_x1, n_x2, 0);
	memcpy(p1, last_answer(NFS3_READDIR)->verf, NFS3_COOKIEVERFSIZE);
	readdir_at(2, p1);
	c = next_call(NFS3_READDIR); /* the engine's */
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READDIR3res_u.resok.dir_attributes = post(&dir);
	c->cb(0, &res, c->priv);
	/* only the client's own call, with the server's verifier */
	assert_int_equal(calls_waiting(), 1);
	answer_page(2, g_srv_verf, n_x3, n_x4, 1);
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, g_srv_verf, NFS3_COOKIEVERFSIZE);
	assert_int_equal(calls_waiting(), 0);
}

/* Strict mode keeps no pass: the server's verifier, every page asked. */
static void test_strict_server_verifier(void **state)
{
	(void)state;
	start(0);
	readdir_at(0, NULL);
	answer_page(0, NULL, n_x1, n_x2, 0);
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, g_srv_verf, NFS3_COOKIEVERFSIZE);
	assert_int_equal(calls_waiting(), 0);
	readdir_at(2, g_srv_verf);
	answer_page(2, g_srv_verf, n_x3, n_x4, 1);
	assert_memory_equal(last_answer(NFS3_READDIR)->verf, g_srv_verf, NFS3_COOKIEVERFSIZE);
	assert_int_equal(ctr()->listing_passes, 0);
}

/* A READDIRPLUS from cookie 0 at small counts (maxcount 1146, dircount
 * 7186: NFSMODEL_SEED=277741221's page) goes to the server with the
 * client's counts, and the server's NFS3ERR_SERVERFAULT (nfs-ganesha 4.3
 * fails some counts, directly too) reaches the client as it is: no pass
 * kept, the same page asked again is asked of the server again. */
static void serverfault_page(void)
{
	for (int k = 0; k < 2; k++) {
		struct cfs_req *req = new_req(NFS3_READDIRPLUS);
		const READDIRPLUS3args *args;
		struct call *c;

		req->args.readdirplus.dir = fh_of(h_dir);
		req->args.readdirplus.dircount = 7186;
		req->args.readdirplus.maxcount = 1146;
		engine_submit(req, g->e);
		assert_int_equal(calls_waiting(), 1);
		c = peek_call();
		assert_int_equal(c->proc, NFS3_READDIRPLUS);
		args = c->args;
		assert_int_equal(args->maxcount, 1146);
		assert_int_equal(args->dircount, 7186);
		assert_int_equal(args->cookie, 0);
		answer_status(NFS3_READDIRPLUS, NFS3ERR_SERVERFAULT);
		assert_int_equal(last_answer(NFS3_READDIRPLUS)->status, NFS3ERR_SERVERFAULT);
		assert_int_equal(calls_waiting(), 0);
	}
	assert_int_equal(ctr()->listing_passes, 0);
}

static void test_serverfault_page_strict(void **state)
{
	(void)state;
	start(0);
	serverfault_page();
}

static void test_serverfault_page_ttl(void **state)
{
	(void)state;
	start(60);
	serverfault_page();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_listing_from_pass, stop),
	    cmocka_unit_test_teardown(test_passes_never_stitched, stop),
	    cmocka_unit_test_teardown(test_wait_for_page_ahead, stop),
	    cmocka_unit_test_teardown(test_ahead_fails_waiters_forwarded, stop),
	    cmocka_unit_test_teardown(test_dir_change_ends_pass, stop),
	    cmocka_unit_test_teardown(test_ahead_stuck_page_ends, stop),
	    cmocka_unit_test_teardown(test_strict_server_verifier, stop),
	    cmocka_unit_test_teardown(test_serverfault_page_strict, stop),
	    cmocka_unit_test_teardown(test_serverfault_page_ttl, stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
