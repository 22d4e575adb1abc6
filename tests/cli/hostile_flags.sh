#!/usr/bin/env bash
# Every numeric option of every subcommand of both programs, found in their --help, given each
# hostile value of the table below: the program must exit 1 with a message naming the flag,
# never end on a signal, hang (60 s) or exit 0 having used the value. Where a value is valid for
# a flag (the `valid` table: 0 threads means every core), exit 0 is accepted, or exit 1 for a
# reason of the base arguments (a missing checkpoint), never a signal.
# Usage: hostile_flags.sh BUILD_BIN_DIR
set -uo pipefail
bin="$(cd "$1" && pwd)"
src="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
failures=0

long="$(printf '9%.0s' $(seq 5000))"
hostile=(0 -1 nan inf 9223372036854775808 18446744073709551615 "" "$long")

# The values that are valid for a flag ("0" or "0 -1"); every other hostile value is refused.
declare -A valid=(
  [--rank]=0 [--wan-latency-ms]=0 [--path-rtt-ms]=0 [--bench-path-rtt-ms]=0
  [--run-path-rtt-ms]=0 [--small-collective-bytes]=0 [--tolerance]=0 [--warmup]=0
  [--lr-min-fraction]=0 [--weight-decay]=0 [--grad-clip]=0 [--seed]=0 [--checkpoint-every]=0
  [--keep-checkpoints]=0 [--stop-after]=0 [--val-every]=0 [--timeout-s]=0 [--threads]=0
  [--tcp-streams]=0 [--val-fraction]=0 [--temperature]=0 [--top-k]=0
  [--flat-max]=0 [--nlist]=0 [--nprobe]=0 [--memory-headroom]=0 [--max-gpus]=0 [--max-sites]=0
  [--gpus-per-vm]=0
)

# Base arguments that make each subcommand with numeric options run, quickly, on tiny inputs.
nano_slice="--model gpt2-nano --slice emulated-2site"
data="$src/data/tiny_prose_train.txt"
declare -A base=(
  ["fabtrain schedule"]="--model gpt2-nano --plan dp=2"
  ["fabtrain simulate"]="$nano_slice --plan dp=2"
  ["fabtrain plan"]="$nano_slice --break-even off"
  ["fabtrain recommend"]="$nano_slice"
  ["fabtrain study"]="--clusters emulated-2site --models gpt2-nano --html $tmp/study.html"
  ["fabtrain advise"]="--availability $src/tests/selector/availability/plain.yaml --model gpt2-nano -o $tmp/advise"
  ["fabtrain calibrate"]="--bench $src/tests/fuzz/seeds/bench/bench.json -o $tmp/cal.yaml"
  ["fabtrain-exec train"]="--model gpt2-nano --plan dp=1 --data $data --steps 1 --batch 2 --seq 16"
  ["fabtrain-exec bench"]="--model gpt2-nano --budget-s 0.01 --memory-mib 1 --p2p-mib 1 --collective-mib 1"
  ["fabtrain-exec probe"]="--slice emulated-2site"
  ["fabtrain-exec preflight"]="--data $data"
  ["fabtrain-exec replay"]="--model gpt2-nano --plan dp=1 --steps 1 --batch 2 --seq 16"
  ["fabtrain-exec overlap-bench"]="--mib 1 --blocks 1 --block-ms 1 --repeats 1"
  ["fabtrain-exec tokenize"]="$data -o $tmp/tok"
  ["fabtrain-exec sample"]="--model gpt2-nano --checkpoint $tmp/absent.bin"
  ["fabtrain-exec embed"]="$data --model gpt2-nano --checkpoint $tmp/absent.bin -o $tmp/emb"
  ["fabtrain-exec search"]="fox --index $tmp/emb"
  ["fabtrain-exec evaluate-search"]="$src/data/tiny_prose_queries.jsonl --index $tmp/emb --documents $src/data/tiny_prose_docs.jsonl"
)

# The base arguments without the flag under test (an option given twice is an error of its own).
base_without() {
  local flag="$1"; shift
  local out=() skip=0 word
  for word in $1; do
    if [ "$skip" -eq 1 ]; then skip=0; continue; fi
    if [ "$word" = "$flag" ]; then skip=1; continue; fi
    out+=("$word")
  done
  printf '%s\n' "${out[@]}"
}

# numeric_flags PROGRAM SUBCOMMAND: the flags its --help lists with an INT, UINT or FLOAT value.
numeric_flags() {
  "$bin/$1" "$2" --help 2>/dev/null |
    sed -n 's/^ *\(-[a-z],\)\?\(-[-a-z]*\) \(INT\|UINT\|FLOAT\)\b.*/\2/p'
}

subcommands() {
  "$bin/$1" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][-a-z]*\) .*/\1/p'
}

checked=0
for program in fabtrain fabtrain-exec; do
  for sub in $(subcommands "$program"); do
    flags="$(numeric_flags "$program" "$sub")"
    [ -z "$flags" ] && continue
    if [ -z "${base["$program $sub"]+set}" ]; then
      echo "FAIL: $program $sub has numeric options but no base arguments in this test's table"
      failures=$((failures + 1)); continue
    fi
    for flag in $flags; do
      mapfile -t args < <(base_without "$flag" "${base["$program $sub"]}")
      for value in "${hostile[@]}"; do
        checked=$((checked + 1))
        err="$(cd "$tmp" && timeout 60 "$bin/$program" "$sub" "${args[@]}" "$flag" "$value" 2>&1 >/dev/null)"
        rc=$?
        shown="${value:0:24}"
        if [ "$rc" -ge 124 ] || [ "$rc" -gt 1 ]; then
          echo "FAIL (exit $rc, a signal, a hang or CLI11's own code): $program $sub $flag '$shown'"
          echo "  ${err:0:300}"; failures=$((failures + 1))
        elif [[ " ${valid[$flag]:-} " == *" $value "* ]]; then
          :  # a valid value: exit 0, or 1 for a reason of the base arguments
        elif [ "$rc" -eq 0 ]; then
          echo "FAIL (exit 0, the value was used): $program $sub $flag '$shown'"
          failures=$((failures + 1))
        elif [[ "$err" != *"$flag"* ]] || [ "${#err}" -gt 2000 ]; then
          echo "FAIL (the message does not name $flag): $program $sub $flag '$shown'"
          echo "  ${err:0:300}"; failures=$((failures + 1))
        fi
      done
    done
  done
done

[ "$checked" -gt 100 ] || { echo "FAIL: only $checked cases found in the programs' help"; exit 1; }
[ "$failures" -eq 0 ] && echo "all $checked hostile values refused by flag" ||
  { echo "$failures of $checked case(s) failed"; exit 1; }
