# shellcheck shell=bash
# A fleet of cachefsd nodes behind HAProxy, for the 88-fleet-* tests
# (docs/operations.md, "Running a fleet": the configuration written here is
# the one documented there). Source after harness.sh, after h_init.
#
#   fleet_start_nodes UPSTREAM N [CACHEFSD FLAGS...]
#       cachefsd nodes n1..nN in front of UPSTREAM (--register no: they
#       share one host's rpcbind with the filer; --secure-ports false:
#       HAProxy connects from unprivileged ports, see the docs)
#   fleet_start_haproxy N [SERVER_LINE]
#       HAProxy in TCP mode on 127.0.0.1:$FLEET_PORT, balancing n1..nN by
#       source address (consistent hashing), health-checked with an NFSv3
#       NULL call; its stats (CSV) on 127.0.0.1:$FLEET_STATS_PORT; SERVER_LINE
#       is one more line of the backend (a test's decoy)
#   fleet_server_field SERVER FIELD   one column of HAProxy's stats CSV
#       (scur, stot, bout, status, ...) for server n1..nN of the backend
#   fleet_serving   the node(s) with a session open now (scur > 0)
#   fleet_wait_status SERVER STATUS [TIMEOUT_S]   e.g. n2 DOWN

FLEET_N=0

fleet_start_nodes()
{
	local up=$1 n=$2 i
	shift 2
	for ((i = 1; i <= n; i++)); do
		h_start_cachefsd "n$i" "$up" --register no --secure-ports false "$@"
	done
	FLEET_N=$n
}

# The RPC record of an NFSv3 NULL call over TCP: the record mark (last
# fragment, 40 bytes), xid "HAPX", CALL, RPC version 2, program 100003,
# version 3, procedure 0, AUTH_NONE credential and verifier. The accepted
# SUCCESS reply to it is 24 bytes: the mark, the same xid, REPLY,
# MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS.
FLEET_NULL_CALL=80000028484150580000000000000002000186a3000000030000000000000000000000000000000000000000
FLEET_NULL_REPLY=80000018484150580000000100000000000000000000000000000000

fleet_start_haproxy()
{
	local n=$1 extra=${2:-} i conf=$H_TMP/haproxy.cfg
	FLEET_PORT=$(h_free_port)
	[ -n "${FLEET_STATS_PORT:-}" ] || FLEET_STATS_PORT=$(h_free_port)
	cat >"$conf" <<EOF
global
	maxconn 4096
defaults
	mode tcp
	timeout connect 2s
	# NFS connections sit idle for minutes between bursts: never cut them
	# (cachefsd closes idle ones itself, client_idle_timeout)
	timeout client 1h
	timeout server 1h
	timeout check 2s
	# a client that reconnects while its node is dead but not yet marked
	# down is sent to another node at once, not after the checks notice
	retries 2
	option redispatch 1
frontend nfs
	bind 127.0.0.1:$FLEET_PORT
	default_backend fleet
backend fleet
	balance source
	hash-type consistent
	option tcp-check
	tcp-check connect
	tcp-check send-binary $FLEET_NULL_CALL
	tcp-check expect binary $FLEET_NULL_REPLY
	default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
EOF
	for ((i = 1; i <= n; i++)); do
		local pv="H_PORT_n$i"
		echo "	server n$i 127.0.0.1:${!pv} check" >>"$conf"
	done
	[ -z "$extra" ] || echo "	$extra" >>"$conf"
	cat >>"$conf" <<EOF
listen stats
	mode http
	bind 127.0.0.1:$FLEET_STATS_PORT
	timeout client 10s
	stats enable
	stats uri /stats
EOF
	haproxy -c -f "$conf" >"$H_TMP/haproxy-check.log" 2>&1 ||
		h_fail "haproxy rejects its configuration: $(tail -n 5 "$H_TMP/haproxy-check.log")"
	haproxy -db -f "$conf" >>"$H_TMP/haproxy.log" 2>&1 &
	h_track haproxy $!
	h_wait_port "$FLEET_PORT" 10 || h_fail "haproxy did not start: $(tail -n 5 "$H_TMP/haproxy.log")"
	h_wait_port "$FLEET_STATS_PORT" 10 || h_fail "haproxy stats did not start"
	for ((i = 1; i <= n; i++)); do
		fleet_wait_status "n$i" UP 10 || h_fail "haproxy does not see node n$i UP ($(fleet_server_field "n$i" status), last check: $(fleet_server_field "n$i" check_status))"
	done
}

fleet_server_field()
{
	curl -s --max-time 5 "http://127.0.0.1:$FLEET_STATS_PORT/stats;csv" |
		awk -F, -v s="$1" -v f="$2" '
			NR == 1 { sub(/^# /, ""); for (i = 1; i <= NF; i++) col[$i] = i; next }
			$1 == "fleet" && $2 == s { print $(col[f]) }'
}

fleet_serving()
{
	local i out=""
	for ((i = 1; i <= FLEET_N; i++)); do
		[ "$(fleet_server_field "n$i" scur)" -gt 0 ] 2>/dev/null && out="$out n$i"
	done
	echo "${out# }"
}

fleet_wait_status()
{
	local s=$1 want=$2 t=${3:-10} i
	for ((i = 0; i < t * 10; i++)); do
		[ "$(fleet_server_field "$s" status)" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}
