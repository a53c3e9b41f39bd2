#!/bin/bash
# profiling harness: ganesha upstream in a namespace, one cachefsd ttl (BIN), the quick
# tree warm in its cache, then the action ACTION (perf record / perf stat / strace / loop)
set -u
here=/work/wt-i17-percall/bench
BIN=${BIN:-/work/wt-i17-percall/build-release}
B_BIN=$BIN/bench
. $here/lib/env.sh
b_init
DATA=/tmp/i17-percall/data
if [ ! -f $DATA/.complete ]; then
	rm -rf $DATA
	$B_BIN/benchgen --out $DATA --seed 1 --big bigfile=1M --big biggerfile=1M --tree "tree:files=1000,dirs=40,bytes=17000000" --tree "tree-wan:files=20,dirs=3,bytes=200000" || exit 1
	touch $DATA/.complete
	sleep 3
fi
b_net_up
b_start_upstream "$DATA"
b_warm_export "$DATA"
B_CACHEFSD=$BIN/cachefsd
b_start_cachefsd ttl /tmp/i17-percall/cache-$$ "$B_NS_IP" "$UP_NFSPORT" "$UP_MNTPORT" "$UP_EXPORT" --meta-ttl 60 ${CFS_EXTRA:-} || exit 1
P=$CFS_PID_ttl PORT=$CFS_PORT_ttl
tar1() { $B_BIN/nfsbench tar --host 127.0.0.1 --port $PORT --mountport $PORT --export "$UP_EXPORT" --path tree --window 4 --timeout 600; }
for i in 1 2 3; do tar1; done
echo "PID=$P PORT=$PORT"
tars() { local i; for ((i = 0; i < $1; i++)); do tar1; done; }
ping1() { $B_BIN/nfsbench ping --host 127.0.0.1 --port $PORT --count $1; }
eval "$ACTION"
b_cfs_stats ttl > /tmp/i17-percall/stats-last.txt
rm -rf /tmp/i17-percall/cache-$$
