#!/bin/bash
# bench/fleet.sh — the fleet profile (issue 20): how many bytes the filer
# sends, and how fast clients read, when several cachefsd nodes serve one
# filer over the wan link. The filer (nfs-ganesha) sits behind the shaped
# link (tbf on a veth, 100 Mbit/s) and the relay's delay (5 ms each way),
# the nodes and the clients on this side (loopback). For each setup in
# turn, three clients read the same workload, client k through node k (all
# three through the one node of 1-node), one client after the other; first
# with the nodes' caches empty (cold pass), then again (warm pass):
#   direct         the clients straight to the filer (the reference)
#   1-node         one cachefsd
#   3-independent  three cachefsd, no peers
#   3-cascade      three edge cachefsd in front of one regional cachefsd
#                  (on this side too) in front of the filer
#   3-peers        three cachefsd with `peers` listing all three
# Per pass: the bytes that crossed the filer link (the veth's counters),
# the seconds the three clients took (the sum of their reads), the nodes'
# counters (bytes filled from upstream, from peers, from the cache). See
# docs/bench.md, "Fleet (wan)".
#
# usage: bench/fleet.sh [options]   (as root; bench/bench.sh --fleet ... runs it)
#   --scale quick|tiny|full   data set (default quick); the workload of one
#                         client is bigfile, biggerfile and tree-wan (the
#                         wan profile's tree), as bench.sh makes them
#   --n N                 measured rounds (default 3); no warm-up rounds:
#                         a round is every setup, cold then warm
#   --setups LIST         direct,1-node,3-independent,3-cascade,3-peers
#                         (default all, run in this order in every round)
#   --mode strict|ttl     the nodes' mode (default strict; ttl = --meta-ttl 60)
#   --parallel            the three clients read at the same time (default:
#                         one after the other); a pass's seconds are then its
#                         wall time, not the sum of the clients' reads
#   --peer-timeout MS     3-peers' peer_timeout (default 5000: an owner
#                         filling a chunk across the shaped link behind
#                         other fills on a loaded machine is waited for;
#                         the daemon's default is 500)
#   --wan-rate R / --wan-delay-ms D   (100mbit / 5)
#   --window N            READs in flight per file (default 4)
#   --seed N              data set seed (default 1)
#   --cachefsd-args "A"   extra flags for every node
#   --out DIR             results (default bench/results/fleet-<date>)
#   --build DIR           where cachefsd and the bench tools are (build)
#   --keep                keep the temp dir (logs) after the run
set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cmdline="bench/fleet.sh $*"
[ -n "${BENCH_CMD:-}" ] && cmdline=$BENCH_CMD

scale=quick n=3 seed=1 mode=strict peer_timeout=5000 parallel=0
setups=direct,1-node,3-independent,3-cascade,3-peers
wan_rate=100mbit wan_delay=5 window=4
out='' build=$root/build
while [ $# -gt 0 ]; do
	case $1 in
	--scale) scale=${2:?}; shift 2 ;;
	--n) n=${2:?}; shift 2 ;;
	--setups) setups=${2:?}; shift 2 ;;
	--mode) mode=${2:?}; shift 2 ;;
	--parallel) parallel=1; shift ;;
	--peer-timeout) peer_timeout=${2:?}; shift 2 ;;
	--wan-rate) wan_rate=${2:?}; shift 2 ;;
	--wan-delay-ms) wan_delay=${2:?}; shift 2 ;;
	--window) window=${2:?}; shift 2 ;;
	--seed) seed=${2:?}; shift 2 ;;
	--cachefsd-args) B_CFS_ARGS=$2; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--build) build=$(cd "${2:?}" && pwd) || exit 2; shift 2 ;;
	--keep) export BENCH_KEEP=1; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "fleet: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
case $n$seed$window$peer_timeout$wan_delay in *[!0-9]*) echo "fleet: numbers expected" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] || { echo "fleet: --n must be >= 1" >&2; exit 2; }
case $mode in strict | ttl) ;; *) echo "fleet: --mode strict|ttl" >&2; exit 2 ;; esac
for s in ${setups//,/ }; do
	case $s in
	direct | 1-node | 3-independent | 3-cascade | 3-peers) ;;
	*) echo "fleet: unknown setup $s" >&2; exit 2 ;;
	esac
