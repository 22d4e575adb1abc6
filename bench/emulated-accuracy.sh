#!/usr/bin/env bash
# The simulator's accuracy on the emulated two-site link: runs scripts/validate-emulated.sh in the
# judged modes of calibrate/data/validation_matrix.yaml (default "short": gpt2-nano trained, dp=2
# against tp=2 at 0 and 25 ms one-way, about 1 minute; and "full-size-short": GPT-2 medium
# replayed on two sites of two ranks at 103 ms round trip, about 8 minutes), shows each mode's
# full output, then their ratio lines (the mode's error limit over the measured error, rankings
# that agree; >= 1 meets the target) side by side under the mode's name.
# A measurement, not a test: it needs root, network namespaces and an otherwise quiet machine
# (the emulator shares its cores with the ranks). A mode that cannot measure here (no namespaces,
# or the emulator could not carry the link on time) is shown as SKIPPED with the reason.
# Record what it measures, dated, under docs/results/.
# Usage: bench/emulated-accuracy.sh [--bin DIR] [--dry-run] [MODE ...]
#   --bin DIR   where fabtrain, fabtrain-exec and fabtrain-wan are (default: the newest build*/bin)
#   --dry-run   print what each mode resolves to, measure nothing
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
validate=(bash "$repo/scripts/validate-emulated.sh")
modes=() dry_run=0
while [ $# -gt 0 ]; do
  case $1 in
    --bin)
      [ $# -ge 2 ] || { echo "FAIL: --bin needs a value"; exit 2; }
      validate+=(--bin "$2")
      shift 2 ;;
    --dry-run) dry_run=1; validate+=(--dry-run); shift ;;
    -h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "FAIL: unknown option '$1' (see --help)"; exit 2 ;;
    *) modes+=("$1"); shift ;;
  esac
done
[ ${#modes[@]} -gt 0 ] || modes=(short full-size-short)

summary=""
status=0
for mode in "${modes[@]}"; do
  echo "=== $mode"
  out=$("${validate[@]}" --mode "$mode" 2>&1)
  rc=$?
  echo "$out"
  if [ "$dry_run" -eq 1 ]; then
    [ $rc -eq 0 ] || status=$rc
    continue
  fi
  case $rc in
    0 | 1) ratios=$(grep "^ratio " <<<"$out") ;;  # 1: measured, and the limit missed
    77) ratios="SKIPPED: $(grep -m1 '^SKIP: ' <<<"$out" | cut -c7-)" ;;
    *) ratios="FAILED (exit $rc)"; status=1 ;;
  esac
  [ -n "$ratios" ] || { ratios="FAILED (exit $rc, no ratio lines)"; status=1; }
  while IFS= read -r line; do summary+=$(printf '%-16s %s' "$mode" "$line")$'\n'; done <<<"$ratios"
done
[ "$dry_run" -eq 1 ] && exit $status
echo
echo "=== ratios (target / measured; >= 1 meets the target)"
printf '%s' "$summary"
exit $status
