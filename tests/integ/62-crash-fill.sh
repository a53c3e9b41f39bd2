#!/bin/bash
# upstreams: ganesha ganesha4
# 62-crash-fill: cachefsd killed with SIGKILL at random points while it
# fills the cache, restarted each time on the same cache directory.
#
# The export holds one set of files per iteration (s01, s02, ...: 3 big
# files of 16 MiB and 10 small ones of 0..150 KB each). Iteration i:
#  1. start cachefsd on the cache dir the killed run left; if
#     build/cachefsctl has a "verify" command, every indexed chunk must
#     match its checksum (cachefsctl verify on the running daemon);
#  2. read set i-1 (the one being filled when the last kill came) and the
#     small files of every earlier set through the proxy with
#     build/tests/loadgen --once (every file whole, size, eof and xxh3
#     checked against a manifest made from the export);
#     checksum_failures must be 0: a chunk is indexed only after its data
#     was written, so a killed process leaves no torn entry;
#  3. fill: 13 loadgen clients read set i concurrently (the 3 big files
#     and the small ones, random READ sizes and depths, each client at
#     most FILL_RATE bytes/s: a big file takes a client about 560 ms
#     whatever the machine, and the proxy, whose readahead runs 4 MiB
#     ahead, has filled it after about 420 ms), and cachefsd is killed
#     with SIGKILL after a random delay of KILL_MIN_MS..KILL_MAX_MS
#     (seeded): anywhere from the first fills to the last commits. Bytes served before the kill must be right too: loadgen
#     may only report broken connections, never an NFS error or a wrong
#     byte.
# A kill came "before the set was cached" when step 2 after it had to fill
# chunks of set i-1 (cache_chunks grew); "with part indexed" when some of
# the set's chunks were in the index already. At least a third of the
# kills must come before the set was cached, or the test proves little.
#
# At the end the index must be consistent: a last cachefsd reads every
# file once with the upstream up (1 MiB READs; it fills what the kills
# left missing; chunks come from their data files, checked: 0 checksum
# failures), its cache_chunks must equal the chunks the files need, then
# with nfs-ganesha stopped every file is read again by handle (loadgen
# --fh-in: no MOUNT and no LOOKUP, which would wait for the stopped
# upstream forever, hard mount) and must come from the cache (no new
# fill) with the right xxh3, the first big file of every set read by
# handle with nfsread must have the export's md5, and cachefsctl verify
# (when there) must be clean.
#
#   CRASH_SEED [random, printed]  CRASH_ITER [15]
#   KILL_MIN_MS [20]  KILL_MAX_MS [500]  FILL_RATE [30000000]
# Rerun a failure with the seed it printed: CRASH_SEED=N tests/integ/62-crash-fill.sh
# (the kill delays and the data are the same; thread timing is not).
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

LG=$H_BUILD/tests/loadgen
NR=$H_BUILD/tests/nfsread
SEED=${CRASH_SEED:-$(($(date +%s%N) % 1000000))}
ITER=${CRASH_ITER:-15}
KILL_MIN_MS=${KILL_MIN_MS:-20}
KILL_MAX_MS=${KILL_MAX_MS:-500}
FILL_RATE=${FILL_RATE:-30000000}
MiB=1048576
INLINE_MAX=65536
[ -x "$LG" ] || h_fail "$LG is missing (make tools)"
[ -x "$NR" ] || h_fail "$NR is missing (make tools)"
[ -x "$H_BUILD/cachefsd" ] || h_fail "$H_BUILD/cachefsd is missing (make)"
h_log "seed $SEED ($ITER iterations, kill after ${KILL_MIN_MS}..${KILL_MAX_MS} ms)"
echo "62-crash-fill: seed $SEED"

# our own generator (bash's RANDOM is also drawn by the harness)
RNG=$SEED
rng() # rng N: a number in 0..N-1 in $R
{
	RNG=$(((RNG * 1103515245 + 12345) % 2147483648))
	R=$(((RNG >> 8) % $1))
}

