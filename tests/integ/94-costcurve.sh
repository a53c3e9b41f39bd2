#!/bin/bash
# 94-costcurve: a smoke run of the cost-curve bench (bench/costcurve.sh, docs/
# bench.md "Cost curves") at 100 000 objects, so that it never rots:
#  1. the tool fills the index with every object it was asked for (inline
#     and chunked, metadata records) and reports every measure: the CSV row
#     has a number in every column, the report its table and (with gnuplot)
#     one chart per measure;
#  2. cachefsd starts on that cache and answers an NFS NULL, and says how
#     many objects it found: all of them;
#  3. cachefsctl verify passes on it (exit 0, no bad entry) and checked
#     every chunk and the cached bytes the store holds;
#  4. cachefsctl cull --to 90 evicts objects, and the daemon's object count
#     drops by exactly what it reports; started with cache_size below what
#     is cached, cachefsd culls on its own until it is done; the tool's own
#     cull (the same store path) removes the count asked for.
# Not a timed test: no speed is asserted.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
N=100000
[ -x "$H_BUILD/bench/costcurve" ] || h_fail "$H_BUILD/bench/costcurve not built (make bench-tools)"
out=$H_TMP/out
"$H_ROOT/bench/costcurve.sh" --build "$H_BUILD" --points $N --work "$H_TMP/work" --out "$out" \
	>"$H_TMP/run.log" 2>&1 || { tail -n 30 "$H_TMP/run.log" >&2; h_fail "costcurve.sh failed"; }
raw=$out/raw
val() { awk -v k="$2" '$1==k{print $2; f=1} END{if(!f) print "MISSING"}' "$1"; }

# --- 1. every measure ---
[ "$(val "$raw/$N-fill.txt" objects)" = $N ] || h_fail "the fill stored $(val "$raw/$N-fill.txt" objects) of $N objects"
chunks=$(val "$raw/$N-fill.txt" chunks)
[ "$chunks" -gt 0 ] && [ "$(val "$raw/$N-fill.txt" meta_records)" = $((2 * N)) ] ||
	h_fail "the fill made no chunked objects or not 2 metadata records each: $(cat "$raw/$N-fill.txt")"
[ "$(wc -l <"$out/costcurve.csv")" = 2 ] || h_fail "costcurve.csv has not one row: $(cat "$out/costcurve.csv")"
awk -F, 'NR==1{for (i = 1; i <= NF; i++) h[i] = $i; n = NF}
	NR==2{if (NF != n) {print "columns: " NF " of " n; exit 1}
		for (i = 1; i <= NF; i++) if ($i !~ /^[0-9]+(\.[0-9]+)?$/) {print h[i] " = \"" $i "\""; bad = 1}
		exit bad}' "$out/costcurve.csv" >"$H_TMP/badcols" ||
	h_fail "measures missing from costcurve.csv: $(cat "$H_TMP/badcols")"
ncols=$(head -1 "$out/costcurve.csv" | tr , '\n' | wc -l)
[ "$(grep -v '^| measure ' "$out/report.md" | grep -c '^| [a-z_0-9]* | [0-9.]* |$')" = $((ncols - 1)) ] ||
	h_fail "report.md has not one table row per measure"
if command -v gnuplot >/dev/null; then
	[ "$(find "$out" -maxdepth 1 -name '*.png' | wc -l)" = $((ncols - 1)) ] ||
		h_fail "not one chart per measure: $(ls "$out")"
fi
h_log "ok: $N objects ($chunks chunks) filled, $((ncols - 1)) measures reported"

# --- 2. the daemon on that cache ---
objects=$(val "$raw/$N-measure.txt" objects) # the fill's and the timed inserts'
for t in cold warm; do
	[ "$(val "$raw/$N-daemon-$t.txt" first_null_ms)" != MISSING ] || h_fail "no NULL answered ($t)"
	[ "$(val "$raw/$N-daemon-$t.txt" daemon_objects)" = "$objects" ] ||
		h_fail "cachefsd ($t) found $(val "$raw/$N-daemon-$t.txt" daemon_objects) of $objects objects"
done
h_log "ok: cachefsd started on the cache of $objects objects and answered a NULL"

# --- 3. verify ---
v=$raw/$N-verify.txt
summary() { awk '$1=="summary"{for (i = 2; i < NF; i += 2) if ($i == k) print $(i+1)}' k="$1" "$v"; }
[ "$(summary bad)" = 0 ] || h_fail "verify found bad entries: $(cat "$v")"
[ "$(summary chunks)" = "$(val "$raw/$N-measure.txt" chunks)" ] ||
	h_fail "verify checked $(summary chunks) chunks of $(val "$raw/$N-measure.txt" chunks)"
[ "$(summary bytes)" = "$(val "$raw/$N-measure.txt" cached_bytes)" ] ||
	h_fail "verify checked $(summary bytes) bytes of $(val "$raw/$N-measure.txt" cached_bytes)"
h_log "ok: verify clean: $(grep '^summary' "$v")"

# --- 4. culls ---
c=$raw/$N-daemon-cull.txt
ev=$(awk '$1=="evicted"{print $2}' "$c")
left=$(awk '$1=="cached"{print $5}' "$c")
[ -n "$ev" ] && [ "$ev" -gt 0 ] || h_fail "cachefsctl cull evicted nothing: $(cat "$c")"
[ "$left" = $((objects - ev)) ] || h_fail "cull reported $ev evicted, $left left of $objects"
t=$raw/$N-cull.txt
[ "$(val "$t" culled)" = $((N / 10)) ] &&
	[ "$(val "$t" objects_after)" = $(($(val "$t" objects_before) - N / 10)) ] ||
	h_fail "the tool's cull: $(cat "$t")"
a=$raw/$N-daemon-autocull.txt
[ "$(val "$a" autocull_objects)" -gt 0 ] || h_fail "cachefsd culled nothing on its own: $(cat "$a")"
h_log "ok: cachefsctl cull evicted $ev objects and $left are left; the tool culled $((N / 10));" \
	"with cache_size at 80 % cachefsd culled $(val "$a" autocull_objects) on its own"
h_pass "the cost-curve bench runs at $N objects and reports every measure"
