#!/bin/bash
# Hostile input, fuzzed: a libFuzzer target runs for FUZZ_TEST_SECONDS
# (default 60) from its seed corpus, after every kept crasher of it has been
# replayed. Any crash, sanitizer report, leak or timeout fails the test.
# `make fuzz` / `make fuzz-index` run for hours.
#   FUZZ_TARGET=rpc (default)  tests/fuzz/fuzz_rpc.c: the RPC/NFSv3/MOUNT decode
#                              path; seeds from gen_corpus, crashers in regress/
#   FUZZ_TARGET=index          tests/fuzz/fuzz_index.c: a damaged index opened
#                              and used by the store; seeds and crashers in
#                              regress-index/ (tests/integ/91-fuzz-index.sh)
cd "$(dirname "$0")/../.." || exit 1
target=${FUZZ_TARGET:-rpc}
secs=${FUZZ_TEST_SECONDS:-60}
case $target in
rpc)
	H_TEST=90-fuzz
	FZ=build-fuzz/fuzz_rpc
	GEN=build-fuzz/gen_corpus
	REGRESS=tests/fuzz/regress
	MAXLEN=70000
	WHAT="the RPC/NFSv3/MOUNT decode path"
	;;
index)
	H_TEST=91-fuzz-index
	FZ=build-fuzz/fuzz_index
	GEN=
	REGRESS=tests/fuzz/regress-index
	MAXLEN=4096
	WHAT="damaged indexes opened and used by the store"
	;;
*)
	echo "FAIL: 90-fuzz: unknown FUZZ_TARGET $target" >&2
	exit 1
	;;
esac
if [ ! -x "$FZ" ] || { [ -n "$GEN" ] && [ ! -x "$GEN" ]; }; then
	echo "FAIL: $H_TEST: $FZ not built (make fuzz-build)" >&2
	exit 1
fi
work=$(mktemp -d /tmp/cachefsd-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work # the index target's cache directories
mkdir -p "$work/corpus"
if [ -n "$GEN" ]; then
	"$GEN" "$work/corpus" || { echo "FAIL: $H_TEST: corpus" >&2; exit 1; }
fi
# the kept crashers first: each must now run clean (and seeds the corpus)
n=0
for f in "$REGRESS"/*; do
	case "$f" in */README) continue ;; esac
	[ -f "$f" ] || continue
	n=$((n + 1))
	"$FZ" "$f" >"$work/regress.log" 2>&1 || {
		echo "FAIL: $H_TEST: regression input $f crashes again:" >&2
		tail -n 30 "$work/regress.log" >&2
		exit 1
	}
	[ -z "$GEN" ] && cp "$f" "$work/corpus/"
done
(cd "$work" && "$OLDPWD/$FZ" -max_total_time="$secs" -max_len="$MAXLEN" -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 corpus >fuzz.log 2>&1)
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
if [ $rc != 0 ]; then
	echo "FAIL: $H_TEST: the fuzzer found a crash (exit $rc):" >&2
	grep -E "ERROR|SUMMARY|Test unit written|fuzz_index:" "$work/fuzz.log" | head -20 >&2
	ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null >&2
	for c in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
		[ -f "$c" ] && cp "$c" "build-fuzz/" && echo "kept $c in build-fuzz/ (add it to $REGRESS/)" >&2
	done
	exit 1
fi
echo "ok: fuzzed $WHAT for ${secs}s: $runs inputs, 0 crashes; $n regression inputs replayed"
