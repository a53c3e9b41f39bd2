#!/bin/bash
# 81-bench-guest-smoke: the kernel-client part of the bench (--guest-only,
# wan, tiny scale, 2 rounds, direct and ttl) end to end, and what it shows
# pass by pass: cachefsd's counters read between the guest's passes
# (guest-passes.csv). The Linux kernel client's second pass, after
# drop_caches, is answered by cachefsd alone: its GETATTRs (close-to-open),
# ACCESSes, LOOKUPs and READDIRPLUS pages send nothing upstream, since the
# first pass's listings and answers are younger than meta_ttl.
# Not a timed test: no speed is asserted.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
h_need_bench
h_need_qemu "the kernel client guest"

res=$H_TMP/results
mkdir -p "$H_TMP/bench-tmp"
TMPDIR=$H_TMP/bench-tmp BENCH_KEEP=1 \
	"$H_ROOT/bench/bench.sh" --build "$H_BUILD" --scale tiny --guest-only --guest-n 2 \
	--modes ttl --scenarios direct,cold --out "$res" >"$H_TMP/bench.out" 2>&1 ||
	{ tail -n 30 "$H_TMP/bench.out" >&2; h_fail "bench.sh --guest-only failed"; }
h_bench_logs_clean "$H_TMP/bench-tmp"
grep -q 'guest run via .* failed\|a command failed via\|skipping the guest' "$H_TMP/bench.out" &&
	h_fail "the guest part did not run: $(grep -m1 'guest' "$H_TMP/bench.out")"

# every pass timed: 2 rounds of cat and tar, direct and ttl
for row in direct ttl-cold ttl-warm; do
	for wl in cat-big tar; do
		n=$(awk -F, -v r="$row" -v w="$wl" '$4 == r && $3 == w && $6 > 0' "$res/guest.csv" | wc -l)
		want=1
		[ "$row" = direct ] && want=2
		[ "$n" = "$want" ] || h_fail "guest.csv: $n timed $wl passes for $row, not $want"
	done
done

# the per-pass counters: each ttl pass has its rows; the second tar pass
# was answered locally
p=$res/guest-passes.csv
[ "$(head -n 1 "$p")" = "row,round,workload,proc,calls,upstream,local" ] || h_fail "guest-passes.csv header: $(head -n 1 "$p")"
v() { awk -F, -v r="$1" -v w="$2" -v q="$3" -v c="$4" \
	'$1 == "ttl" && $2 == r && $3 == w && $4 == q { print $c; f = 1 } END { if (!f) print 0 }' "$p"; }
for r in 1 2; do
	[ "$(v $r tar GETATTR 5)" -gt 0 ] || h_fail "pass $r of tar: no GETATTR counted ($(grep ",$r,tar," "$p" | tr '\n' ' '))"
	[ "$(v $r tar READ 5)" -gt 0 ] || h_fail "pass $r of tar: no READ counted"
done
[ "$(v 1 tar READDIRPLUS 6)" -gt 0 ] || h_fail "the cold pass sent no READDIRPLUS upstream"
for q in LOOKUP GETATTR ACCESS READDIRPLUS; do
	[ "$(v 2 tar $q 6)" = 0 ] ||
		h_fail "the first warm pass of tar sent $(v 2 tar $q 6) $q upstream ($(grep ",2,tar," "$p" | tr '\n' ' '))"
done
[ "$(v 2 tar ACCESS 7)" = "$(v 2 tar ACCESS 5)" ] ||
	h_fail "the first warm pass: $(v 2 tar ACCESS 7) of $(v 2 tar ACCESS 5) ACCESS answered locally"
grep -q '^Per pass (guest-passes.csv), tar' "$res/guest.md" || h_fail "guest.md has no per-pass table"
grep -q '^- ttl: .*first warm pass [0-9.]*× direct' "$res/guest.md" || h_fail "guest.md has no first-warm-pass figure"
grep -q '^Per pass (guest-passes.csv), tar' "$res/report.md" || h_fail "the report has no per-pass table"
h_pass "the guest bench counts each pass; the kernel client's first warm pass (ttl) sent no LOOKUP, GETATTR, ACCESS or READDIRPLUS upstream"
