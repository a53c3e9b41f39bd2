#!/bin/bash
# bench/mount.sh — the bench on a real machine: the operator supplies two
# mounts of the same export, one direct and one through cachefsd, and the
# bench runs the seed's literal commands on both, dropping the client's
# caches before every run. Called by `bench/bench.sh --mount DIRECT PROXIED`.
#
# usage: bench/mount.sh DIRECT_MNT PROXIED_MNT [--n N] [--warmup N] [--out DIR]
#                       [--generate [--scale full|quick|tiny] [--seed S]]
#                       [--workloads cat-big,cat-bigger,tar] [--tree REL]
#   --generate   write the bench's data set (bigfile, biggerfile, tree/)
#                into DIRECT_MNT first (through NFS; needs write access)
#   --tree REL   the directory tar walks, relative to the mounts (default tree)
# Each round runs, for direct then proxied:
#   sync; echo 3 >/proc/sys/vm/drop_caches; time cat M/bigfile >/dev/null
#   ... cat M/biggerfile, and (cd M && tar cf - REL >/dev/zero)
# Results: OUT/raw.csv (client "kernel-mount", profile "mount", rows
# "direct" and "proxied"), report.md by bench/report.sh. Only the client's
# caches are dropped: the proxy keeps its cache, so after the first round
# the proxied numbers are warm ones (say so when you quote them). Run the
# first round against an empty proxy cache to see cold numbers (round 1 is
# recorded as "proxied-first" when --warmup 0).
set -u
set -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
[ $# -ge 2 ] || { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
direct=$(cd "$1" && pwd) || exit 2
proxied=$(cd "$2" && pwd) || exit 2
shift 2
n=20 warmup=5 out='' generate=0 scale=full seed=1 workloads=cat-big,cat-bigger,tar tree=tree
while [ $# -gt 0 ]; do
	case $1 in
	--n) n=${2:?}; shift 2 ;;
	--warmup) warmup=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--generate) generate=1; shift ;;
	--scale) scale=${2:?}; shift 2 ;;
	--seed) seed=${2:?}; shift 2 ;;
	--workloads) workloads=${2:?}; shift 2 ;;
	--tree) tree=${2:?}; shift 2 ;;
	*) echo "mount.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "mount.sh: needs root (drop_caches)" >&2; exit 2; }
out=${out:-$root/bench/results/$(date +%Y-%m-%dT%H%M)-mount}
mkdir -p "$out/raw"
bin=$root/build/bench
[ -x "$root/build-release/bench/benchstat" ] && bin=$root/build-release/bench

if [ $generate = 1 ]; then
	case $scale in
	full) g=(--big bigfile=100M --big biggerfile=200M --tree tree:files=20000,dirs=350,bytes=340000000) ;;
	quick) g=(--big bigfile=16M --big biggerfile=32M --tree tree:files=1000,dirs=40,bytes=17000000) ;;
	tiny) g=(--big bigfile=3M --big biggerfile=5M --tree tree:files=40,dirs=6,bytes=400000) ;;
	*) echo "mount.sh: --scale full|quick|tiny" >&2; exit 2 ;;
	esac
	"$bin/benchgen" --out "$direct" --seed "$seed" "${g[@]}" || exit 1
fi
for f in bigfile biggerfile "$tree"; do
	[ -e "$direct/$f" ] && [ -e "$proxied/$f" ] ||
		{ echo "mount.sh: $f missing in a mount (--generate writes the data set)" >&2; exit 1; }
done

{
	echo "date=$(date +%Y-%m-%dT%H%M)"
	echo "command=bench/mount.sh $direct $proxied"
	echo "host=$(uname -srm)"
	echo "cpus=$(nproc)"
	echo "mem=$(awk '/MemTotal/{print int($2/1024)" MiB"}' /proc/meminfo)"
	echo "scale=mount"
	echo "n=$n"
	echo "warmup=$warmup"
	echo "direct_mount=$direct ($(findmnt -n -o SOURCE,OPTIONS "$direct" 2>/dev/null))"
	echo "proxied_mount=$proxied ($(findmnt -n -o SOURCE,OPTIONS "$proxied" 2>/dev/null))"
	echo "load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/meta.txt"
echo "mount: direct $direct, proxied $proxied" >"$out/dataset.txt"

csv=$out/raw.csv
echo "profile,client,workload,row,scenario,mode,run,seconds,bytes,expect_bytes,files,calls,link_bytes,proxy_cpu_s,proxy_rss_kib,read_hits,read_misses,hit_ratio,fills,fill_bytes,upstream_calls,bytes_from_cache" >"$csv"
now() { date +%s.%N; }
one() # MOUNT WORKLOAD -> seconds
{
	local m=$1 t0 t1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(now)
	case $2 in
	cat-big) cat "$m/bigfile" >/dev/null ;;
	cat-bigger) cat "$m/biggerfile" >/dev/null ;;
	tar) (cd "$m" && tar cf - "$tree" >/dev/zero) ;;
	esac || return 1
	t1=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", b - a}'
}
bytes_of() { case $1 in cat-big) stat -c %s "$direct/bigfile" ;; cat-bigger) stat -c %s "$direct/biggerfile" ;;
	tar) find "$direct/$tree" -type f -printf '%s\n' | awk '{s+=$1} END{print s+0}' ;; esac; }
for wl in ${workloads//,/ }; do
	b=$(bytes_of "$wl")
	for ((round = 1; round <= warmup + n; round++)); do
		r=$((round - warmup))
		for side in direct proxied; do
			m=$direct
			[ $side = proxied ] && m=$proxied
			s=$(one "$m" "$wl") || { echo "mount.sh: $wl on $m failed" >&2; exit 1; }
			label=$side
			[ $side = proxied ] && [ "$round" = 1 ] && [ "$warmup" = 0 ] && label=proxied-first
			printf '  %-10s %-8s %s %s s\n' "$wl" "$label" "$([ $r -le 0 ] && echo warm-up || echo "run $r")" "$s" >&2
			[ $r -le 0 ] && continue
			echo "mount,kernel-mount,$wl,$label,$side,-,$r,$s,$b,$b,,,,,,,,,,,," >>"$csv"
		done
	done
done
echo "load_at_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/meta.txt"
"$here/report.sh" "$out" "$bin"
echo "report: $out/report.md"
