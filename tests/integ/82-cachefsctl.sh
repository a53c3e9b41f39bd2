#!/bin/bash
# cachefsctl against a running daemon (real nfs-ganesha upstream):
#  1. stats: the numbers move as reads say they must (a cold read is misses
#     and fills, a warm one hits); --raw, --json and the SIGUSR1 stats file
#     agree; the table shows them;
#  2. invalidate PATH, --fh HEX and --all make the next read a miss;
#  3. cull --to 50 and --to 0 evict least recently used files;
#  4. config and info show the effective configuration;
#  5. errors: daemon not running, stale socket, a non-root user, bad usage,
#     unknown requests; the socket is mode 0600 and goes away at stop.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CTLBIN=$H_BUILD/cachefsctl
NR=$H_BUILD/tests/nfsread
[ -x "$CTLBIN" ] || h_fail "$CTLBIN not built"
[ -x "$NR" ] || h_fail "$NR not built (make tools)"
command -v jq >/dev/null || h_skip "jq is not installed (make deps-run)"
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/big" 6144 1 # 6 MiB: 6 chunks
h_mkdata "$E/other" 3072 2
mkdir -p "$E/dir with space"
h_mkdata "$E/dir with space/f" 2048 3
echo "small file" >"$E/small"

h_start_cachefsd px up --memory-cache 0 --readahead 0 --fresh-guard 0
P=$H_PORT_px
C=$H_CACHE_px
ctl() { "$CTLBIN" --cache-dir "$C" "$@"; }
st() { ctl stats --raw | awk -v k="$1" '$1==k{print $2; f=1} END{if(!f) print "MISSING"}'; }
rd() { "$NR" --port "$P" --export "$E" --path "$1" | md5sum | cut -d' ' -f1; }
want() { md5sum <"$E/$1" | cut -d' ' -f1; }

# --- 5a. the socket ---
[ -S "$C/control" ] || h_fail "no control socket at $C/control"
mode=$(stat -c %a "$C/control")
[ "$mode" = 600 ] || h_fail "control socket mode $mode, not 600"

# --- 1. stats move with reads ---
[ "$(st read_misses)" = 0 ] && [ "$(st read_hits)" = 0 ] || h_fail "a fresh daemon has READ counters"
[ "$(rd big)" = "$(want big)" ] || h_fail "cold read of big: wrong bytes"
m1=$(st read_misses) f1=$(st fills) b1=$(st cache_bytes)
[ "$m1" -ge 6 ] || h_fail "a cold 6 MiB read made $m1 misses"
[ "$f1" -ge 6 ] || h_fail "a cold 6 MiB read made $f1 fills"
[ "$b1" = $((6 * 1048576)) ] || h_fail "cache_bytes $b1 after caching 6 MiB"
[ "$(st cache_objects)" = 1 ] || h_fail "cache_objects $(st cache_objects), not 1"
[ "$(rd big)" = "$(want big)" ] || h_fail "warm read of big: wrong bytes"
[ "$(st read_misses)" = "$m1" ] || h_fail "a warm read made misses"
[ "$(st fills)" = "$f1" ] || h_fail "a warm read made fills"
[ "$(st read_hits)" -ge 6 ] || h_fail "a warm read made $(st read_hits) hits"
[ "$(st nfs_hit_READ)" = "$(st read_hits)" ] || h_fail "nfs_hit_READ differs from read_hits"
h_log "ok: stats move with reads (misses $m1, fills $f1, then hits $(st read_hits))"

# the views agree: raw, json, the stats file (nothing runs in between)
ctl stats --raw >"$H_TMP/raw" || h_fail "stats --raw failed"
ctl stats --json >"$H_TMP/json" || h_fail "stats --json failed"
jq -e . "$H_TMP/json" >/dev/null || h_fail "stats --json is not JSON"
h_stats px >"$H_TMP/file"
for k in read_hits read_misses fills fill_bytes cache_bytes cache_objects cache_chunks \
	nfs_calls_READ nfs_calls_LOOKUP upstream_calls evictions checksum_failures; do
	r=$(awk -v k=$k '$1==k{print $2}' "$H_TMP/raw")
	j=$(jq -r ".$k" "$H_TMP/json")
	f=$(awk -v k=$k '$1==k{print $2}' "$H_TMP/file")
	[ -n "$r" ] && [ "$r" = "$j" ] && [ "$r" = "$f" ] ||
		h_fail "$k: raw '$r', json '$j', stats file '$f'"
done
# every counter of the stats file is in cachefsctl stats, by the same name
missing=$(awk '$1!="seq"{print $1}' "$H_TMP/file" | while read -r k; do
	grep -q "^$k " "$H_TMP/raw" || echo "$k"
done)
[ -z "$missing" ] || h_fail "counters of the stats file missing from stats: $missing"
ctl stats >"$H_TMP/table" || h_fail "stats (table) failed"
grep -q "^READ .* hits" "$H_TMP/table" || h_fail "the stats table has no READ line: $(cat "$H_TMP/table")"
grep -q "^cache  .*6.0 MiB in 1 files" "$H_TMP/table" || h_fail "the stats table: $(cat "$H_TMP/table")"
h_log "ok: stats --raw, --json, the table and the SIGUSR1 file agree"

