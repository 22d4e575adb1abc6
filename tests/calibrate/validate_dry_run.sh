#!/usr/bin/env bash
# scripts/validate-emulated.sh, scripts/measure-overlap.sh and bench/emulated-accuracy.sh --dry-run:
# each mode resolves its cases and how they run from calibrate/data/validation_matrix.yaml (player,
# steps, sequence, batch, link rate, nice level, GPU type, slice), options narrow or replace them,
# and bad options are refused by name with exit 2. Measures nothing: needs neither root nor
# namespaces.
# Usage: validate_dry_run.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
fail() { echo "FAIL: $*"; exit 1; }
dry() { bash "$src/scripts/validate-emulated.sh" --bin "$bin" --dry-run "$@" 2>&1; }
expect() {  # expect TEXT OUTPUT
  grep -qF -- "$1" <<<"$2" || { echo "$2"; fail "expected '$1'"; }
}
out=$(dry --short) || fail "--short --dry-run exited non-zero"
expect "mode short, player train, steps 10, seq 64, batch 8, link 1000 Mbit/s, nice -10, device cpu (CPU_HOST), judged 1" "$out"
expect "models [gpt2-nano] plans [dp=2 tp=2] one-way delays [0 25] (ms)" "$out"
expect "slices/emulated-2site.yaml" "$out"
out=$(dry --full-size) || fail "--full-size --dry-run exited non-zero"
expect "mode full-size, player replay, steps 2, seq 1024, batch 8, link 1000 Mbit/s, nice 0, device cpu (GPU_RTX6000), judged 0" "$out"
expect "one-way delays [5 25 51.5] (ms)" "$out"
expect "slices/emulated-2site-4gpu.yaml" "$out"
out=$(dry --short --full-size) || fail "--short --full-size --dry-run exited non-zero"
expect "mode full-size-short, player replay" "$out"
out=$(dry --short --delays 25 --player replay --plans "dp=2")
expect "player replay" "$out"
expect "plans [dp=2] one-way delays [25] (ms)" "$out"
out=$(bash "$src/scripts/measure-overlap.sh" --bin "$bin" --dry-run 2>&1) || fail "measure-overlap.sh --dry-run"
expect "mode overlap, player train" "$out"
expect "dp=2,zero=2,bucket_mib=1,overlap=on] one-way delays [0 25 50] (ms)" "$out"
# The accuracy bench: by default the two judged modes, each resolved; a mode not in the matrix
# fails the bench, naming it.
out=$(bash "$src/bench/emulated-accuracy.sh" --bin "$bin" --dry-run 2>&1) || { echo "$out"; fail "emulated-accuracy.sh --dry-run"; }
expect "=== short" "$out"
expect "mode short, player train" "$out"
expect "=== full-size-short" "$out"
expect "mode full-size-short, player replay" "$out"
out=$(bash "$src/bench/emulated-accuracy.sh" --bin "$bin" --dry-run nope 2>&1) && fail "the bench accepted mode 'nope'"
expect "no mode 'nope'" "$out"
# The bench's summary, from stand-in runs of the script (a copy of the bench beside a fake
# scripts/validate-emulated.sh): a measured mode's ratio lines under its name, a skipped one's
# reason, a failed one named and the bench's exit 1.
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake/bench" "$fake/scripts"
cp "$src/bench/emulated-accuracy.sh" "$fake/bench/"
cat >"$fake/scripts/validate-emulated.sh" <<'FAKE'
case "$*" in
  *"--mode measured"*) echo "table"; echo "ratio (target error 25% / measured 5.0%): 5.00"; exit 0 ;;
  *"--mode missed"*) echo "ratio (target error 25% / measured 50.0%): 0.50"; echo "FAIL: limit"; exit 1 ;;
  *"--mode skipped"*) echo "SKIP: 'ip netns add' is not permitted here"; exit 77 ;;
  *) echo "broken"; exit 3 ;;
esac
FAKE
out=$(bash "$fake/bench/emulated-accuracy.sh" measured missed skipped broken 2>&1)
rc=$?
[ "$rc" -eq 1 ] || { echo "$out"; fail "the bench exited $rc with a failed mode, not 1"; }
expect "measured         ratio (target error 25% / measured 5.0%): 5.00" "$out"
expect "missed           ratio (target error 25% / measured 50.0%): 0.50" "$out"
expect "skipped          SKIPPED: 'ip netns add' is not permitted here" "$out"
expect "broken           FAILED (exit 3)" "$out"
out=$(bash "$fake/bench/emulated-accuracy.sh" measured skipped 2>&1) || { echo "$out"; fail "measured and skipped modes exited non-zero"; }
refused() {  # refused EXPECTED-TEXT ARGS...: exits non-zero naming the problem
  local text=$1 rc
  shift
  out=$(dry "$@")
  rc=$?
  [ "$rc" -ne 0 ] || { echo "$out"; fail "$* was accepted"; }
  expect "$text" "$out"
}
refused "--player must be train or replay, not 'sideways'" --player sideways
refused "unknown option '--colour'" --colour red
refused "--delays needs a value" --delays
refused "no mode 'nope'" --mode nope
refused "--mode replaces --short and --full-size" --mode short --short
echo "ok"
