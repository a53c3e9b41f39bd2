#!/bin/bash
# Big files are cached when the server's READ limit is below chunk_size:
# nfs-ganesha with MaxRead = PrefRead = 32 KiB and 64 KiB (a NetApp ONTAP
# filer's default tcp-max-xfer-size is 64 KiB), cachefsd with its default
# settings (1 MiB chunks).
#  1. ganesha enforces the limit: FSINFO says rtmax, and a 1 MiB READ sent
#     through to it comes back short;
#  2. a 24 MiB file (and one of an odd size) read twice through the proxy
#     with the server's rtmax as rsize, as a kernel client would: every byte
#     right both times, the first read sends about one READ per rtmax
#     upstream, the second none, and the data is on the cache disk;
#     READs are answered as their piece comes in; four readers of one cold
#     file at once share its fills and all get the right bytes;
#  3. clients asking 1 MiB READs get them answered from the cache;
#  4. a small file of two rtmax pieces is cached inline at lookup;
#  5. the limit is in the log, cachefsctl info and stats, and the metrics;
#     clients are offered READs of a whole chunk (client_rtmax 1 MiB);
#  5b. a READ the cache does not answer (the file's writer state: a SETATTR
#     of its size through the proxy) above the server's rtmax goes upstream
#     in pieces of rtmax: every byte right, read_splits counted;
#  6. a server that answers less than its rtmax (fills made to ask 4x it):
#     the rest of each short answer is asked again, the real size is learnt
#     and logged once, every byte is right, the warm read stays local.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
CTLBIN=$H_BUILD/cachefsctl
for b in "$NR" "$CTLBIN"; do [ -x "$b" ] || h_fail "$b not built (make all tools)"; done
command -v curl >/dev/null || h_skip "curl is not installed (make deps-run)"
MiB=1048576

# both runs' files first, in the directories their nfs-ganesha exports: they
# age past the fresh guard while the first run's servers start (and the
# second run's long before it starts)
for lim in 32768 65536; do
	E=$H_TMP/up$lim-export
	mkdir -p "$E"
	h_mkdata "$E/big" 24576 $lim              # 24 MiB
	h_mkdata "$E/odd" $((3 * 1024 + 7)) 3     # 3 MiB + 7 KiB
	head -c $((lim + lim / 2)) "$E/big" >"$E/small" # two READs, below inline_max
	h_mkdata "$E/shared" 8192 7                    # 8 MiB, read by 4 at once
	h_mkdata "$E/busy" 3072 9                      # 3 MiB, in its writer state
done
t_made=$EPOCHREALTIME