h_start_upstream up
E=$H_EXPORT_up
h_mkdata "$H_TMP/src" 2048 "$SEED"
need_chunks=0
for ((i = 1; i <= ITER; i++)); do
	s=$(printf 's%02d' "$i")
	mkdir -p "$E/$s"
	for b in 1 2 3; do
		h_mkdata "$E/$s/big$b" 16384 "$SEED-$i-$b"
		need_chunks=$((need_chunks + 16))
	done
	for f in $(seq 1 10); do
		rng 150000
		sz=$R
		rng 1000000
		dd if="$H_TMP/src" of="$E/$s/small$f" iflag=skip_bytes,count_bytes skip="$R" \
			count="$sz" status=none || h_fail "dd"
		((sz > INLINE_MAX)) && need_chunks=$((need_chunks + (sz + MiB - 1) / MiB))
	done
	(cd "$E" && "$LG" --make-manifest "$s" | sed "s|^|$s/|") >"$H_TMP/m-$s" ||
		h_fail "loadgen --make-manifest $s"
	grep '/small' "$H_TMP/m-$s" >"$H_TMP/small-$s"
done
cat "$H_TMP"/m-s* >"$H_TMP/m-all"

# --fresh-guard 0: the files were made a moment ago, and data of files
# changed in the last 2 s is served but not stored (71-writers tests that)
PXFLAGS=(--fresh-guard 0)

# ctl_verify WHEN: cachefsctl verify (every indexed chunk against its
# checksum, on the running daemon) must be clean; skipped when there is
# no cachefsctl with a verify command or the daemon has no control socket
CTL=$H_BUILD/cachefsctl
verified=0 ctl=0
[ -x "$CTL" ] && "$CTL" --help 2>&1 | grep -qw verify && ctl=1
ctl_verify()
{
	((ctl)) || return 0
	local out rc
	out=$(timeout 120 "$CTL" --cache-dir "$H_CACHE_px" verify 2>&1)
	rc=$?
	echo "verify after $1: $out" >>"$H_TMP/verify.log"
	if [ $rc = 3 ]; then
		h_log "cachefsctl cannot reach this cachefsd: no verify ($(tail -n 1 <<<"$out"))"
		ctl=0
		return 0
	fi
	[ $rc = 0 ] || h_fail "cachefsctl verify after $1 (seed $SEED): exit $rc: $(tail -n 5 <<<"$out")"
	verified=$((verified + 1))
}

