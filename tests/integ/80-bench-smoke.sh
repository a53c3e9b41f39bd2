#!/bin/bash
# 80-bench-smoke: the bench suite at tiny scale (a few files, n=1, loopback
# only), so that it never rots. Runs bench/bench.sh end to end (its own
# nfs-ganesha in a network namespace, cachefsd strict and ttl, the
# nfs-ganesha PROXY_V4 peer) and checks the report is produced and sane:
# every scenario of every workload has a row, times are positive, the bytes
# read equal the data set's (and the first round verified every file's
# xxh64 against the generator's manifest), proxied runs have CPU and RSS
# figures, warm runs hit the cache, the local disk is read side by side for
# the big files, the tables, verdicts and charts exist. With
# --upstream-version 3,4 it also runs direct NFSv4 access (bench/nfs4bench)
# and cachefsd over an NFSv4 upstream, verified the same way, and the report
# has the "NFSv4 upstream" section.
# Not a timed test: no speed is asserted.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
h_need_bench

res=$H_TMP/results
mkdir -p "$H_TMP/bench-tmp"
TMPDIR=$H_TMP/bench-tmp BENCH_KEEP=1 BENCH_VERIFY=1 \
	"$H_ROOT/bench/bench.sh" --build "$H_BUILD" --scale tiny --n 1 --warmup 0 \
	--profiles loopback --upstream-version 3,4 --out "$res" >"$H_TMP/bench.out" 2>&1 ||
	{ tail -n 30 "$H_TMP/bench.out" >&2; h_fail "bench.sh failed"; }

# a sanitizer build: the bench's cachefsd logs must be clean too
h_bench_logs_clean "$H_TMP/bench-tmp"

for f in raw.csv summary.csv report.md meta.txt machine.txt; do
	[ -s "$res/$f" ] || h_fail "the bench produced no $f"
done
grep -q 'verified: tar via direct (loopback): every file' "$H_TMP/bench.out" ||
	h_fail "the bench did not verify the tar bytes"
for r in direct-v4 v4-strict-cold; do
	grep -q "verified: tar via $r (loopback): every file" "$H_TMP/bench.out" ||
		h_fail "the bench did not verify the tar bytes via $r"
done
grep -q '^## NFSv4 upstream' "$res/report.md" || h_fail "the report has no NFSv4 upstream section"
grep -q '^| loopback | tar | strict | [0-9.]*× | [-+][0-9]* % | [0-9.]*× |' "$res/report.md" ||
	h_fail "the NFSv4 upstream section has no tar figures: $(sed -n '/^## NFSv4 upstream/,/^## /p' "$res/report.md")"
# the per-call floor: NULL calls to the upstream and to each cachefsd
grep -qE '^loopback: direct [0-9.]+ us, cachefsd strict [0-9.]+ us' "$res/floor.txt" ||
	h_fail "no per-call floor: $(cat "$res/floor.txt" 2>&1)"
grep -q 'Per-call floor' "$res/report.md" || h_fail "the report has no per-call floor"

# one build: raw.csv and summary.csv as always, no build column (that is
# --build-b's, 80-bench-two-builds.sh)
head -n 1 "$res/raw.csv" | grep -q ',bytes_from_cache$' || h_fail "raw.csv has a column after bytes_from_cache"
head -n 1 "$res/summary.csv" | grep -q '^profile,client,workload,row,n,' || h_fail "summary.csv is not grouped as always"
[ ! -e "$res/compare.csv" ] || h_fail "a run of one build wrote compare.csv"
grep -q '^## Two builds' "$res/report.md" && h_fail "a run of one build has a two-builds section"

data=$(sed -n 's/^data=//p' "$res/meta.txt")
[ -f "$data/MANIFEST" ] || h_fail "no data-set manifest in $data"
mbytes() { awk -v p="$1" '$3==p || index($3, p"/")==1 {s+=$1} END{print s+0}' "$data/MANIFEST"; }
[ "$(mbytes bigfile)" = $((3 * 1048576)) ] || h_fail "tiny bigfile is not 3 MiB"
tree_bytes=$(mbytes tree)
[ "$tree_bytes" -gt 300000 ] || h_fail "tiny tree has only $tree_bytes bytes"

