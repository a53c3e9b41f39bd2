#!/bin/bash
# `make run`: start an upstream (or use UPSTREAM=nfs://server/export), put
# cachefsd in front of it, prove it by reading demo files through the proxy
# twice (the second time from the cache, with the READ hits and bytes
# served from the cache that `cachefsctl stats --json` counts), and serve
# until Ctrl-C. Everything started here is stopped on exit.
#
#   tests/lib/demo.sh BUILD_DIR [UPSTREAM_URL]
#
# DEMO_EXIT=1 (`make run DEMO_EXIT=1`): stop after the demo's output
# instead of serving (for scripts and tests/integ/09-demo.sh).
# DEMO_DIR=DIR: the demo's export and cache in DIR instead of BUILD_DIR
# (kept there, so that the next run finds the cache warm).
set -u
BUILD=${1:-build}
UPSTREAM=${2:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case $BUILD in
/*) export H_BUILD=$BUILD ;;
*) export H_BUILD=$ROOT/$BUILD ;;
esac
H_TEST=demo
# shellcheck source=tests/lib/harness.sh
. "$ROOT/tests/lib/harness.sh"

if [ "$(id -u)" != 0 ]; then
	echo "make run: needs root (nfs-ganesha, rpcbind and port 2049)" >&2
	exit 1
fi
H_TMP=$(mktemp -d /tmp/cachefsd-demo.XXXXXX)
trap h_cleanup EXIT
trap 'echo; echo "stopping"; exit 0' INT TERM

# the demo's export and cache live in the build dir, so a second `make run`
# finds the cache of the first one warm
DEMO_DIR=${DEMO_DIR:-$H_BUILD}
mkdir -p "$DEMO_DIR" || exit 1
DEMO_DIR=$(cd "$DEMO_DIR" && pwd)
DEMO_EXPORT=$DEMO_DIR/demo-export
mkdir -p "$DEMO_EXPORT/docs" "$DEMO_EXPORT/src/lib"
if [ ! -f "$DEMO_EXPORT/hello.txt" ]; then
	echo "Hello from the upstream server, read through cachefsd." >"$DEMO_EXPORT/hello.txt"
	h_mkdata "$DEMO_EXPORT/blob.bin" 4096 7
	for i in $(seq 1 50); do
		printf 'file %d\n' "$i" >"$DEMO_EXPORT/src/lib/f$i.c"
	done
	cp "$ROOT/README.md" "$DEMO_EXPORT/docs/" 2>/dev/null || true
fi

port=2049
if ss -Hltn "sport = :$port" | grep -q .; then
	port=$(h_free_port)
	echo "port 2049 is taken; using $port"
fi
H_PORT_px=$port

if [ -z "$UPSTREAM" ]; then
	h_start_ganesha demo "$DEMO_EXPORT"
	# the demo filer registered its NFS and MOUNT with this host's rpcbind;
	# cachefsd talks to it by port, and clients should find the proxy:
	# remove those registrations (only the ones at the demo filer's ports)
	# shellcheck disable=SC2154 # set by h_start_ganesha (printf -v)
	for pv in "100003 3 $H_NFSPORT_demo" "100003 4 $H_NFSPORT_demo" \
		"100005 1 $H_MNTPORT_demo" "100005 3 $H_MNTPORT_demo"; do
		read -r pr ve po <<<"$pv"
		rpcinfo -p 127.0.0.1 2>/dev/null | awk -v p="$pr" -v v="$ve" -v n="$po" \
			'$1==p && $2==v && $4==n {f=1} END {exit !f}' && rpcinfo -d "$pr" "$ve"
	done
	UPSTREAM=$H_URL_demo
	export_path=$H_EXPORT_demo
	probe=hello.txt
else
	# the path part of the URL, without the query
	export_path=${UPSTREAM#nfs://*/}
	export_path=/${export_path%%\?*}
	H_EXPORT_ext=$export_path
	H_URL_ext=$UPSTREAM
	probe=
fi
# one cache per upstream export (a cache dir made for another upstream is refused)
H_CACHE_px=$DEMO_DIR/demo-cache-$(printf '%s' "${UPSTREAM%%\?*}" | md5sum | cut -c1-8)
[ -z "${H_URL_ext:-}" ] || up=ext
h_start_cachefsd px "${up:-demo}" --allow "127.0.0.0/8,::1"
# registration with rpcbind comes after the listener: wait for "serving"
for ((i = 0; i < 50; i++)); do
	grep -q "info: serving " "$H_LOG_px" && break
	sleep 0.1
done
url="nfs://127.0.0.1$export_path?nfsport=$port&mountport=$port"

