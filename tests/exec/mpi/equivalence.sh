#!/usr/bin/env bash
# Plan equivalence: trains gpt2-nano for 20 steps with a fixed seed on one rank and under PLAN on
# NP ranks, and checks that the losses and final parameters agree to 1e-5 relative
# (compare_runs.py says exactly how). Usage: equivalence.sh FABTRAIN_EXEC SOURCE_DIR PLAN NP
set -euo pipefail
exe=$1 src=$2 plan=$3 np=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/nano_settings.sh"
"$exe" train "${args[@]}" --plan dp=1 --record "$work/ref.jsonl" --checkpoint-dir "$work/ref" \
  > "$work/ref.log"
mpirun --allow-run-as-root --oversubscribe -np "$np" "$exe" train "${args[@]}" --plan "$plan" \
  --record "$work/run.jsonl" --checkpoint-dir "$work/run" > "$work/run.log" 2>&1 ||
  { cat "$work/run.log"; exit 1; }
echo "plan $plan on $np ranks vs one rank:"
python3 "$src/tests/exec/mpi/compare_runs.py" "$work/ref.jsonl" "$work/ref/model_00000020.bin" \
  "$work/run.jsonl" "$work/run/model_00000020.bin" --rtol 1e-5
