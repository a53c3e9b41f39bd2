# shellcheck shell=bash
# bench/lib/env.sh — what the bench starts and stops: a network namespace
# with a veth pair, nfs-ganesha (FSAL VFS) or the kernel nfsd guest inside
# it, the shaping of the
# link (tc tbf), the delay relay, cachefsd, and the nfs-ganesha PROXY_V4
# peer. Parts are copied from tests/lib/harness.sh (rpcbind, ports, ganesha
# config) so the bench does not depend on the test harness's internals.
#
# Everything started is recorded by pid and stopped by b_cleanup (trap on
# EXIT); the namespace, the veth pair and the qdiscs are removed there too.
# Only loopback and addresses inside our own namespace are ever used.

B_PIDS=()
B_NAMES=()
B_NS=''
B_VETH_H=''
B_VETH_N=''

b_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
b_die()
{
	printf 'bench: %s\n' "$*" >&2
	exit 1
}

b_track()
{
	B_NAMES+=("$1")
	B_PIDS+=("$2")
}

# b_stop_pid PID [TIMEOUT_S]: TERM, wait, KILL. Only pids we started.
b_stop_pid()
{
	local pid=$1 t=${2:-10} i
	[ -n "$pid" ] || return 0
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < t * 20; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

b_cleanup()
{
	local rc=$? i
	trap - EXIT
	for ((i = ${#B_PIDS[@]} - 1; i >= 0; i--)); do
		b_stop_pid "${B_PIDS[i]}" 10
	done
	b_net_down
	if [ -n "${B_TMP:-}" ] && [ -z "${BENCH_KEEP:-}" ]; then
		rm -rf "$B_TMP"
	fi
	exit "$rc"
}

b_init()
{
	[ "$(id -u)" = 0 ] || b_die "needs root (network namespace, tc, nfs-ganesha, drop_caches)"
	B_TMP=$(mktemp -d "${TMPDIR:-/tmp}/cachefsd-bench.XXXXXX")
	trap b_cleanup EXIT
	trap 'exit 130' INT TERM
}

# b_free_port: a TCP port nothing listens on here (loopback) and not handed
# out before in this run.
b_free_port()
{
	local p used=$B_TMP/.ports
	for ((;;)); do
		p=$((20000 + RANDOM % 12000)) # below the ephemeral range (harness.sh h_free_port)
		if ! ss -Htan "sport = :$p" | grep . >/dev/null && ! grep -qx "$p" "$used" 2>/dev/null; then
			echo "$p" >>"$used"
			echo "$p"
			return
		fi
	done
}

# b_wait_listen PORT [TIMEOUT_S] [NETNS]: wait until something listens on PORT.
b_wait_listen()
{
	local port=$1 t=${2:-20} ns=${3:-} i
	for ((i = 0; i < t * 10; i++)); do
		if [ -n "$ns" ]; then
			ip netns exec "$ns" ss -Hltn "sport = :$port" | grep . >/dev/null && return 0
		else
			ss -Hltn "sport = :$port" | grep . >/dev/null && return 0
		fi
		sleep 0.1
	done
	return 1
}

b_start_rpcbind()
{
	# in this network namespace (pgrep would see other namespaces' too)
	if ss -Hltn 'sport = :111' | grep . >/dev/null; then
		return 0
	fi
	mkdir -p /run/rpcbind
	rpcbind -f -w >"$B_TMP/rpcbind.log" 2>&1 &
	b_track rpcbind $!
	b_wait_listen 111 10 || b_die "rpcbind did not start"
}

# --- network: namespace + veth ---------------------------------------------
# b_net_up: namespace cfsbench-<pid> with veth; the host end is $B_HOST_IP,
# the namespace end $B_NS_IP (a /30 in 10.213.0.0/16 nobody here uses).
b_net_up()
{
	local i n
	for ((i = 0; i < 64; i++)); do
		n=$(((($$ + i) % 250) + 1))
		ip -4 -o addr show | grep " 10\.213\.$n\." >/dev/null || break
	done
	B_NS=cfsbench-$$
	B_VETH_H=cfsbh$$
	B_VETH_N=cfsbn$$
	B_HOST_IP=10.213.$n.1
	B_NS_IP=10.213.$n.2
	ip netns add "$B_NS" || b_die "ip netns add failed"
	ip link add "$B_VETH_H" type veth peer name "$B_VETH_N" || b_die "veth failed"
	ip link set "$B_VETH_N" netns "$B_NS"
	ip addr add "$B_HOST_IP/30" dev "$B_VETH_H"
	ip link set "$B_VETH_H" up
	ip netns exec "$B_NS" ip link set lo up
	ip netns exec "$B_NS" ip addr add "$B_NS_IP/30" dev "$B_VETH_N"
	ip netns exec "$B_NS" ip link set "$B_VETH_N" up
	ip netns exec "$B_NS" ip -4 -o addr show dev "$B_VETH_N" | grep " $B_NS_IP/" >/dev/null ||
		b_die "namespace address $B_NS_IP is not configured"
}

b_net_down()
{
	[ -n "$B_VETH_H" ] && ip link del "$B_VETH_H" 2>/dev/null
	[ -n "$B_NS" ] && ip netns del "$B_NS" 2>/dev/null
	B_VETH_H=''
	B_NS=''
}

# b_shape RATE MTU: tbf at RATE (e.g. 1gbit; "none" = unshaped) on both ends
# of the veth, and the MTU of both ends. The burst is sized for the rate
# (>= rate * 1 ms, at least 64 KiB) and the queue holds 20 ms.
b_shape()
{
	local rate=$1 mtu=$2 burst
	ip link set "$B_VETH_H" mtu "$mtu"
	ip netns exec "$B_NS" ip link set "$B_VETH_N" mtu "$mtu"
	tc qdisc del dev "$B_VETH_H" root 2>/dev/null
	ip netns exec "$B_NS" tc qdisc del dev "$B_VETH_N" root 2>/dev/null
	[ "$rate" = none ] && return 0
	case $rate in
	*gbit) burst=$((${rate%gbit} * 1000000000 / 8 / 1000)) ;;
	*mbit) burst=$((${rate%mbit} * 1000000 / 8 / 1000)) ;;
	*) b_die "rate $rate: use Nmbit or Ngbit" ;;
	esac
	[ "$burst" -ge 65536 ] || burst=65536
	tc qdisc add dev "$B_VETH_H" root tbf rate "$rate" burst "$burst" latency 20ms ||
		b_die "tc tbf on $B_VETH_H failed"
	ip netns exec "$B_NS" tc qdisc add dev "$B_VETH_N" root tbf rate "$rate" burst "$burst" \
		latency 20ms || b_die "tc tbf in the namespace failed"
}

# b_link_bytes: bytes that crossed the veth so far (both directions), as
# counted by the host end.
b_link_bytes()
{
	local s=/sys/class/net/$B_VETH_H/statistics
	echo $(($(cat "$s/rx_bytes") + $(cat "$s/tx_bytes")))
}

# b_link_quiet: waits (at most 3 s) until no byte has crossed the link for
# 0.3 s. A daemon just stopped or started leaves packets in flight (its
# connections' FINs and ACKs, the new pool's connects; a TCG guest answers
# them late), which must not be counted as the next run's traffic.
b_link_quiet()
{
	local last now same=0 i
	last=$(b_link_bytes)
	for ((i = 0; i < 30 && same < 3; i++)); do
		sleep 0.1
		now=$(b_link_bytes)
		if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; fi
		last=$now
	done
}

# --- the upstream: nfs-ganesha (FSAL VFS) in the namespace -------------------
# b_start_upstream EXPORT_DIR: sets UP_NFSPORT UP_MNTPORT UP_PID (ports inside
# the namespace, on $B_NS_IP), UP_EXPORT (the path clients mount: the
# directory itself), UP_PSEUDO (the NFSv4 path, for the peer).
# B_UP_EXPORT_OPTS, when set, goes into the EXPORT block (--upstream-rtmax).
b_start_upstream()
{
	local dir=$1 conf=$B_TMP/up-ganesha.conf
	b_start_rpcbind
	UP_NFSPORT=$(b_free_port)
	UP_MNTPORT=$(b_free_port)
	UP_PSEUDO=/bench
	UP_EXPORT=$dir
	cat >"$conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = $UP_NFSPORT;
	MNT_Port = $UP_MNTPORT;
	NLM_Port = $(b_free_port);
	Rquota_Port = $(b_free_port);
	Bind_addr = $B_NS_IP;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Protocols = 3, 4;
}
NFSV4 { Graceless = true; }
EXPORT {
	Export_Id = 1;
	Path = $dir;
	Pseudo = $UP_PSEUDO;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = 3, 4;
	Transports = TCP;
	SecType = sys;
	FSAL { Name = VFS; }
	${B_UP_EXPORT_OPTS:-}
}
EOF
	ip netns exec "$B_NS" ganesha.nfsd -F -f "$conf" -L "$B_TMP/up-ganesha.log" \
		-p "$B_TMP/up-ganesha.pid" >>"$B_TMP/up-ganesha.log" 2>&1 &
	UP_PID=$!
	b_track ganesha-up "$UP_PID"
	b_wait_listen "$UP_NFSPORT" 30 "$B_NS" || b_die "nfs-ganesha did not start ($B_TMP/up-ganesha.log)"
	b_wait_listen "$UP_MNTPORT" 10 "$B_NS" || b_die "nfs-ganesha mountd did not start"
	local i
	for ((i = 0; i < 100; i++)); do
		nfs-ls "nfs://$B_NS_IP$dir?nfsport=$UP_NFSPORT&mountport=$UP_MNTPORT" >/dev/null 2>&1 &&
			return 0
		sleep 0.2
	done
	b_die "nfs-ganesha does not serve $dir"
}

