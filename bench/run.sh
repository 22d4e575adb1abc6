#!/usr/bin/env bash
# Runs every benchmark program that is built (BUILD_DIR/bin/bench_*: bench_cpu_model, bench_sim,
# bench_search, bench_published (median error against published runs, target 15%), and any added
# later), shows each one's full output, then their ratio lines
# (measured against target, >= 1 meets it) side by side under the program's name.
# Usage: bench/run.sh [BUILD_DIR]   (default: build; build the bench_* targets first)
# Not here: building, or deciding pass/fail (benchmarks report; tests decide); the accuracy on the
# emulated two-site link, which needs root and the whole machine (bench/emulated-accuracy.sh).
set -uo pipefail
build=${1:-build}
shopt -s nullglob
programs=("$build"/bin/bench_*)
if [ ${#programs[@]} -eq 0 ]; then
  echo "bench/run.sh: no bench_* programs in $build/bin (cmake --build $build --target bench_cpu_model bench_sim ...)" >&2
  exit 1
fi
summary=""
status=0
for exe in "${programs[@]}"; do
  name=$(basename "$exe")
  echo "=== $name"
  out=$("$exe" 2>&1)
  rc=$?
  echo "$out"
  if [ $rc -ne 0 ]; then
    summary+=$(printf '%-16s FAILED (exit %d)' "$name" "$rc")$'\n'
    status=1
    continue
  fi
  ratios=$(grep -i "ratio" <<<"$out" | grep -v "^ *benchmark ")
  [ -n "$ratios" ] || ratios="(no ratio lines)"
  while IFS= read -r line; do summary+=$(printf '%-16s %s' "$name" "$line")$'\n'; done <<<"$ratios"
done
echo
echo "=== ratios (measured / target; >= 1 meets the target)"
printf '%s' "$summary"
exit $status
