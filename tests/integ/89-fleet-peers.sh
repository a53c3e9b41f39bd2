#!/bin/bash
# shellcheck disable=SC2154 # H_EXPORT_up, H_PORT_n1 ... are set by harness.sh
# 89-fleet-peers: fills shared across a fleet (`peers`, docs/design.md
# "Fleets"). The filer (nfs-ganesha) runs in its own network namespace
# behind a veth pair, so every byte it sends is counted on the link
# (/sys/class/net/VETH/statistics/rx_bytes of the host end); three cachefsd
# nodes on this side list all three as peers.
#  1. a 104 MiB data set (13 files of 8 MiB) read through node 1, then node
#     2, then node 3 (nfsread, a libnfs client): the bytes are the filer's
#     every time; the filer link carries about 1x the data set (at most
#     1.3x), not 3x: each chunk came from the filer once, to its owner,
#     and the other nodes had it from the owner; every node's counters
#     show bytes from peers, and the nodes served each other; peer_keep is
#     no (the default): the nodes' caches hold the set once between them
#     (the sum of their cache_bytes 0.9x .. 1.3x, not 3x), and a re-read
#     through node 1 costs the filer link under 0.05x the set (each chunk
#     from its owner's cache);
#  2. node 3 stopped (SIGTERM): a second data set (24 MiB) read through
#     node 1, then node 2: correct bytes, each read within 60 s (a dead
#     peer is left out, nobody waits for it), and the filer link carries
#     about 1x that set again (0.9x .. 1.3x): node 3's share came from the
#     filer, once, and nothing was lost;
#  3. node 2 frozen (SIGSTOP: connected, silent): 16 MiB through node 1,
#     correct, within 30 s (peer_timeout 5 s, then the filer and a back-off
#     for node 2), node 1 counting peer timeouts; node 2 serves again after
#     SIGCONT;
#  4. a warm replacement: node 3 (stopped in 2) comes back with an empty
#     cache under its entry: the 24 MiB set read through it, then through
#     node 1, costs the filer link under 0.1x the set: the chunks node 3
#     owns again came from their holders while it was away (probes of the
#     runner-up), the others from their owners; node 3 counts probe hits.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
command -v ip >/dev/null && ip netns list >/dev/null 2>&1 || h_skip "no ip netns here"
command -v ganesha.nfsd >/dev/null || h_skip "no nfs-ganesha"

# --- the filer behind a veth pair ------------------------------------------
NS=cfspeers-$$
VH=cfsph$$
VN=cfspn$$
HOST_IP=10.214.0.1
NS_IP=10.214.0.2
ip netns add "$NS" || h_fail "ip netns add failed"
h_atexit "ip link del $VH 2>/dev/null; ip netns del $NS 2>/dev/null"
ip link add "$VH" type veth peer name "$VN" || h_fail "veth failed"
ip link set "$VN" netns "$NS"
ip addr add "$HOST_IP/30" dev "$VH"
ip link set "$VH" up
ip netns exec "$NS" ip link set lo up
ip netns exec "$NS" ip addr add "$NS_IP/30" dev "$VN"
ip netns exec "$NS" ip link set "$VN" up

h_start_rpcbind # ganesha registers through /run/rpcbind.sock (shared)
E=$H_TMP/up-export
mkdir -p "$E"
nfsport=$(h_free_port)
mntport=$(h_free_port)
conf=$H_TMP/up-ganesha.conf
cat >"$conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = $nfsport;
	MNT_Port = $mntport;
	NLM_Port = $(h_free_port);
	Rquota_Port = $(h_free_port);
	Bind_addr = $NS_IP;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Protocols = 3, 4;
}
NFSV4 { Graceless = true; }
$(h_ganesha_export "$E" up)
EOF
ip netns exec "$NS" ganesha.nfsd -F -f "$conf" -L "$H_TMP/up-ganesha.log" \
	-p "$H_TMP/up-ganesha.pid" >>"$H_TMP/up-ganesha.log" 2>&1 &
h_track ganesha-up $!
H_EXPORT_up=$E
H_URL_up="nfs://$NS_IP$E?nfsport=$nfsport&mountport=$mntport"
for ((i = 0; i < 300; i++)); do
	nfs-ls "$H_URL_up" >/dev/null 2>&1 && break
	sleep 0.1
