#!/bin/bash
# 80-bench-two-builds: bench/bench.sh --build-b, two builds side by side in
# one run, at tiny scale (n=2, loopback, big file and tar) with the same
# build as A and as B. Checks the structure, not the figures (the same
# daemon twice differs by noise only): every cachefsd row ran n times with
# each build's daemon (its own log and cache), A's block first in odd
# rounds and B's in even ones; direct, peer and disk ran once per round
# with an empty build column; summary.csv groups by build; compare.csv and
# the report's "Two builds side by side" section have, per cell, A's and
# B's mean ± SEM, B/A and a result; B's rows are in the tables as
# "row [LABEL_B]"; the per-call floor names B's daemons. Also the option
# checks (bad or equal labels, --build-b with --mount); that a run
# without --build-b has no build column is 80-bench-smoke's.
# Not a timed test: no speed is asserted.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
h_need_bench

bench=$H_ROOT/bench/bench.sh
# the option checks come before anything is started
for bad in "--label-a x --label-b x" "--label-a a,b" "--label-b 'a b'" "--mount /nonexistent /nonexistent"; do
	eval "set -- $bad"
	rc=0
	"$bench" --build "$H_BUILD" --build-b "$H_BUILD" "$@" --out "$H_TMP/bad" >"$H_TMP/bad.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] || h_fail "bench.sh --build-b $bad: exit $rc, expected 2 ($(tail -n 2 "$H_TMP/bad.out"))"
done
rc=0
"$bench" --build "$H_BUILD" --build-b "$H_TMP/no-such-build" --out "$H_TMP/bad" >"$H_TMP/bad.out" 2>&1 || rc=$?
[ "$rc" = 2 ] || h_fail "bench.sh --build-b with a missing directory: exit $rc, expected 2"

res=$H_TMP/results
mkdir -p "$H_TMP/bench-tmp"
TMPDIR=$H_TMP/bench-tmp BENCH_KEEP=1 "$bench" --build "$H_BUILD" --build-b "$H_BUILD" \
	--label-a new --label-b old --scale tiny --n 2 --warmup 0 --profiles loopback \
	--workloads cat-big,tar --out "$res" >"$H_TMP/bench.out" 2>&1 ||
	{ tail -n 30 "$H_TMP/bench.out" >&2; h_fail "bench.sh --build-b failed"; }

# a sanitizer build: both daemons' logs must be clean
h_bench_logs_clean "$H_TMP/bench-tmp"

for f in raw.csv summary.csv compare.csv report.md meta.txt; do
	[ -s "$res/$f" ] || h_fail "the bench produced no $f"
done
for kv in label_a=new label_b=old "build_b=$H_BUILD" ttl_available_b=; do
	grep -q "^$kv" "$res/meta.txt" || h_fail "meta.txt has no $kv"
done
# each build's daemons ran on their own (logs, caches)
tmp=$(echo "$H_TMP"/bench-tmp/cachefsd-bench.*)
for d in strict strict_b; do
	[ -s "$tmp/$d-cachefsd.log" ] || h_fail "no log of cachefsd $d in $tmp"
	ls -d "$tmp"/cache-*-"$d" >/dev/null 2>&1 || h_fail "no cache directory cache-PROFILE-$d in $tmp"
done
[ -x "$tmp/cachefsd-b" ] || h_fail "no private copy of B's cachefsd"

