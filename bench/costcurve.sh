#!/bin/bash
# Cost curves (docs/bench.md "Cost curves"): for each object count N, fills a
# cache directory with N objects through the store's API (bench/costcurve.c)
# and measures what grows with it:
#   costcurve fill      fill rate, insert and commit latency (p50/p99, the
#                       last fifth of the fill), index bytes per object
#   costcurve measure   store_open cold and warm (as cachefsd opens it), the
#                       read-ahead job, lookup latency cold and warm, more
#                       inserts into the full index, the tool's peak RSS
#   cachefsd            started on the filled cache with its index out of the
#                       page cache (cold) and again (warm): milliseconds from
#                       its exec until an NFS NULL is answered, its peak and
#                       anonymous RSS then
#   cachefsctl verify   its wall time (exit 0 required: the fill is correct)
#   cachefsctl cull     --to 90 through the daemon: objects evicted per second
#   cachefsd            again with cache_size at 80 % of what is cached: the
#                       objects it culls on its own per second, from its start
#   costcurve cull      the same cull path (store_cull_to) without a daemon
# One CSV row per N in costcurve.csv, the subcommands' output in raw/, one
# PNG per measure against N (log x) with gnuplot, and report.md.
#
#   bench/costcurve.sh --build DIR [--points 100000,1000000] [--work DIR]
#                      [--out DIR] [--chunked-pct P] [--keep] [--reuse]
#
# Needs root (nfs-ganesha as the daemon's upstream, as the tests start it):
# run it in its own namespaces, tests/lib/isolate.sh bench/costcurve.sh ...
# The cache directories go to --work (default /tmp/costcurve; the 10 M point
# needs about 15 GB) and are removed after each point unless --keep; with
# --reuse a point whose cache and fill output (WORK/fill-N.txt) are there is
# measured again without filling it again (culls change it: the second run's
# cull figures are of a cache culled once).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
POINTS=100000
WORK=/tmp/costcurve
OUT=
PCT=5
KEEP=
REUSE=
REPORT_ONLY=
while [ $# -gt 0 ]; do
	case $1 in
	--build) BUILD=$(cd "$2" && pwd); shift ;;
	--points) POINTS=$2; shift ;;
	--work) WORK=$2; shift ;;
	--out) OUT=$2; shift ;;
	--chunked-pct) PCT=$2; shift ;;
	--keep) KEEP=1 ;;
	--reuse) REUSE=1 ;;
	--report-only) REPORT_ONLY=$2; shift ;;
	*) echo "costcurve.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$OUT" ] || OUT=$ROOT/bench/results/$(date -u +%Y-%m-%dT%H%M)-costcurve
[ -z "$REPORT_ONLY" ] || OUT=$REPORT_ONLY
hdr=objects,fill_objects_per_s,insert_p50_us,insert_p99_us,commit_p50_us,commit_p99_us
hdr=$hdr,index_bytes,index_bytes_per_object,open_cold_ms,open_warm_ms,prefetch_ask_ms
hdr=$hdr,lookup_cold_p50_us,lookup_cold_p99_us,lookup_warm_p50_us,lookup_warm_p99_us
hdr=$hdr,insert_more_p50_us,insert_more_p99_us,tool_rss_peak_kib,tool_rss_anon_kib
hdr=$hdr,first_null_cold_ms,first_null_warm_ms,daemon_rss_peak_kib,daemon_rss_anon_kib
hdr=$hdr,verify_s,daemon_cull_objects,daemon_cull_per_s,cull_objects,cull_per_s
hdr=$hdr,autocull_objects,autocull_per_s

