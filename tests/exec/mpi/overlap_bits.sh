#!/usr/bin/env bash
# Overlap changes no bit: trains gpt2-nano for 20 steps under PLAN on NP ranks with overlap=off,
# with overlap=on (MPI progress thread, the default) and with overlap=on advanced by tests between
# blocks (--mpi-progress test), and requires every step's loss and the final parameters to be
# IDENTICAL (the checkpoints compared byte for byte, not to a tolerance). The equivalence test's
# settings (nano_settings.sh). Usage: overlap_bits.sh FABTRAIN_EXEC SOURCE_DIR PLAN NP
set -euo pipefail
exe=$1 src=$2 plan=$3 np=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/nano_settings.sh"
run() {  # NAME PLAN [more train options]
  local name=$1 p=$2
  shift 2
  mpirun --allow-run-as-root --oversubscribe -np "$np" "$exe" train "${args[@]}" --plan "$p" "$@" \
    --record "$work/$name.jsonl" --checkpoint-dir "$work/$name" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; exit 1; }
}
run off "$plan,overlap=off"
run on "$plan,overlap=on"
run on-test "$plan,overlap=on" --mpi-progress test
for other in on on-test; do
  python3 - "$work/off.jsonl" "$work/$other.jsonl" <<'PY'
import json, sys
def losses(path): return [json.loads(l)["loss"] for l in open(path) if '"type":"step"' in l.replace(" ", "")]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
if len(a) != 20 or a != b:
    sys.exit(f"losses differ: {sys.argv[2]}: {b} vs overlap=off: {a}")
PY
  cmp "$work/off/model_00000020.bin" "$work/$other/model_00000020.bin" ||
    { echo "plan $plan: final parameters of $other differ from overlap=off"; exit 1; }
done
echo "plan $plan on $np ranks: overlap=on (thread and test progress) equals overlap=off to the bit"
