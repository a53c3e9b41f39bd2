#!/bin/bash
# upstreams: ganesha knfsd knfsd4
# Changes made outside the proxy (on the server: ganesha's export directory
# on the host, or a direct client as root for knfsd; and by a client of the
# server directly) are noticed at the next revalidation:
#  strict mode: at the next open (LOOKUP/GETATTR) the new bytes are read;
#  ttl mode (meta_ttl 3): within 3 seconds, never later.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
OP=$H_BUILD/tests/nfsop
h_start_upstream up
for f in a b c d; do
	h_up_mkdata up $f 2048 "$(printf %d "'$f")" || h_fail "cannot create $f on the upstream"
done
t_made=$EPOCHREALTIME

# read F through the proxy like an opening client (LOOKUP + GETATTR + READ)
prd() { "$OP" "$H_URL_px" cat "$1" | md5sum | cut -d' ' -f1; }

# --- strict ---
h_start_cachefsd px up
h_past_guard "$t_made" up # the first reads are stored
for f in a b; do
	want=$(h_up_md5 up $f) || h_fail "md5 of $f"
	[ "$(prd $f)" = "$want" ] || h_fail "strict: $f cold read"
	[ "$(prd $f)" = "$want" ] || h_fail "strict: $f warm read"
done
[ "$(h_stat px read_hits)" -gt 0 ] || h_fail "strict: nothing was served from the cache"
# on the server, same size (only mtime/ctime tell)
h_mkdata "$H_TMP/new-a" 2048 101
h_up_overwrite up a "$H_TMP/new-a" || h_fail "overwriting a on the upstream"
[ "$(prd a)" = "$(h_md5 "$H_TMP/new-a")" ] || h_fail "strict: change on the server not seen at the next open"
# by a client of the server directly
h_mkdata "$H_TMP/new-b" 1500 102
"$OP" "$H_URL_up" write b <"$H_TMP/new-b" || h_fail "direct write failed"
[ "$(prd b)" = "$(h_md5 "$H_TMP/new-b")" ] || h_fail "strict: direct client's write not seen at the next open"
[ "$(h_stat px data_drops)" -ge 2 ] || h_fail "strict: the changed files' cached data was not dropped"
h_stop_cachefsd px
h_log "ok: strict mode sees external changes at the next open"

# --- ttl 3 s ---
H_CACHE_px=$H_TMP/px-cache-ttl
h_start_cachefsd px up --meta-ttl 3
for f in c d; do
	[ "$(prd $f)" = "$(h_up_md5 up $f)" ] || h_fail "ttl: $f cold read"
done
check_within()
{
	local f=$1 want=$2 t0 now got
	t0=$(date +%s%N)
	while :; do
		got=$(prd "$f")
		now=$(date +%s%N)
		[ "$got" = "$want" ] && break
		[ $(((now - t0) / 1000000)) -le 3600 ] ||
			h_fail "ttl: $f still old $(((now - t0) / 1000000)) ms after the change (meta_ttl 3 s)"
		sleep 0.2
	done
	h_log "ttl: $f new after $(((now - t0) / 1000000)) ms"
	# and never old again
	for _ in 1 2 3; do
		[ "$(prd "$f")" = "$want" ] || h_fail "ttl: $f went back to old bytes"
	done
}
h_mkdata "$H_TMP/new-c" 2048 103
h_up_overwrite up c "$H_TMP/new-c" || h_fail "overwriting c on the upstream"
check_within c "$(h_md5 "$H_TMP/new-c")"
h_mkdata "$H_TMP/new-d" 999 104
"$OP" "$H_URL_up" write d <"$H_TMP/new-d" || h_fail "direct write failed"
check_within d "$(h_md5 "$H_TMP/new-d")"
h_pass "external changes: strict at the next open, ttl within meta_ttl"