for lim in 32768 65536; do
	up=up$lim px=px$lim
	H_GANESHA_EXPORT_OPTS="MaxRead = $lim; PrefRead = $lim;" h_start_ganesha $up "$H_TMP/$up-export"
	v=H_EXPORT_$up E=${!v}
	MP=$(h_free_port)
	h_start_cachefsd $px $up --metrics-listen "127.0.0.1:$MP"
	# older than fresh_guard (2 s) + 1 s: stored, with default settings
	h_sleep_until "$t_made" 3.2
	v=H_PORT_$px P=${!v}
	v=H_CACHE_$px C=${!v}
	v=H_LOG_$px L=${!v}
	rd() { "$NR" --port "$P" --export "$E" --path "$1" "${@:2}" | md5sum | cut -d' ' -f1; }
	want() { h_md5 "$E/$1"; }
	ups() { h_stat $px upstream_calls_READ; }

	# --- 1. the server enforces its limit ---
	grep -q "rtmax $lim," "$L" || h_fail "rtmax $lim: FSINFO did not say so: $(grep mounted "$L")"
	# the handle through the proxy, then 1 MiB READs straight to ganesha
	"$NR" --port "$P" --export "$E" --path small --print-fh 2>"$H_TMP/fh" >/dev/null ||
		h_fail "rtmax $lim: read of small failed"
	fh=$(awk '$1=="fh"{print $2}' "$H_TMP/fh")
	v=H_NFSPORT_$up
	"$NR" --port "${!v}" --fh "$fh" --rsize $MiB --print-reads 2>"$H_TMP/direct" >/dev/null ||
		h_fail "rtmax $lim: direct read failed"
	grep -qx "reads 2 max $lim" "$H_TMP/direct" ||
		h_fail "rtmax $lim: ganesha does not enforce MaxRead: $(cat "$H_TMP/direct")"

	# --- 2. read twice at rsize = rtmax ---
	for f in big odd; do
		r0=$(ups)
		[ "$(rd $f --rsize $lim)" = "$(want $f)" ] || h_fail "rtmax $lim: cold read of $f: md5 differs"
		r1=$(ups)
		size=$(stat -c %s "$E/$f")
		chunks=$(((size + MiB - 1) / MiB))
		need=$(((size + lim - 1) / lim))
		cold=$((r1 - r0))
		# a READ per rtmax of the file, rounded up per chunk
		[ "$cold" -ge "$need" ] && [ "$cold" -le $((need + chunks)) ] ||
			h_fail "rtmax $lim: cold read of $f ($size bytes) sent $cold READs upstream (want $need)"
		[ "$(rd $f --rsize $lim)" = "$(want $f)" ] || h_fail "rtmax $lim: warm read of $f: md5 differs"
		warm=$(($(ups) - r1))
		[ "$warm" = 0 ] || h_fail "rtmax $lim: warm read of $f sent $warm READs upstream"
		h_log "ok: rtmax $lim: $f ($size bytes) cold $cold upstream READs, warm 0"
	done
	[ "$(h_stat $px cache_chunks)" -ge 28 ] || h_fail "rtmax $lim: only $(h_stat $px cache_chunks) chunks cached"
	# READs of one rtmax were answered as their piece came in, before
	# the rest of their chunk
	[ "$(h_stat $px fill_early)" -gt 0 ] || h_fail "rtmax $lim: no READ was answered before its chunk was complete"

	# --- 2b. four readers of one cold file at once share its fills ---
	# par4 WHAT: four readers of shared at once, every byte checked; sets
	# par to the upstream READs they cost (not $(...): h_fail must exit
	# the test, not a subshell)
	par4() {
		local r0 i pids=()
		r0=$(ups)
		for i in 1 2 3 4; do rd shared --rsize $lim >"$H_TMP/par$i" & pids+=($!); done
		wait "${pids[@]}" # not a bare wait: the servers are children too
		for i in 1 2 3 4; do
			[ "$(cat "$H_TMP/par$i")" = "$(want shared)" ] ||
				h_fail "rtmax $lim: $1 parallel reader $i: md5 differs"
		done
		par=$(($(ups) - r0))
	}
	par4 cold
	need=$((8 * MiB / lim))
	[ "$par" -le $((need * 3 / 2)) ] ||
		h_fail "rtmax $lim: 4 parallel cold reads of 8 MiB sent $par READs upstream (one read: $need)"
	cold=$par
	par4 warm
	[ "$par" = 0 ] || h_fail "rtmax $lim: 4 parallel warm reads sent $par READs upstream"
	h_log "ok: rtmax $lim: 4 parallel readers: cold $cold upstream READs for 8 MiB, warm 0"
	[ "$(h_stat $px fill_short_reads)" = 0 ] || h_fail "rtmax $lim: ganesha answered short before EOF"

	# --- 3. a client asking more than the server's rtmax ---
	r0=$(ups)
	[ "$(rd big --rsize $MiB)" = "$(want big)" ] || h_fail "rtmax $lim: 1 MiB READs: md5 differs"
	[ "$(($(ups) - r0))" = 0 ] || h_fail "rtmax $lim: 1 MiB READs of a cached file went upstream"

	# --- 4. a small file of two pieces: inline, prefetched at lookup ---
	[ "$(rd small --rsize $lim)" = "$(want small)" ] || h_fail "rtmax $lim: small: md5 differs"
	r0=$(ups)
	[ "$(rd small --rsize $lim)" = "$(want small)" ] || h_fail "rtmax $lim: small (warm): md5 differs"
	[ "$(($(ups) - r0))" = 0 ] || h_fail "rtmax $lim: warm read of small went upstream"

	# --- 5. what the operator sees ---
	per=$((MiB / lim))
	grep -q "fills: $per READs of $((lim / 1024)) KiB per 1024 KiB chunk" "$L" ||
		h_fail "rtmax $lim: the start-up line does not say what fills use: $(grep mounted "$L")"
	"$CTLBIN" --cache-dir "$C" info >"$H_TMP/info" || h_fail "cachefsctl info failed"
	for kv in "upstream_rtmax $lim" "client_rtmax $MiB" "fill_read_size $lim" \
		"fill_reads_per_chunk $per" "chunk_size $MiB" "fills_blocked none"; do
		grep -qx "$kv" "$H_TMP/info" || h_fail "rtmax $lim: info lacks '$kv': $(cat "$H_TMP/info")"
	done
	"$CTLBIN" --cache-dir "$C" stats >"$H_TMP/table" || h_fail "cachefsctl stats failed"
	grep -q "$per READs of $((lim / 1024)).0 KiB per 1.0 MiB chunk (upstream rtmax $((lim / 1024)).0 KiB)" \
		"$H_TMP/table" || h_fail "rtmax $lim: the stats table: $(cat "$H_TMP/table")"
	grep -q "BLOCKED" "$H_TMP/table" && h_fail "rtmax $lim: stats say caching is blocked"
	curl -sf "http://127.0.0.1:$MP/metrics" >"$H_TMP/metrics" || h_fail "scrape failed"
	for kv in "cachefsd_upstream_read_max_bytes $lim" "cachefsd_fill_read_bytes $lim" \
		"cachefsd_fill_reads_per_chunk $per" \
		'cachefsd_fills_blocked{reason="no_read_attributes"} 0'; do
		grep -qxF "$kv" "$H_TMP/metrics" || h_fail "rtmax $lim: metrics lack '$kv'"
	done
	h_log "ok: rtmax $lim shown in the log, info, stats and metrics"

	# --- 5b. a forwarded READ above the server's rtmax ---
	out=$("$H_BUILD/tests/nfscall" --port "$P" --export "$E" --path busy setsize $((3 * MiB)))
	[ "$out" = "status NFS3_OK" ] || h_fail "rtmax $lim: SETATTR of busy's size: $out"
	s0=$(h_stat $px read_splits) w0=$(h_stat $px writer_passthrough) r0=$(ups)
	[ "$(rd busy --rsize $MiB)" = "$(want busy)" ] || h_fail "rtmax $lim: 1 MiB READs of a file being written: md5 differs"
	splits=$(($(h_stat $px read_splits) - s0)) sent=$(($(ups) - r0))
	[ "$(($(h_stat $px writer_passthrough) - w0))" -ge 3 ] || h_fail "rtmax $lim: busy's READs were not forwarded"
	[ "$splits" -ge 3 ] || h_fail "rtmax $lim: 1 MiB READs forwarded to a $lim server were not split ($splits)"
	[ "$sent" -ge $((3 * MiB / lim)) ] || h_fail "rtmax $lim: 3 MiB forwarded in $sent READs of at most $lim"
	h_log "ok: rtmax $lim: 1 MiB READs of a file being written: $splits split into $sent upstream READs, bytes right"
	h_stop_cachefsd $px

	# --- 6. a server that answers less than its rtmax ---
	# (CFS_TEST_RTMAX: fills take the rtmax for 4 times the real one, so ganesha answers
	# every READ of theirs short: RFC 1813 allows it before EOF)
	H_CACHE_sx=$H_TMP/sx$lim-cache
	CFS_TEST_RTMAX=$((4 * lim)) h_start_cachefsd sx$lim $up
	sx=sx$lim
	v=H_PORT_$sx P=${!v}
	v=H_LOG_$sx L=${!v}
	r0=$(h_stat $sx upstream_calls_READ)
	[ "$(rd big --rsize $lim)" = "$(want big)" ] || h_fail "rtmax $lim, short answers: cold read: md5 differs"
	short=$(h_stat $sx fill_short_reads)
	[ "$short" -ge 2 ] || h_fail "rtmax $lim: ganesha's short answers were not followed up ($short)"
	grep -q "upstream answers READs with at most $lim bytes" "$L" ||
		h_fail "rtmax $lim: the real READ size was not learnt: $(grep -i 'answers READs' "$L")"
	[ "$(grep -c 'upstream answers READs' "$L")" = 1 ] || h_fail "rtmax $lim: the short answers were logged more than once"
	[ "$(h_stat $sx fill_read_size)" = $lim ] || h_fail "rtmax $lim: fill_read_size $(h_stat $sx fill_read_size)"
	cold=$(($(h_stat $sx upstream_calls_READ) - r0))
	[ "$cold" -le $((24 * MiB / lim + 48)) ] || h_fail "rtmax $lim, short answers: cold read sent $cold READs"
	r0=$(h_stat $sx upstream_calls_READ)
	[ "$(rd big --rsize $lim)" = "$(want big)" ] || h_fail "rtmax $lim, short answers: warm read: md5 differs"
	[ "$(($(h_stat $sx upstream_calls_READ) - r0))" = 0 ] || h_fail "rtmax $lim, short answers: warm read went upstream"
	h_log "ok: rtmax $lim: a server answering short: $short answers followed up, cold $cold READs, warm 0"
	h_stop_cachefsd $sx
	h_stop_ganesha $up
done
h_pass "files above chunk_size cached at rtmax 32 KiB and 64 KiB: warm reads send no READ upstream"
