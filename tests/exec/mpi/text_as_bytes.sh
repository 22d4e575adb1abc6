#!/usr/bin/env bash
# A text file given to a model whose vocabulary is not bytes (GPT-2's 50257) is refused by name,
# with the command that tokenizes it, before any step; a byte-vocabulary model (gpt2-nano) trains
# on the same file.
# Usage: text_as_bytes.sh FABTRAIN_EXEC SOURCE_DIR
set -euo pipefail
exe=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/config.json" <<'JSON'
{"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 2, "n_positions": 32, "vocab_size": 50257}
JSON
data="$src/data/tiny_prose_train.txt"
if timeout 120 mpirun -np 2 "$exe" train --model "$work/config.json" --plan pp=2 --data "$data" \
  --batch 2 --seq 16 --steps 1 --threads 1 >"$work/gpt2.txt" 2>&1; then
  cat "$work/gpt2.txt"; echo "FAIL: text trained a 50257-token model"; exit 1
fi
# (the message may wrap: read it as one line)
tr -s ' \n' '  ' <"$work/gpt2.txt" | grep -q \
  "tiny_prose_train.txt: plain text.*vocabulary of 50257.*fabtrain-exec tokenize .*tiny_prose_train.txt -o DIR" \
  || { cat "$work/gpt2.txt"; echo "FAIL: the refusal does not say how to tokenize"; exit 1; }
! grep -q "^step " "$work/gpt2.txt" || { echo "FAIL: a step ran before the refusal"; exit 1; }
timeout 120 mpirun -np 1 "$exe" train --model gpt2-nano --data "$data" --batch 2 --seq 16 \
  --steps 1 --threads 1 >"$work/nano.txt" 2>&1 || { cat "$work/nano.txt"; exit 1; }
! grep -q "plain text" "$work/nano.txt" || { echo "FAIL: a byte model was refused"; exit 1; }
echo "text as bytes: ok"
