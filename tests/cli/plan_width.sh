#!/usr/bin/env bash
# fabtrain plan's text fits the terminal: every line but the launch line within $COLUMNS (100 when
# unset; 80 asked), for the default search, the study's rule, and a three-site slice, whose long
# plan cells wrap onto the row's next lines, never cut with "~"; GPUs that
# every row shares are said once above the table, else each row has its own; the default training amount is explained under
# the table and not when --tokens gives one; precision auto is accepted and a precision the GPUs
# lack is refused naming them; recommend, advise, simulate and fabtrain-exec's --vocab help fit too.
# Usage: plan_width.sh BIN_DIR
set -euo pipefail
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat > "$work/three.yaml" <<'YAML'
name: three
vms:
  - {name: u, site: UTAH, gpu: GPU_RTX6000, gpus: 2, nic: NIC_Basic}
  - {name: a, site: AMST, gpu: GPU_RTX6000, gpus: 2, nic: NIC_Basic}
  - {name: g, site: GPN, gpu: GPU_TeslaT4, gpus: 2, nic: NIC_Basic}
networks:
  - {name: fab, kind: fabnetv4, vms: [u, a, g]}
YAML
check_width() {  # file, width
  local over
  over=$(grep -vE "^(recommended: |the plan's line would be: )" "$1" | awk -v w="$2" 'length($0) > w' || true)
  [ -z "$over" ] || { cat "$1"; fail "$(basename "$1"): lines wider than $2:"$'\n'"$over"; }
}
run() {  # name, columns, args...
  local name=$1 cols=$2; shift 2
  COLUMNS=$cols "$bin/fabtrain" plan --workers 2 "$@" >"$work/$name.txt" 2>&1 ||
    { cat "$work/$name.txt"; fail "$name: fabtrain plan failed"; }
  check_width "$work/$name.txt" "${cols:-100}"
}
run default "" --model gpt2-medium --slice utah-amst
run narrow 80 --model gpt2-medium --slice utah-amst
run study "" --model gpt2-medium --slice utah-amst --rule study
run study-narrow 80 --model gpt2-medium --slice utah-amst --rule study
run three "" --model gpt2-nano --slice "$work/three.yaml" --break-even off
run three-narrow 80 --model gpt2-nano --slice "$work/three.yaml" --break-even off
for f in three three-narrow; do
  ! grep -q '~' "$work/$f.txt" || { cat "$work/$f.txt"; fail "$f: a cell was cut with ~"; }
done
grep -q "^to train: the time for .* tokens, the study's amount" "$work/default.txt" ||
  fail "the default training amount is not explained"
run tokens "" --model gpt2-nano --slice utah-amst --tokens 1e9 --break-even off
! grep -q "^to train: the time for" "$work/tokens.txt" || fail "explained though --tokens was given"
grep -q "^GPUs of every row: " "$work/default.txt" || fail "rows sharing GPUs do not say them once"
! grep -q "^ #  plan .* GPUs " "$work/default.txt" || fail "a GPUs column though every row shares them"
grep -q "^ #  plan .* GPUs " "$work/three.txt" || fail "rows on other GPUs lost their GPUs column"
run auto "" --model gpt2-nano --slice utah-amst --precision auto --break-even off
if "$bin/fabtrain" plan --model gpt2-nano --slice utah-amst --precision tf32 >"$work/tf32.txt" 2>&1; then
  fail "tf32 on RTX 6000s was accepted"
fi
grep -q "GPU_RTX6000 has no tf32 peak.*--precision auto" "$work/tf32.txt" || { cat "$work/tf32.txt"; fail "tf32 refusal"; }
"$bin/fabtrain" plan --help | grep -q "auto" || fail "plan --help does not list precision auto"

