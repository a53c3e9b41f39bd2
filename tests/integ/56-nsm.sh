#!/bin/bash
# NSM with the real nfs-common programs (rpc.statd, sm-notify), each "host"
# in its own network namespace with its own rpcbind:
#  (a) a client host reboots: its sm-notify reaches cachefsd over UDP (after
#      a GETPORT at the proxy host's rpcbind); cachefsd logs and counts it
#      and forgets the host;
#  (b) the filer (nfs-ganesha on its own host) reboots: its sm-notify,
#      from the upstream's address under a name that is not the upstream
#      URL's, is relayed to a remembered client host, whose rpc.statd logs
#      it under the proxy's name (nsm_name);
#  (c) cachefsd restarts: it tells the remembered client hosts, with a new
#      (odd) state number;
#  and bad NSM input over UDP: GARBAGE_ARGS, PROC_UNAVAIL, NFS not served
#  over UDP (PROG_UNAVAIL), SM_NOTIFY from an unprivileged port ignored.
# Remembered hosts are seeded as <cache_dir>/nsm/sm/NAME ("ADDR\n"), the
# format include/nsm.h documents (granting locks is the NLM room's part).
# Its own "host" (tests/lib/isolate.sh: network, mount and pid namespaces,
# a /run of its own): its rpcbind, the registrations it makes, the devices
# and the daemons it starts go with it, whatever the suite runs in.
# shellcheck source=../lib/own-host.sh
. "$(dirname "$0")/../lib/own-host.sh"
own_host 56-nsm "namespaces: client and filer hosts of their own, the proxy registers with this host's rpcbind" "$@"
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
command -v ip >/dev/null || h_fail "ip (iproute2) missing"
[ -x "$H_BUILD/tests/rpcraw" ] || h_fail "$H_BUILD/tests/rpcraw not built (make tools)"
NC=$("$H_ROOT/tests/lib/debs.sh" root "$H_ROOT/build/debs" nfs-common) ||
	h_fail "nfs-common is not fetched: run tests/lib/debs.sh fetch build/debs nfs-common (make test does)"
STATD=$NC/sbin/rpc.statd
SMNOTIFY=$NC/sbin/sm-notify
{ [ -x "$STATD" ] && [ -x "$SMNOTIFY" ]; } || h_fail "no rpc.statd / sm-notify in $NC"

h_start_rpcbind # the proxy host's: sm-notify asks it for NSM's port
h_netns cl     # a client host: rpcbind + rpc.statd
h_netns fl     # the filer's host: rpcbind + nfs-ganesha

# rpcraw (tests/tools/rpcraw.c): one raw call over UDP or TCP, printing
# its accept_stat and result bytes
rpc() { "$H_BUILD/tests/rpcraw" "$@"; }

# nshost NS CMD...: CMD in NS ("-": this one) with a private /run (its
# rpcbind's socket) and, when $H_TMP/hosts.NS exists, that as /etc/hosts
# (sm-notify binds to the address of its -v name)
nshost() {
	local ns=$1 hosts=/etc/hosts
	shift
	[ -e "$H_TMP/hosts.$ns" ] && hosts=$H_TMP/hosts.$ns
	local run=(unshare --mount --propagation private sh -c \
		'mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind && mount --bind "$0" /etc/hosts && exec "$@"' \
		"$hosts" "$@")
	if [ "$ns" = - ]; then "${run[@]}"; else ip netns exec "$ns" "${run[@]}"; fi
}
# nsdaemon NS NAME LOG CMD...: on host NS, its rpcbind, then CMD in the
# foreground (output to LOG); both tracked (NAME, NAME-rpcbind)
nsdaemon() {
	local ns=$1 name=$2 log=$3 i
	shift 3
	nshost "$ns" sh -c 'rpcbind -f -w & echo $! >"$0"
		for i in $(seq 50); do ss -Hlun "sport = :111" | grep -q . && break; sleep 0.1; done
		exec "$@"' "$H_TMP/$name-rpcbind.pid" "$@" >>"$log" 2>&1 &
	h_track "$name" $!
	for ((i = 0; i < 100; i++)); do
		[ -s "$H_TMP/$name-rpcbind.pid" ] && break
		sleep 0.1
	done
	h_track "$name-rpcbind" "$(cat "$H_TMP/$name-rpcbind.pid")"
}
printf '127.0.0.1 localhost\n%s buildhost1\n' "$H_NSADDR_cl" >"$H_TMP/hosts.$H_NS_cl"
printf '127.0.0.1 localhost\n%s filer1\n' "$H_NSADDR_fl" >"$H_TMP/hosts.$H_NS_fl"

