#!/usr/bin/env bash
# A text file given to a model whose vocabulary is not bytes trains on raw bytes and says so once,
# naming the tokenizer; a byte-vocabulary model (gpt2-nano) trains on the same file without it.
# Usage: text_as_bytes.sh FABTRAIN_EXEC SOURCE_DIR
set -euo pipefail
exe=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/config.json" <<'JSON'
{"model_type": "gpt2", "n_layer": 1, "n_embd": 32, "n_head": 2, "n_positions": 32, "vocab_size": 50257}
JSON
data="$src/data/tiny_prose_train.txt"
timeout 120 mpirun -np 1 "$exe" train --model "$work/config.json" --data "$data" --batch 2 --seq 16 \
  --steps 1 --threads 1 >"$work/gpt2.txt" 2>&1 || { cat "$work/gpt2.txt"; exit 1; }
grep -q "read as raw bytes (ids 0-255 of .* 50257-token vocabulary).*fabtrain-exec tokenize" \
  "$work/gpt2.txt" || { cat "$work/gpt2.txt"; echo "FAIL: no note for text as bytes"; exit 1; }
[ "$(grep -c "read as raw bytes" "$work/gpt2.txt")" -eq 1 ] || { echo "FAIL: said more than once"; exit 1; }
timeout 120 mpirun -np 1 "$exe" train --model gpt2-nano --data "$data" --batch 2 --seq 16 \
  --steps 1 --threads 1 >"$work/nano.txt" 2>&1 || { cat "$work/nano.txt"; exit 1; }
! grep -q "read as raw bytes" "$work/nano.txt" || { echo "FAIL: a byte model was told"; exit 1; }
echo "text as bytes: ok"
