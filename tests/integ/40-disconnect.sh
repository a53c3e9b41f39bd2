#!/bin/bash
# 40-disconnect: clients that vanish with calls in flight upstream.
# build/tests/churn connects, MOUNTs, writes 64 pipelined calls (GETATTR,
# READDIRPLUS, ACCESS of the root, READ of 1 MiB of a 4 MiB file) and drops
# the connection without reading a reply (FIN and RST alternately), 300
# times; then 1000 bare connect/close and 1000 connect/MNT/close cycles;
# then the same 300 cycles again. Afterwards the proxy must be alive (not a
# zombie), answer a new client (churn's own NULL + GETATTR check), serve
# nfs-ls and nfs-cat (md5), and its RSS must not have grown by more than
# 8 MiB during the second, identical round (leak check). RSS after a round
# is a high-water mark of the work queued for the vanished clients, which
# varies from run to run; a leak grows every round, a new high-water mark
# rarely twice: so if round 2 grew by 8 MiB or more, up to two more
# identical rounds run and the test fails only if each of them grew by
# 8 MiB or more too. That catches gross leaks only: a leak smaller than
# the heap the queued work left free is invisible in RSS (leaking every
# abandoned request, ~11 MB a round, was). Run the test with a sanitizer
# build too (H_BUILD=build-san): LeakSanitizer reports at exit and the
# harness fails the test on any sanitizer report (it catches that leak).
# For a sanitizer build RSS is only reported: freed memory stays in ASan's
# quarantine.
#
# The proxy still executes upstream every call it read from a client that
# has gone (thousands of 1 MiB READs per round), so a new client's GETATTR
# right after a round queues behind that work for seconds: churn runs with
# a per-read limit of CHURN_TIMEOUT seconds [60], and the time the final
# check took is reported.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

CHURN=$H_BUILD/tests/churn
CHURN_TIMEOUT=${CHURN_TIMEOUT:-60}
MAX_GROWTH_KIB=8192
[ -x "$CHURN" ] || h_fail "$CHURN is missing (make tools)"
[ -x "$H_BUILD/cachefsd" ] || h_fail "$H_BUILD/cachefsd is missing (make)"


rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$H_PID_px/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$H_PID_px/stat"; }

# settle: wait (at most 60 s) until the proxy has finished the work its
# vanished clients left: under 3 ticks of CPU in each of 2 half-seconds
settle()
{
	local i quiet=0 a b
	a=$(cpu_ticks)
	for ((i = 0; i < 120 && quiet < 2; i++)); do
		sleep 0.5
		alive "$H_PID_px" || h_fail "cachefsd died: $(tail -n 5 "$H_LOG_px")"
		b=$(cpu_ticks)
		if ((b - a < 3)); then quiet=$((quiet + 1)); else quiet=0; fi
		a=$b
	done
	((quiet >= 2)) || h_fail "cachefsd still busy 60 s after the clients left"
}

# churn_run LABEL ARGS...: run churn, fail on a non-zero exit, keep its line
churn_run()
{
	local label=$1 out
	shift
	out=$("$CHURN" 127.0.0.1 "$H_PORT_px" "$H_EXPORT_up" --timeout "$CHURN_TIMEOUT" "$@" 2>&1)
	local rc=$?
	printf '%s\n' "$out" >>"$H_TMP/churn.log"
	h_log "$label: $(tail -n 1 <<<"$out")"
	[ $rc = 0 ] || h_fail "churn $label failed (exit $rc): $out"
	alive "$H_PID_px" || h_fail "cachefsd died during churn $label: $(tail -n 5 "$H_LOG_px")"
	CHURN_LAST=$out
}

# after_s: how long churn's final NULL + GETATTR took
after_s() { sed -n 's/.*after: .* (\([0-9.]*\) s)$/\1/p' <<<"$CHURN_LAST" | tail -n 1; }

h_start_ganesha up
h_mkdata "$H_EXPORT_up/big" 4096 7
want_md5=$(h_md5 "$H_EXPORT_up/big")
h_start_cachefsd px up
P="nfsport=$H_PORT_px&mountport=$H_PORT_px"
U="nfs://127.0.0.1$H_EXPORT_up"

settle
rss0=$(rss_kib)
churn_run "round 1" --cycles 300 --calls 64 --file big --seed 11
after1=$(after_s)
settle
rss1=$(rss_kib)
churn_run "connect/close" --cycles 1000 --plain
churn_run "connect/MNT/close" --cycles 1000 --calls 0
settle
rss2=$(rss_kib)
sanitizer=0
grep -qa __asan_init "$H_BUILD/cachefsd" && sanitizer=1
before=$rss2
extra=""
for round in 2 3 4; do
	churn_run "round $round" --cycles 300 --calls 64 --file big --seed 11
	[ $round = 2 ] && after2=$(after_s)
	settle
	rss=$(rss_kib)
	growth=$((rss - before))
	h_log "RSS KiB: start $rss0, after round 1 $rss1, after connect/close $rss2, before round $round $before, after it $rss (growth $growth)"
	[ $round = 2 ] && rss3=$rss growth2=$growth
	[ $round != 2 ] && extra="$extra; round $round grew $growth KiB"
	((sanitizer || growth < MAX_GROWTH_KIB)) && break
	before=$rss
done

alive "$H_PID_px" || h_fail "cachefsd is not running after the churn"
out=$(timeout 60 nfs-ls "$U?$P" 2>&1) || h_fail "nfs-ls through the proxy failed: $out"
grep -q ' big$' <<<"$out" || h_fail "nfs-ls through the proxy does not list big: $out"
got_md5=$(timeout 60 nfs-cat "$U/big?$P" | md5sum | cut -d' ' -f1)
[ "$got_md5" = "$want_md5" ] || h_fail "nfs-cat big through the proxy: md5 $got_md5, want $want_md5"
alive "$H_PID_px" || h_fail "cachefsd died after nfs-ls/nfs-cat"

if ((sanitizer)); then
	verdict="not checked: sanitizer build"
elif [ -z "$extra" ]; then
	verdict="limit $MAX_GROWTH_KIB"
elif ((growth < MAX_GROWTH_KIB)); then
	verdict="over the $MAX_GROWTH_KIB limit, but then${extra#;}: a high-water mark, not a leak"
else
	h_fail "RSS grew by $MAX_GROWTH_KIB KiB or more in each of rounds 2-4 (start $rss0, round 1 $rss1, before round 2 $rss2, after round 2 $rss3$extra): a leak"
fi
h_pass "$round x 300 dropped connections with 64 calls in flight, 2000 bare/MNT-only connections: proxy alive, nfs-ls and nfs-cat md5 ok; RSS KiB start $rss0, round 1 $rss1, before round 2 $rss2, after round 2 $rss3, round-2 growth $growth2 KiB ($verdict); new client's NULL+GETATTR took ${after1}s / ${after2}s after the rounds"
