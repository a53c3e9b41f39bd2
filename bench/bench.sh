#!/bin/bash
# bench/bench.sh — does cachefsd help? Few big files and many small files,
# cold and warm, strict and ttl, next to direct access and the nfs-ganesha
# PROXY_V4 peer, over loopback, a 1 Gbit/s link and a 100 Mbit/s link with
# added delay; the upstream is nfs-ganesha or the Linux kernel nfsd in a
# qemu guest. See docs/bench.md for what each part means.
#
# usage: bench/bench.sh [options]            (as root; `make bench` runs it)
#   --quick               QUICK=1: quick data set, n=3, 1 warm-up round
#   --scale full|quick|tiny   data set size (default full; --quick: quick)
#   --n N                 measured runs per cell (default 20; quick 3)
#   --warmup N            warm-up rounds, not recorded (default 5; quick 1)
#   --budget S            per (profile, workload): start no new measured round
#                         after S seconds once 3 rounds are in, and no new
#                         warm-up round after S/4 seconds once one is done
#                         (0 = off; the report shows the n actually measured)
#   --profiles LIST       loopback,lan,wan (default all)
#   --workloads LIST      cat-big,cat-bigger,tar (default all)
#   --scenarios LIST      direct,peer,disk,cold,warm-disk,warm-page (default
#                         all); disk: the local disk reading a copy of the
#                         file just written to the cache file system (big
#                         files, loopback profile), warm-disk's reference
#   --modes LIST          strict,ttl (default both; ttl = --meta-ttl 60)
#   --seed N              data set seed (default 1)
#   --tree DIR            a real tree instead of the generated one (copied
#                         once into the data set; used for tar on every profile)
#   --wan-full-tree       tar over wan walks the full tree, not tree-wan
#   --lan-rate R / --wan-rate R / --wan-delay-ms D   (1gbit / 100mbit / 5)
#   --window N            READs in flight for one file (default 4)
#   --upstream-rtmax N    the upstream export's MaxRead = PrefRead = N bytes
#                         (a filer with a READ limit, e.g. 65536 like NetApp
#                         ONTAP); the bench client then reads what each
#                         server's FSINFO offers, as a kernel client would:
#                         N direct, a chunk through cachefsd
#   --upstream-version 3|4|3,4   how cachefsd talks to the filer (default 3).
#                         4 adds a direct-v4 row (bench/nfs4bench: libnfs's
#                         own NFSv4.0 client reading the filer's pseudo path)
#                         and, per mode, v4-MODE-cold / -warm-disk /
#                         -warm-page rows: cachefsd with --upstream-version 4
#                         in front of the same export over the same link, its
#                         clients still on NFSv3; 3,4 runs both side by side
#                         in every round (docs/bench.md, "NFSv4 upstream").
#                         ganesha only
#   --upstream ganesha|knfsd   the filer (default ganesha: nfs-ganesha FSAL
#                         VFS exporting the data set directory). knfsd: the
#                         Linux kernel nfsd in a qemu TCG guest
#                         (tests/guest/server.sh) run in the bench's network
#                         namespace, so the profiles' shaping applies; the
#                         data set is written into its ext4 export over NFS
#                         (bench/nfsput). Defaults then: --scale quick, the
#                         scenarios direct,cold,warm-disk,warm-page (no peer:
#                         the guest serves NFSv3 only), the bench client
#                         reads what FSINFO offers (direct: the guest's
#                         rtmax, 128 KiB; through cachefsd: a chunk);
#                         --upstream-rtmax sets nfsd's max_block_size. Needs
#                         the nfs-kernel-server .deb fetched first, outside
#                         isolate.sh: tests/guest/mkimage.sh --fetch BUILD/guest-server
#   --cachefsd-args "A"   extra cachefsd flags for every cachefsd started
#                         (e.g. "--busy-poll 0"), recorded in meta.txt
#   --guest               also run the kernel client in the qemu guest (wan)
#   --guest-only          only the guest part (no libnfs runs)
#   --guest-n N           runs per guest scenario (default 3)
#   --mount DIRECT PROXIED   --mount mode for real machines: no servers are
#                         started; the same commands run on both mounts
#                         (see bench/mount.sh)
#   --out DIR             results directory (default bench/results/<date>)
#   --build DIR           where cachefsd and the bench tools are (build)
#   --build-b DIR         a second build to compare (A = --build, B = this):
#                         every cachefsd row (cold, warm-disk, warm-page, each
#                         mode) runs with both daemons in every round, A's
#                         block then B's (B's first in even rounds), each with
#                         its own cache; direct, peer and disk run once per
#                         round as without it. The bench tools come from
#                         --build; only the daemon differs. raw.csv and
#                         summary.csv gain a build column, the report a
#                         "Two builds side by side" section and compare.csv
#                         (B/A per cell, flagged where the difference is
#                         beyond the combined SEM). Not with --mount; --guest
#                         runs A only. Before and after a change:
#                           git worktree add /tmp/before COMMIT
#                           make -C /tmp/before RELEASE=1 -j2 all
#                           bench/bench.sh --quick --build build-release \
#                             --build-b /tmp/before/build-release \
#                             --label-a after --label-b before
#                         (docs/bench.md, "Two builds side by side")
#   --label-a NAME / --label-b NAME   names of the two builds in the report
#                         (default A and B; letters, digits, . _ -)
#   --keep                keep the temp dir (logs) after the run
#   --fleet [OPTIONS]     (first) the fleet profile instead: 1, 3 independent,
#                         3 cascaded and 3 peer-sharing nodes over the wan
#                         link, filer bytes and warm ratios; runs
#                         bench/fleet.sh with the options that follow
#                         (bench/fleet.sh --help; docs/bench.md, "Fleet (wan)")
# BENCH_STATS=1 in the environment keeps every cachefsd row's counters
# before and after the run (raw/stats/PROFILE-WORKLOAD-ROW[-BUILD]-RUN-{0,1}.txt):
# which upstream procedure took how long (upstream_rtt_us_*), for instance
set -u
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cmdline="bench/bench.sh $*"
if [ "${1:-}" = --fleet ]; then
	shift
	BENCH_CMD=${BENCH_CMD:-$cmdline} exec "$here/fleet.sh" "$@"
fi
[ -n "${BENCH_CMD:-}" ] && cmdline=$BENCH_CMD