echo
echo "cachefsd is serving $UPSTREAM"
echo "  cache dir : $H_CACHE_px"
echo "  log       : $H_LOG_px"
echo "  stats     : $H_BUILD/cachefsctl --cache-dir $H_CACHE_px stats"
echo "  URL       : $url"
if grep -q "rpcbind: registered nfs v3" "$H_LOG_px" && grep -q "rpcbind: registered mount v3" "$H_LOG_px"; then
	# registered: the stock mount.nfs finds the ports through rpcbind
	echo "  mount     : mount -t nfs -o vers=3 127.0.0.1:$export_path /mnt"
	echo "  showmount : showmount -e 127.0.0.1"
else
	echo "  mount     : mount -t nfs -o vers=3,proto=tcp,port=$port,mountport=$port,mountproto=tcp,nolock 127.0.0.1:$export_path /mnt"
	why=$(grep -m1 -o "rpcbind: .*" "$H_LOG_px")
	echo "              (not registered with rpcbind, so clients need the ports: ${why:-no rpcbind line in the log})"
fi
echo "              (other machines: restart with --allow <their network> and use this host's address)"
echo

# prove it: read through the proxy, twice
CTL=("$H_BUILD/cachefsctl" --cache-dir "$H_CACHE_px")
# snap ARRAY: the counters the demo shows, from cachefsctl stats --json:
# READ hits, misses, pass-throughs, bytes from the cache, from the upstream
snap()
{
	local j
	j=$("${CTL[@]}" stats --json) || h_fail "cachefsctl stats --json failed"
	mapfile -t "$1" < <(jq -r '.read_hits, .read_misses, .read_passthrough, .bytes_from_cache,
		.upstream_read_bytes | . // 0' <<<"$j")
}
# reads LABEL: read the demo files through the proxy and check every byte;
# then print what the cache did for that read
reads()
{
	local before after got a b
	snap before
	got=$(nfs-cat "nfs://127.0.0.1$export_path/$probe?nfsport=$port&mountport=$port") ||
		h_fail "reading $probe through cachefsd failed"
	[ "$got" = "$(cat "$DEMO_EXPORT/$probe")" ] || h_fail "$probe read through cachefsd differs"
	a=$(nfs-cat "nfs://127.0.0.1$export_path/blob.bin?nfsport=$port&mountport=$port" | md5sum)
	b=$(md5sum <"$DEMO_EXPORT/blob.bin")
	[ "$a" = "$b" ] || h_fail "blob.bin read through cachefsd differs"
	snap after
	echo "OK: $1 read of $probe (\"$got\") and blob.bin (4 MiB, md5 ${a%% *}) through cachefsd"
	printf '    %s read: %d READ hits, %d misses, %d passed through; %d bytes from the cache, %d from the upstream\n' \
		"$1" $((after[0] - before[0])) $((after[1] - before[1])) $((after[2] - before[2])) \
		$((after[3] - before[3])) $((after[4] - before[4]))
	if [ $((after[0] - before[0])) -gt 0 ] && [ $((after[1] - before[1])) -gt 0 ]; then
		echo "    (hits beside misses: READs of chunks readahead fetched ahead of the reader)"
	fi
}
if [ -n "$probe" ]; then
	# cachefsd stores no data read within fresh_guard seconds of a file's
	# last change (two changes within one timestamp tick look alike), and
	# while it does not know the filer's clock yet it takes it as up to 1 s
	# behind its own: files the demo has just made are served but not
	# cached. Wait until they are older than that (only on the first run).
	guard=$("${CTL[@]}" config --json | jq -r '.fresh_guard') || guard=2
	newest=$(stat -c %.9Z "$DEMO_EXPORT/$probe" "$DEMO_EXPORT/blob.bin" | sort -n | tail -n 1)
	# the guard, the 1 s, and 0.3 s for the end of the ctime's tick
	age=$((guard + 1)).3
	left=$(($(_h_us "$newest") + $(_h_us "$age") - $(_h_us "$EPOCHREALTIME")))
	if [ "$left" -gt 0 ]; then
		echo "The demo files were just made: waiting $((left / 1000000)).$((left % 1000000 / 100000)) s until they are older than"
		echo "fresh_guard ($guard s, + 1 s while cachefsd does not know the filer's clock): data that"
		echo "new is served but not cached, as two changes within one timestamp tick look alike"
		h_sleep_until "$newest" "$age"
	fi
	reads first
	reads second
	all=()
	snap all
	echo "    (cachefsctl stats: ${all[0]} READ hits and ${all[3]} bytes from the cache in all;"
	echo "     the second read and every later one come from $H_CACHE_px)"
else
	nfs-ls "$url" >/dev/null || h_fail "listing $url through cachefsd failed"
	echo "OK: listed the export through cachefsd:"
	nfs-ls "$url" | head -n 20
	echo "    (read a file twice, then: ${CTL[*]} stats)"
fi
echo
if [ "${DEMO_EXIT:-}" = 1 ]; then
	echo "DEMO_EXIT=1: stopping."
	exit 0
fi
echo "Serving until Ctrl-C."
while kill -0 "$H_PID_px" 2>/dev/null; do
	sleep 1
done
echo "cachefsd exited; see $H_LOG_px" >&2
exit 1
