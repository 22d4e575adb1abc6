#!/usr/bin/env bash
# Runs one command over the emulated two-site link: brings it up (up.sh: checks the delay),
# runs COMMAND, and tears everything down on every exit: success, failure, Ctrl-C or SIGTERM
# (a SIGKILL cannot be trapped: the next up.sh removes what it left). The machine-wide lock is
# held throughout. COMMAND runs in the root namespace; it reaches the sites through
# `ip netns exec siteA|siteB ...` or scripts/wan/mpirun-2site.sh.
# Afterwards the emulator's statistics are printed, and the run fails if more than 1% of the
# frames (and at least 10) left more than 1 ms late (fabtrain-wan --max-late-fraction, through
# up.sh's emulator options): then the run measured the emulator, not the link, and run.sh exits
# 75 (not valid).
#
# Usage: scripts/wan/run.sh [UP_OPTIONS] DELAY_MS RATE_MBIT -- COMMAND [ARGS...]
#   UP_OPTIONS: up.sh's (--mtu, --tcp-wmem-max, --slow-start-after-idle, --emulator-args)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
up_args=()  # up.sh's options, then the delay and the rate
while [ $# -gt 0 ] && [ "$1" != -- ]; do up_args+=("$1"); shift; done
[ ${#up_args[@]} -ge 2 ] && [ $# -ge 2 ] ||
  wan_die "usage: $0 [UP_OPTIONS] DELAY_MS RATE_MBIT -- COMMAND [ARGS...]"
shift  # the --

wan_lock
export FABTRAIN_WAN_LOCK_HELD=1
child=""
finish() {
  local rc=$1 reason
  trap - EXIT INT TERM HUP
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null || true
  fi
  wan_teardown
  wan_print_stats
  # The emulator says when too many frames left late (its --max-late-fraction).
  reason=$(sed -n 's/^fabtrain-wan: not valid: //p' "$WAN_STATE_DIR/emulator.log" 2>/dev/null || true)
  if [ "$rc" -eq 0 ] && [ -n "$reason" ]; then
    echo "wan: error: $reason: the emulator could not keep up, the run is not valid" >&2
    rc=75
  fi
  exit "$rc"
}
trap 'finish $?' EXIT
trap 'wan_log "interrupted: tearing down"; finish 130' INT
trap 'wan_log "terminated: tearing down"; finish 143' TERM HUP

"$here/up.sh" "${up_args[@]}"
# In the background and waited for, so a signal to this script is handled at once.
"$@" 9>&- &
child=$!
set +e
wait "$child"
rc=$?
set -e
child=""
finish "$rc"
