#!/usr/bin/env bash
# fabtrain-exec train writes a run record (one rank, no mpirun, no root) that calibration's reader
# reads back: test_record_roundtrip.cpp checks its header and steps against the plan's schedule.
# Usage: record_roundtrip.sh FABTRAIN_EXEC TEST_CALIBRATE SOURCE_DIR
set -euo pipefail
exe=$1 tests=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$exe" train --model gpt2-nano --plan dp=1,mb=2 --data "$src/data/tiny_prose_train.txt" \
  --batch 4 --seq 32 --steps 2 --threads 1 --record "$work/run.jsonl" >"$work/out.log"
FABTRAIN_RUN_RECORD="$work/run.jsonl" "$tests" \
  --test-case="a run record written by fabtrain-exec train reads back through calibration's reader" \
  --success=false | tee "$work/test.log"
grep -q "SKIPPED" "$work/test.log" && { echo "the case skipped: the record was not given"; exit 1; }
grep -q "test cases: *1 | *1 passed" "$work/test.log" || { echo "the case did not run and pass"; exit 1; }
