#!/usr/bin/env bash
# Runs an MPI program with one rank per emulated site (rank 0 in siteA, rank 1 in siteB) over
# the link that up.sh made, through OpenMPI treating each namespace as a host: a hostfile
# (siteA, siteB, one slot each), netns-rsh.sh as the remote-shell agent, mpirun itself inside
# siteA, TCP only on 192.0.2.0/24. The last step execs mpirun, so a `timeout` or a signal sent
# to this script reaches mpirun itself. Contacts only the addresses of our two sites.
#
# Usage: scripts/wan/mpirun-2site.sh PROGRAM [ARGS...]
# Environment: FABTRAIN_WAN_MPIRUN_ARGS (more mpirun options, split on spaces);
#   FABTRAIN_WAN_RANKS_PER_SITE (default 1): with N > 1 each site holds N slots, filled in order
#   (ranks 0..N-1 in siteA, N..2N-1 in siteB: a VM of N GPUs per site, as the plans place them);
#   FABTRAIN_WAN_NP (default 2 x ranks per site): fewer ranks fill siteA first;
#   FABTRAIN_WAN_MAP_BY (default: node for 1 rank per site, slot otherwise);
#   FABTRAIN_WAN_FIRST_SITE (default siteA): the site whose slots fill first.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/common.sh"
[ $# -ge 1 ] || wan_die "usage: $0 PROGRAM [ARGS...]"
for ns in siteA siteB wan; do
  wan_namespace_exists "$ns" || wan_die "namespace $ns is missing: bring the link up first (scripts/wan/up.sh or run.sh)"
done
command -v mpirun >/dev/null || wan_die "mpirun not found (openmpi-bin)"
mkdir -p "$WAN_STATE_DIR"
per_site=${FABTRAIN_WAN_RANKS_PER_SITE:-1}
[[ $per_site =~ ^[1-9][0-9]*$ ]] || wan_die "FABTRAIN_WAN_RANKS_PER_SITE=$per_site must be a positive integer"
np=${FABTRAIN_WAN_NP:-$((2 * per_site))}
[[ $np =~ ^[1-9][0-9]*$ ]] && [ "$np" -le $((2 * per_site)) ] ||
  wan_die "FABTRAIN_WAN_NP=$np must be 1..$((2 * per_site)) (two sites of $per_site slots)"
map_by=${FABTRAIN_WAN_MAP_BY:-$([ "$per_site" -eq 1 ] && echo node || echo slot)}
first=${FABTRAIN_WAN_FIRST_SITE:-siteA}
case $first in siteA) second=siteB ;; siteB) second=siteA ;; *) wan_die "FABTRAIN_WAN_FIRST_SITE=$first: siteA or siteB" ;; esac
hostfile="$WAN_STATE_DIR/hostfile-$$"  # one per launch: two may run at once
printf '%s slots=%s\n%s slots=%s\n' "$first" "$per_site" "$second" "$per_site" >"$hostfile"

# shellcheck disable=SC2086  # extra options are meant to be split
exec ip netns exec siteA unshare --uts /bin/sh -c 'hostname siteA && exec "$@"' sh \
  mpirun --allow-run-as-root --hostfile "$hostfile" -np "$np" --map-by "$map_by" --bind-to none \
  --mca plm_rsh_agent "$here/netns-rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
  --mca btl tcp,self --mca btl_tcp_if_include "$WAN_SUBNET" --mca oob_tcp_if_include "$WAN_SUBNET" \
  ${FABTRAIN_WAN_MPIRUN_ARGS:-} "$@"
