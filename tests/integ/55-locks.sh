#!/bin/bash
# 55-locks: NLM v4 through cachefsd; the locks are the filer's.
# nfs-ganesha with Enable_NLM runs as a host of its own (h_start_filer_host: a network
# namespace joined by a veth pair, its own /run, rpcbind and rpc.statd),
# so nothing reaches its NLM but what the proxy forwards. Two lock owners
# on the client side (tests/tools/nlmlock.c: different caller_name, owner
# handle and svid) lock one file through the proxy:
#   - an exclusive lock excludes the other owner (DENIED; TEST names the
#     holder's svid and range); shared locks coexist; another byte range
#     is free;
#   - a blocking lock is granted once the holder unlocks (the client
#     polls, as a kernel client does);
#   - the proxy's own poll (lock_poll) gets a blocked lock granted for a
#     client that asked once, and tries to tell the client host (GRANTED);
#     a GRANTED for it from anyone but the filer is refused (DENIED);
#   - a second cachefsd in front of the same filer sees the first one's
#     lock (DENIED through it);
#   - revalidation: in ttl mode a file cached through the proxy and changed
#     on the filer behind its back is served stale until a lock is taken
#     through the proxy; then a read returns the new bytes;
#   - bad NLM input gets the RPC error (GARBAGE_ARGS, PROC_UNAVAIL,
#     PROG_MISMATCH 4..4) and the proxy keeps serving;
#   - the filer host crashes and comes back: a TEST and a LOCK made while
#     it is down wait, then are answered (hard, as NFS; the NLM port asked
#     again), by the filer alone: the restarted filer holds the LOCK;
#   - a client host that reboots (its SM_NOTIFY reaches the proxy's NSM)
#     loses its locks at the filer (FREE_ALL), another host keeps its own;
#   - a filer without NLM: the client gets PROG_UNAVAIL;
#   - the counters show it all in cachefsctl stats and /metrics.
# Its own "host" (tests/lib/isolate.sh: network, mount and pid namespaces,
# a /run of its own): its rpcbind, the registrations it makes, the devices
# and the daemons it starts go with it, whatever the suite runs in.
# shellcheck source=../lib/own-host.sh
. "$(dirname "$0")/../lib/own-host.sh"
own_host 55-locks "namespaces: the filer is a host of its own, the proxy registers with this host's rpcbind" "$@"
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

NLMLOCK=$H_BUILD/tests/nlmlock
NFSREAD=$H_BUILD/tests/nfsread
[ -x "$NLMLOCK" ] || h_fail "$NLMLOCK is missing (make tools)"
command -v ip >/dev/null || h_fail "ip (iproute2) missing"
command -v unshare >/dev/null || h_fail "unshare (util-linux) missing"

# until_ok SECONDS CMD...: CMD again every 0.1 s until it succeeds, at most
# SECONDS. The deadlines are generous (the machine may be loaded): a
# passing run never waits them out.
until_ok()
{
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.1
	done
}
# px_ge COUNTER MIN: cachefsd px's COUNTER is at least MIN
px_ge() { [ "$(h_stat px "$1")" -ge "$2" ] 2>/dev/null; }

# --- the filer: its own host (tests/lib/harness.sh) ---------------------
h_start_filer_host fl client-a client-b client-c
FILER=$H_NSADDR_fl
E=$H_EXPORT_fl
rpcinfo -p "$FILER" 2>/dev/null | grep -q nlockmgr || h_fail "the filer has no NLM registered"

printf 'old bytes, version 1\n' >"$E/lockfile"
printf 'shared\n' >"$E/other"
touch -d '-1 hour' "$E/lockfile" "$E/other"

# --- the proxy ------------------------------------------------------------
# the filer calls back (GRANTED_MSG) the NLM registered with the proxy
# host's rpcbind at the address the proxy connected from: the proxy listens
# there too, and allows the filer's network
h_start_rpcbind
H_PORT_px=$(h_free_port)
P=$H_PORT_px
MP=$(h_free_port)
h_start_cachefsd px fl --meta-ttl 60 --fresh-guard 0 --lock-poll 2 --listen "0.0.0.0:$P" \
	--metrics-listen "127.0.0.1:$MP" \
	--allow "127.0.0.0/8,$H_HOSTADDR_fl/16"
