#!/usr/bin/env bash
# The CPU executor's peak resident set per rank, as the run record carries it, against the
# stage's predicted memory: GPT-2 (124M, so the model's memory dwarfs the program's own) for two
# steps of a short sequence, one plan; test_exec's case checks each rank within its bound.
# Usage: rss_vs_model.sh FABTRAIN_EXEC TEST_EXEC SOURCE_DIR PLAN NP
set -euo pipefail
exe=$1 tests=$2 src=$3 plan=$4 np=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# GPT-2 reads tokens: the text's bytes as an llm.c token file (magic 20240520, version 1, count).
python3 - "$src/data/tiny_prose_train.txt" "$work/train.bin" <<'PY'
import struct, sys
text = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "wb") as out:
    out.write(struct.pack("<256i", 20240520, 1, len(text), *[0] * 253))
    out.write(struct.pack(f"<{len(text)}H", *text))
PY
launch=()
if [ "$np" -gt 1 ]; then launch=(mpirun --oversubscribe -np "$np"); fi
"${launch[@]}" "$exe" train --model gpt2 --plan "$plan" --data "$work/train.bin" \
  --batch 4 --seq 64 --steps 2 --threads 1 --record "$work/run.jsonl" >"$work/out.log"
FABTRAIN_RSS_RECORD="$work/run.jsonl" "$tests" \
  --test-case="the recorded peak resident set of each rank is its stage's predicted memory" \
  --success=false | tee "$work/test.log"
grep -q "SKIPPED" "$work/test.log" && { echo "the case skipped: the record was not given"; exit 1; }
grep -q "test cases: *1 | *1 passed" "$work/test.log" || { echo "the case did not run and pass"; exit 1; }
