#!/bin/bash
# cachefsctl warm: reading trees and lists through the proxy fills the cache.
#  1. warm a tree (and a file from a --from list): every file is cached;
#     with nfs-ganesha stopped, every file reads back by handle through the
#     proxy, byte for byte, without a fill; a ttl-mode proxy, after files in
#     subdirectories were read once by mounting their directory (libnfs
#     tools, as `nfs-cat nfs://proxy/export/dir/file` does), mounts those
#     directories and reads those files again with nfs-ganesha stopped (MNT
#     walks answered from the metadata cache, not upstream);
#  2. SIGINT stops a warm cleanly (exit 130, state "interrupted"); --resume
#     skips what was read and finishes;
#  3. --background, --status, --cancel, --resume --background;
#  4. errors: no paths, a missing path, the daemon down.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CTLBIN=$H_BUILD/cachefsctl
NR=$H_BUILD/tests/nfsread
[ -x "$CTLBIN" ] || h_fail "$CTLBIN not built"
[ -x "$NR" ] || h_fail "$NR not built (make tools)"
h_start_ganesha up
E=$H_EXPORT_up
mkdir -p "$E/tree/a/b" "$E/tree/c" "$E/other" "$E/slow"
for i in $(seq 1 30); do h_mkdata "$E/tree/a/f$i" $((i * 20)) "$i"; done # 20 KB .. 600 KB
for i in 1 2 3; do h_mkdata "$E/tree/a/b/g$i" $((i * 1500)) "$((i + 40))"; done
echo "a small file" >"$E/tree/c/small"
: >"$E/tree/c/empty"
ln -s a "$E/tree/link" # not followed
h_mkdata "$E/other/listed" 700 50
h_mkdata "$E/other/unlisted" 700 51
for i in $(seq 1 40); do h_mkdata "$E/slow/s$i" 256 "$((i + 100))"; done # 10 MiB

# --fresh-guard 0: the files were just written (the guard is 71-writers')
# no lookup prefetch: the LOOKUPs below that collect handles must not cache
# the small files before the warm does
h_start_cachefsd px up --fresh-guard 0 --lookup-prefetch false
h_start_cachefsd ttl up --fresh-guard 0 --meta-ttl 600
P=$H_PORT_px
C=$H_CACHE_px
ctl() { "$CTLBIN" --cache-dir "$C" "$@"; }
st() { ctl stats --raw | awk -v k="$1" '$1==k{print $2; f=1} END{if(!f) print "MISSING"}'; }
want() { md5sum <"$E/$1" | cut -d' ' -f1; }

# the handles (LOOKUPs through the proxy, no READ), for reading by handle
# later: with the upstream stopped no LOOKUP could be answered
files=$(cd "$E" && find tree other -type f | sort)
declare -A FH
for f in $files; do
	"$NR" --port "$P" --export "$E" --path "$f" --length 0 --print-fh \
		2>"$H_TMP/fh" >/dev/null || h_fail "LOOKUP of $f: $(cat "$H_TMP/fh")"
	FH[$f]=$(awk '$1=="fh"{print $2}' "$H_TMP/fh")
done
[ "$(st nfs_calls_READ)" = 0 ] && [ "$(st cache_objects)" = 0 ] ||
	h_fail "the proxy read data before the warm"

# --- 1. warm, then read everything with the upstream stopped ---
echo "other/listed" >"$H_TMP/list"
out=$(ctl warm tree --from "$H_TMP/list" 2>&1) || h_fail "warm failed: $out"
ntree=$(cd "$E" && find tree -type f | wc -l)
grep -q "^warm: $((ntree + 1))/$((ntree + 1)) files" <<<"$out" || h_fail "warm said: $out"
bytes=$(cd "$E" && cat $(find tree -type f) other/listed | wc -c)
[ "$(st cache_objects)" = $((ntree + 1)) ] || h_fail "warm cached $(st cache_objects) objects"
[ "$(st cache_bytes)" = "$bytes" ] || h_fail "warm cached $(st cache_bytes) of $bytes bytes"
grep -qx "state done" "$C/warm.state.progress" || h_fail "the progress file does not say done"
ctl warm --status | grep -qx done || h_fail "warm --status does not say done"
fills=$(st fills)
# the ttl proxy: each file mounted by its directory, read once while the
# upstream is up
sub="tree/a/b/g1 tree/a/b/g3 tree/a/f7 tree/c/small other/listed"
cat_sub() { timeout 20 nfs-cat "nfs://127.0.0.1$E/$1?nfsport=$H_PORT_ttl&mountport=$H_PORT_ttl"; }
for f in $sub; do
	[ "$(cat_sub "$f" | md5sum | cut -d' ' -f1)" = "$(want "$f")" ] ||
		h_fail "ttl proxy: $f mounted by its directory: wrong bytes"
done
walks=$(h_stat ttl upstream_calls_LOOKUP)
h_stop_ganesha up
for f in $files; do
	[ "$f" = other/unlisted ] && continue
	got=$("$NR" --port "$P" --fh "${FH[$f]}" --timeout 20 | md5sum | cut -d' ' -f1)
	[ "$got" = "$(want "$f")" ] || h_fail "$f read with the upstream stopped: wrong bytes"
done
[ "$(st fills)" = "$fills" ] || h_fail "reads after the warm fetched from the upstream"
for f in $sub; do
	got=$(cat_sub "$f" | md5sum | cut -d' ' -f1)
	[ "$got" = "$(want "$f")" ] ||
		h_fail "ttl proxy, upstream stopped: $f mounted by its directory: wrong bytes or no answer"
