#!/usr/bin/env bash
# Tears the emulated two-site link down: stops everything running in namespaces siteA, siteB
# and wan (TERM, then KILL), waits until they are empty and deletes them. The emulator writes
# its statistics when stopped; they are printed here. Safe to run twice, or with nothing up.
# Usage: scripts/wan/down.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ $# -eq 0 ] || wan_die "usage: $0 (no arguments)"
wan_lock
had_emulator=0
[ -f "$WAN_STATE_DIR/emulator.pid" ] && had_emulator=1
wan_teardown
[ "$had_emulator" = 1 ] && wan_print_stats
exit 0