# --- 2. invalidate makes the next read a miss ---
out=$(ctl invalidate big) || h_fail "invalidate big failed: $out"
grep -q "^invalidated big (handle [0-9a-f]*)" <<<"$out" || h_fail "invalidate big said: $out"
[ "$(st cache_objects)" = 0 ] || h_fail "invalidate big left $(st cache_objects) objects"
m2=$(st read_misses) f2=$(st fills)
[ "$(rd big)" = "$(want big)" ] || h_fail "read after invalidate: wrong bytes"
[ "$(st read_misses)" -ge $((m2 + 6)) ] || h_fail "the read after invalidate PATH was not a miss"
[ "$(st fills)" -ge $((f2 + 6)) ] || h_fail "the read after invalidate PATH made no fills"
# the same through an absolute path under the export, and a name with a space
ctl invalidate "$E/big" >/dev/null || h_fail "invalidate $E/big failed"
m2=$(st read_misses)
rd big >/dev/null
[ "$(st read_misses)" -gt "$m2" ] || h_fail "invalidate by absolute path: next read not a miss"
rd "dir with space/f" >/dev/null
ctl invalidate "dir with space/f" >/dev/null || h_fail "invalidate of a name with a space failed"
m2=$(st read_misses)
[ "$(rd "dir with space/f")" = "$(want "dir with space/f")" ] || h_fail "dir with space/f"
[ "$(st read_misses)" -gt "$m2" ] || h_fail "invalidate 'dir with space/f': next read not a miss"
# by handle
"$NR" --port "$P" --export "$E" --path other --print-fh 2>"$H_TMP/fh" >/dev/null
fh=$(awk '$1=="fh"{print $2}' "$H_TMP/fh")
[ -n "$fh" ] || h_fail "no handle for other"
m2=$(st read_misses)
"$NR" --port "$P" --fh "$fh" >/dev/null
[ "$(st read_misses)" = "$m2" ] || h_fail "other was not cached before invalidate --fh"
out=$(ctl invalidate --fh "$fh") || h_fail "invalidate --fh failed: $out"
[ "$out" = "invalidated handle $fh" ] || h_fail "invalidate --fh said: $out"
"$NR" --port "$P" --fh "$fh" >/dev/null
[ "$(st read_misses)" -ge $((m2 + 3)) ] || h_fail "the read after invalidate --fh was not a miss"
# everything
[ "$(st cache_objects)" -ge 2 ] || h_fail "expected cached objects before --all"
out=$(ctl invalidate --all) || h_fail "invalidate --all failed: $out"
grep -q "^invalidated [0-9]* objects and the metadata cache" <<<"$out" || h_fail "--all said: $out"
[ "$(st cache_objects)" = 0 ] && [ "$(st cache_bytes)" = 0 ] || h_fail "--all left data cached"
m2=$(st read_misses)
rd big >/dev/null
[ "$(st read_misses)" -ge $((m2 + 6)) ] || h_fail "the read after invalidate --all was not a miss"
# a name that is not there, a path outside the export
out=$(ctl invalidate no-such-file 2>&1) || h_fail "invalidate of a missing name failed: $out"
grep -q "no such file upstream" <<<"$out" || h_fail "invalidate no-such-file said: $out"
out=$(ctl invalidate no-dir/x 2>&1) && h_fail "invalidate no-dir/x succeeded: $out"
grep -q "LOOKUP of 'no-dir' failed upstream: no such file" <<<"$out" || h_fail "no-dir/x: $out"
out=$(ctl invalidate /elsewhere/x 2>&1) && h_fail "invalidate outside the export succeeded"
grep -q "not under the export $E" <<<"$out" || h_fail "outside the export: $out"
out=$(ctl invalidate --fh 12zz 2>&1) && h_fail "invalidate --fh 12zz succeeded"
grep -q "is not a file handle" <<<"$out" || h_fail "--fh 12zz: $out"
h_log "ok: invalidate PATH, absolute PATH, --fh and --all make the next read a miss"

# --- 3. cull ---
rd other >/dev/null
rd small >/dev/null
rd "dir with space/f" >/dev/null
n0=$(st cache_objects) b0=$(st cache_bytes) e0=$(st evictions)
[ "$n0" = 4 ] || h_fail "expected 4 cached files, have $n0"
out=$(ctl cull --to 50) || h_fail "cull --to 50 failed: $out"
b=$(st cache_bytes)
[ "$b" -le $((b0 / 2)) ] || h_fail "cull --to 50: $b0 -> $b bytes"
[ "$(st evictions)" -gt "$e0" ] || h_fail "cull --to 50 evicted nothing"
# big was read first of the four: least recently used, so it went
m2=$(st read_misses)
rd "dir with space/f" >/dev/null
[ "$(st read_misses)" = "$m2" ] || h_fail "cull evicted the most recently used file"
out=$(ctl cull --to 0) || h_fail "cull --to 0 failed: $out"
grep -q "^cached 0 bytes in 0 objects" <<<"$out" || h_fail "cull --to 0 said: $out"
out=$(ctl cull) || h_fail "cull (to the limits) failed: $out"
out=$(ctl cull --to 101 2>&1) && h_fail "cull --to 101 succeeded"
grep -q "not a percentage" <<<"$out" || h_fail "cull --to 101: $out"
h_log "ok: cull --to 50 and --to 0 evict, least recently used first"

