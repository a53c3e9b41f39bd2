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
# integ/NAME@knfsd (NAME@ganesha4: ganesha reached over NFSv4.0 only). The
# filter matches "tests/integ/NAME.sh@UPSTREAM", so
# "@knfsd" selects every knfsd run and "20-nfs3" both runs of that test;
# a filter of several words selects what any of them matches.
#
# GUEST_IMAGES=DIR keeps the guest images in DIR/guest, DIR/guest-plain and
# DIR/guest-server instead of the build directory, so builds share them.
#
# -j N runs N integration tests at a time, each as a host of its own
# (tests/lib/isolate.sh: network, mount and pid namespaces, so their ports,
# rpcbinds and daemons cannot meet); a test's output is printed whole when
# it ends. The guest images are built before the tests start (once per run;
# tests/guest/mkimage.sh also locks its output directory). -j 1 (the
# default) runs them one after the other in this shell's namespaces.
#
# At the end: each failure, the ten slowest runs, the total time and one
# line "N passed, N failed, N skipped".
#
#   tests/run-all.sh [-j N] [--unit-only|--integ-only] [BUILD_DIR] [TEST_NAME_FILTER]
set -u
cd "$(dirname "$0")/.."
mode=all
jobs=1
while [ $# -gt 0 ]; do
	case "$1" in
	--unit-only) mode=unit; shift ;;
	--integ-only) mode=integ; shift ;;
	-j) jobs=${2:?-j needs a number}; shift 2 ;;
	-j*) jobs=${1#-j}; shift ;;
	*) break ;;
	esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run-all.sh: -j needs a positive number, not '$jobs'" >&2; exit 2; }
BUILD=${1:-build}
FILTER=${2:-}
export H_BUILD=$PWD/$BUILD

pass=0 fail=0 skip=0
failed=()
times=()
t_start=$(date +%s)
outdir=$(mktemp -d "/tmp/cachefsd-run-all.XXXXXX")
trap 'rm -rf "$outdir"' EXIT

# account NAME RC SECONDS: count one finished run
account()
{
	local name=$1 rc=$2 dt=$3
	times+=("$dt $name")
	if [ "$rc" = 0 ]; then
		pass=$((pass + 1))
		echo "=== PASS $name (${dt}s)"
	elif [ "$rc" = 77 ]; then
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

run_one()
{
	local name=$1
	shift
	local t0 rc
	t0=$(date +%s)
	echo "=== $name"
	"$@"
	rc=$?
	account "$name" $rc $(($(date +%s) - t0))
}

# wanted NAME: NAME matches the filter (one of its words), or there is none
wanted()
{
	local f fs
	[ -n "$FILTER" ] || return 0
	read -ra fs <<<"$FILTER"
	for f in "${fs[@]}"; do
		[[ $1 == *$f* ]] && return 0
	done
	return 1
}

# --- parallel integration runs -----------------------------------------------
# A started run is a background job whose output goes to its own file; the
# pid's slot names it, its start time and its output file.
declare -A job_name job_t0 job_out
running=0

reap_one()
{
	local pid rc
	wait -n -p pid
	rc=$?
	[ -n "${pid:-}" ] || return 0
	echo "=== ${job_name[$pid]}"
	cat "${job_out[$pid]}"
	account "${job_name[$pid]}" $rc $(($(date +%s) - ${job_t0[$pid]}))
	rm -f "${job_out[$pid]}"
	unset "job_name[$pid]" "job_t0[$pid]" "job_out[$pid]"
	running=$((running - 1))
}

start_job()
{
	local name=$1
	shift
	while [ $running -ge "$jobs" ]; do reap_one; done
	local out=$outdir/${name//[^A-Za-z0-9@-]/_}.out
	tests/lib/isolate.sh "$@" >"$out" 2>&1 </dev/null &
	job_name[$!]=$name
	job_t0[$!]=$(date +%s)
	job_out[$!]=$out
	running=$((running + 1))
	echo "--- started $name"
}

if [ $mode != integ ]; then
	for t in "$BUILD"/tests/test_*; do
		[ -x "$t" ] || continue
		case "$t" in *.d) continue ;; esac
		wanted "$t" || continue
		run_one "unit/$(basename "$t")" "$t"
	done
fi
if [ $mode != unit ]; then
	if [ "$jobs" -gt 1 ]; then
		# the guest images, once, before tests that boot them start together
		# (a failure here is the tests' to report: they skip or fail)
		images=${GUEST_IMAGES:-$BUILD}
		tests/guest/mkimage.sh "$images/guest" >/dev/null 2>&1 || true
		tests/guest/mkimage.sh --plain "$images/guest-plain" >/dev/null 2>&1 || true
		tests/guest/mkimage.sh --server "$images/guest-server" >/dev/null 2>&1 || true
	fi
	for t in tests/integ/*.sh; do
		ups=$(sed -n 's/^# upstreams:[[:space:]]*//p' "$t" | head -n 1)
		for up in ${ups:-ganesha}; do
			wanted "$t@$up" || continue
			name=integ/$(basename "$t" .sh)
			[ "$up" = ganesha ] || name+=@$up
			# not --foreground: on timeout the whole group (qemu too) is stopped
			if [ "$jobs" -gt 1 ]; then
				start_job "$name" env H_UPSTREAM="$up" timeout -k 10 900 "$t"
			else
				run_one "$name" env H_UPSTREAM="$up" timeout -k 10 900 "$t"
			fi
		done
	done
	while [ $running -gt 0 ]; do reap_one; done
fi

total=$(($(date +%s) - t_start))
echo
if [ ${#times[@]} -gt 0 ]; then
	echo "ten slowest ($BUILD):"
	printf '%s\n' "${times[@]}" | sort -rn | head -n 10 | while read -r s n; do
		printf '  %5ss  %s\n' "$s" "$n"
	done
fi
for f in "${failed[@]}"; do
	echo "  failed: $f"
done
echo "total: ${total}s ($BUILD, -j $jobs)"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