# recommend, advise and simulate fit the same width, their labelled lines wrapped under the value;
# recommend and advise say the amount they assume in one line, and not when --tokens gives one.
other() {  # name, columns, command and args...
  local name=$1 cols=$2; shift 2
  COLUMNS=$cols "$bin/fabtrain" "$@" >"$work/$name.txt" 2>&1 ||
    { cat "$work/$name.txt"; fail "$name: fabtrain $1 failed"; }
  check_width "$work/$name.txt" "${cols:-100}"
}
availability=$(cd "$(dirname "$0")/../selector/availability" && pwd)/five-sites.json
other recommend "" recommend --model gpt2-nano --slice utah-amst
other recommend-narrow 80 recommend --model gpt2-nano --slice utah-amst
other recommend-three "" recommend --model gpt2-nano --slice "$work/three.yaml"
other recommend-three-narrow 80 recommend --model gpt2-nano --slice "$work/three.yaml"
grep -q "^   3  1xRTX6000@UTAH+  *dp=3,tp=1,pp=1,mb=1 " "$work/recommend-three-narrow.txt" ||
  { cat "$work/recommend-three-narrow.txt"; fail "recommend: the GPUs do not wrap after a plus sign"; }
grep -q "^left out to fit 80 columns: tokens/s, mem GiB free (--wide shows them)" \
  "$work/recommend-narrow.txt" || { cat "$work/recommend-narrow.txt"; fail "recommend: dropped columns unsaid"; }
other advise "" advise --availability "$availability" --model gpt2 -o "$work/advised"
other simulate "" simulate --model gpt2-nano --slice utah-amst --plan dp=2
other simulate-narrow 80 simulate --model gpt2-nano --slice utah-amst --plan dp=2,pp=2 --tokens 1e9
for f in recommend advise; do
  grep -qE "^  time to train: for .* tokens, the study's; give yours with --tokens N" "$work/$f.txt" ||
    { cat "$work/$f.txt"; fail "$f does not say the amount it assumes"; }
done
other recommend-tokens "" recommend --model gpt2-nano --slice utah-amst --tokens 1e9
! grep -q "time to train: for" "$work/recommend-tokens.txt" || fail "recommend: said though --tokens"
grep -q "^fabtrain advise: 4 usable sites in " "$work/advise.txt" || fail "advise: sites not counted"
! grep -q "(s)" "$work/advise.txt" || fail "advise: a noun with (s)"
grep -q "^batch        16 sequences" "$work/simulate.txt" || fail "simulate: the label lost its column"
"$bin/fabtrain-exec" tokenize --help | grep -- "--vocab" >"$work/vocab.txt"
check_width "$work/vocab.txt" 100

# Singular and plural: a one-GPU slice has one set of sites and one GPU subset.
cat > "$work/one.yaml" <<'YAML'
name: one
vms:
  - {name: u, site: UTAH, gpu: GPU_RTX6000, gpus: 1, nic: NIC_Basic}
YAML
run one "" --model gpt2-nano --slice "$work/one.yaml" --break-even off
grep -q " on 1 of 1 GPU subset (1 set of sites) in " "$work/one.txt" ||
  { cat "$work/one.txt"; fail "one GPU: the search summary is not in the singular"; }

fablib=$(cd "$(dirname "$0")/../platforms/fablib" && pwd)
"$bin/fabtrain" slice import "$fablib/fabnetv4.json" -o "$work/imported.yaml" >"$work/import.txt"
grep -q ": 3 VMs with GPUs, 1 network -> " "$work/import.txt" ||
  { cat "$work/import.txt"; fail "slice import: its counts are not singular and plural"; }

# On a terminal, recommend's search shows a line on standard error while it runs.
script -qec "'$bin/fabtrain' recommend --model gpt2-nano --slice utah-amst >/dev/null" /dev/null \
  >"$work/tty.txt" 2>&1 || { cat "$work/tty.txt"; fail "recommend on a terminal failed"; }
grep -q "searching plans of gpt2-nano on utah-amst (4 GPUs, 2 sites)" "$work/tty.txt" ||
  { cat "$work/tty.txt"; fail "recommend shows no progress line on a terminal"; }
# plan shows the same line, and one while it computes the break-even round trips.
script -qec "'$bin/fabtrain' plan --model gpt2-nano --slice utah-amst >/dev/null" /dev/null \
  >"$work/tty-plan.txt" 2>&1 || { cat "$work/tty-plan.txt"; fail "plan on a terminal failed"; }
grep -q "searching plans of gpt2-nano on utah-amst (4 GPUs, 2 sites)" "$work/tty-plan.txt" &&
  grep -q "computing the break-even round trips of 1 site pair" "$work/tty-plan.txt" ||
  { cat "$work/tty-plan.txt"; fail "plan shows no progress line on a terminal"; }
echo "plan width: ok"
