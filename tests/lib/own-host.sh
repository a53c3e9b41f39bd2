# shellcheck shell=bash
# Sourced by a test that must be a host of its own (it starts rpcbind,
# rpc.statd, bridges or taps, or registers programs): run by the suite in
# the root namespace, it re-executes itself under isolate.sh, so nothing it
# starts can clash with, or outlive it on, this machine.
#   . "$(dirname "$0")/../lib/own-host.sh"
#   own_host NAME "why it needs root" "$@"
own_host()
{
	local name=$1 why=$2
	shift 2
	[ "${CFS_ISOLATED:-}" != 1 ] || return 0
	[ "$(id -u)" = 0 ] || { echo "SKIP: $name: needs root ($why)"; exit 77; }
	exec "$(dirname "$0")/../lib/isolate.sh" "$0" "$@"
}