done
nfs-ls "$H_URL_up" >/dev/null 2>&1 || h_fail "nfs-ganesha in $NS does not serve $E: $(tail -n 5 "$H_TMP/up-ganesha.log")"

link_rx() { cat "/sys/class/net/$VH/statistics/rx_bytes"; } # filer -> here
link_tx() { cat "/sys/class/net/$VH/statistics/tx_bytes"; } # here -> filer

# --- the data sets ----------------------------------------------------------
MiB=1048576
A_FILES=(a1 a2 a3 a4 a5 a6 a7 a8 a9 a10 a11 a12 a13) # 13 x 8 MiB: the issue's 100 MiB
B_FILES=(b1 b2 b3)          # 3 x 8 MiB
C_FILES=(c1 c2)             # 2 x 8 MiB
for f in "${A_FILES[@]}" "${B_FILES[@]}" "${C_FILES[@]}"; do
	h_mkdata "$E/$f.bin" 8192 "$f"
	printf -v "want_$f" '%s' "$(h_md5 "$E/$f.bin")"
done
A_BYTES=$((104 * MiB))
B_BYTES=$((24 * MiB))
t_data=$EPOCHREALTIME

# --- three nodes, each listing all three ------------------------------------
H_PORT_n1=$(h_free_port)
H_PORT_n2=$(h_free_port)
H_PORT_n3=$(h_free_port)
PEERS="127.0.0.1:$H_PORT_n1,127.0.0.1:$H_PORT_n2,127.0.0.1:$H_PORT_n3"
# --reconnect-max 1: a node started before the others reaches them within
# a second of their start (the pools' back-off); --peer-timeout 5000: a
# cold owner filling from the filer on a loaded test host is waited for
for n in n1 n2 n3; do
	h_start_cachefsd "$n" up --register no --peers "$PEERS" --peer-timeout 5000 \
		--reconnect-max 1
done
grep -q "peers: 3 nodes, this one 127.0.0.1:$H_PORT_n2" "$H_LOG_n2" ||
	h_fail "node 2 did not find itself among the peers: $(grep peers "$H_LOG_n2")"
# the files past the fresh guard (the owners keep what they fill), and the
# nodes' pools to each other up (reconnect_max 1 s): each node's peers_up
# gauge says 2
h_past_guard "$t_data" up
peers_up_is() { [ "$(h_stat "$1" peers_up)" = "$2" ]; }
for n in n1 n2 n3; do
	h_wait_until 10 peers_up_is "$n" 2 ||
		h_fail "$n sees $(h_stat "$n" peers_up) peers up 10 s after the fleet started (want 2)"
done

