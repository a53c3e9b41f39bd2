#!/bin/bash
# Hostile input, fuzzed: the libFuzzer target (tests/fuzz/fuzz_rpc.c) runs
# for FUZZ_TEST_SECONDS (default 60) from the seed corpus, then every kept
# crasher in tests/fuzz/regress/ is replayed. Any crash, sanitizer report,
# leak or timeout fails the test. `make fuzz` runs for hours.
H_TEST=90-fuzz
cd "$(dirname "$0")/../.." || exit 1
FZ=build-fuzz/fuzz_rpc
GEN=build-fuzz/gen_corpus
secs=${FUZZ_TEST_SECONDS:-60}
if [ ! -x "$FZ" ] || [ ! -x "$GEN" ]; then
	echo "FAIL: $H_TEST: $FZ not built (make fuzz-build)" >&2
	exit 1
fi
work=$(mktemp -d /tmp/cachefsd-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
"$GEN" "$work/corpus" || { echo "FAIL: $H_TEST: corpus" >&2; exit 1; }
# the kept crashers first: each must now run clean
n=0
for f in tests/fuzz/regress/*; do
	case "$f" in */README) continue ;; esac
	[ -f "$f" ] || continue
	n=$((n + 1))
	"$FZ" "$f" >"$work/regress.log" 2>&1 || {
		echo "FAIL: $H_TEST: regression input $f crashes again:" >&2
		tail -n 30 "$work/regress.log" >&2
		exit 1
	}
done
(cd "$work" && "$OLDPWD/$FZ" -max_total_time="$secs" -max_len=70000 -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 corpus >fuzz.log 2>&1)
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
if [ $rc != 0 ]; then
	echo "FAIL: $H_TEST: the fuzzer found a crash (exit $rc):" >&2
	grep -E "ERROR|SUMMARY|Test unit written" "$work/fuzz.log" | head -20 >&2
	ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null >&2
	for c in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
		[ -f "$c" ] && cp "$c" "build-fuzz/" && echo "kept $c in build-fuzz/ (add it to tests/fuzz/regress/)" >&2
	done
	exit 1
fi
echo "ok: fuzzed the RPC/NFSv3/MOUNT decode path for ${secs}s: $runs inputs, 0 crashes; $n regression inputs replayed"
