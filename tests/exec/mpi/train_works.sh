#!/usr/bin/env bash
# Training works: gpt2-nano on the shipped corpus reaches a validation loss well under the
# corpus's unigram byte entropy (3.00 nats, the best a model without context can do) within a
# minute: "well under" = at most 2.0 nats. 600 steps of 8 x 64 tokens at lr 1e-2 after 100
# warm-up steps measured val 1.14-1.23 (seeds 1337 and 7) in 8-30 s of one core, depending on
# the machine's load. The warm-up matters: with 10 warm-up steps to lr 1e-2 the loss sat at the
# unigram plateau (~3.0) for 100 steps, every seed diverging in bursts (loss 4-13) near the
# peak learning rate, because Adam moves every weight by ~lr per step while the embeddings
# start at std 0.02 and the first LayerNorm magnifies their changes ~35-fold.
# Usage: train_works.sh FABTRAIN_EXEC SOURCE_DIR
set -euo pipefail
exe=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
entropy=$(python3 - "$src/data/tiny_prose_train.txt" <<'PY'
import collections, math, sys
d = open(sys.argv[1], "rb").read()
print(-sum(c / len(d) * math.log(c / len(d)) for c in collections.Counter(d).values()))
PY
)
start=$(date +%s)
"$exe" train --model gpt2-nano --data "$src/data/tiny_prose_train.txt" \
  --val-data "$src/data/tiny_prose_val.txt" --batch 8 --seq 64 --steps 600 --lr 1e-2 \
  --warmup 100 --val-every 200 --print-every 100 --threads 1 --record "$work/run.jsonl" | tee "$work/out.log"
elapsed=$(( $(date +%s) - start ))
val=$(python3 -c "
import json,sys
v=[json.loads(l)['val_loss'] for l in open('$work/run.jsonl') if '\"val_loss\"' in l]
print(v[-1])")
echo "unigram entropy $entropy nats; final val loss $val nats after ${elapsed}s"
python3 -c "import sys; sys.exit(0 if $entropy > 2.9 else 1)" ||
  { echo "the corpus's unigram entropy $entropy is not the 3.00 nats this test is tuned for"; exit 1; }
python3 -c "import sys; sys.exit(0 if $val <= 2.0 else 1)" ||
  { echo "val loss $val is not well under the unigram entropy $entropy (at most 2.0 required)"; exit 1; }
[ "$elapsed" -le 60 ] || { echo "took ${elapsed}s, more than a minute"; exit 1; }