# --- the upstream: the Linux kernel nfsd in a qemu guest, in the namespace ----
# b_start_knfsd DATA BUILD ROOT: boots tests/guest/server.sh (ROOT's, with
# BUILD's guest image) inside $B_NS, its port forwards on $B_NS_IP, so the
# guest is reached across the shaped veth like ganesha; then writes the data
# set's bigfile, biggerfile, tree and tree-wan into its export with
# bench/nfsput and waits until the copy is older than cachefsd's
# fresh_guard by the guest's clock. Sets UP_NFSPORT UP_MNTPORT UP_PID
# UP_EXPORT (/export) UP_MAXBLOCK (nfsd's max_block_size: its rtmax)
# UP_BOOT_MS UP_KERNEL UP_DISK (export disk size) UP_PUT (nfsput's line).
# KNFSD_MAXBLOCK, when set, is passed on (server.sh sets max_block_size).
# shellcheck disable=SC2034 # the UP_* variables are bench.sh's
b_start_knfsd()
{
	local data=$1 build=$2 root=$3 dir=$B_TMP/knfsd log=$B_TMP/knfsd.log out rc kb names=() n
	for n in bigfile biggerfile tree tree-wan; do
		[ -e "$data/$n" ] && names+=("$n")
	done
	# the disk: what the copy occupies on the host (4 KiB blocks, like ext4's)
	# plus a quarter and 64 MiB for the journal and metadata; at least
	# server.sh's 256 MiB. Sparse: only what is written takes space.
	kb=$(cd "$data" && du -sk "${names[@]}" | awk '{s += $1} END {print s}')
	UP_DISK=$(((kb * 5 / 4 / 1024 + 64) < 256 ? 256 : (kb * 5 / 4 / 1024 + 64)))M
	# the guest has 1 GiB: nfsd's READs come from its page cache only if the
	# data set fits next to the kernel
	[ "$kb" -le $((600 * 1024)) ] ||
		b_log "WARNING: the data set ($((kb / 1024)) MiB) may not stay in the 1 GiB guest's page cache: direct and cold runs would read the guest's disk"
	UP_NFSPORT=$(b_free_port)
	UP_MNTPORT=$(b_free_port)
	UP_EXPORT=/export
	out=$(ip netns exec "$B_NS" env H_BUILD="$build" "$root/tests/guest/server.sh" --dir "$dir" \
		--nfsport "$UP_NFSPORT" --mountport "$UP_MNTPORT" --host "$B_NS_IP" \
		--disk-size "$UP_DISK" 2>>"$log")
	rc=$?
	case $rc in
	0) ;;
	3) b_die "the kernel nfsd guest cannot run here: $(tail -n 1 "$log")" ;;
	*) b_die "the kernel nfsd guest did not boot (server.sh exit $rc): $(tail -n 3 "$log")" ;;
	esac
	UP_PID=$(sed -n 's/^PID=//p' <<<"$out")
	[ -n "$UP_PID" ] || b_die "server.sh printed no PID: $out"
	b_track knfsd-guest "$UP_PID"
	UP_MAXBLOCK=$(sed -n 's/^MAXBLOCK=//p' <<<"$out")
	UP_BOOT_MS=$(sed -n 's/^BOOT_MS=//p' <<<"$out")
	UP_KERNEL=$(sed -n 's/.* kver=\([^ ]*\).*/\1/p' "$build/guest-server/stamp" 2>/dev/null)
	[[ $UP_MAXBLOCK =~ ^[0-9]+$ ]] || b_die "the guest reported no max_block_size: $out"
	b_log "kernel nfsd guest booted in $UP_BOOT_MS ms (disk $UP_DISK); writing ${names[*]} into its export"
	UP_PUT=$("$B_BIN/nfsput" "nfs://$B_NS_IP/export?nfsport=$UP_NFSPORT&mountport=$UP_MNTPORT" \
		"$data" "${names[@]}") || b_die "writing the data set into the guest's export failed"
	b_log "written: $UP_PUT"
	# cachefsd serves, but does not store, data changed less than
	# fresh_guard (2 s) + 1 s ago by its clock while it has not measured
	# the guest's; the files' times are the guest's (skew = guest minus
	# host): wait until they are 4 s old by ours
	local skew
	skew=$(sed -n 's/.*skew_ms=\(-\{0,1\}[0-9]*\).*/\1/p' <<<"$UP_PUT")
	[ "${skew#-}" -le 1000 ] || b_die "the guest's clock is $skew ms off the host's"
	sleep "$(awk -v s="$skew" 'BEGIN {w = 4 + s / 1000; printf "%.3f", (w > 0 ? w : 0)}')"
}

