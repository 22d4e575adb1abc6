#!/usr/bin/env bash
# scripts/gpu-losses.py, the GPU check's reader of run records and of the catalog: the peak of the
# GPU type nvidia-smi names (the most specific key, with its description and source), refused
# where no type matches or the type has no peak at that precision; the speed line's tokens/s,
# TFLOP/s and MFU from a run record; a loss comparison over and under its limit.
# Usage: gpu_losses.sh SOURCE_DIR
set -euo pipefail
src=$1
reader=$src/scripts/gpu-losses.py
catalog=$src/platforms/data/catalog.yaml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

line=$(python3 "$reader" peak "$catalog" "NVIDIA H100 80GB HBM3" bf16)
[[ $line =~ ^[0-9.]+\ GPU_H100\ .*source:\ NVIDIA ]] || fail "H100 bf16: $line"
line=$(python3 "$reader" peak "$catalog" "NVIDIA A100-SXM4-80GB" tf32)
[[ $line =~ ^[0-9.]+\ GPU_A100_80GB\  ]] || fail "A100 80GB (not the 40GB type): $line"
python3 "$reader" peak "$catalog" "Tesla T4" bf16 >"$work/t4" && fail "T4 has a bf16 peak"
grep -q "GPU_TeslaT4 has no bf16 peak" "$work/t4" || fail "T4: $(cat "$work/t4")"
python3 "$reader" peak "$catalog" "NVIDIA B999" bf16 >"$work/none" && fail "an unknown GPU matched"
grep -q "no GPU type" "$work/none" || fail "unknown GPU: $(cat "$work/none")"

# 6N FLOPs per token at N = 1e9 (no attention term: 0 layers): 2000 tokens/s after the warm-up
# step is 12 TFLOP/s, 12% of a 100 TFLOP/s peak.
for tps in 500 2000 2000; do echo "{\"type\": \"step\", \"loss\": 5.0, \"tokens_per_s\": $tps}"; done \
  >"$work/run.jsonl"
line=$(python3 "$reader" speed "$work/run.jsonl" 1e9 0 1 1 100)
[[ $line == *"2,000 tokens/s, 12.0 TFLOP/s achieved, MFU 12.0% of 100 TFLOP/s"* ]] || fail "speed: $line"

for loss in 5.0 4.0; do echo "{\"type\": \"step\", \"loss\": $loss}"; done >"$work/a.jsonl"
for loss in 5.0 4.1; do echo "{\"type\": \"step\", \"loss\": $loss}"; done >"$work/b.jsonl"
python3 "$reader" compare "$work/a.jsonl" "$work/b.jsonl" 3e-2 >/dev/null || fail "2.5% over 3e-2"
python3 "$reader" compare "$work/a.jsonl" "$work/b.jsonl" 1e-2 >/dev/null && fail "2.5% under 1e-2"
echo "gpu-losses.py: peaks from the catalog, speed and comparisons as expected"
