#!/bin/bash
# The manual pages (docs/*.[0-9]: cachefsd(8), cachefsctl(8),
# cachefsd.conf(5)) as a user gets them:
# * groff -ww -z -man formats each with no warning at all;
# * man -l renders each (NAME and SEE ALSO there, nothing on stderr), when
#   man-db is installed;
# * no page names a source-tree path (docs/..., cachefsd/units/...,
#   tests/..., bench/..., a bare x.md): installed places only, and every
#   /usr/share/doc/cachefsd/FILE a page names is a file of docs/ (what
#   make install can put there);
# * cachefsd.conf(5) has an entry for every key the daemon has (its
#   --help, made from the key table in cachefsd/base/config.c) and for no
#   other, each with its default as --help prints it and with "applied on
#   reload" exactly for the keys a reload applies (live_keys in config.c),
#   "needs a restart" for the others; cachefsd(8) has a flag for each key.
# shellcheck source=tests/lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init
cd "$H_ROOT" || h_fail "no source tree at $H_ROOT"
command -v groff >/dev/null || h_fail "groff is not installed (groff-base, make deps-test)"
pages=(docs/*.[0-9])
[ "${#pages[@]}" -ge 3 ] && [ -f docs/cachefsd.conf.5 ] ||
	h_fail "expected cachefsd.8, cachefsctl.8 and cachefsd.conf.5 in docs/, found ${pages[*]}"

for p in "${pages[@]}"; do
	out=$(groff -ww -z -man "$p" 2>&1) || h_fail "groff failed on $p: $out"
	[ -z "$out" ] || h_fail "groff -ww -z -man $p warns: $out"
done
h_log "groff -ww -z -man: ${#pages[@]} pages, no warnings"

man_note="man -l: rendered"
if command -v man >/dev/null; then
	for p in "${pages[@]}"; do
		out=$(MANWIDTH=80 man -l "$p" 2>"$H_TMP/man.err") || h_fail "man -l $p failed: $(cat "$H_TMP/man.err")"
		[ ! -s "$H_TMP/man.err" ] || h_fail "man -l $p: $(cat "$H_TMP/man.err")"
		grep -q "^NAME" <<<"$out" && grep -q "^SEE ALSO" <<<"$out" ||
			h_fail "man -l $p: no NAME or SEE ALSO section in what it rendered"
	done
else
	man_note="man -l: not checked (man-db is not installed)"
	h_log "SKIP part: $man_note"
fi

# installed places only
src='(^|[^/[:alnum:]_.-])(docs|tests|bench|proto|include|debian|cachefsd/(units|base|store|upstream|engine|locks|ops|ctl))/'
bad=$(grep -nHE "$src" "${pages[@]}")
[ -z "$bad" ] || h_fail "source-tree paths in the pages (name the installed place instead): $bad"
bad=$(grep -noHE '[^[:space:]"(]*[[:alnum:]_]\.md\b' "${pages[@]}" | grep -v ':/usr/share/doc/cachefsd/[^/]*\.md$')
[ -z "$bad" ] || h_fail "documents named outside /usr/share/doc/cachefsd: $bad"
for f in $(grep -ohE '/usr/share/doc/cachefsd/[[:alnum:]_.-]*[[:alnum:]]' "${pages[@]}" | sort -u); do
	[ -f "docs/${f#/usr/share/doc/cachefsd/}" ] || h_fail "the pages name $f, which is not a file of docs/"
done

# every key: from the daemon's --help ("  --key-name ARG  help [default]")
help=$("$H_BUILD/cachefsd" --help) || h_fail "cachefsd --help failed"
mapfile -t keys < <(sed -n 's/^  --\([a-z-]*\) .*/\1/p' <<<"$help" |
	grep -vxE 'config|check-config|help|version' | tr - _)
[ "${#keys[@]}" -ge 40 ] || h_fail "only ${#keys[@]} keys in cachefsd --help: ${keys[*]}"
mapfile -t live < <(sed -n '/live_keys\[\] = {/,/};/p' cachefsd/base/config.c | grep -o '"[a-z_]*"' | tr -d '"')
[ "${#live[@]}" -ge 20 ] || h_fail "could not read live_keys from cachefsd/base/config.c (${#live[@]})"
conf=docs/cachefsd.conf.5
# entry KEY: the key's entry in cachefsd.conf(5), from its .BI "KEY = " line
# to the next .TP, .SS or .SH, with \- as -
entry()
{
	awk -v k=".BI \"$1 = \"" 'index($0, k) == 1 { on = 1; print; next }
		on && /^\.(TP|SS|SH)/ { exit } on { print }' "$conf" | sed 's/\\-/-/g'
}
missing=()
for k in "${keys[@]}"; do
	e=$(entry "$k")
	if [ -z "$e" ]; then
		missing+=("$k")
		continue
	fi
	flag=--${k//_/-}
	def=$(grep -m1 -- "^  $flag " <<<"$help" | sed -n 's/.* \[\(.*\)\]$/\1/p')
	if [ -n "$def" ]; then
		grep -qF -- "Default \\fB$def\\fR" <<<"$e" || grep -qF -- "Default \\fB$def%\\fR" <<<"$e" ||
			h_fail "cachefsd.conf(5): $k: no \"Default $def\" (cachefsd --help says [$def]): $e"
	else
		grep -qE "^(Default|Required)" <<<"$e" ||
			h_fail "cachefsd.conf(5): $k: says nothing of its default (--help gives none): $e"
	fi
	if printf '%s\n' "${live[@]}" | grep -qx "$k"; then
		grep -q "applied on reload" <<<"$e" ||
			h_fail "cachefsd.conf(5): $k is applied on reload (live_keys) but its entry does not say so: $e"
	else
		grep -q "needs a restart" <<<"$e" ||
			h_fail "cachefsd.conf(5): $k needs a restart (not in live_keys) but its entry does not say so: $e"
	fi
	grep -qF -- "\\-\\-${k//_/\\-}" docs/cachefsd.8 || h_fail "cachefsd(8) has no $flag"
done
[ "${#missing[@]}" = 0 ] || h_fail "keys of the daemon missing from cachefsd.conf(5): ${missing[*]}"
# and no entry for a key the daemon does not have
for k in $(sed -n 's/^\.BI "\([a-z_]*\) = ".*/\1/p' "$conf"); do
	[ "$k" = include_dir ] && continue
	printf '%s\n' "${keys[@]}" | grep -qx "$k" || h_fail "cachefsd.conf(5) describes $k, which the daemon has no longer"
done
h_pass "${#pages[@]} pages: groff -ww silent, $man_note, installed paths only; cachefsd.conf(5): ${#keys[@]} keys with default and reload behaviour as the code has them"
