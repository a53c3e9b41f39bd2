#!/bin/bash
# 79-clock-skew: the fresh guard on a filer with 1-second timestamps and the
# proxy's clock ahead of the filer's. An ext4 made with 128-byte inodes (no
# room for nanoseconds, as on many older filers) on a loop device, exported
# by nfs-ganesha; cachefsd under libfaketime, its clock 3 s and then 1 h
# ahead. A file is written on the filer, read through the proxy, and
# rewritten with the same size in the same second: (size, mtime, ctime)
# stay equal, so only the fresh guard keeps the first version out of the
# cache. Checked:
#  - 3 s ahead, before any change through the proxy (the filer's clock is
#    not known; the guard assumes 1 s and adds the tick): never stale;
#  - 3 s ahead after changes through the proxy measured the filer's clock,
#    and 1 h ahead likewise: never stale, the offset in the stats, the
#    1-second granularity found, the skew warning logged once per run;
#  - a restart with equal clocks: still the filer's bytes (before, the stale
#    copy stored under the wrong clock was served for ever).
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
OP=$H_BUILD/tests/nfsop
LIBFT=
for l in /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 /usr/lib/*/faketime/libfaketimeMT.so.1; do
	[ -f "$l" ] && LIBFT=$l && break
done
[ -n "$LIBFT" ] || h_skip "libfaketime is not installed (Debian's faketime)"

# --- the filer: ext4 with whole-second timestamps, exported by ganesha ---
EXP=$H_TMP/coarse
h_mount_coarse_ext4 "$EXP"
h_start_ganesha up "$EXP"
echo probe >"$EXP/probe"
# the filesystem, and ganesha's VFS FSAL on it, report whole seconds
[ "$(stat -c %z "$EXP/probe" | sed 's/.*\.\([0-9]*\) .*/\1/')" = 000000000 ] ||
	h_skip "ext4 -I 128 keeps nanoseconds here: $(stat -c %z "$EXP/probe")"
st=$("$OP" "$H_URL_up" stat probe) || h_fail "stat through ganesha"
[[ $st == *.000000000\ * ]] || h_fail "ganesha reports sub-second times on a 1-second filesystem: $st"

SIZES=(200 2) # KiB: chunked, and a small (inline) file
for i in 0 1; do
	h_mkdata "$H_TMP/v1-$i" "${SIZES[i]}" $((10 + i))
	h_mkdata "$H_TMP/v2-$i" "${SIZES[i]}" $((20 + i))
	cp "$H_TMP/v2-$i" "$EXP/f$i"
done
V1=("$(h_md5 "$H_TMP/v1-0")" "$(h_md5 "$H_TMP/v1-1")")
V2=("$(h_md5 "$H_TMP/v2-0")" "$(h_md5 "$H_TMP/v2-1")")

# read F through the proxy like an opening client (LOOKUP + GETATTR + READ)
prd() { "$OP" "$H_URL_px" cat "$1" | md5sum | cut -d' ' -f1; }

# start_px SKEW: the proxy with its clock SKEW ahead (libfaketime; its
# monotonic clock left alone, as a wrong wall clock leaves it)
start_px()
{
	local skew=$1
	shift
	if [ "$skew" = 0 ]; then
		h_start_cachefsd px up "$@"
	else
		# (an ASan build wants its runtime first; libfaketime only
		# wraps the clock calls, before it)
		LD_PRELOAD=$LIBFT FAKETIME="+$skew" FAKETIME_DONT_FAKE_MONOTONIC=1 \
			ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
			h_start_cachefsd px up "$@"
	fi
}