scale='' n='' warmup='' budget=0 seed=1 quick=0
profiles=loopback,lan,wan
workloads=cat-big,cat-bigger,tar
scenarios=direct,peer,disk,cold,warm-disk,warm-page
modes=strict,ttl
tree_src='' wan_full_tree=0
lan_rate=1gbit wan_rate=100mbit wan_delay=5
window=4 guest=0 guest_n=3 up_rtmax='' upstream=ganesha scenarios_set=0 up_versions=3
out='' build=$root/build build_b='' label_a=A label_b=B
mount_args=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; shift ;;
	--scale) scale=${2:?}; shift 2 ;;
	--n) n=${2:?}; shift 2 ;;
	--warmup) warmup=${2:?}; shift 2 ;;
	--budget) budget=${2:?}; shift 2 ;;
	--profiles) profiles=${2:?}; shift 2 ;;
	--workloads) workloads=${2:?}; shift 2 ;;
	--scenarios) scenarios=${2:?}; scenarios_set=1; shift 2 ;;
	--modes) modes=${2:?}; shift 2 ;;
	--seed) seed=${2:?}; shift 2 ;;
	--tree) tree_src=$(cd "${2:?}" && pwd) || exit 2; shift 2 ;;
	--wan-full-tree) wan_full_tree=1; shift ;;
	--lan-rate) lan_rate=${2:?}; shift 2 ;;
	--wan-rate) wan_rate=${2:?}; shift 2 ;;
	--wan-delay-ms) wan_delay=${2:?}; shift 2 ;;
	--window) window=${2:?}; shift 2 ;;
	--upstream-rtmax) up_rtmax=${2:?}; shift 2 ;;
	--upstream) upstream=${2:?}; shift 2 ;;
	--upstream-version) up_versions=${2:?}; shift 2 ;;
	--cachefsd-args) B_CFS_ARGS=$2; shift 2 ;;
	--guest) guest=1; shift ;;
	--guest-only) guest=1; profiles=''; shift ;;
	--guest-n) guest_n=${2:?}; shift 2 ;;
	--mount) mount_args=("${2:?}" "${3:?}"); shift 3 ;;
	--out) out=${2:?}; shift 2 ;;
	--build) build=$(cd "${2:?}" && pwd) || exit 2; shift 2 ;;
	--build-b) build_b=$(cd "${2:?}" && pwd) || exit 2; shift 2 ;;
	--label-a) label_a=${2:?}; shift 2 ;;
	--label-b) label_b=${2:?}; shift 2 ;;
	--keep) export BENCH_KEEP=1; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
