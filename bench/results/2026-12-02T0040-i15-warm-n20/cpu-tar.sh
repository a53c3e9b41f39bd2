#!/bin/bash
# ttl warm-page tar CPU A/B: the daemon's task-clock while it answers a
# tar walk of the quick tree wholly from its caches (ttl 3600, warm);
# after (A) vs before (B), alternated, ROUNDS rounds.
. /work/main/tests/lib/harness.sh
h_init
A=/work/main/build-release B=/work/before/build-release
NB=$A/bench/nfsbench
h_start_ganesha up
E=$H_EXPORT_up
cp -a /work/main/build/bench-data/quick-seed1-46004e11bfb4db1a/tree "$E/tree"
out=/tmp/i15/cpt/res.csv; : >$out
for b in A B; do
	bd=${!b}
	H_BUILD=$bd h_start_cachefsd $b up --meta-ttl 3600 --fresh-guard 0 ${EXTRA:-}
	pv=H_PORT_$b
	for w in 1 2 3; do $NB tar --port ${!pv} --export "$E" --path tree >/dev/null || h_fail "warm $b"; done
done
for r in $(seq 1 ${ROUNDS:-20}); do
	for b in A B; do
		[ $((r % 2)) = 0 ] && { [ $b = A ] && b=B || b=A; }
		pv=H_PORT_$b pp=H_PID_$b
		t0=$(date +%s%N)
		perf stat -x, -e task-clock -p ${!pp} -o /tmp/i15/cpt/ps.$b -- $NB tar --port ${!pv} --export "$E" --path tree >/tmp/i15/cpt/nb.$b
		t1=$(date +%s%N)
		tc=$(grep task-clock /tmp/i15/cpt/ps.$b | cut -d, -f1)
		echo "$r,$b,$(( (t1 - t0) / 1000 )),$tc,$(tr '\n' ' ' </tmp/i15/cpt/nb.$b | cut -c1-80)" | tee -a $out
	done
done
h_pass "done"
