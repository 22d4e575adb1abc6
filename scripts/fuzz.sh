#!/usr/bin/env bash
# Fuzzes every parser for a bounded time with libFuzzer under ASan and UBSan, and fails on any
# finding (crash, sanitizer report, exception other than fabtrain::Error, hang, memory blow-up).
# Replays the kept regression inputs (tests/fuzz/regressions/TARGET/) first, then fuzzes from the
# seeds (the shipped files, tests/fuzz/seeds/TARGET/). Builds with clang-14 into build-fuzz/.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 30)] [TARGET...]
# Findings land in build-fuzz/findings/; copy one into tests/fuzz/regressions/TARGET/ once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] &&
  targets=(slice plan model_config calibration bench run_record checkpoint fablib_import documents
           tokenizer npy availability vector_index embedding_folder)

declare -A seeds=(
  [slice]="platforms/data/slices tests/selector/slices bench/slices"
  [plan]="tests/fuzz/seeds/plan"
  [model_config]="tests/calibrate/gpt2-l4-c128"
  [calibration]="tests/fuzz/seeds/calibration"
  [bench]="tests/fuzz/seeds/bench"
  [run_record]="tests/fuzz/seeds/run_record"
  [checkpoint]="tests/fuzz/seeds/checkpoint"
  [fablib_import]="tests/platforms/fablib"
  [documents]="tests/fuzz/seeds/documents"
  [tokenizer]="tests/fuzz/seeds/tokenizer"
  [npy]="tests/fuzz/seeds/npy"
  [availability]="tests/selector/availability"
  [vector_index]="tests/fuzz/seeds/vector_index"
  [embedding_folder]="tests/fuzz/seeds/embedding_folder"
)

scripts/install-deps.sh
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_C_COMPILER=clang-14 -DFABTRAIN_FUZZ=ON -DFABTRAIN_CUDA=OFF >/dev/null
fi
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}" 2>&1 | grep -E "error|Error" || true
for t in "${targets[@]}"; do [ -x "build-fuzz/fuzz/fuzz_$t" ] || { echo "fuzz: fuzz_$t did not build"; exit 1; }; done

# A UBSan report aborts (-fno-sanitize-recover); leaks are not findings (the libraries keep
# static caches), memory over 2 GiB and an input over 10 s are.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
mkdir -p build-fuzz/findings
failed=0
printf '%-14s %12s %10s  %s\n' parser inputs findings result
for t in "${targets[@]}"; do
  exe="build-fuzz/fuzz/fuzz_$t"
  regressions="tests/fuzz/regressions/$t"
  log="build-fuzz/findings/$t.log"
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    if ! "$exe" -timeout=10 -rss_limit_mb=2048 "$regressions"/* > "$log.regressions" 2>&1; then
      printf '%-14s %12s %10s  %s\n' "$t" - 1 "a kept regression input fails again: $log.regressions"
      failed=1
      continue
    fi
  fi
  corpus="build-fuzz/corpus/$t"
  mkdir -p "$corpus"
  status=0
  # shellcheck disable=SC2086
  "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/findings/$t-" "$corpus" ${seeds[$t]} > "$log" 2>&1 || status=$?
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)
  if [ "$status" -ne 0 ]; then
    printf '%-14s %12s %10s  %s\n' "$t" "${runs:-?}" 1 "FINDING (exit $status): $log, $(ls build-fuzz/findings/$t-* 2>/dev/null | grep -v log | head -1)"
    failed=1
  else
    printf '%-14s %12s %10s  %s\n' "$t" "${runs:-?}" 0 ok
  fi
done
exit "$failed"
