#!/bin/bash
# 80-bench-fleet-smoke: the bench's fleet profile (bench/bench.sh --fleet,
# bench/fleet.sh) at tiny scale, n=1, so that it never rots: the filer
# behind the shaped wan link, three clients reading through direct, 1-node,
# 3-independent, 3-cascade and 3-peers, cold then warm. Checks:
#  1. every setup has a cold and a warm row in fleet.csv, and each pass read
#     the data set's bytes (three clients' worth; round 1 also checked every
#     file's size and xxh64 against the generator's manifest);
#  2. what the profile exists to show: the cold pass of 3-peers and of
#     3-cascade cost the filer link less than 3-independent's (each node
#     fetching its own copy), and direct's passes carried at least the
#     three clients' data;
#  3. the warm passes of the cached setups cost the filer link less than a
#     tenth of the data (the caches answered);
#  4. the report has the "Fleet (wan)" section with a row per setup, and the
#     charts are PNGs.
# Not a timed test: no speed is asserted.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
h_need_bench

res=$H_TMP/results
mkdir -p "$H_TMP/bench-tmp"
TMPDIR=$H_TMP/bench-tmp BENCH_KEEP=1 \
	"$H_ROOT/bench/bench.sh" --fleet --build "$H_BUILD" --scale tiny --n 1 --out "$res" \
	>"$H_TMP/bench.out" 2>&1 ||
	{ tail -n 30 "$H_TMP/bench.out" >&2; h_fail "bench.sh --fleet failed"; }
h_bench_logs_clean "$H_TMP/bench-tmp"

for f in fleet.csv fleet-clients.csv fleet-summary.csv report.md meta.txt; do
	[ -s "$res/$f" ] || h_fail "the fleet profile produced no $f"
done
data=$(sed -n 's/^data=//p' "$res/meta.txt")
[ -f "$data/MANIFEST" ] || h_fail "no data-set manifest in $data"
mbytes() { awk -v p="$1" '$3==p || index($3, p"/")==1 {s+=$1} END{print s+0}' "$data/MANIFEST"; }
client=$(($(mbytes bigfile) + $(mbytes biggerfile) + $(mbytes tree-wan)))
[ "$client" -gt $((8 * 1000000)) ] || h_fail "one client's tiny workload is only $client bytes"
want=$((3 * client))

# --- 1. every setup, both passes, the data set's bytes -----------------------
col() { head -n 1 "$res/fleet.csv" | tr ',' '\n' | grep -nx "$1" | cut -d: -f1; }
c_s=$(col setup) c_p=$(col pass) c_b=$(col bytes) c_e=$(col expect_bytes) c_f=$(col filer_bytes) c_sec=$(col seconds)
filer() { awk -F, -v s="$1" -v p="$2" -v a="$c_s" -v b="$c_p" -v f="$c_f" '$a==s && $b==p {print $f}' "$res/fleet.csv"; }
for s in direct 1-node 3-independent 3-cascade 3-peers; do
	for p in cold warm; do
		line=$(awk -F, -v s="$s" -v p="$p" -v a="$c_s" -v b="$c_p" '$a==s && $b==p' "$res/fleet.csv")
		[ -n "$line" ] && [ "$(wc -l <<<"$line")" = 1 ] || h_fail "fleet.csv: no single row for $s / $p"
		IFS=, read -r -a f <<<"$line"
		[ "${f[c_b - 1]}" = "$want" ] && [ "${f[c_e - 1]}" = "$want" ] ||
			h_fail "$s / $p: read ${f[c_b - 1]} bytes (expected ${f[c_e - 1]}), three clients of the data set are $want"
		awk -v t="${f[c_sec - 1]}" 'BEGIN { exit !(t > 0 && t < 600) }' || h_fail "$s / $p: time ${f[c_sec - 1]}"
		[ "${f[c_f - 1]}" -gt 0 ] || h_fail "$s / $p: no byte crossed the filer link (${f[c_f - 1]})"
	done
done
grep -q 'VERIFY' "$H_TMP/bench.out" && h_fail "a read differed from the data set: $(grep VERIFY "$H_TMP/bench.out")"
[ "$(wc -l <"$res/fleet-clients.csv")" = $((1 + 5 * 2 * 3 * 3)) ] ||
	h_fail "fleet-clients.csv has $(($(wc -l <"$res/fleet-clients.csv") - 1)) reads, want 90 (5 setups x 2 passes x 3 clients x 3 reads)"

# --- 2. the fleet's claim: shared fills cost the filer less ------------------
ind=$(filer 3-independent cold)
peers=$(filer 3-peers cold)
casc=$(filer 3-cascade cold)
for p in cold warm; do
	[ "$(filer direct $p)" -ge "$want" ] || h_fail "direct $p carried $(filer direct $p) bytes over the filer link for $want bytes of data"
done
[ "$ind" -ge $((want * 9 / 10)) ] || h_fail "3-independent cold: the filer link carried $ind bytes, less than the three copies the nodes fetched ($want)"
[ "$peers" -lt "$ind" ] || h_fail "3-peers cold cost the filer link $peers bytes, not less than 3-independent's $ind"
[ "$casc" -lt "$ind" ] || h_fail "3-cascade cold cost the filer link $casc bytes, not less than 3-independent's $ind"

# --- 3. warm passes answered by the caches --------------------------------
for s in 1-node 3-independent 3-cascade 3-peers; do
	w=$(filer "$s" warm)
	[ "$w" -lt $((client / 10)) ] || h_fail "$s warm: the filer link carried $w bytes (want < a tenth of one client's $client)"
done

# --- 4. the report ---------------------------------------------------------
grep -q '^## Fleet (wan)' "$res/report.md" || h_fail "the report has no Fleet (wan) section"
for s in direct 1-node 3-independent 3-cascade 3-peers; do
	grep -qE "^\| $s \| [0-9.]+ \(n=1\) \| [0-9.]+× \|" "$res/report.md" || h_fail "the report has no figures for $s"
done
if command -v gnuplot >/dev/null; then
	for c in fleet-filer fleet-seconds; do
		[ "$(head -c 4 "$res/$c.png" 2>/dev/null | od -An -c | tr -d ' ')" = '211PNG' ] || h_fail "no PNG chart $c.png"
	done
fi
h_pass "fleet profile at tiny scale: 5 setups x cold/warm, 3 clients, $want bytes per pass; filer link cold: 3-independent $ind B, 3-cascade $casc B, 3-peers $peers B; warm passes under a tenth of a client's data"
