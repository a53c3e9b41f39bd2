#!/bin/bash
# upstreams: ganesha knfsd ganesha4 knfsd4
# Per-user safety: data cached for one user never reaches a user the server
# would refuse. User A (uid 1000) reads its 0600 file through the proxy (now
# cached); user B (uid 2000) is refused with NFS3ERR_ACCES, by path and by
# handle, in strict mode, in ttl mode, and after a restart with a warm cache.
# A file B may read is served to B from the cache.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
h_start_upstream up
E=$H_EXPORT_up
{
	h_up_mkdir up home &&
		h_up_chmod up 755 home &&
		h_up_mkdata up home/secret 1536 5 &&
		h_up_chown up 1000:1000 home/secret &&
		h_up_chmod up 600 home/secret &&
		h_up_mkdata up home/shared 1536 6 &&
		h_up_chown up 1000:1000 home/shared &&
		h_up_chmod up 644 home/shared
} || h_fail "cannot set up the files on the upstream"
want_secret=$(h_up_md5 up home/secret) || h_fail "md5 of home/secret"
want_shared=$(h_up_md5 up home/shared) || h_fail "md5 of home/shared"
t_made=$EPOCHREALTIME

A="--uid 1000 --gid 1000"
B="--uid 2000 --gid 2000"
# rd PORT EXPORT-SIDE PATH CRED...: md5 of the bytes, or the NFS status
rd()
{
	local port=$1 path=$2 out rc
	shift 2
	out=$("$NR" --port "$port" --export "$E" --path "$path" --out "$H_TMP/rd.out" "$@" 2>/dev/null)
	rc=$?
	case $rc in
	0) md5sum <"$H_TMP/rd.out" | cut -d' ' -f1 ;;
	3) echo "$out" | sed -n 's/^status //p' | tail -1 ;;
	*) echo "error $rc" ;;
	esac
}

check_users()
{
	local what=$1 got
	got=$(rd "$H_PORT_px" home/secret $A)
	[ "$got" = "$want_secret" ] || h_fail "$what: A could not read its own file ($got)"
	got=$(rd "$H_PORT_px" home/secret $A)
	[ "$got" = "$want_secret" ] || h_fail "$what: A's second read ($got)"
	got=$(rd "$H_PORT_px" home/secret $B)
	[ "$got" = NFS3ERR_ACCES ] || h_fail "$what: B read A's 0600 file through the proxy ($got)"
	# by handle, with no LOOKUP: only the proxy's own check stands between
	fh=$("$NR" --port "$H_PORT_px" --export "$E" --path home/secret $A --print-fh 2>&1 >/dev/null |
		awk '$1=="fh"{print $2}')
	out=$("$NR" --port "$H_PORT_px" --fh "$fh" $B --out "$H_TMP/rd.out" 2>/dev/null)
	[ $? = 3 ] && grep -q NFS3ERR_ACCES <<<"$out" || h_fail "$what: B read A's file by handle"
	got=$(rd "$H_PORT_px" home/shared $A)
	[ "$got" = "$want_shared" ] || h_fail "$what: A reading shared ($got)"
	got=$(rd "$H_PORT_px" home/shared $B)
	[ "$got" = "$want_shared" ] || h_fail "$what: B reading the 0644 file ($got)"
}

h_start_cachefsd px up
h_past_guard "$t_made" up
check_users strict
hits=$(h_stat px read_hits)
[ "$hits" -gt 0 ] || h_fail "strict: nothing was served from the cache"
[ "$(h_stat px access_denied)" -ge 1 ] || h_fail "strict: no refusal was counted"
h_stop_cachefsd px
h_start_cachefsd px up
check_users "strict, after a restart"
[ "$(h_stat px fills)" = 0 ] || h_fail "after the restart the cache was not warm"
h_stop_cachefsd px
H_CACHE_px=$H_TMP/px-cache-ttl
h_start_cachefsd px up --meta-ttl 60
check_users ttl
h_stop_cachefsd px
h_start_cachefsd px up --meta-ttl 60
check_users "ttl, after a restart"
h_pass "user B never gets user A's 0600 file (strict, ttl, after restarts); shared files served from the cache to both"
