#!/bin/bash
# ttl mode: a listing answered from the metadata cache is one directory
# state the server had (issue 35). A 20 000-entry directory is churned
# straight on the server (creates, renames, removes of other names) while
# three clients list it through the proxy (meta_ttl 5), and two more right
# after the churn: no listing names anything twice or fails to end, and the
# 20 000 names that never change each appear exactly once. A client listing
# the server directly meanwhile is the control (the server's own listings
# are right).
#
# The export is a tmpfs: Linux lists it newest first, a cookie names an
# entry, and the cookie of an entry removed since makes the server list
# again from a newer one (ext4's cookies are name hashes, which hide it).
# Slow clients pause inside the pages of the churned names. Listings
# stitched from pages of different moments (before listing passes) showed
# up to 81 names twice, a page of 77 twice, or looped without end: every
# run failed; listing passes: none.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
LIST=$H_BUILD/tests/nfslist
CHURN=$H_BUILD/tests/dirchurn
N=20000
CHURN_S=${CHURN_S:-12}
AFTER_S=${AFTER_S:-6}
h_mount_tmpfs "$H_TMP/fs" 256m || h_fail "cannot mount a tmpfs"
h_start_ganesha up "$H_TMP/fs/export"
E=$H_EXPORT_up
mkdir "$E/big" || h_fail "mkdir big"
(cd "$E/big" && seq -f 's%05g' 1 $N | xargs touch) || h_fail "the $N stable names"
h_start_cachefsd px up --meta-ttl 5
P=$H_PORT_px

# lister NAME PORT MOUNTPORT SECONDS [ARGS]: lists big until SECONDS pass
# (libnfs's counts, as nfs_opendir asks), its lines into $H_TMP/NAME.out,
# its exit status into $H_TMP/NAME.rc
lister()
{
	"$LIST" --port "$2" --mountport "$3" --export "$E" --path big --seconds "$4" \
		--dircount 8192 --maxcount 8192 --stable "s:$N" --max-names $((3 * N)) "${@:5}" \
		>"$H_TMP/$1.out" 2>&1
	echo $? >"$H_TMP/$1.rc"
}
"$CHURN" "$E/big" --seconds "$CHURN_S" --rate "${CHURN_RATE:-150}" --keep 500 \
	>"$H_TMP/churn.out" 2>&1 &
churn=$!
h_track dirchurn "$churn"
# the churned names are the newest: tmpfs lists them first, so the first
# pages end at names that soon go
for ((i = 0; i < 100; i++)); do
	[ "$(find "$E/big" -name 'c*' | wc -l)" -ge 200 ] && break
	sleep 0.1
done
# a pass the cache holds whole
lister warm "$P" "$P" 600 --listings 1
grep -q "^listings 1 " "$H_TMP/warm.out" || h_fail "the warm listing: $(cat "$H_TMP/warm.out")"
m0=$(h_stat px meta_hits)
pids=()
# slow clients: 5.5 s after their first pages (names that go meanwhile),
# the rest; each listing stays the snapshot it began with
for c in 1 2 3; do
	lister "slow$c" "$P" "$P" 600 --listings 1 --pause "$c:5500" &
	pids+=($!)
done
for c in 1 2 3; do
	lister "px$c" "$P" "$P" "$CHURN_S" &
	pids+=($!)
done
lister direct "$H_NFSPORT_up" "$H_MNTPORT_up" "$CHURN_S" &
pids+=($!)
# and the starts of the listing only, as `ls | head` reads them
lister part "$P" "$P" "$CHURN_S" --pages 25 &
pids+=($!)
wait "$churn" || h_fail "dirchurn: $(cat "$H_TMP/churn.out")"
for p in "${pids[@]}"; do wait "$p"; done
# right after the churn: passes from during it are still young
pids=()
for c in 1 2; do
	lister "after$c" "$P" "$P" "$AFTER_S" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
h_log "churn: $(cat "$H_TMP/churn.out")"
bad=""
for l in direct px1 px2 px3 slow1 slow2 slow3 after1 after2; do
	h_log "$l: $(tail -n 1 "$H_TMP/$l.out")"
	rc=$(cat "$H_TMP/$l.rc")
	[ "$rc" = 0 ] || bad="$bad
$l (exit $rc): $(cat "$H_TMP/$l.out")"
	grep -Eq '^listings [1-9]' "$H_TMP/$l.out" || bad="$bad
$l: no listing: $(cat "$H_TMP/$l.out")"
done
[ -z "$bad" ] || h_fail "listings that no directory state had:$bad"
# the cache answered pages (the test would prove nothing if all were
# forwarded), and new passes were read as the old ones aged
hits=$(($(h_stat px meta_hits) - m0))
passes=$(h_stat px listing_passes)
h_log "pages answered from the cache: $hits; passes: $passes; listings that left their pass: $(h_stat px listing_left); no evidence: $(h_stat px meta_no_evidence)"
[ "$hits" -ge 1000 ] || h_fail "only $hits pages were answered from the cache"
[ "$passes" -ge 3 ] || h_fail "only $passes listing passes in $((CHURN_S + AFTER_S)) s with meta_ttl 5"
h_pass "ttl listings of a churned $N-entry directory: no name twice, every stable name once"
