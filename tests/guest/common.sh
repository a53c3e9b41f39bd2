# shellcheck shell=bash
# tests/guest/common.sh — what run.sh (the client guest) and server.sh (the
# kernel NFS server guest) share; sourced, defines functions only.

# guest_usage: the script's header from line 4 to "# Design notes", to stderr
guest_usage()
{
	sed -n '4,/^# Design notes/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# guest_qemu_opts: sets guest_accel (array) and guest_nicdev from GUEST_KVM
# and GUEST_NIC (see run.sh); returns 2 on a bad GUEST_NIC
# shellcheck disable=SC2034 # guest_accel, guest_nicdev: for the caller
guest_qemu_opts()
{
	case ${GUEST_KVM:-0} in
	1 | yes | true) guest_accel=(-accel kvm -cpu host) ;;
	*) guest_accel=(-accel tcg) ;;
	esac
	case ${GUEST_NIC:-virtio} in
	virtio) guest_nicdev=virtio-net-pci ;;
	e1000) guest_nicdev=e1000 ;;
	*) echo "${0##*/}: GUEST_NIC must be virtio or e1000" >&2; return 2 ;;
	esac
}

# guest_stop_qemu PID: TERM, up to 1 s to exit, then KILL; reaps it
guest_stop_qemu()
{
	kill -TERM "$1" 2>/dev/null || true
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# guest_mac IP: the guest NIC's MAC address, from its IPv4 address, so that
# guests on one bridge differ (52:54:00 is qemu's prefix)
guest_mac()
{
	local a b c d
	IFS=. read -r a b c d <<<"$1"
	printf '52:54:00:%02x:%02x:%02x\n' "$b" "$c" "$d"
}

# guest_bridge BRIDGE TAP...: in the caller's network namespace, a bridge
# with 10.0.2.2/24 (what the guests' init routes through) and a tap device
# on it per guest, for run.sh --net tap:TAP. The caller removes them
# (`ip link del`), or its namespace goes with them.
guest_bridge()
{
	local br=$1 t
	shift
	ip link add "$br" type bridge || return 1
	ip addr add 10.0.2.2/24 dev "$br" || return 1
	ip link set "$br" up || return 1
	for t in "$@"; do
		ip tuntap add dev "$t" mode tap || return 1
		ip link set "$t" master "$br" || return 1
		ip link set "$t" up || return 1
	done
}
