#!/bin/bash
# A damaged index cannot take the proxy down (issue 14 item 2). Before: the
# index truncated to 12288 bytes was a SIGBUS in mdb_dbi_open before
# cachefsd listened, truncated to half a SIGBUS in the background scan
# after "serving", 2 KiB of random bytes in page 2 a SIGSEGV in
# store_lru_oldest; with Restart=on-failure, a crash loop.
# Now, for each kind of damage (truncations at 0, 12288, mid-page and half;
# random bytes at the start of, and inside, pages the index uses; a
# directory or a symbolic link where data.mdb should be): cachefsd starts,
# logs that the index was damaged, what was wrong and where it moved it,
# counts it (index_recoveries_<reason>), serves correct bytes (md5 of a
# chunked file and of small inline files) and is still running after its
# background scan; one damaged index is kept however many there were.
# Junk in a free page changes nothing; junk in the bytes of a value (the
# structure intact, so LMDB maps it) is caught by the value's checksum
# when read: logged, counted, fetched again.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
CTL=$H_BUILD/cachefsctl
[ -x "$NR" ] && [ -x "$CTL" ] || h_fail "nfsread or cachefsctl not built (make all tools)"
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/big" 6144 3 # 6 MiB: chunked, data files
mkdir -p "$E/small"
for i in $(seq 1 80); do
	head -c $((i * 700)) "$E/big" >"$E/small/s$i" # inline, some on overflow pages
done
FLAGS=(--fresh-guard 0 --readahead 0 --memory-cache 0)
h_start_cachefsd px up "${FLAGS[@]}"
P=$H_PORT_px
C=$H_CACHE_px
LOG=$H_LOG_px
rd() { "$NR" --port "$P" --export "$E" --path "$1" | md5sum | cut -d' ' -f1; }
want() { md5sum <"$E/$1" | cut -d' ' -f1; }
read_all()
{
	[ "$(rd big)" = "$(want big)" ] || h_fail "$1: big: wrong bytes through the proxy"
	for i in 1 17 40 80; do
		[ "$(rd small/s$i)" = "$(want small/s$i)" ] || h_fail "$1: small/s$i: wrong bytes"
	done
}
for i in $(seq 1 80); do rd small/s$i >/dev/null; done
read_all populate
[ "$(h_stat px cache_objects)" -ge 80 ] || h_fail "the cache holds $(h_stat px cache_objects) objects"
h_stop_cachefsd px
"$CTL" --cache-dir "$C" check-index >"$H_TMP/check" || h_fail "a healthy index: $(cat "$H_TMP/check")"
cp -a "$C" "$H_TMP/pristine"
MDB=index/data.mdb
size=$(stat -c %s "$C/$MDB")
pages=$((size / 4096))
h_log "the index: $size bytes, $pages pages"

# junk PAGE OFFSET FILE: 2 KiB of random bytes at byte OFFSET of page PAGE
junk() { head -c 2048 /dev/urandom | dd of="$3" bs=1 seek=$(($1 * 4096 + $2)) conv=notrunc status=none; }
# live_page FROM OFFSET: the first page from FROM whose junk the check sees,
# else the nearest one below FROM (pages not in use are free pages LMDB
# never reads: harmless; the last pages of a file may all be free)
live_page()
{
	local pg
	for pg in $(seq "$1" $((pages - 1))) $(seq $(($1 - 1)) -1 2); do
		cp "$H_TMP/pristine/$MDB" "$H_TMP/probe.mdb"
		junk $pg "$2" "$H_TMP/probe.mdb"
		"$CTL" check-index "$H_TMP/probe.mdb" >/dev/null || { echo $pg; return; }
	done
	h_fail "no page of the index from 2 on is in use"
}
p2=$(live_page 2 0)
pmid=$(live_page $((pages / 2)) 0)
plast=$(live_page $((pages - 8 > 2 ? pages - 8 : 2)) 0)
pin=$(live_page 2 1024)
h_log "pages in use hit: $p2 (first from 2), $pmid, $plast, $pin (inside)"

