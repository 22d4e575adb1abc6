# Shared by the scripts of the emulated two-site link (sourced, not run): the fixed names,
# the machine-wide lock and the teardown. Namespace names are machine-wide, so every script
# that creates or deletes them holds the lock (flock) while it does.
#
#   siteA [vA 192.0.2.1/24] ==veth== [wA] wan [wB] ==veth== [vB 192.0.2.2/24] siteB
#                                  fabtrain-wan in "wan"
# Addresses are TEST-NET-1 (192.0.2.0/24) only, inside namespaces these scripts made.

WAN_NAMESPACES=(siteA siteB wan)
WAN_ADDRESS_A=192.0.2.1
WAN_ADDRESS_B=192.0.2.2
WAN_SUBNET=192.0.2.0/24
WAN_STATE_DIR=${FABTRAIN_WAN_STATE_DIR:-/run/fabtrain-wan}
WAN_LOCK_FILE=${FABTRAIN_WAN_LOCK_FILE:-/run/lock/fabtrain-wan.lock}
WAN_REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

wan_log() { echo "wan: $*" >&2; }
wan_die() { echo "wan: error: $*" >&2; exit 1; }

# Takes the machine-wide lock on fd 9 unless a caller (run.sh) already holds it.
wan_lock() {
  [ "${FABTRAIN_WAN_LOCK_HELD:-0}" = 1 ] && return 0
  mkdir -p "$(dirname "$WAN_LOCK_FILE")"
  exec 9>"$WAN_LOCK_FILE"
  flock -w "${FABTRAIN_WAN_LOCK_WAIT_S:-120}" 9 ||
    wan_die "another emulated link holds $WAN_LOCK_FILE (waited ${FABTRAIN_WAN_LOCK_WAIT_S:-120} s)"
}

# For tests: exit 77 (ctest: skipped) with the reason unless this process may make network
# namespaces and has the given tools.
wan_skip_unless_namespaces() {
  local probe=fabtrain-wan-probe-$$ tool
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to create network namespaces (ip netns add)"; exit 77; }
  ip netns add "$probe" 2>/dev/null || { echo "SKIP: 'ip netns add' is not permitted here"; exit 77; }
  ip netns delete "$probe"
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "SKIP: '$tool' is not installed (scripts/install-deps.sh)"; exit 77; }
  done
}

# For tests: runs COMMAND (a scripts/wan/run.sh line) with its output in LOG. A run the emulator
# marks not valid (exit 75: it could not keep up, so it measured the emulator, not the link) is
# tried once more; not valid twice, the test is skipped (exit 77) with the reason. Other exits
# are returned.
wan_test_run() {
  local log=$1 attempt rc
  shift
  for attempt in 1 2; do
    rc=0
    "$@" >"$log" 2>&1 || rc=$?
    [ "$rc" -eq 75 ] || return "$rc"
    echo "wan: attempt $attempt not valid: $(grep -m1 'could not keep up' "$log" || echo 'exit 75')"
  done
  echo "SKIP: this machine could not emulate the link on time twice; nothing was measured"
  exit 77
}
wan_namespace_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

# TERM, then KILL, whatever runs in our namespaces; wait until none is left; delete them.
# Safe to run when nothing is there.
wan_teardown() {
  local ns pids waited
  for ns in "${WAN_NAMESPACES[@]}"; do
    wan_namespace_exists "$ns" || continue
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -TERM $pids 2>/dev/null || true
  done
  for ns in "${WAN_NAMESPACES[@]}"; do
    wan_namespace_exists "$ns" || continue
    waited=0
    while pids=$(ip netns pids "$ns" 2>/dev/null) && [ -n "$pids" ]; do
      if [ "$waited" -eq 30 ]; then  # 3 s after TERM: KILL
        wan_log "killing what still runs in $ns: $pids"
        kill -KILL $pids 2>/dev/null || true
      fi
      [ "$waited" -ge 100 ] && wan_die "processes in $ns survive SIGKILL: $pids"
      sleep 0.1
      waited=$((waited + 1))
    done
    ip netns delete "$ns" || wan_die "cannot delete namespace $ns"
  done
  rm -f "$WAN_STATE_DIR/emulator.pid" "$WAN_STATE_DIR"/hostfile-*
}

# The emulator binary: $FABTRAIN_WAN_BIN, else the newest build of it in this checkout.
wan_find_emulator() {
  if [ -n "${FABTRAIN_WAN_BIN:-}" ]; then
    [ -x "$FABTRAIN_WAN_BIN" ] || wan_die "FABTRAIN_WAN_BIN=$FABTRAIN_WAN_BIN is not an executable"
    echo "$FABTRAIN_WAN_BIN"
    return
  fi
  local found
  found=$(ls -t "$WAN_REPO_DIR"/build*/bin/fabtrain-wan 2>/dev/null | head -1)
  [ -n "$found" ] || wan_die "fabtrain-wan not built: cmake --build <build dir> --target fabtrain-wan, or set FABTRAIN_WAN_BIN"
  echo "$found"
}

# Prints the emulator's statistics file if it has one (written when it is stopped).
wan_print_stats() {
  [ -f "$WAN_STATE_DIR/emulator.log" ] && grep '^fabtrain-wan:' "$WAN_STATE_DIR/emulator.log" >&2 || true
}
