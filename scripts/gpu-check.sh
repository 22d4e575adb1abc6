#!/usr/bin/env bash
# The prepared check for a machine with an NVIDIA GPU (CUDA toolkit, cuBLAS and NCCL under
# /usr/local/cuda): builds the CUDA backend, runs its tests against the CPU backend, compares the
# CPU and CUDA training losses for gpt2-nano and GPT-2 small over a few steps, and times training
# steps of GPT-2 small and medium (tokens/s and achieved TFLOP/s; MFU when PEAK_TFLOPS is given,
# e.g. PEAK_TFLOPS=67 for an H100/H200's fp32 or 495 for its dense tf32). Everything goes under
# OUTDIR; each part has its own log and return code in OUTDIR/summary.txt. Aims at <= 10 minutes.
# Usage: scripts/gpu-check.sh OUTDIR   (env: BUILD_DIR=build-gpu, JOBS=$(nproc), PEAK_TFLOPS)
set -u
out=${1:?usage: gpu-check.sh OUTDIR}
src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$src/build-gpu}
jobs=${JOBS:-$(nproc)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: >"$summary"
step() {  # step NAME TIMEOUT_S COMMAND...: runs it, logs to OUTDIR/NAME.log, notes rc and time
  local name=$1 limit=$2
  shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$summary"
  return $rc
}

nvidia-smi >"$out/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,compute_cap,memory.total,clocks.max.sm --format=csv >>"$out/nvidia-smi.txt" 2>&1
git -C "$src" rev-parse HEAD >"$out/commit.txt" 2>&1

# 1. Build: only what the check needs, for this GPU's architecture alone (fast).
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
step configure 120 cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  ${arch:+-DCMAKE_CUDA_ARCHITECTURES=$arch} || exit 1
step build 300 cmake --build "$build" -j"$jobs" --target fabtrain-exec test_exec_cuda || exit 1
exe=$build/bin/fabtrain-exec

# 2. The CUDA tests (they print "SKIP: no CUDA device" and exit 77 when no GPU is visible).
step tests_cuda 120 "$build/bin/test_exec_cuda" -s

# 3. CPU against CUDA losses, same seed, data and plan.
train_text=$src/data/tiny_prose_train.txt
compare() {  # compare NAME MODEL BATCH SEQ STEPS
  local name=$1 model=$2 batch=$3 seq=$4 steps=$5
  for dev in cpu cuda; do
    step "loss_${name}_$dev" 240 "$exe" train --device "$dev" --model "$model" --data "$train_text" \
      --batch "$batch" --seq "$seq" --steps "$steps" --lr 1e-3 --print-every 1 \
      --record "$out/loss_${name}_$dev.jsonl"
  done
  python3 - "$out/loss_${name}_cpu.jsonl" "$out/loss_${name}_cuda.jsonl" <<'PY' | tee -a "$summary"
import json, sys
def losses(path):
    try:
        return [r["loss"] for r in map(json.loads, open(path)) if "loss" in r]
    except OSError:
        return []
cpu, gpu = losses(sys.argv[1]), losses(sys.argv[2])
if not cpu or len(cpu) != len(gpu):
    print(f"  losses: cpu {cpu} cuda {gpu}: cannot compare"); sys.exit()
worst = max(abs(a - b) / abs(a) for a, b in zip(cpu, gpu))
print(f"  losses cpu {['%.5f' % x for x in cpu]}")
print(f"  losses cuda {['%.5f' % x for x in gpu]}  worst relative difference {worst:.2e}")
PY
}
compare nano gpt2-nano 8 64 10
compare small gpt2 4 256 3

# 4. Speed: training steps of GPT-2 small and medium on this GPU (the first step is warm-up).
speed() {  # speed MODEL BATCH SEQ PRECISION
  local model=$1 batch=$2 seq=$3 precision=$4 name=speed_$1_$4
  step "$name" 240 "$exe" train --device cuda --precision "$precision" --model "$model" \
    --data "$train_text" --batch "$batch" --seq "$seq" --steps 6 --print-every 1 \
    --record "$out/$name.jsonl"
  python3 - "$out/$name.jsonl" "$model" "$seq" "${PEAK_TFLOPS:-}" <<'PY' | tee -a "$summary"
import json, sys
path, model, seq, peak = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
shapes = {"gpt2": (12, 768, 124e6), "gpt2-medium": (24, 1024, 355e6)}
L, C, N = shapes.get(model, (0, 0, 0))
try:
    rows = [r for r in map(json.loads, open(path)) if "tokens_per_s" in r][1:]
except OSError:
    rows = []
if not rows:
    print(f"  {model}: no steps recorded"); sys.exit()
tps = sum(r["tokens_per_s"] for r in rows) / len(rows)
flops_per_token = 6 * N + 12 * L * C * seq  # llm.c's estimate (matmuls + attention)
tflops = tps * flops_per_token / 1e12
mfu = f", MFU {100 * tflops / float(peak):.1f}% of {peak} TFLOP/s" if peak else ""
print(f"  {model}: {tps:,.0f} tokens/s, {tflops:.1f} TFLOP/s achieved{mfu}")
PY
}
speed gpt2 8 1024 fp32
speed gpt2 8 1024 tf32
speed gpt2-medium 8 1024 tf32

echo "done: $out" | tee -a "$summary"