# the NFSv4 upstream's rows (--upstream-version 3,4): direct NFSv4 access
# and cachefsd over v4, the same bytes
rows="direct ganesha-proxy strict-cold strict-warm-disk strict-warm-page"
rows="$rows direct-v4 v4-strict-cold v4-strict-warm-disk v4-strict-warm-page"
ttl=$(sed -n 's/^ttl_available=//p' "$res/meta.txt")
[ "$ttl" = 1 ] && rows="$rows ttl-cold ttl-warm-disk ttl-warm-page v4-ttl-cold v4-ttl-warm-disk v4-ttl-warm-page"
# columns of raw.csv by name
col() { head -n 1 "$res/raw.csv" | tr ',' '\n' | grep -nx "$1" | cut -d: -f1; }
c_wl=$(col workload) c_row=$(col row) c_sec=$(col seconds) c_bytes=$(col bytes)
c_exp=$(col expect_bytes) c_cpu=$(col proxy_cpu_s) c_rss=$(col proxy_rss_kib)
c_hit=$(col hit_ratio) c_link=$(col link_bytes)
for wl in cat-big cat-bigger tar; do
	case $wl in cat-big) want=$(mbytes bigfile) ;; cat-bigger) want=$(mbytes biggerfile) ;; tar) want=$tree_bytes ;; esac
	for row in $rows; do
		line=$(awk -F, -v w="$wl" -v r="$row" -v a="$c_wl" -v b="$c_row" '$a==w && $b==r' "$res/raw.csv")
		[ "$(wc -l <<<"$line")" = 1 ] && [ -n "$line" ] || h_fail "raw.csv: no single row for $wl / $row"
		IFS=, read -r -a f <<<"$line"
		sec=${f[c_sec - 1]} bytes=${f[c_bytes - 1]} exp=${f[c_exp - 1]}
		awk -v s="$sec" 'BEGIN{exit !(s > 0 && s < 600)}' || h_fail "$wl / $row: time $sec"
		[ "$bytes" = "$want" ] && [ "$exp" = "$want" ] ||
			h_fail "$wl / $row: read $bytes bytes (expected $exp), the data set has $want"
		[ "${f[c_link - 1]}" -ge 0 ] || h_fail "$wl / $row: link bytes ${f[c_link - 1]}"
		if [ "$row" != direct ] && [ "$row" != direct-v4 ]; then
			awk -v c="${f[c_cpu - 1]}" 'BEGIN{exit !(c != "" && c >= 0)}' || h_fail "$wl / $row: no proxy CPU time"
			[ "${f[c_rss - 1]:-0}" -gt 1000 ] || h_fail "$wl / $row: proxy peak RSS '${f[c_rss - 1]}' KiB"
		fi
		case $row in
		direct | direct-v4 | ganesha-proxy | *-cold) ;;
		# warm-disk: a restarted daemon on the cache the cold run left,
		# over v3 and over v4 (whose records hold the change attribute):
		# (nearly) every READ a hit
		*-warm-disk) awk -v h="${f[c_hit - 1]}" 'BEGIN{exit !(h >= 0.9 && h <= 1)}' ||
			h_fail "$wl / $row: hit ratio '${f[c_hit - 1]}' (a warm run from the cache on disk should hit it)" ;;
		*) awk -v h="${f[c_hit - 1]}" 'BEGIN{exit !(h > 0 && h <= 1)}' ||
			h_fail "$wl / $row: hit ratio '${f[c_hit - 1]}' (a warm run should hit the cache)" ;;
		esac
	done
	# direct runs move at least the file data over the link
	dl=$(awk -F, -v w="$wl" -v a="$c_wl" -v b="$c_row" -v l="$c_link" '$a==w && $b=="direct"{print $l}' "$res/raw.csv")
	[ "$dl" -ge "$want" ] || h_fail "$wl direct: only $dl bytes crossed the link for $want bytes of data"
done

# the local disk, side by side: a row for each big file on loopback, none for tar
for wl in cat-big cat-bigger tar; do
	line=$(awk -F, -v w="$wl" -v a="$c_wl" -v b="$c_row" '$a==w && $b=="local-disk"' "$res/raw.csv")
	if [ "$wl" = tar ]; then
		[ -z "$line" ] || h_fail "raw.csv has a local-disk row for tar"
		continue
	fi
	[ -n "$line" ] && [ "$(wc -l <<<"$line")" = 1 ] || h_fail "raw.csv: no single local-disk row for $wl"
	IFS=, read -r -a f <<<"$line"
	want=$(mbytes "$([ $wl = cat-big ] && echo bigfile || echo biggerfile)")
	[ "${f[c_bytes - 1]}" = "$want" ] || h_fail "local-disk $wl: read ${f[c_bytes - 1]} bytes, the file has $want"
	awk -v s="${f[c_sec - 1]}" 'BEGIN{exit !(s > 0 && s < 600)}' || h_fail "local-disk $wl: time ${f[c_sec - 1]}"
done
grep -q '^| I3: warm big-file read (cat-big, strict-warm-disk) ≥ 80 % of min(local disk [0-9]* MB/s (same rounds)' \
	"$res/report.md" || h_fail "the I3 warm-read criterion does not use the side-by-side local disk"

# summary and report
[ "$(awk -F, 'NR>1' "$res/summary.csv" | wc -l)" -ge 15 ] || h_fail "summary.csv has too few groups"
for s in '## loopback' '## Verdicts' '## Acceptance figures' '| scenario | cat-big | cat-bigger | tar |'; do
	grep -qF "$s" "$res/report.md" || h_fail "report.md lacks '$s'"
done
for wl in 'one big file' 'one bigger file' 'many small files'; do
	grep -q "^\* $wl (.*) over loopback: cachefsd .* than direct" "$res/report.md" ||
		h_fail "report.md has no verdict for $wl"
done
grep -q ' n/a |' "$res/report.md" && grep -E '^\| (direct|strict)' "$res/report.md" | grep -q 'n/a' &&
	h_fail "report.md has n/a cells for scenarios that ran"
if command -v gnuplot >/dev/null; then
	for wl in cat-big cat-bigger tar; do
		f=$res/libnfs-loopback-$wl.png
		[ -s "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '211PNG' ] ||
			h_fail "no PNG chart $f"
	done
fi
h_pass "bench smoke: tiny data set, $(echo "$rows" | wc -w) scenarios x 3 workloads on loopback, bytes verified, report, verdicts and charts produced"
