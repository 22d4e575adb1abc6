#!/usr/bin/env bash
# Runs an MPI program with one rank per emulated site (rank 0 in siteA, rank 1 in siteB) over
# the link that up.sh made, through OpenMPI treating each namespace as a host: a hostfile
# (siteA, siteB, one slot each), netns-rsh.sh as the remote-shell agent, mpirun itself inside
# the first site (OpenMPI fills its own host first, whatever the hostfile's order), TCP only on
# 192.0.2.0/24. The last step execs mpirun, so a `timeout` or a signal sent
# to this script reaches mpirun itself. Contacts only the addresses of our two sites.
#
# Usage: scripts/wan/mpirun-2site.sh [OPTIONS] PROGRAM [ARGS...]
#   --ranks-per-site N  (default 1): with N > 1 each site holds N slots, filled in order (ranks
#                       0..N-1 in siteA, N..2N-1 in siteB: a VM of N GPUs per site, as plans place them)
#   --np N              (default 2 x ranks per site): fewer ranks fill the first site first
#   --map-by node|slot  (default: node for 1 rank per site, slot otherwise)
#   --first-site siteA|siteB  (default siteA): the site whose slots fill first
#   --mpirun-args ARGS  more mpirun options (split on spaces; may be given more than once)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
usage="usage: $0 [--ranks-per-site N] [--np N] [--map-by node|slot] [--first-site siteA|siteB] [--mpirun-args ARGS] PROGRAM [ARGS...]"
per_site=1 np="" map_by="" first=siteA extra_args=""
while [ $# -gt 0 ]; do
  case $1 in
    --ranks-per-site | --np | --map-by | --first-site | --mpirun-args)
      [ $# -ge 2 ] || wan_die "$1 needs a value ($usage)"
      case $1 in
        --ranks-per-site) per_site=$2 ;; --np) np=$2 ;; --map-by) map_by=$2 ;; --first-site) first=$2 ;;
        --mpirun-args) extra_args+=" $2" ;;
      esac
      shift 2 ;;
    --) shift; break ;;
    -*) wan_die "unknown option '$1' ($usage)" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || wan_die "$usage"
[[ $per_site =~ ^[1-9][0-9]*$ ]] || wan_die "--ranks-per-site $per_site must be a positive integer"
np=${np:-$((2 * per_site))}
[[ $np =~ ^[1-9][0-9]*$ ]] && [ "$np" -le $((2 * per_site)) ] ||
  wan_die "--np $np must be 1..$((2 * per_site)) (two sites of $per_site slots)"
map_by=${map_by:-$([ "$per_site" -eq 1 ] && echo node || echo slot)}
case $map_by in node | slot) ;; *) wan_die "--map-by $map_by: node or slot" ;; esac
case $first in siteA) second=siteB ;; siteB) second=siteA ;; *) wan_die "--first-site $first: siteA or siteB" ;; esac
for ns in siteA siteB wan; do
  wan_namespace_exists "$ns" || wan_die "namespace $ns is missing: bring the link up first (scripts/wan/up.sh or run.sh)"
done
command -v mpirun >/dev/null || wan_die "mpirun not found (openmpi-bin)"
mkdir -p "$WAN_STATE_DIR"
hostfile="$WAN_STATE_DIR/hostfile-$$"  # one per launch: two may run at once
printf '%s slots=%s\n%s slots=%s\n' "$first" "$per_site" "$second" "$per_site" >"$hostfile"

# shellcheck disable=SC2086  # extra options are meant to be split
exec ip netns exec "$first" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$first" \
  mpirun --allow-run-as-root --hostfile "$hostfile" -np "$np" --map-by "$map_by" --bind-to none \
  --mca plm_rsh_agent "$here/netns-rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
  --mca btl tcp,self --mca btl_tcp_if_include "$WAN_SUBNET" --mca oob_tcp_if_include "$WAN_SUBNET" \
  $extra_args "$@"
