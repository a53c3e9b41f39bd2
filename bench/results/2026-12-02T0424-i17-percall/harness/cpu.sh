#!/bin/bash
# paired daemon CPU: after (A) and before (B) daemons on one upstream, interleaved rounds;
# per round each daemon serves 5 warm-page tar walks under perf stat -e task-clock -p PID
set -u
here=/work/wt-i17-percall/bench
B_BIN=/work/wt-i17-percall/build-release/bench
. $here/lib/env.sh
b_init
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
DATA=/tmp/i17-percall/data
b_net_up
b_start_upstream "$DATA"
b_warm_export "$DATA"
B_CACHEFSD=/work/wt-i17-percall/build-release/cachefsd b_start_cachefsd a /tmp/i17-percall/cache-a-$$ "$B_NS_IP" "$UP_NFSPORT" "$UP_MNTPORT" "$UP_EXPORT" --meta-ttl 60 ${CFS_EXTRA:-} || exit 1
B_CACHEFSD=/tmp/i17-percall/before/build-release/cachefsd b_start_cachefsd b /tmp/i17-percall/cache-b-$$ "$B_NS_IP" "$UP_NFSPORT" "$UP_MNTPORT" "$UP_EXPORT" --meta-ttl 60 ${CFS_EXTRA:-} || exit 1
tar1() { $B_BIN/nfsbench tar --host 127.0.0.1 --port $1 --mountport $1 --export "$UP_EXPORT" --path tree --window 4 --timeout 600 | sed -n 's/.*seconds=\([^ ]*\).*/\1/p'; }
for x in a b; do pv=CFS_PORT_$x; for i in 1 2 3; do tar1 ${!pv} >/dev/null; done; done
echo "round build task_clock_ms tar_s ping_us"
ping_us() { $B_BIN/nfsbench ping --host 127.0.0.1 --port $1 --count 4147 | sed -n 's/.*us_per_call=\([0-9.]*\).*/\1/p'; }
for r in $(seq 1 ${ROUNDS:-10}); do
	order="a b"; [ $((r % 2)) = 0 ] && order="b a"
	for x in $order; do
		pv=CFS_PID_$x portv=CFS_PORT_$x
		perf stat -x, -e task-clock -p ${!pv} -o /tmp/i17-percall/cpu-$x.txt & sp=$!
		sleep 0.1
		w=$(tar1 ${!portv})
		kill -INT $sp; wait $sp
		echo "$r $x $(awk -F, '/task-clock/{print $1}' /tmp/i17-percall/cpu-$x.txt) $w $(ping_us ${!portv})"
	done
done
rm -rf /tmp/i17-percall/cache-a-$$ /tmp/i17-percall/cache-b-$$
