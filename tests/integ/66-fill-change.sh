#!/bin/bash
# H_* are set by the harness with printf -v:
# shellcheck disable=SC2154
# Fresh bytes for every READ reply (docs/coherence.md, "Fills and changes"):
# a second client's truncate (SETATTR of the size) or WRITE through the
# proxy lands while the first client's chunk fill is in flight; no READ
# reply the proxy sends after the change's reply carries the removed
# bytes, the overwritten bytes or the old size.
#
# The fill is made slow, not the change: cachefsd reaches nfs-ganesha
# through bench/relay capped at 4 Mbit/s per connection and direction, so
# the fill's one READ of a 1 MiB chunk, which ganesha answers at once (before
# the change), takes about 2 s to come back, while the change goes over
# another upstream connection (cachefsd puts calls beside a READ in flight)
# and is answered in milliseconds. Client A's READ started the fill; client
# C reads after B's change was answered. Both answers come after it, and
# both must be the file as the filer holds it after the change, with its
# size in their attributes. Run with write_quiesce 0 (cache as soon as
# writes stop: C's READ used to join A's fill) and with the default (C's
# READ is forwarded; A's used to get the fill's old bytes and size).
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
NR=$H_BUILD/tests/nfsread
NC=$H_BUILD/tests/nfscall
RELAY=$H_BUILD/bench/relay
for t in "$NR" "$NC" "$RELAY"; do
	[ -x "$t" ] || h_fail "$t not built (make all tools)"
done
h_start_upstream up
E=$H_EXPORT_up
MiB=1048576
CUT=300000   # the truncate's new size
WROTE=65536  # the WRITE's zeros at offset 0

RP=$(h_free_port)
"$RELAY" --rate 4m --map "127.0.0.1:$RP=127.0.0.1:$H_NFSPORT_up" >"$H_TMP/relay.log" 2>&1 &
h_track relay $!
h_wait_port "$RP" 10 || h_fail "relay did not start: $(cat "$H_TMP/relay.log")"
# shellcheck disable=SC2034 # h_start_cachefsd reads them by name
H_URL_slow="nfs://127.0.0.1$E?nfsport=$RP&mountport=$H_MNTPORT_up"
# shellcheck disable=SC2034
H_EXPORT_slow=$E

# what the filer holds after each change, in its first MiB
h_mkdata "$H_TMP/orig" 4096 35
head -c $CUT "$H_TMP/orig" >"$H_TMP/want-setsize"
{ head -c $WROTE /dev/zero; tail -c +$((WROTE + 1)) "$H_TMP/orig" | head -c $((MiB - WROTE)); } \
	>"$H_TMP/want-write"

# sizes OUT: the sizes the READ answers' attributes gave (nfsread --print-sizes)
sizes() { awk '$1=="size"{print $2}' "$1" | sort -u | tr '\n' ' '; }

# run Q CHANGE TRY: one round with write_quiesce Q; CHANGE is setsize or
# write. Returns 1 when the change was not answered before A's fill (a
# machine too busy to make the change in the 2 s the fill takes: the round
# is tried again).
run()
{
	local q=$1 ch=$2 px=q$1$2t$3 f=f-$1-$2-$3 fh P apid cpid want size out t0
	want=$H_TMP/want-$ch
	size=$((4 * MiB))
	[ "$ch" = setsize ] && size=$CUT
	h_up_put up "$f" "$H_TMP/orig" || h_fail "cannot write $f to the upstream"
	h_start_cachefsd "$px" slow --write-quiesce "$q" --readahead 0 --fresh-guard 0
	local v=H_PORT_$px
	P=${!v}
	fh=$("$NC" --port "$P" --export "$E" --path "$f" fh | awk '$1=="fh"{print $2}')
	[ -n "$fh" ] || h_fail "$px: no handle for $f"

	# A: one READ of the first chunk, which starts its fill
	local f0
	f0=$(h_stat "$px" fill_reads)
	"$NR" --port "$P" --fh "$fh" --length $MiB --rsize $MiB --print-sizes --out "$H_TMP/$px.a" \
		2>"$H_TMP/$px.a.err" &
	apid=$!
	t0=$(date +%s%N)
	while [ "$(h_stat "$px" fill_reads)" = "$f0" ]; do
		[ $(($(date +%s%N) - t0)) -lt 10000000000 ] || h_fail "$px: A's READ started no fill"
		sleep 0.05
	done
	# B: the change, through the proxy, on a connection of its own
	case $ch in
	setsize) out=$("$NC" --port "$P" --export "$E" --fh "$fh" setsize $CUT) ;;
	write) out=$("$NC" --port "$P" --export "$E" --fh "$fh" write $WROTE) ;;
	esac
	case $out in
	"status NFS3_OK"*) ;;
	*) h_fail "$px: $ch through the proxy: $out" ;;
	esac
	# the window this test is about: A's fill is still on its way back
	if ! kill -0 "$apid" 2>/dev/null; then
		h_log "$px: A's READ was answered before the $ch was: trying again"
		wait "$apid"
		h_stop_cachefsd "$px"
		return 1
	fi
	# C: a READ after the change was answered
	"$NR" --port "$P" --fh "$fh" --length $MiB --rsize $MiB --print-sizes --out "$H_TMP/$px.c" \
		2>"$H_TMP/$px.c.err" &
	cpid=$!
	wait "$apid" || h_fail "$px: A's read failed: $(cat "$H_TMP/$px.a.err")"
	wait "$cpid" || h_fail "$px: C's read failed: $(cat "$H_TMP/$px.c.err")"
	for who in a c; do
		cmp "$H_TMP/$px.$who" "$want" >/dev/null 2>&1 ||
			h_fail "$px: ${who^^}'s READ after the $ch: bytes from before it" \
				"($(stat -c %s "$H_TMP/$px.$who") bytes; $(cmp "$H_TMP/$px.$who" "$want" 2>&1 | head -n 1))"
		[ "$(sizes "$H_TMP/$px.$who.err")" = "$size " ] ||
			h_fail "$px: ${who^^}'s READ answers gave the size $(sizes "$H_TMP/$px.$who.err")after the $ch; the file's is $size"
	done
	h_log "ok: write_quiesce $q, $ch during a fill: A's and C's READs got the new bytes and size $size" \
		"(fills given up as outdated: $(h_stat "$px" fill_outdated))"
	# and the proxy serves the file as the filer holds it afterwards
	"$NR" --port "$P" --fh "$fh" --length $MiB --rsize $MiB --out "$H_TMP/$px.d" 2>/dev/null ||
		h_fail "$px: the read after failed"
	cmp "$H_TMP/$px.d" "$want" >/dev/null 2>&1 || h_fail "$px: a later read of $f: bytes differ"
	h_stop_cachefsd "$px"
}

for q in 0 30; do
	for ch in setsize write; do
		for try in 1 2 3 4; do
			[ $try -lt 4 ] || h_fail "write_quiesce $q, $ch: never answered while A's fill was out"
			run $q $ch $try && break
		done
	done
done
h_pass "a change through the proxy during a fill: no READ reply carried bytes or a size from before it"