# cachefsd registered its NLM there itself (register = auto)
got=$(rpcinfo -p 127.0.0.1 | awk '$1 == 100021 && $2 == 4 && $3 == "tcp" {print $4}')
[ "$got" = "$P" ] || h_fail "the proxy's NLM is not registered at $P: $(rpcinfo -p 127.0.0.1)"
FH=$("$NFSREAD" --port "$P" --export "$E" --path lockfile --print-fh --out /dev/null 2>&1 >/dev/null |
	awk '$1=="fh"{print $2}')
[ -n "$FH" ] || h_fail "no handle for lockfile through the proxy"

A=(--port "$P" --fh "$FH" --caller client-a --svid 101 --oh 61616161 --uid 0 --gid 0)
B=(--port "$P" --fh "$FH" --caller client-b --svid 202 --oh 62626262 --uid 0 --gid 0)

# an exclusive lock excludes the other owner; TEST names the holder
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 100 lock) ||
	h_fail "A's exclusive lock: $got"
[ "$got" = GRANTED ] || h_fail "A's exclusive lock answered '$got'"
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 100 lock)
[ "$got" = DENIED ] || h_fail "B locked a range A holds exclusively: '$got'"
got=$("$NLMLOCK" "${B[@]}" --shared --offset 50 --len 10 test)
[ "$got" = "DENIED svid=101 exclusive=1 offset=0 len=100" ] ||
	h_fail "B's TEST did not name A's lock: '$got'"
# the same owner asking again is granted (its own lock)
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 100 lock)
[ "$got" = GRANTED ] || h_fail "A's own lock again: '$got'"
# another byte range is free
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 200 --len 50 lock)
[ "$got" = GRANTED ] || h_fail "B's lock of another range: '$got'"
got=$("$NLMLOCK" "${B[@]}" --offset 200 --len 50 unlock)
[ "$got" = GRANTED ] || h_fail "B's unlock: '$got'"

# a second proxy in front of the same filer sees A's lock
h_start_cachefsd px2 fl
B2=(--port "$H_PORT_px2" --fh "$FH" --caller client-b --svid 202 --oh 62626262 --uid 0 --gid 0)
got=$("$NLMLOCK" "${B2[@]}" --exclusive --offset 10 --len 1 lock)
[ "$got" = DENIED ] || h_fail "B through the second proxy locked A's range: '$got'"
got=$("$NLMLOCK" "${B2[@]}" --offset 10 --len 1 test)
[ "$got" = "DENIED svid=101 exclusive=1 offset=0 len=100" ] ||
	h_fail "the second proxy's TEST did not name A's lock: '$got'"

got=$("$NLMLOCK" "${A[@]}" --offset 0 --len 100 unlock)
[ "$got" = GRANTED ] || h_fail "A's unlock: '$got'"

# shared locks coexist, and exclude an exclusive one
got=$("$NLMLOCK" "${A[@]}" --shared --offset 0 --len 0 lock)
[ "$got" = GRANTED ] || h_fail "A's shared lock: '$got'"
got=$("$NLMLOCK" "${B[@]}" --shared --offset 0 --len 0 lock)
[ "$got" = GRANTED ] || h_fail "B's shared lock beside A's: '$got'"
got=$("$NLMLOCK" "${B2[@]}" --caller client-c --svid 303 --oh 63636363 --exclusive lock)
[ "$got" = DENIED ] || h_fail "an exclusive lock over two shared ones: '$got'"
"$NLMLOCK" "${A[@]}" --offset 0 --len 0 unlock >/dev/null
"$NLMLOCK" "${B[@]}" --offset 0 --len 0 unlock >/dev/null

# hold_a: A takes bytes 0..9 exclusively and holds them while fd 7 (the
# write end of its stdin) is open; sets HOLD. A reader must be started
# before the FIFO's writer opens, and every other background process must
# close fd 7, or A never sees its stdin end.
hold_a()
{
	"$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 10 hold <"$H_TMP/hold-a" \
		>"$H_TMP/hold-a.out" &
	HOLD=$!
	h_track hold-a "$HOLD"
	exec 7>"$H_TMP/hold-a"
	until_ok 60 grep -q GRANTED "$H_TMP/hold-a.out" || h_fail "A's hold was not granted: $(cat "$H_TMP/hold-a.out")"
}

