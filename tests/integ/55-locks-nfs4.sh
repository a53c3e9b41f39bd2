#!/bin/bash
# 55-locks-nfs4: NLM v4 through cachefsd in front of a filer that speaks
# NFSv4.0 only (runs no NLM): the locks room holds NLM's locks as NFSv4.0
# byte-range locks at the filer (cachefsd/upstream/nfs4lock.c: OPEN by the
# name the proxy learned + LOCK / LOCKT / LOCKU, RELEASE_LOCKOWNER, CLOSE).
# nfs-ganesha exports the directory NFSv4.0-only at /up4 (cachefsd's
# upstream) and NFSv3-only at /up. Lock owners on the client side
# (tests/tools/nlmlock.c: caller_name, owner handle, svid) and a direct
# NFSv4.0 client of the filer (tests/tools/nfs4probe, lock/lockt/unlock):
#   - an exclusive lock through the proxy excludes another owner (DENIED;
#     TEST names the holder's svid and range); the same owner again is
#     granted; another byte range is free; after UNLOCK the other owner
#     gets it;
#   - the lock is real at the filer: the direct v4 client's LOCKT sees it
#     while it is held and not after the UNLOCK;
#   - shared locks coexist through the proxy, exclude an exclusive one, and
#     the direct client's LOCKT sees a read lock there;
#   - a lock the direct v4 client holds makes the proxy's client's LOCK
#     DENIED (TEST: the holder's range, no svid: not the proxy's);
#   - a blocking LOCK asked once is BLOCKED, and granted by the proxy's own
#     poll (lock_poll) once the direct client unlocks: the filer then holds
#     it for that owner (LOCKT denied, TEST through the proxy names it);
#   - CANCEL of a blocked lock: the proxy stops trying, the lock stays free;
#   - a client host that reboots (SM_NOTIFY to the proxy's NSM) loses its
#     locks at the filer, another host keeps its own;
#   - a second proxy that never looked the file up finds its name from the
#     export's root (READDIR) to OPEN it, and the two proxies see each
#     other's locks;
#   - the filer restarts (Graceless: the reclaim is refused): the locks held
#     there are gone, logged and counted; an UNLOCK of one is GRANTED, new
#     locks are the restarted filer's;
#   - a filer with a grace period restarts: the proxy reclaims its locks
#     (exclusive and shared ranges), another owner cannot take them;
#   - every owner that holds nothing more is released at the filer (the
#     owners gauge ends at 0: RELEASE_LOCKOWNER + CLOSE);
#   - the counters.
# shellcheck source=../lib/own-host.sh
. "$(dirname "$0")/../lib/own-host.sh"
own_host 55-locks-nfs4 "the proxy registers its NLM with this host's rpcbind" "$@"
# shellcheck disable=SC2154,SC2034 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

NLMLOCK=$H_BUILD/tests/nlmlock
NFSREAD=$H_BUILD/tests/nfsread
PROBE=$H_BUILD/tests/nfs4probe
for t in "$NLMLOCK" "$NFSREAD" "$PROBE"; do [ -x "$t" ] || h_fail "$t is missing (make tools)"; done

# until_ok SECONDS CMD...: CMD again every 0.1 s until it succeeds
until_ok()
{
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.1
	done
}
px_ge() { [ "$(h_stat px "$1")" -ge "$2" ] 2>/dev/null; }

H_GANESHA_V4SPLIT=1 H_GANESHA_LEASE=10 h_start_ganesha up
E=$H_EXPORT_up
P4=$H_PSEUDO4_up
printf 'lock me\n' >"$E/lockfile"

printf -v H_URL_v4 '%s' "nfs://127.0.0.1$P4?nfsport=$H_NFSPORT_up"
printf -v H_EXPORT_v4 '%s' "$P4"
# it listens on the isolated host's other address too: a client host's
# SM_NOTIFY must come from an address that is not the filer's
H_PORT_px=$(h_free_port)
P=$H_PORT_px
h_start_cachefsd px v4 --upstream-version 4 --fresh-guard 0 --lock-poll 1 \
	--listen "0.0.0.0:$P" --allow "127.0.0.0/8,10.254.0.0/24"
grep -q "over NFSv4.0" "$H_LOG_px" || h_fail "cachefsd is not over NFSv4.0: $(head -5 "$H_LOG_px")"

