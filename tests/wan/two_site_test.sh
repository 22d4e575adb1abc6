#!/usr/bin/env bash
# End-to-end check of the emulated two-site link (scripts/wan/*.sh + fabtrain-wan):
#  - at one-way delay 25 ms the ping round trip is within [48, 60] ms;
#  - one TCP stream between the sites is window-limited: slower than at 0 ms, and at most
#    about window / RTT (the sites' send buffer is 4 MiB);
#  - a 2-rank MPI ping-pong launched through OpenMPI, one rank per site, sees RTT >= 50 ms;
#  - the emulator's lateness statistics are printed; a run with more than 1% late frames is not
#    valid (run.sh exits 75): it is tried once more, then the test is skipped, not failed;
#  - afterwards none of our namespaces is left.
# Exits 77 (ctest: skipped) with a line saying why where namespaces cannot be made (not root,
# no permission) or a tool is missing. Every step has a timeout.
# Environment (set by ctest): FABTRAIN_WAN_BIN, FABTRAIN_WAN_PINGPONG, FABTRAIN_SOURCE_DIR.
set -euo pipefail
repo=${FABTRAIN_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
wan=$repo/scripts/wan
source "$wan/common.sh"
delay_ms=25
rate_mbit=1000
window_bytes=4194304   # the tcp_wmem limit up.sh sets in the sites
transfer_mib=48

tcp_transfer() {  # one transfer siteA -> siteB; prints "tcp: ... Mbit/s"
  timeout 60 ip netns exec siteB python3 "$repo/tests/wan/tcp_throughput.py" server 192.0.2.2 5201 &
  local server=$!
  timeout 60 ip netns exec siteA python3 "$repo/tests/wan/tcp_throughput.py" client 192.0.2.2 5201 "$transfer_mib"
  wait "$server"
}

# Phases run by run.sh while the link is up (this same file, re-entered).
case "${1:-}" in
  --phase-0ms)
    tcp_transfer
    exit 0 ;;
  --phase-delay)
    timeout 30 ip netns exec siteA ping -n -q -c 10 -i 0.2 -w 20 192.0.2.2 | tail -1 | sed 's/^/ping: /'
    tcp_transfer
    timeout 60 "$wan/mpirun-2site.sh" "$FABTRAIN_WAN_PINGPONG" 10
    exit 0 ;;
esac

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (ip netns add)"
probe=fabtrain-wan-probe-$$
ip netns add "$probe" 2>/dev/null || skip "'ip netns add' is not permitted here"
ip netns delete "$probe"
for tool in ethtool ping mpirun python3 flock unshare; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed (scripts/install-deps.sh; ping: iputils-ping)"
done
for binary in "${FABTRAIN_WAN_BIN:-}" "${FABTRAIN_WAN_PINGPONG:-}"; do
  [ -x "$binary" ] || { echo "FAIL: FABTRAIN_WAN_BIN / FABTRAIN_WAN_PINGPONG must name the built programs"; exit 1; }
done

export FABTRAIN_WAN_STATE_DIR
FABTRAIN_WAN_STATE_DIR=$(mktemp -d /tmp/fabtrain-wan-test.XXXXXX)
trap 'rm -rf "$FABTRAIN_WAN_STATE_DIR"' EXIT
logs=$FABTRAIN_WAN_STATE_DIR
failures=0
check() {  # check "what" CONDITION-AWK-EXPRESSION var=value...
  local what=$1 expression=$2
  shift 2
  if awk "${@/#/-v}" "BEGIN { exit !($expression) }" </dev/null; then
    echo "ok:   $what"
  else
    echo "FAIL: $what"
    failures=$((failures + 1))
  fi
}
number_after() { sed -n "s/.*$1\([0-9.]*\).*/\1/p" "$2" | head -1; }

echo "== link at 0 ms, $rate_mbit Mbit/s"
wan_test_run "$logs/0ms.log" timeout -k 10 120 "$wan/run.sh" 0 "$rate_mbit" -- bash "$0" --phase-0ms ||
  { cat "$logs/0ms.log"; echo "FAIL: the run at 0 ms failed"; exit 1; }
cat "$logs/0ms.log"
tcp0=$(number_after '= ' "$logs/0ms.log" | head -1)

echo "== link at $delay_ms ms, $rate_mbit Mbit/s"
wan_test_run "$logs/delay.log" timeout -k 10 180 "$wan/run.sh" "$delay_ms" "$rate_mbit" -- bash "$0" --phase-delay ||
  { cat "$logs/delay.log"; echo "FAIL: the run at $delay_ms ms failed"; exit 1; }
cat "$logs/delay.log"
tcp_delay=$(sed -n 's/^tcp: .* = \([0-9.]*\) Mbit.*/\1/p' "$logs/delay.log")
tcp0=$(sed -n 's/^tcp: .* = \([0-9.]*\) Mbit.*/\1/p' "$logs/0ms.log")
read -r ping_min ping_avg ping_max < <(awk -F'[/ =]+' '/^ping: rtt/ { print $7, $8, $9 }' "$logs/delay.log")
mpi_min=$(number_after 'rtt_min_ms=' "$logs/delay.log")
frames=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"]["forwarded_frames"])' "$logs/stats.json")

echo "== checks"
check "ping rtt min/avg/max ${ping_min:-?}/${ping_avg:-?}/${ping_max:-?} ms within [48, 60] ms" \
  "min >= 48 && max <= 60" min="${ping_min:--1}" max="${ping_max:-999}"
check "one TCP stream: ${tcp_delay:-?} Mbit/s at $delay_ms ms < ${tcp0:-?} Mbit/s at 0 ms" \
  "d > 0 && d < z" d="${tcp_delay:-0}" z="${tcp0:-0}"
check "window-limited: ${tcp_delay:-?} Mbit/s <= 1.1 x window/RTT = 1.1 x 4 MiB / ${ping_min:-?} ms" \
  "d <= 1.1 * w * 8 / (r / 1000) / 1e6" d="${tcp_delay:-1e9}" w="$window_bytes" r="${ping_min:-1}"
check "MPI ping-pong across the sites: rtt min ${mpi_min:-?} ms >= 2 x $delay_ms ms" \
  "m >= 2 * d" m="${mpi_min:--1}" d="$delay_ms"
check "MPI ranks ran on different hosts (siteA, siteB)" "n == 1" \
  n="$(grep -c 'rank 0 on siteA, rank 1 on siteB' "$logs/delay.log" || true)"
check "the emulator forwarded the transfer (${frames:-?} frames for $transfer_mib MiB)" \
  "f >= m * 1048576 / 1514" f="${frames:-0}" m="$transfer_mib"
left=$(ip netns list | awk '{print $1}' | grep -xE 'siteA|siteB|wan' || true)
check "no namespace of ours left (ip netns list: ${left:-none})" "l == \"\"" l="$(echo $left)"

echo "== lateness of the emulator (run at $delay_ms ms)"
grep '^fabtrain-wan: total' "$logs/delay.log" || true
echo "$((7 - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
