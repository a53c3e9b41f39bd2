#!/bin/bash
# 57-kernel-locks-nfs4: POSIX and flock locks of two Linux kernel clients
# (two qemu guests, tests/guest/run.sh --plain: stock mount.nfs with vers=3,
# rpcbind and rpc.statd, no nolock) through one cachefsd in front of a filer
# that speaks NFSv4.0 only (nfs-ganesha, NFSv4.0-only export /up4, no NLM):
# the proxy holds their NLM locks as NFSv4.0 locks at the filer
# (cachefsd/upstream/nfs4lock.c). The guests are real hosts on a bridge in
# the test's network namespace (run.sh --net tap), so the proxy can call
# them back:
#   - an exclusive fcntl lock of guest A excludes guest B (F_SETLK: busy);
#     a flock of A excludes B's flock; another byte range is free for B;
#     a direct NFSv4.0 client of the filer sees A's lock (LOCKT);
#   - B's blocking F_SETLKW is granted once A releases: the proxy's poll
#     (lock_poll 1 s; v4.0 has no lock callback) gets it at the filer and
#     GRANTED goes to B's lockd (nlm_relayed), before the 30 s a kernel
#     client waits to poll;
#   - the filer restarts with a grace period: the proxy reclaims B's lock
#     there (OPEN CLAIM_PREVIOUS, LOCK reclaim), and A's F_SETLK afterwards
#     is still refused (a filer that lost the lock would grant it).
# shellcheck source=../lib/own-host.sh
. "$(dirname "$0")/../lib/own-host.sh"
own_host 57-kernel-locks-nfs4 "namespaces: the guests' bridge, this host's rpcbind" "$@"
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
# shellcheck source=../guest/common.sh
. "$H_ROOT/tests/guest/common.sh"
h_init

LOCKER=$H_BUILD/tests/guest-locker
[ -x "$LOCKER" ] || h_fail "$LOCKER is missing (make tools)"
command -v qemu-system-x86_64 >/dev/null || h_fail "qemu-system-x86_64 missing (make test installs it)"

PROBE=$H_BUILD/tests/nfs4probe
[ -x "$PROBE" ] || h_fail "$PROBE is missing (make tools)"

# the filer's grace period after a restart, s (its first start has no
# client to wait for: it lifts its grace at once)
GRACE=10
H_GANESHA_V4SPLIT=1 H_GANESHA_LEASE=$GRACE H_GANESHA_GRACE=$GRACE h_start_ganesha up
E=$H_EXPORT_up
P4=$H_PSEUDO4_up
printf 'start\n' >"$E/ctl"
: >"$E/lk"
: >"$E/lk2"
# the files the guests report in, made empty beforehand: a guest that
# looked for one before the other guest made it would keep "no such file"
# (a negative dentry) until its directory attributes expire (acdirmin,
# 30 s), and so wait that long for a report already written
for f in a.state a.flock a.probe b.state b.lock; do : >"$E/$f"; done
chmod 666 "$E/ctl" "$E/lk" "$E/lk2" "$E"/[ab].*
chmod 777 "$E"
DIRECT=("$PROBE" --host 127.0.0.1 --port "$H_NFSPORT_up" --path "$P4" --timeout 60)

h_start_rpcbind
guest_bridge br0 tap0 tap1 || h_fail "cannot make the guests' bridge"
h_atexit "ip link del br0"
H_PORT_px=$(h_free_port)
# ganesha registered NFS and MOUNT with this host's rpcbind, at ports only
# 127.0.0.1 reaches: the guests' mount.nfs asks rpcbind for NFS whatever
# its port= says, so the registrations are the proxy's
h_rpcbind_unset "100003 3" "100003 4" "100005 1" "100005 3"
printf -v H_URL_v4 '%s' "nfs://127.0.0.1$P4?nfsport=$H_NFSPORT_up"
printf -v H_EXPORT_v4 '%s' "$P4"
h_start_cachefsd px v4 --upstream-version 4 --lock-poll 1 --listen "0.0.0.0:$H_PORT_px" \
	--register yes --nsm-name 10.0.2.2 --allow "127.0.0.0/8,10.0.2.0/24"
