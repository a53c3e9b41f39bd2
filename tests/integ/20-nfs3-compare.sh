#!/bin/bash
# H_URL_*/H_EXPORT_* are set by the harness with printf -v:
# shellcheck disable=SC2154
# upstreams: ganesha knfsd ganesha4
# Every NFSv3 procedure (RFC 1813), run directly against the upstream
# (nfs-ganesha, or the kernel nfsd in a qemu guest: H_UPSTREAM) and through
# cachefsd in front of it, must give the same results: statuses, attributes,
# data, listings, the very same file handles and write verifiers. The
# comparison is done by build/tests/nfs3cmp (tests/tools/nfs3cmp.c).
#
# ganesha4 (H_UPSTREAM): cachefsd over NFSv4.0 against the filer's NFSv3
# export of the same directory (nfs3cmp --v4-upstream).
#
# Two passes: as root (uid 0), then as uid/gid 1000 (checks that cachefsd
# forwards the caller's AUTH_SYS credential: objects it creates must be owned
# by 1000, permission errors must match).
#
# SELFTEST=1: no cachefsd; both sides of the comparison go straight to the
# same upstream. Verifies nfs3cmp itself: must pass with zero mismatches.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"

NFS3CMP=${NFS3CMP:-$H_BUILD/tests/nfs3cmp}

h_init
[ -x "$NFS3CMP" ] || h_fail "$NFS3CMP not built (make tools)"

h_start_upstream up
# ganesha4: cachefsd reaches the filer over NFSv4.0, direct is its NFSv3
# export of the same directory; nfs3cmp --v4-upstream compares what v4 can
# carry (tests/tools/nfs3cmp.c says what it relaxes and why: the handles
# map one to one instead of being the same bytes, FSINFO's rtmult, wtmult
# and dtpref, ganesha's LINK of a directory, the small first pages)
V4=()
[ "${H_UPVERS_up:-}" = 4 ] && [ "${SELFTEST:-0}" != 1 ] && V4=(--v4-upstream --verbose)
if [ "${SELFTEST:-0}" = 1 ]; then
	h_log "SELFTEST=1: comparing $H_KIND_up with itself, cachefsd not started"
	proxy_url=$H_URL_up
	what="nfs3cmp self-test ($H_KIND_up vs itself)"
else
	[ -x "$H_BUILD/cachefsd" ] || h_fail "$H_BUILD/cachefsd not built (make; or SELFTEST=1)"
	h_start_cachefsd px up
	proxy_url=$H_URL_px
	what="direct $H_KIND_up and cachefsd agree"
fi

h_log "pass 1: uid 0 gid 0"
"$NFS3CMP" "${V4[@]}" --direct "$H_URL_up" --proxy "$proxy_url" --scratch "cmp-root-$$" ||
	h_fail "nfs3cmp (uid 0) found differences or could not run"

# Non-root caller: the export root must be writable for the scratch dirs.
h_up_chmod up 1777 . || h_fail "chmod 1777 the export root"
h_log "pass 2: uid 1000 gid 1000"
"$NFS3CMP" "${V4[@]}" --direct "$H_URL_up" --proxy "$proxy_url" --scratch "cmp-user-$$" \
	--uid 1000 --gid 1000 ||
	h_fail "nfs3cmp (uid 1000) found differences or could not run"

# ttl mode answers metadata from its cache: for changes made through the
# proxy the answers must still be the server's
if [ "${SELFTEST:-0}" != 1 ]; then
	h_stop_cachefsd px
	h_start_cachefsd px up --meta-ttl 60
	h_log "pass 3: uid 0 gid 0, ttl mode"
	"$NFS3CMP" "${V4[@]}" --direct "$H_URL_up" --proxy "$H_URL_px" --scratch "cmp-ttl-$$" ||
		h_fail "nfs3cmp (ttl mode) found differences or could not run"
	[ "$(h_stat px meta_hits)" -gt 0 ] || h_fail "ttl mode answered nothing from its cache"
fi

# nothing may be left behind in the export
leftover=$(h_up_ls up .) || h_fail "cannot list the export root"
[ -z "$leftover" ] || h_fail "nfs3cmp left $(head -n 1 <<<"$leftover") in the export"

h_pass "$what: all 22 NFSv3 procedures, as uid 0 and uid 1000 (and in ttl mode)"