# report: the table and one PNG per measure against N (log x) from
# OUT/costcurve.csv, whose rows may come from several runs (--report-only)
report()
{
	local charts=() k c png p points
	points=$(awk -F, 'NR>1{printf "%s%s", (NR>2 ? "," : ""), $1}' "$OUT/costcurve.csv")
	mkdir -p "$OUT/raw"
	if command -v gnuplot >/dev/null; then
		for k in ${hdr//,/ }; do
			[ "$k" = objects ] && continue
			c=$(head -1 "$OUT/costcurve.csv" | tr , '\n' | grep -nx "$k" | cut -d: -f1)
			png=$k.png
			gnuplot <<EOF 2>>"$OUT/raw/gnuplot.log" || true
set terminal pngcairo size 640,400 noenhanced font ",10"
set output "$OUT/$png"
set datafile separator ","
set title "$k against cached objects"
set xlabel "objects in the index (log)"
set logscale x
set yrange [0:*]
set grid
unset key
plot "$OUT/costcurve.csv" every ::1 using 1:$c with linespoints lw 2 pt 7 lc rgb "#4477aa", \
     "" every ::1 using 1:$c:(sprintf("%.4g", \$$c)) with labels offset 0,1 notitle
EOF
			[ -f "$OUT/$png" ] && charts+=("$png")
		done
	fi
	{
		echo "# cachefsd cost curves — $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo
		echo "Command: \`bench/costcurve.sh --points $points --chunked-pct $PCT\`"
		echo "Build: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), $BUILD"
		echo "Machine: $(nproc) CPUs, $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
		echo
		echo "| measure | ${points//,/ | } |"
		echo "|---$(for _ in ${points//,/ }; do printf '|---:'; done)|"
		for k in ${hdr//,/ }; do
			[ "$k" = objects ] && continue
			c=$(head -1 "$OUT/costcurve.csv" | tr , '\n' | grep -nx "$k" | cut -d: -f1)
			printf '| %s |' "$k"
			awk -F, -v c="$c" 'NR>1{printf " %s |", $c}' "$OUT/costcurve.csv"
			echo
		done
		echo
		for p in "${charts[@]}"; do echo "![${p%.png}]($p)"; done
	} >"$OUT/report.md"
}
if [ -n "$REPORT_ONLY" ]; then
	report
	exit 0
fi

CC=$BUILD/bench/costcurve
CTL=$BUILD/cachefsctl
for b in "$CC" "$CTL" "$BUILD/cachefsd"; do
	[ -x "$b" ] || { echo "costcurve.sh: $b not built (make all bench-tools)" >&2; exit 2; }
done
export H_BUILD=$BUILD H_TEST=costcurve
# shellcheck source=tests/lib/harness.sh
. "$ROOT/tests/lib/harness.sh"
h_init
mkdir -p "$OUT/raw" "$WORK"
# a fixed export directory: the cache's identity names it (--reuse)
h_start_ganesha up "$WORK/export"
E=$H_EXPORT_up
ID="nfs://127.0.0.1$E"

# val FILE NAME: the value of a "name value" line
val() { awk -v k="$2" '$1==k{print $2; f=1} END{if(!f) print ""}' "$1"; }
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# start_daemon TAG: starts cachefsd on $C, waits for its first NULL answer;
# first_null_ms and its RSS go to raw/N-daemon-TAG.txt
start_daemon()
{
	local f=$OUT/raw/$N-daemon-$1.txt t0 pid
	PORT=$(h_free_port)
	t0=$(date +%s%N)
	T0=$t0
	# shellcheck disable=SC2086 # DAEMON_ARGS: words
	"$BUILD/cachefsd" --foreground --upstream "$H_URL_up" --listen "127.0.0.1:$PORT" \
		--cache-dir "$C" --stats-file "$H_TMP/px.stats" --meta-ttl 86400 \
		--chunk-size 64K ${DAEMON_ARGS:-} >>"$H_TMP/px-cachefsd.log" 2>&1 &
	pid=$!
	h_track cachefsd "$pid"
	DPID=$pid
	"$CC" wait-null --port "$PORT" --since "$t0" --timeout 120 >"$f" ||
		h_fail "cachefsd on $N objects answered no NULL: $(tail -n 5 "$H_TMP/px-cachefsd.log")"
	awk '$1=="VmHWM:"{print "daemon_rss_peak_kib", $2} $1=="RssAnon:"{print "daemon_rss_anon_kib", $2}' \
		"/proc/$pid/status" >>"$f"
	# what it found in the cache (its start-up line)
	sed -n "s|.* cache $C: \([0-9]*\) objects, .*|daemon_objects \1|p" "$H_TMP/px-cachefsd.log" |
		tail -n 1 >>"$f"
}

echo "$hdr" >"$OUT/costcurve.csv"

for N in ${POINTS//,/ }; do
	C=$WORK/cache-$N
	if [ -n "$REUSE" ] && [ -s "$WORK/fill-$N.txt" ] && [ -d "$C" ]; then
		h_log "$N objects: the fill of $WORK/fill-$N.txt, reused"
	else
		rm -rf "$C" "$WORK/fill-$N.txt"
		h_log "$N objects: fill"
		"$CC" fill --cache-dir "$C" --identity "$ID" --objects "$N" --chunked-pct "$PCT" \
			>"$WORK/fill-$N.txt" || h_fail "costcurve fill $N failed"
	fi
	cp "$WORK/fill-$N.txt" "$OUT/raw/$N-fill.txt"
	[ "$(val "$OUT/raw/$N-fill.txt" objects)" = "$N" ] ||
		h_fail "the fill of $N stored $(val "$OUT/raw/$N-fill.txt" objects) objects"
	h_log "$N objects: measure"
	"$CC" measure --cache-dir "$C" --identity "$ID" --objects "$N" \
		>"$OUT/raw/$N-measure.txt" || h_fail "costcurve measure $N failed"

	h_log "$N objects: cachefsd, cold index"
	"$CC" evict --cache-dir "$C"
	start_daemon cold
	h_log "$N objects: cachefsctl verify"
	t0=$(date +%s%N)
	"$CTL" --cache-dir "$C" verify >"$OUT/raw/$N-verify.txt" ||
		h_fail "verify of the $N-object cache: $(grep -v '^summary' "$OUT/raw/$N-verify.txt" | head -5)"
	echo "verify_s $(awk -v t="$(ms_since "$t0")" 'BEGIN{printf "%.2f", t/1000}')" \
		>>"$OUT/raw/$N-verify.txt"
	h_stop_pid "$DPID" 60
	start_daemon warm
	h_log "$N objects: cachefsctl cull --to 90"
	t0=$(date +%s%N)
	"$CTL" --cache-dir "$C" cull --to 90 >"$OUT/raw/$N-daemon-cull.txt" ||
		h_fail "cachefsctl cull: $(cat "$OUT/raw/$N-daemon-cull.txt")"
	ms=$(ms_since "$t0")
	ev=$(awk '$1=="evicted"{print $2}' "$OUT/raw/$N-daemon-cull.txt")
	{
		echo "daemon_cull_objects $ev"
		echo "daemon_cull_per_s $(awk -v n="$ev" -v t="$ms" 'BEGIN{printf "%.0f", t ? n * 1000 / t : 0}')"
	} >>"$OUT/raw/$N-daemon-cull.txt"
	h_stop_pid "$DPID" 60
	# culling on its own: cache_size 80 % of what is cached, from the start
	h_log "$N objects: cachefsd with cache_size at 80 %: culling on its own"
	cached=$(awk '$1=="cached"{print $2}' "$OUT/raw/$N-daemon-cull.txt")
	before=$(awk '$1=="cached"{print $5}' "$OUT/raw/$N-daemon-cull.txt")
	DAEMON_ARGS="--cache-size $((cached / 100 * 80))" start_daemon autocull
	f=$OUT/raw/$N-daemon-autocull.txt
	for ((i = 0; ; i++)); do
		"$CTL" --cache-dir "$C" stats --raw >"$H_TMP/st" 2>/dev/null
		cu=$(awk '$1=="culling"{print $2}' "$H_TMP/st")
		left=$(awk '$1=="cache_objects"{print $2}' "$H_TMP/st")
		[ "$cu" = 0 ] && [ -n "$left" ] && [ "$left" -lt "$before" ] && break
		[ $i -lt 6000 ] || h_fail "culling to cache_size did not end in 20 minutes"
		sleep 0.2
	done
	ms=$(ms_since "$T0")
	{
		echo "autocull_objects $((before - left))"
		echo "autocull_per_s $(awk -v n=$((before - left)) -v t="$ms" 'BEGIN{printf "%.0f", n * 1000 / t}')"
	} >>"$f"
	h_stop_pid "$DPID" 60
	h_log "$N objects: costcurve cull"
	cnt=$((N / 10 < 200000 ? N / 10 : 200000))
	"$CC" cull --cache-dir "$C" --identity "$ID" --count "$cnt" >"$OUT/raw/$N-cull.txt" ||
		h_fail "costcurve cull $N failed"

	row=$N
	for k in ${hdr//,/ }; do
		[ "$k" = objects ] && continue
		v=
		for f in fill measure daemon-cold daemon-warm verify daemon-cull daemon-autocull cull; do
			[ -n "$v" ] && break
			case $k in
			first_null_cold_ms) [ $f = daemon-cold ] && v=$(val "$OUT/raw/$N-$f.txt" first_null_ms) ;;
			first_null_warm_ms) [ $f = daemon-warm ] && v=$(val "$OUT/raw/$N-$f.txt" first_null_ms) ;;
			cull_objects) [ $f = cull ] && v=$(val "$OUT/raw/$N-$f.txt" culled) ;;
			daemon_rss_*) [ $f = daemon-cold ] && v=$(val "$OUT/raw/$N-$f.txt" "$k") ;;
			cull_per_s) [ $f = cull ] && v=$(val "$OUT/raw/$N-$f.txt" cull_objects_per_s) ;;
			*) v=$(val "$OUT/raw/$N-$f.txt" "$k") ;;
			esac
		done
		row=$row,$v
	done
	echo "$row" >>"$OUT/costcurve.csv"
	du -sh "$C" | awk -v n="$N" '{print "cache directory of " n " objects: " $1}' >>"$OUT/raw/sizes.txt"
	[ -n "$KEEP" ] || rm -rf "$C" "$WORK/fill-$N.txt"
done

report
h_log "results in $OUT"
exit 0