case $up_versions in
3 | 4 | 3,4 | 4,3) ;;
*) echo "bench: --upstream-version 3, 4 or 3,4" >&2; exit 2 ;;
esac
# has_v N: cachefsd rows over upstream version N are asked for
has_v() { [[ ,$up_versions, == *,$1,* ]]; }
case $upstream in
ganesha) ;;
knfsd)
	has_v 3 && ! has_v 4 ||
		{ echo "bench: --upstream knfsd runs --upstream-version 3 only (the guest's nfsd serves NFSv3 here)" >&2; exit 2; }
	# the guest moves ~15-20 MB/s (TCG): the quick data set (70 MB) keeps a
	# round of every scenario near a minute; see docs/bench.md
	scale=${scale:-quick}
	[ $scenarios_set = 1 ] || scenarios=direct,cold,warm-disk,warm-page
	[[ ,$scenarios, != *,peer,* ]] ||
		{ echo "bench: --upstream knfsd has no peer row: the guest's nfsd serves NFSv3 only, the PROXY_V4 peer needs NFSv4" >&2; exit 2; }
	[ $guest = 0 ] ||
		{ echo "bench: --guest with --upstream knfsd is not supported (two TCG guests on this machine; the client guest mounts a host directory export)" >&2; exit 2; }
	[ ${#mount_args[@]} = 0 ] || { echo "bench: --mount and --upstream are exclusive" >&2; exit 2; } ;;
*) echo "bench: --upstream ganesha|knfsd" >&2; exit 2 ;;
esac
if [ $quick = 1 ]; then
	scale=${scale:-quick}
	n=${n:-3}
	warmup=${warmup:-1}
fi
scale=${scale:-full}
n=${n:-20}
warmup=${warmup:-5}
case $n$warmup$budget$seed$window in *[!0-9]*) echo "bench: numbers expected" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] || { echo "bench: --n must be >= 1" >&2; exit 2; }
# ab=1: two builds side by side (--build-b); the labels go into raw.csv's
# build column and the report's headings, so no commas or spaces
ab=0
if [ -n "$build_b" ]; then
	ab=1
	[[ $label_a =~ ^[A-Za-z0-9._-]+$ && $label_b =~ ^[A-Za-z0-9._-]+$ ]] ||
		{ echo "bench: --label-a/--label-b take letters, digits, . _ -" >&2; exit 2; }
	[ "$label_a" != "$label_b" ] || { echo "bench: --label-a and --label-b must differ" >&2; exit 2; }
	[ ${#mount_args[@]} = 0 ] ||
		{ echo "bench: --build-b compares daemons the bench starts; --mount starts none" >&2; exit 2; }
fi
rsize_args=()
if [ -n "$up_rtmax" ]; then
	[[ $up_rtmax =~ ^[0-9]+$ ]] && [ "$up_rtmax" -ge 4096 ] && [ "$up_rtmax" -le 1048576 ] ||
		{ echo "bench: --upstream-rtmax takes bytes, 4096..1048576" >&2; exit 2; }
	# read by b_start_upstream (bench/lib/env.sh) / tests/guest/server.sh
	export B_UP_EXPORT_OPTS="MaxRead = $up_rtmax; PrefRead = $up_rtmax;"
	export KNFSD_MAXBLOCK=$up_rtmax
	# each path reads what its server offers, as a kernel client takes it
	# from FSINFO: direct the filer's limit, cachefsd a chunk (it sends a
	# forwarded READ above the filer's limit in pieces)
	rsize_args=(--rsize fsinfo)
fi

date_tag=$(date +%Y-%m-%dT%H%M)
out=${out:-$root/bench/results/$date_tag}
mkdir -p "$out/raw"
out=$(cd "$out" && pwd)

if [ ${#mount_args[@]} -gt 0 ]; then
	exec "$here/mount.sh" "${mount_args[@]}" --n "$n" --warmup "$warmup" --out "$out"
fi

B_BIN=$build/bench
B_CACHEFSD=$build/cachefsd
for t in nfsbench nfs4bench nfsput benchgen benchstat relay relayprobe; do
	[ -x "$B_BIN/$t" ] || { echo "bench: $B_BIN/$t missing (make bench-tools)" >&2; exit 2; }
done
[ -x "$B_CACHEFSD" ] || { echo "bench: $B_CACHEFSD missing (make)" >&2; exit 2; }
[ $ab = 0 ] || [ -x "$build_b/cachefsd" ] || { echo "bench: $build_b/cachefsd missing (make)" >&2; exit 2; }

# shellcheck source=bench/lib/env.sh
. "$here/lib/env.sh"
b_init
# a private copy: a rebuild of build/cachefsd during a long run must not
# mix two daemons in one report
cp "$B_CACHEFSD" "$B_TMP/cachefsd"
B_CACHEFSD=$B_TMP/cachefsd
# the daemon of each build (cfs_bin_a, cfs_bin_b): run_one passes it to
# b_start_cachefsd as B_CACHEFSD
cfs_bin_a=$B_CACHEFSD cfs_bin_b=''
if [ $ab = 1 ]; then
	cp "$build_b/cachefsd" "$B_TMP/cachefsd-b"
	cfs_bin_b=$B_TMP/cachefsd-b
fi
# everything this run prints goes to the log too
exec > >(tee -a "$out/raw/bench.log") 2>&1

# --- the data set -------------------------------------------------------------
b_scale_set "$scale" "$seed" || { echo "bench: --scale full|quick|tiny" >&2; exit 2; }
key=$(printf '%s\n' "v$(sed -n 's/^#define DS_VERSION //p' "$here/dataset.h")" \
	"${gen_args[@]}" "$tree_src" | sha256sum | cut -c1-16)
data_root=$root/build/bench-data
DATA=$data_root/$scale-seed$seed-$key
if [ ! -f "$DATA/.complete" ]; then
	need_kb=$(( ( ${big%M} + ${bigger%M} ) * 1024 + 400000 ))
	avail_kb=$(df -Pk "$root/build" | awk 'NR==2{print $4}')
	[ "$avail_kb" -gt $((need_kb * 3)) ] ||
		b_die "not enough space in $root/build for the data set and caches ($avail_kb KiB free)"
	b_log "generating the $scale data set into $DATA"
	rm -rf "$DATA"
	mkdir -p "$data_root"
	"$B_BIN/benchgen" --out "$DATA" "${gen_args[@]}" || b_die "benchgen failed"
	if [ -n "$tree_src" ]; then
		rm -rf "$DATA/tree" "$DATA/tree-wan"
		cp -a "$tree_src" "$DATA/tree" || b_die "copying $tree_src failed"
		# the manifest of a real tree: sizes only (nfsbench --verify
		# compares sizes and hashes; hash with the same tool)
		grep -v -E ' (tree|tree-wan)/' "$DATA/MANIFEST" >"$DATA/MANIFEST.new"
		(cd "$DATA" && find tree -type f -print0 | sort -z |
			xargs -0 -r stat -c '%s %n') >>"$DATA/MANIFEST.sizes"
		mv "$DATA/MANIFEST.new" "$DATA/MANIFEST"
	fi
	touch "$DATA/.complete"
else
	b_log "reusing the data set $DATA"
fi
# cachefsd serves, but does not store, data of a file changed less than
# fresh_guard (2 s) + a tick + 1 s ago while it has not measured the
# filer's clock; a data set just made would make the first cold runs store
# nothing and their warm runs miss. Let it age.
age_wait=$(find "$DATA" -printf '%C@\n' | awk -v now="$(date +%s.%N)" -v g=4 \
	'$1 > m {m = $1} END {w = m + g - now; printf "%.2f", (w > 0 ? w : 0)}')
if [ "$age_wait" != 0.00 ]; then
	b_log "waiting ${age_wait}s for the data set to be older than fresh_guard"
	sleep "$age_wait"
fi
manifest_bytes() # PREFIX: bytes of regular files under PREFIX (or the file)
{
	if [ -n "$tree_src" ] && [[ $1 == tree* ]]; then
		awk -v p="$1" '$2==p || index($2, p"/")==1 {s+=$1} END{print s+0}' "$DATA/MANIFEST.sizes"
	else
		awk -v p="$1" '$3==p || index($3, p"/")==1 {s+=$1} END{print s+0}' "$DATA/MANIFEST"
	fi
}
manifest_files()
{
	if [ -n "$tree_src" ] && [[ $1 == tree* ]]; then
		awk -v p="$1" '$2==p || index($2, p"/")==1 {s++} END{print s+0}' "$DATA/MANIFEST.sizes"
	else
		awk -v p="$1" '$3==p || index($3, p"/")==1 {s++} END{print s+0}' "$DATA/MANIFEST"
	fi
}

workload_path() # WORKLOAD PROFILE
{
	case $1 in
	cat-big) echo bigfile ;;
	cat-bigger) echo biggerfile ;;
	tar)
		if [ "$2" = wan ] && [ $wan_full_tree = 0 ] && [ -z "$tree_src" ]; then
			echo tree-wan
		else
			echo tree
		fi ;;
	esac
}

# --- what ttl needs ---------------------------------------------------------------
ttl_flag=(--meta-ttl 60)
ttl_ok=1
# (grep reads all of it: with pipefail, `grep -q` quitting early could kill
# cachefsd with SIGPIPE on its second write of the help and fail the test)
if [[ ,$modes, == *,ttl,* ]] && ! "$B_CACHEFSD" --help 2>&1 | grep -- '--meta-ttl' >/dev/null; then
	ttl_ok=0
	b_log "this cachefsd has no --meta-ttl: the ttl rows are reported as not available"
fi
# B's own: its ttl rows drop out alone (ttl_ok_b, read through ttl_ok$bs)
ttl_ok_b=1
if [ $ab = 1 ] && [[ ,$modes, == *,ttl,* ]] && ! "$cfs_bin_b" --help 2>&1 | grep -- '--meta-ttl' >/dev/null; then
	ttl_ok_b=0
	b_log "cachefsd $label_b has no --meta-ttl: its ttl rows are reported as not available"
fi

# --- meta ---------------------------------------------------------------------------
{
	echo "date=$date_tag"
	echo "command=$cmdline"
	echo "git=$(git -C "$root" rev-parse --short HEAD 2>/dev/null)$(git -C "$root" diff --quiet HEAD -- cachefsd proto include 2>/dev/null || echo -dirty)"
	echo "cachefsd=$("$B_CACHEFSD" --version 2>&1 | head -n 1)"
	echo "host=$(uname -srm)"
	echo "cpus=$(nproc)"
	echo "mem=$(awk '/MemTotal/{print int($2/1024)" MiB"}' /proc/meminfo)"
	echo "upstream=$upstream"
	echo "upstream_versions=$up_versions"
	echo "ganesha=$(dpkg-query -W -f='${Version}' nfs-ganesha 2>/dev/null)"
	echo "scale=$scale"
	echo "seed=$seed"
	echo "n=$n"
	echo "warmup=$warmup"
	echo "budget=$budget"
	echo "window=$window"
	echo "upstream_rtmax=${up_rtmax:-default}"
	echo "cachefsd_args=${B_CFS_ARGS:-}"
	echo "profiles=$profiles"
	echo "workloads=$workloads"
	echo "scenarios=$scenarios"
	echo "modes=$modes"
	echo "lan_rate=$lan_rate"
	echo "wan_rate=$wan_rate"
	echo "wan_delay_ms=$wan_delay"
	echo "tar_over_wan=$(workload_path tar wan)"
	echo "data=$DATA"
	echo "ttl_available=$ttl_ok"
	echo "load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)"
	if [ $ab = 1 ]; then
		# the second build (--build-b); its git from the tree it sits in
		# (e.g. a `git worktree add` of the commit before)
		echo "label_a=$label_a"
		echo "label_b=$label_b"
		echo "build_a=$build"
		echo "build_b=$build_b"
		echo "git_a=$(git -C "$build/.." rev-parse --short HEAD 2>/dev/null)$(git -C "$build/.." diff --quiet HEAD -- cachefsd proto include 2>/dev/null || echo -dirty)"
		echo "git_b=$(git -C "$build_b/.." rev-parse --short HEAD 2>/dev/null)$(git -C "$build_b/.." diff --quiet HEAD -- cachefsd proto include 2>/dev/null || echo -dirty)"
		echo "cachefsd_b=$("$cfs_bin_b" --version 2>&1 | head -n 1)"
		echo "ttl_available_b=$ttl_ok_b"
	fi
} >"$out/meta.txt"
cp "$DATA/SUMMARY" "$out/dataset.txt"
cat "$out/meta.txt"

csv=$out/raw.csv
# with --build-b every line ends in the build column: the build's label
# for a cachefsd row, empty for direct, peer and disk
csv_build=''
[ $ab = 1 ] && csv_build=',build'
echo "profile,client,workload,row,scenario,mode,run,seconds,bytes,expect_bytes,files,calls,link_bytes,proxy_cpu_s,proxy_rss_kib,read_hits,read_misses,hit_ratio,fills,fill_bytes,upstream_calls,bytes_from_cache$csv_build" >"$csv"

# --- network and upstream --------------------------------------------------------------
# warm_export PATH: the filer holds its data set in RAM in every scenario
# (b_warm_export). The guest's page cache is its own: the host's drops do
# not reach it, and the data set written into it stays there (1 GiB guest).
warm_export() { [ "$upstream" = knfsd ] || b_warm_export "$@"; }

b_net_up
case $upstream in
ganesha)
	b_start_upstream "$DATA"
	b_log "upstream: nfs-ganesha in netns $B_NS at $B_NS_IP:$UP_NFSPORT (mount $UP_MNTPORT)"
	b_warm_export "$DATA" ;;