# lg LABEL MANIFEST [loadgen args...]: one loadgen run, summary in $LINE
lg()
{
	local label=$1 m=$2
	shift 2
	LINE=$("$LG" --port "$H_PORT_px" --export "$E" --manifest "$m" "$@" 2>"$H_TMP/lg.err")
	LGRC=$?
	cat "$H_TMP/lg.err" >>"$H_TMP/loadgen.log"
	echo "$label: $LINE" >>"$H_TMP/loadgen.log"
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$LINE"; }
lg_ok() # lg_ok LABEL: the last run found everything right
{
	[ "$LGRC" = 0 ] || h_fail "$1 (seed $SEED): loadgen exit $LGRC: $LINE $(head -n 8 "$H_TMP/lg.err")"
}

t_start=$(date +%s)
mid=0 partial=0 chunks_before=0 kills=0
for ((i = 1; i <= ITER; i++)); do
	s=$(printf 's%02d' "$i")
	h_start_cachefsd px up "${PXFLAGS[@]}"
	if ((i > 1)); then
		p=$(printf 's%02d' $((i - 1)))
		c0=$(h_stat px cache_chunks)
		ctl_verify "kill $((i - 1))"
		# step 2: the set being filled at the kill, and older small files
		cp "$H_TMP/m-$p" "$H_TMP/check"
		for ((j = 1; j < i - 1; j++)); do
			cat "$H_TMP/small-$(printf 's%02d' "$j")" >>"$H_TMP/check"
		done
		lg "check after kill $((i - 1))" "$H_TMP/check" --clients 16 --once --seed "$i"
		lg_ok "read after kill $((i - 1)) (set $p)"
		cf=$(h_stat px checksum_failures)
		[ "$cf" = 0 ] || h_fail "after kill $((i - 1)) (seed $SEED): $cf chunks failed verification"
		c1=$(h_stat px cache_chunks)
		if ((c1 > c0)); then
			mid=$((mid + 1))
			((c0 > chunks_before)) && partial=$((partial + 1))
		fi
		h_log "kill $((i - 1)): $((c0 - chunks_before)) chunks indexed before it, $((c1 - c0)) filled after; check $(field MBps) MB/s"
		chunks_before=$c1
	fi
	# step 3: fill set i, kill at a random point
	rng $((KILL_MAX_MS - KILL_MIN_MS + 1))
	delay_ms=$((KILL_MIN_MS + R))
	"$LG" --port "$H_PORT_px" --export "$E" --manifest "$H_TMP/m-$s" --clients 13 --once \
		--seed "$SEED$i" --max-rate "$FILL_RATE" >"$H_TMP/fill.out" 2>"$H_TMP/fill.err" &
	lpid=$!
	sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
	alive "$H_PID_px" || h_fail "cachefsd died by itself in iteration $i (seed $SEED): $(tail -n 5 "$H_LOG_px")"
	h_stop_cachefsd px KILL
	kills=$((kills + 1))
	wait "$lpid"
	frc=$?
	LINE=$(cat "$H_TMP/fill.out")
	cat "$H_TMP/fill.err" >>"$H_TMP/loadgen.log"
	echo "fill $s (kill after $delay_ms ms): $LINE" >>"$H_TMP/loadgen.log"
	[ "$frc" != 3 ] || h_fail "fill of $s (seed $SEED): wrong bytes before the kill: $LINE $(head -n 8 "$H_TMP/fill.err")"
	for k in nfs_errors wrong_files bad_eof bad_attr; do
		[ "$(field $k)" = 0 ] || h_fail "fill of $s (seed $SEED): $k=$(field $k): $(head -n 8 "$H_TMP/fill.err")"
	done
	h_log "iteration $i: killed after $delay_ms ms ($(field files) files read before)"
done
t_kills=$(($(date +%s) - t_start))

# --- the end: every file, from the cache, by handle, upstream stopped ---
h_start_cachefsd px up "${PXFLAGS[@]}"
c0=$(h_stat px cache_chunks)
ctl_verify "kill $ITER"
lg "final warm" "$H_TMP/m-all" --clients 16 --once --seed 1 --rsize $MiB --fh-out "$H_TMP/handles"
lg_ok "final read of every file"
cf=$(h_stat px checksum_failures)
[ "$cf" = 0 ] || h_fail "final read (seed $SEED): $cf chunks failed verification"
chunks=$(h_stat px cache_chunks)
# a client is answered before its chunk is written: the last chunks are
# indexed after the worker's write (a busy machine: some 100 ms later)
for ((w = 0; w < 100 && chunks < need_chunks; w++)); do
	sleep 0.1
	chunks=$(h_stat px cache_chunks)
done
# the last kill: only set $ITER could be incomplete
if ((chunks > c0)); then
	mid=$((mid + 1))
	((c0 > chunks_before)) && partial=$((partial + 1))
fi
h_log "kill $ITER: $((c0 - chunks_before)) chunks indexed before it, $((chunks - c0)) filled after"
((mid * 3 >= kills)) || h_fail "only $mid of $kills kills came before the set was cached (seed $SEED)"
[ "$chunks" = "$need_chunks" ] ||
	h_fail "index has $chunks chunks, the files need $need_chunks (seed $SEED)"
fills=$(h_stat px fills)
h_stop_ganesha up
lg "upstream stopped" "$H_TMP/m-all" --clients 16 --once --rsize $MiB --fh-in "$H_TMP/handles" \
	--timeout 20
lg_ok "read by handle with the upstream stopped"
nread=$(field files)
for ((i = 1; i <= ITER; i++)); do
	s=$(printf 's%02d' "$i")
	fh=$(awk -v p="$s/big1" '$2 == p {print $1}' "$H_TMP/handles")
	got=$("$NR" --port "$H_PORT_px" --fh "$fh" --timeout 20 | md5sum | cut -d' ' -f1)
	[ "$got" = "$(h_md5 "$E/$s/big1")" ] || h_fail "$s/big1 by handle, upstream stopped: md5 differs"
done
[ "$(h_stat px fills)" = "$fills" ] || h_fail "reads with the upstream stopped made fills"
cf=$(h_stat px checksum_failures)
[ "$cf" = 0 ] || h_fail "read with the upstream stopped: $cf checksum failures"
ctl_verify "the end"
h_stop_cachefsd px
nfiles=$(wc -l <"$H_TMP/m-all")
if ((verified)); then
	vmsg="cachefsctl verify clean after $verified restarts"
else
	vmsg="no cachefsctl verify here"
fi
h_pass "seed $SEED: $kills kills by SIGKILL while filling ($mid before the set was cached," \
	"$partial of them with part indexed) in ${t_kills}s; 0 wrong bytes, 0 checksum failures;" \
	"index consistent ($chunks chunks), $nread/$nfiles files served by handle with the" \
	"upstream stopped; $vmsg"
