#!/bin/bash
# 54-rpcbind: cachefsd registers with a local rpcbind (register = auto|yes|no,
# cachefsd/ops/rpcbind.c), so clients find it without port options. The test
# is its own "host" (tests/lib/isolate.sh: a network namespace and /run of
# its own) with its own rpcbind, and uses the stock tools:
#  - register = yes: `rpcinfo -p` lists 100003 v3, 100005 v1 and v3 on tcp,
#    100024 v1 (NSM) on tcp and udp, 100021 v4 (NLM) on tcp, at
#    cachefsd's port; `showmount -e` (nfs-common's, MOUNT v1) lists the
#    export; `rpcinfo -t` reaches MOUNT v1; nfs-ls with no ports in its URL
#    (libnfs asks the portmapper) lists the export through the proxy; the
#    stats say 5 program versions registered;
#  - a stale registration made beforehand (MOUNT v3 at a port nothing listens
#    on, made with tests/tools/pmapset) is replaced, with a log line;
#  - after SIGTERM the registrations are gone;
#  - register = yes with no rpcbind: exit non-zero, the message names rpcbind
#    and the fix; auto: serves (explicit ports), one log line says clients
#    need port options;
#  - a live server (nfs-ganesha's mountd) already registered for MOUNT v3:
#    yes refuses to start naming program, version and port; auto skips
#    MOUNT v3 only (registers the other two), leaves the other server's
#    registration alone at exit.
# shellcheck disable=SC2154 # H_* variables are set by the harness via printf -v
# shellcheck source=../lib/own-host.sh
. "$(dirname "$0")/../lib/own-host.sh"
own_host 54-rpcbind "namespaces, rpcbind" "$@"
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init

PMAPSET=$H_BUILD/tests/pmapset
[ -x "$PMAPSET" ] || h_fail "$PMAPSET is missing (make tools)"
NC=$("$H_ROOT/tests/lib/debs.sh" root "$H_ROOT/build/debs" nfs-common) ||
	h_fail "nfs-common's showmount is not fetched (make test does: tests/lib/debs.sh fetch build/debs nfs-common)"
SHOWMOUNT=$NC/sbin/showmount
[ -x "$SHOWMOUNT" ] || h_fail "no showmount in $NC"
! ss -Hltn 'sport = :111' | grep -q . || h_fail "something listens on port 111 in this namespace already"

stop_rpcbind() { h_stop_pid "$H_RPCBIND" 10; }
# port PROG VERS: the tcp port rpcinfo -p lists for it ("" when none)
port() { rpcinfo -p 127.0.0.1 | awk -v p="$1" -v v="$2" -v t="${3:-tcp}" '$1==p && $2==v && $3==t {print $4}'; }
# wait_serving NAME: registration comes after the listener: wait for the
# line the daemon logs when it serves
wait_serving()
{
	local log=$H_TMP/$1-cachefsd.log i
	for ((i = 0; i < 100; i++)); do
		grep -q "info: serving " "$log" && return 0
		sleep 0.1
	done
	h_fail "cachefsd $1 does not serve: $(tail -n 5 "$log")"
}
# run_fail NAME ARGS...: cachefsd must exit non-zero at start; its output
run_fail()
{
	local name=$1 rc=0
	shift
	timeout 60 "$H_BUILD/cachefsd" --foreground --upstream "$H_URL_up" \
		--listen "127.0.0.1:$(h_free_port)" --cache-dir "$H_TMP/$name-cache" "$@" \
		>"$H_TMP/$name-cachefsd.log" 2>&1 || rc=$?
	[ "$rc" != 0 ] || h_fail "cachefsd $name started (it should have refused): $(tail -n 3 "$H_TMP/$name-cachefsd.log")"
	[ "$rc" != 124 ] || h_fail "cachefsd $name hung at start"
	cat "$H_TMP/$name-cachefsd.log"
}

h_rpcbind_fresh
h_start_ganesha up
printf 'through the proxy\n' >"$H_EXPORT_up/hello"
GANESHA_MNT=$(port 100005 3)
[ "$GANESHA_MNT" = "$H_MNTPORT_up" ] || h_fail "ganesha's MOUNT v3 is not registered (port '$GANESHA_MNT')"
# the filer is a server of this host too: its registrations go, so that the
# proxy's are the ones clients find (they come back below)
for pv in "100003 3" "100003 4" "100005 1" "100005 3"; do
	read -r p v <<<"$pv"
	rpcinfo -d "$p" "$v" 2>/dev/null
done
[ -z "$(port 100005 3)" ] || h_fail "cannot remove ganesha's registrations"

# --- register = yes, over a stale registration ------------------------------
dead=$(h_free_port)
"$PMAPSET" set 100005 3 "$dead" || h_fail "pmapset could not register a stale MOUNT v3"
[ "$(port 100005 3)" = "$dead" ] || h_fail "the stale registration is not listed"
h_start_cachefsd px up --register yes
wait_serving px
P=$H_PORT_px
rpcinfo -p 127.0.0.1 >"$H_TMP/rpcinfo.txt"
for pv in "100003 3" "100005 3" "100005 1" "100024 1" "100024 1 udp" "100021 4"; do
	# shellcheck disable=SC2086 # two or three words
	got=$(port $pv)
	[ "$got" = "$P" ] || h_fail "rpcinfo -p lists $pv at '$got', not cachefsd's $P: $(cat "$H_TMP/rpcinfo.txt")"
