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
#   4. mixed precision against the fp32 CPU losses: gpt2-nano in bf16 (Ampere and newer) and
#      in fp16 with dynamic loss scaling, and fp16 resumed halfway against the whole run (bits);
#   5. tokens/s, achieved TFLOP/s and MFU of GPT-2 medium at the largest batch (8, 4, 2) that
#      fits, in PRECISION and in bf16 (Ampere and newer); the peak each MFU divides by is the
#      catalog's dense peak of the GPU type nvidia-smi names, printed with its source
#      (PEAK_TFLOPS_TF32, PEAK_TFLOPS_BF16, ... give one where the catalog has none).
# Each part writes OUT_DIR/NAME.log and a line "NAME rc=N Ts" to OUT_DIR/summary.txt. Exit status:
# 0 when every part passed, 1 when any failed or was skipped for time, 77 when there is no GPU
# (the libraries, the version and the CUDA tests' skip line are checked, then the check stops
# with the reason).
# Usage: run-gpu-check.sh OUT_DIR   (env: TOTAL_S=540, PRECISION=tf32 or fp32)
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

gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
compute_cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
sm_major=${compute_cap%%.*}
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
if [ $? -eq 77 ]; then
  echo "no GPU here: $(grep -m1 SKIP "$out/tests_cuda.log"); the rest of the check needs one" |
    tee -a "$summary"
  exit 77
fi
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
NCCL_DEBUG=INFO train nano_cuda cuda gpt2-nano 8 64 --precision fp32
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
NCCL_DEBUG=INFO train nano_cuda_nccl cuda gpt2-nano 8 64 --precision fp32 --comm nccl
compare nano_cuda nano_cuda_nccl 1e-6
# One rank under --comm auto sets no NCCL up: NCCL_DEBUG=INFO logs the set-up --comm nccl makes.
nccl_lines() { grep -c "NCCL INFO" "$out/$1.log" 2>/dev/null; }
if [ "$(nccl_lines nano_cuda)" = 0 ] && [ "$(nccl_lines nano_cuda_nccl)" != 0 ]; then
  echo "one rank: no NCCL set-up under --comm auto, NCCL's under --comm nccl: ok" | tee -a "$summary"
else
  echo "one rank: NCCL INFO lines under --comm auto $(nccl_lines nano_cuda), under --comm nccl" \
    "$(nccl_lines nano_cuda_nccl) (want 0 and some): FAIL" | tee -a "$summary"
  failures=$((failures + 1))
fi

# 4. Mixed precision against the fp32 CPU losses (16-bit products drift from fp32 over the steps:
#    these bounds are a first guess, to be set from the first measurement).
if [ "${sm_major:-0}" -ge 8 ]; then
  train nano_cuda_bf16 cuda gpt2-nano 8 64 --precision bf16
  compare nano_cpu nano_cuda_bf16 3e-2
else
  echo "nano_cuda_bf16 skipped: compute capability ${compute_cap:-unknown} has no bf16 tensor cores" |
    tee -a "$summary"
fi
train nano_cuda_fp16 cuda gpt2-nano 8 64 --precision fp16
compare nano_cpu nano_cuda_fp16 1e-2
# fp16 stopped after 10 steps and resumed from its checkpoint, which keeps the loss scaler's
# state: the 20 losses are the uninterrupted run's, to the bit (the overflows counted show
# whether the scale changed before the break).
ckpt=$out/nano_cuda_fp16_ckpt
train nano_cuda_fp16_part cuda gpt2-nano 8 64 --precision fp16 --stop-after 10 \
  --checkpoint-dir "$ckpt"
train nano_cuda_fp16_resumed cuda gpt2-nano 8 64 --precision fp16 --resume --checkpoint-dir "$ckpt"
cat "$out/nano_cuda_fp16_part.jsonl" "$out/nano_cuda_fp16_resumed.jsonl" \
  >"$out/nano_cuda_fp16_joined.jsonl" 2>/dev/null
echo "fp16 overflows before the break: $(grep -c overflowed "$out/nano_cuda_fp16_part.log")" |
  tee -a "$summary"
compare nano_cuda_fp16 nano_cuda_fp16_joined 0

# 5. Speed of GPT-2 medium: the largest batch of 8, 4, 2 sequences of 1024 tokens that fits.
speed() {  # speed PRECISION
  local precision=$1 batch name line peak_var=PEAK_TFLOPS_${1^^}
  local peak=${!peak_var:-}
  for batch in 8 4 2; do
    name=speed_medium_${precision}_b$batch
    if STEPS=6 LIMIT=240 train "$name" cuda gpt2-medium "$batch" 1024 --precision "$precision"; then
      echo "speed gpt2-medium batch $batch x 1024, $precision" | tee -a "$summary"
      if [ -z "$peak" ] && line=$(python3 "$bundle/gpu-losses.py" peak \
        "$FABTRAIN_SOURCE_DIR/platforms/data/catalog.yaml" "$gpu_name" "$precision"); then
        peak=${line%% *}
        echo "  peak $precision (dense, the catalog's): $line" | tee -a "$summary"
      else
        echo "  peak $precision: ${peak:-none} (${line:-$peak_var})" | tee -a "$summary"
      fi
      note python3 "$bundle/gpu-losses.py" speed "$out/$name.jsonl" 354823168 24 1024 1024 \
        "$peak"
      return
    fi
    grep -q -E "out of memory|of device memory" "$out/$name.log" || return
    failures=$((failures - 1))  # a batch that does not fit is not a failure while a smaller one is left
  done
}
speed "$precision"
if [ "${sm_major:-0}" -ge 8 ]; then speed bf16; fi

echo "done in $(($(date +%s) - started)) s with $failures failures: $out" | tee -a "$summary"
[ "$failures" -eq 0 ]