done

out=${out:-$root/bench/results/fleet-$(date +%Y-%m-%dT%H%M)}
mkdir -p "$out/raw"
out=$(cd "$out" && pwd)

B_BIN=$build/bench
B_CACHEFSD=$build/cachefsd
for t in nfsbench benchgen benchstat relay; do
	[ -x "$B_BIN/$t" ] || { echo "fleet: $B_BIN/$t missing (make bench-tools)" >&2; exit 2; }
done
[ -x "$B_CACHEFSD" ] || { echo "fleet: $B_CACHEFSD missing (make)" >&2; exit 2; }

# shellcheck source=bench/lib/env.sh
. "$here/lib/env.sh"
b_init
cp "$B_CACHEFSD" "$B_TMP/cachefsd" # a rebuild during the run changes nothing
B_CACHEFSD=$B_TMP/cachefsd
exec > >(tee -a "$out/raw/fleet.log") 2>&1

# --- the data set: bench.sh's, same sizes, seed and directory -------------------
# (the key is computed as bench.sh computes it, so one data set serves both)
b_scale_set "$scale" "$seed" || { echo "fleet: --scale full|quick|tiny" >&2; exit 2; }
key=$(printf '%s\n' "v$(sed -n 's/^#define DS_VERSION //p' "$here/dataset.h")" \
	"${gen_args[@]}" "" | sha256sum | cut -c1-16)
DATA=$root/build/bench-data/$scale-seed$seed-$key
if [ ! -f "$DATA/.complete" ]; then
	b_log "generating the $scale data set into $DATA"
	rm -rf "$DATA"
	mkdir -p "$root/build/bench-data"
	"$B_BIN/benchgen" --out "$DATA" "${gen_args[@]}" || b_die "benchgen failed"
	touch "$DATA/.complete"
else
	b_log "reusing the data set $DATA"
fi
# older than cachefsd's fresh guard, or the cold pass stores nothing
age_wait=$(find "$DATA" -printf '%C@\n' | awk -v now="$(date +%s.%N)" -v g=4 \
	'$1 > m {m = $1} END {w = m + g - now; printf "%.2f", (w > 0 ? w : 0)}')
[ "$age_wait" = 0.00 ] || { b_log "waiting ${age_wait}s for the data set to age"; sleep "$age_wait"; }
manifest_bytes() { awk -v p="$1" '$3==p || index($3, p"/")==1 {s+=$1} END{print s+0}' "$DATA/MANIFEST"; }

# one client's workload: (nfsbench verb, path)
WL=("cat bigfile" "cat biggerfile" "tar tree-wan")
CLIENTS=3
client_bytes=0
for w in "${WL[@]}"; do client_bytes=$((client_bytes + $(manifest_bytes "${w#* }"))); done

cfs_mode=()
[ "$mode" = ttl ] && cfs_mode=(--meta-ttl 60)

