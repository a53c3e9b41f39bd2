/* Who may read cached bytes (cachefsd/engine/cobj.c cobj_evidence()): the rule
 * that keeps data cached for one user from another the server would
 * refuse, also when the server's ACCESS answer promises more than its READ
 * keeps (RFC 1813: ACCESS is advisory; unfs3 computes it as root). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "config.h"
#include "../../cachefsd/engine/cobj.h"

static fattr3 file(uint32_t mode, uint32_t uid, uint32_t gid)
{
	fattr3 a;

	memset(&a, 0, sizeof(a));
	a.type = NF3REG;
	a.mode = mode;
	a.uid = uid;
	a.gid = gid;
	a.ctime.seconds = 1700000000;
	a.ctime.nseconds = 5;
	return a;
}

static struct cfs_cred user(uint32_t uid, uint32_t gid)
{
	struct cfs_cred c;

	memset(&c, 0, sizeof(c));
	c.flavor = AUTH_UNIX;
	c.uid = uid;
	c.gid = gid;
	return c;
}

/* an ACCESS reply granting (or not) READ under attrs */
static struct access_ent access_answer(const struct cfs_cred *c, const fattr3 *a, int grant)
{
	struct access_ent e;

	memset(&e, 0, sizeof(e));
	e.cred = *c;
	access_ent_merge(&e, ACCESS3_READ | ACCESS3_LOOKUP, grant ? ACCESS3_READ : 0, 0, 0, a, 1000);
	return e;
}

static void test_mode_check(void **state)
{
	fattr3 a = file(0640, 1000, 100);
	struct cfs_cred c;

	(void)state;
	c = user(1000, 1000);
	assert_true(cfs_mode_allows(&a, &c, ACCESS3_READ)); /* owner */
	a.mode = 0040;
	assert_false(cfs_mode_allows(&a, &c, ACCESS3_READ)); /* the owner's bits, not the group's */
	a.mode = 0640;
	c = user(2000, 100);
	assert_true(cfs_mode_allows(&a, &c, ACCESS3_READ)); /* primary group */
	c = user(2000, 2000);
	assert_false(cfs_mode_allows(&a, &c, ACCESS3_READ)); /* other */
	c.ngids = 2;
	c.gids[0] = 7;
	c.gids[1] = 100;
	assert_true(cfs_mode_allows(&a, &c, ACCESS3_READ)); /* supplementary group */
	c = user(0, 0);
	assert_false(cfs_mode_allows(&a, &c, ACCESS3_READ)); /* root has no privilege here */
	a.mode = 0644;
	assert_true(cfs_mode_allows(&a, &c, ACCESS3_READ));
	memset(&c, 0, sizeof(c)); /* AUTH_NONE: uid 0 in the struct, but an "other" */
	a = file(0600, 0, 0);
	assert_false(cfs_mode_allows(&a, &c, ACCESS3_READ));
}

/* The unfs3 case: a 0600 file of uid 1000; the server's ACCESS grants READ
 * to uid 1001, its READ would refuse. The default rule does not serve. */
static void test_access_grants_too_much(void **state)
{
	fattr3 a = file(0600, 1000, 1000);
	struct cfs_cred b = user(1001, 1001);
	struct access_ent e = access_answer(&b, &a, 1);

	(void)state;
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 2000, 0), EV_ASK_CALL);
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_READ, 2000, 0), EV_ASK_CALL);
	/* the old rule (read_evidence = access) trusts the grant */
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_ACCESS, 2000, 0), EV_SERVE);
	/* the server refused the READ: from then on it is refused */
	access_ent_merge(&e, 0, 0, 0, ACCESS3_READ, &a, 2000);
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 2000, 0), EV_REFUSED);
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_ACCESS, 2000, 0), EV_REFUSED);
	/* no evidence yet, and the mode says no: an ACCESS call could not
	 * settle it, so the READ itself goes to the server */
	assert_int_equal(cobj_evidence(NULL, &a, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 2000, 0), EV_ASK_CALL);
	assert_int_equal(cobj_evidence(NULL, &a, &b, ACCESS3_READ, CFS_EVIDENCE_ACCESS, 2000, 0), EV_UNKNOWN);
}

static void test_agreeing_evidence(void **state)
{
	fattr3 a = file(0644, 1000, 1000);
	struct cfs_cred b = user(1001, 1001);
	struct access_ent e = access_answer(&b, &a, 1);

	(void)state;
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 2000, 0), EV_SERVE);
	assert_int_equal(cobj_evidence(NULL, &a, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 2000, 0), EV_UNKNOWN);
	/* an ACCESS denial is the server's answer, whatever the mode says */
	e = access_answer(&b, &a, 0);
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 2000, 0), EV_REFUSED);
	/* a READ the server answered is enough, even where the mode bits say
	 * no (ACLs, id mapping): only for that credential */
	a = file(0600, 1000, 1000);
	memset(&e, 0, sizeof(e));
	e.cred = b;
	access_ent_merge(&e, 0, 0, ACCESS3_READ, 0, &a, 1000);
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_READ, 2000, 0), EV_SERVE);
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 2000, 0), EV_SERVE);
	/* the ACCESS answer merged in later keeps the READ answer */
	access_ent_merge(&e, ACCESS3_READ, ACCESS3_READ, 0, 0, &a, 1500);
	assert_int_equal(e.proven, ACCESS3_READ);
}

