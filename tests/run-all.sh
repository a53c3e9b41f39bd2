#!/bin/bash
# Runs every test: cmocka unit tests, then the integration tests in
# tests/integ/ in order. Each integration test starts what it needs and
# stops it again (tests/lib/harness.sh). A test prints "SKIP: reason" and
# exits 77 when it cannot run here; with CI=1 a skip counts as a failure
# (in CI everything runs).
#
# A test whose header has a line "# upstreams: ganesha knfsd" runs once per
# upstream named there, with H_UPSTREAM set (tests/lib/harness.sh
# h_start_upstream); its runs are named integ/NAME (ganesha) and
# integ/NAME@knfsd. The filter matches "tests/integ/NAME.sh@UPSTREAM", so
# "@knfsd" selects every knfsd run and "20-nfs3" both runs of that test.
#
#   tests/run-all.sh [--unit-only|--integ-only] [BUILD_DIR] [TEST_NAME_FILTER]
set -u
cd "$(dirname "$0")/.."
mode=all
case "${1:-}" in
--unit-only) mode=unit; shift ;;
--integ-only) mode=integ; shift ;;
esac
BUILD=${1:-build}
FILTER=${2:-}
export H_BUILD=$PWD/$BUILD

pass=0 fail=0 skip=0
failed=()
run_one()
{
	local name=$1
	shift
	local t0 rc
	t0=$(date +%s)
	echo "=== $name"
	"$@"
	rc=$?
	local dt=$(($(date +%s) - t0))
	if [ $rc = 0 ]; then
		pass=$((pass + 1))
		echo "=== PASS $name (${dt}s)"
	elif [ $rc = 77 ]; then
		skip=$((skip + 1))
		echo "=== SKIP $name (${dt}s)"
		if [ -n "${CI:-}" ]; then
			fail=$((fail + 1))
			failed+=("$name (skipped in CI)")
		fi
	else
		fail=$((fail + 1))
		failed+=("$name")
		echo "=== FAIL $name (exit $rc, ${dt}s)"
	fi
}

if [ $mode != integ ]; then
	for t in "$BUILD"/tests/test_*; do
		[ -x "$t" ] || continue
		case "$t" in *.d) continue ;; esac
		[ -n "$FILTER" ] && [[ $t != *$FILTER* ]] && continue
		run_one "unit/$(basename "$t")" "$t"
	done
fi
if [ $mode != unit ]; then
	for t in tests/integ/*.sh; do
		ups=$(sed -n 's/^# upstreams:[[:space:]]*//p' "$t" | head -n 1)
		for up in ${ups:-ganesha}; do
			[ -n "$FILTER" ] && [[ $t@$up != *$FILTER* ]] && continue
			name=integ/$(basename "$t" .sh)
			[ "$up" = ganesha ] || name+=@$up
			# not --foreground: on timeout the whole group (qemu too) is stopped
			run_one "$name" env H_UPSTREAM="$up" timeout -k 10 900 "$t"
		done
	done
fi

echo
echo "tests: $pass passed, $fail failed, $skip skipped ($BUILD)"
for f in "${failed[@]}"; do
	echo "  failed: $f"
done
[ $fail = 0 ]
