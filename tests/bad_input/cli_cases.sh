#!/usr/bin/env bash
# Bad inputs given to the programs as a new user would: each must end with a
# non-zero exit status (1, or CLI11's own for an option it refuses) and a message naming the rule;
# never a crash (a signal), a hang (20 s) or exit 0.
# Usage: cli_cases.sh BUILD_BIN_DIR
set -uo pipefail
bin="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect "MESSAGE PART" command...: a non-zero exit within 20 s, no signal, the part on stderr.
expect() {
  local want="$1"; shift
  local err rc
  err="$(timeout 20 "$@" 2>&1 >/dev/null)"; rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ] || [[ "$err" != *"$want"* ]]; then
    echo "FAIL (exit $rc): $*"; echo "  wanted: $want"; echo "  got:    ${err:0:300}"
    failures=$((failures + 1))
  fi
}

slice() {  # slice NAME VMS-LINES NETWORK-LINE
  printf 'vms:\n%s\nnetworks:\n%s\n' "$2" "$3" > "$tmp/$1.yaml"
  echo "$tmp/$1.yaml"
}
two_vms='  - {name: a, site: UTAH, gpu: GPU_RTX6000, gpus: 2, nic: NIC_Basic}
  - {name: b, site: AMST, gpu: GPU_RTX6000, gpus: 2, nic: NIC_Basic}'
net() { echo "  - {name: n, kind: l2sts, vms: [a, b]$1}"; }
config() {  # config NAME JSON-BODY
  mkdir -p "$tmp/$1"; echo "$2" > "$tmp/$1/config.json"; echo "$tmp/$1/config.json"
}
nano_fields='"n_embd": 64, "n_head": 4, "n_positions": 128, "vocab_size": 256'

# 1. a tolerance under which no count qualifies
for t in -1 -0.01; do
  expect "must be at least 0 and below 1" "$bin/fabtrain" recommend --model gpt2-nano --slice utah-amst --tolerance "$t"
done
expect "is NaN" "$bin/fabtrain" recommend --model gpt2-nano --slice utah-amst --tolerance nan
expect "is infinite" "$bin/fabtrain" recommend --model gpt2-nano --slice utah-amst --tolerance -inf
# 2. a finite value that would overflow where it is used, and one that would wrap
expect "--temperature: 1e300 is out of range [0, 100]" "$bin/fabtrain-exec" sample --model gpt2-nano \
  --checkpoint "$tmp/absent.bin" --temperature 1e300
expect "--seed: -1 is negative" "$bin/fabtrain-exec" sample --model gpt2-nano \
  --checkpoint "$tmp/absent.bin" --seed -1

# 3. sizes without end
expect "fabtrain handles at most 1024" "$bin/fabtrain" slice show \
  "$(slice big "  - {name: a, site: UTAH, gpu: GPU_RTX6000, gpus: 5000, nic: NIC_Basic}" "")"
expect "n_layer is 1000000000; fabtrain handles at most 1024" "$bin/fabtrain" schedule \
  --model "$(config layers9 "{\"n_layer\": 1000000000, $nano_fields}")" --plan dp=1
expect "plan key 'dp' is 1000000; fabtrain handles at most 1024" "$bin/fabtrain" schedule --model gpt2-nano --plan dp=1000000
# 4. integers narrowed or wrapped
expect "n_layer: 4294967298 is out of range" "$bin/fabtrain" schedule \
  --model "$(config wrap "{\"n_layer\": 4294967298, $nano_fields}")" --plan dp=1
expect "n_embd is 2147483520; fabtrain handles at most 65536" "$bin/fabtrain" schedule \
  --model "$(config wide '{"n_layer": 2, "n_embd": 2147483520, "n_head": 4, "n_positions": 128, "vocab_size": 256}')" --plan dp=1
expect "plan key 'dp' is 2147483647" "$bin/fabtrain" schedule --model gpt2-nano --plan dp=2147483647
expect "plan key 'layers': an entry is 2147483647" "$bin/fabtrain" schedule --model gpt2-nano \
  --plan pp=2,layers=2147483647:-2147483645
expect "'010' has a leading zero" "$bin/fabtrain" slice show \
  "$(slice octal "  - {name: a, site: UTAH, gpu: GPU_RTX6000, gpus: 010, nic: NIC_Basic}" "")"
expect "GPU count (through vms[1]) is 2048" "$bin/fabtrain" slice show "$(slice sum \
  "  - {name: a, site: UTAH, gpu: GPU_RTX6000, gpus: 1024, nic: NIC_Basic}
  - {name: b, site: AMST, gpu: GPU_RTX6000, gpus: 1024, nic: NIC_Basic}" "$(net "")")"
