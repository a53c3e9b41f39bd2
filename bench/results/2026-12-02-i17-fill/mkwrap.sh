#!/bin/bash
# mkwrap.sh DIR REALBUILD TAG [ENV=VAL...]: DIR becomes a build dir whose
# cachefsd runs REALBUILD/cachefsd under perf stat (task-clock, faults),
# one result file per daemon in /tmp/i17-fill/stat/TAG.PID
dir=$1 real=$2 tag=$3; shift 3
mkdir -p "$dir" /tmp/i17-fill/stat
for f in "$real"/*; do n=$(basename "$f"); [ "$n" = cachefsd ] || ln -sfn "$f" "$dir/$n"; done
cat > "$dir/cachefsd" <<EOS
#!/bin/bash
env $* $real/cachefsd "\$@" & pid=\$!
perf stat -e task-clock,page-faults -p \$pid -o /tmp/i17-fill/stat/$tag.\$pid 2>/dev/null & ppid=\$!
trap 'kill -USR1 \$pid' USR1
trap 'kill -HUP \$pid' HUP
trap 'kill -TERM \$pid; wait \$pid; kill -INT \$ppid; wait \$ppid; exit 0' TERM INT
while kill -0 \$pid 2>/dev/null; do wait \$pid; done
kill -INT \$ppid; wait \$ppid
EOS
chmod +x "$dir/cachefsd"
