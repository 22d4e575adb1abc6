#!/usr/bin/env bash
# Brings the emulated two-site link up: namespaces siteA, siteB and wan, veth pairs, the
# TEST-NET-1 addresses 192.0.2.1 (siteA) and 192.0.2.2 (siteB), and fabtrain-wan forwarding
# between them in "wan" with the given one-way delay and rate. Before returning it checks with
# ping that the round trip is about twice the delay, and fails (leaving nothing behind) if not.
# Leftovers of an earlier run are removed first. Needs root. Use run.sh to run something over
# the link and have it torn down whatever happens.
#
# Usage: scripts/wan/up.sh [OPTIONS] DELAY_MS RATE_MBIT   (RATE_MBIT 0 = unlimited; <= 1000 advised)
#   --tcp-wmem-max BYTES  send buffer limit in the sites (default 4194304: the TCP window the
#                         slice file states)
#   --slow-start-after-idle 0|1  the sites' net.ipv4.tcp_slow_start_after_idle (default 0)
#   --mtu BYTES           the link's MTU (default 1500: veth's own. 9000, jumbo frames, carries the
#                         same bytes in a sixth of the frames, which is what the 2-core emulator
#                         can keep up with at line rate)
#   --emulator-args ARGS  more fabtrain-wan options (split on spaces), e.g. "--max-late-fraction 0.02"
# Environment (set by tests): FABTRAIN_WAN_BIN (emulator binary), FABTRAIN_WAN_STATE_DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage="usage: $0 [--tcp-wmem-max BYTES] [--slow-start-after-idle 0|1] [--mtu BYTES] [--emulator-args ARGS] DELAY_MS RATE_MBIT (e.g. 25 1000)"
wmem_max=4194304 slow_start_after_idle=0 mtu=1500 emulator_args=""
while [ $# -gt 0 ]; do
  case $1 in
    --tcp-wmem-max | --slow-start-after-idle | --mtu | --emulator-args)
      [ $# -ge 2 ] || wan_die "$1 needs a value ($usage)"
      case $1 in
        --tcp-wmem-max) wmem_max=$2 ;; --slow-start-after-idle) slow_start_after_idle=$2 ;;
        --mtu) mtu=$2 ;; --emulator-args) emulator_args+=" $2" ;;
      esac
      shift 2 ;;
    -*) wan_die "unknown option '$1' ($usage)" ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || wan_die "$usage"
delay_ms=$1
rate_mbit=$2
number='^[0-9]+([.][0-9]+)?$'
[[ $delay_ms =~ $number ]] || wan_die "DELAY_MS '$delay_ms' must be a non-negative number of milliseconds"
[[ $rate_mbit =~ $number ]] || wan_die "RATE_MBIT '$rate_mbit' must be a non-negative number (0 = unlimited)"
[[ $mtu =~ ^[0-9]+$ ]] && [ "$mtu" -ge 576 ] && [ "$mtu" -le 9000 ] ||
  wan_die "--mtu '$mtu' must be a whole number of bytes from 576 to 9000"
[[ $wmem_max =~ ^[1-9][0-9]*$ ]] || wan_die "--tcp-wmem-max '$wmem_max' must be a positive whole number of bytes"
[[ $slow_start_after_idle =~ ^[01]$ ]] || wan_die "--slow-start-after-idle '$slow_start_after_idle' must be 0 or 1"
[ "$(id -u)" -eq 0 ] || wan_die "needs root (network namespaces, packet sockets)"
for tool in ip ethtool ping flock timeout; do
  command -v "$tool" >/dev/null || wan_die "'$tool' not found (scripts/install-deps.sh; ping is in iputils-ping)"
done
emulator=$(wan_find_emulator)

wan_lock
trap 'rc=$?; if [ $rc -ne 0 ]; then wan_log "set-up failed: tearing down"; wan_teardown; fi' EXIT
wan_teardown  # leftovers of a run that was killed
mkdir -p "$WAN_STATE_DIR"
rm -f "$WAN_STATE_DIR"/emulator.log "$WAN_STATE_DIR"/stats.json

in_ns() { local ns=$1; shift; timeout 10 ip netns exec "$ns" "$@"; }
for ns in "${WAN_NAMESPACES[@]}"; do
  ip netns add "$ns"
  in_ns "$ns" ip link set lo up
  # No IPv6: nothing but our IPv4 test traffic crosses the link.
  in_ns "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
