#!/usr/bin/env bash
# A document's embedding does not depend on the plan that trained the checkpoint: tokenizes the
# shipped validation prose, trains gpt2-bpe-mini for 6 steps with a fixed seed on one rank and
# under PLAN on 2 ranks, embeds the shipped documents with both checkpoints and checks that
# every vector agrees to 1e-4 relative (of the vector's largest entry), and that the vectors of
# different documents do differ (so the check is not vacuous).
# Usage: embed_equivalence.sh FABTRAIN_EXEC SOURCE_DIR PLAN. Exit 77 (skipped): no vocabulary.
set -euo pipefail
exe=$1 src=$2 plan=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! "$exe" tokenize "$src/data/tiny_prose_val.txt" --val-fraction 0 -o "$work/tok" > "$work/tok.log" 2>&1; then
  if grep -q "not found" "$work/tok.log"; then echo "SKIPPED: $(cat "$work/tok.log")"; exit 77; fi
  cat "$work/tok.log"; exit 1
fi
model="$src/data/gpt2-bpe-mini/config.json"
args=(--model "$model" --data "$work/tok/corpus_train_000001.bin" --batch 4 --seq 32 --steps 6
      --lr 3e-3 --warmup 2 --seed 42 --threads 1 --timeout-s 120 --print-every 6)
"$exe" train "${args[@]}" --plan dp=1 --checkpoint-dir "$work/ref" > "$work/ref.log"
mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" train "${args[@]}" --plan "$plan" \
  --checkpoint-dir "$work/run" > "$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }
for run in ref run; do
  "$exe" embed "$src/data/tiny_prose_docs.jsonl" --model "$model" \
    --checkpoint "$work/$run/model_00000006.bin" -o "$work/emb-$run" > "$work/emb-$run.log"
done
python3 - "$work/emb-ref/vectors.npy" "$work/emb-run/vectors.npy" "$plan" <<'PY'
import ast, struct, sys
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    rows, cols = ast.literal_eval(b[10:10 + n].decode())["shape"]
    v = struct.unpack(f"<{rows * cols}f", b[10 + n:])
    return [v[r * cols:(r + 1) * cols] for r in range(rows)]
ref, run = load(sys.argv[1]), load(sys.argv[2])
assert len(ref) == len(run) == 80, (len(ref), len(run))
worst = max(max(abs(a - b) for a, b in zip(x, y)) / max(abs(a) for a in x) for x, y in zip(ref, run))
spread = max(max(abs(a - b) for a, b in zip(ref[0], y)) / max(abs(a) for a in ref[0]) for y in ref[1:])
print(f"plan {sys.argv[3]}: largest relative difference of an embedding {worst:.2e} (limit 1e-4); "
      f"between documents up to {spread:.2e}")
sys.exit(0 if worst < 1e-4 and spread > 1e-2 else 1)
PY