# --- 4. config and info ---
ctl config >"$H_TMP/config" || h_fail "config failed"
grep -qx "upstream = $H_URL_up" "$H_TMP/config" || h_fail "config lacks the upstream"
grep -qx "readahead = 0" "$H_TMP/config" || h_fail "config lacks readahead = 0 (a flag)"
grep -qx "cache_dir = $C" "$H_TMP/config" || h_fail "config lacks cache_dir"
ctl info >"$H_TMP/info" || h_fail "info failed"
grep -qx "port $P" "$H_TMP/info" || h_fail "info lacks the port: $(cat "$H_TMP/info")"
grep -qx "export $E" "$H_TMP/info" || h_fail "info lacks the export"
grep -qx "pid $H_PID_px" "$H_TMP/info" || h_fail "info lacks the pid"
# --socket names the same socket; --config finds it through cache_dir
"$CTLBIN" --socket "$C/control" info >/dev/null || h_fail "--socket failed"
printf 'upstream = %s\ncache_dir = %s\n' "$H_URL_up" "$C" >"$H_TMP/px.conf"
"$CTLBIN" --config "$H_TMP/px.conf" info >/dev/null || h_fail "--config failed"
h_log "ok: config, info, --socket, --config"

# --- 5. errors ---
out=$("$CTLBIN" --cache-dir "$C" frobnicate 2>&1)
[ $? = 2 ] || h_fail "an unknown command did not exit 2"
# an option no command knows is a usage error, named (the daemon still
# checks what it is sent: cull --to 101 below)
out=$(ctl invalidate --bogus 2>&1)
rc=$?
[ $rc = 2 ] && grep -q "unknown option '--bogus'" <<<"$out" &&
	grep -q "usage: cachefsctl invalidate .*PATH... | --fh HEX | --all" <<<"$out" ||
	h_fail "invalidate --bogus: exit $rc: $out"
out=$(ctl verify --now 2>&1) && h_fail "verify --now succeeded"
grep -q "usage: cachefsctl verify \[--drop-bad\]" <<<"$out" || h_fail "verify --now: $out"
out=$(ctl stats --bogus 2>&1)
[ $? = 2 ] || h_fail "stats --bogus did not exit 2"
out=$("$CTLBIN" --cache-dir "$H_TMP/nowhere" stats 2>&1)
rc=$?
[ $rc = 3 ] || h_fail "no daemon: exit $rc, not 3"
grep -qF "cachefsd is not running (no socket at $H_TMP/nowhere/control)" <<<"$out" ||
	h_fail "no daemon: $out"
# a non-root user cannot use the socket
if command -v setpriv >/dev/null; then
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$CTLBIN" --socket "$C/control" \
		stats 2>&1)
	rc=$?
	[ $rc = 3 ] && grep -q "permission denied" <<<"$out" || h_fail "as nobody: exit $rc: $out"
fi
# a stale socket (kill -9) is named so, and a new daemon replaces it
h_stop_cachefsd px KILL
[ -S "$C/control" ] || h_fail "kill -9 removed the socket?"
out=$(ctl stats 2>&1)
rc=$?
[ $rc = 3 ] && grep -q "cachefsd is not running (nothing listens on $C/control: a stale socket)" \
	<<<"$out" || h_fail "stale socket: exit $rc: $out"
h_start_cachefsd px up --memory-cache 0 --readahead 0 --fresh-guard 0
ctl info >/dev/null || h_fail "the restarted daemon did not replace the stale socket"
h_stop_cachefsd px
[ ! -e "$C/control" ] || h_fail "a clean stop left the socket"
out=$(ctl stats 2>&1) && h_fail "stats succeeded with the daemon stopped"
grep -q "cachefsd is not running (no socket at $C/control)" <<<"$out" || h_fail "stopped: $out"
# the peer check: a socket nobody's mode lets in still refuses non-root users
if command -v setpriv >/dev/null; then
	mkdir -p "$H_TMP/open" && chmod 755 "$H_TMP" "$H_TMP/open"
	h_start_cachefsd px up --control-socket "$H_TMP/open/ctl"
	chmod 666 "$H_TMP/open/ctl"
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$CTLBIN" --socket \
		"$H_TMP/open/ctl" stats 2>&1)
	rc=$?
	[ $rc = 3 ] && grep -q "permission denied (root only)" <<<"$out" ||
		h_fail "a non-root peer of a mode 666 socket: exit $rc: $out"
	"$CTLBIN" --socket "$H_TMP/open/ctl" info >/dev/null || h_fail "control_socket elsewhere"
fi
h_log "ok: errors: not running, stale socket, non-root, bad usage"

h_pass "cachefsctl: stats, invalidate (path, fh, all), cull, config, info, errors"
