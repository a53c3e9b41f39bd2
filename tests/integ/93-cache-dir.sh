#!/bin/bash
# The cache directory is the daemon's own (issue 14 item 3). Before: a cache
# dir of another user, mode 0777, was accepted; that user could pre-create
# data/00/00/0000010000000000 (the first data file of a new cache) and
# received the 8 MiB of a 0600 file the next reader cached; a data file
# swapped for a symbolic link made the daemon write cached data through it.
# Now:
#  1. a cache dir (or its index/, data/, CACHE) of another user, writable by
#     group or others, or a link, is refused at start: non-zero exit, a
#     message naming the path and the fix, nothing listening;
#  2. a data file planted where a new object's file goes is never used: the
#     reader gets correct bytes, the planted file gets nothing, the log
#     says so, the file is cached again under a new data file;
#  3. a data file swapped for a symbolic link after it was created: nothing
#     is written through it (its target is unchanged), reads are correct.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
CFS=$H_BUILD/cachefsd
NR=$H_BUILD/tests/nfsread
[ -x "$NR" ] || h_fail "$NR not built (make tools)"
h_start_ganesha up
E=$H_EXPORT_up
h_mkdata "$E/secret" 8192 5 # 8 MiB, 0600: the issue's file
chmod 0600 "$E/secret"
h_mkdata "$E/other" 8192 6
FLAGS=(--fresh-guard 0 --readahead 0 --memory-cache 0)
want() { md5sum <"$E/$1" | cut -d' ' -f1; }

# --- 1. refused at start ---
port=$(h_free_port)
C=$H_TMP/c
refused()
{
	local want=$1 fix=$2 out rc
	out=$(timeout 60 "$CFS" --foreground --listen "127.0.0.1:$port" --upstream "$H_URL_up" \
		--cache-dir "$C" "${FLAGS[@]}" 2>&1)
	rc=$?
	[ $rc != 0 ] || h_fail "cachefsd started with: $want"
	[ $rc != 124 ] || h_fail "cachefsd did not exit within 60 s ($want)"
	grep -qF -- "$want" <<<"$out" || h_fail "wanted '$want' in: $out"
	grep -qF -- "$fix" <<<"$out" || h_fail "wanted the fix '$fix' in: $out"
	! ss -Hltn "sport = :$port" | grep -q . || h_fail "a listener was left ($want)"
	h_log "ok: refused: $(grep -o 'cache_dir.*' <<<"$out" | head -n 1 | cut -c1-160)"
}
starts()
{
	h_start_cachefsd px up "${FLAGS[@]}"
	h_stop_cachefsd px
}
H_CACHE_px=$C
starts # a new cache dir (0700)
chown 65534:65534 "$C"
refused "$C is owned by uid 65534, not by uid 0 that cachefsd runs as" "run as root: cachefsctl chown root --cache-dir $C"
chown 0:0 "$C"
chmod 0777 "$C"
refused "$C is writable by its group and others (mode 0777)" "chmod go-w $C"
chmod 0775 "$C"
refused "$C is writable by its group (mode 0775)" "chmod go-w $C"
chmod 0755 "$C"
starts # others may read: the files are 0600
chmod 0777 "$C/index"
refused "$C/index is writable by its group and others" "chmod go-w $C/index"
chmod 0700 "$C/index"
chown 65534 "$C/data"
refused "$C/data is owned by uid 65534" "cachefsctl chown root --cache-dir $C"
chown 0 "$C/data"
chmod 0666 "$C/CACHE"
refused "$C/CACHE is writable by its group and others" "chmod go-w $C/CACHE"
chmod 0600 "$C/CACHE"
mv "$C/data" "$H_TMP/elsewhere" && ln -s "$H_TMP/elsewhere" "$C/data"
refused "$C/data is a symbolic link" "replace it with a directory"
rm "$C/data" && mv "$H_TMP/elsewhere" "$C/data"
starts

# --- 2. a data file planted where the next new object's file goes ---
H_CACHE_px=$H_TMP/c2
h_start_cachefsd px up "${FLAGS[@]}"
P=$H_PORT_px
C2=$H_CACHE_px
first=$C2/data/00/00/0000010000000000 # the first data id of a new cache
mkdir -p "$(dirname "$first")"
printf PLANTED >"$first"
chown 65534:65534 "$first"
chmod 0666 "$first"
ln "$first" "$H_TMP/planted" # what the planter keeps reading
got=$("$NR" --port "$P" --export "$E" --path secret | md5sum | cut -d' ' -f1)
[ "$got" = "$(want secret)" ] || h_fail "planted: wrong bytes through the proxy"
[ "$(cat "$H_TMP/planted")" = PLANTED ] ||
	h_fail "the planted file received $(stat -c %s "$H_TMP/planted") bytes of the secret"
grep -q "data file data/00/00/0000010000000000 already existed when a new object needed it (a file of uid 65534" \
	"$H_LOG_px" || h_fail "no log line about the planted file"
[ "$(h_stat px data_files_refused)" -ge 1 ] || h_fail "data_files_refused not counted"
# cached again elsewhere: the next reads come from the cache
"$NR" --port "$P" --export "$E" --path secret >/dev/null
f1=$(h_stat px fills)
got=$("$NR" --port "$P" --export "$E" --path secret | md5sum | cut -d' ' -f1)
[ "$got" = "$(want secret)" ] || h_fail "planted: wrong bytes on a warm read"
[ "$(h_stat px fills)" = "$f1" ] || h_fail "the file was not cached again after the planted one"
h_log "ok: a planted data file got nothing (still 'PLANTED'); the file was cached in a new one"

# --- 3. a data file swapped for a symbolic link after it was created ---
printf 'VICTIM: must not change\n' >"$H_TMP/victim"
vmd5=$(h_md5 "$H_TMP/victim")
touch "$H_TMP/mark"
sleep 1.1
"$NR" --port "$P" --export "$E" --path other --length 1048576 >/dev/null || h_fail "first chunk"
sleep 0.5 # the worker writes it
df=$(find "$C2/data" -type f -newer "$H_TMP/mark" -size +1000k | head -n 1)
[ -n "$df" ] || h_fail "no data file for the first chunk of 'other'"
rm "$df" && ln -s "$H_TMP/victim" "$df"
got=$("$NR" --port "$P" --export "$E" --path other | md5sum | cut -d' ' -f1)
[ "$got" = "$(want other)" ] || h_fail "symlink: wrong bytes through the proxy"
got=$("$NR" --port "$P" --export "$E" --path other | md5sum | cut -d' ' -f1)
[ "$got" = "$(want other)" ] || h_fail "symlink: wrong bytes on the second read"
[ "$(h_md5 "$H_TMP/victim")" = "$vmd5" ] || h_fail "the daemon wrote through the link"
grep -q "is not a file of ours (a symbolic link" "$H_LOG_px" ||
	h_fail "no log line about the link: $(grep 'data file' "$H_LOG_px" | tail -n 3)"
sleep 0.5
[ ! -L "$df" ] || h_fail "the link is still in the cache"
h_stop_cachefsd px
h_pass "foreign, group/world-writable and linked cache dirs refused with the path and the fix; a planted data file and a swapped-in link were never used (planted file and link target unchanged, reads correct)"
