#!/usr/bin/env bash
# OpenMPI's remote-shell agent for the emulated sites (plm_rsh_agent): where mpirun would ssh
# to host siteA or siteB, this runs the command in that network namespace instead, in its own
# UTS namespace whose hostname is the site's name, so each rank sees the host it is "on".
# Like ssh, it joins its arguments into one command line for a shell. Only our two sites.
# Usage (by mpirun): netns-rsh.sh [ssh-style options] HOST COMMAND...
set -euo pipefail
while [ $# -gt 0 ] && [[ $1 == -* ]]; do shift; done  # ssh options mpirun may add: ignored
[ $# -ge 2 ] || { echo "netns-rsh: usage: $0 HOST COMMAND..." >&2; exit 255; }
host=$1
shift
case $host in
  siteA | siteB) ;;
  *) echo "netns-rsh: refusing host '$host': only the emulated sites siteA and siteB" >&2; exit 255 ;;
esac
exec ip netns exec "$host" unshare --uts /bin/sh -c 'hostname "$0" && eval "$1"' "$host" "$*"