# the filer: nfs-ganesha on its own host, with its own rpcbind (the
# upstream variables as h_start_ganesha sets them)
FLX=$H_TMP/fl-export
mkdir -p "$FLX" "$H_TMP/fl-recov"
FLNFS=$(h_free_port)
FLMNT=$(h_free_port)
cat >"$H_TMP/fl-ganesha.conf" <<CONF
NFS_CORE_PARAM {
	NFS_Port = $FLNFS;
	MNT_Port = $FLMNT;
	Bind_addr = $H_NSADDR_fl;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Protocols = 3, 4;
}
NFSV4 { Graceless = true; RecoveryRoot = "$H_TMP/fl-recov"; }
EXPORT {
	Export_Id = 1;
	Path = $FLX;
	Pseudo = /fl;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = 3, 4;
	Transports = TCP;
	SecType = sys;
	FSAL { Name = VFS; }
}
CONF
nsdaemon "$H_NS_fl" ganesha-fl "$H_TMP/fl-ganesha.log" ganesha.nfsd -F -f "$H_TMP/fl-ganesha.conf" \
	-L "$H_TMP/fl-ganesha.log" -p "$H_TMP/fl-ganesha.pid"
H_EXPORT_fl=$FLX
H_URL_fl="nfs://$H_NSADDR_fl$FLX?nfsport=$FLNFS&mountport=$FLMNT"
echo hello >"$FLX/hello"
for ((i = 0; i < 150; i++)); do
	nfs-ls "$H_URL_fl" >/dev/null 2>&1 && break
	sleep 0.2
done
nfs-ls "$H_URL_fl" >/dev/null 2>&1 ||
	h_fail "the filer's nfs-ganesha does not serve: $(tail -n 5 "$H_TMP/fl-ganesha.log")"

# the client host: rpcbind, then rpc.statd (foreground, verbose, own state dir)
mkdir -p "$H_TMP/cl-statd/sm" "$H_TMP/cl-statd/sm.bak"
nsdaemon "$H_NS_cl" cl-statd "$H_TMP/cl-statd.log" "$STATD" -F -d --no-notify -P "$H_TMP/cl-statd"
for ((i = 0; i < 100; i++)); do
	ip netns exec "$H_NS_cl" rpcinfo -p 127.0.0.1 2>/dev/null | grep -q "100024.*udp" && break
	sleep 0.1
done
ip netns exec "$H_NS_cl" rpcinfo -p 127.0.0.1 | grep -q "100024.*udp" ||
	h_fail "the client host's rpc.statd did not register: $(tail -n 5 "$H_TMP/cl-statd.log")"

H_PORT_px=$(h_free_port)
P=$H_PORT_px
PXNAME=proxy-under-test
CACHE=$H_TMP/px-cache
ALLOW="127.0.0.0/8,${H_NSADDR_cl%.*}.0/24,${H_NSADDR_fl%.*}.0/24"
start_px() {
	h_start_cachefsd px fl --listen "0.0.0.0:$P" --allow "$ALLOW" --nsm-name "$PXNAME"
	for ((i = 0; i < 50; i++)); do
		ss -Hlun "sport = :$P" | grep -q . && break
		sleep 0.1
	done
	ss -Hlun "sport = :$P" | grep -q . || h_fail "cachefsd does not serve UDP on $P"
}
mkdir -p "$CACHE"
start_px
st=$(cat "$CACHE/nsm/state")
[ $((st % 2)) = 1 ] || h_fail "the state number is not odd while up: $st"
# what sm-notify asks the proxy host's rpcbind for: cachefsd registered it
# (register = auto, cachefsd/ops/rpcbind.c)
got=$(rpcinfo -p 127.0.0.1 | awk '$1 == 100024 && $2 == 1 && $3 == "udp" {print $4}')
[ "$got" = "$P" ] || h_fail "NSM/UDP is not registered at cachefsd's port $P: $(rpcinfo -p 127.0.0.1)"

# --- bad input over UDP --------------------------------------------------------
# SM_STAT with a string longer than SM_MAXSTRLEN: GARBAGE_ARGS (4)
[ "$(rpc udp 127.0.0.1 "$P" 100024 1 1 00000fff | cut -d' ' -f1)" = 4 ] ||
	h_fail "garbage NSM arguments over UDP were not answered GARBAGE_ARGS"
