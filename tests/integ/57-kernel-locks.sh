#!/bin/bash
# 57-kernel-locks: POSIX and flock locks of two Linux kernel clients (two
# qemu guests, tests/guest/run.sh --plain: stock mount.nfs with vers=3 and
# nothing else, rpcbind and rpc.statd, no nolock) through one cachefsd;
# the locks are the filer's (nfs-ganesha with NLM on a host of its own,
# h_start_filer_host). The guests are real hosts on a bridge in the test's
# network namespace (run.sh --net tap), so the proxy can call them back:
#   - an exclusive fcntl lock of guest A excludes guest B (F_SETLK: busy);
#     a flock of A excludes B's flock (the client maps flock to NLM);
#     another byte range is free for B;
#   - B's blocking F_SETLKW is granted once A releases, through the
#     filer's GRANTED callback relayed by the proxy to B's lockd (counted:
#     nlm_relayed), before the 30 s a kernel client waits to poll;
#   - the filer restarts (its statd's sm-notify tells the proxy, as at a
#     boot): the proxy relays SM_NOTIFY to the guests' statd, B's lockd
#     reclaims its lock through the proxy in the filer's grace period, and
#     A's F_SETLK afterwards is still refused (a filer that lost the lock
#     would grant it).
# Its own "host" (tests/lib/isolate.sh: network, mount and pid namespaces,
# a /run of its own): its rpcbind, the registrations it makes, the devices
# and the daemons it starts go with it, whatever the suite runs in.
# shellcheck source=../lib/own-host.sh
. "$(dirname "$0")/../lib/own-host.sh"
own_host 57-kernel-locks "namespaces: the guests' bridge, the filer host, this host's rpcbind" "$@"
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
# shellcheck source=../guest/common.sh
. "$H_ROOT/tests/guest/common.sh"
h_init

LOCKER=$H_BUILD/tests/guest-locker
[ -x "$LOCKER" ] || h_fail "$LOCKER is missing (make tools)"
command -v qemu-system-x86_64 >/dev/null || h_fail "qemu-system-x86_64 missing (make test installs it)"

# the filer's grace period, s: B's reclaim comes within a second or two of
# the filer's start (relayed SM_NOTIFY), and is waited for
GRACE=10
# graceless at its first start: the guests' first locks, when they boot
# fast, would otherwise come in its grace period and be refused, and their
# lockd waits 5 s before it asks again; its restart below has GRACE
h_start_filer_host fl guest-15 guest-16
E=$H_EXPORT_fl
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

h_start_rpcbind
guest_bridge br0 tap0 tap1 || h_fail "cannot make the guests' bridge"
h_atexit "ip link del br0"
H_PORT_px=$(h_free_port)
h_start_cachefsd px fl --listen "0.0.0.0:$H_PORT_px" --register yes --nsm-name 10.0.2.2 \
	--allow "127.0.0.0/8,10.0.2.0/24,$H_HOSTADDR_fl/16"
P=$H_PORT_px
rpcinfo -p 127.0.0.1 | grep -q "100021.*tcp.*$P" || h_fail "the proxy's NLM is not registered"

# the two guests (tests/lib/kernlocks.sh)
# shellcheck source=../lib/kernlocks.sh
. "$H_ROOT/tests/lib/kernlocks.sh"
kl_start_guests "$E"

wait_file "$E/b.state" waiting 240 || h_fail "the guests did not get to B's blocking lock: $(show)"
grep -q "^B1: LOCK: busy" "$H_TMP/b.out" || h_fail "B's F_SETLK over A's exclusive range was not refused: $(show)"
grep -q "^B2: LOCK: busy" "$H_TMP/b.out" || h_fail "B's flock beside A's was not refused: $(show)"
grep -q "^B3: LOCK: granted" "$H_TMP/b.out" || h_fail "B could not lock another byte range: $(show)"
h_pass "two kernel clients through the proxy: A's fcntl and flock locks exclude B, another range is free"