# --- the relay (wan) ---------------------------------------------------------
# b_start_relay DELAY_MS RATE: relays 127.0.0.1:R_NFSPORT / R_MNTPORT to the
# upstream's ports. Sets R_PID.
b_start_relay()
{
	local delay=$1 rate=${2:-0}
	R_NFSPORT=$(b_free_port)
	R_MNTPORT=$(b_free_port)
	"$B_BIN/relay" --delay-ms "$delay" --rate "$rate" \
		--map "127.0.0.1:$R_NFSPORT=$B_NS_IP:$UP_NFSPORT" \
		--map "127.0.0.1:$R_MNTPORT=$B_NS_IP:$UP_MNTPORT" >"$B_TMP/relay.log" 2>&1 &
	R_PID=$!
	b_track relay "$R_PID"
	b_wait_listen "$R_NFSPORT" 10 || b_die "relay did not start"
}

b_stop_relay()
{
	b_stop_pid "${R_PID:-}" 5
	R_PID=''
}

# --- cachefsd ------------------------------------------------------------------
# b_start_cachefsd NAME CACHE_DIR UPHOST UPNFSPORT UPMNTPORT EXPORT [flags...]
# Sets CFS_PORT_<NAME>, CFS_PID_<NAME>. Returns 1 (and logs why) when the
# daemon does not come up, e.g. because it rejects a flag.
b_start_cachefsd()
{
	local name=$1 cache=$2 host=$3 nport=$4 mport=$5 export=$6
	shift 6
	local port v log=$B_TMP/$name-cachefsd.log i more=()
	read -ra more <<<"${B_CFS_ARGS:-}"
	v="CFS_PORT_$name"
	port=${!v:-}
	[ -n "$port" ] || port=$(b_free_port)
	"$B_CACHEFSD" --foreground --upstream "nfs://$host$export?nfsport=$nport&mountport=$mport" \
		--listen "127.0.0.1:$port" --cache-dir "$cache" \
		--stats-file "$B_TMP/$name.stats" "$@" "${more[@]}" >>"$log" 2>&1 &
	local pid=$!
	b_track "cachefsd-$name" "$pid"
	printf -v "CFS_PORT_$name" '%s' "$port"
	printf -v "CFS_PID_$name" '%s' "$pid"
	for ((i = 0; i < 300; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			b_log "cachefsd $name exited: $(tail -n 3 "$log" | tr '\n' ' ')"
			return 1
		fi
		ss -Hltn "sport = :$port" | grep . >/dev/null && return 0
		sleep 0.1
	done
	b_log "cachefsd $name did not start listening"
	return 1
}

b_stop_cachefsd()
{
	local v="CFS_PID_$1"
	b_stop_pid "${!v:-}" 20
	printf -v "CFS_PID_$1" '%s' ''
}

# b_cfs_stats NAME: every counter, fresh (SIGUSR1 writes the stats file).
b_cfs_stats()
{
	local pidv="CFS_PID_$1" f=$B_TMP/$1.stats old new i
	old=$(awk '$1=="seq"{print $2}' "$f" 2>/dev/null)
	kill -USR1 "${!pidv}" 2>/dev/null || return 1
	for ((i = 0; i < 200; i++)); do
		new=$(awk '$1=="seq"{print $2}' "$f" 2>/dev/null)
		[ -n "$new" ] && [ "$new" != "$old" ] && break
		sleep 0.02
	done
	cat "$f"
}

# b_proc_cpu PID: user+system CPU seconds of a process so far.
b_proc_cpu()
{
	awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null
}

# b_proc_hwm PID: peak RSS (VmHWM) in KiB; b_proc_hwm_reset PID resets it.
b_proc_hwm() { awk '$1=="VmHWM:"{print $2}' "/proc/$1/status" 2>/dev/null; }
b_proc_hwm_reset() { echo 5 >"/proc/$1/clear_refs" 2>/dev/null || true; }

# --- the peer: nfs-ganesha with FSAL PROXY_V4 ----------------------------------
# b_start_peer HOST NFSPORT: a second ganesha (own ports, pid file, log) on
# 127.0.0.1 proxying to the upstream's NFSv4 service at HOST:NFSPORT. NFSv3
# clients mount $UP_PSEUDO on it. Sets PEER_NFSPORT PEER_MNTPORT PEER_PID.
b_start_peer()
{
	local host=$1 nport=$2 conf=$B_TMP/peer-ganesha.conf
	PEER_NFSPORT=$(b_free_port)
	PEER_MNTPORT=$(b_free_port)
	cat >"$conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = $PEER_NFSPORT;
	MNT_Port = $PEER_MNTPORT;
	NLM_Port = $(b_free_port);
	Rquota_Port = $(b_free_port);
	Bind_addr = 127.0.0.1;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Protocols = 3, 4;
}
NFSV4 { Graceless = true; }
EXPORT {
	Export_Id = 1;
	Path = $UP_PSEUDO;
	Pseudo = $UP_PSEUDO;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = 3, 4;
	Transports = TCP;
	SecType = sys;
	FSAL { Name = PROXY_V4; Srv_Addr = $host; NFS_Port = $nport; }
}
EOF
	ganesha.nfsd -F -f "$conf" -L "$B_TMP/peer-ganesha.log" -p "$B_TMP/peer-ganesha.pid" \
		>>"$B_TMP/peer-ganesha.log" 2>&1 &
	PEER_PID=$!
	b_track ganesha-peer "$PEER_PID"
	b_wait_listen "$PEER_NFSPORT" 30 || { b_log "peer ganesha did not start"; return 1; }
	b_wait_listen "$PEER_MNTPORT" 10 || { b_log "peer ganesha mountd did not start"; return 1; }
	local i
	for ((i = 0; i < 100; i++)); do
		nfs-ls "nfs://127.0.0.1$UP_PSEUDO?nfsport=$PEER_NFSPORT&mountport=$PEER_MNTPORT" \
			>/dev/null 2>&1 && return 0
		sleep 0.2
	done
	b_log "peer ganesha does not serve $UP_PSEUDO"
	return 1
}

b_stop_peer()
{
	b_stop_pid "${PEER_PID:-}" 15
	PEER_PID=''
}

# b_drop_caches: write back and drop the page cache, dentries and inodes.
b_drop_caches()
{
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# b_warm_export DIR: read the data set back into the page cache. The filer
# is modelled as holding its data set in RAM in every scenario, so a drop
# meant for the proxy's cache does not make the upstream's disk part of the
# measurement.
b_warm_export()
{
	find "$1" -type f -print0 | xargs -0 cat >/dev/null
}

# b_scale_set SCALE SEED: the data set's sizes for a scale (bench.sh's and
# fleet.sh's, so one generated data set serves both): big, bigger,
# tree_spec, wan_spec and benchgen's arguments gen_args. 1: no such scale.
b_scale_set()
{
	case $1 in
	full)
		big=100M bigger=200M
		tree_spec=files=20000,dirs=350,bytes=340000000
		wan_spec=files=1000,dirs=40,bytes=17000000 ;;
	quick)
		big=16M bigger=32M
		tree_spec=files=1000,dirs=40,bytes=17000000
		wan_spec=files=100,dirs=8,bytes=1700000 ;;
	tiny)
		big=3M bigger=5M
		tree_spec=files=40,dirs=6,bytes=400000
		wan_spec=files=20,dirs=3,bytes=200000 ;;
	*) return 1 ;;
	esac
	# shellcheck disable=SC2034 # read by the caller
	gen_args=(--seed "$2" --big "bigfile=$big" --big "biggerfile=$bigger"
		--tree "tree:$tree_spec" --tree "tree-wan:$wan_spec")
}
