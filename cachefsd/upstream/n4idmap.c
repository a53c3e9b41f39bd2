/* NFSv4 owner names to ids, cached (include/nfs4up.h, n4_idmap_*).
 *
 * A named owner in an NFSv4 answer ("user@domain") is an NSS lookup
 * (getpwnam_r / getgrnam_r), and answers are decoded on the loop thread.
 * With `files` in nsswitch.conf a lookup reads a cached /etc/passwd; with
 * LDAP or sssd it can wait on the network. The cache makes that one lookup
 * per name per N4_IDMAP_TTL_S (N4_IDMAP_NEG_TTL_S for a name NSS does not
 * know), not one per attribute in every answer: a listing of 1 000 files
 * of one owner is one lookup, not 2 000. A name's first sight still waits
 * on the loop (docs/design.md, "Owners", says what would remove that).
 *
 * Direct-mapped, N4_IDMAP_SLOTS per kind (users, groups): a colliding name
 * replaces the slot's. Names over N4_IDMAP_NAME_MAX bytes are not cached.
 * One thread only (the loop's, or a tool's). */
#include "nfs4up.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

struct idm_ent {
	uint64_t expires_s; /* 0: empty */
	uint32_t id;
	int found; /* 1 a name NSS knows, 0 not (id is nobody's then) */
	char name[N4_IDMAP_NAME_MAX + 1];
};

static struct idm_ent idm_tab[2][N4_IDMAP_SLOTS];
static struct idm_ent idm_nobody[2];
static struct n4_idmap_stats idm_st;
static int64_t idm_skew_s; /* the unit test's clock moves */

static uint64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)((int64_t)ts.tv_sec + idm_skew_s);
}

/* NSS itself: 1 and *id, or 0 when the name is unknown (or NSS failed) */
static int nss_lookup(const char *name, int group, uint32_t *id)
{
	char buf[4096];

	idm_st.lookups++;
	if (group) {
		struct group g, *gp = NULL;
		if (getgrnam_r(name, &g, buf, sizeof(buf), &gp) == 0 && gp) {
			*id = (uint32_t)gp->gr_gid;
			return 1;
		}
	} else {
		struct passwd p, *pp = NULL;
		if (getpwnam_r(name, &p, buf, sizeof(buf), &pp) == 0 && pp) {
			*id = (uint32_t)pp->pw_uid;
			return 1;
		}
	}
	return 0;
}

uint32_t n4_idmap_nobody(int group)
{
	struct idm_ent *e = &idm_nobody[group ? 1 : 0];
	uint64_t now = now_s();
	uint32_t id = 65534;

	if (e->expires_s > now)
		return e->id;
	if (!(group ? nss_lookup("nogroup", 1, &id) || nss_lookup("nobody", 1, &id)
	            : nss_lookup("nobody", 0, &id)))
		id = 65534;
	e->id = id;
	e->found = 1;
	e->expires_s = now + N4_IDMAP_TTL_S;
	return id;
}

int n4_idmap_lookup(const char *name, int group, uint32_t *id)
{
	size_t len = strlen(name);
	struct idm_ent *e;
	uint64_t now = now_s();
	int found;

	if (len > N4_IDMAP_NAME_MAX) {
		found = nss_lookup(name, group, id);
		goto out;
	}
	e = &idm_tab[group ? 1 : 0][XXH3_64bits(name, len) % N4_IDMAP_SLOTS];
	if (e->expires_s > now && strcmp(e->name, name) == 0) {
		idm_st.hits++;
		*id = e->id;
		found = e->found;
		goto out;
	}
	found = nss_lookup(name, group, id);
	if (!found)
		*id = n4_idmap_nobody(group);
	memcpy(e->name, name, len + 1);
	e->id = *id;
	e->found = found;
	e->expires_s = now + (found ? N4_IDMAP_TTL_S : N4_IDMAP_NEG_TTL_S);
out:
	if (!found)
		*id = n4_idmap_nobody(group);
	return found ? 1 : -ENOENT;
}

void n4_idmap_stats(struct n4_idmap_stats *out)
{
	*out = idm_st;
}

void n4_idmap_test_advance(int64_t seconds)
{
	idm_skew_s += seconds;
}
