# pstat NAME CMD...: perf stat on the daemon while CMD runs
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
pstat() { local name=$1; shift
	perf stat -e task-clock,context-switches,cpu-migrations,raw_syscalls:sys_enter,page-faults -p $P -o /tmp/i17-percall/stat-$name.txt & local sp=$!
	sleep 0.3; "$@"; kill -INT $sp; wait $sp; }
precord() { local name=$1; shift
	perf record -g -F 4999 -p $P -o /tmp/i17-percall/perf-$name.data 2>/dev/null & local sp=$!
	sleep 0.3; "$@"; kill -INT $sp; wait $sp; }
precdw() { local name=$1; shift
	perf record --call-graph dwarf,16384 -F 1999 -p $P -o /tmp/i17-percall/perf-$name.data 2>/dev/null & local sp=$!
	sleep 0.3; "$@"; kill -INT $sp; wait $sp; }
# lat NAME CMD: per-procedure calls and in-daemon µs per call over CMD
lat() { local name=$1; shift
	b_cfs_stats ttl > /tmp/i17-percall/st0; "$@"; b_cfs_stats ttl > /tmp/i17-percall/st1
	awk 'NR==FNR{a[$1]=$2;next} {d[$1]=$2-a[$1]} END{for(k in d) if(k ~ /^nfs_calls_/ && d[k]>0){p=substr(k,11); printf "%s calls %d  us/call %.2f\n", p, d[k], d["nfs_latency_us_" p]/d[k]}}' /tmp/i17-percall/st0 /tmp/i17-percall/st1 | sort | tee /tmp/i17-percall/lat-$name.txt; }
# cstat NAME CMD: daemon task-clock (perf stat -p) and the client's (perf stat CMD)
cstat() { local name=$1; shift
	perf stat -e task-clock,context-switches -p $P -o /tmp/i17-percall/cstat-$name-daemon.txt & local sp=$!
	sleep 0.3; perf stat -e task-clock,context-switches -o /tmp/i17-percall/cstat-$name-client.txt "$@" | tail -1; kill -INT $sp; wait $sp; }