# at_second_start: wait until a second has just begun (the steps of a
# trial then fit in one second)
at_second_start()
{
	local ms
	ms=$((10#$(date +%N) / 1000000))
	[ "$ms" -lt 100 ] || sleep "0.$(printf %03d $((1000 - ms)))"
}

# trials WHAT N: N times, both files: V1 on the filer, read through the
# proxy, V2 (same size) on the filer in the same second; after the guard
# the proxy gives V2, and again from whatever it cached
trials()
{
	local what=$1 n=$2 t i tries ok t_v2 s0 end
	for ((t = 0; t < n; t++)); do
		for ((tries = 0; tries < 10; tries++)); do
			at_second_start
			for i in 0 1; do dd if="$H_TMP/v1-$i" of="$EXP/f$i" conv=notrunc status=none; done
			local c0=$(stat -c %Z "$EXP/f0" "$EXP/f1" | sort -u)
			for i in 0 1; do
				[ "$(prd f$i)" = "${V1[i]}" ] || h_fail "$what: f$i: V1 not read through the proxy"
			done
			for i in 0 1; do dd if="$H_TMP/v2-$i" of="$EXP/f$i" conv=notrunc status=none; done
			# a valid trial: both versions in one second of the filer
			[ "$(stat -c %Z "$EXP/f0" "$EXP/f1" | sort -u)" = "$c0" ] && [ "$(wc -w <<<"$c0")" = 1 ] && break
		done
		[ "$tries" -lt 10 ] || h_fail "$what: could not write, read and rewrite within one second"
		# past the guard: reads until both files are stored (a chunk and
		# a small file: stores + 2), at most until 4.2 s after the rewrite
		# (2 s + the 1 s tick + 1 s assumed: past the guard by any clock);
		# every read meanwhile must give V2 too
		t_v2=$EPOCHREALTIME
		s0=$(h_stat px stores)
		end=$(($(_h_us "$t_v2") + 4200000))
		while [ "$(h_stat px stores)" -lt $((s0 + 2)) ] && [ "$(_h_us "$EPOCHREALTIME")" -lt "$end" ]; do
			sleep 0.2
			for i in 0 1; do
				ok=$(prd f$i)
				[ "$ok" = "${V2[i]}" ] ||
					h_fail "$what: trial $t: f$i: the proxy served $([ "$ok" = "${V1[i]}" ] && echo the first version || echo "other bytes") after a same-second, same-size rewrite"
			done
		done
		h_log "$what: trial $t: $(($(h_stat px stores) - s0)) stores $(awk -v a="$t_v2" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b - a}') s after the rewrite"
		for i in 0 1; do
			ok=$(prd f$i)
			[ "$ok" = "${V2[i]}" ] ||
				h_fail "$what: trial $t: f$i: the proxy served $([ "$ok" = "${V1[i]}" ] && echo the first version || echo "other bytes") after a same-second, same-size rewrite"
			[ "$(prd f$i)" = "${V2[i]}" ] || h_fail "$what: trial $t: f$i: stale on the second read"
		done
	done
	h_log "ok: $what: $n trials, never stale"
}

# changes through the proxy at several fractions of a second: they measure
# the filer's clock
changes()
{
	local k
	for ((k = 0; k < 6; k++)); do
		echo "$k" | "$OP" "$H_URL_px" write scratch || h_fail "write through the proxy"
		sleep 0.37
	done
}

# offset_ok LO HI: the proxy's estimate of the filer's clock lies in [LO, HI] ms
offset_ok()
{
	local known off err
	known=$(h_stat px filer_clock_known)
	off=$(h_stat px filer_clock_offset_ms)
	err=$(h_stat px filer_clock_error_ms)
	[ "$known" = 2 ] || h_fail "the filer's clock is not known after changes (known=$known)"
	[ "$off" -ge "$1" ] && [ "$off" -le "$2" ] ||
		h_fail "filer clock offset $off ms (+-$err), not in [$1, $2]"
	h_log "filer clock: $off ms +- $err ms"
}

warnings() { grep -c "the filer's clock runs" "$H_LOG_px"; }

# --- 3 s ahead ---
start_px 3s
trials "3 s ahead, the filer's clock not known" 2
[ "$(h_stat px fresh_skips)" -gt 0 ] || h_fail "3 s ahead: nothing was held back by the guard"
changes
offset_ok -3700 -2300
[ "$(h_stat px filer_time_granularity_ns)" = 1000000000 ] && [ "$(h_stat px filer_time_granularity_known)" = 1 ] ||
	h_fail "granularity: $(h_stat px filer_time_granularity_ns) ns (known $(h_stat px filer_time_granularity_known))"
trials "3 s ahead, measured" 2
[ "$(h_stat px read_hits)" -gt 0 ] || h_fail "3 s ahead: nothing was served from the cache"
[ "$(warnings)" = 1 ] || h_fail "3 s ahead: $(warnings) skew warnings: $(grep "filer's clock" "$H_LOG_px")"
[ "$(h_stat px clock_skew_warnings)" = 1 ] || h_fail "clock_skew_warnings $(h_stat px clock_skew_warnings)"
h_stop_cachefsd px
mv "$H_LOG_px" "$H_TMP/px3s-cachefsd.log" # still checked for sanitizer reports

# --- 1 h ahead, same cache ---
start_px 3600s
changes
offset_ok -3600700 -3599300
trials "1 h ahead, measured" 2
[ "$(warnings)" = 1 ] || h_fail "1 h ahead: $(warnings) skew warnings: $(grep "filer's clock" "$H_LOG_px")"
h_stop_cachefsd px

# --- the clocks agree again: a restart, same cache ---
start_px 0
for i in 0 1; do
	[ "$(prd f$i)" = "${V2[i]}" ] || h_fail "restart with equal clocks: f$i is not the filer's"
	[ "$(prd f$i)" = "${V2[i]}" ] || h_fail "restart with equal clocks: f$i stale on the second read"
done
changes
offset_ok -700 700 # one whole-second stamp alone leaves +-510 ms
trials "equal clocks" 1
h_pass "1-second timestamps, the proxy 3 s and 1 h ahead: a same-second, same-size rewrite never served stale; the skew measured and said once"
