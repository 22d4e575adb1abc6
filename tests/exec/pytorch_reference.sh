#!/usr/bin/env bash
# The PyTorch reference of the GPU check (scripts/gpt2-reference.py) reads what fabtrain-exec
# writes: it compiles; it reads a checkpoint fabtrain-exec wrote (header, 16 tensors, the file's
# size) and refuses a truncated one by name; its data order is the loader's (the same numbers as
# test_runtime_data's). Where python3 has PyTorch, it also trains gpt2-nano from that checkpoint
# on the CPU for 3 steps with losses within 1e-4 of fabtrain-exec's (else it says it skips that).
# Usage: pytorch_reference.sh FABTRAIN_EXEC SOURCE_DIR
set -euo pipefail
exe=$1 src=$2
ref=$src/scripts/gpt2-reference.py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 -m py_compile "$ref" || fail "gpt2-reference.py does not compile"
[ "$(python3 "$ref" order 10 1337 0)" = "2 9 3 1 5 4 7 6 8 0" ] || fail "epoch 0's order differs"
[ "$(python3 "$ref" order 10 1337 1)" = "8 7 2 3 9 1 4 0 5 6" ] || fail "epoch 1's order differs"

data=$src/data/tiny_prose_train.txt
run() {  # run LOG ARGS...: one rank of fabtrain-exec train on gpt2-nano
  local log=$1
  shift
  timeout 120 mpirun -np 1 "$exe" train --model gpt2-nano --data "$data" --batch 4 --seq 32 \
    --threads 1 --print-every 1 "$@" >"$log" 2>&1 || { cat "$log"; fail "fabtrain-exec train"; }
}
run "$work/init.txt" --steps 1 --checkpoint-dir "$work/init"
model=$work/init/model_00000001.bin
python3 "$ref" describe "$model" >"$work/describe.txt" || { cat "$work/describe.txt"; fail describe; }
cat "$work/describe.txt"
count=$(awk '/^parameters/ {print $2}' "$work/describe.txt")
[ "$count" -eq $((($(stat -c %s "$model") - 1024) / 4)) ] || fail "$count parameters read"
grep -q "^qkvw .* 2x192x64 " "$work/describe.txt" || fail "gpt2-nano's qkvw shape"
head -c 5000 "$model" >"$work/short.bin"
set +e
python3 "$ref" describe "$work/short.bin" >"$work/short.txt" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "5000 bytes, expected" "$work/short.txt" || fail "a truncated file: rc $rc"

if ! python3 -c "import torch" >/dev/null 2>&1; then
  echo "pytorch reference: reads fabtrain-exec's checkpoint and data order; training skipped" \
    "(python3 has no PyTorch)"
  exit 0
fi
run "$work/fabtrain.txt" --steps 3 --init-from "$model" --record "$work/fabtrain.jsonl"
python3 "$ref" train "$model" "$data" 4 32 3 "$work/torch.jsonl" --device cpu
python3 "$src/scripts/gpu-losses.py" compare "$work/fabtrain.jsonl" "$work/torch.jsonl" 1e-4
echo "pytorch reference: ok"
