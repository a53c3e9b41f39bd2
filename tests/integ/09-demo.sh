#!/bin/bash
# `make run`'s demo (tests/lib/demo.sh) shows the cache working: run as
# `make run DEMO_EXIT=1` would (it stops after its output), on a fresh
# demo directory, its files are read through the proxy twice and the
# second read reports READ hits and bytes served from the cache (counted by
# cachefsctl stats --json); every byte of both reads is checked by the demo
# itself. A second run on the same directory finds the cache warm (its first
# read hits too), and without DEMO_EXIT the demo serves until stopped and
# then stops everything it started.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
DEMO=$H_ROOT/tests/lib/demo.sh
dir=$H_TMP/demo

# figure LABEL FIELD OUT: the number before FIELD on the "LABEL read:" line
figure()
{
	grep -m1 "^    $1 read: " <<<"$3" | grep -o "[0-9]* $2" | cut -d' ' -f1
}

# run 1: a fresh directory, the files made just now
out=$(DEMO_EXIT=1 DEMO_DIR=$dir timeout 180 "$DEMO" "$H_BUILD" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/demo| /' >&2
[ "$rc" = 0 ] || h_fail "the demo exited $rc"
grep -q "^DEMO_EXIT=1: stopping" <<<"$out" || h_fail "the demo did not stop after its output"
hits=$(figure second "READ hits" "$out")
bytes=$(figure second "bytes from the cache" "$out")
[ -n "$hits" ] && [ -n "$bytes" ] || h_fail "the demo printed no second-read line"
[ "$hits" -gt 0 ] || h_fail "the demo's second read had no READ hits"
# blob.bin is 4 MiB: all of it comes from the cache the second time
[ "$bytes" -ge 4194304 ] || h_fail "the demo's second read served only $bytes bytes from the cache"
up=$(figure second "from the upstream" "$out")
[ "$up" = 0 ] || h_fail "the demo's second read fetched $up bytes from the upstream"
first_up=$(figure first "from the upstream" "$out")
[ "${first_up:-0}" -ge 4194304 ] || h_fail "the demo's first read fetched only ${first_up:-0} bytes from the upstream"
h_log "run 1: second read $hits READ hits, $bytes bytes from the cache"

# run 2: the same directory, served until stopped (as `make run` for a
# user: TERM stands in for Ctrl-C, which a background job ignores)
DEMO_DIR=$dir "$DEMO" "$H_BUILD" >"$H_TMP/demo2.out" 2>&1 &
pid=$!
h_track demo "$pid"
h_wait_until 120 grep -q "^Serving until Ctrl-C" "$H_TMP/demo2.out" ||
	h_fail "the demo did not come to serving: $(tail -n 5 "$H_TMP/demo2.out")"
out2=$(cat "$H_TMP/demo2.out")
printf '%s\n' "$out2" | sed 's/^/demo2| /' >&2
! grep -q "were just made: waiting" <<<"$out2" || h_fail "the second run waited for the guard"
hits=$(figure first "READ hits" "$out2")
[ "${hits:-0}" -gt 0 ] || h_fail "the second run's first read had no hits (the cache was not kept)"
cpid=$(pgrep -P "$pid" -x cachefsd) || h_fail "the serving demo has no cachefsd"
kill -TERM "$pid"
h_wait_pid "$pid" "the demo after TERM" 30
! kill -0 "$cpid" 2>/dev/null || h_fail "the demo left its cachefsd (pid $cpid) running"
grep -q "^stopping" "$H_TMP/demo2.out" || h_fail "the demo did not say it stopped"
h_pass "make run's demo: second read from the cache ($bytes bytes), DEMO_EXIT=1 stops, a second run finds the cache warm, TERM stops it all"