static void test_evidence_ages_and_changes(void **state)
{
	fattr3 a = file(0644, 1000, 1000), later;
	struct cfs_cred b = user(1001, 1001);
	struct access_ent e = access_answer(&b, &a, 1);

	(void)state;
	/* in ttl mode evidence older than meta_ttl is not used */
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 1000 + 59999, 60000),
			 EV_SERVE);
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 1000 + 60000, 60000),
			 EV_UNKNOWN);
	/* a new ctime (chmod, chown, ACL) makes every answer void */
	later = a;
	later.ctime.nseconds++;
	assert_int_equal(cobj_evidence(&e, &later, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 2000, 0), EV_UNKNOWN);
	access_ent_merge(&e, 0, 0, ACCESS3_READ, 0, &later, 3000);
	assert_int_equal(e.asked, 0); /* the old grant went with the old ctime */
	assert_int_equal(cobj_evidence(&e, &later, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 3000, 0), EV_SERVE);
	assert_int_equal(cobj_evidence(&e, &a, &b, ACCESS3_READ, CFS_EVIDENCE_MODE, 3000, 0), EV_UNKNOWN);
}

/* Directories: a cached LOOKUP answer needs search (x), a cached listing
 * read (r), each proven by the server's answers or granted by ACCESS with
 * the mode bits agreeing. */
static void test_directories(void **state)
{
	fattr3 d = file(0700, 1000, 1000);
	struct cfs_cred owner = user(1000, 1000), other = user(1001, 1001);
	struct access_ent e;

	(void)state;
	d.type = NF3DIR;
	assert_true(cfs_mode_allows(&d, &owner, ACCESS3_LOOKUP | ACCESS3_READ));
	assert_false(cfs_mode_allows(&d, &other, ACCESS3_LOOKUP));
	/* the owner listed it and looked names up in it */
	memset(&e, 0, sizeof(e));
	e.cred = owner;
	access_ent_merge(&e, 0, 0, ACCESS3_READ | ACCESS3_LOOKUP, 0, &d, 1000);
	assert_int_equal(cobj_evidence(&e, &d, &owner, ACCESS3_LOOKUP, CFS_EVIDENCE_MODE, 2000, 0),
			 EV_SERVE);
	/* another user has no evidence of its own: the mode says no, so the
	 * call goes to the server (whose answer is ACCES) */
	assert_int_equal(cobj_evidence(NULL, &d, &other, ACCESS3_LOOKUP, CFS_EVIDENCE_MODE, 2000, 0),
			 EV_ASK_CALL);
	assert_int_equal(cobj_evidence(NULL, &d, &other, ACCESS3_READ, CFS_EVIDENCE_MODE, 2000, 0),
			 EV_ASK_CALL);
	/* an ACCESS answer that grants more than the mode bits is not enough */
	memset(&e, 0, sizeof(e));
	e.cred = other;
	access_ent_merge(&e, ACCESS3_LOOKUP | ACCESS3_READ, ACCESS3_LOOKUP | ACCESS3_READ, 0, 0, &d,
			 1000);
	assert_int_equal(cobj_evidence(&e, &d, &other, ACCESS3_LOOKUP, CFS_EVIDENCE_MODE, 2000, 0),
			 EV_ASK_CALL);
	/* the server refused it a LOOKUP: refused from then on */
	access_ent_merge(&e, 0, 0, 0, ACCESS3_LOOKUP, &d, 1500);
	assert_int_equal(cobj_evidence(&e, &d, &other, ACCESS3_LOOKUP, CFS_EVIDENCE_MODE, 2000, 0),
			 EV_REFUSED);
	/* a listing with handles needs both bits: search alone is not enough */
	memset(&e, 0, sizeof(e));
	e.cred = owner;
	access_ent_merge(&e, 0, 0, ACCESS3_LOOKUP, 0, &d, 1000);
	assert_int_equal(cobj_evidence(&e, &d, &owner, ACCESS3_READ | ACCESS3_LOOKUP,
				       CFS_EVIDENCE_READ, 2000, 0),
			 EV_ASK_CALL);
	/* proven once, refused later (a chmod with the same ctime cannot
	 * happen, but the last answer wins) */
	access_ent_merge(&e, 0, 0, 0, ACCESS3_LOOKUP, &d, 1200);
	assert_int_equal(e.proven & ACCESS3_LOOKUP, 0);
	/* evidence older than the strict-mode bound is not used */
	access_ent_merge(&e, 0, 0, ACCESS3_LOOKUP, 0, &d, 1300);
	assert_int_equal(cobj_evidence(&e, &d, &owner, ACCESS3_LOOKUP, CFS_EVIDENCE_MODE,
				       1300 + 60000, 60000),
			 EV_UNKNOWN);
}

