#!/usr/bin/env bash
# scripts/validate-emulated.sh end to end on one tiny case, without namespaces or root: its
# real-sites mode with this machine as both sites (two ranks under a local mpirun, a 0.1 ms
# path), the short mode narrowed to dp=2 replayed. It benches, runs, calibrates, predicts and
# tabulates: the case's row, the mean error and the ratio line to the mode's limit are printed,
# and it exits 0 (within the limit) or 1 (missed it, said by name), never otherwise.
# Usage: validate_one_case.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
fail() { echo "FAIL: $*"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bash "$src/scripts/validate-emulated.sh" --short --plans "dp=2" --player replay --bin "$bin" \
  --launch "mpirun --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS" \
  --slice "$src/platforms/data/slices/emulated-2site.yaml" --path-rtt-ms 0.1 >"$log" 2>&1
rc=$?
cat "$log"
work=$(sed -n 's/^validate-emulated: .*, work \([^,]*\), programs .*/\1/p' "$log")
[ -n "$work" ] && [ -d "$work" ] && rm -rf "$work"
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "validate-emulated.sh exited $rc"
[ "$rc" -eq 0 ] || grep -q "FAIL: validation mode short needs error <= 25%" "$log" || fail "exit 1 without the limit named"
grep -qE "^gpt2-nano +site dp=2 +[0-9.]+s +[0-9.]+s +[-+][0-9.]+%" "$log" || fail "no row for dp=2"
grep -qE "^mean absolute percentage error [0-9.]+% over 1 cases" "$log" || fail "no mean error"
grep -qE "^ratio \(target error 25% / measured [0-9.]+%\): ([0-9.]+|inf)$" "$log" || fail "no ratio line"
echo "ok"