# a blocking lock is granted once the holder unlocks (the client polls)
mkfifo "$H_TMP/hold-a"
hold_a
"$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 --block --timeout 120 lock >"$H_TMP/wait-b.out" 7>&- &
WAITB=$!
h_track wait-b "$WAITB"
until_ok 60 grep -q BLOCKED "$H_TMP/wait-b.out" || h_fail "B's blocking lock was not BLOCKED: $(cat "$H_TMP/wait-b.out")"
[ "$(h_stat px nlm_blocked_entries)" -ge 1 ] || h_fail "no blocked entry kept for B"
exec 7>&- # A unlocks
wait "$HOLD" || h_fail "A's hold did not unlock: $(cat "$H_TMP/hold-a.out")"
wait "$WAITB" || h_fail "B's blocking lock was not granted: $(cat "$H_TMP/wait-b.out"; h_stats px | grep nlm_)"
grep -qx GRANTED "$H_TMP/wait-b.out" || h_fail "B's blocking lock: $(cat "$H_TMP/wait-b.out")"
"$NLMLOCK" "${B[@]}" --offset 0 --len 10 unlock >/dev/null

# B asks once (blocking) and does not poll: the proxy polls the filer for
# it (lock_poll 2 s) while A holds the lock; A unlocks, the filer's
# GRANTED_MSG reaches the proxy, which relays GRANTED to B's host (here
# the proxy's own host, whose NLM is the proxy: it answers DENIED, the
# entry being gone, and that counts as a relay failure) and drops the
# entry; the lock is B's at the filer
hold_a
polls0=$(h_stat px nlm_polls)
cb0=$(h_stat px nlm_granted_callback)
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 --block --once lock 7>&-)
[ "$got" = BLOCKED ] || h_fail "B's single blocking LOCK: '$got'"
until_ok 60 px_ge nlm_polls $((polls0 + 1)) || h_fail "the proxy did not poll for B"
# a GRANTED for B's blocked lock from anyone but the filer (here the
# proxy's own host) is refused and changes nothing: B's entry stays, no
# grant is counted, and the filer's own grant still reaches B below
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 granted 7>&-)
[ "$got" = DENIED ] || h_fail "a GRANTED for B's blocked lock from a client host: '$got'"
[ "$(h_stat px nlm_blocked_entries)" -ge 1 ] || h_fail "a GRANTED from a client host dropped B's blocked entry"
[ "$(h_stat px nlm_granted_callback)" = "$cb0" ] || h_fail "a GRANTED from a client host counted as the filer's"
grep -q "a GRANTED from 127.0.0.1.*not the filer: refused" "$H_LOG_px" || h_fail "the refused GRANTED was not logged: $(grep GRANTED "$H_LOG_px")"
exec 7>&-
wait "$HOLD" || h_fail "A's second hold did not unlock"
until_ok 120 px_ge nlm_granted_callback $((cb0 + 1)) ||
	h_fail "the proxy's poll was not granted"
[ "$(h_stat px nlm_blocked_entries)" = 0 ] || h_fail "the granted entry was kept"
# the relay follows the grant's revalidation (a GETATTR at the filer) and
# the client host's answer
relayed() { [ $(($(h_stat px nlm_relayed) + $(h_stat px nlm_relay_failures))) -ge 1 ]; }
until_ok 60 relayed ||
	h_fail "the grant was not relayed (or counted as failed)"
got=$("$NLMLOCK" "${B2[@]}" --caller client-c --svid 303 --oh 63636363 --offset 0 --len 10 test)
[ "${got%% *}" = DENIED ] || h_fail "the proxy's polled grant is not held for B: '$got'"
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "B asking again after the proxy's poll: '$got'"
"$NLMLOCK" "${B[@]}" --offset 0 --len 10 unlock >/dev/null

# revalidation at lock time (ttl mode): cached, changed behind the proxy's
# back, stale until a lock is granted through the proxy
read1=$("$NFSREAD" --port "$P" --fh "$FH") || h_fail "first read"
[ "$read1" = "old bytes, version 1" ] || h_fail "first read: '$read1'"
"$NFSREAD" --port "$P" --fh "$FH" --out /dev/null || h_fail "second read"
printf 'NEW BYTES, version 2\n' >"$E/lockfile" # same size, new mtime
got=$("$NFSREAD" --port "$P" --fh "$FH")
[ "$got" = "old bytes, version 1" ] ||
	h_fail "ttl mode did not serve the cached bytes before the lock (test premise): '$got'"
rv0=$(h_stat px nlm_revalidations)
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 0 lock)
[ "$got" = GRANTED ] || h_fail "lock for revalidation: '$got'"
[ "$(h_stat px nlm_revalidations)" -gt "$rv0" ] || h_fail "the grant did not revalidate"
got=$("$NFSREAD" --port "$P" --fh "$FH")
[ "$got" = "NEW BYTES, version 2" ] || h_fail "read under the lock returned stale bytes: '$got'"
"$NLMLOCK" "${A[@]}" --offset 0 --len 0 unlock >/dev/null

