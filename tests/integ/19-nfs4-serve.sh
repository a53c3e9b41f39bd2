#!/bin/bash
# 19-nfs4-serve: cachefsd in front of an NFSv4.0-only export (upstream_version
# 4: the origin interface's NFSv4.0 backend, cachefsd/upstream/origin_nfs4.c),
# serving NFSv3 clients. nfs-ganesha exports one directory twice: NFSv4.0 only
# at /up4 (Protocols = 4 there, Minor_Versions = 0) and NFSv3 only at /up; what
# an NFSv3 client sees through cachefsd over /up4 is what it sees of /up
# directly:
#  (a) GETATTR, LOOKUP, ACCESS (as root and as uid 1000), READ, READLINK,
#      READDIRPLUS (a 300-entry listing in 4 KiB pages), FSINFO, FSSTAT and
#      PATHCONF answer; names, attributes and bytes are /up's;
#  (b) a second read is served from the cache (read_hits, no new fills);
#  (c) cachefsctl info, the stats and the metrics say version 4;
#  (d) writes through it (WRITE, SETATTR of the size, MKDIR, REMOVE) land on
#      the server, and a read after is the server's bytes;
#  (e) ganesha restarted while files are being read: every read completes
#      with the right bytes;
#  (f) upstream_version auto picks 4 for /up4 and 3 for /up.
# shellcheck disable=SC2154,SC2034 # H_* variables are set and read by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

PROBE=$H_BUILD/tests/nfs4probe
CALL=$H_BUILD/tests/nfscall
CTLBIN=$H_BUILD/cachefsctl
for t in "$PROBE" "$CALL" "$CTLBIN"; do [ -x "$t" ] || h_fail "$t is missing (make tools)"; done
command -v curl >/dev/null || h_skip "curl is not installed (make deps-run)"
command -v jq >/dev/null || h_skip "jq is not installed (make deps-run)"

H_GANESHA_V4SPLIT=1 H_GANESHA_LEASE=10 h_start_ganesha up
E=$H_EXPORT_up
P4=$H_PSEUDO4_up   # /up4: NFSv4.0 only
P3=$H_MOUNTPATH_up # /up: NFSv3 only

# the data, made on the server's disk
: >"$E/empty"
printf x >"$E/one"
h_mkdata "$E/small" 5
h_mkdata "$E/big" 3072 7
printf y >>"$E/big"
ln -s small "$E/link"
mkdir -p "$E/many" "$E/deep/er/est" "$E/fresh"
for i in $(seq -w 1 300); do echo "$i" >"$E/many/entry-with-a-longish-name-$i"; done
for i in $(seq 1 12); do h_mkdata "$E/fresh/f$i" 1024 "$((i + 20))"; done
chmod 0751 "$E/deep"
chown 1234:5678 "$E/small"

# cachefsd over NFSv4.0, its own URL: the pseudo-fs path, the NFS port only
printf -v H_URL_v4 '%s' "nfs://127.0.0.1$P4?nfsport=$H_NFSPORT_up"
printf -v H_EXPORT_v4 '%s' "$P4"
MP=$(h_free_port)
h_start_cachefsd px v4 --upstream-version 4 --fresh-guard 0 --metrics-listen "127.0.0.1:$MP"
P=$H_PORT_px
C=$H_CACHE_px
ctl() { "$CTLBIN" --cache-dir "$C" "$@"; }

PX=("$PROBE" --v3 --host 127.0.0.1 --port "$P" --mountport "$P" --path "$P4" --timeout 60)
V3=("$PROBE" --v3 --host 127.0.0.1 --port "$H_NFSPORT_up" --mountport "$H_MNTPORT_up"
	--path "$P3" --timeout 60)
# the handles differ (v4's are not v3's bytes), and so may the pages
norm()
{
	grep -v -e '^root ' "$1" |
		sed -E 's/ fh [0-9]+$//; s/^(ls .* entries [0-9]+) pages [0-9]+$/\1/'
}

# (a) the same view through cachefsd over v4 as directly over v3
CMDS=(getattr . getattr empty getattr one getattr small getattr big getattr link
	getattr deep getattr deep/er/est getattr many/entry-with-a-longish-name-123
	ls . ls many ls deep/er read empty read one read small read big readlink link
	access . access small access one access deep)
"${PX[@]}" --maxcount 4096 "${CMDS[@]}" >"$H_TMP/px.out" 2>"$H_TMP/px.err" ||
	h_fail "through cachefsd over v4: $(grep error "$H_TMP/px.out" | head -3) $(head -3 "$H_TMP/px.err") $(tail -3 "$H_LOG_px")"
"${V3[@]}" --maxcount 4096 "${CMDS[@]}" >"$H_TMP/v3.out" 2>"$H_TMP/v3.err" ||
	h_fail "direct v3: $(grep error "$H_TMP/v3.out" | head -3) $(head -3 "$H_TMP/v3.err")"
