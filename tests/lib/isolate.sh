#!/bin/bash
# tests/lib/isolate.sh CMD [ARGS...]
#
# Runs CMD as its own "host": new network, mount and pid namespaces, with
# loopback up, a veth pair holding 10.254.0.1/24 (getaddrinfo with
# AI_ADDRCONFIG finds no IPv4 until some interface other than lo has an
# address), a fresh sysfs, a private tmpfs on /run (so rpcbind, nfs-ganesha and
# rpc.statd started inside see none of the host's). Two test runs in two
# isolate.sh shells cannot see each other's servers, so they can run at
# the same time: one nfs-ganesha per rpcbind is all that works (a second
# one fails to register its programs and exits).
#
# Everything CMD starts dies with it (the pid namespace ends with CMD).
# Exit status: CMD's.
#   tests/lib/isolate.sh tests/run-all.sh --integ-only build 60-data
set -euo pipefail
[ $# -gt 0 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "isolate.sh: needs root (namespaces)" >&2; exit 2; }
if [ "${CFS_ISOLATED:-}" != 1 ]; then
	exec unshare --net --mount --pid --fork --mount-proc --propagation private \
		env CFS_ISOLATED=1 "$0" "$@"
fi
mount -t tmpfs -o mode=755 tmpfs /run
# /sys/class/net shows the network namespace of whoever mounted sysfs: a
# fresh mount shows this one's interfaces (the bench reads veth counters)
mount -t sysfs sysfs /sys
mkdir -p /run/rpcbind /run/lock
ip link set lo up
ip link add cfsiso0 type veth peer name cfsiso1
ip addr add 10.254.0.1/24 dev cfsiso0
ip link set cfsiso0 up
ip link set cfsiso1 up
"$@"