done
[ "$(h_stat ttl upstream_calls_LOOKUP)" = "$walks" ] ||
	h_fail "ttl proxy: mounts below the export walked upstream again"
h_log "ok: ttl proxy mounted subdirectories and read $(wc -w <<<"$sub") files with the upstream stopped"
h_log "ok: warmed $((ntree + 1)) files ($bytes bytes); all read back with the upstream stopped"
h_restart_ganesha up
for i in $(seq 1 100); do
	nfs-ls "$H_URL_up" >/dev/null 2>&1 && break
	sleep 0.2
done

# --- 2. SIGINT, then --resume ---
ctl invalidate --all >/dev/null
"$CTLBIN" --cache-dir "$C" warm --max-rate 2M --jobs 1 slow >"$H_TMP/w.out" 2>&1 &
wpid=$!
h_track warm-fg "$wpid"
# its progress file names it once it handles SIGINT (a background job of a
# script starts with SIGINT ignored); its state file is new by then
for i in $(seq 1 100); do
	[ "$(awk '$1=="pid"{print $2}' "$C/warm.state.progress")" = $wpid ] &&
		[ "$(grep -c "^done " "$C/warm.state")" -ge 3 ] && break
	sleep 0.1
done
kill -INT $wpid
wait $wpid
rc=$?
[ $rc = 130 ] || h_fail "an interrupted warm exited $rc, not 130: $(cat "$H_TMP/w.out")"
grep -q "warm interrupted; go on with: cachefsctl warm --resume" "$H_TMP/w.out" ||
	h_fail "interrupted warm said: $(cat "$H_TMP/w.out")"
done1=$(grep -c "^done " "$C/warm.state")
[ "$done1" -ge 3 ] && [ "$done1" -lt 40 ] || h_fail "$done1 files done at the interrupt"
ctl warm --status >"$H_TMP/status"
grep -qx interrupted "$H_TMP/status" || h_fail "status after SIGINT: $(cat "$H_TMP/status")"
f0=$(st fills)
out=$(ctl warm --resume 2>&1) || h_fail "warm --resume failed: $out"
grep -q "$done1 files were read by an earlier run: skipped" <<<"$out" || h_fail "resume: $out"
grep -q "^warm: 40/40 files" <<<"$out" || h_fail "resume said: $out"
[ "$(grep -c "^done " "$C/warm.state")" = 40 ] || h_fail "the state file lacks files"
# the files done before were not read again: fewer fills than 40 files' chunks
[ $(($(st fills) - f0)) -lt 40 ] || h_fail "resume read everything again"
[ "$(st cache_objects)" = 40 ] || h_fail "after resume: $(st cache_objects) objects, not 40"
h_log "ok: SIGINT after $done1 files (exit 130); --resume skipped them and finished"

# --- 3. in the background ---
ctl invalidate --all >/dev/null
out=$(ctl warm --background --max-rate 2M --jobs 1 slow) || h_fail "warm --background: $out"
grep -q "^warming in the background (pid [0-9]*)" <<<"$out" || h_fail "background said: $out"
bpid=$(sed -n 's/^warming in the background (pid \([0-9]*\)).*/\1/p' <<<"$out")
[ -n "$bpid" ] || h_fail "no pid in: $out"
h_track warm-bg "$bpid" # stopped at cleanup if the test fails
bg_running() { ctl warm --status | grep -q "^running (pid $bpid)"; }
h_wait_until 10 bg_running || h_fail "status: $(ctl warm --status)"
ctl warm tree >/dev/null 2>&1 && h_fail "a second warm started beside a running one"
out=$(ctl warm --cancel) || h_fail "warm --cancel failed: $out"
! kill -0 "$bpid" 2>/dev/null || h_fail "warm --cancel left pid $bpid running"
ctl warm --status | grep -qx interrupted || h_fail "status after --cancel"
out=$(ctl warm --resume --background) || h_fail "warm --resume --background: $out"
h_track warm-bg2 "$(sed -n 's/^warming in the background (pid \([0-9]*\)).*/\1/p' <<<"$out")"
for i in $(seq 1 300); do
	grep -qx "state done" "$C/warm.state.progress" && break
	sleep 0.1
done
grep -qx "state done" "$C/warm.state.progress" || h_fail "the background resume did not finish"
[ "$(st cache_objects)" = 40 ] || h_fail "after the background warm: $(st cache_objects) objects"
h_log "ok: --background, --status, --cancel, --resume --background"

# --- 4. errors ---
out=$(ctl warm 2>&1)
[ $? = 2 ] || h_fail "warm without paths did not exit 2"
out=$(ctl warm no/such/file 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "no/such/file" <<<"$out" || h_fail "warm of a missing path: exit $rc: $out"
out=$("$CTLBIN" --cache-dir "$H_TMP/nowhere" warm tree 2>&1)
rc=$?
[ $rc = 3 ] && grep -q "cachefsd is not running" <<<"$out" || h_fail "no daemon: exit $rc: $out"
out=$("$CTLBIN" warm --server 127.0.0.1 --port "$(h_free_port)" --export "$E" \
	--state "$H_TMP/s" tree 2>&1)
[ $? = 3 ] || h_fail "warm through nothing did not exit 3: $out"
h_log "ok: warm errors"

h_pass "warm: tree and list cached (read back with the upstream down), SIGINT + resume, background"