# the client's handle: a LOOKUP through the proxy (which teaches it the
# file's name: v4.0 OPENs by name)
FH=$("$NFSREAD" --port "$P" --export "$P4" --path lockfile --print-fh --out /dev/null 2>&1 >/dev/null |
	awk '$1=="fh"{print $2}')
[ -n "$FH" ] || h_fail "no handle for lockfile through the proxy"

A=(--port "$P" --fh "$FH" --caller client-a --svid 101 --oh 61616161 --uid 0 --gid 0)
B=(--port "$P" --fh "$FH" --caller client-b --svid 202 --oh 62626262 --uid 0 --gid 0)
C=(--port "$P" --fh "$FH" --caller client-c --svid 303 --oh 63636363 --uid 0 --gid 0)
# the filer's own NFSv4.0 client, beside the proxy
DIRECT=("$PROBE" --host 127.0.0.1 --port "$H_NFSPORT_up" --path "$P4" --timeout 60)
direct() { "${DIRECT[@]}" "$@" 2>>"$H_TMP/direct.err"; }

# --- conflicts through the proxy, seen at the filer ---------------------------
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 100 lock) || h_fail "A's exclusive lock: $got $(tail -3 "$H_LOG_px")"
[ "$got" = GRANTED ] || h_fail "A's exclusive lock answered '$got'"
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 100 lock)
[ "$got" = DENIED ] || h_fail "B locked a range A holds exclusively: '$got'"
got=$("$NLMLOCK" "${B[@]}" --shared --offset 50 --len 10 test)
[ "$got" = "DENIED svid=101 exclusive=1 offset=0 len=100" ] ||
	h_fail "B's TEST did not name A's lock: '$got'"
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 100 lock)
[ "$got" = GRANTED ] || h_fail "A's own lock again: '$got'"
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 100 test)
[ "$got" = GRANTED ] || h_fail "A's TEST of its own lock: '$got'"
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 200 --len 50 lock)
[ "$got" = GRANTED ] || h_fail "B's lock of another range: '$got'"
got=$("$NLMLOCK" "${B[@]}" --offset 200 --len 50 unlock)
[ "$got" = GRANTED ] || h_fail "B's unlock: '$got'"
# the lock is the filer's: another NFSv4 client of it sees it
got=$(direct lockt lockfile write 10 5) || h_fail "direct LOCKT: $got $(cat "$H_TMP/direct.err")"
[ "$got" = "lockt lockfile denied offset 0 len 100 exclusive 1" ] ||
	h_fail "the filer does not hold A's lock for a direct v4 client: '$got'"
got=$(direct lockt lockfile write 100 5)
[ "$got" = "lockt lockfile granted" ] || h_fail "direct LOCKT past A's range: '$got'"
got=$("$NLMLOCK" "${A[@]}" --offset 0 --len 100 unlock)
[ "$got" = GRANTED ] || h_fail "A's unlock: '$got'"
got=$(direct lockt lockfile write 10 5)
[ "$got" = "lockt lockfile granted" ] || h_fail "A's lock stayed at the filer after its UNLOCK: '$got'"
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 100 lock)
[ "$got" = GRANTED ] || h_fail "B after A's unlock: '$got'"
got=$("$NLMLOCK" "${B[@]}" --offset 0 --len 100 unlock)
[ "$got" = GRANTED ] || h_fail "B's unlock: '$got'"
h_log "ok: exclusive locks through the proxy conflict, and are the filer's"

# --- shared locks ---------------------------------------------------------------
got=$("$NLMLOCK" "${A[@]}" --shared --offset 0 --len 0 lock)
[ "$got" = GRANTED ] || h_fail "A's shared lock: '$got'"
got=$("$NLMLOCK" "${B[@]}" --shared --offset 0 --len 0 lock)
[ "$got" = GRANTED ] || h_fail "B's shared lock beside A's: '$got'"
got=$("$NLMLOCK" "${C[@]}" --exclusive --offset 10 --len 1 lock)
[ "$got" = DENIED ] || h_fail "an exclusive lock over two shared ones: '$got'"
got=$(direct lockt lockfile read 0 10)
[ "$got" = "lockt lockfile granted" ] || h_fail "a direct read LOCKT beside shared locks: '$got'"
got=$(direct lockt lockfile write 0 10)
[ "${got% exclusive 0}" != "$got" ] && [ "${got#lockt lockfile denied offset 0 len 0}" != "$got" ] ||
	h_fail "a direct write LOCKT over the shared locks: '$got'"