done
h_pass "rpcinfo -p lists nfs 3, mount 3 and mount 1 on tcp, status 1 on tcp and udp, nlm 4 on tcp, at cachefsd's port $P"
grep -q "mount v3 tcp port $dead is stale" "$H_LOG_px" || h_fail "no log line about the stale registration"
h_pass "the stale MOUNT v3 registration (port $dead, nothing listening) was replaced"
rpcinfo -t 127.0.0.1 100005 1 >/dev/null || h_fail "rpcinfo -t cannot reach MOUNT v1"
out=$("$SHOWMOUNT" -e 127.0.0.1 2>&1) || h_fail "showmount -e failed: $out"
printf '%s\n' "$out" | grep -q "^$H_EXPORT_up " || h_fail "showmount -e does not list $H_EXPORT_up: $out"
h_pass "showmount -e lists the export: $(printf '%s\n' "$out" | tail -n 1)"
# a client with no port in its URL: libnfs asks rpcbind, finds the proxy
calls0=$(h_stat px rpc_calls)
got=$(timeout 30 nfs-cat "nfs://127.0.0.1$H_EXPORT_up/hello" 2>&1) || h_fail "nfs-cat without ports failed: $got"
[ "$got" = "through the proxy" ] || h_fail "nfs-cat without ports read '$got'"
calls1=$(h_stat px rpc_calls)
[ "$calls1" -gt "$calls0" ] || h_fail "nfs-cat without ports did not go through the proxy (calls $calls0 -> $calls1)"
h_pass "a client given no ports finds the proxy through rpcbind and reads through it"
[ "$(h_stat px rpcbind_registered)" = 5 ] || h_fail "rpcbind_registered is $(h_stat px rpcbind_registered), not 5"
"$H_BUILD/cachefsctl" --cache-dir "$H_CACHE_px" stats | grep -q "5 program versions registered with rpcbind" ||
	h_fail "cachefsctl stats does not show the registrations"
h_stop_cachefsd px
for pv in "100003 3" "100005 3" "100005 1" "100024 1" "100024 1 udp" "100021 4"; do
	# shellcheck disable=SC2086
	[ -z "$(port $pv)" ] || h_fail "$pv is still registered after SIGTERM: $(rpcinfo -p 127.0.0.1)"
done
grep -q "rpcbind: unregistered" "$H_LOG_px" || h_fail "no unregistration logged"
h_pass "after SIGTERM nothing of cachefsd's stays registered"

# --- no rpcbind --------------------------------------------------------------
stop_rpcbind
out=$(run_fail norpc --register yes)
printf '%s\n' "$out" | grep -q "register = yes: no rpcbind at 127.0.0.1:111" ||
	h_fail "register = yes without rpcbind: no clear message: $out"
h_pass "register = yes without rpcbind: exits non-zero: $(printf '%s\n' "$out" | grep -o 'register = yes: no rpcbind.*' | head -n 1)"
h_start_cachefsd auto up
wait_serving auto
grep -q "rpcbind: none at 127.0.0.1:111 .*clients need -o port=$H_PORT_auto,mountport=$H_PORT_auto" "$H_LOG_auto" ||
	h_fail "register = auto without rpcbind: no log line saying clients need ports: $(tail -n 5 "$H_LOG_auto")"
got=$(nfs-cat "nfs://127.0.0.1$H_EXPORT_up/hello?nfsport=$H_PORT_auto&mountport=$H_PORT_auto") ||
	h_fail "register = auto without rpcbind does not serve"
[ "$got" = "through the proxy" ] || h_fail "read '$got' through the auto proxy"
h_stop_cachefsd auto
h_pass "register = auto without rpcbind: serves, and says clients need port= and mountport="

# --- a live server owns MOUNT v3 --------------------------------------------
h_rpcbind_fresh
"$PMAPSET" set 100005 3 "$H_MNTPORT_up" || h_fail "pmapset could not register ganesha's MOUNT v3"
out=$(run_fail live --register yes)
printf '%s\n' "$out" | grep -q "mount v3 (program 100005) is registered to port $H_MNTPORT_up, where another server answers" ||
	h_fail "register = yes with a live owner: the message does not name program, version and port: $out"
[ -z "$(port 100003 3)" ] || h_fail "the refused start left NFS v3 registered"
h_pass "register = yes with MOUNT v3 owned by a live server: refuses to start, nothing left registered"
h_start_cachefsd skip up
wait_serving skip
[ "$(port 100005 3)" = "$H_MNTPORT_up" ] || h_fail "auto took over a live server's MOUNT v3"
if [ "$(port 100003 3)" != "$H_PORT_skip" ] || [ "$(port 100005 1)" != "$H_PORT_skip" ]; then
	h_fail "auto did not register the programs nobody else owns: $(rpcinfo -p 127.0.0.1)"
fi
grep -q "mount v3 (program 100005) is registered to port $H_MNTPORT_up, where another server answers: not registered (register = auto)" "$H_LOG_skip" ||
	h_fail "auto: no log line about the skipped program"
[ "$(h_stat skip rpcbind_registered)" = 4 ] || h_fail "rpcbind_registered is not 4 (nfs 3, mount 1, status 1, nlm 4)"
h_stop_cachefsd skip
[ "$(port 100005 3)" = "$H_MNTPORT_up" ] || h_fail "the other server's MOUNT v3 registration went at exit"
[ -z "$(port 100003 3)" ] || h_fail "NFS v3 stayed registered at exit"
h_pass "register = auto with MOUNT v3 owned by a live server: that one skipped (log line), the others registered, the other server's kept at exit"