# procedure 7: PROC_UNAVAIL (3)
[ "$(rpc udp 127.0.0.1 "$P" 100024 1 7 | cut -d' ' -f1)" = 3 ] ||
	h_fail "an unknown NSM procedure over UDP was not answered PROC_UNAVAIL"
# NFS over UDP: PROG_UNAVAIL (1), NFS is TCP only
[ "$(rpc udp 127.0.0.1 "$P" 100003 3 0 | cut -d' ' -f1)" = 1 ] ||
	h_fail "NFS over UDP was not answered PROG_UNAVAIL"
# the same over TCP
[ "$(rpc tcp 127.0.0.1 "$P" 100024 1 1 00000fff | cut -d' ' -f1)" = 4 ] ||
	h_fail "garbage NSM arguments over TCP were not answered GARBAGE_ARGS"
[ "$(rpc tcp 127.0.0.1 "$P" 100024 1 7 | cut -d' ' -f1)" = 3 ] ||
	h_fail "an unknown NSM procedure over TCP was not answered PROC_UNAVAIL"
# SM_STAT from a remote caller: STAT_FAIL with the proxy's state
got=$(rpc udp 127.0.0.1 "$P" 100024 1 1 0000000161000000)
[ "$got" = "0 $(printf '00000001%08x' "$st")" ] || h_fail "SM_STAT answered '$got'"
# SM_NOTIFY from an unprivileged port (any user on an allowed host could
# send it): answered, ignored, counted
[ "$(CFS_TOOL_PORT=high rpc udp 127.0.0.1 "$P" 100024 1 6 0000000a6275696c64686f737431000000000007 | cut -d' ' -f1)" = 0 ] ||
	h_fail "SM_NOTIFY from an unprivileged port was not answered"
[ "$(h_stat px nsm_notify_refused)" = 1 ] || h_fail "SM_NOTIFY from an unprivileged port was not refused"
[ "$(h_stat px nsm_notify_clients)" = 0 ] || h_fail "SM_NOTIFY from an unprivileged port was taken"
grep -q "NSM: SM_NOTIFY for buildhost1 from 127.0.0.1: not from a privileged port; ignored" "$H_LOG_px" ||
	h_fail "the refused SM_NOTIFY was not logged"
h_log "ok: bad NSM input over UDP and TCP"

# --- (a) a client host reboots -----------------------------------------------
mkdir -p "$CACHE/nsm/sm"
# what the NLM room writes when a lock is granted: the host is remembered
echo "$H_NSADDR_cl" >"$CACHE/nsm/sm/buildhost1"
h_stop_cachefsd px
start_px
[ "$(h_stat px nsm_hosts)" = 1 ] || h_fail "the remembered host was not loaded: nsm_hosts $(h_stat px nsm_hosts)"
# the client host's sm-notify after its reboot: its sm dir names the proxy
# host (as statd wrote it when the client's lockd locked through the proxy)
SMN=$H_TMP/cl-smn
mkdir -p "$SMN/sm" "$SMN/sm.bak"
printf '%08x %08x %08x %08x %s %s %s\n' 0 100021 4 16 00000000000000000000000000000000 \
	"$H_HOSTADDR_cl" buildhost1 >"$SMN/sm/$H_HOSTADDR_cl"
nshost "$H_NS_cl" "$SMNOTIFY" -d -f -m 1 -v buildhost1 -P "$SMN" >"$H_TMP/cl-smn.log" 2>&1 ||
	h_fail "sm-notify failed: $(tail -n 5 "$H_TMP/cl-smn.log")"
for ((i = 0; i < 100; i++)); do
	grep -q "NSM: client host buildhost1 ($H_NSADDR_cl) restarted" "$H_LOG_px" && break
	sleep 0.1
done
grep -q "NSM: client host buildhost1 ($H_NSADDR_cl) restarted" "$H_LOG_px" ||
	h_fail "the client host's SM_NOTIFY was not logged: $(tail -n 5 "$H_TMP/cl-smn.log")"
[ "$(h_stat px nsm_notify_clients)" = 1 ] || h_fail "nsm_notify_clients is not 1"
[ "$(h_stat px nsm_calls_SM_NOTIFY)" = 1 ] || h_fail "nsm_calls_SM_NOTIFY is $(h_stat px nsm_calls_SM_NOTIFY), not 1"
[ ! -e "$CACHE/nsm/sm/buildhost1" ] || h_fail "the rebooted client host was not forgotten"
[ "$(h_stat px nsm_hosts)" = 0 ] || h_fail "nsm_hosts is not 0 after the reboot"
h_log "ok: a client host's reboot reached cachefsd (sm-notify over UDP)"