"$NLMLOCK" "${A[@]}" --offset 0 --len 0 unlock >/dev/null
"$NLMLOCK" "${B[@]}" --offset 0 --len 0 unlock >/dev/null
got=$(direct lockt lockfile write 0 0)
[ "$got" = "lockt lockfile granted" ] || h_fail "shared locks stayed after their unlocks: '$got'"
h_log "ok: shared locks coexist and are seen at the filer"

# --- a lock held directly at the filer by another v4 client -------------------
rm -f "$H_TMP/release"
"${DIRECT[@]}" lock lockfile write 0 10 waitfile "$H_TMP/release" unlock lockfile 0 10 \
	>"$H_TMP/hold.out" 2>"$H_TMP/hold.err" &
HOLD=$!
h_track direct-hold "$HOLD"
until_ok 60 grep -q "lock lockfile granted" "$H_TMP/hold.out" ||
	h_fail "the direct client's lock: $(cat "$H_TMP/hold.out" "$H_TMP/hold.err")"
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 5 --len 10 lock)
[ "$got" = DENIED ] || h_fail "A locked over a lock of another v4 client of the filer: '$got'"
got=$("$NLMLOCK" "${A[@]}" --shared --offset 0 --len 1 test)
[ "$got" = "DENIED svid=0 exclusive=1 offset=0 len=10" ] ||
	h_fail "A's TEST of the direct client's lock: '$got'"

# a blocking LOCK asked once: BLOCKED, then the proxy's poll gets it when
# the direct client unlocks (the grant is relayed to the client host: here
# the proxy's own host, whose NLM is the proxy: a relay failure, counted)
cb0=$(h_stat px nlm_granted_callback)
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 --block --once lock)
[ "$got" = BLOCKED ] || h_fail "B's blocking LOCK: '$got'"
[ "$(h_stat px nlm_blocked_entries)" = 1 ] || h_fail "no blocked entry kept for B"
until_ok 30 px_ge nlm_polls 1 || h_fail "the proxy did not poll for B"
# a GRANTED from anyone is refused over v4 (only the proxy's poll grants)
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 granted)
[ "$got" = DENIED ] || h_fail "a GRANTED for B's blocked lock was taken: '$got'"
[ "$(h_stat px nlm_blocked_entries)" = 1 ] || h_fail "a GRANTED from a client dropped B's entry"
touch "$H_TMP/release"
h_wait_pid "$HOLD" "the direct client's hold" 60
grep -q "unlock lockfile granted" "$H_TMP/hold.out" || h_fail "the direct client's unlock: $(cat "$H_TMP/hold.out")"
until_ok 60 px_ge nlm_granted_callback $((cb0 + 1)) ||
	h_fail "the proxy's poll did not get B's lock: $(h_stats px | grep nlm_)"
[ "$(h_stat px nlm_blocked_entries)" = 0 ] || h_fail "the granted entry was kept"
got=$(direct lockt lockfile write 0 1)
[ "$got" = "lockt lockfile denied offset 0 len 10 exclusive 1" ] ||
	h_fail "the polled grant is not held at the filer: '$got'"
got=$("$NLMLOCK" "${C[@]}" --offset 0 --len 10 test)
[ "$got" = "DENIED svid=202 exclusive=1 offset=0 len=10" ] ||
	h_fail "C's TEST does not name B's polled lock: '$got'"
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "B asking again after the proxy's poll: '$got'"
"$NLMLOCK" "${B[@]}" --offset 0 --len 10 unlock >/dev/null
h_log "ok: a direct v4 lock excludes the proxy's clients; a blocked lock is granted by the poll"

# --- CANCEL: the proxy stops trying ------------------------------------------------
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "A's lock before B's cancelled wait: '$got'"
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 --block --once lock)
[ "$got" = BLOCKED ] || h_fail "B's second blocking LOCK: '$got'"
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 --block cancel)
[ "$got" = GRANTED ] || h_fail "B's CANCEL: '$got'"
[ "$(h_stat px nlm_blocked_entries)" = 0 ] || h_fail "the cancelled entry was kept"
"$NLMLOCK" "${A[@]}" --offset 0 --len 10 unlock >/dev/null
sleep 2.5 # two polls' time: nobody tries for B any more
got=$(direct lockt lockfile write 0 10)
[ "$got" = "lockt lockfile granted" ] || h_fail "a cancelled blocked lock was taken anyway: '$got'"

