#!/bin/bash
# Directory listings through the proxy after create / rename / remove /
# mkdir / rmdir / symlink through the proxy are never stale, in strict and in
# ttl mode (where listings and lookups are answered from the cache).
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
OP=$H_BUILD/tests/nfsop
h_start_ganesha up
E=$H_EXPORT_up

run_mode()
{
	local mode=$1 d=dir-$1 i
	shift
	mkdir -p "$E/$d"
	for i in $(seq 1 30); do echo "$i" >"$E/$d/f$i"; done
	h_start_cachefsd px up "$@"
	U=$H_URL_px
	want() { (cd "$E/$d" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort); }
	check()
	{
		local got
		got=$("$OP" "$U" ls "$d") || h_fail "$mode: ls failed after $1"
		[ "$got" = "$(want)" ] || h_fail "$mode: stale listing after $1:
$(diff <(echo "$got") <(want))"
		# a name that is gone is gone, a new name is there
		[ -z "$2" ] || "$OP" "$U" stat "$d/$2" >/dev/null || h_fail "$mode: $2 not found after $1"
		[ -z "$3" ] || ! "$OP" "$U" stat "$d/$3" >/dev/null 2>&1 || h_fail "$mode: $3 still found after $1"
	}
	check start "" ""
	check "warm listing" "" "" # now the listing is cached (ttl mode)
	echo new | "$OP" "$U" write "$d/created" || h_fail "$mode: create"
	check create created ""
	"$OP" "$U" rename "$d/created" "$d/renamed" || h_fail "$mode: rename"
	check rename renamed created
	"$OP" "$U" rename "$d/renamed" "$d/f3" || h_fail "$mode: rename over"
	check "rename over an existing name" f3 renamed
	[ "$("$OP" "$U" cat "$d/f3")" = new ] || h_fail "$mode: f3 has old content after rename over"
	"$OP" "$U" rm "$d/f7" || h_fail "$mode: remove"
	check remove "" f7
	"$OP" "$U" mkdir "$d/sub" || h_fail "$mode: mkdir"
	check mkdir sub ""
	"$OP" "$U" rmdir "$d/sub" || h_fail "$mode: rmdir"
	check rmdir "" sub
	"$OP" "$U" symlink f1 "$d/link" || h_fail "$mode: symlink"
	check symlink link ""
	# sizes in listings follow writes through the proxy
	printf 'longer content' | "$OP" "$U" write "$d/f9" || h_fail "$mode: write"
	grep -qx "f9 14" <<<"$("$OP" "$U" lsl "$d")" || h_fail "$mode: listing shows an old size of f9"
	h_stop_cachefsd px
	h_log "ok: $mode"
}
run_mode strict
H_CACHE_px=$H_TMP/px-cache-ttl
run_mode ttl --meta-ttl 60
[ -n "$(find "$E" -name nothing)" ] || true
h_pass "directory listings never stale after changes through the proxy, strict and ttl"
