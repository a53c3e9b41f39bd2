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