{
	echo "date=$(date +%Y-%m-%dT%H%M)"
	echo "command=$cmdline"
	echo "git=$(git -C "$root" rev-parse --short HEAD 2>/dev/null)$(git -C "$root" diff --quiet HEAD -- cachefsd proto include 2>/dev/null || echo -dirty)"
	echo "cachefsd=$("$B_CACHEFSD" --version 2>&1 | head -n 1)"
	echo "host=$(uname -srm)"
	echo "cpus=$(nproc)"
	echo "mem=$(awk '/MemTotal/{print int($2/1024)" MiB"}' /proc/meminfo)"
	echo "ganesha=$(dpkg-query -W -f='${Version}' nfs-ganesha 2>/dev/null)"
	echo "scale=$scale"
	echo "seed=$seed"
	echo "n=$n"
	echo "setups=$setups"
	echo "clients=$CLIENTS"
	echo "parallel=$parallel"
	echo "client_workload=${WL[*]}"
	echo "client_bytes=$client_bytes"
	echo "mode=$mode"
	echo "peer_timeout_ms=$peer_timeout"
	echo "window=$window"
	echo "wan_rate=$wan_rate"
	echo "wan_delay_ms=$wan_delay"
	echo "cachefsd_args=${B_CFS_ARGS:-}"
	echo "data=$DATA"
	echo "load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/meta.txt"
cp "$DATA/SUMMARY" "$out/dataset.txt"
cat "$out/meta.txt"

# --- the filer over the wan link ----------------------------------------------------
b_net_up
b_start_upstream "$DATA"
b_warm_export "$DATA" # the filer holds its data set in RAM
b_shape "$wan_rate" 1500
b_start_relay "$wan_delay" 0
b_log "filer: nfs-ganesha in netns $B_NS behind $wan_rate, relay at 127.0.0.1:$R_NFSPORT (+$wan_delay ms each way)"

# --- the setups --------------------------------------------------------------------
# fleet_up SETUP: starts the setup's nodes with empty caches. Sets NODES
# (the client-facing nodes, client k uses NODES[(k-1) % #NODES]) and ALL
# (every node, the regional one of a cascade included).
NODES=() ALL=()
node_start() # NAME HOST NFSPORT MNTPORT [flags]: b_start_cachefsd, empty cache
{
	local name=$1 host=$2 np=$3 mp=$4
	shift 4
	rm -rf "$B_TMP/cache-$name"
	b_start_cachefsd "$name" "$B_TMP/cache-$name" "$host" "$np" "$mp" "$UP_EXPORT" \
		--register no "${cfs_mode[@]}" "$@" || b_die "cachefsd $name did not start"
	ALL+=("$name")
}
fleet_up()
{
	local s=$1 i list=''
	NODES=() ALL=()
	case $s in
	direct) ;;
	1-node)
		node_start f1 127.0.0.1 "$R_NFSPORT" "$R_MNTPORT"
		NODES=(f1) ;;
	3-independent)
		for i in 1 2 3; do node_start "f$i" 127.0.0.1 "$R_NFSPORT" "$R_MNTPORT"; done
		NODES=(f1 f2 f3) ;;
	3-cascade)
		# the regional node in front of the filer; the edges' upstream is
		# its one port (MOUNT and NFS), docs/operations.md "Running a fleet"
		node_start reg 127.0.0.1 "$R_NFSPORT" "$R_MNTPORT"
		local rp=CFS_PORT_reg
		for i in 1 2 3; do node_start "f$i" 127.0.0.1 "${!rp}" "${!rp}"; done
		NODES=(f1 f2 f3) ;;
	3-peers)
		for i in 1 2 3; do
			local pv="CFS_PORT_f$i"
			[ -n "${!pv:-}" ] || printf -v "$pv" '%s' "$(b_free_port)"
			list+="${list:+,}127.0.0.1:${!pv}"
		done
		# --reconnect-max 1: a node started before the others reaches
		# them within a second of their start
		for i in 1 2 3; do
			node_start "f$i" 127.0.0.1 "$R_NFSPORT" "$R_MNTPORT" --peers "$list" \
				--peer-timeout "$peer_timeout" --reconnect-max 1
		done
		NODES=(f1 f2 f3)
		# every node's pool to each of the other two up (peer_connections
		# 2): four established connections into each node's port
		local p ok deadline=$((SECONDS + 15))
		while :; do
			ok=1
			for i in 1 2 3; do
				pv="CFS_PORT_f$i"
				p=${!pv}
				[ "$(ss -Htn state established "dport = :$p" | wc -l)" -ge 4 ] || ok=0
			done
			[ $ok = 1 ] && break
			[ $SECONDS -lt $deadline ] || { b_log "3-peers: the nodes' pools to each other are not all up after 15 s"; break; }
			sleep 0.1
		done ;;
	esac
}
fleet_down()
{
	local x
	for x in "${ALL[@]}"; do
		b_stop_cachefsd "$x"
		rm -rf "$B_TMP/cache-$x"
	done
	NODES=() ALL=()
}

# stat_sum KEY DIR NAME...: the sum of KEY over the nodes' stats in DIR/NAME.txt
stat_sum()
{
	local key=$1 dir=$2 x s=0 v
	shift 2
	for x in "$@"; do
		v=$(awk -v k="$key" '$1==k{print $2}' "$dir/$x.txt" 2>/dev/null)
		s=$((s + ${v:-0}))
	done
	echo "$s"
}

