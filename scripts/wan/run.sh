#!/usr/bin/env bash
# Runs one command over the emulated two-site link: brings it up (up.sh: checks the delay),
# runs COMMAND, and tears everything down on every exit: success, failure, Ctrl-C or SIGTERM
# (a SIGKILL cannot be trapped: the next up.sh removes what it left). The machine-wide lock is
# held throughout. COMMAND runs in the root namespace; it reaches the sites through
# `ip netns exec siteA|siteB ...` or scripts/wan/mpirun-2site.sh.
# Afterwards the emulator's statistics are printed, and the run fails if more than
# FABTRAIN_WAN_MAX_LATE_FRACTION (default 0.01) of the frames (and at least 10) left more than 1 ms
# late: then the run measured the emulator, not the link, and run.sh exits 75 (not valid).
#
# Usage: scripts/wan/run.sh DELAY_MS RATE_MBIT -- COMMAND [ARGS...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
[ $# -ge 4 ] && [ "$3" = "--" ] || wan_die "usage: $0 DELAY_MS RATE_MBIT -- COMMAND [ARGS...]"
delay_ms=$1
rate_mbit=$2
shift 3

wan_lock
export FABTRAIN_WAN_LOCK_HELD=1
child=""
finish() {
  local rc=$1
  trap - EXIT INT TERM HUP
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null || true
  fi
  wan_teardown
  wan_print_stats
  if [ "$rc" -eq 0 ] && [ -f "$WAN_STATE_DIR/stats.json" ]; then
    python3 - "$WAN_STATE_DIR/stats.json" "${FABTRAIN_WAN_MAX_LATE_FRACTION:-0.01}" <<'PY' || rc=$?
import json, sys
total = json.load(open(sys.argv[1]))["total"]
frames, late = total["forwarded_frames"], total["late_over_1ms"]
# A run that barely used the link (an MPI start-up's few dozen frames) measured nothing through
# it: one late frame of 48 says nothing about the emulator. Ten late frames at least.
if frames and late / frames > float(sys.argv[2]) and late >= 10:
    print(f"wan: error: {late} of {frames} frames left more than 1 ms late "
          f"(> {sys.argv[2]}): the emulator could not keep up, the run is not valid", file=sys.stderr)
    sys.exit(75)
PY
  fi
  exit "$rc"
}
trap 'finish $?' EXIT
trap 'wan_log "interrupted: tearing down"; finish 130' INT
trap 'wan_log "terminated: tearing down"; finish 143' TERM HUP

"$here/up.sh" "$delay_ms" "$rate_mbit"
# In the background and waited for, so a signal to this script is handled at once.
"$@" 9>&- &
child=$!
set +e
wait "$child"
rc=$?
set -e
child=""
finish "$rc"
