#!/bin/bash
# warm-disk CPU A/B: daemon task-clock while it serves a 32 MiB file from its
# disk cache after a restart and drop_caches; after (A) vs before (B)
. /work/main/tests/lib/harness.sh
h_init
A=/work/main/build-release B=/work/before/build-release
NR=$A/tests/nfsread
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/bigger" 32768 1
out=/tmp/wdprof/res.csv; : >$out
for b in A B; do
	bd=${!b}
	H_BUILD=$bd H_CACHE_$b=/tmp/wdprof/cache-$b h_start_cachefsd $b up
	pv=H_PORT_$b; $NR --port ${!pv} --export "$E" --path bigger --rsize 1048576 --out /dev/null
	h_stop_cachefsd $b
done
for r in $(seq 1 ${ROUNDS:-12}); do
	for b in A B; do
		bd=${!b}
		rm -f /tmp/wdprof/cache-$b/stats 2>/dev/null
		H_BUILD=$bd h_start_cachefsd $b up
		sleep 0.3
		echo 3 >/proc/sys/vm/drop_caches
		pv=H_PORT_$b pp=H_PID_$b
		t0=$(date +%s%N)
		perf stat -x, -e task-clock -p ${!pp} -o /tmp/wdprof/ps.$b -- $NR --port ${!pv} --export "$E" --path bigger --rsize 1048576 --out /dev/null
		t1=$(date +%s%N)
		tc=$(grep task-clock /tmp/wdprof/ps.$b | cut -d, -f1)
		echo "$r,$b,$(( (t1 - t0) / 1000 )),$tc" | tee -a $out
		h_stop_cachefsd $b
	done
done
h_pass "done"
