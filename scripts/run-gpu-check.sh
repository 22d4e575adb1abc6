#!/usr/bin/env bash
# The GPU check, run from a bundle made by scripts/gpu-bundle.sh on a machine that has the NVIDIA
# driver and CUDA 13's cuBLAS and NCCL (under the toolkit, or as the Python wheels nvidia-cublas
# and nvidia-nccl-cu13) and nothing else of fabtrain's: it finds those libraries, prints ldd of
# every binary, then runs each part under its own time limit, while the whole stays under
# TOTAL_S (parts that would start later are skipped, and say so):
#   1. the CUDA stage tests and the backend op table (every CUDA op against the CPU's, by row);
#   2. CPU against CUDA losses, same seed and data, 20 steps of gpt2-nano and of GPT-2 small;
#      where PyTorch is present, a PyTorch reference trains the same GPT-2 small checkpoint;
#   3. dp=2 and pp=2 over two ranks sharing the one GPU (the bundle's mpirun, --comm mpi: NCCL
#      refuses two ranks on one device), against the one-rank CUDA losses; NCCL on one rank;
#   4. tokens/s and achieved TFLOP/s of GPT-2 medium at the largest batch (8, 4, 2) that fits;
#      MFU when PEAK_TFLOPS is given (the GPU's dense peak at the precision used).
# Each part writes OUT_DIR/NAME.log and a line "NAME rc=N Ts" to OUT_DIR/summary.txt; the exit
# status is non-zero when any part failed.
# Usage: run-gpu-check.sh OUT_DIR   (env: TOTAL_S=540, PEAK_TFLOPS, PRECISION=tf32 or fp32)
set -u
bundle=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run-gpu-check.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: >"$summary"
total_s=${TOTAL_S:-540}
started=$(date +%s)
failures=0

source "$bundle/env.sh"  # the bundle's and the CUDA libraries, Open MPI's plugins
cuda_path=$CUDA_LIBS
exe=$bundle/bin/fabtrain-exec
text=$FABTRAIN_SOURCE_DIR/data/tiny_prose_train.txt
precision=${PRECISION:-tf32}

step() {  # step NAME LIMIT_S COMMAND...: logged to OUT/NAME.log; its rc and time to the summary
  local name=$1 limit=$2
  shift 2
  local left=$((total_s - ($(date +%s) - started)))
  if [ "$left" -lt 10 ]; then
    echo "$name skipped (the check's $total_s s are spent)" | tee -a "$summary"
    failures=$((failures + 1))
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 124 ] && echo "(timed out after $limit s)" >>"$out/$name.log"
  echo "$name rc=$rc $(($(date +%s) - t0))s" | tee -a "$summary"
  [ $rc -eq 0 ] || failures=$((failures + 1))
  return $rc
}
note() { "$@" 2>&1 | tee -a "$summary" || failures=$((failures + 1)); }

{
  echo "bundle $(cat "$bundle/COMMIT") on $(hostname)"
  echo "CUDA libraries from: ${cuda_path:-none found}"
  ldd --version | head -1
  nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader
} 2>&1 | tee -a "$summary"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
for f in "$bundle"/bin/*; do echo "== $f"; ldd "$f"; done >"$out/ldd.txt" 2>&1
if grep -q "not found" "$out/ldd.txt"; then
  echo "missing libraries:" | tee -a "$summary"
  grep "not found" "$out/ldd.txt" | sort -u | tee -a "$summary"
fi
step version 30 "$exe" --version

# 1. The CUDA stage tests, then the op table (CUDA rows against the CPU's).
step tests_cuda 150 "$bundle/bin/test_exec_cuda"
step op_table 90 "$bundle/bin/test_exec" --test-case='backend ops:*'

# 2. CPU against CUDA losses: same seed, data and plan; fp32 products on both.
train() {  # train NAME DEVICE MODEL BATCH SEQ [ARGS...]
  local name=$1 device=$2 model=$3 batch=$4 seq=$5
  shift 5
  step "$name" "${LIMIT:-120}" "$exe" train --device "$device" --model "$model" --data "$text" \
    --batch "$batch" --seq "$seq" --steps "${STEPS:-20}" --lr 1e-3 --print-every 1 \
    --record "$out/$name.jsonl" "$@"
}
compare() {  # compare REFERENCE OTHER LIMIT
  echo "compare $1 $2" | tee -a "$summary"
  note python3 "$bundle/gpu-losses.py" compare "$out/$1.jsonl" "$out/$2.jsonl" "$3"
}
train nano_cpu cpu gpt2-nano 8 64
train nano_cuda cuda gpt2-nano 8 64 --precision fp32
compare nano_cpu nano_cuda 1e-3
LIMIT=200 train small_cpu cpu gpt2 4 128
train small_cuda cuda gpt2 4 128 --precision fp32
compare small_cpu small_cuda 1e-3

# 2b. Where PyTorch sees the GPU: the same GPT-2 small checkpoint (one step from the seed), trained
#     20 steps by fabtrain-exec and by the PyTorch reference (gpt2-reference.py), fp32 both.
if python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
  init=$out/small_init/model_00000001.bin
  STEPS=1 train small_init cuda gpt2 4 128 --precision fp32 --checkpoint-dir "$out/small_init"
  train small_cuda_ckpt cuda gpt2 4 128 --precision fp32 --init-from "$init"
  step small_torch 200 python3 "$bundle/gpt2-reference.py" train "$init" "$text" 4 128 20 \
    "$out/small_torch.jsonl" --lr 1e-3
  compare small_torch small_cuda_ckpt 1e-3
else
  echo "torch_reference skipped: python3 has no PyTorch that sees a GPU" | tee -a "$summary"
fi

# 3. Two ranks sharing the GPU over MPI, against one rank; NCCL's code path on one rank.
for plan in dp=2 pp=2,mb=2; do
  name=nano_cuda_${plan%%,*}
  step "$name" 120 mpirun -np 2 --oversubscribe "$exe" train --device cuda --comm mpi \
    --precision fp32 --plan "$plan" --model gpt2-nano --data "$text" --batch 8 --seq 64 \
    --steps 20 --lr 1e-3 --print-every 1 --record "$out/$name.jsonl"
  compare nano_cuda "$name" 1e-4
done
train nano_cuda_nccl cuda gpt2-nano 8 64 --precision fp32 --comm nccl
compare nano_cuda nano_cuda_nccl 1e-6

# 4. Speed of GPT-2 medium: the largest batch of 8, 4, 2 sequences of 1024 tokens that fits.
for batch in 8 4 2; do
  name=speed_medium_b$batch
  if STEPS=6 LIMIT=240 train "$name" cuda gpt2-medium "$batch" 1024 --precision "$precision"; then
    echo "speed gpt2-medium batch $batch x 1024, $precision" | tee -a "$summary"
    note python3 "$bundle/gpu-losses.py" speed "$out/$name.jsonl" 354823168 24 1024 1024 \
      "${PEAK_TFLOPS:-}"
    break
  fi
  grep -q -E "out of memory|of device memory" "$out/$name.log" || break
  failures=$((failures - 1))  # a batch that does not fit is not a failure while a smaller one is left
done

echo "done in $(($(date +%s) - started)) s with $failures failures: $out" | tee -a "$summary"
[ "$failures" -eq 0 ]
