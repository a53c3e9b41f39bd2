#!/bin/bash
# cachefsctl verify walks the cache index and data files:
#  1. a clean cache verifies clean (exit 0), every chunk and inline file
#     counted;
#  2. a byte flipped in a data file: verify names that chunk of that file
#     (exit 1) and leaves it; --drop-bad drops it; the next verify is clean
#     and the next read fetches the chunk again, correct;
#  3. a missing and a truncated data file are named;
#  4. verify while files are read, invalidated and refilled reports
#     nothing bad (entries that change during the walk are not errors).
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CTLBIN=$H_BUILD/cachefsctl
NR=$H_BUILD/tests/nfsread
[ -x "$CTLBIN" ] || h_fail "$CTLBIN not built"
[ -x "$NR" ] || h_fail "$NR not built (make tools)"
h_start_ganesha up
E=$H_EXPORT_up
MiB=1048576
h_mkdata "$E/big" 4096 1 # 4 chunks
h_mkdata "$E/gone" 2048 2
h_mkdata "$E/short" 3072 3
for i in $(seq 1 10); do head -c $((i * 1000)) "$E/big" >"$E/inline$i"; done
mkdir -p "$E/many"
for i in $(seq 1 12); do h_mkdata "$E/many/m$i" 2048 $((i + 10)); done

h_start_cachefsd px up --fresh-guard 0 --memory-cache 0 --readahead 0
P=$H_PORT_px
C=$H_CACHE_px
ctl() { "$CTLBIN" --cache-dir "$C" "$@"; }
st() { ctl stats --raw | awk -v k="$1" '$1==k{print $2; f=1} END{if(!f) print "MISSING"}'; }
rd() { "$NR" --port "$P" --export "$E" --path "$1" "${@:2}" | md5sum | cut -d' ' -f1; }
want() { md5sum <"$E/$1" | cut -d' ' -f1; }
summary() { awk '$1=="summary"{for (i = 2; i < NF; i += 2) if ($i == k) print $(i+1)}' k="$2" "$1"; }
# the data file of a chunked file: named by its data_id, unknown outside;
# the newest one after reading the file
data_file_of() {
	local before after
	before=$(find "$C/data" -type f | sort)
	rd "$1" >/dev/null
	after=$(find "$C/data" -type f | sort)
	comm -13 <(echo "$before") <(echo "$after") | head -1
}

# --- 1. clean ---
fbig=$(data_file_of big)
fgone=$(data_file_of gone)
fshort=$(data_file_of short)
[ -f "$fbig" ] && [ -f "$fgone" ] && [ -f "$fshort" ] || h_fail "no data files for the test files"
for i in $(seq 1 10); do rd "inline$i" >/dev/null; done
ctl verify >"$H_TMP/v1"
rc=$?
[ $rc = 0 ] || h_fail "verify of a clean cache exited $rc: $(cat "$H_TMP/v1")"
[ "$(summary "$H_TMP/v1" chunks)" = 9 ] || h_fail "verify counted chunks: $(cat "$H_TMP/v1")"
[ "$(summary "$H_TMP/v1" inline)" = 10 ] || h_fail "verify counted inline files: $(cat "$H_TMP/v1")"
[ "$(summary "$H_TMP/v1" bad)" = 0 ] || h_fail "a clean cache has bad entries: $(cat "$H_TMP/v1")"
[ "$(summary "$H_TMP/v1" bytes)" = "$(st cache_bytes)" ] || h_fail "verify bytes != cache_bytes"
h_log "ok: a clean cache verifies clean ($(tail -1 "$H_TMP/v1"))"