rd_set() { # rd_set NODE FILE...: each file read through NODE, bytes checked
	local node=$1 p="H_PORT_$1" f w
	shift
	for f in "$@"; do
		w="want_$f"
		[ "$("$NR" --port "${!p}" --export "$E" --path "$f.bin" | md5sum | cut -d' ' -f1)" = "${!w}" ] ||
			h_fail "$f.bin read through $node: wrong bytes"
	done
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# --- 1. one data set through each node in turn -------------------------------
rx0=$(link_rx)
for n in n1 n2 n3; do
	rd_set "$n" "${A_FILES[@]}"
	h_log "set A through $n: the filer link has carried $(ratio $(($(link_rx) - rx0)) "$A_BYTES")x the set so far"
done
rxA=$(($(link_rx) - rx0))
rA=$(ratio "$rxA" "$A_BYTES")
for n in n1 n2 n3; do
	h_log "$n: peer_bytes $(h_stat "$n" peer_bytes) fill_bytes $(h_stat "$n" fill_bytes) bytes_from_cache $(h_stat "$n" bytes_from_cache) peer_fills $(h_stat "$n" peer_fills) refused $(h_stat "$n" peer_refused) timed_out $(h_stat "$n" peer_timeouts) fallbacks $(h_stat "$n" peer_fallbacks) served $(h_stat "$n" peer_served) unkept $(h_stat "$n" peer_unkept) probes $(h_stat "$n" peer_probes) (hits $(h_stat "$n" peer_probe_hits), misses $(h_stat "$n" peer_probe_misses), refused here $(h_stat "$n" peer_probes_refused)) passthrough $(h_stat "$n" read_passthrough) evidence_reads $(h_stat "$n" evidence_reads) stores $(h_stat "$n" stores) fresh_skips $(h_stat "$n" fresh_skips) upstream READs $(h_stat "$n" upstream_calls_READ)"
done
awk -v r="$rA" 'BEGIN { exit !(r >= 0.9 && r <= 1.3) }' ||
	h_fail "reading the 104 MiB set through three nodes cost the filer link ${rA}x the set ($rxA bytes); want 0.9x..1.3x (each chunk once)"
for n in n1 n2 n3; do
	pb=$(h_stat "$n" peer_bytes)
	ps=$(h_stat "$n" peer_served)
	[ "$pb" -gt $((A_BYTES / 4)) ] 2>/dev/null ||
		h_fail "$n took $pb bytes from peers for the 104 MiB set (want more than a quarter of it)"
	[ "$ps" -gt 0 ] 2>/dev/null || h_fail "$n answered no peer's READ ($ps)"
done

# peer_keep no: one copy of each chunk in the fleet, on its owner (the
# stores land on workers: waited for)
cache_sum() { echo $(($(h_stat n1 cache_bytes) + $(h_stat n2 cache_bytes) + $(h_stat n3 cache_bytes))); }
sum_at_least() { [ "$(cache_sum)" -ge "$1" ]; }
h_wait_until 10 sum_at_least $((A_BYTES * 9 / 10)) || true
cs=$(cache_sum)
rC=$(ratio "$cs" "$A_BYTES")
awk -v r="$rC" 'BEGIN { exit !(r >= 0.9 && r <= 1.3) }' ||
	h_fail "after the 104 MiB set through three nodes (peer_keep no), their caches hold ${rC}x the set ($cs bytes: $(h_stat n1 cache_bytes) + $(h_stat n2 cache_bytes) + $(h_stat n3 cache_bytes)); want 0.9x..1.3x (each chunk once, on its owner)"
for n in n1 n2 n3; do
	[ "$(h_stat "$n" peer_unkept)" -gt 0 ] 2>/dev/null ||
		h_fail "$n kept every chunk it took from peers (peer_unkept $(h_stat "$n" peer_unkept))"
done
h_log "the fleet's caches hold ${rC}x set A: n1 $(h_stat n1 cache_bytes) n2 $(h_stat n2 cache_bytes) n3 $(h_stat n3 cache_bytes) bytes"
rx0=$(link_rx)
rd_set n1 "${A_FILES[@]}"
rxA2=$(($(link_rx) - rx0))
rA2=$(ratio "$rxA2" "$A_BYTES")
awk -v r="$rA2" 'BEGIN { exit !(r < 0.05) }' ||
	h_fail "re-reading the 104 MiB set through n1 cost the filer link ${rA2}x the set ($rxA2 bytes); want < 0.05x (every chunk from its owner's cache)"
h_log "set A again through n1: the filer link carried ${rA2}x the set"

# what an operator reads: cachefsctl stats has the bytes by source
line=$("$H_BUILD/cachefsctl" --socket "$H_CACHE_n1/control" stats | grep '^peers ')
[[ "$line" == *" from the filer, "*" from peers, "*" from the cache; "* ]] ||
	h_fail "cachefsctl stats on n1 has no bytes-by-source line: '$line'"
h_log "n1: $line"

# --- 2. one node stopped ------------------------------------------------------
h_stop_cachefsd n3
rx0=$(link_rx)
for n in n1 n2; do
	t0=$EPOCHREALTIME
	rd_set "$n" "${B_FILES[@]}"
	took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	awk -v t="$took" 'BEGIN { exit !(t < 60) }' ||
		h_fail "the 24 MiB set through $n with node 3 stopped took $took s (want < 60 s)"
	h_log "set B through $n (node 3 stopped): $took s"
done
rxB=$(($(link_rx) - rx0))
rB=$(ratio "$rxB" "$B_BYTES")
awk -v r="$rB" 'BEGIN { exit !(r >= 0.9 && r <= 1.3) }' ||
	h_fail "with node 3 stopped, reading the 24 MiB set through two nodes cost the filer link ${rB}x the set ($rxB bytes); want 0.9x..1.3x"
for n in n1 n2; do
	h_log "$n after set B: peer_bytes $(h_stat "$n" peer_bytes) fill_bytes $(h_stat "$n" fill_bytes) timed_out $(h_stat "$n" peer_timeouts) fallbacks $(h_stat "$n" peer_fallbacks)"
done

# --- 3. a peer that does not answer -----------------------------------------
# node 2 frozen (SIGSTOP): its connections stay up, its READs go
# unanswered. Node 1 waits peer_timeout (5 s here) for the chunks node 2
# owns, then takes them from the filer and leaves node 2 out for a back-off.
to0=$(h_stat n1 peer_timeouts)
kill -STOP "$H_PID_n2"
t0=$EPOCHREALTIME
rd_set n1 "${C_FILES[@]}"
took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
kill -CONT "$H_PID_n2"
to=$(($(h_stat n1 peer_timeouts) - to0))
[ "$to" -gt 0 ] || h_fail "node 1 read 16 MiB with node 2 frozen and counted no peer timeout"
# peer_timeout, a back-off of 1 s, perhaps a second wait: far below 30 s
awk -v t="$took" 'BEGIN { exit !(t < 30) }' ||
	h_fail "16 MiB through n1 with node 2 frozen took $took s (want < 30 s: peer_timeout is 5 s)"
h_log "set C through n1 (node 2 frozen): $took s, $to fills timed out and went to the filer"
# node 2 back: node 1 takes chunks from it again after the back-off
rd_set n2 "${C_FILES[@]}"

# --- 4. a warm replacement ----------------------------------------------------
# node 3, stopped in 2, replaced by a node with an empty cache under the
# same entry. Set B was read while it was away: the chunks it owns again
# are on their runners-up, which it probes before the filer.
rm -rf "$H_CACHE_n3" "$H_TMP/n3.stats"
h_start_cachefsd n3 up --register no --peers "$PEERS" --peer-timeout 5000 --reconnect-max 1
for n in n1 n2 n3; do
	h_wait_until 10 peers_up_is "$n" 2 ||
		h_fail "$n sees $(h_stat "$n" peers_up) peers up 10 s after node 3 came back (want 2)"
done
rx0=$(link_rx)
rd_set n3 "${B_FILES[@]}"
rd_set n1 "${B_FILES[@]}"
rxR=$(($(link_rx) - rx0))
rR=$(ratio "$rxR" "$B_BYTES")
awk -v r="$rR" 'BEGIN { exit !(r < 0.1) }' ||
	h_fail "the 24 MiB set through the replaced node 3, then node 1, cost the filer link ${rR}x the set ($rxR bytes); want < 0.1x (from the nodes that held it); n3: peer_bytes $(h_stat n3 peer_bytes) probes $(h_stat n3 peer_probes) hits $(h_stat n3 peer_probe_hits) misses $(h_stat n3 peer_probe_misses) fill_bytes $(h_stat n3 fill_bytes)"
pb3=$(h_stat n3 peer_bytes)
ph3=$(h_stat n3 peer_probe_hits)
[ "$pb3" -ge $((B_BYTES * 9 / 10)) ] 2>/dev/null ||
	h_fail "the replaced node 3 took $pb3 bytes of the 24 MiB set from peers (want 0.9x at least)"
[ "$ph3" -gt 0 ] 2>/dev/null || h_fail "the replaced node 3 took no chunk it owns from its runner-up ($ph3 probe hits)"
h_log "set B through the replaced n3, then n1: the filer link carried ${rR}x the set; n3 peer_bytes $pb3, probes $(h_stat n3 peer_probes) (hits $ph3, misses $(h_stat n3 peer_probe_misses)), cache_bytes $(h_stat n3 cache_bytes)"

h_pass "104 MiB read through three peer nodes in turn: correct bytes, the filer link carried ${rA}x the set (not 3x), every node took bytes from its peers; node 3 stopped: 24 MiB through the other two, correct, the filer link ${rB}x that set (node 3's share once, nothing lost), tx to the filer $(link_tx) bytes in all; node 2 frozen: 16 MiB through node 1 in $took s ($to fills waited peer_timeout, then the filer); the fleet's caches held set A ${rC}x (peer_keep no), a re-read cost the filer ${rA2}x; node 3 replaced empty: set B through it and node 1 cost the filer ${rR}x, $ph3 chunks from their runner-up"
