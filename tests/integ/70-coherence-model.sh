#!/bin/bash
# upstreams: ganesha knfsd ganesha4 cascade
# Randomized coherence model test (tests/tools/nfsmodel.c): seeded
# sequences of create / write / truncate / rename / remove / link / chmod /
# read / readdir / lookup / "tick" ops, each through the proxy or directly
# on the upstream, over a few names in a scratch directory per run (hard
# links make names share a file). Every read through the proxy (LOOKUP +
# GETATTR + READs, like a close-to-open client) must equal the upstream's
# bytes read directly right after, and so must the attributes (size, link
# count, mode, owner, mtime, ctime) of the GETATTR and the READ replies;
# listings (names, and each entry's size, type and link count) and NOENT
# lookups through the proxy must match the upstream too.
#
# Runs at once (each in its own scratch directory, so they do not disturb
# each other's checks; together they also make the proxies serve several
# clients):
#   px  (default flags):                   fixed seeds 1001 (default mix),
#                                          1002 (meta), 1003 (tick), and a
#                                          random seed (default mix); and
#                                          277741221 (default mix, 600 ops):
#                                          against nfs-ganesha 4.3 its op 591
#                                          lists a page at counts the server
#                                          fails directly too (SERVERFAULT);
#                                          the proxy must pass that on, the
#                                          tool asks the page again
#   px2 (--readahead 0 --memory-cache 0):  fixed seed 1004 (data mix)
#   px3 (ttl mode: --meta-ttl 60, --write-quiesce 2): fixed seeds 1005
#        (meta mix) and 1006 (default mix), every change through the
#        proxy (--changes proxy): a ttl proxy may answer with what it knew
#        for meta_ttl after a change made elsewhere, never after its own
# Every 150 ops a run pauses 2.2 s so that its files age past the proxy's
# fresh guard and get stored by the proxy reads that follow (the tool reads
# every file right after a pause); changes made after that must be noticed.
#
# NFSMODEL_OPS (1500; 600 against knfsd) and NFSMODEL_SEED (random) override
# the defaults. A
# failing run prints its seed and the command to repeat it alone.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NM=$H_BUILD/tests/nfsmodel
[ -x "$NM" ] || h_fail "$NM not built (make tools)"
# knfsd (a qemu guest under emulation) answers 3-10x slower than ganesha:
# 600 ops per run there (still 3 pauses, so the cache is filled and then
# must notice changes; 5 runs x 600 ops took ~65 s where 1500 took ~150 s)
if [ "${H_UPSTREAM:-ganesha}" = knfsd ]; then
	OPS=${NFSMODEL_OPS:-600}
else
	OPS=${NFSMODEL_OPS:-1500}
fi
RSEED=${NFSMODEL_SEED:-$(((RANDOM << 15 | RANDOM) % 1000000000))}

h_start_upstream up
h_start_cachefsd px up
h_start_cachefsd px2 up --readahead 0 --memory-cache 0
h_start_cachefsd px3 up --meta-ttl 60 --write-quiesce 2

names=()
pids=()
cmds=()
# run NAME PROXY SEED MIX [CHANGES [OPS]]: start one nfsmodel run in the
# background
run()
{
	local name=$1 proxy=$2 seed=$3 mix=$4 changes=${5:-both} ops=${6:-$OPS} v
	v="H_PORT_$proxy"
	local args=(--proxy-port "${!v}" --nfs-port "$H_NFSPORT_up" --mount-port "$H_MNTPORT_up"
		--export "$H_EXPORT_up" --seed "$seed" --ops "$ops" --mix "$mix"
		--changes "$changes" --pause-every 150 --pause-ms 2200 --dir "nfsmodel-$name-$seed")
	"$NM" "${args[@]}" >"$H_TMP/nfsmodel-$name.log" 2>&1 &
	h_track "nfsmodel-$name" $!
	names+=("$name")
	pids+=($!)
	cmds+=("$name: proxy $proxy, seed $seed, mix $mix, changes $changes, $ops ops")
}

echo "nfsmodel seeds: 1001-1006 (fixed), $RSEED (random); $OPS ops each; 277741221 (600 ops)"
t0=$(date +%s)
run a px 1001 default
run b px 1002 meta
run c px 1003 tick
run d px2 1004 data
run r px "$RSEED" default
run g px 277741221 default both 600
run e px3 1005 meta proxy
run f px3 1006 default proxy

failed=()
for i in "${!pids[@]}"; do
	if ! wait "${pids[i]}"; then
		failed+=("$i")
	fi
done
dt=$(($(date +%s) - t0))
for i in "${!names[@]}"; do
	grep -E "all checks passed|^nfsmodel: ops:|^nfsmodel: upstream:" "$H_TMP/nfsmodel-${names[i]}.log" |
		sed "s/^/  [${cmds[i]}] /"
done
if [ "${#failed[@]}" -gt 0 ]; then
	for i in "${failed[@]}"; do
		echo "---- nfsmodel ${cmds[i]}: FAILED ----" >&2
		grep -v '^nfsmodel: seed .*, .* ops, mix' "$H_TMP/nfsmodel-${names[i]}.log" | head -120 >&2
	done
	echo "repeat one alone (flags of its proxy: see above): $NM --proxy-port P" \
		"--nfs-port N --mount-port M --export DIR --seed S --ops $OPS --mix MIX" \
		"--changes CHANGES --pause-every 150 --verbose" >&2
	msg=
	for i in "${failed[@]}"; do
		msg+=" [${cmds[i]}]"
	done
	h_fail "coherence model mismatch or error in:$msg"
fi

# the runs must have gone through the cache, not only around it
for p in px px2 px3; do
	hits=$(h_stat $p read_hits)
	stores=$(h_stat $p stores)
	drops=$(h_stat $p data_drops)
	echo "$p: read_hits $hits stores $stores data_drops $drops"
	if [ "$stores" = MISSING ] || [ "$stores" -eq 0 ]; then
		h_fail "$p stored nothing during the runs"
	fi
	if [ "$hits" = 0 ]; then
		# a proxy whose random runs read little (px2: one data run, no
		# read-ahead) can see every re-read preceded by a change when the
		# upstream is slow (the knfsd guest, ASan): then a file read twice
		# with nothing changing must be served from its cache the second time
		head -c 300000 /dev/urandom >"$H_TMP/twice-$p"
		h_up_put up "twice-$p" "$H_TMP/twice-$p" || h_fail "cannot write twice-$p upstream"
		sleep 3.2 # older than fresh_guard (2 s) + 1 s: its data may be stored
		v="H_PORT_$p"
		for k in 1 2; do
			"$H_BUILD/tests/nfsread" --port "${!v}" --export "$H_EXPORT_up" --path "twice-$p" \
				--out "$H_TMP/twice-$p.$k" || h_fail "reading twice-$p through $p"
			cmp -s "$H_TMP/twice-$p" "$H_TMP/twice-$p.$k" || h_fail "twice-$p read through $p differs"
		done
		hits=$(h_stat $p read_hits)
		echo "$p: no hit in the random runs; a file read twice: read_hits $hits"
	fi
	if [ "$hits" = MISSING ] || [ "$hits" -eq 0 ]; then
		h_fail "$p served no read from the cache"
	fi
done
[ "$(h_stat px3 meta_hits)" -gt 0 ] || h_fail "px3 (ttl) answered no metadata call from its cache"
h_pass "7 randomized runs of $OPS ops (seeds 1001-1006, random $RSEED; strict and ttl) and seed 277741221 for 600 ops in" \
	"${dt}s: every read, attribute, listing and lookup through the proxy matched the upstream"
