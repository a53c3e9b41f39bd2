#!/bin/bash
# 81-bench-knfsd-smoke: `bench/bench.sh --upstream knfsd` at tiny scale (n=1,
# loopback, cat-big and tar, strict and ttl, direct/cold/warm-disk), so that
# the kernel nfsd variant of the bench never rots: the guest boots in the
# bench's network namespace (tests/guest/server.sh --host), the data set is
# written into its export over NFS (bench/nfsput) and every byte read back
# through every scenario matches the generator's manifest. Checks what a
# user of the bench would notice: a row per scenario with the data set's
# bytes, the client reading what each server offers (direct the guest's
# 128 KiB rtmax, through cachefsd a 1 MiB chunk), a cold read filling
# each 1 MiB chunk with several READs of that size, a warm read not touching
# the filer, the report's upstream line and ratios table.
# Not a timed test: no speed is asserted. ~25-45 s (the guest's boot is most).
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
h_need_bench
h_need_qemu "the kernel nfsd guest"

res=$H_TMP/results
mkdir -p "$H_TMP/bench-tmp"
if ! TMPDIR=$H_TMP/bench-tmp BENCH_KEEP=1 BENCH_VERIFY=1 \
	"$H_ROOT/bench/bench.sh" --build "$H_BUILD" --upstream knfsd --scale tiny --n 1 --warmup 0 \
	--profiles loopback --workloads cat-big,tar --scenarios direct,cold,warm-disk \
	--out "$res" >"$H_TMP/bench.out" 2>&1; then
	grep -q 'guest cannot run here' "$H_TMP/bench.out" &&
		h_skip "$(grep 'guest cannot run here' "$H_TMP/bench.out" | tail -n 1)"
	tail -n 30 "$H_TMP/bench.out" >&2
	h_fail "bench.sh --upstream knfsd failed"
fi
# a sanitizer build: the bench's cachefsd logs must be clean too
h_bench_logs_clean "$H_TMP/bench-tmp"

for f in raw.csv summary.csv report.md meta.txt; do
	[ -s "$res/$f" ] || h_fail "the bench produced no $f"
done
grep -qx 'upstream=knfsd' "$res/meta.txt" || h_fail "meta.txt does not name the knfsd upstream"
maxblock=$(sed -n 's/^knfsd_maxblock=//p' "$res/meta.txt")
[ "$maxblock" = 131072 ] || h_fail "the 1 GiB guest's nfsd should offer 128 KiB READs, meta has '$maxblock'"
grep -q '^written: files=62 dirs=9 ' <(sed 's/^\[[0-9:]*\] //' "$H_TMP/bench.out") ||
	h_fail "nfsput did not write the tiny data set (62 files, 9 dirs): $(grep 'written:' "$H_TMP/bench.out")"

data=$(sed -n 's/^data=//p' "$res/meta.txt")
mbytes() { awk -v p="$1" '$3==p || index($3, p"/")==1 {s+=$1} END{print s+0}' "$data/MANIFEST"; }
col() { head -n 1 "$res/raw.csv" | tr ',' '\n' | grep -nx "$1" | cut -d: -f1; }
c_wl=$(col workload) c_row=$(col row) c_bytes=$(col bytes) c_calls=$(col calls)
c_hit=$(col hit_ratio) c_link=$(col link_bytes) c_fills=$(col fills) c_up=$(col upstream_calls)
rows="direct strict-cold strict-warm-disk ttl-cold ttl-warm-disk"
for wl in cat-big tar; do
	case $wl in cat-big) want=$(mbytes bigfile) ;; tar) want=$(mbytes tree) ;; esac
	for row in $rows; do
		grep -q "verified: $wl via $row (loopback): every file" "$H_TMP/bench.out" ||
			h_fail "$wl via $row: the bytes were not verified against the manifest"
		line=$(awk -F, -v w="$wl" -v r="$row" -v a="$c_wl" -v b="$c_row" '$a==w && $b==r' "$res/raw.csv")
		[ -n "$line" ] && [ "$(wc -l <<<"$line")" = 1 ] || h_fail "raw.csv: no single row for $wl / $row"
		IFS=, read -r -a f <<<"$line"
		[ "${f[c_bytes - 1]}" = "$want" ] || h_fail "$wl / $row: read ${f[c_bytes - 1]} bytes, the data set has $want"
		case $row in
		*-warm-disk)
			[ "${f[c_hit - 1]}" = 1.0000 ] || h_fail "$wl / $row: hit ratio ${f[c_hit - 1]}, a warm run should hit every READ"
			[ "${f[c_fills - 1]}" = 0 ] || h_fail "$wl / $row: ${f[c_fills - 1]} fills from the filer in a warm run" ;;
		esac
		# cat bigfile: the rsize each server offers (FSINFO): direct the
		# guest's rtmax (3 MiB / 128 KiB READs), through cachefsd a chunk
		# (3 READs of 1 MiB, plus the walk)
		if [ "$wl" = cat-big ] && [ "$row" = direct ]; then
			[ "${f[c_calls - 1]}" -ge $((want / maxblock)) ] ||
				h_fail "$wl / $row: ${f[c_calls - 1]} client calls, fewer than the READs of $maxblock bytes a 3 MiB file takes"
		elif [ "$wl" = cat-big ]; then
			[ "${f[c_calls - 1]}" -le 8 ] ||
				h_fail "$wl / $row: ${f[c_calls - 1]} client calls: the client did not read the 1 MiB cachefsd offers"
		fi
		if [ "$wl" = cat-big ] && [ "${row#*-}" = cold ]; then
			# each 1 MiB chunk filled with READs of at most rtmax
			[ "${f[c_fills - 1]}" = 3 ] || h_fail "$wl / $row: ${f[c_fills - 1]} fills for 3 chunks"
			[ "${f[c_up - 1]}" -ge $((want / maxblock)) ] ||
				h_fail "$wl / $row: ${f[c_up - 1]} upstream calls, a fill of 3 MiB at $maxblock per READ needs $((want / maxblock))"
		fi
		if [ "$row" = ttl-warm-disk ]; then
			[ "${f[c_link - 1]}" = 0 ] || h_fail "$wl / $row: ${f[c_link - 1]} bytes crossed the link to the filer"
		fi
	done
done

grep -q '^| upstream | the Linux kernel nfsd (kernel [^)]*) in a qemu TCG guest' "$res/report.md" ||
	h_fail "report.md does not describe the knfsd upstream"
grep -q '^## Ratios (kernel nfsd guest)' "$res/report.md" || h_fail "report.md has no ratios table"
grep -qE '^\| strict-warm-disk \| [0-9.]+× ± [0-9.]+ \| [0-9.]+× ± [0-9.]+ \|$' "$res/report.md" ||
	h_fail "the ratios table has no strict-warm-disk line for both workloads"
grep -q 'ganesha-proxy' "$res/raw.csv" && h_fail "a peer row in a knfsd run"
h_pass "bench --upstream knfsd smoke: tiny data set written into the guest, 5 scenarios x 2 workloads verified, 128 KiB READs direct, 1 MiB through cachefsd, multi-READ fills, report with ratios"