# bad input: the RPC error, and the proxy keeps serving
probe() { "$NLMLOCK" "${A[@]}" "$@" probe; }
[ "$(probe --garbage)" = "accepted 4" ] || h_fail "garbage NLM arguments: not GARBAGE_ARGS"
[ "$(probe --oh-len 100000)" = "accepted 4" ] || h_fail "an absurd owner handle: not GARBAGE_ARGS"
[ "$(probe --oh-len 2147483648)" = "accepted 4" ] || h_fail "a top-bit owner length: not GARBAGE_ARGS"
[ "$(probe --proc 17)" = "accepted 3" ] || h_fail "NLM procedure 17: not PROC_UNAVAIL"
[ "$(probe --proc 99)" = "accepted 3" ] || h_fail "NLM procedure 99: not PROC_UNAVAIL"
[ "$(probe --vers 1)" = "mismatch 4 4" ] || h_fail "NLM v1: not PROG_MISMATCH 4..4"
[ "$(probe --vers 3)" = "mismatch 4 4" ] || h_fail "NLM v3: not PROG_MISMATCH 4..4"
[ "$(h_stat px rpc_garbage_args)" -ge 3 ] || h_fail "garbage NLM calls were not counted"
got=$("$NLMLOCK" "${A[@]}" --offset 0 --len 1 test)
[ "$got" = GRANTED ] || h_fail "the proxy stopped serving NLM after bad input: '$got'"
kill -0 "$H_PID_px" || h_fail "cachefsd died"

# a client host reboots: its statd's SM_NOTIFY (over UDP, from a privileged
# port) reaches the proxy's NSM, and its locks go at the filer (FREE_ALL);
# another client host's lock stays
C=(--port "$P" --fh "$FH" --caller client-c --svid 303 --oh 63636363 --uid 0 --gid 0)
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "A's lock before its reboot: '$got'"
got=$("$NLMLOCK" "${C[@]}" --exclusive --offset 500 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "C's lock: '$got'"
# SM_NOTIFY(mon_name "client-a", state 3)
got=$("$H_BUILD/tests/rpcraw" udp 127.0.0.1 "$P" 100024 1 6 00000008636c69656e742d6100000003)
[ "${got%% *}" = 0 ] || h_fail "SM_NOTIFY for client-a: '$got'"
until_ok 60 grep -q "client host client-a restarted: its locks released at the filer" "$H_LOG_px" ||
	h_fail "the client host's reboot did not release its locks: $(tail -n 3 "$H_LOG_px")"
[ "$(h_stat px nlm_free_all)" = 1 ] || h_fail "nlm_free_all is $(h_stat px nlm_free_all), not 1"
# (FREE_ALL is answered before the filer has released them all)
b_takes() { got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 lock) && [ "$got" = GRANTED ]; }
until_ok 60 b_takes || h_fail "B could not take the rebooted A's range: '$got'"
got=$("$NLMLOCK" "${B[@]}" --offset 500 --len 10 test)
[ "${got%% *}" = DENIED ] || h_fail "C's lock went with A's reboot: '$got'"
"$NLMLOCK" "${B[@]}" --offset 0 --len 10 unlock >/dev/null
"$NLMLOCK" "${C[@]}" --offset 500 --len 10 unlock >/dev/null
h_log "ok: a rebooted client host's locks released at the filer, another host's kept"

# counters: cachefsctl stats and /metrics
[ "$(h_stat px nlm_forwarded)" -ge 15 ] || h_fail "nlm_forwarded: $(h_stat px nlm_forwarded)"
[ "$(h_stat px nlm_granted)" -ge 5 ] || h_fail "nlm_granted: $(h_stat px nlm_granted)"
[ "$(h_stat px nlm_denied)" -ge 1 ] || h_fail "nlm_denied: $(h_stat px nlm_denied)"
[ "$(h_stat px nlm_blocked)" -ge 2 ] || h_fail "nlm_blocked: $(h_stat px nlm_blocked)"
metrics=$(curl -sf "http://127.0.0.1:$MP/metrics") || h_fail "no /metrics"
for m in cachefsd_nlm_calls_total 'cachefsd_nlm_locks_total{result="granted"}' \
	'cachefsd_nlm_locks_total{result="blocked"}' cachefsd_nlm_polls_total cachefsd_nlm_relayed_total \
	cachefsd_nlm_blocked_entries; do
	grep -qF "$m " <<<"$metrics" || h_fail "/metrics has no $m"
