#!/usr/bin/env bash
# Both programs' help fits $COLUMNS (100 when unset; 80 asked), every subcommand's too; counts
# agree with their nouns in what fabtrain-exec prints ("1 rank", "1 step", "1 input pattern"),
# and no message of either program writes a noun as "noun(s)".
# Usage: exec_wording.sh BIN_DIR (FABTRAIN_SOURCE_DIR: the sources)
set -euo pipefail
bin=$1
src=${FABTRAIN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
check_width() {  # file, width
  local over
  over=$(awk -v w="$2" 'length($0) > w' "$1")
  [ -z "$over" ] || fail "$(basename "$1"): lines wider than $2:"$'\n'"$over"
}
subcommands() {  # program [subcommand]: the subcommands its help lists
  "$bin/$1" ${2:+"$2"} --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][-a-z]*\) .*/\1/p'
}

helps=0
for program in fabtrain fabtrain-exec; do
  commands=("")
  for sub in $(subcommands "$program"); do
    commands+=("$sub")
    for nested in $(subcommands "$program" "$sub"); do commands+=("$sub $nested"); done
  done
  for command in "${commands[@]}"; do
    name="$program${command:+-${command// /-}}"
    for cols in "" 80; do
      # shellcheck disable=SC2086  # the nested subcommand is two words
      COLUMNS=$cols "$bin/$program" $command --help >"$work/$name$cols.txt"
      check_width "$work/$name$cols.txt" "${cols:-100}"
    done
    helps=$((helps + 1))
  done
done
[ "$helps" -ge 20 ] || fail "only $helps help texts found"
# A description too long for one line goes on under its own column, not at the line's start.
grep -A1 "^  preflight " "$work/fabtrain-exec.txt" | tail -1 | grep -qE "^ {30}[a-z]" ||
  { cat "$work/fabtrain-exec.txt"; fail "preflight's description does not go on under itself"; }

# The executor's banner: one sequence, one step, one rank; the plan line within 100 columns.
"$bin/fabtrain-exec" train --model gpt2-nano --plan dp=1 --data "$src/data/tiny_prose_train.txt" \
  --steps 1 --batch 1 --seq 32 >"$work/train.txt" 2>&1 || { cat "$work/train.txt"; fail "train"; }
check_width "$work/train.txt" 100
grep -q "^  batch    1 sequence x 32 tokens = 32 tokens per step, 1 step$" "$work/train.txt" ||
  { cat "$work/train.txt"; fail "train's batch line is not in the singular"; }
tr -s ' \n' '  ' <"$work/train.txt" | grep -q "(single GPU), 1 rank, microbatch 1 x 32 tokens" ||
  { cat "$work/train.txt"; fail "train's plan line"; }

# probe on a one-VM slice with one sample and one stream.
cat >"$work/one.yaml" <<'YAML'
name: one
vms:
  - {name: u, site: UTAH, gpu: GPU_RTX6000, gpus: 1, nic: NIC_Basic}
YAML
"$bin/fabtrain-exec" probe --slice "$work/one.yaml" --samples 1 --streams 1 >"$work/probe.txt" 2>&1 ||
  { cat "$work/probe.txt"; fail "probe on one VM"; }
grep -q "^probe: slice one (1 VM), 1 round trip and TCP .* MiB over 1 stream and 1 stream per pair" \
  "$work/probe.txt" || { cat "$work/probe.txt"; fail "probe's counts are not in the singular"; }

# tokenize: one pattern, and one for validation (needs GPT-2's vocabulary).
if "$bin/fabtrain-exec" tokenize "$src/data/tiny_prose_train.txt" --val "$src/data/tiny_prose_val.txt" \
  -o "$work/tokens" >"$work/tokenize.txt" 2>&1; then
  check_width "$work/tokenize.txt" 100
  grep -q "^tokenize: 1 input pattern -> " "$work/tokenize.txt" &&
    grep -q "validation from 1 pattern, " "$work/tokenize.txt" &&
    grep -q "^  2 documents (1 validation), .*; tokens: [0-9]* train, [0-9]* validation$" \
      "$work/tokenize.txt" || { cat "$work/tokenize.txt"; fail "tokenize's counts"; }
else
  grep -q "vocabulary" "$work/tokenize.txt" || { cat "$work/tokenize.txt"; fail "tokenize"; }
  echo "SKIPPED: tokenize's wording (no GPT-2 vocabulary)"
fi

# No message of either program says "noun(s)": counts go through counted() (common/human_units).
if grep -rnE '"[^"]*[a-z]\((s|es)\)[^"]*"' --include=*.cpp --include=*.hpp \
  "$src/apps" "$src/exec" "$src/calibrate" "$src/platforms" "$src/selector" "$src/sim" \
  "$src/plan" "$src/text" "$src/embed" "$src/common" "$src/models" >"$work/plural.txt"; then
  cat "$work/plural.txt"
  fail "a message writes a noun with (s)"
fi
echo "exec wording: ok ($helps help texts)"
