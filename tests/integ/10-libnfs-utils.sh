#!/bin/bash
# libnfs-utils through the proxy: nfs-ls -R lists the same tree as the
# server's directory, nfs-cat returns the same bytes, nfs-cp copies in and out
# (and a subdirectory of the export can be mounted, as on the server).
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
h_start_ganesha up
E=$H_EXPORT_up
mkdir -p "$E/tree/a/b/c" "$E/tree/empty" "$E/sub/inner"
for i in $(seq 1 40); do printf 'small %d\n' "$i" >"$E/tree/a/f$i.txt"; done
h_mkdata "$E/tree/a/b/c/big.bin" 6144 3 # 6 MiB, not a multiple of 1 MiB below
truncate -s 6291459 "$E/tree/a/b/c/big.bin"
: >"$E/tree/zero-length"
ln -s a/f1.txt "$E/tree/link"
echo inner >"$E/sub/inner/x"
h_start_cachefsd px up

P="nfsport=$H_PORT_px&mountport=$H_PORT_px"
U="nfs://127.0.0.1$E"

# nfs-ls -R: same names, types and sizes as the server's directory
nfs-ls -R "$U/tree?$P" >"$H_TMP/ls.out" || h_fail "nfs-ls -R through the proxy failed"
got=$(awk '{print substr($1,1,1), $5, $NF}' "$H_TMP/ls.out" | sort)
want=$(cd "$E/tree" && find . -mindepth 1 -printf '%y %s %P\n' | sed 's/^f /- /; s/^d [0-9]* /d SIZE /; s/^l /l /' | sort)
# directory sizes are server-specific; compare files and names exactly
got_files=$(grep -v '^d' <<<"$got" | grep -v '^l')
want_files=$(grep -v '^d' <<<"$want" | grep -v '^l')
[ "$got_files" = "$want_files" ] || h_fail "nfs-ls -R files differ:
got:
$got_files
want:
$want_files"
[ "$(grep -c '^d' <<<"$got")" = "$(grep -c '^d' <<<"$want")" ] || h_fail "nfs-ls -R dirs differ"
grep -q '^l .* link$' <<<"$got" || h_fail "nfs-ls -R lacks the symlink"

# nfs-cat: md5 equals the source, for big, small, zero-length files
for f in a/b/c/big.bin a/f7.txt zero-length; do
	a=$(nfs-cat "$U/tree/$f?$P" | md5sum)
	b=$(md5sum <"$E/tree/$f")
	[ "$a" = "$b" ] || h_fail "nfs-cat $f: md5 $a, server file $b"
done

# nfs-cp out of and into the export
nfs-cp "$U/tree/a/b/c/big.bin?$P" "$H_TMP/out.bin" || h_fail "nfs-cp out failed"
cmp -s "$H_TMP/out.bin" "$E/tree/a/b/c/big.bin" || h_fail "nfs-cp out: bytes differ"
h_mkdata "$H_TMP/in.bin" 3333 9
nfs-cp "$H_TMP/in.bin" "$U/copied-in.bin?$P" || h_fail "nfs-cp in failed"
cmp -s "$H_TMP/in.bin" "$E/copied-in.bin" || h_fail "nfs-cp in: bytes on the server differ"

# a subdirectory of the export mounts like on the server; outside does not
[ "$(nfs-cat "$U/sub/inner/x?$P" 2>/dev/null)" = inner ] || h_fail "reading below the export failed"
nfs-ls "nfs://127.0.0.1$E/sub/inner?$P" | grep -q ' x$' || h_fail "mounting a subdirectory failed"
if nfs-ls "nfs://127.0.0.1/etc?$P" >/dev/null 2>&1; then
	h_fail "a path outside the export was mountable"
fi
if nfs-ls "nfs://127.0.0.1$E/tree/zero-length?$P" >/dev/null 2>&1; then
	h_fail "a regular file was mountable"
fi

h_pass "nfs-ls -R, nfs-cat (md5), nfs-cp in and out, subdirectory mounts through cachefsd"