# --- a client host reboots: its locks go, another host's stay -----------------------
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "A's lock before its reboot: '$got'"
got=$("$NLMLOCK" "${C[@]}" --exclusive --offset 500 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "C's lock: '$got'"
# SM_NOTIFY(mon_name "client-a", state 3), from the host's other address
got=$("$H_BUILD/tests/rpcraw" udp 10.254.0.1 "$P" 100024 1 6 00000008636c69656e742d6100000003)
[ "${got%% *}" = 0 ] || h_fail "SM_NOTIFY for client-a: '$got'"
until_ok 30 grep -q "client host client-a restarted: its locks released at the filer" "$H_LOG_px" ||
	h_fail "the client host's reboot did not release its locks: $(tail -n 3 "$H_LOG_px")"
a_gone() { got=$(direct lockt lockfile write 0 10) && [ "$got" = "lockt lockfile granted" ]; }
until_ok 30 a_gone || h_fail "the rebooted A's lock stayed at the filer: '$got'"
got=$(direct lockt lockfile write 500 1)
[ "$got" = "lockt lockfile denied offset 500 len 10 exclusive 1" ] || h_fail "C's lock went with A's reboot: '$got'"
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "B could not take the rebooted A's range: '$got'"
"$NLMLOCK" "${B[@]}" --offset 0 --len 10 unlock >/dev/null
"$NLMLOCK" "${C[@]}" --offset 500 --len 10 unlock >/dev/null
# NLM FREE_ALL from the client host itself does the same
got=$("$NLMLOCK" "${C[@]}" --exclusive --offset 700 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "C's lock before FREE_ALL: '$got'"
# FREE_ALL(name "client-c", state 5): NLM v4 procedure 23
got=$("$H_BUILD/tests/rpcraw" tcp 127.0.0.1 "$P" 100021 4 23 00000008636c69656e742d6300000005)
[ "${got%% *}" = 0 ] || h_fail "FREE_ALL for client-c: '$got'"
c_gone() { got=$(direct lockt lockfile write 700 1) && [ "$got" = "lockt lockfile granted" ]; }
until_ok 30 c_gone || h_fail "FREE_ALL left C's lock at the filer: '$got'"
h_log "ok: a rebooted host's locks (SM_NOTIFY, FREE_ALL) released at the filer, another's kept"

# --- a second proxy that never looked the file up (no name to OPEN by: it
# finds it from the export's root, READDIR breadth first: v4.0 has no way
# from a file to its directory), and sees the first proxy's locks as the
# filer's -----------------------------------------------------------------------------
mkdir -p "$E/sub"
for i in $(seq 1 300); do : >"$E/sub/other-$i"; done
printf 'deep\n' >"$E/sub/deep-lockfile"
FH2=$("$NFSREAD" --port "$P" --export "$P4" --path sub/deep-lockfile --print-fh --out /dev/null 2>&1 >/dev/null |
	awk '$1=="fh"{print $2}')
[ -n "$FH2" ] || h_fail "no handle for sub/deep-lockfile through the proxy"
h_start_cachefsd px2 v4 --upstream-version 4 --register no
A2=(--port "$H_PORT_px2" --fh "$FH2" --caller client-a --svid 101 --oh 61616161 --uid 0 --gid 0)
got=$("$NLMLOCK" "${A2[@]}" --exclusive --offset 0 --len 0 lock)
[ "$got" = GRANTED ] || h_fail "a lock through a proxy that never looked the file up: '$got' $(grep -i nlm "$H_LOG_px2" | tail -3)"
got=$(direct lockt sub/deep-lockfile read 0 1)
[ "$got" = "lockt sub/deep-lockfile denied offset 0 len 0 exclusive 1" ] ||
	h_fail "the second proxy's lock is not at the filer: '$got'"
B1=(--port "$P" --fh "$FH2" --caller client-b --svid 202 --oh 62626262 --uid 0 --gid 0)
got=$("$NLMLOCK" "${B1[@]}" --shared --offset 5 --len 1 test)
[ "$got" = "DENIED svid=0 exclusive=1 offset=0 len=0" ] ||
	h_fail "the first proxy does not see the second one's lock: '$got'"
got=$("$NLMLOCK" "${A2[@]}" --offset 0 --len 0 unlock)
[ "$got" = GRANTED ] || h_fail "the second proxy's unlock: '$got'"
got=$("$NLMLOCK" "${B1[@]}" --exclusive --offset 0 --len 0 lock)
[ "$got" = GRANTED ] || h_fail "B through the first proxy after the second one's unlock: '$got'"
"$NLMLOCK" "${B1[@]}" --offset 0 --len 0 unlock >/dev/null
grep -q "the name of a file to lock found from the export's root after [0-9]* READDIR pages: deep-lockfile" "$H_LOG_px2" ||
	h_fail "the second proxy did not look the name up: $(grep -i "nlm" "$H_LOG_px2" | tail -3)"
h_log "ok: a file's name found from the export's root; two proxies see each other's locks"

# --- the filer restarts (this one without a grace period: Graceless): the
# proxy's reclaim is refused (NO_GRACE), the locks it held there are gone;
# the proxy says so (log, counter),
# NLM has no message to tell the client; the owner's UNLOCK is answered
# GRANTED, its next LOCK takes the lock anew ------------------------------------------
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "A's lock before the filer's restart: '$got'"
h_stop_ganesha up
h_restart_ganesha up
got=$("$NLMLOCK" "${B[@]}" --exclusive --offset 0 --len 10 --timeout 120 lock)
[ "$got" = GRANTED ] || h_fail "B after the filer restarted without A's lock: '$got'"
got=$("$NLMLOCK" "${A[@]}" --exclusive --offset 0 --len 10 test)
[ "$got" = "DENIED svid=202 exclusive=1 offset=0 len=10" ] || h_fail "A's TEST after the restart: '$got'"
got=$("$NLMLOCK" "${A[@]}" --offset 0 --len 10 unlock)
[ "$got" = GRANTED ] || h_fail "A's unlock of a lock the filer lost: '$got'"
grep -q "the locks of client-a (svid 101) could not be reclaimed (OPEN(CLAIM_PREVIOUS): NFS4ERR_NO_GRACE)" "$H_LOG_px" ||
	h_fail "the lost lock state was not logged: $(grep -i "nlm\|nfs4" "$H_LOG_px" | tail -5)"
until_ok 10 px_ge nlm_v4_state_lost 1 || h_fail "nlm_v4_state_lost: $(h_stat px nlm_v4_state_lost)"
got=$(direct lockt lockfile write 0 1)
[ "$got" = "lockt lockfile denied offset 0 len 10 exclusive 1" ] || h_fail "B's lock after the restart is not the filer's: '$got'"
"$NLMLOCK" "${B[@]}" --offset 0 --len 10 unlock >/dev/null
h_log "ok: the filer's restart loses the locks it held (logged, counted); new locks are its"

# --- nothing left behind, counters ---------------------------------------------------
owners() { [ "$(h_stat px nlm_v4_owners)" = 0 ]; }
until_ok 30 owners || h_fail "lock owners stayed open at the filer: $(h_stat px nlm_v4_owners)"
[ "$(h_stat px nlm_granted)" -ge 10 ] || h_fail "nlm_granted: $(h_stat px nlm_granted)"
[ "$(h_stat px nlm_denied)" -ge 3 ] || h_fail "nlm_denied: $(h_stat px nlm_denied)"
[ "$(h_stat px nlm_blocked)" -ge 2 ] || h_fail "nlm_blocked: $(h_stat px nlm_blocked)"
[ "$(h_stat px nlm_upstream_errors)" = 0 ] || h_fail "nlm_upstream_errors: $(h_stat px nlm_upstream_errors)"
kill -0 "$H_PID_px" || h_fail "cachefsd died"

# --- a filer with a grace period restarts: the proxy reclaims the locks it
# held (OPEN CLAIM_PREVIOUS, LOCK reclaim), and nobody else gets them ------------
h_stop_cachefsd px2
h_stop_cachefsd px
h_stop_ganesha up
H_GANESHA_V4SPLIT=1 H_GANESHA_LEASE=10 H_GANESHA_GRACE=15 h_start_ganesha gr
GR_STARTED=$(date +%s)
printf 'reclaim me\n' >"$H_EXPORT_gr/rlockfile"
printf -v H_URL_v4g '%s' "nfs://127.0.0.1$H_PSEUDO4_gr?nfsport=$H_NFSPORT_gr"
printf -v H_EXPORT_v4g '%s' "$H_PSEUDO4_gr"
h_start_cachefsd px3 v4g --upstream-version 4 --fresh-guard 0 --lock-poll 1 --register no
P3=$H_PORT_px3
FH3=$("$NFSREAD" --port "$P3" --export "$H_PSEUDO4_gr" --path rlockfile --print-fh --out /dev/null 2>&1 >/dev/null |
	awk '$1=="fh"{print $2}')
[ -n "$FH3" ] || h_fail "no handle for rlockfile through the proxy"
GDIRECT=("$PROBE" --host 127.0.0.1 --port "$H_NFSPORT_gr" --path "$H_PSEUDO4_gr" --timeout 120)
# the start's own grace period passes (LOCKT waits it out)
got=$("${GDIRECT[@]}" lockt rlockfile write 0 0 2>>"$H_TMP/direct.err")
[ "$got" = "lockt rlockfile granted" ] || h_fail "rlockfile is locked at the start: '$got'"
A3=(--port "$P3" --fh "$FH3" --caller client-a --svid 101 --oh 61616161 --uid 0 --gid 0 --timeout 120)
B3=(--port "$P3" --fh "$FH3" --caller client-b --svid 202 --oh 62626262 --uid 0 --gid 0 --timeout 120)
got=$("$NLMLOCK" "${A3[@]}" --exclusive --offset 0 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "A's exclusive lock before the graceful restart: '$got'"
got=$("$NLMLOCK" "${A3[@]}" --shared --offset 100 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "A's shared lock before the graceful restart: '$got'"
# ganesha's client IDs carry its start time in seconds: restarted within the
# same second it cannot tell an old one (answers EXPIRED, not STALE_CLIENTID)
until [ "$(date +%s)" -gt "$GR_STARTED" ]; do sleep 0.1; done
h_stop_ganesha gr
h_restart_ganesha gr
until_ok 60 grep -q "the 2 lock range(s) of client-a (svid 101) reclaimed in its grace period" "$H_LOG_px3" ||
	h_fail "the proxy did not reclaim A's locks: $(grep -i "nlm\|nfs4" "$H_LOG_px3" | tail -5)"
got=$("$NLMLOCK" "${B3[@]}" --exclusive --offset 5 --len 1 lock)
[ "$got" = DENIED ] || h_fail "B took A's reclaimed exclusive range: '$got'"
got=$("$NLMLOCK" "${B3[@]}" --shared --offset 105 --len 1 lock)
[ "$got" = GRANTED ] || h_fail "B's shared lock beside A's reclaimed shared one: '$got'"
got=$("${GDIRECT[@]}" lockt rlockfile write 105 1 2>>"$H_TMP/direct.err")
[ "${got#lockt rlockfile denied offset 10}" != "$got" ] || h_fail "the filer does not hold the reclaimed shared range: '$got'"
got=$("${GDIRECT[@]}" lockt rlockfile write 0 1 2>>"$H_TMP/direct.err")
[ "$got" = "lockt rlockfile denied offset 0 len 10 exclusive 1" ] || h_fail "the filer does not hold the reclaimed exclusive range: '$got'"
got=$("$NLMLOCK" "${A3[@]}" --offset 0 --len 0 unlock)
[ "$got" = GRANTED ] || h_fail "A's unlock after the reclaim: '$got'"
got=$("$NLMLOCK" "${B3[@]}" --exclusive --offset 0 --len 10 lock)
[ "$got" = GRANTED ] || h_fail "B after A's unlock: '$got'"
"$NLMLOCK" "${B3[@]}" --offset 0 --len 0 unlock >/dev/null
[ "$(h_stat px3 nlm_v4_state_lost)" = 0 ] || h_fail "locks were lost in a graceful restart: $(h_stat px3 nlm_v4_state_lost)"
h_log "ok: a graceful restart of the filer: the proxy reclaimed its locks"
h_pass