knfsd)
	b_start_knfsd "$DATA" "$build" "$root"
	b_log "upstream: kernel nfsd in a qemu guest in netns $B_NS at $B_NS_IP:$UP_NFSPORT (mount $UP_MNTPORT), rtmax $UP_MAXBLOCK"
	# what a kernel client takes from FSINFO: direct the guest's rtmax,
	# cachefsd a chunk
	rsize_args=(--rsize fsinfo)
	{
		echo "knfsd_kernel=$UP_KERNEL"
		echo "knfsd_maxblock=$UP_MAXBLOCK"
		echo "knfsd_boot_ms=$UP_BOOT_MS"
		echo "knfsd_disk=$UP_DISK"
		echo "knfsd_put=$UP_PUT"
	} >>"$out/meta.txt" ;;
esac

# --- machine reference figures (issue 3's "min(local disk, loopback)") -------------
{
	b_drop_caches
	dd if="$DATA/bigfile" of=/dev/null bs=1M 2>&1 | awk '/copied/{print "disk_read_bigfile=" $0}'
	b_warm_export "$DATA"
	ep=$(b_free_port)
	"$B_BIN/relayprobe" echo --listen "127.0.0.1:$ep" &
	epid=$!
	b_track probe-echo "$epid"
	b_wait_listen "$ep" 10
	echo "loopback_tcp_echo_$("$B_BIN/relayprobe" bulk --connect "127.0.0.1:$ep" --bytes 1073741824)"
	b_stop_pid "$epid"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

# rows: label scenario mode version [build: a|b, with --build-b];
# version: the upstream NFS version of the row's cachefsd (or of its
# direct client: direct-v4)
rows=()
for s in ${scenarios//,/ }; do
	case $s in
	direct)
		rows+=("direct direct - 3")
		has_v 4 && rows+=("direct-v4 direct4 - 4") ;;
	peer) rows+=("ganesha-proxy peer - 4") ;;
	disk) rows+=("local-disk disk - 3") ;;
	esac