P=$H_PORT_px
rpcinfo -p 127.0.0.1 | grep -q "100021.*tcp.*$P" || h_fail "the proxy's NLM is not registered"

# the two guests (tests/lib/kernlocks.sh)
# shellcheck source=../lib/kernlocks.sh
. "$H_ROOT/tests/lib/kernlocks.sh"
kl_start_guests "$P4"

wait_file "$E/b.state" waiting 240 || h_fail "the guests did not get to B's blocking lock: $(show)"
grep -q "^B1: LOCK: busy" "$H_TMP/b.out" || h_fail "B's F_SETLK over A's exclusive range was not refused: $(show)"
grep -q "^B2: LOCK: busy" "$H_TMP/b.out" || h_fail "B's flock beside A's was not refused: $(show)"
grep -q "^B3: LOCK: granted" "$H_TMP/b.out" || h_fail "B could not lock another byte range: $(show)"
got=$("${DIRECT[@]}" lockt lk write 50 1 2>&1)
[ "$got" = "lockt lk denied offset 0 len 100 exclusive 1" ] || h_fail "a direct v4 client does not see A's lock at the filer: '$got'"
h_pass "two kernel clients through the proxy: A's fcntl and flock locks exclude B, another range is free; the filer holds A's lock"

# B's F_SETLKW is BLOCKED now: the proxy keeps it and tries the filer for
# it every second (nlm_blocked_entries)
blocked() { [ "$(h_stat px nlm_blocked_entries)" -ge 1 ]; }
h_wait_until 60 blocked || h_fail "B's blocking lock did not block at the filer: $(show)"
relayed0=$(h_stat px nlm_relayed)
t0=$(date +%s)
printf 'release1\n' >"$E/ctl"
wait_file "$E/b.lock" "LOCK: granted" 60 || h_fail "B's blocking lock was not granted after A released: $(show)"
dt=$(($(date +%s) - t0))
[ "$(h_stat px nlm_relayed)" -gt "$relayed0" ] || h_fail "the proxy's grant was not relayed to B (nlm_relayed): $(show)"
[ "$dt" -lt 25 ] || h_fail "B's blocked lock took $dt s: the client's poll, not the relayed grant"
h_pass "B's blocking F_SETLKW granted ${dt}s after A released, by the proxy's poll relayed to B's lockd"

# the filer restarts with a grace period: the proxy reclaims B's lock there
h_stop_ganesha up
h_restart_ganesha up
reclaimed() { grep -q "lock range(s) of guest-16 (svid [0-9]*) reclaimed in its grace period" "$H_LOG_px"; }
h_wait_until 60 reclaimed || h_fail "the proxy did not reclaim B's lock: $(show)"
got=$("${DIRECT[@]}" lockt lk write 50 1 2>&1)
[ "$got" = "lockt lk denied offset 0 len 100 exclusive 1" ] || h_fail "the filer does not hold B's reclaimed lock: '$got'"
printf 'probe\n' >"$E/ctl"
wait_file "$E/a.probe" "LOCK:" 120 || h_fail "A's probe after the filer's restart did not answer: $(show)"
grep -q "LOCK: busy" "$E/a.probe" ||
	h_fail "after the filer restarted, A got B's range: B's lock was not reclaimed ($(cat "$E/a.probe"))"
[ "$(h_stat px nlm_v4_state_lost)" = 0 ] || h_fail "locks were lost in the filer's restart: $(show)"
h_pass "the filer restarted: the proxy reclaimed B's lock, A is still refused"

printf 'release2\n' >"$E/ctl"
for g in a b; do
	pv=GPID_$g
	wait "${!pv}" || h_fail "guest $g: exit $?: $(cat "$H_TMP/$g.out")"
done
h_pass "kernel-client locks through cachefsd"