/* Strict mode's ACCESS reuse (cobj_access_reusable()): the server's ACCESS
 * answer stands for a later open when the server's GETATTR of that open
 * shows the ctime, mode, owner and group it was given under. */
static void test_strict_access_reuse(void **state)
{
	fattr3 a = file(0640, 1000, 100), b;
	struct cfs_cred u = user(1001, 100);
	struct access_ent e;
	uint32_t bits = 0xff;
	const uint64_t win = 1000, age = 60000;

	(void)state;
	memset(&e, 0, sizeof(e));
	e.cred = u;
	/* READs proven are not an ACCESS answer: nothing to reuse */
	access_ent_merge(&e, 0, 0, ACCESS3_READ, 0, &a, 1000);
	assert_false(cobj_access_reusable(&e, &a, 1500, ACCESS3_READ, 1600, win, age, &bits));
	/* an ACCESS answer under a (what cobj_access_set() records) */
	access_ent_merge(&e, ACCESS3_READ | ACCESS3_MODIFY, ACCESS3_READ, 0, 0, &a, 1000);
	e.acc_mode = a.mode;
	e.acc_uid = a.uid;
	e.acc_gid = a.gid;
	e.acc_ms = 1000;
	assert_true(cobj_access_reusable(&e, &a, 1500, ACCESS3_READ, 1600, win, age, &bits));
	assert_int_equal(bits, ACCESS3_READ);
	/* only what was granted among the bits asked */
	assert_true(cobj_access_reusable(&e, &a, 1500, ACCESS3_READ | ACCESS3_MODIFY, 1600, win,
	                                 age, &bits));
	assert_int_equal(bits, ACCESS3_READ);
	/* a bit the server was not asked: forward */
	assert_false(cobj_access_reusable(&e, &a, 1500, ACCESS3_READ | ACCESS3_EXECUTE, 1600, win,
	                                  age, &bits));
	/* no revalidation, or one older than the window */
	assert_false(cobj_access_reusable(&e, &a, 0, ACCESS3_READ, 1600, win, age, &bits));
	assert_false(cobj_access_reusable(&e, &a, 1500, ACCESS3_READ, 2501, win, age, &bits));
	/* a chmod (new ctime and mode) */
	b = a;
	b.mode = 0600;
	b.ctime.seconds++;
	assert_false(cobj_access_reusable(&e, &b, 1500, ACCESS3_READ, 1600, win, age, &bits));
	/* the mode, owner or group changed under the same ctime (a coarse
	 * server clock): forward too */
	for (int i = 0; i < 3; i++) {
		b = a;
		*(i == 0 ? &b.mode : i == 1 ? &b.uid : &b.gid) = 0600 + 1000 * (uint32_t)i;
		assert_false(
		    cobj_access_reusable(&e, &b, 1500, ACCESS3_READ, 1600, win, age, &bits));
	}
	/* what a changed size or mtime says nothing about permissions */
	b = a;
	b.size = 99;
	b.mtime.seconds = 5;
	assert_true(cobj_access_reusable(&e, &b, 1500, ACCESS3_READ, 1600, win, age, &bits));
	/* an answer as old as evidence_ttl is asked again */
	assert_false(cobj_access_reusable(&e, &a, 61000, ACCESS3_READ, 61000, win, age, &bits));
	assert_true(cobj_access_reusable(&e, &a, 60900, ACCESS3_READ, 60999, win, age, &bits));
	/* a later answer under a new ctime starts afresh: no ACCESS answer */
	b = a;
	b.ctime.seconds++;
	access_ent_merge(&e, 0, 0, ACCESS3_READ, 0, &b, 2000);
	assert_int_equal(e.acc_ms, 0);
	assert_false(cobj_access_reusable(&e, &b, 2000, ACCESS3_READ, 2100, win, age, &bits));
	assert_false(cobj_access_reusable(NULL, &a, 1500, ACCESS3_READ, 1600, win, age, &bits));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mode_check),
	    cmocka_unit_test(test_access_grants_too_much),
	    cmocka_unit_test(test_agreeing_evidence),
	    cmocka_unit_test(test_evidence_ages_and_changes),
	    cmocka_unit_test(test_directories),
	    cmocka_unit_test(test_strict_access_reuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