done
# two builds: each mode's block (cold, warm-disk, warm-page: one daemon and
# cache that the block's rows hand on) runs for A, then for B; rows_ba is
# the round with B's blocks first, so that neither build always runs
# second (odd rounds rows, even rounds rows_ba)
rows_ba=("${rows[@]}")
for blkv in 3 4; do
for m in ${modes//,/ }; do
	has_v "$blkv" || continue
	vp=''
	[ "$blkv" = 4 ] && vp=v4-
	blk=()
	for s in ${scenarios//,/ }; do
		case $s in
		cold | warm-disk | warm-page) blk+=("$vp$m-$s $s $m $blkv") ;;
		esac
	done
	[ ${#blk[@]} -gt 0 ] || continue
	if [ $ab = 0 ]; then
		rows+=("${blk[@]}")
	else
		rows+=("${blk[@]/%/ a}" "${blk[@]/%/ b}")
		rows_ba+=("${blk[@]/%/ b}" "${blk[@]/%/ a}")
	fi
done
done

# --- the local disk, side by side with warm-disk ------------------------------------------
# disk_run PROFILE WORKLOAD ROWLABEL RUN PATH: what the cache's own file
# system gives for a file as warm-disk finds it: a copy of the workload's
# file is written next to the cache directories, synced, the page cache
# dropped (and the export warmed again, as warm-disk does), then read
# sequentially with dd bs=1M. Measured in every round, so it sees the same
# disk (and the same host underneath the VM) as the warm-disk runs.
disk_run()
{
	local profile=$1 wl=$2 label=$3 run=$4 path=$5 f=$B_TMP/disk-ref out bytes sec
	rm -f "$f"
	cp "$DATA/$path" "$f" || b_die "cannot copy $path for the disk reference"
	b_drop_caches
	warm_export "$DATA/$path"
	out=$(LC_ALL=C dd if="$f" of=/dev/null bs=1M 2>&1 | grep copied) ||
		b_die "dd of the disk reference failed"
	rm -f "$f"
	bytes=${out%% bytes*}
	sec=$(sed -n 's/.* copied, \([0-9.e-]*\) s.*/\1/p' <<<"$out")
	printf '  %-9s %-10s %-20s %s %8.3f s\n' "$profile" "$wl" "$label" \
		"$([ "$run" = 0 ] && echo warm-up || echo "run $run")" "$sec" >&2
	[ "$run" = 0 ] && return 0
	echo "$profile,libnfs,$wl,$label,disk,-,$run,$sec,$bytes,$(manifest_bytes "$path"),1,0,0,,,,,,,,,${csv_build:+,}" >>"$csv"
}

# --- one measured (or warm-up) run -----------------------------------------------------
# run_one PROFILE WORKLOAD ROWLABEL SCENARIO MODE RUN(0 = warm-up) VERIFY VERSION [BUILD]
# VERSION: 3, or 4 for a direct-v4 row and a cachefsd over NFSv4 (daemon
# <mode>4). BUILD (--build-b only): a or b, whose cachefsd serves a cachefsd
# row; B's daemon is named <mode>_b (its own port, cache, stats and log)
run_one()
{
	local profile=$1 wl=$2 label=$3 scen=$4 mode=$5 run=$6 verify=$7 ver=${8:-3} bld=${9:-}
	local path host port mport xport proxy_pid='' cfs='' extra=() tool=nfsbench
	local upx=$UP_EXPORT
	# shown: the row in log lines; bcol: raw.csv's build column
	local shown=$label bcol='' bs='' bin=$cfs_bin_a
	if [ $ab = 1 ] && [ -n "$bld" ]; then
		case $bld in
		a) bcol=$label_a ;;
		b) bcol=$label_b bs=_b bin=$cfs_bin_b ;;
		esac
		shown="$label [$bcol]"
	fi
	path=$(workload_path "$wl" "$profile")
	case $scen in
	disk)
		[ "$profile" = loopback ] && [[ $wl == cat-* ]] || return 0
		disk_run "$profile" "$wl" "$label" "$run" "$path"
		return 0 ;;
	direct)
		host=$T_HOST port=$T_NFSPORT mport=$T_MNTPORT xport=$UP_EXPORT ;;
	direct4)
		# libnfs's NFSv4.0 client, the pseudo path, no MOUNT
		host=$T_HOST port=$T_NFSPORT mport=$T_NFSPORT xport=$UP_PSEUDO tool=nfs4bench ;;
	peer)
		[ -n "${PEER_PID:-}" ] || return 0
		host=127.0.0.1 port=$PEER_NFSPORT mport=$PEER_MNTPORT xport=$UP_PSEUDO
		proxy_pid=$PEER_PID ;;
	*)
		cfs=$mode$bs
		if [ "$ver" = 4 ]; then
			# over NFSv4: the pseudo path, clients mount that path
			cfs=$mode${bs}4 upx=$UP_PSEUDO
			extra=(--upstream-version 4)
		fi
		local tv=ttl_ok$bs
		if [ "$mode" = ttl ]; then
			[ "${!tv}" = 1 ] || return 0
			extra+=("${ttl_flag[@]}")
		fi
		# one cache per profile: a warm-disk row without a cold one before
		# it must not meet the cache another profile's upstream made (the
		# daemon refuses it); its warm-up rounds fill this one
		local cache=$B_TMP/cache-$profile-$cfs pv="CFS_PID_$cfs"
		case $scen in
		cold)
			b_stop_cachefsd "$cfs"
			rm -rf "$cache"
			b_drop_caches
			warm_export "$DATA/$path" ;;
		warm-disk)
			b_stop_cachefsd "$cfs"
			b_drop_caches
			warm_export "$DATA/$path" ;;
		warm-page) ;;
		esac
		if [ -z "${!pv:-}" ]; then
			# (B_CACHEFSD for this call only: the daemon of this row's build)
			if ! B_CACHEFSD=$bin b_start_cachefsd "$cfs" "$cache" "$T_HOST" "$T_NFSPORT" "$T_MNTPORT" "$upx" \
				"${extra[@]}"; then
				[ "$mode" = ttl ] && { printf -v "$tv" 0; b_log "ttl mode not available (cachefsd${bcol:+ $bcol} did not start with ${ttl_flag[*]})"; return 0; }
				b_die "cachefsd ($mode${bcol:+, $bcol}) did not start"
			fi
		fi
		pv="CFS_PID_$cfs"
		proxy_pid=${!pv}
		host=127.0.0.1 pv="CFS_PORT_$cfs" port=${!pv} mport=${!pv} xport=$upx ;;
	esac

	local cpu0='' cpu1='' rss='' l0 l1 st0='' st1='' res vfile=''
	if [ -n "$proxy_pid" ]; then
		cpu0=$(b_proc_cpu "$proxy_pid")
		b_proc_hwm_reset "$proxy_pid"
	fi
	[ -n "$cfs" ] && st0=$(b_cfs_stats "$cfs")
	# a row that restarted its daemon waits for the link to go quiet
	case $scen in cold | warm-disk) b_link_quiet ;; esac
	l0=$(b_link_bytes)
	local vargs=()
	if [ "$verify" = 1 ]; then
		vfile=$B_TMP/verify.txt
		vargs=(--verify "$vfile")
	fi
	res=$("$B_BIN/$tool" "${wl%%-*}" --host "$host" --port "$port" --mountport "$mport" \
		--export "$xport" --path "$path" --window "$window" --timeout 600 "${rsize_args[@]}" \
		"${vargs[@]}") ||
		b_die "nfsbench $wl via $shown ($profile) failed"
	l1=$(b_link_bytes)
	if [ -n "$proxy_pid" ]; then
		cpu1=$(b_proc_cpu "$proxy_pid")
		rss=$(b_proc_hwm "$proxy_pid")
	fi
	[ -n "$cfs" ] && st1=$(b_cfs_stats "$cfs")
	if [ -n "$cfs" ] && [ -n "${BENCH_STATS:-}" ]; then
		mkdir -p "$out/raw/stats"
		printf '%s\n' "$st0" >"$out/raw/stats/$profile-$wl-$label${bcol:+-$bcol}-$run-0.txt"
		printf '%s\n' "$st1" >"$out/raw/stats/$profile-$wl-$label${bcol:+-$bcol}-$run-1.txt"
	fi
	if [ -n "$vfile" ]; then
		local want
		if [ -n "$tree_src" ] && [[ $path == tree* ]]; then
			want=$(awk -v p="$path" 'index($2, p"/")==1 {print $1, $2}' "$DATA/MANIFEST.sizes" | sort)
			[ "$want" = "$(awk '{print $1, $3}' "$vfile" | sort)" ] ||
				b_die "VERIFY: $wl via $shown ($profile): sizes differ from the data set"
		else
			want=$(awk -v p="$path" '$3==p || index($3, p"/")==1' "$DATA/MANIFEST" | sort)
			[ "$want" = "$(sort "$vfile")" ] ||
				b_die "VERIFY: $wl via $shown ($profile): bytes differ from the data set"
		fi
		b_log "verified: $wl via $shown ($profile): every file's size and xxh64 match"
	fi
	local sec bytes files calls
	sec=$(sed -n 's/.*seconds=\([^ ]*\).*/\1/p' <<<"$res")
	bytes=$(sed -n 's/.*bytes=\([^ ]*\).*/\1/p' <<<"$res")
	files=$(sed -n 's/.*files=\([^ ]*\).*/\1/p' <<<"$res")
	calls=$(sed -n 's/.*calls=\([^ ]*\).*/\1/p' <<<"$res")
	local expect
	expect=$(manifest_bytes "$path")
	[ "$bytes" = "$expect" ] || b_log "WARNING: $wl via $shown read $bytes bytes, the data set has $expect"
	local d_hits='' d_miss='' ratio='' d_fills='' d_fb='' d_up='' d_bfc='' cpu=''
	if [ -n "$cfs" ]; then
		delta() { echo $(($(awk -v k="$1" '$1==k{print $2}' <<<"$st1") - $(awk -v k="$1" '$1==k{print $2}' <<<"$st0"))); }
		d_hits=$(delta read_hits)
		d_miss=$(delta read_misses)
		d_fills=$(delta fills)
		d_fb=$(delta fill_bytes)
		d_up=$(delta upstream_calls)
		d_bfc=$(delta bytes_from_cache)
		if [ $((d_hits + d_miss)) -gt 0 ]; then
			ratio=$(awk -v h="$d_hits" -v m="$d_miss" 'BEGIN{printf "%.4f", h/(h+m)}')
		fi
	fi
	[ -n "$cpu0" ] && cpu=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN{printf "%.2f", b-a}')
	printf '  %-9s %-10s %-20s %s %8.3f s  %s calls  link %s B%s\n' "$profile" "$wl" "$shown" \
		"$([ "$run" = 0 ] && echo warm-up || echo "run $run")" "$sec" "$calls" "$((l1 - l0))" \
		"${ratio:+  hits $ratio}" >&2
	[ "$run" = 0 ] && return 0
	echo "$profile,libnfs,$wl,$label,$scen,$mode,$run,$sec,$bytes,$expect,$files,$calls,$((l1 - l0)),$cpu,$rss,$d_hits,$d_miss,$ratio,$d_fills,$d_fb,$d_up,$d_bfc${csv_build:+,$bcol}" >>"$csv"
}

