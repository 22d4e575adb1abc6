#!/usr/bin/env bash
# Resume: a run stopped after 5 of 10 steps and resumed from its checkpoint gives the same losses
# and final parameters, bit for bit, as an uninterrupted run. Under a ZeRO plan this also checks
# the per-rank optimizer-state shards. Usage: resume.sh FABTRAIN_EXEC SOURCE_DIR PLAN NP
set -euo pipefail
exe=$1 src=$2 plan=$3 np=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
launch=()
[ "$np" -gt 1 ] && launch=(mpirun --allow-run-as-root --oversubscribe -np "$np")
args=(--model gpt2-nano --plan "$plan" --data "$src/data/tiny_prose_train.txt" --batch 8
      --seq 32 --steps 10 --lr 3e-3 --warmup 2 --seed 7 --threads 1 --timeout-s 60)
"${launch[@]}" "$exe" train "${args[@]}" --record "$work/full.jsonl" --checkpoint-dir "$work/full" \
  > "$work/full.log" 2>&1 || { cat "$work/full.log"; exit 1; }
"${launch[@]}" "$exe" train "${args[@]}" --stop-after 5 --checkpoint-dir "$work/part" \
  > "$work/first.log" 2>&1 || { cat "$work/first.log"; exit 1; }
[ "$(cat "$work/part/latest")" = 5 ] || { echo "latest is not step 5"; exit 1; }
"${launch[@]}" "$exe" train "${args[@]}" --resume --record "$work/resumed.jsonl" \
  --checkpoint-dir "$work/part" > "$work/second.log" 2>&1 || { cat "$work/second.log"; exit 1; }
grep -q "resumed from .* at step 5" "$work/second.log" || { cat "$work/second.log"; exit 1; }
n=$(grep -c '"type":"step"' "$work/resumed.jsonl")
[ "$n" = 5 ] || { echo "resumed run recorded $n steps, expected 5"; exit 1; }
python3 "$src/tests/exec/mpi/compare_runs.py" --exact "$work/full.jsonl" \
  "$work/full/model_00000010.bin" "$work/resumed.jsonl" "$work/part/model_00000010.bin"
