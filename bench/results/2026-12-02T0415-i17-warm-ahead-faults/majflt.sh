#!/bin/bash
# loop-thread major faults and walk time, warm_ahead 256 vs 0, restarted + dropped caches
. "$(dirname "$0")/../../../tests/lib/harness.sh"
h_init
NB=$H_BUILD/bench/nfsbench
h_start_ganesha up
E=$H_EXPORT_up
mkdir -p "$E/d"
for i in $(seq 1 400); do h_mkdata "$E/d/f$i" $((8 + i % 40)) "$i"; done
sleep 2.2
h_start_cachefsd px up
"$NB" tar --port "$H_PORT_px" --export "$E" --path d >/dev/null || h_fail walk
h_stop_cachefsd px
for r in 1 2 3 4; do
  for wa in 1024 0; do
    sync; echo 3 >/proc/sys/vm/drop_caches
    h_start_cachefsd px up --warm-ahead $wa
    sleep 1.5   # past the start's own index read-ahead? (keep constant)
    sync; echo 3 >/proc/sys/vm/drop_caches
    f0=$(awk '{print $12}' /proc/$H_PID_px/task/$H_PID_px/stat)
    out=$("$NB" tar --port "$H_PORT_px" --export "$E" --path d)
    f1=$(awk '{print $12}' /proc/$H_PID_px/task/$H_PID_px/stat)
    echo "wa=$wa loop_majflt=$((f1-f0)) $(echo "$out" | grep -o 'seconds=[0-9.]*') warm=$(h_stat px warm_ahead_objects) upREAD=$(h_stat px upstream_calls_READ)"
    h_stop_cachefsd px
  done
done
h_pass done