# --- relay accuracy (wan) -------------------------------------------------------------------
relay_probe()
{
	local ep rp1 rp2 p1 p2
	ep=$(b_free_port)
	ip netns exec "$B_NS" "$B_BIN/relayprobe" echo --listen "$B_NS_IP:$ep" &
	local epid=$!
	b_track probe-echo "$epid"
	b_wait_listen "$ep" 10 "$B_NS" || return 0
	p1=$(b_free_port)
	p2=$(b_free_port)
	"$B_BIN/relay" --delay-ms 0 --map "127.0.0.1:$p1=$B_NS_IP:$ep" >/dev/null &
	rp1=$!
	b_track probe-relay0 "$rp1"
	"$B_BIN/relay" --delay-ms "$wan_delay" --map "127.0.0.1:$p2=$B_NS_IP:$ep" >/dev/null &
	rp2=$!
	b_track probe-relay "$rp2"
	b_wait_listen "$p1" 10
	b_wait_listen "$p2" 10
	{
		echo "configured: one-way delay $wan_delay ms each direction (round trip + $(awk -v d="$wan_delay" 'BEGIN{print 2*d}') ms), link $wan_rate (tbf on the veth)"
		echo "rtt direct to the namespace (shaped link, no relay):   $("$B_BIN/relayprobe" rtt --connect "$B_NS_IP:$ep" --count 300)"
		echo "rtt through the relay at delay 0 (relay overhead):      $("$B_BIN/relayprobe" rtt --connect "127.0.0.1:$p1" --count 300)"
		echo "rtt through the relay at the wan delay:                 $("$B_BIN/relayprobe" rtt --connect "127.0.0.1:$p2" --count 300)"
		echo "bulk echo through the relay at the wan delay:           $("$B_BIN/relayprobe" bulk --connect "127.0.0.1:$p2" --bytes 50000000)"
	} >"$out/relay.txt" 2>&1
	b_stop_pid "$rp2"
	b_stop_pid "$rp1"
	b_stop_pid "$epid"
	cat "$out/relay.txt"
}

# --- per-call floor ------------------------------------------------------------------------
# NFS NULL calls one at a time from the bench client: the round trip and
# RPC handling every call of a walk pays, with no file system work. To the
# upstream over this profile's link, and to each running cachefsd (which
# answers NULL itself). A warm ttl walk cannot beat direct by more than
# about direct's time per call over this floor.
ping_us() # ping_us HOST PORT: µs per NULL call
{
	"$B_BIN/nfsbench" ping --host "$1" --port "$2" --count 5000 |
		sed -n 's/.*us_per_call=\([0-9.]*\).*/\1/p'
}

