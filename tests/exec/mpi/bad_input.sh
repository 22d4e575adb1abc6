#!/usr/bin/env bash
# Bad input is refused with a message naming it: a plan whose rank count differs from the job's,
# a data file with a wrong magic, a truncated data file, an empty data file, a checkpoint of a
# different shape. Usage: bad_input.sh FABTRAIN_EXEC SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="$src/data/tiny_prose_train.txt"
common=(--model gpt2-nano --batch 4 --seq 16 --steps 1 --threads 1)
failures=0
expect_refusal() {  # name, expected message pattern, command...
  local name=$1 pattern=$2; shift 2
  if "$@" > "$work/out.log" 2>&1; then
    echo "FAIL $name: accepted"; failures=$((failures + 1)); return
  fi
  if grep -qE -- "$pattern" "$work/out.log"; then
    echo "ok   $name: $(grep -m1 -E -- "$pattern" "$work/out.log")"
  else
    echo "FAIL $name: message lacks /$pattern/:"; cat "$work/out.log"; failures=$((failures + 1))
  fi
}
expect_refusal "plan ranks != world (1 rank)" "needs dp\*tp\*pp = .* = 2 ranks, but the job has 1" \
  "$exe" train "${common[@]}" --plan dp=2 --data "$data"
expect_refusal "plan ranks != world (mpirun -np 2)" "needs dp\*tp\*pp = .* = 4 ranks, but the job has 2" \
  mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" train "${common[@]}" --plan dp=2,tp=2 --data "$data"
python3 - "$work" <<'PY'
import struct, sys
w = sys.argv[1]
open(f"{w}/magic.bin", "wb").write(struct.pack("<256i", 12345, 1, 10, *[0] * 253) + b"\0" * 20)
open(f"{w}/trunc.bin", "wb").write(struct.pack("<256i", 20240520, 1, 1000, *[0] * 253) + b"\1\0" * 500)
open(f"{w}/empty.txt", "wb").close()
open(f"{w}/vocab.bin", "wb").write(struct.pack("<256i", 20240520, 1, 100, *[0] * 253) + struct.pack("<100H", *[300] * 100))
# A gpt2-nano-like checkpoint with 3 layers instead of 2 (only the header matters).
open(f"{w}/ckpt.bin", "wb").write(struct.pack("<256i", 20240326, 3, 128, 256, 3, 4, 64, 256, *[0] * 248))
PY
expect_refusal "wrong magic" "magic.bin: wrong magic 12345" \
  "$exe" train "${common[@]}" --data "$work/magic.bin"
expect_refusal "truncated data" "trunc.bin: size 2024 bytes, but the header's 1000 tokens need" \
  "$exe" train "${common[@]}" --data "$work/trunc.bin"
expect_refusal "empty data" "empty.txt: empty file" \
  "$exe" train "${common[@]}" --data "$work/empty.txt"
expect_refusal "token outside vocabulary" "vocab.bin: token 300 is outside the model's vocabulary of 256" \
  "$exe" train "${common[@]}" --data "$work/vocab.bin"
expect_refusal "missing data" "nothing.txt: no such file" \
  "$exe" train "${common[@]}" --data "$work/nothing.txt"
expect_refusal "checkpoint shape" "ckpt.bin: L \(layers\) is 3 in the file but 2 in model gpt2-nano" \
  "$exe" train "${common[@]}" --data "$data" --init-from "$work/ckpt.bin"
[ "$failures" = 0 ]