# B's F_SETLKW is BLOCKED at the filer now: the proxy keeps it to route
# the filer's GRANTED (nlm_blocked_entries)
blocked() { [ "$(h_stat px nlm_blocked_entries)" -ge 1 ]; }
h_wait_until 60 blocked || h_fail "B's blocking lock did not block at the filer: $(show)"
relayed0=$(h_stat px nlm_relayed)
t0=$(date +%s)
printf 'release1\n' >"$E/ctl"
wait_file "$E/b.lock" "LOCK: granted" 60 || h_fail "B's blocking lock was not granted after A released: $(show)"
dt=$(($(date +%s) - t0))
[ "$(h_stat px nlm_relayed)" -gt "$relayed0" ] || h_fail "the filer's GRANTED was not relayed to B (nlm_relayed): $(show)"
[ "$dt" -lt 25 ] || h_fail "B's blocked lock took $dt s: the client's poll, not the relayed callback"
h_pass "B's blocking F_SETLKW granted ${dt}s after A released, by the filer's callback relayed to B's lockd"

# the filer restarts; its statd tells the proxy, the proxy tells the guests
n0=$(h_stat px nsm_relayed)
g0=$(h_stat px nlm_granted)
FLOG=$H_TMP/fl-filer/ganesha.log
ungraced() { grep -c "NFS Server Now NOT IN GRACE" "$FLOG"; }
u0=$(ungraced)
[ -n "$(ls "$H_TMP/fl-filer/statd/sm")" ] || h_fail "the filer's statd monitors no client host"
h_filer_host_stop fl
sed -i "s/Graceless = true;/Grace_Period = $GRACE; Lease_Lifetime = $GRACE;/" "$H_TMP/fl-filer/ganesha.conf"
grep -q "Grace_Period = $GRACE;" "$H_TMP/fl-filer/ganesha.conf" || h_fail "cannot give the filer a grace period"
tr=$EPOCHREALTIME
h_filer_host_start fl notify
relayed() { [ "$(h_stat px nsm_relayed)" -gt "$n0" ]; }
h_wait_until 20 relayed
[ "$(h_stat px nsm_notify_filer)" -ge 1 ] ||
	h_fail "the filer's SM_NOTIFY did not reach the proxy: $(show) $(tail -n 3 "$H_TMP/fl-filer/sm-notify.log")"
[ "$(h_stat px nsm_relayed)" -gt "$n0" ] || h_fail "the proxy did not relay the filer's reboot to the guests: $(show)"
# B's lockd reclaims through the proxy (a LOCK the filer grants in its
# grace period: nlm_granted); the check that it holds is A's probe below
reclaimed() { [ "$(h_stat px nlm_granted)" -gt "$g0" ]; }
h_wait_until "$GRACE" reclaimed || h_fail "B's lockd reclaimed nothing through the proxy in the filer's grace period: $(show)"
h_log "B reclaimed through the proxy $(awk -v a="$tr" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b - a}') s after the filer's stop"
# after the grace period (ganesha says when it lifts it: a LOCK in grace is
# refused, and the guest's lockd then waits 5 s before it asks again), A
# tries B's range: refused only if B reclaimed it
lifted() { [ "$(ungraced)" -gt "$u0" ]; }
h_wait_until $((GRACE + 60)) lifted || h_fail "the filer did not lift its grace period: $(tail -n 5 "$FLOG")"
printf 'probe\n' >"$E/ctl"
wait_file "$E/a.probe" "LOCK:" 120 || h_fail "A's probe after the filer's restart did not answer: $(show)"
grep -q "LOCK: busy" "$E/a.probe" ||
	h_fail "after the filer restarted, A got B's range: B's lock was not reclaimed ($(cat "$E/a.probe"))"
h_pass "the filer restarted: SM_NOTIFY relayed by the proxy, B reclaimed its lock, A is still refused"

printf 'release2\n' >"$E/ctl"
for g in a b; do
	pv=GPID_$g
	wait "${!pv}" || h_fail "guest $g: exit $?: $(cat "$H_TMP/$g.out")"
done
h_pass "kernel-client locks through cachefsd"