# Each target three times, the targets in turn (a slower minute moves all
# of them alike), and the median of its three: one figure of a loaded
# machine moved a ratio against it by a fifth.
ping_floor()
{
	local profile=$1 m pv portv line i t
	local names=(direct) hosts=("$T_HOST") ports=("$T_NFSPORT") us=()
	for m in ${modes//,/ }; do
		pv="CFS_PID_$m" portv="CFS_PORT_$m"
		[ -n "${!pv:-}" ] && kill -0 "${!pv}" 2>/dev/null || continue
		names+=("cachefsd $m") hosts+=(127.0.0.1) ports+=("${!portv}")
	done
	# B's daemons after A's: A's figures keep their place in the line
	[ $ab = 1 ] && for m in ${modes//,/ }; do
		pv="CFS_PID_${m}_b" portv="CFS_PORT_${m}_b"
		[ -n "${!pv:-}" ] && kill -0 "${!pv}" 2>/dev/null || continue
		names+=("cachefsd $m [$label_b]") hosts+=(127.0.0.1) ports+=("${!portv}")
	done
	for i in 1 2 3; do
		for t in "${!names[@]}"; do
			us[t]+=" $(ping_us "${hosts[t]}" "${ports[t]}")"
		done
	done
	line="$profile:"
	for t in "${!names[@]}"; do
		[ "$t" = 0 ] || line+=","
		line+=" ${names[t]} $(tr ' ' '\n' <<<"${us[t]}" | grep . | sort -g | sed -n 2p) us"
	done
	echo "$line" >>"$out/floor.txt"
	b_log "NULL call floor (median of 3, in turn), $line"
}

# --- the profiles ---------------------------------------------------------------------------
for profile in ${profiles//,/ }; do
	# the previous profile's caches (kept after the last one, for a look)
	rm -rf "$B_TMP"/cache-*
	case $profile in
	loopback) b_shape none 65535 ;;
	lan) b_shape "$lan_rate" 1500 ;;
	wan) b_shape "$wan_rate" 1500 ;;
	*) b_die "unknown profile $profile" ;;
	esac
	T_HOST=$B_NS_IP T_NFSPORT=$UP_NFSPORT T_MNTPORT=$UP_MNTPORT
	if [ "$profile" = wan ]; then
		relay_probe
		b_start_relay "$wan_delay" 0
		T_HOST=127.0.0.1 T_NFSPORT=$R_NFSPORT T_MNTPORT=$R_MNTPORT
	fi
	b_log "=== profile $profile: upstream at $T_HOST:$T_NFSPORT"
	if [[ ,$scenarios, == *,peer,* ]]; then
		if ! b_start_peer "$T_HOST" "$T_NFSPORT"; then
			b_log "the nfs-ganesha PROXY_V4 peer did not start: its rows are not available"
			PEER_PID=''
		fi
	fi
	for wl in ${workloads//,/ }; do
		t_start=$(date +%s)
		wu=$warmup
		measured=0
		for ((round = 1; round <= wu + n; round++)); do
			if [ "$round" -gt "$wu" ] && [ "$budget" -gt 0 ] && [ "$measured" -ge 3 ] &&
				[ $(($(date +%s) - t_start)) -ge "$budget" ]; then
				b_log "budget of $budget s for $profile/$wl spent after $measured measured rounds"
				break
			fi
			# warm-ups: at most a quarter of the budget (at least one)
			if [ "$round" -gt 1 ] && [ "$round" -le "$wu" ] && [ "$budget" -gt 0 ] &&
				[ $(($(date +%s) - t_start)) -ge $((budget / 4)) ]; then
				b_log "warm-up for $profile/$wl cut to $((round - 1)) rounds (a quarter of the budget)"
				wu=$((round - 1))
			fi
			r=0
			[ "$round" -gt "$wu" ] && r=$((round - wu))
			round_rows=("${rows[@]}")
			[ $ab = 1 ] && [ $((round % 2)) = 0 ] && round_rows=("${rows_ba[@]}")
			for row in "${round_rows[@]}"; do
				read -r label scen mode ver bld <<<"$row"
				v=0
				# the first round checks every byte once (not timed when there are warm-ups)
				[ "$round" = 1 ] && { [ "$wu" -gt 0 ] || [ "${BENCH_VERIFY:-0}" = 1 ]; } && v=1
				run_one "$profile" "$wl" "$label" "$scen" "$mode" "$r" "$v" "$ver" "$bld"
			done
			[ "$r" -gt 0 ] && measured=$r
		done
	done
	ping_floor "$profile"
	for m in ${modes//,/ }; do
		b_stop_cachefsd "$m"
		b_stop_cachefsd "${m}4"
		[ $ab = 1 ] && b_stop_cachefsd "${m}_b" && b_stop_cachefsd "${m}_b4"
	done
	[ -n "${PEER_PID:-}" ] && b_stop_peer
	[ "$profile" = wan ] && b_stop_relay
done

# --- per pass: what cachefsd answered and what it sent upstream ----------------------------------
# guest_watch LABEL PID GOUT: while the guest run PID lasts, cachefsd LABEL's
# counters (b_cfs_stats: what `cachefsctl stats --raw` shows) at each mark the
# guest script prints in GOUT (READY, then a RUN line per pass), into
# raw/guest-LABEL-stats/K.txt for the K-th mark. Marks seen late (two at
# once) leave a gap: guest_passes then reports no counts for that pass.
guest_watch()
{
	local label=$1 pid=$2 gout=$3 seen=0 n sdir=$out/raw/guest-$1-stats
	rm -rf "$sdir"
	mkdir -p "$sdir"
	while kill -0 "$pid" 2>/dev/null; do
		n=$(grep -cE '^(READY|RUN):' "$gout" 2>/dev/null)
		if [ "${n:-0}" -gt "$seen" ]; then
			[ "$n" -gt $((seen + 1)) ] && b_log "guest: $label: counters read late, marks $((seen + 1))-$n together"
			seen=$n
			b_cfs_stats "$label" >"$sdir/$seen.txt" || rm -f "$sdir/$seen.txt"
		fi
		sleep 0.1
	done
}

# guest_passes LABEL GOUT: guest-passes.csv rows of LABEL's run: for each
# pass (round, workload) and procedure, the calls cachefsd received, the
# calls it sent upstream (its own included: lookup prefetch, fills) and the
# calls it answered alone (nfs_hit_<PROC>; READ: from the cache).
guest_passes()
{
	local label=$1 gout=$2 sdir=$out/raw/guest-$1-stats k=1 round wl
	while read -r _ round wl _; do
		k=$((k + 1))
		[ -s "$sdir/$((k - 1)).txt" ] && [ -s "$sdir/$k.txt" ] || continue
		awk -v row="$label" -v round="$round" -v wl="$wl" '
			FNR == NR { a[$1] = $2; next }
			{ d = $2 - a[$1]
			  if ($1 ~ /^nfs_calls_/) { p = substr($1, 11); c[p] = d; seen[p] = 1 }
			  else if ($1 ~ /^upstream_calls_[A-Z]/) { p = substr($1, 16); u[p] = d; seen[p] = 1 }
			  else if ($1 ~ /^nfs_hit_/) { p = substr($1, 9); h[p] = d } }
			END { for (p in seen) if (c[p] + u[p] > 0)
				printf "%s,%s,%s,%s,%d,%d,%d\n", row, round, wl, p, c[p], u[p], h[p] }' \
			"$sdir/$((k - 1)).txt" "$sdir/$k.txt" | sort -t, -k4,4
	done < <(grep '^RUN: ' "$gout")
}

# guest_passes_md CSV: the tar passes, a table per row: for each round the
# calls by procedure as "upstream / received".
guest_passes_md()
{
	[ "$(wc -l <"$1")" -gt 1 ] || return 0
	echo "Per pass (guest-passes.csv), tar: calls sent upstream / calls received, by procedure (cachefsd's counters read between passes; round 1 includes the mount):"
	echo
	awk -F, 'NR > 1 && $3 == "tar" {
			k = $1 SUBSEP $2; if (!(k in rk)) { rk[k] = 1; rows[++nr] = k }
			if (!($4 in pk)) { pk[$4] = 1; procs[++np] = $4 }
			v[k, $4] = $6 " / " $5; up[k] += $6; all[k] += $5 }
		END {
			if (nr == 0) exit
			printf "| row | round |"; for (j = 1; j <= np; j++) printf " %s |", procs[j]; print " all |"
			printf "|---|---:|"; for (j = 1; j <= np; j++) printf "---:|"; print "---:|"
			for (i = 1; i <= nr; i++) {
				split(rows[i], rr, SUBSEP); printf "| %s | %s |", rr[1], rr[2]
				for (j = 1; j <= np; j++) printf " %s |", ((rows[i], procs[j]) in v) ? v[rows[i], procs[j]] : ""
				printf " %d / %d |\n", up[rows[i]], all[rows[i]] } }' "$1"
	echo
}

# --- the kernel client in the qemu guest (wan) ---------------------------------------------------
# One guest boot per scenario; inside it, guest_n rounds of the seed's literal
# commands, each after `sync; echo 3 >/proc/sys/vm/drop_caches` in the guest.
# For cachefsd the cache is emptied before the boot, so round 1 is cold and
# the later rounds warm (cache on disk and in the host's page cache).
run_guest()
{
	local grun=$root/tests/guest/run.sh gcsv=$out/guest.csv tree
	[ -x "$grun" ] || { b_log "no $grun: skipping the guest"; return 0; }
	ls /boot/vmlinuz-* >/dev/null 2>&1 && command -v qemu-system-x86_64 >/dev/null ||
		{ b_log "no kernel image or qemu: skipping the guest"; return 0; }
	H_BUILD=$build "$root/tests/guest/mkimage.sh" "$build/guest" >/dev/null || { b_log "guest image build failed"; return 0; }
	tree=$(workload_path tar wan)
	b_shape "$wan_rate" 1500
	b_start_relay "$wan_delay" 0
	T_HOST=127.0.0.1 T_NFSPORT=$R_NFSPORT T_MNTPORT=$R_MNTPORT
	PEER_PID=''
	[[ ,$scenarios, == *,peer,* ]] && { b_start_peer "$T_HOST" "$T_NFSPORT" || PEER_PID=''; }
	# READY before the first pass and each RUN line after a pass are the
	# marks at which guest_watch reads cachefsd's counters; the script
	# waits PAUSE seconds after each (outside the timed commands) so that
	# the host reads them between passes
	cat >"$B_TMP/guest.sh" <<'GEOF'
up() { cut -d' ' -f1 /proc/uptime; }
echo "READY:"
sleep "${PAUSE:-0}"
i=1
while [ $i -le $N ]; do
	for wl in cat-big tar; do
		sync
		echo 3 >/proc/sys/vm/drop_caches
		t0=$(up)
		case $wl in
		cat-big) cat bigfile >/dev/null || echo "FAILED: cat" ;;
		tar) tar cf - "$TREE" >/dev/zero || echo "FAILED: tar" ;;
		esac
		t1=$(up)
		echo "RUN: $i $wl $t0 $t1"
		sleep "${PAUSE:-0}"
	done
	i=$((i + 1))
