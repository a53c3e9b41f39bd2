#!/bin/bash
# ttl mode keeps its metadata cache across a restart (ages go on by the wall
# clock): after cachefsd restarts, a tree walk (listings, lookups, opens,
# reads) within the TTL makes no upstream LOOKUP, GETATTR or READ at all.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
OP=$H_BUILD/tests/nfsop
h_start_ganesha up
E=$H_EXPORT_up
for d in $(seq 1 6); do
	mkdir -p "$E/tree/d$d"
	for f in $(seq 1 8); do
		head -c $((d * 1000 + f * 37)) /dev/urandom >"$E/tree/d$d/f$f"
	done
done
sleep 3.2 # past the fresh guard
h_start_cachefsd px up --meta-ttl 300

walk()
{
	local d f got
	for d in $(seq 1 6); do
		got=$("$OP" "$H_URL_px" ls "tree/d$d") || h_fail "$1: ls tree/d$d"
		[ "$(wc -l <<<"$got")" = 8 ] || h_fail "$1: tree/d$d lists $(wc -l <<<"$got") names"
		for f in $(seq 1 8); do
			got=$("$OP" "$H_URL_px" cat "tree/d$d/f$f" | md5sum | cut -d' ' -f1)
			[ "$got" = "$(h_md5 "$E/tree/d$d/f$f")" ] || h_fail "$1: tree/d$d/f$f wrong bytes"
		done
	done
}
walk cold
walk warm
[ "$(h_stat px meta_hits)" -gt 100 ] || h_fail "the warm walk was not answered from the metadata cache"
h_stop_cachefsd px
h_start_cachefsd px up --meta-ttl 300
walk "after restart"
s=$(h_stats px)
for p in LOOKUP GETATTR READ READDIRPLUS ACCESS; do
	n=$(awk -v k="upstream_calls_$p" '$1==k{print $2}' <<<"$s")
	[ "$n" = 0 ] || h_fail "after a restart the walk made $n upstream $p calls"
done
h_pass "ttl mode: after a restart the tree walk made no upstream LOOKUP, GETATTR, ACCESS, READDIRPLUS or READ"
