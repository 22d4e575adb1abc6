#!/usr/bin/env bash
# The command-line conventions, as a user meets them: --json FILE|- in every
# subcommand that writes JSON (standard output holds the JSON alone under "-"), unknown
# subcommands named with the list, comma- and space-separated lists, the program's name in usage
# lines, the search's words explained, strict Hugging Face configs, and refusals that print no
# partial table first.
# Usage: conventions.sh BUILD_BIN_DIR
set -uo pipefail
bin="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
configs="$src/tests/models/configs"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# json_only NAME command...: exit 0 and standard output one JSON document, nothing else.
json_only() {
  local name="$1"; shift
  if ! timeout 120 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; then
    fail "$name exited non-zero: $(head -c 300 "$tmp/$name.err")"; return
  fi
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/$name.out" 2>/dev/null ||
    fail "$name: standard output is not JSON alone: $(head -c 200 "$tmp/$name.out")"
}
# refused WANT command...: a non-zero exit, WANT on standard error, and on standard output nothing
# but the resolved configuration ("fabtrain plan: model=..." and its indented batch= and to train:
# lines, wrapped to the terminal's width: their continuation lines indented by four): no partial
# table.
refused() {
  local want="$1"; shift
  local out err rc
  out="$(timeout 60 "$@" 2>"$tmp/err")"; rc=$?; err="$(cat "$tmp/err")"
  out="$(printf '%s\n' "$out" | grep -v '^fabtrain [a-z-]*\( --rule study\)\?: ' |
    grep -v '^  \(batch=\|to train: \)' | grep -v '^    [^ ]' | grep -v '^$')"
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ] || [[ "$err" != *"$want"* ]]; then
    fail "(exit $rc) $*"; echo "  wanted: $want"; echo "  got:    ${err:0:400}"
  elif [ -n "$out" ]; then
    fail "$* printed before failing: ${out:0:200}"
  fi
}

nano="--model gpt2-nano --slice emulated-2site"
json_only models "$bin/fabtrain" models --json -
json_only slices "$bin/fabtrain" slices --json -
json_only show "$bin/fabtrain" slice show utah-amst --json -
json_only schedule "$bin/fabtrain" schedule --model gpt2-nano --plan dp=2 --json -
json_only simulate "$bin/fabtrain" simulate $nano --plan dp=2 --json -
json_only plan "$bin/fabtrain" plan $nano --top 3 --json -
json_only rule "$bin/fabtrain" plan $nano --rule study --json -
json_only recommend "$bin/fabtrain" recommend $nano --json -
json_only study "$bin/fabtrain" study --clusters emulated-2site --models gpt2-nano --html "$tmp/r.html" --json -
json_only published "$bin/fabtrain" check-published --json -
# --json FILE: the file gets the JSON, the terminal keeps its table.
"$bin/fabtrain" models --json "$tmp/models.json" >"$tmp/models.txt" || fail "models --json FILE"
python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))) >= 5' "$tmp/models.json" || fail "models.json"
grep -q "parameters" "$tmp/models.txt" || fail "models --json FILE dropped the table"

# Unknown subcommands are named, with the list.
refused "unknown subcommand 'foo'; fabtrain's subcommands are: models, " "$bin/fabtrain" foo
refused "unknown subcommand 'trian'; fabtrain-exec's subcommands are:" "$bin/fabtrain-exec" trian
# Usage lines carry the program's name, not the path it was started from.
"$bin/fabtrain" plan --help | grep -q "^Usage: fabtrain plan " || fail "plan --help usage line: $("$bin/fabtrain" plan --help | head -1)"
# Lists: comma- or space-separated.
for clusters in "emulated-2site,utah-amst" "emulated-2site utah-amst"; do
  # shellcheck disable=SC2086
  "$bin/fabtrain" study --clusters $clusters --models gpt2-nano --html "$tmp/s.html" >"$tmp/s.txt" 2>&1 ||
    fail "study --clusters $clusters: $(tail -2 "$tmp/s.txt")"
  [ "$(grep -c "^utah-amst *gpt2-nano" "$tmp/s.txt")" -eq 4 ] || fail "study --clusters $clusters: not both clusters"
done
test -s "$tmp/s-utah-amst.svg" && test -s "$tmp/s-emulated-2site.svg" || fail "study wrote no SVG per cluster"
# The search's words are explained, not jargon.
"$bin/fabtrain" plan $nano --top 3 >"$tmp/plan.txt" 2>&1
grep -q "twins\|bounded plans" "$tmp/plan.txt" && fail "plan prints jargon: $(sed -n 2p "$tmp/plan.txt")"
grep -q "whose lower bound cannot reach the top" "$tmp/plan.txt" || fail "plan does not explain what it pruned"

# Hugging Face configs: other architectures and unknown keys refused; n_inner and untied read.
refused "model_type is \"llama\"; fabtrain supports GPT-2 configs only" \
  "$bin/fabtrain" simulate --model "$configs/llama.json" --slice emulated-2site --plan dp=1
refused "key 'rotary_dim' is not a GPT-2 setting" "$bin/fabtrain" plan --model "$configs/unknown-key.json" --slice emulated-2site
json_only untied "$bin/fabtrain" simulate --model "$configs/untied.json" --slice emulated-2site --plan pp=2 --json -
json_only stock "$bin/fabtrain" simulate --model "$configs/stock.json" --slice emulated-2site --plan pp=2 --json -
python3 - "$tmp/untied.out" "$tmp/stock.out" <<'PY' || fail "untied embeddings left the prediction as it was"
import json, sys
untied, stock = (json.load(open(p)) for p in sys.argv[1:])
assert json.dumps(untied) != json.dumps(stock)
PY
refused "fabtrain-exec train runs stock GPT-2 only" "$bin/fabtrain-exec" train --model "$configs/relu.json" \
  --plan dp=1 --data "$src/data/tiny_prose_train.txt" --steps 1
refused "activation_function=relu (stock: gelu_new)" "$bin/fabtrain-exec" train --model "$configs/relu.json" \
  --plan dp=1 --data "$src/data/tiny_prose_train.txt" --steps 1
# Refusals name the flag and print nothing before failing.
refused "--top=0 must be at least 1" "$bin/fabtrain" plan $nano --top 0
refused "unknown slice 'nowhere'" "$bin/fabtrain" study --clusters emulated-2site,nowhere --models gpt2-nano --html "$tmp/x.html"
# gpt2-xl needs 12.5 GB of model states per rank even under ZeRO-3 over the two 8 GiB hosts.
refused "no plan of gpt2-xl fits on emulated-2site" "$bin/fabtrain" plan --model gpt2-xl --slice emulated-2site

[ "$failures" -eq 0 ] && echo "all conventions hold" || { echo "$failures check(s) failed"; exit 1; }