head -n 1 "$res/raw.csv" | grep -q ',bytes_from_cache,build$' || h_fail "raw.csv has no build column"
col() { head -n 1 "$res/raw.csv" | tr ',' '\n' | grep -nx "$1" | cut -d: -f1; }
c_wl=$(col workload) c_row=$(col row) c_run=$(col run) c_b=$(col build) c_hit=$(col hit_ratio)
ttl=$(sed -n 's/^ttl_available=//p' "$res/meta.txt")
cfs_rows="strict-cold strict-warm-disk strict-warm-page"
[ "$ttl" = 1 ] && cfs_rows="$cfs_rows ttl-cold ttl-warm-disk ttl-warm-page"
count() # WORKLOAD ROW BUILD: lines of raw.csv
{
	awk -F, -v w="$1" -v r="$2" -v b="$3" -v cw="$c_wl" -v cr="$c_row" -v cb="$c_b" \
		'NR > 1 && $cw == w && $cr == r && $cb == b' "$res/raw.csv" | wc -l
}
cells=0
for wl in cat-big tar; do
	for row in direct ganesha-proxy; do
		[ "$(count "$wl" "$row" '')" = 2 ] || h_fail "$wl / $row: not 2 runs with an empty build column"
		[ "$(count "$wl" "$row" new)$(count "$wl" "$row" old)" = 00 ] || h_fail "$wl / $row ran per build"
	done
	want=0
	[ "$wl" = cat-big ] && want=2
	[ "$(count "$wl" local-disk '')" = $want ] || h_fail "$wl / local-disk: not $want runs"
	for row in $cfs_rows; do
		for b in new old; do
			[ "$(count "$wl" "$row" "$b")" = 2 ] || h_fail "$wl / $row: not 2 runs with build $b"
		done
		cells=$((cells + 1))
		# A's block first in round 1, B's first in round 2
		order=$(awk -F, -v w="$wl" -v r="$row" -v cw="$c_wl" -v cr="$c_row" -v cb="$c_b" -v cn="$c_run" \
			'$cw == w && $cr == r { printf "%s%s ", $cn, $cb }' "$res/raw.csv")
		[ "$order" = "1new 1old 2old 2new " ] || h_fail "$wl / $row: runs in the order $order"
		case $row in
		*-cold) ;;
		*) awk -F, -v w="$wl" -v r="$row" -v cw="$c_wl" -v cr="$c_row" -v ch="$c_hit" \
			'$cw == w && $cr == r && !($ch > 0 && $ch <= 1) { bad = 1 } END { exit bad }' "$res/raw.csv" ||
			h_fail "$wl / $row: a warm run of one build did not hit its cache" ;;
		esac
	done
done

head -n 1 "$res/summary.csv" | grep -q '^profile,client,workload,row,build,n,' ||
	h_fail "summary.csv is not grouped by build"
head -n 1 "$res/compare.csv" | grep -qx 'profile,client,workload,row,n_a,seconds_mean_a,seconds_sem_a,n_b,seconds_mean_b,seconds_sem_b,ratio_b_a,diff_b_a,sem_combined,result' ||
	h_fail "compare.csv header: $(head -n 1 "$res/compare.csv")"
[ "$(awk 'NR > 1' "$res/compare.csv" | wc -l)" = $cells ] || h_fail "compare.csv has not $cells cells"
awk -F, 'NR > 1 && !($5 == 2 && $8 == 2 && $6 > 0 && $9 > 0 && $11 > 0 && $13 != "" &&
	($14 == "within" || $14 == "b_slower" || $14 == "a_slower")) { print; bad = 1 } END { exit bad }' \
	"$res/compare.csv" || h_fail "compare.csv has a cell without both builds' figures and a result"

md=$res/report.md
for s in '## Two builds side by side' '| workload | scenario | A: new | B: old | B/A | B − A (combined SEM) | result |' \
	'A = **new**: ' '; B = **old**: ' '## loopback' '## Verdicts' "are A's (new)" '| strict-cold [old] |'; do
	grep -qF -- "$s" "$md" || h_fail "report.md lacks '$s'"
done
# one line per cell: both means with SEM and n, B/A, a result
n=$(grep -cE '^\| (cat-big|tar) \| (strict|ttl)-[a-z-]+ \| [0-9.]+ ± [0-9.]+ \(n=2\) \| [0-9.]+ ± [0-9.]+ \(n=2\) \| [0-9.]+ \| [-+][0-9.]+ \([0-9.]+\) \| (within SEM|\*\*[AB] slower beyond SEM\*\*( \(beyond 2 SEM\))?) \|' "$md")
[ "$n" = $cells ] || h_fail "the side-by-side table has $n well-formed cells, expected $cells"
grep -qE "^$cells cells: [0-9]+ B slower beyond SEM, [0-9]+ A slower beyond SEM, [0-9]+ within SEM\.$" "$md" ||
	h_fail "report.md has no count of the cells"
grep -qE '^loopback: direct [0-9.]+ us, cachefsd strict [0-9.]+ us.*, cachefsd strict \[old\] [0-9.]+ us' "$res/floor.txt" ||
	h_fail "the per-call floor does not name B's daemons: $(cat "$res/floor.txt")"

h_pass "bench --build-b: $cells cells with both builds' daemons interleaved per round, compare.csv and the side-by-side report"
