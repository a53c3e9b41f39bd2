#!/bin/bash
# upstreams: ganesha knfsd
# H_* are set by the harness with printf -v:
# shellcheck disable=SC2154
# The data cache with default settings, on every upstream: a 6 MiB file read
# through cachefsd twice. Every byte of both reads is compared with the
# data written, and the second read sends no READ upstream (counted by
# cachefsd: upstream_calls_READ). Then a READ across a chunk boundary at an
# odd offset, and a whole read after a cachefsd restart (from the disk
# cache): the same bytes, again with no READ upstream. Last, one WRITE
# larger than the upstream's wtmax (a client that ignores FSINFO): the
# proxy answers it with a short count, as a server may (knfsd itself
# closes the connection on it, and a re-sent call would loop forever).
#
# Against knfsd the server's largest READ (rtmax, nfsd's max_block_size:
# 128 KiB with the guest's 1 GiB) is smaller than cachefsd's 1 MiB chunk,
# so filling a chunk takes several upstream READs; ganesha offers 1 MiB.
# Clients read with rsize = the rtmax the proxy passes on from the upstream
# (what a kernel client picks), and once with 1 MiB (a client asking for
# more than rtmax gets short reads).
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
[ -x "$NR" ] || h_fail "$NR not built (make tools)"
h_start_upstream up
E=$H_EXPORT_up
KiB=1024
MiB=1048576
h_mkdata "$H_TMP/big" 6144 11 # 6 MiB
h_up_put up big "$H_TMP/big" || h_fail "cannot write big to the upstream"
t_made=$EPOCHREALTIME
[ "$(h_up_md5 up big)" = "$(h_md5 "$H_TMP/big")" ] || h_fail "the upstream does not hold the bytes written"

h_start_cachefsd px up
h_past_guard "$t_made" up # data changed in the last 2 s is not stored
P=$H_PORT_px
rtmax=$(awk '/upstream .* mounted/ { for (i = 1; i < NF; i++) if ($i == "rtmax") print $(i + 1) }' \
	"$H_LOG_px" | tr -d ',' | tail -n 1)
[ -n "$rtmax" ] || h_fail "cachefsd did not log the upstream's rtmax"
h_log "upstream $H_KIND_up: rtmax $rtmax"
# what the proxy's FSINFO tells its clients: at most 1 MiB (ganesha says 64 MiB)
[ "$rtmax" -le $MiB ] || rtmax=$MiB

# rd OUT [nfsread args]: read big through the proxy by path into OUT
rd() { "$NR" --port "$P" --export "$E" --path big --out "$1" "${@:2}" || h_fail "nfsread ${*:2} failed"; }
# same FILE what: every byte of FILE equals the data written
same()
{
	cmp "$1" "$H_TMP/big" >/dev/null 2>&1 ||
		h_fail "$2: bytes differ from the data written ($(cmp "$1" "$H_TMP/big" 2>&1 | head -n 1))"
}

r0=$(h_stat px upstream_calls_READ)
rd "$H_TMP/r1" --rsize "$rtmax"
same "$H_TMP/r1" "first read (rsize $rtmax)"
r1=$(h_stat px upstream_calls_READ)
fills=$(h_stat px fills)
# 6 MiB cannot come in fewer READs than 6 MiB / rtmax
[ $((r1 - r0)) -ge $((6 * MiB / rtmax)) ] ||
	h_fail "the first read of 6 MiB cost only $((r1 - r0)) upstream READs (rtmax $rtmax)"
h_log "first read: $((r1 - r0)) upstream READs, $fills fills"

rd "$H_TMP/r2" --rsize "$rtmax"
same "$H_TMP/r2" "second read (rsize $rtmax)"
r2=$(h_stat px upstream_calls_READ)
[ "$r2" = "$r1" ] ||
	h_fail "the second read sent $((r2 - r1)) READs upstream (first read: $((r1 - r0)); rtmax $rtmax, chunk 1 MiB)"
[ "$(h_stat px read_hits)" -gt 0 ] || h_fail "the second read counted no cache hits"
h_log "ok: second read from the cache, no READ upstream"

# a READ across the first chunk boundary at an odd offset, rsize 1 MiB
off=$((MiB - 5000))
"$NR" --port "$P" --export "$E" --path big --offset $off --length $((300 * KiB)) --rsize $MiB \
	--out "$H_TMP/r3" || h_fail "range read failed"
cmp "$H_TMP/r3" <(tail -c +$((off + 1)) "$H_TMP/big" | head -c $((300 * KiB))) >/dev/null ||
	h_fail "a read across the chunk boundary at $off returned wrong bytes"
[ "$(h_stat px upstream_calls_READ)" = "$r2" ] || h_fail "the range read sent READs upstream"

# restart: the chunks are on disk
h_stop_cachefsd px
h_start_cachefsd px up
rd "$H_TMP/r4" --rsize $MiB
same "$H_TMP/r4" "read after a restart (rsize 1 MiB)"
r4=$(h_stat px upstream_calls_READ)
[ "$r4" = 0 ] || h_fail "after a restart the read sent $r4 READs upstream"
# a WRITE over the upstream's wtmax
wtmax=$(awk '/upstream .* mounted/ { for (i = 1; i < NF; i++) if ($i == "wtmax") print $(i + 1) }' \
	"$H_LOG_px" | tr -d ',)' | tail -n 1)
[ -n "$wtmax" ] || h_fail "cachefsd did not log the upstream's wtmax"
[ "$wtmax" -le $MiB ] || wtmax=$MiB
big=$((2 * wtmax > MiB ? MiB : 2 * wtmax))
h_up_put up wide /dev/null || h_fail "cannot create wide on the upstream"
out=$(timeout 60 "$H_BUILD/tests/nfscall" --port "$P" --export "$E" --path wide write $big)
grep -qx "status NFS3_OK" <<<"$out" || h_fail "a WRITE of $big bytes (wtmax $wtmax) through the proxy: $out"
count=$(awk '$1=="count"{print $2}' <<<"$out")
[ "$count" -gt 0 ] && [ "$count" -le "$wtmax" ] || h_fail "WRITE of $big bytes: count $count (wtmax $wtmax)"
[ "$(h_stat px upstream_dropped_calls)" = 0 ] || h_fail "the WRITE was dropped by the upstream"
h_log "ok: a WRITE of $big bytes (wtmax $wtmax) answered with count $count"
h_pass "$H_KIND_up (rtmax $rtmax): 6 MiB read twice, every byte right, the second read, a range read and a read after a restart sent no READ upstream"