done
ip link add vA netns siteA type veth peer name wA netns wan
ip link add vB netns siteB type veth peer name wB netns wan
for pair in "siteA vA $WAN_ADDRESS_A" "siteB vB $WAN_ADDRESS_B"; do
  read -r ns dev address <<<"$pair"
  # Checksums computed in software and no segmentation offload: the forwarder carries real
  # frames, and TCP never connects with checksum offload left on.
  in_ns "$ns" ethtool -K "$dev" tx off tso off gso off >/dev/null 2>&1 ||
    wan_die "ethtool -K $dev tx off failed in $ns"
  in_ns "$ns" ip link set "$dev" mtu "$mtu"
  in_ns "$ns" ip addr add "$address/24" dev "$dev"
  in_ns "$ns" ip link set "$dev" up
  in_ns "$ns" sysctl -q -w net.ipv4.tcp_wmem="4096 16384 $wmem_max"
  # A connection idle for longer than its retransmission timeout (a step's compute, at these
  # delays) would otherwise restart from a 10-segment window, and a 64 KiB message would take
  # three round trips instead of one. Long-path tuning turns this off; the simulator assumes so.
  in_ns "$ns" sysctl -q -w net.ipv4.tcp_slow_start_after_idle="$slow_start_after_idle"
done
for dev in wA wB; do
  in_ns wan ethtool -K "$dev" tx off tso off gso off gro off >/dev/null 2>&1 || true
  in_ns wan ip link set "$dev" mtu "$mtu"
  in_ns wan ip link set "$dev" up
done

# The emulator runs in its own session, so a Ctrl-C meant for the caller's command does not
# stop the link under it; teardown stops it with SIGTERM and it writes its statistics.
ip netns exec wan setsid "$emulator" --iface-a wA --iface-b wB --delay-ms "$delay_ms" \
  --rate-mbit "$rate_mbit" --stats "$WAN_STATE_DIR/stats.json" $emulator_args \
  >"$WAN_STATE_DIR/emulator.log" 2>&1 </dev/null 9>&- &
echo $! >"$WAN_STATE_DIR/emulator.pid"
for _ in $(seq 100); do
  grep -q 'fabtrain-wan: ready' "$WAN_STATE_DIR/emulator.log" 2>/dev/null && break
  kill -0 "$(cat "$WAN_STATE_DIR/emulator.pid")" 2>/dev/null ||
    wan_die "the emulator exited: $(cat "$WAN_STATE_DIR/emulator.log")"
  sleep 0.1
done
grep -q 'fabtrain-wan: ready' "$WAN_STATE_DIR/emulator.log" || wan_die "the emulator did not start within 10 s"

# Check the link: one ping resolves ARP (it crosses the link twice), five measure.
expect_ms=$(awk -v d="$delay_ms" 'BEGIN { print 2 * d }')
in_ns siteA ping -n -q -c 1 -w 5 "$WAN_ADDRESS_B" >/dev/null || wan_die "siteA cannot reach $WAN_ADDRESS_B over the link"
summary=$(timeout 20 ip netns exec siteA ping -n -q -c 5 -i 0.2 -w 15 "$WAN_ADDRESS_B" | tail -1)
read -r rtt_min rtt_avg rtt_max < <(echo "$summary" | awk -F'[/ =]+' '/^rtt/ { print $6, $7, $8 }')
[ -n "${rtt_min:-}" ] || wan_die "ping across the link failed: $summary"
awk -v min="$rtt_min" -v e="$expect_ms" 'BEGIN { exit !(min >= 0.98 * e - 0.1 && min <= 1.1 * e + 2) }' ||
  wan_die "ping round trip min $rtt_min ms, expected about $expect_ms ms (2 x $delay_ms): the link is wrong"
echo "$delay_ms $rate_mbit $rtt_min $rtt_avg $rtt_max" >"$WAN_STATE_DIR/link"
wan_log "up: siteA $WAN_ADDRESS_A <-> siteB $WAN_ADDRESS_B, one-way $delay_ms ms, rate ${rate_mbit} Mbit/s, MTU $mtu; ping rtt min/avg/max $rtt_min/$rtt_avg/$rtt_max ms"
