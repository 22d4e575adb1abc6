#!/usr/bin/env bash
# fabtrain-exec replay on loopback: each rank's step lasts at least its modelled compute (the
# sleeps) and at most that plus its measured communication plus a small bound; every compute
# instruction took its modelled seconds (a sleep's delay at most); the record is train's with
# "mode": "replay"; bad input (an unknown device type, a replay that cannot fit this machine, a
# plan of another rank count) is refused by name before anything runs.
# Usage: replay.sh FABTRAIN_EXEC SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run=(mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" replay --model gpt2-nano --batch 8 --seq 64)
"${run[@]}" --plan pp=2,mb=4,schedule=1f1b --steps 3 --device-type CPU_HOST --record "$work/run.jsonl" \
  --trace "$work/trace.json" >"$work/out.log" 2>&1 || { cat "$work/out.log"; exit 1; }
python3 - "$work/run.jsonl" <<'PY' || exit 1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
header, steps = lines[0], lines[1:]
assert header["mode"] == "replay" and header["device_type"] == "CPU_HOST", header
assert len(header["memory_per_rank_bytes"]) == 2 and all(m > 0 for m in header["memory_per_rank_bytes"])
modelled = header["modelled_s"]
# Seconds a step may take beyond its waits and communication: barriers, loads, and the sleeps'
# wake-ups, which on 2 shared cores (the other rank spins in MPI) can be late by milliseconds.
def bound(waits): return 0.1 + 0.2 * waits
for s in steps[1:]:  # the first step also opens the connections
    for r in range(2):
        mine = sorted((i for i in s["instructions"] if i["rank"] == r), key=lambda i: i["index"])
        waits = sum(modelled[r][i["index"]] for i in mine)
        comm = sum(i["duration_s"] for i in mine if i["comm"])
        end = max(i["start_s"] + i["duration_s"] for i in mine)
        for i in mine:  # every instruction that sleeps (communication's modelled seconds are 0)
            m = modelled[r][i["index"]]
            assert not (i["comm"] and m > 0), (r, i, m)
            if m > 0: assert m - 1e-4 <= i["duration_s"] <= m + 0.1, (r, i, m)
        assert waits > 0.001, waits
        assert end >= waits - 1e-4, (r, end, waits)
        assert end <= waits + comm + bound(waits), (r, end, waits, comm)
        print(f"step {s['step']} rank {r}: {end:.4f} s = waits {waits:.4f} + communication {comm:.4f} "
              f"+ {end - waits - comm:+.4f} s")
    assert s["wall_s"] >= max(sum(modelled[r]) for r in range(2)) - 1e-4
PY
failures=0
expect_refusal() {  # name, expected message pattern, command...
  local name=$1 pattern=$2; shift 2
  if timeout 60 "$@" >"$work/bad.log" 2>&1; then echo "FAIL $name: accepted"; failures=$((failures + 1)); return; fi
  if grep -qE -- "$pattern" "$work/bad.log"; then echo "ok   $name: $(grep -m1 -E -- "$pattern" "$work/bad.log")"
  else echo "FAIL $name: message lacks /$pattern/:"; cat "$work/bad.log"; failures=$((failures + 1)); fi
}
expect_refusal "unknown device type" "GPU_NOPE.*known: .*GPU_RTX6000" "$exe" replay --plan dp=1 --device-type GPU_NOPE
expect_refusal "plan ranks != world" "needs dp\*tp\*pp = .* = 2 ranks, but the job has 1" "$exe" replay --plan dp=2
# 96 layers of 12288 (GPT-3 175B's shape): each rank's share of the gradient all-reduce is 700 GB.
printf '{"model_type": "gpt2", "n_layer": 96, "n_embd": 12288, "n_head": 96, "n_positions": 2048, "vocab_size": 50257}\n' >"$work/config.json"
expect_refusal "a replay that cannot fit this machine" "needs .* GiB for the 2 ranks on this machine .* available" \
  mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" replay --model "$work/config.json" --plan dp=2 --batch 2 \
  --seq 64 --device-type GPU_H100
[ "$failures" -eq 0 ]
