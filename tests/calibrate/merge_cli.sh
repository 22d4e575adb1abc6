#!/usr/bin/env bash
# fabtrain calibrate merge as a user types it: two fits on different GPU types give one file the
# simulator reads with both types; an entry the files give differently, a single file or a missing
# one is refused with a message and a non-zero exit, writing nothing; plain calibrate still asks
# for its --bench; plan and simulate take several files, merged the same way.
# Usage: merge_cli.sh FABTRAIN
set -uo pipefail
fabtrain=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
printf 'compute:\n  GPU_A30:\n    forward: {matmul_efficiency: 0.6}\nheld_out_step_error: 0.05\n' >a30.yaml
printf 'compute:\n  GPU_RTX6000:\n    forward: {matmul_efficiency: 0.45}\nlinks:\n  l2sts: {latency_s: 0.03}\nheld_out_step_error: 0.1\n' >rtx.yaml
printf 'compute:\n  GPU_A30:\n    forward: {matmul_efficiency: 0.5}\n' >other-a30.yaml

"$fabtrain" calibrate merge a30.yaml rtx.yaml -o both.yaml >out.txt 2>&1 || fail "merge exited non-zero: $(cat out.txt)"
grep -q "GPU_A30:" both.yaml && grep -q "GPU_RTX6000:" both.yaml && grep -q "l2sts:" both.yaml ||
  fail "the merged file lacks a type: $(cat both.yaml)"
grep -q "^held_out_step_error: 0.1" both.yaml || fail "held-out error is not the larger one"
# The simulator reads it and warns only about the slice's own type (CPU_HOST), not about either fit.
"$fabtrain" simulate --model gpt2-nano --slice emulated-2site --plan dp=2 --calibration both.yaml \
  >sim.txt 2>&1 || fail "simulate with the merged file: $(tail -3 sim.txt)"

# plan and simulate take several files and merge them the same way: the answer with both files is
# the answer with the merged one (and not the catalog's).
answer() {  # the output, the calibration's name and the search's time aside (unwrapped)
  COLUMNS=1000 "$fabtrain" "$@" --model gpt2-nano --slice utah-amst 2>&1 |
    sed 's/a30.yaml + rtx.yaml/CALIBRATION/g; s/both.yaml/CALIBRATION/g; s/ in [0-9.]* s:/ in T s:/'
}
for cmd in "plan --top 3" "simulate --plan dp=2,pp=2"; do
  # shellcheck disable=SC2086
  two=$(answer $cmd --calibration a30.yaml rtx.yaml) || fail "$cmd with two calibrations: $two"
  # shellcheck disable=SC2086
  [ "$two" = "$(answer $cmd --calibration both.yaml)" ] || fail "$cmd: two files differ from the merged one"
  # shellcheck disable=SC2086
  [ "$two" != "$(answer $cmd)" ] || fail "$cmd: two files changed nothing"
done
named=$("$fabtrain" plan --model gpt2-nano --slice utah-amst --calibration a30.yaml rtx.yaml 2>&1)
[[ "$named" == *"calibration=a30.yaml + rtx.yaml"* ]] || fail "plan does not name both calibrations"

refused() {
  local want="$1"; shift
  if "$fabtrain" "$@" >err.txt 2>&1; then fail "exit 0: $*"; return; fi
  grep -q -- "$want" err.txt || fail "$*: wanted '$want', got: $(cat err.txt)"
}
refused "compute.GPU_A30.forward differs between a30.yaml and other-a30.yaml" \
  calibrate merge a30.yaml other-a30.yaml -o bad.yaml
[ -e bad.yaml ] && fail "a refused merge wrote its output"
refused "--calibration: compute.GPU_A30.forward differs between a30.yaml and other-a30.yaml" \
  plan --model gpt2-nano --slice utah-amst --calibration a30.yaml other-a30.yaml
refused "--calibration: compute.GPU_A30.forward differs between a30.yaml and other-a30.yaml" \
  simulate --model gpt2-nano --slice utah-amst --plan dp=4 --calibration a30.yaml other-a30.yaml
refused "two or more calibration files" calibrate merge a30.yaml -o bad.yaml
refused "not found: absent.yaml" calibrate merge a30.yaml absent.yaml -o bad.yaml
refused "bench is required" calibrate -o bad.yaml
[ "$failures" -eq 0 ] && echo "calibrate merge: ok" || exit 1
