#!/usr/bin/env bash
# Two ranks of `fabtrain-exec bench` with small sizes: the bench file has every field
# (checked by `fabtrain calibrate`, which rejects unknown and missing fields, and here), one pair
# with a positive latency and bandwidth, and the three collectives; calibrate writes a file.
# Exits 77 (skipped) where mpirun is missing.
# Usage: bench_mpi_test.sh FABTRAIN_EXEC FABTRAIN
set -euo pipefail
exec_bin=$1
fabtrain=$2
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root_flag=""
[ "$(id -u)" -eq 0 ] && root_flag=--allow-run-as-root
timeout 120 mpirun $root_flag --oversubscribe -np 2 "$exec_bin" bench --budget-s 0.05 --memory-mib 2 \
  --p2p-mib 0.25 --p2p-messages 2 --collective-mib 0.25 -o "$work/bench.json"
python3 - "$work/bench.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for key in ["format", "version", "model", "batch", "seq", "world", "hosts", "device", "threads",
            "gemm", "memory", "p2p", "collectives"]:
    assert key in d, f"missing {key}"
assert d["world"] == 2 and len(d["hosts"]) == 2
assert {g["pass"] for g in d["gemm"]} == {"forward", "backward_input", "backward_weight"}
assert {g["name"] for g in d["gemm"]} == {"qkv", "attproj", "fc", "fcproj", "lm_head"}
assert all(len(g["ranks"]) == 2 and r["flops_per_s"] > 0 for g in d["gemm"] for r in g["ranks"])
assert {m["kernel"] for m in d["memory"]} == {"copy", "triad", "layernorm"}
assert len(d["p2p"]) == 1 and d["p2p"][0]["rtt_s"] > 0 and d["p2p"][0]["bandwidth"] > 0
assert {c["op"] for c in d["collectives"]} == {"all_reduce", "reduce_scatter", "all_gather"}
for c in d["collectives"]:
    factor = 2 * (2 - 1) / 2 if c["op"] == "all_reduce" else (2 - 1) / 2
    assert abs(c["busbw"] - c["algbw"] * factor) <= 1e-6 * c["algbw"], c
print("bench file complete")
PY
"$fabtrain" calibrate --bench "$work/bench.json" -o "$work/cal.yaml" >/dev/null
grep -q "CPU_HOST" "$work/cal.yaml"
grep -q "l2sts" "$work/cal.yaml"
echo "calibration written"
