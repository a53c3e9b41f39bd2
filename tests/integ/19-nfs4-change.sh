#!/bin/bash
# 19-nfs4-change: over an NFSv4.0 filer the coherence snapshot of cached data
# is the filer's change attribute (with the size and times), exact where the
# times are not. An ext4 with 128-byte inodes (whole-second timestamps) on a
# loop device, exported by nfs-ganesha (NFSv4.0 at /up4, NFSv3 at /up); a
# file read through cachefsd --upstream-version 4 (fresh_guard 0: stored at
# once), then rewritten on the filer with the same size within the same
# second (size, mtime and ctime equal), then read again through cachefsd.
#  - measured first: what ganesha's VFS FSAL sends as `change` for that
#    rewrite (it may derive it from the ctime);
#  - where the change attribute moved, the read through cachefsd over v4
#    gives the new bytes; over v3 on the same filer the documented limit
#    applies (the same-tick rewrite is the fresh guard's, here off).
# shellcheck disable=SC2154,SC2034 # H_* variables are set and read by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

PROBE=$H_BUILD/tests/nfs4probe
OP=$H_BUILD/tests/nfsop
for t in "$PROBE" "$OP"; do [ -x "$t" ] || h_fail "$t is missing (make tools)"; done

EXP=$H_TMP/coarse
h_mount_coarse_ext4 "$EXP"
H_GANESHA_V4SPLIT=1 h_start_ganesha up "$EXP"
P4=$H_PSEUDO4_up
echo probe >"$EXP/probe"
[ "$(stat -c %z "$EXP/probe" | sed 's/.*\.\([0-9]*\) .*/\1/')" = 000000000 ] ||
	h_skip "ext4 -I 128 keeps nanoseconds here: $(stat -c %z "$EXP/probe")"

V4=("$PROBE" --host 127.0.0.1 --port "$H_NFSPORT_up" --path "$P4" --timeout 60)
change_of() { "${V4[@]}" getattr "$1" | sed -n 's/.* change \([0-9]*\)$/\1/p'; }

h_mkdata "$H_TMP/v1" 200 11
h_mkdata "$H_TMP/v2" 200 22
cp "$H_TMP/v1" "$EXP/f"

at_second_start()
{
	local ms
	ms=$((10#$(date +%N) / 1000000))
	[ "$ms" -lt 100 ] || sleep "0.$(printf %03d $((1000 - ms)))"
}

# rewrite_same_second FROM TO [PROXY-READ]: FROM on the filer's disk, its
# change attribute into c1 (and, with PROXY-READ, read through the proxy,
# which must give FROM), then TO with the same size in the same second,
# its change attribute into c2; again until both fell in one second
rewrite_same_second()
{
	local from=$1 to=$2 rd=${3:-} tries t1 t2 got
	for ((tries = 0; tries < 10; tries++)); do
		at_second_start
		dd if="$from" of="$EXP/f" conv=notrunc status=none
		t1=$(stat -c '%s %Y %Z' "$EXP/f")
		c1=$(change_of f)
		if [ -n "$rd" ]; then
			got=$("$OP" "$H_URL_px" cat f | md5sum | cut -d' ' -f1)
			[ "$got" = "$(h_md5 "$from")" ] || h_fail "the first version not read through the proxy"
		fi
		dd if="$to" of="$EXP/f" conv=notrunc status=none
		t2=$(stat -c '%s %Y %Z' "$EXP/f")
		c2=$(change_of f)
		[ "$t1" = "$t2" ] && return 0
	done
	h_fail "could not write, read and rewrite within one second"
}

# (1) what ganesha sends as change for a same-second, same-size rewrite
rewrite_same_second "$H_TMP/v1" "$H_TMP/v2"
ctime_ns=$(($(stat -c %Z "$EXP/f") * 1000000000))
h_log "ganesha's change attribute: $c1 before, $c2 after a same-second same-size rewrite (size mtime ctime $(stat -c '%s %Y %Z' "$EXP/f"); ctime in ns $ctime_ns)"
{ [ -n "$c1" ] && [ -n "$c2" ]; } || h_fail "no change attribute from ganesha over NFSv4.0"

printf -v H_URL_v4 '%s' "nfs://127.0.0.1$P4?nfsport=$H_NFSPORT_up"
printf -v H_EXPORT_v4 '%s' "$P4"
if [ "$c1" != "$c2" ]; then
	# (2a) exact: with the fresh guard off the data is stored at once,
	# and only the change attribute tells the versions apart
	h_start_cachefsd px v4 --upstream-version 4 --fresh-guard 0
	for t in 1 2 3; do
		rewrite_same_second "$H_TMP/v1" "$H_TMP/v2" read
		got=$("$OP" "$H_URL_px" cat f | md5sum | cut -d' ' -f1)
		[ "$got" = "$(h_md5 "$H_TMP/v2")" ] ||
			h_fail "trial $t: cachefsd over v4 served the first version after a same-second same-size rewrite that moved the change attribute ($c1 -> $c2)"
		cp "$H_TMP/v1" "$H_TMP/v0"
		cp "$H_TMP/v2" "$H_TMP/v1"
		cp "$H_TMP/v0" "$H_TMP/v2"
	done
	h_pass "the change attribute moved ($c1 -> $c2) with size, mtime and ctime equal; cachefsd over v4 served the new bytes every time"
fi

# (2b) ganesha's VFS FSAL derives the change attribute from the ctime: it
# is no more exact than the times, so here, as over NFSv3, the fresh guard
# is what keeps a same-tick rewrite out of the cache
[ "$c1" = "$ctime_ns" ] ||
	h_log "note: the change attribute ($c1) is not the ctime in ns ($ctime_ns)"
h_start_cachefsd px v4 --upstream-version 4
s0=$(h_stat px stores)
rewrite_same_second "$H_TMP/v1" "$H_TMP/v2" read
# reads until the file is stored (after the guard: 2 s + the 1 s tick + 1 s
# assumed), each must give the second version
end=$(($(_h_us "$EPOCHREALTIME") + 6000000))
while [ "$(h_stat px stores)" -le "$s0" ] && [ "$(_h_us "$EPOCHREALTIME")" -lt "$end" ]; do
	sleep 0.2
	got=$("$OP" "$H_URL_px" cat f | md5sum | cut -d' ' -f1)
	[ "$got" = "$(h_md5 "$H_TMP/v2")" ] ||
		h_fail "cachefsd over v4 served $([ "$got" = "$(h_md5 "$H_TMP/v1")" ] && echo the first version || echo other bytes) after a same-second same-size rewrite"
done
(($(h_stat px stores) > s0)) || h_fail "the file was never stored through cachefsd over v4"
h0=$(h_stat px read_hits)
got=$("$OP" "$H_URL_px" cat f | md5sum | cut -d' ' -f1)
[ "$got" = "$(h_md5 "$H_TMP/v2")" ] || h_fail "cachefsd over v4 serves other bytes from its cache"
(($(h_stat px read_hits) > h0)) || h_fail "the stored file was not served from the cache"
h_pass "ganesha 4.3's change attribute is its ctime in ns ($c1 = $c2 across a same-second same-size rewrite): no more exact than the times; over v4 the fresh guard kept the first version out, and the second was cached and served"