done
GEOF
	echo "profile,client,workload,row,run,seconds" >"$gcsv"
	echo "row,round,workload,proc,calls,upstream,local" >"$out/guest-passes.csv"
	local label port mport xport extra pause gpid
	for label in direct ganesha-proxy strict ttl; do
		extra=() pause=0
		case $label in
		direct) port=$T_NFSPORT mport=$T_MNTPORT xport=$DATA ;;
		ganesha-proxy)
			[ -n "${PEER_PID:-}" ] || continue
			port=$PEER_NFSPORT mport=$PEER_MNTPORT xport=$UP_PSEUDO ;;
		strict | ttl)
			[[ ,$modes, == *,$label,* ]] || continue
			[ "$label" = ttl ] && { [ $ttl_ok = 1 ] || continue; extra=("${ttl_flag[@]}"); }
			b_stop_cachefsd "$label"
			rm -rf "$B_TMP/cache-$label"
			b_drop_caches
			b_warm_export "$DATA/bigfile"
			b_warm_export "$DATA/$tree"
			# --secure-ports false: qemu's user networking (slirp) connects
			# to the host from an unprivileged port, whatever port the
			# guest's kernel client used (tests/guest/run.sh)
			b_start_cachefsd "$label" "$B_TMP/cache-$label" "$T_HOST" "$T_NFSPORT" "$T_MNTPORT" "$DATA" \
				--secure-ports false "${extra[@]}" || continue
			local pv="CFS_PORT_$label"
			port=${!pv} mport=${!pv} xport=$DATA pause=2 ;;
		esac
		b_log "guest: $label ($guest_n rounds of cat bigfile and tar cf - $tree)"
		local gout=$out/raw/guest-$label.out
		H_BUILD=$build "$grun" --port "$port" --mountport "$mport" --export "$xport" \
			--script "$B_TMP/guest.sh" --timeout 1800 --env "N=$guest_n" --env "TREE=$tree" \
			--env "PAUSE=$pause" --out "$out/raw/guest-$label-console.log" >"$gout" 2>&1 &
		gpid=$!
		[ "$pause" = 0 ] || guest_watch "$label" "$gpid" "$gout"
		if ! wait "$gpid"; then
			b_log "guest run via $label failed (see $gout)"
			continue
		fi
		[ "$pause" = 0 ] || guest_passes "$label" "$gout" >>"$out/guest-passes.csv"
		grep -q '^FAILED' "$gout" && { b_log "guest: a command failed via $label"; continue; }
		awk -v l="$label" '/^RUN: / {
			row = l
			if (l == "strict" || l == "ttl") row = l ($2 == 1 ? "-cold" : "-warm")
			printf "wan,kernel,%s,%s,%d,%.2f\n", $3, row, $2, $5 - $4 }' "$gout" >>"$gcsv"
	done
	for m in ${modes//,/ }; do b_stop_cachefsd "$m"; done
	[ -n "${PEER_PID:-}" ] && b_stop_peer
	b_stop_relay
	# the summary: warm rows only from rounds 2.., cold = round 1
	"$B_BIN/benchstat" --by profile,client,workload,row --values seconds "$gcsv" >"$out/guest-summary.csv"
	{
		echo "## Kernel client (qemu guest, wan profile)"
		echo
		echo "The seed's literal commands in the qemu guest (tests/guest/run.sh: stock Debian kernel NFSv3 client, TCG emulation, 1 vCPU, slirp user networking to the host's loopback), each after dropping the guest's page cache: \`time cat bigfile >/dev/null\` and \`time tar cf - $tree >/dev/zero\`, timed in the guest from /proc/uptime (10 ms). $guest_n rounds per guest boot; for cachefsd the cache is empty at boot, so round 1 is cold and the other rounds are warm. Seconds, mean ± SEM:"
		echo
		echo "| scenario | cat bigfile | tar $tree |"
		echo "|---|---:|---:|"
		awk -F, 'NR > 1 { k = $4; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
			v[k, $3] = ($5 < 2 ? sprintf("%.2f (n=1)", $6) : sprintf("%.2f ± %.2f (n=%d)", $6, $7, $5)) }
			END { for (i = 1; i <= n; i++) printf "| %s | %s | %s |\n", order[i], v[order[i], "cat-big"], v[order[i], "tar"] }' \
			"$out/guest-summary.csv"
		echo
		echo "tar per round, seconds (round 1 of strict and ttl is cold; speed = direct's mean / this time):"
		echo
		awk -F, 'NR > 1 && $3 == "tar" { r = $4; sub(/-(cold|warm)$/, "", r)
				if (!(r in t)) order[++n] = r; t[r] = t[r] sprintf(" %.2f", $6)
				if (r == "direct") { ds += $6; dn++ } else s[r, $5] = $6 }
			END { d = dn ? ds / dn : 0
				for (i = 1; i <= n; i++) { r = order[i]; line = "- " r ":" t[r]
					if (r != "direct" && d > 0 && ((r, 2) in s) && s[r, 2] > 0)
						line = line sprintf(" (first warm pass %.1f× direct)", d / s[r, 2])
					print line } }' "$gcsv"
		echo
		guest_passes_md "$out/guest-passes.csv"
		echo "What limits these numbers: the guest is emulated (TCG, no KVM here), so a READ's bytes cost guest CPU time: cat of a local tmpfs file runs at tens of MB/s in this guest, and slirp carries ~15-20 MB/s. Over wan (100 Mbit/s = 12.5 MB/s) the link is still the tighter limit for direct and cold reads; warm reads through cachefsd are bound by the guest, not by the proxy. The tar numbers are dominated by round trips (the wan delay) and are meaningful as ratios."
	} >"$out/guest.md"
	cat "$out/guest.md"
}

if [ $guest = 1 ]; then
	run_guest || b_log "the guest part failed (see $out/raw/bench.log)"
fi

echo "load_at_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/meta.txt"
"$here/report.sh" "$out" "$B_BIN" || b_die "report failed"
b_log "report: $out/report.md"
