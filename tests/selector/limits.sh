#!/usr/bin/env bash
# The slice limits of common/limits.hpp, met and enforced.
# Each command runs under a 4 GiB memory cap (ulimit -v, each process) and a time limit.
# - simulate and schedule: on a generated slice of 1024 GPUs (8 FABRIC sites on FABNetv4, 16 VMs
#   of 8 GPUs each) a 1024-rank plan simulates, and its schedule is listed, within 60 s each; one
#   GPU more is refused at load.
# - the searches, at their limit of 128 GPUs: plan and recommend on 8 sites of 16 GPUs on
#   FABNetv4 and plan on one site of 8 VMs of 8 GPUs, each within 120 s; advise on an
#   availability file of 128 free GPUs at 8 sites within 240 s (it runs three searches: one with
#   the whole budget, two with a quarter each); one GPU more is refused by plan, recommend and
#   advise (advise names the availability file), and study refuses such a cluster (its searches
#   are plan's, one per technique). On 8 sites of 4 GPUs plan's search spends its
#   budget, and still says why its winner wins against each technique's best it found.
# Each refusal names the limit.
set -euo pipefail
fabtrain=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

slice() {  # slice VMS GPUS-PER-VM GPUS-OF-THE-LAST-VM [SITES]: VMs spread evenly over the sites
  local sites=(UTAH MASS TACC WASH STAR MICH NCSA DALL) names="" per_site=$(($1 / ${4:-8}))
  echo "name: big"
  echo "vms:"
  for v in $(seq 0 $(($1 - 1))); do
    local gpus=$2
    [ "$v" = $(($1 - 1)) ] && gpus=$3
    echo "  - {name: vm$v, site: ${sites[$((v / per_site))]}, gpu: GPU_A100_80GB, gpus: $gpus, nic: NIC_ConnectX_6}"
    names+="${names:+, }vm$v"
  done
  echo "networks:"
  echo "  - {name: fab, kind: fabnetv4, vms: [$names]}"
}

# refused WORDS COMMAND...: exit 1 with WORDS in the message.
refused() {
  local want=$1 rc=0
  shift
  "$@" >"$work/refused.txt" 2>&1 || rc=$?
  [ "$rc" = 1 ] || { tail -3 "$work/refused.txt"; fail "exit $rc, not 1: $*"; }
  grep -q "$want" "$work/refused.txt" || { cat "$work/refused.txt"; fail "the refusal lacks '$want': $*"; }
}

within() {  # within NAME SECONDS COMMAND...: finishes in time, each process under 4 GiB
  local name=$1 seconds=$2 rc=0 start=$SECONDS
  shift 2
  (ulimit -v $((4 << 20)) && timeout "$seconds" "$@") >"$work/$name.txt" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { tail -5 "$work/$name.txt"; fail "$name: exit $rc (124: over $seconds s) after $((SECONDS - start)) s"; }
  echo "ok: $name in $((SECONDS - start)) s"
}

# --- simulate at 1024 GPUs
slice 128 8 8 >"$work/at-limit.yaml"
slice 128 8 9 >"$work/past-limit.yaml"
within simulate 60 "$fabtrain" simulate --model gpt2-medium --slice "$work/at-limit.yaml" \
  --plan dp=16,tp=8,pp=8,mb=8
grep -q "memory: fits" "$work/simulate.txt" || fail "simulate on 1024 GPUs printed no verdict"
within schedule 60 "$fabtrain" schedule --model gpt2-medium --slice "$work/at-limit.yaml" \
  --plan dp=16,tp=8,pp=8,mb=8
grep -q "^rank 1023: " "$work/schedule.txt" || fail "schedule on 1024 GPUs listed no rank 1023"
refused "fabtrain handles at most 1024" "$fabtrain" schedule --model gpt2-medium \
  --slice "$work/past-limit.yaml" --plan dp=16,tp=8,pp=8,mb=8
refused "fabtrain handles at most 1024" "$fabtrain" simulate --model gpt2-medium \
  --slice "$work/past-limit.yaml" --plan dp=16,tp=8,pp=8,mb=8
echo "ok: 1024 GPUs simulated and scheduled within 60 s and 4 GiB, 1025 refused by the limit"

# --- the searches at 128 GPUs
slice 16 8 8 >"$work/search-at.yaml"
slice 16 8 9 >"$work/search-past.yaml"
slice 8 8 8 1 | sed 's/fabnetv4/l2bridge/' >"$work/one-site.yaml"
avail() {  # avail GPUS-AT-THE-LAST-SITE: free A40s at 8 sites, a plain availability file
  for s in UTAH MASS TACC WASH STAR MICH NCSA; do echo "$s: {GPU_A40: 16}"; done
  echo "DALL: {GPU_A40: $1}"
}
avail 16 >"$work/avail-at.yaml"
avail 17 >"$work/avail-past.yaml"

within plan 120 "$fabtrain" plan --model gpt2-medium --slice "$work/one-site.yaml"
# 8 sites of 4 GPUs: the search spends its budget, and the why lines still name every technique.
slice 8 4 4 >"$work/eight-sites.yaml"
within plan-8-sites 120 "$fabtrain" plan --model gpt2-medium --slice "$work/eight-sites.yaml"
[ "$(grep -cE '^  (best )?(data parallel|ZeRO|shard|pipeshard)' "$work/plan-8-sites.txt")" = 3 ] ||
  fail "plan on 8 sites did not say why its winner wins against the three other techniques"
within plan-at-limit 120 "$fabtrain" plan --model gpt2-medium --slice "$work/search-at.yaml"
within recommend 120 "$fabtrain" recommend --model gpt2-medium --slice "$work/search-at.yaml"

for cmd in plan recommend; do
  refused "the GPU count to search is 129; fabtrain handles at most 128" \
    "$fabtrain" "$cmd" --model gpt2-medium --slice "$work/search-past.yaml"
done
refused "search-past.yaml: the GPU count to search is 129; fabtrain handles at most 128" \
  "$fabtrain" study --clusters "$work/search-past.yaml" --models gpt2-medium --html "$work/study.html"
within advise 240 "$fabtrain" advise --model gpt2-medium --availability "$work/avail-at.yaml" \
  --gpus-per-vm 8 -o "$work/advice"
grep -q "every free GPU: 128 GPUs" "$work/advise.txt" || fail "advise did not search all 128 GPUs"
[ -s "$work/advice/slice.yaml" ] || fail "advise at 128 GPUs wrote no slice"
refused "avail-past.yaml: 129 GPUs are free at the sites used; a search handles at most 128" \
  "$fabtrain" advise --model gpt2-medium --availability "$work/avail-past.yaml" --gpus-per-vm 8 \
  -o "$work/advice2"
echo "ok: plan, recommend (120 s) and advise (240 s) at 128 GPUs within 4 GiB; 129 refused by the limit"