done
v=$(awk '$1=="cachefsd_nlm_calls_total"{print $2}' <<<"$metrics")
[ "${v:-0}" -ge 15 ] || h_fail "cachefsd_nlm_calls_total is $v"

# the filer goes away: its host crashes (h_filer_host_stop returns once
# no process of it is left and nothing listens at its address). Lock calls
# made meanwhile wait (hard, as NFS) and are answered once the filer is
# back (its NLM port asked again of its new rpcbind), by the filer alone:
# a TEST, and a LOCK the restarted filer holds afterwards (its locks went
# with the crash: it holds this one only if it saw the call)
h_filer_host_stop fl
fwd0=$(h_stat px nlm_forwarded)
"$NLMLOCK" "${A[@]}" --offset 0 --len 1 --timeout 300 test >"$H_TMP/wait-test.out" 7>&- &
WAITT=$!
h_track wait-test "$WAITT"
"$NLMLOCK" "${C[@]}" --exclusive --offset 1000 --len 10 --timeout 300 lock >"$H_TMP/wait-lock.out" 7>&- &
WAITL=$!
h_track wait-lock "$WAITL"
# both reached the proxy, which holds them for the filer
until_ok 60 px_ge nlm_forwarded $((fwd0 + 2)) ||
	h_fail "the calls made while the filer is away did not reach the proxy: nlm_forwarded $(h_stat px nlm_forwarded), was $fwd0"
# the filer stays away a while (the proxy keeps trying it): nobody answers
sleep 3
alive "$WAITT" || h_fail "a TEST with the filer away did not wait: $(cat "$H_TMP/wait-test.out")"
alive "$WAITL" || h_fail "a LOCK with the filer away did not wait: $(cat "$H_TMP/wait-lock.out")"
h_filer_host_start fl
h_wait_pid "$WAITT" "the TEST made while the filer was away" 240
h_wait_pid "$WAITL" "the LOCK made while the filer was away" 240
[ "$(cat "$H_TMP/wait-test.out")" = GRANTED ] || h_fail "the waiting TEST: $(cat "$H_TMP/wait-test.out")"
[ "$(cat "$H_TMP/wait-lock.out")" = GRANTED ] || h_fail "the waiting LOCK: $(cat "$H_TMP/wait-lock.out")"
[ "$(h_stat px nlm_upstream_errors)" = 0 ] || h_fail "the filer's absence reached a client as an error"
# the restarted filer holds C's lock: it saw the LOCK (asked through the
# second proxy, which waited for the filer too)
got=$("$NLMLOCK" "${B2[@]}" --offset 1000 --len 10 --timeout 120 test)
[ "$got" = "DENIED svid=303 exclusive=1 offset=1000 len=10" ] ||
	h_fail "the LOCK made while the filer was away was answered GRANTED, but the restarted filer does not hold it: '$got'"
got=$("$NLMLOCK" "${C[@]}" --offset 1000 --len 10 unlock)
[ "$got" = GRANTED ] || h_fail "C's unlock after the filer's restart: '$got'"
h_log "ok: calls made while the filer was away were answered after it came back, by the filer"

# a filer without NLM: PROG_UNAVAIL for the client (this one's portmapper
# is the test's rpcbind, where the proxy registered its NLM: stopped, it
# unregisters)
h_stop_cachefsd px
[ -z "$(rpcinfo -p 127.0.0.1 | awk '$1 == 100021')" ] || h_fail "the stopped proxy's NLM stayed registered"
h_start_ganesha nonlm
h_start_cachefsd px3 nonlm --register no
FH3=$("$NFSREAD" --port "$H_PORT_px3" --export "$H_EXPORT_nonlm" --path . --print-fh --length 0 \
	--out /dev/null 2>&1 >/dev/null | awk '$1=="fh"{print $2}')
got=$("$NLMLOCK" --port "$H_PORT_px3" --fh "${FH3:-00}" --caller client-a --svid 1 --oh 61 lock)
[ "$got" = "rpc accepted 1" ] || h_fail "a filer without NLM: '$got', not PROG_UNAVAIL"
kill -0 "$H_PID_px3" || h_fail "cachefsd died on a filer without NLM"
h_pass