if ! diff <(norm "$H_TMP/v3.out") <(norm "$H_TMP/px.out") >"$H_TMP/diff"; then
	head -20 "$H_TMP/diff" >&2
	h_fail "cachefsd over NFSv4.0 and NFSv3 direct disagree ($(grep -c '^[<>]' "$H_TMP/diff") lines)"
fi
grep -q '^ls many entries 300$' <(norm "$H_TMP/px.out") || h_fail "many/: not 300 entries through cachefsd"
grep -q "^read big bytes $((3072 * 1024 + 1)) " "$H_TMP/px.out" || h_fail "big: wrong length"
"${PX[@]}" --out "$H_TMP/big.px" read big >/dev/null || h_fail "read big to a file"
[ "$(h_md5 "$H_TMP/big.px")" = "$(h_md5 "$E/big")" ] || h_fail "big: other bytes through cachefsd than on disk"
UCMDS=(access . access small access one access deep access deep/er read small getattr deep/er/est)
"${PX[@]}" --uid 1000 --gid 1000 "${UCMDS[@]}" >"$H_TMP/pxu.out" 2>&1
"${V3[@]}" --uid 1000 --gid 1000 "${UCMDS[@]}" >"$H_TMP/v3u.out" 2>&1
diff <(norm "$H_TMP/v3u.out") <(norm "$H_TMP/pxu.out") >&2 ||
	h_fail "as uid 1000, cachefsd over v4 and NFSv3 direct disagree"
# FSINFO, FSSTAT, PATHCONF (from the filer's v4 attributes); PATHCONF as NFSv3 direct says
out=$("$CALL" --port "$P" --export "$P4" --path . fsinfo) || h_fail "FSINFO: $out"
{ grep -q '^status NFS3_OK' <<<"$out" && grep -q '^rtmax [1-9]' <<<"$out"; } || h_fail "FSINFO: $out"
out=$("$CALL" --port "$P" --export "$P4" --path . fsstat) || h_fail "FSSTAT: $out"
grep -q '^status NFS3_OK' <<<"$out" || h_fail "FSSTAT: $out"
out=$("$CALL" --port "$P" --export "$P4" --path small pathconf) || h_fail "PATHCONF: $out"
want=$("$CALL" --port "$H_NFSPORT_up" --mountport "$H_MNTPORT_up" --export "$P3" --path small pathconf)
[ "$out" = "$want" ] || h_fail "PATHCONF through cachefsd over v4: $(tr '\n' ' ' <<<"$out"); NFSv3 direct: $(tr '\n' ' ' <<<"$want")"
h_log "ok: $(grep -c . "$H_TMP/px.out") lines agree with NFSv3 direct (and $(grep -c . "$H_TMP/pxu.out") as uid 1000); FSINFO, FSSTAT, PATHCONF answer"

# (b) the second read comes from the cache
fills0=$(h_stat px fills) hits0=$(h_stat px read_hits) ur0=$(h_stat px upstream_calls_READ)
"${PX[@]}" --out "$H_TMP/big.px2" read big >/dev/null || h_fail "read big again"
[ "$(h_md5 "$H_TMP/big.px2")" = "$(h_md5 "$E/big")" ] || h_fail "big from the cache: other bytes"
hits=$(($(h_stat px read_hits) - hits0))
((hits >= 1)) || h_fail "the second read of big was not served from the cache (read_hits +$hits)"
[ "$(h_stat px fills)" = "$fills0" ] || h_fail "the second read of big filled again"
[ "$(h_stat px upstream_calls_READ)" = "$ur0" ] || h_fail "the second read of big went upstream"
json_hits=$(ctl stats --json | jq -r '.read_hits') || h_fail "cachefsctl stats --json"
((json_hits >= hits)) || h_fail "cachefsctl stats --json: read_hits $json_hits"
h_log "ok: second read: $hits READ hits, no upstream READ"

# (c) the version in info, stats and metrics
ctl info | grep -qx 'upstream_version 4' || h_fail "cachefsctl info: $(ctl info | grep upstream)"
[ "$(h_stat px upstream_version)" = 4 ] || h_fail "stats: upstream_version $(h_stat px upstream_version)"
curl -sf "http://127.0.0.1:$MP/metrics" | grep -qx 'cachefsd_upstream_version 4' ||
	h_fail "metrics: $(curl -sf "http://127.0.0.1:$MP/metrics" | grep upstream_version)"
h_log "ok: cachefsctl info, stats and metrics say upstream_version 4"

