#!/usr/bin/env bash
# fabtrain-exec probe on this machine (mpirun -np 2, both "VMs" on loopback): it measures the
# pair, writes a measured link into a copy of a two-site slice (--shared-host-links: both ranks are
# on this host), and the copy loads with it; without the flag the shared host is said and no link
# is written; a round trip written on the network that the measurement contradicts is said; a rank
# count that does not match the slice's VMs is refused by name.
# Usage: probe.sh FABTRAIN_EXEC FABTRAIN SOURCE_DIR
set -euo pipefail
exec_bin=$1 fabtrain=$2 repo=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$repo/platforms/data/slices/utah-amst.yaml" "$work/slice.yaml"
timeout 120 mpirun -np 2 --oversubscribe "$exec_bin" probe --slice "$work/slice.yaml" \
  -o "$work/probed.yaml" --samples 10 --tcp-mib 8 --streams 2 --shared-host-links \
  | tee "$work/out.txt"
grep -q "wrote 1 measured link" "$work/out.txt"
grep -q "^links:" "$work/probed.yaml"
grep -q "streams: 2" "$work/probed.yaml"
grep -q "fabtrain-exec probe $(date -u +%Y-%m-%d)" "$work/probed.yaml"
# The measured link is what slice show reports for the pair now.
"$fabtrain" slice show "$work/probed.yaml" | tee "$work/show.txt"
grep -Eq "UTAH-AMST +[0-9.]+ measured +[0-9.]+ measured" "$work/show.txt"
! grep -q "^links:" "$work/slice.yaml"  # -o leaves the slice itself alone
if timeout 60 mpirun -np 3 --oversubscribe "$exec_bin" probe --slice "$work/slice.yaml" >"$work/bad.txt" 2>&1; then
  echo "FAIL: 3 ranks for 2 VMs were accepted"; exit 1
fi
grep -q "one rank per VM" "$work/bad.txt"
# Two ranks on one host without the flag: no link, and the warning says why.
timeout 120 mpirun -np 2 --oversubscribe "$exec_bin" probe --slice "$work/slice.yaml" \
  -o "$work/shared.yaml" --samples 5 --tcp-mib 1 --streams 1 >"$work/shared.txt" 2>&1
# (the warnings wrap at $COLUMNS: read as one line)
tr -s ' \n' '  ' <"$work/shared.txt" | grep -q "share host .*left out" || { cat "$work/shared.txt"; exit 1; }
[ ! -e "$work/shared.yaml" ] || { echo "FAIL: a shared host was written as a link"; exit 1; }
# A hand-written round trip (500 ms) far from the loopback's measured one is said.
sed 's/vms: \[utah-vm, amst-vm\]}/vms: [utah-vm, amst-vm], rtt_ms: 500}/' "$work/slice.yaml" >"$work/written.yaml"
grep -q "rtt_ms: 500" "$work/written.yaml"
timeout 120 mpirun -np 2 --oversubscribe "$exec_bin" probe --slice "$work/written.yaml" \
  --samples 5 --tcp-mib 1 --streams 1 --shared-host-links >"$work/written.txt" 2>&1
tr -s ' \n' '  ' <"$work/written.txt" | grep -q "gives rtt_ms 500, which overrides" || { cat "$work/written.txt"; exit 1; }
echo "probe: ok"