# --- 2. a flipped byte in chunk 1 of big ---
"$NR" --port "$P" --export "$E" --path big --length 0 --print-fh 2>"$H_TMP/fh" >/dev/null
fh=$(awk '$1=="fh"{print $2}' "$H_TMP/fh")
off=$((MiB + 4097))
b=$(od -An -tu1 -j $off -N1 "$fbig" | tr -d ' ')
printf "\\$(printf %03o $(((b + 1) % 256)))" | dd of="$fbig" bs=1 seek=$off conv=notrunc 2>/dev/null
ctl verify >"$H_TMP/v2"
rc=$?
[ $rc = 1 ] || h_fail "verify with a corrupted chunk exited $rc"
grep -qx "bad chunk fh $fh index 1: checksum mismatch" "$H_TMP/v2" ||
	h_fail "verify did not name chunk 1 of big ($fh): $(cat "$H_TMP/v2")"
[ "$(grep -c '^bad ' "$H_TMP/v2")" = 1 ] || h_fail "verify named more: $(cat "$H_TMP/v2")"
ctl verify >/dev/null && h_fail "verify without --drop-bad dropped the entry"
ctl verify --drop-bad >"$H_TMP/v3"
[ $? = 1 ] || h_fail "verify --drop-bad did not report the bad chunk"
grep -qx "bad chunk fh $fh index 1: checksum mismatch (dropped)" "$H_TMP/v3" ||
	h_fail "verify --drop-bad: $(cat "$H_TMP/v3")"
ctl verify >"$H_TMP/v4" || h_fail "verify after --drop-bad is not clean: $(cat "$H_TMP/v4")"
[ "$(summary "$H_TMP/v4" chunks)" = 8 ] || h_fail "after the drop: $(cat "$H_TMP/v4")"
f0=$(st fills) c0=$(st checksum_failures)
[ "$(rd big)" = "$(want big)" ] || h_fail "big after the drop: wrong bytes"
[ "$(st fills)" = $((f0 + 1)) ] || h_fail "the dropped chunk was not fetched again (once)"
[ "$(st checksum_failures)" = "$c0" ] || h_fail "the read met a checksum failure verify had dropped"
[ "$(st verify_bad)" -ge 3 ] && [ "$(st verify_dropped)" = 1 ] && [ "$(st verify_runs)" -ge 5 ] ||
	h_fail "verify counters: $(ctl stats --raw | grep ^verify_)"
h_log "ok: a flipped byte is named (fh and chunk), dropped with --drop-bad, fetched again"

# --- 3. a missing and a truncated data file ---
rm -f "$fgone"
truncate -s $((2 * MiB + 10)) "$fshort" # chunk 2 of 3 is short
ctl verify >"$H_TMP/v5"
[ $? = 1 ] || h_fail "verify with a missing data file exited 0"
[ "$(grep -c ': data file missing$' "$H_TMP/v5")" = 2 ] ||
	h_fail "the missing data file (2 chunks): $(cat "$H_TMP/v5")"
[ "$(grep -c ': data file too short$' "$H_TMP/v5")" = 1 ] ||
	h_fail "the truncated data file: $(cat "$H_TMP/v5")"
ctl verify --drop-bad >/dev/null
ctl verify >/dev/null || h_fail "not clean after dropping the missing and short chunks"
[ "$(rd gone)" = "$(want gone)" ] && [ "$(rd short)" = "$(want short)" ] ||
	h_fail "gone/short read wrong after the drop"
h_log "ok: missing and truncated data files are named"

# --- 4. verify while the cache changes ---
(
	for round in 1 2 3 4 5 6; do
		for i in $(seq 1 12); do
			rd "many/m$i" >/dev/null
			[ $((i % 3)) = 0 ] && "$CTLBIN" --cache-dir "$C" invalidate "many/m$i" >/dev/null
		done
	done
) &
busy=$!
n=0
while kill -0 $busy 2>/dev/null; do
	ctl verify >"$H_TMP/v6" || h_fail "verify during changes reported: $(grep -v '^summary' "$H_TMP/v6")"
	n=$((n + 1))
done
wait $busy
ctl verify >/dev/null || h_fail "not clean after the changes"
h_log "ok: $n verify runs while files were read and invalidated: nothing bad"

h_pass "verify: clean, flipped byte (named, dropped, refetched), missing/short data files, live changes"