expect "'0x10' is not an integer" "$bin/fabtrain" schedule --model gpt2-nano --plan dp=1 --batch 0x10
# 8. meaningless numbers
expect "'.nan' is NaN" "$bin/fabtrain" slice show "$(slice nan "$two_vms" "$(net ", rtt_ms: .nan")")"
expect "'.inf' is infinite" "$bin/fabtrain" slice show "$(slice inf "$two_vms" "$(net ", rtt_ms: .inf")")"
expect "fabtrain handles at most 10000 ms" "$bin/fabtrain" slice show "$(slice far "$two_vms" "$(net ", rtt_ms: 1e300")")"
expect "is NaN" "$bin/fabtrain" slice show "$(slice bw "$two_vms" "$(net ", bandwidth_gbit_s: .nan")")"
expect "is NaN" "$bin/fabtrain" slice show "$(slice win "$two_vms" "$(net ", tcp_window_mib: .NaN")")"
printf -- '---\n' >> "$(slice twodocs "$two_vms" "$(net "")")"; echo "vms: []" >> "$tmp/twodocs.yaml"
expect "holds 2 YAML documents" "$bin/fabtrain" slice show "$tmp/twodocs.yaml"
expect "duplicate key" "$bin/fabtrain" slice show "$(slice dup "$two_vms" "$(net ", rtt_ms: 5, rtt_ms: 500")")"
expect "key 'n_layer' appears twice" "$bin/fabtrain" schedule \
  --model "$(config dupjson "{\"n_layer\": 2, \"n_layer\": 4, $nano_fields}")" --plan dp=1
printf 'compute:\n  GPU_NOPE:\n    forward: {matmul_efficiency: 0.5}\n' > "$tmp/cal-gpu.yaml"
expect "unknown GPU type 'GPU_NOPE'" "$bin/fabtrain" simulate --model gpt2-nano --slice utah-amst --plan dp=2 --calibration "$tmp/cal-gpu.yaml"
printf 'links:\n  l2nope: {latency_s: 0.001}\n' > "$tmp/cal-link.yaml"
expect "unknown link class 'l2nope'" "$bin/fabtrain" simulate --model gpt2-nano --slice utah-amst --plan dp=2 --calibration "$tmp/cal-link.yaml"
expect "--wan-latency-ms: 1e300 is out of range [0, 10000]" "$bin/fabtrain" simulate --model gpt2-nano --slice utah-amst --plan dp=2 --wan-latency-ms 1e300
# 6. a write that fails is an error, and leaves nothing behind
expect "is a directory" "$bin/fabtrain" simulate --model gpt2-nano --slice utah-amst --plan dp=2 --trace "$tmp"
if [ -e /dev/full ]; then
  ln -s /dev/full "$tmp/full.json"
  expect "write failed" "$bin/fabtrain" simulate --model gpt2-nano --slice utah-amst --plan dp=2 --json "$tmp/full.json"
fi
# 12. a library's words where ours belong
expect "is a directory (give the file inside it" "$bin/fabtrain-exec" train --model gpt2-nano --plan dp=1 \
  --data "$(dirname "$0")/../../data/tiny_prose_train.txt" --init-from "$tmp" --steps 1

# 13. a precision the executor cannot train in is refused by name, never trained in fp32
data="$(dirname "$0")/../../data/tiny_prose_train.txt"
expect "precision=bf16: fabtrain-exec trains in fp32 on cpu" "$bin/fabtrain-exec" train \
  --model gpt2-nano --plan dp=1,precision=bf16 --data "$data" --steps 1
expect "precision=fp16: fabtrain-exec trains in fp32 on cpu" "$bin/fabtrain-exec" train \
  --model gpt2-nano --plan dp=1 --precision fp16 --data "$data" --steps 1
expect "--precision tf32 disagrees with --plan dp=1,precision=bf16" "$bin/fabtrain-exec" train \
  --model gpt2-nano --plan dp=1,precision=bf16 --precision tf32 --data "$data" --steps 1
expect "--precision fp8: unknown precision 'fp8' (expected fp32, fp16, bf16 or tf32)" \
  "$bin/fabtrain-exec" train --model gpt2-nano --plan dp=1 --precision fp8 --data "$data" --steps 1

# 14. overlap's plan keys: a bucket of no, negative, fractional or more MiB than the
# model holds, and an overlap that is neither on nor off, each refused by name
expect "plan key 'bucket_mib': 0 must be at least 1" "$bin/fabtrain" schedule --model gpt2-nano --plan dp=2,bucket_mib=0
expect "plan key 'bucket_mib': -3 must be at least 1" "$bin/fabtrain" schedule --model gpt2-nano --plan dp=2,bucket_mib=-3
expect "plan key 'bucket_mib'" "$bin/fabtrain" schedule --model gpt2-nano --plan dp=2,bucket_mib=2.5
expect "bucket_mib=64 is larger than the 0.5 MiB of parameters of gpt2-nano" "$bin/fabtrain" schedule \
  --model gpt2-nano --plan dp=2,bucket_mib=64
expect "plan key 'overlap': 'sometimes' is not on or off" "$bin/fabtrain" simulate --model gpt2-nano \
  --slice utah-amst --plan dp=2,overlap=sometimes

[ "$failures" -eq 0 ] && echo "all bad inputs refused" || { echo "$failures case(s) failed"; exit 1; }