# (d) writes through cachefsd over v4 land on the server, and what cachefsd
# serves afterwards is the server's: WRITE (100 zeros at 0, FILE_SYNC),
# SETATTR of the size, MKDIR, REMOVE; none refused
u0=$(h_stat px upstream_unsupported)
cp "$E/small" "$H_TMP/small.want"
printf '%0100d' 0 | tr 0 '\0' | dd of="$H_TMP/small.want" conv=notrunc status=none
out=$("$CALL" --port "$P" --export "$P4" --path small write 100) || h_fail "WRITE: $out"
grep -q '^status NFS3_OK' <<<"$out" || h_fail "WRITE through cachefsd over v4: $out"
cmp -s "$E/small" "$H_TMP/small.want" || h_fail "the WRITE through cachefsd over v4 did not land as sent"
"${PX[@]}" read small >"$H_TMP/small.px" || h_fail "read small after the WRITE"
"${V3[@]}" read small >"$H_TMP/small.v3" || h_fail "direct read of small after the WRITE"
cmp -s "$H_TMP/small.px" "$H_TMP/small.v3" ||
	h_fail "small after the WRITE: cachefsd serves $(cat "$H_TMP/small.px"), the server $(cat "$H_TMP/small.v3")"
out=$("$CALL" --port "$P" --export "$P4" --path one setsize 0) || h_fail "SETATTR: $out"
grep -q '^status NFS3_OK' <<<"$out" || h_fail "SETATTR through cachefsd over v4: $out"
[ "$(stat -c %s "$E/one")" = 0 ] || h_fail "the SETATTR of the size did not land: $(stat -c %s "$E/one") bytes"
out=$("$CALL" --port "$P" --export "$P4" --path . mkdir newdir) || h_fail "MKDIR: $out"
grep -q '^status NFS3_OK' <<<"$out" || h_fail "MKDIR through cachefsd over v4: $out"
[ -d "$E/newdir" ] || h_fail "the MKDIR did not land"
out=$("$CALL" --port "$P" --export "$P4" --path . remove empty) || h_fail "REMOVE: $out"
grep -q '^status NFS3_OK' <<<"$out" || h_fail "REMOVE through cachefsd over v4: $out"
[ ! -e "$E/empty" ] || h_fail "the REMOVE did not land"
u=$(($(h_stat px upstream_unsupported) - u0))
((u == 0)) || h_fail "$u calls answered as not built over v4"
h_log "ok: WRITE, SETATTR, MKDIR, REMOVE through cachefsd over v4 landed; small read back as the server has it"

# (e) ganesha restarts while files are read (each read waits out the outage)
RCMDS=()
for i in $(seq 1 12); do RCMDS+=(read "fresh/f$i"); done
"${V3[@]}" "${RCMDS[@]}" >"$H_TMP/fresh.v3" || h_fail "direct read of fresh/"
h_stop_ganesha up
"${PX[@]}" --timeout 120 "${RCMDS[@]}" >"$H_TMP/fresh.px" 2>&1 &
reader=$!
sleep 2 # the outage, the reads waiting
kill -0 "$reader" 2>/dev/null || h_fail "the reads ended while ganesha was down: $(cat "$H_TMP/fresh.px")"
h_restart_ganesha up
h_wait_pid "$reader" "the reads" 120
wait "$reader" || h_fail "reads across the restart failed: $(cat "$H_TMP/fresh.px") $(tail -5 "$H_LOG_px")"
diff "$H_TMP/fresh.v3" "$H_TMP/fresh.px" >&2 || h_fail "other bytes across the restart"
h_log "ok: 12 reads issued while ganesha was down completed after its restart with the right bytes"

# (f) auto: 4 where only NFSv4.0 answers, 3 where NFSv3 does
h_stop_cachefsd px
h_start_cachefsd pa v4 --upstream-version auto
"$CTLBIN" --cache-dir "$H_CACHE_pa" info | grep -qx 'upstream_version 4' ||
	h_fail "auto against $P4: $("$CTLBIN" --cache-dir "$H_CACHE_pa" info | grep upstream_version)"
"$PROBE" --v3 --host 127.0.0.1 --port "$H_PORT_pa" --mountport "$H_PORT_pa" --path "$P4" \
	--timeout 60 read small | cmp -s - "$H_TMP/small.v3" ||
	h_fail "auto (v4): read small differs from the server's"
h_stop_cachefsd pa
printf -v H_EXPORT_v3 '%s' "$P3"
printf -v H_URL_v3 '%s' "$H_URL_up"
h_start_cachefsd pb v3 --upstream-version auto
"$CTLBIN" --cache-dir "$H_CACHE_pb" info | grep -qx 'upstream_version 3' ||
	h_fail "auto against $P3: $("$CTLBIN" --cache-dir "$H_CACHE_pb" info | grep upstream_version)"
h_stop_cachefsd pb
h_log "ok: upstream_version auto: 4 for $P4, 3 for $P3"

h_pass "cachefsd over an NFSv4.0-only export serves NFSv3 reads as the filer's v3 export does: attributes, names, bytes, cache hits; writes land; a restart mid-read recovered; auto picks the version"
