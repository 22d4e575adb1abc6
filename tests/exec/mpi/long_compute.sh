#!/usr/bin/env bash
# The watchdog times waits on peers, not compute: a healthy one-rank job whose compute
# instructions each last longer than --timeout-s finishes (exit 0). The run record shows that the
# longest compute instruction did outlast the timeout with the watchdog's poll (0.1 s), so the
# watchdog had every chance to fire on it.
# Usage: long_compute.sh FABTRAIN_EXEC SOURCE_DIR
set -euo pipefail
exe=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
timeout=0.05
timeout -k 5 120 "$exe" train --model gpt2-nano --data "$src/data/tiny_prose_train.txt" \
  --batch 256 --seq 128 --steps 2 --threads 1 --timeout-s "$timeout" --print-every 1 \
  --record "$work/run.jsonl" >"$work/out.log" 2>&1 || { cat "$work/out.log"; echo "the job failed"; exit 1; }
longest=$(python3 - "$work/run.jsonl" <<'PY'
import json, sys
print(max(i["duration_s"] for line in open(sys.argv[1]) for i in json.loads(line).get("instructions", [])
          if i.get("flops", 0) > 0))
PY
)
echo "longest compute instruction ${longest} s, --timeout-s ${timeout}: the job finished"
python3 -c "import sys; sys.exit(0 if $longest > $timeout + 0.15 else 1)" ||
  { echo "the longest compute instruction (${longest} s) is too short to test the watchdog"; exit 1; }
