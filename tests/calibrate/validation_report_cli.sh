#!/usr/bin/env bash
# fabtrain validation report on a small recorded run, laid out as scripts/validate-emulated.sh
# lays out its work folder: gpt2-nano, dp=2 and tp=2 replayed by two ranks (loopback, compute
# slept as the catalog's CPU), each predicted by fabtrain simulate on the emulated two-site slice.
# The report has a row per plan with a finite error, the delay's ranking, the per-kind table
# with communication (from the record's "comm" and the trace's verbs), the mean error, the ratio
# lines to the mode's limit (what bench/emulated-accuracy.sh collects); --judge
# under a limit no prediction meets exits 1 naming it; `validation cases` prints the matrix's
# lists, and an unknown mode is refused naming the modes there are; `validation overlap` tabulates
# dp=2 replayed with overlap off and on (rows, exposed communication, the time hidden, the mean
# error, a case not measured) and refuses a plan without its overlap key.
# Usage: validation_report_cli.sh FABTRAIN_EXEC FABTRAIN SOURCE_DIR
set -uo pipefail
exe=$1 fab=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
printf 'dp=2\ntp=2\n' >"$work/plans-gpt2-nano"
for plan in dp=2 tp=2; do
  tag=gpt2-nano-${plan//[,=:]/_}-0
  mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" replay --model gpt2-nano --plan "$plan" --batch 8 \
    --seq 64 --steps 3 --device-type CPU_HOST --record "$work/run-$tag.jsonl" >"$work/replay.log" 2>&1 ||
    { cat "$work/replay.log"; fail "replay of $plan"; }
  "$fab" simulate --model gpt2-nano --slice "$src/platforms/data/slices/emulated-2site.yaml" --plan "$plan" \
    --batch 8 --seq 64 --json "$work/sim-cal-$tag.json" --trace "$work/trace-cal-$tag.json" >"$work/sim.log" 2>&1 ||
    { cat "$work/sim.log"; fail "simulate of $plan"; }
  cp "$work/sim-cal-$tag.json" "$work/sim-cal-bench-$tag.json"
done
report=(validation report --mode short --models gpt2-nano --delays 0 --work "$work")
"$fab" "${report[@]}" >"$work/report.txt" 2>&1 || { cat "$work/report.txt"; fail "the report exited non-zero"; }
cat "$work/report.txt"
for plan in dp=2 tp=2; do
  grep -qE "^gpt2-nano +0 ms $plan +[0-9.]+s +[0-9.]+s +[-+][0-9.]+%" "$work/report.txt" || fail "no row for $plan"
  grep -qE "^  gpt2-nano +0 ms $plan .*comm [0-9.]+/[0-9.]+" "$work/report.txt" || fail "no kinds with comm for $plan"
done
grep -qE "0 ms ranking (agrees|DIFFERS): predicted .* < .*; measured " "$work/report.txt" || fail "no ranking line"
grep -qE "^mean absolute percentage error [0-9.]+% over 2 cases" "$work/report.txt" || fail "no mean error"
grep -qE "^ratio \(target error 25% / measured [0-9.]+%\): ([0-9.]+|inf)$" "$work/report.txt" || fail "no ratio to the limit"
grep -qE "^ratio \(rankings agreeing / compared, target all\): (0|1)\.00$" "$work/report.txt" || fail "no ranking ratio"
sed 's/max_error_pct: 25/max_error_pct: 0.0001/' "$src/calibrate/data/validation_matrix.yaml" >"$work/strict.yaml"
if "$fab" "${report[@]}" --matrix "$work/strict.yaml" --judge >"$work/judged.txt" 2>&1; then
  cat "$work/judged.txt"; fail "--judge under a 0.0001% limit passed"
fi
grep -q "FAIL: validation mode short needs error <= 0.0001%" "$work/judged.txt" || { cat "$work/judged.txt"; fail "no limit named"; }
[ "$("$fab" validation cases --mode short --list plans | tr '\n' ' ')" = "dp=2 tp=2 " ] || fail "cases --list plans"
"$fab" validation cases --mode nope --list plans >"$work/bad.txt" 2>&1 && fail "an unknown mode was accepted"
grep -q "no mode 'nope' (modes: default, short, full-size, full-size-short, overlap)" "$work/bad.txt" || { cat "$work/bad.txt"; fail "unknown mode not named"; }
# The overlap table: dp=2 with overlap off and on, at 0 ms measured, at 25 ms not.
for mode in off on; do
  tag=gpt2-nano-dp_2_overlap_$mode-0
  mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" replay --model gpt2-nano --plan "dp=2,overlap=$mode" \
    --batch 8 --seq 64 --steps 3 --device-type CPU_HOST --record "$work/run-$tag.jsonl" >"$work/replay.log" 2>&1 ||
    { cat "$work/replay.log"; fail "replay of overlap=$mode"; }
  "$fab" simulate --model gpt2-nano --slice "$src/platforms/data/slices/emulated-2site.yaml" --plan "dp=2,overlap=$mode" \
    --batch 8 --seq 64 --json "$work/sim-cal-bench-$tag.json" >"$work/sim.log" 2>&1 || { cat "$work/sim.log"; fail "simulate"; }
done
overlap=(validation overlap --work "$work" --models gpt2-nano --player replay --plans "dp=2,overlap=off dp=2,overlap=on")
"$fab" "${overlap[@]}" --delays "0 25" >"$work/overlap.txt" 2>&1 || { cat "$work/overlap.txt"; fail "overlap exited non-zero"; }
cat "$work/overlap.txt"
grep -qE "^ +0 ms dp=2 +off +[0-9.]+s +[0-9.]+s +[-+][0-9.]+% +[0-9.]+ ms *$" "$work/overlap.txt" || fail "no overlap=off row"
grep -qE "^ +0 ms dp=2 +on +[0-9.]+s +[0-9.]+s +[-+][0-9.]+% +[0-9.]+/[0-9.]+ ms +[-+][0-9.]+ ms$" "$work/overlap.txt" ||
  fail "no overlap=on row with exposed communication and the time hidden"
grep -qE "^ +25 ms dp=2 +on +not measured" "$work/overlap.txt" || fail "no row for the case not measured"
grep -qE "^overlap \(replay\): mean absolute percentage error [0-9.]+% over 2 cases$" "$work/overlap.txt" || fail "no overlap mean"
"$fab" "${overlap[@]}" --delays 25 >"$work/none.txt" 2>&1 && fail "overlap with no case measured exited 0"
grep -q "overlap: no case was measured" "$work/none.txt" || { cat "$work/none.txt"; fail "no case measured not said"; }
"$fab" validation overlap --work "$work" --models gpt2-nano --delays 0 --plans "dp=2" >"$work/bad.txt" 2>&1 &&
  fail "a plan without overlap= was accepted"
grep -q "expected the plan to end in ,overlap=off or ,overlap=on" "$work/bad.txt" || { cat "$work/bad.txt"; fail "plan not named"; }
echo "ok"
