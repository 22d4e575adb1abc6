#!/usr/bin/env bash
# fabtrain check-published given a file with bad rows: it must check the good row, name each bad
# row by index, id and field on stderr, print the median over the rows it checked, and exit
# non-zero at the end (never a crash or a hang).
# Usage: check_published_cli.sh FABTRAIN_BINARY
set -uo pipefail
fabtrain="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

row() {  # row ID HARDWARE PLAN [MEASURED]
  cat <<ROW
  - id: $1
    source: "a test"
    url: https://example.org
    model: gpt2-nano
    seq: 64
    global_batch: 8
    plan: "$3"
    framework: test
    hardware: $2
    communicator: nccl-socket
    measured: ${4:-"{step_time_s: 0.1, as_published: \"100 ms\"}"}
ROW
}
a100='{gpu: GPU_A100_80GB, nodes: 1, gpus_per_node: 1, intra_node: nvlink}'
{
  echo "runs:"
  row good "$a100" "dp=1"
  row unknown-gpu '{gpu: GPU_NOPE, nodes: 1, gpus_per_node: 1, intra_node: pcie}' "dp=1"
  row too-few-gpus "$a100" "dp=4"
  row no-measurement "$a100" "dp=1" '{as_published: "nothing"}'
} > "$tmp/runs.yaml"

timeout 60 "$fabtrain" check-published --file "$tmp/runs.yaml" > "$tmp/out" 2> "$tmp/err"
rc=$?
failures=0
fail() { echo "FAIL: $1"; failures=$((failures + 1)); }
[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] || fail "exit status $rc (wanted non-zero, no timeout or signal)"
grep -q "^good " "$tmp/out" || fail "the good row is not in the table"
grep -q "median absolute error .* over 1 published run$" "$tmp/out" || fail "no median over the 1 good row"
grep -q "row 1 (unknown-gpu): .*runs\[1\].hardware.gpu: unknown GPU type 'GPU_NOPE'" "$tmp/err" ||
  fail "the unknown GPU is not named by row and field"
grep -q "row 2 (too-few-gpus): .*runs\[2\].plan: .*needs 4 GPUs, the hardware has 1" "$tmp/err" ||
  fail "the plan that does not fit is not named by row and field"
grep -q "row 3 (no-measurement): .*runs\[3\].measured" "$tmp/err" || fail "the missing measurement is not named"
grep -q "3 of 4 rows .* were not checked" "$tmp/err" || fail "no closing count of bad rows"
if [ "$failures" -ne 0 ]; then
  echo "--- stdout"; cat "$tmp/out"; echo "--- stderr"; cat "$tmp/err"
  exit 1
fi
echo "check-published: bad rows named, the good one checked, exit $rc"