# --- (b) the filer reboots -----------------------------------------------------
echo "$H_NSADDR_cl" >"$CACHE/nsm/sm/buildhost1"
# a host with a portmapper and no statd: told nothing, given up at once
echo "$H_NSADDR_fl" >"$CACHE/nsm/sm/nostatd"
h_stop_cachefsd px
start_px # (c) at start it tells buildhost1
st2=$(cat "$CACHE/nsm/state")
[ "$st2" -gt "$st" ] && [ $((st2 % 2)) = 1 ] || h_fail "the state did not rise to an odd number: $st -> $st2"
for ((i = 0; i < 100; i++)); do
	[ "$(grep -c "Received SM_NOTIFY from $PXNAME, state: $st2" "$H_TMP/cl-statd.log")" -ge 1 ] && break
	sleep 0.1
done
grep -q "Received SM_NOTIFY from $PXNAME, state: $st2" "$H_TMP/cl-statd.log" ||
	h_fail "(c) the client host's statd did not hear of the restart: $(tail -n 5 "$H_TMP/cl-statd.log")"
for ((i = 0; i < 50; i++)); do
	[ "$(h_stat px nsm_relayed)" = 1 ] && break
	sleep 0.1
done
[ "$(h_stat px nsm_relayed)" = 1 ] || h_fail "(c) nsm_relayed is not 1"
[ "$(h_stat px nsm_relay_failures)" = 1 ] || h_fail "(c) nsm_relay_failures is not 1"
grep -q "NSM: cannot tell client host nostatd ($H_NSADDR_fl) to reclaim its locks (cachefsd restarted): no statd registered with its portmapper" \
	"$H_LOG_px" || h_fail "(c) the host without statd was not logged"
[ "$(h_stat px nsm_hosts)" = 2 ] || h_fail "(c) nsm_hosts is not 2"
grep -q "NSM: told client host buildhost1 ($H_NSADDR_cl) to reclaim its locks (cachefsd restarted)" \
	"$H_LOG_px" || h_fail "(c) the restart notification was not logged"
h_log "ok: (c) a cachefsd restart told the remembered client host (state $st2)"

# the filer's sm-notify at its boot, on its host: its sm dir names the
# proxy (the filer's lockd monitored the proxy's address); its name filer1
# is not the upstream URL's host, its address is
FSMN=$H_TMP/fl-smn
mkdir -p "$FSMN/sm" "$FSMN/sm.bak"
printf '%08x %08x %08x %08x %s %s %s\n' 0 100021 4 16 00000000000000000000000000000000 \
	"$H_HOSTADDR_fl" filer1 >"$FSMN/sm/$H_HOSTADDR_fl"
n1=$(grep -c "Received SM_NOTIFY from $PXNAME" "$H_TMP/cl-statd.log")
nshost "$H_NS_fl" "$SMNOTIFY" -d -f -m 1 -v filer1 -P "$FSMN" >"$H_TMP/fl-smn.log" 2>&1 ||
	h_fail "the filer's sm-notify failed: $(tail -n 5 "$H_TMP/fl-smn.log")"
for ((i = 0; i < 100; i++)); do
	[ "$(grep -c "Received SM_NOTIFY from $PXNAME" "$H_TMP/cl-statd.log")" -gt "$n1" ] && break
	sleep 0.1
done
[ "$(grep -c "Received SM_NOTIFY from $PXNAME" "$H_TMP/cl-statd.log")" -gt "$n1" ] ||
	h_fail "(b) the filer's reboot was not relayed to the client host: $(tail -n 3 "$H_LOG_px")"
[ "$(h_stat px nsm_notify_filer)" = 1 ] || h_fail "(b) nsm_notify_filer is not 1"
grep -q "NSM: the filer $H_NSADDR_fl restarted (SM_NOTIFY for filer1 from $H_NSADDR_fl" "$H_LOG_px" ||
	h_fail "(b) the filer's reboot was not logged"
# and the proxy serves the filer's files all along
[ "$(nfs-cat "nfs://127.0.0.1$FLX/hello?nfsport=$P&mountport=$P")" = hello ] ||
	h_fail "the proxy does not serve the filer's export"
[ -e "$CACHE/nsm/sm/buildhost1" ] || h_fail "(b) the client host was forgotten on the filer's reboot"
[ "$(h_stat px nsm_relay_failures)" = 2 ] || h_fail "(b) nsm_relay_failures is not 2"
h_pass "NSM: client reboot counted and forgotten, filer reboot relayed, restart notified (real sm-notify and rpc.statd)"