# case NAME REASONS COMMAND...: damage a copy of the pristine cache with
# COMMAND (run in the cache dir), start, check what the daemon says and serves
case_()
{
	local name=$1 reason=$2 n
	shift 2
	rm -rf "$C"
	cp -a "$H_TMP/pristine" "$C"
	(cd "$C" && "$@") || h_fail "$name: cannot damage the index"
	n=$(wc -l <"$LOG")
	h_start_cachefsd px up "${FLAGS[@]}"
	read_all "$name"
	sleep 1 # the background scan walks the index after "serving"
	alive "$H_PID_px" || h_fail "$name: cachefsd died after serving: $(tail -n 5 "$LOG")"
	read_all "$name (again)"
	tail -n +$((n + 1)) "$LOG" >"$H_TMP/case.log"
	line=$(grep -m1 "cache index .*/index/data.mdb is damaged: " "$H_TMP/case.log") ||
		h_fail "$name: no line says the index was damaged: $(head -n 20 "$H_TMP/case.log")"
	grep -q "moved to $C/index.corrupt-" <<<"$line" || h_fail "$name: where it went: $line"
	[ "$(h_stat px index_recoveries)" = 1 ] || h_fail "$name: index_recoveries $(h_stat px index_recoveries)"
	local r counted=0
	for r in ${reason//|/ }; do
		counted=$((counted + $(h_stat px "index_recoveries_$r")))
	done
	[ "$counted" = 1 ] || h_fail "$name: not counted as $reason: $line"
	h_stop_cachefsd px
	h_log "ok: $name: $(sed 's/.*is damaged: //; s/; moved to.*//' <<<"$line")"
}
case_ "zero-length" empty truncate -s 0 "$MDB"
case_ "truncated to 12288 bytes" size truncate -s 12288 "$MDB"
case_ "truncated mid-page" size truncate -s $((5 * 4096 + 1000)) "$MDB"
case_ "truncated to half" size truncate -s $((pages / 2 * 4096)) "$MDB"
case_ "truncated by 3 pages" size truncate -s $(((pages - 3) * 4096)) "$MDB"
case_ "2 KiB of junk at page $p2" page junk "$p2" 0 "$MDB"
case_ "2 KiB of junk at page $pmid" page junk "$pmid" 0 "$MDB"
case_ "2 KiB of junk at page $plast" page junk "$plast" 0 "$MDB"
case_ "2 KiB of junk inside page $pin" "page|header" junk "$pin" 1024 "$MDB"
case_ "junk in meta page 0" header junk 0 100 "$MDB"
case_ "junk in meta page 1" header junk 1 0 "$MDB"
case_ "a directory where data.mdb should be" not_a_file sh -c "rm $MDB && mkdir $MDB"
case_ "a symbolic link where data.mdb should be" not_a_file \
	sh -c "mv $MDB ../elsewhere.mdb && ln -s ../elsewhere.mdb $MDB"

# junk in a page no tree uses (free) is harmless: no recovery, still warm
free_pg=
for ((pg = 2; pg < pages; pg++)); do
	cp "$H_TMP/pristine/$MDB" "$H_TMP/probe.mdb"
	junk $pg 0 "$H_TMP/probe.mdb"
	"$CTL" check-index "$H_TMP/probe.mdb" >/dev/null && { free_pg=$pg; break; }
done
if [ -n "$free_pg" ]; then
	rm -rf "$C"
	cp -a "$H_TMP/pristine" "$C"
	junk "$free_pg" 0 "$C/$MDB"
	h_start_cachefsd px up "${FLAGS[@]}"
	read_all "junk in free page $free_pg"
	[ "$(h_stat px index_recoveries)" = 0 ] || h_fail "a free page's junk made a recovery"
	[ "$(h_stat px fills)" = 0 ] || h_fail "junk in a free page lost cached data"
	h_stop_cachefsd px
	h_log "ok: junk in free page $free_pg: no recovery, served from the cache"
fi

# junk in the bytes of a value (an overflow page holding inline data, past
# its header): the structure is intact, LMDB maps it; the inline data's
# xxh3 catches it when read: logged, dropped, fetched again, no recovery
val_pg=
for ((pg = 2; pg < pages; pg++)); do
	cp "$H_TMP/pristine/$MDB" "$H_TMP/probe.mdb"
	junk $pg 0 "$H_TMP/probe.mdb"
	"$CTL" check-index "$H_TMP/probe.mdb" >/dev/null && continue # free
	cp "$H_TMP/pristine/$MDB" "$H_TMP/probe.mdb"
	junk $pg 2048 "$H_TMP/probe.mdb"
	"$CTL" check-index "$H_TMP/probe.mdb" >/dev/null && { val_pg=$pg; break; }
done
[ -n "$val_pg" ] || h_fail "no overflow page with inline data in the index"
rm -rf "$C"
cp -a "$H_TMP/pristine" "$C"
junk "$val_pg" 2048 "$C/$MDB"
n=$(wc -l <"$LOG")
h_start_cachefsd px up "${FLAGS[@]}"
for i in $(seq 1 80); do
	[ "$(rd small/s$i)" = "$(want small/s$i)" ] || h_fail "junk in a value: small/s$i: wrong bytes"
done
read_all "junk in a value"
[ "$(h_stat px index_recoveries)" = 0 ] || h_fail "junk in a value made a recovery"
cf=$(h_stat px checksum_failures)
[ "$cf" -ge 1 ] || h_fail "junk in the inline data of page $val_pg: no checksum failure"
tail -n +$((n + 1)) "$LOG" | grep -q "inline data of handle .* fails its checksum: dropped" ||
	h_fail "junk in a value: no line says so"
for i in $(seq 1 80); do rd small/s$i >/dev/null; done
f1=$(h_stat px fills)
read_all "junk in a value (again)"
[ "$(h_stat px fills)" = "$f1" ] || h_fail "the damaged file was not cached again"
h_stop_cachefsd px
h_log "ok: junk in the inline data on page $val_pg: $cf checksum failure(s), logged, fetched again and cached"

# damaged again and again (a failing disk): one damaged index is kept
rm -rf "$C"
cp -a "$H_TMP/pristine" "$C"
for round in 1 2 3; do
	h_start_cachefsd px up "${FLAGS[@]}"
	read_all "round $round"
	h_stop_cachefsd px
	truncate -s 12288 "$C/$MDB"
done
h_start_cachefsd px up "${FLAGS[@]}"
read_all "round 4"
sleep 1
kept=$(find "$C" -maxdepth 1 -name 'index.corrupt-*' | wc -l)
[ "$kept" = 1 ] || h_fail "$kept damaged indexes kept after 3 recoveries (want 1)"
"$CTL" check-index "$(find "$C" -maxdepth 1 -name 'index.corrupt-*')" >"$H_TMP/check" &&
	h_fail "check-index calls the kept damaged index intact"
grep -q "damaged (size)" "$H_TMP/check" || h_fail "check-index: $(cat "$H_TMP/check")"
h_stop_cachefsd px
h_pass "every damaged index (13 kinds) ended in a running cachefsd that said what it did and served correct bytes; junk in a free page changed nothing, junk in a value was caught by its checksum; 1 damaged index kept after 3 recoveries"