csv=$out/fleet.csv
rcsv=$out/fleet-clients.csv
echo "setup,pass,run,seconds,bytes,expect_bytes,filer_bytes,filer_rx_bytes,node_fill_bytes,peer_bytes,cache_bytes,peer_timeouts,peer_refused,peer_served" >"$csv"
echo "setup,pass,run,client,node,workload,seconds,bytes,expect_bytes,filer_bytes" >"$rcsv"

# client_reads SETUP PASS RUN VERIFY K: client K's workload through its node
# (NODES[(K-1) % #NODES], or the filer); its reads' fleet-clients.csv rows
# into $B_TMP/client-K.csv, "SECONDS BYTES" (the sum of its reads) into
# $B_TMP/client-K.sum. Returns 1 (and logs why) when a read fails or its
# bytes differ from the data set. The filer-link bytes of a read are
# recorded only when the clients run one after the other.
client_reads()
{
	local s=$1 pass=$2 run=$3 verify=$4 k=$5 node host port mport wv verb path res sec bytes want c0 c1
	local tsec=0 tbytes=0 vfile=$B_TMP/verify-$5.txt
	if [ ${#NODES[@]} = 0 ]; then
		node=filer host=127.0.0.1 port=$R_NFSPORT mport=$R_MNTPORT
	else
		node=${NODES[(k - 1) % ${#NODES[@]}]}
		local pv="CFS_PORT_$node"
		host=127.0.0.1 port=${!pv} mport=${!pv}
	fi
	: >"$B_TMP/client-$k.csv"
	for wv in "${WL[@]}"; do
		verb=${wv%% *} path=${wv#* }
		local vargs=()
		[ "$verify" = 1 ] && vargs=(--verify "$vfile")
		c0=$(b_link_bytes)
		res=$("$B_BIN/nfsbench" "$verb" --host "$host" --port "$port" --mountport "$mport" \
			--export "$UP_EXPORT" --path "$path" --window "$window" --timeout 600 "${vargs[@]}") ||
			{ b_log "nfsbench $verb $path by client $k via $node ($s, $pass) failed"; return 1; }
		c1=$(b_link_bytes)
		if [ "$verify" = 1 ]; then
			want=$(awk -v p="$path" '$3==p || index($3, p"/")==1' "$DATA/MANIFEST" | sort)
			[ "$want" = "$(sort "$vfile")" ] ||
				{ b_log "VERIFY: $path by client $k via $node ($s, $pass): bytes differ from the data set"; return 1; }
		fi
		sec=$(sed -n 's/.*seconds=\([^ ]*\).*/\1/p' <<<"$res")
		bytes=$(sed -n 's/.*bytes=\([^ ]*\).*/\1/p' <<<"$res")
		want=$(manifest_bytes "$path")
		[ "$bytes" = "$want" ] || b_log "WARNING: $path by client $k via $node read $bytes bytes, the data set has $want"
		tsec=$(awk -v a="$tsec" -v b="$sec" 'BEGIN{printf "%.6f", a + b}')
		tbytes=$((tbytes + bytes))
		[ "$parallel" = 1 ] && c0='' # the link is shared: no per-read figure
		echo "$s,$pass,$run,$k,$node,$verb-$path,$sec,$bytes,$want,${c0:+$((c1 - c0))}" >>"$B_TMP/client-$k.csv"
	done
	echo "$tsec $tbytes" >"$B_TMP/client-$k.sum"
}

# fleet_pass SETUP PASS RUN VERIFY: the clients, each its whole workload
# through its node, one after the other (or all at once with --parallel);
# one fleet.csv row for the pass. Its seconds: the clients' reads added up
# (--parallel: the pass's wall time)
fleet_pass()
{
	local s=$1 pass=$2 run=$3 verify=$4 k pids=() t0 t1 tsec=0 tbytes=0 a b
	local l0 l1 rx0 rx1 x
	local d0=$B_TMP/st0 d1=$B_TMP/st1
	rm -rf "$d0" "$d1" "$B_TMP"/client-*
	mkdir -p "$d0" "$d1"
	b_link_quiet
	for x in "${ALL[@]}"; do b_cfs_stats "$x" >"$d0/$x.txt"; done
	l0=$(b_link_bytes)
	rx0=$(cat "/sys/class/net/$B_VETH_H/statistics/rx_bytes")
	t0=$EPOCHREALTIME
	for ((k = 1; k <= CLIENTS; k++)); do
		if [ "$parallel" = 1 ]; then
			client_reads "$s" "$pass" "$run" "$verify" "$k" &
			pids+=($!)
		else
			client_reads "$s" "$pass" "$run" "$verify" "$k" || b_die "client $k failed ($s, $pass)"
		fi
	done
	for k in "${!pids[@]}"; do
		wait "${pids[k]}" || b_die "client $((k + 1)) failed ($s, $pass)"
	done
	t1=$EPOCHREALTIME
	for ((k = 1; k <= CLIENTS; k++)); do
		read -r a b <"$B_TMP/client-$k.sum" || b_die "client $k left no sum"
		tsec=$(awk -v x="$tsec" -v y="$a" 'BEGIN{printf "%.6f", x + y}')
		tbytes=$((tbytes + b))
		[ "$run" = 0 ] || cat "$B_TMP/client-$k.csv" >>"$rcsv"
	done
	[ "$parallel" = 1 ] && tsec=$(awk -v x="$t0" -v y="$t1" 'BEGIN{printf "%.6f", y - x}')
	l1=$(b_link_bytes)
	rx1=$(cat "/sys/class/net/$B_VETH_H/statistics/rx_bytes")
	for x in "${ALL[@]}"; do b_cfs_stats "$x" >"$d1/$x.txt"; done
	# the client-facing nodes' counters (a cascade's edges fill from the
	# regional node: node_fill_bytes is then what the edges took from it)
	local fb=0 pb=0 cb=0 pt=0 pr=0 ps=0
	if [ ${#NODES[@]} -gt 0 ]; then
		local uniq
		mapfile -t uniq < <(printf '%s\n' "${NODES[@]}" | sort -u)
		delta() { echo $(($(stat_sum "$1" "$d1" "${uniq[@]}") - $(stat_sum "$1" "$d0" "${uniq[@]}"))); }
		fb=$(delta fill_bytes) pb=$(delta peer_bytes) cb=$(delta bytes_from_cache)
		pt=$(delta peer_timeouts) pr=$(delta peer_refused) ps=$(delta peer_served)
	fi
	local expect=$((client_bytes * CLIENTS))
	[ "$tbytes" = "$expect" ] || b_log "WARNING: $s $pass read $tbytes bytes, want $expect"
	printf '  %-14s %-4s %s %8.3f s  filer link %6.1f MB (%.2fx one client'"'"'s data)  peers %.1f MB  cache %.1f MB%s\n' \
		"$s" "$pass" "$([ "$run" = 0 ] && echo warm-up || echo "run $run")" "$tsec" \
		"$(awk -v b=$((l1 - l0)) 'BEGIN{print b/1e6}')" "$(awk -v b=$((l1 - l0)) -v d="$client_bytes" 'BEGIN{print b/d}')" \
		"$(awk -v b="$pb" 'BEGIN{print b/1e6}')" "$(awk -v b="$cb" 'BEGIN{print b/1e6}')" \
		"$([ "$pt" = 0 ] || echo "  peer timeouts $pt")" >&2
	[ "$run" = 0 ] && return 0
	echo "$s,$pass,$run,$tsec,$tbytes,$expect,$((l1 - l0)),$((rx1 - rx0)),$fb,$pb,$cb,$pt,$pr,$ps" >>"$csv"
}

for ((round = 1; round <= n; round++)); do
	b_log "=== round $round of $n"
	for s in ${setups//,/ }; do
		fleet_up "$s"
		# round 1 checks every byte (size and xxh64 against the manifest)
		v=0
		[ "$round" = 1 ] && v=1
		fleet_pass "$s" cold "$round" "$v"
		fleet_pass "$s" warm "$round" "$v"
		fleet_down
	done
done
echo "load_at_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/meta.txt"
"$here/fleet-report.sh" "$out" "$B_BIN" || b_die "report failed"
b_log "report: $out/report.md"
