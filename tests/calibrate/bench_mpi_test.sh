#!/usr/bin/env bash
# Two ranks of `fabtrain-exec bench` with small sizes: the bench file has every field
# (checked by `fabtrain calibrate`, which rejects unknown and missing fields, and here), one pair
# with a positive latency and bandwidth, the pipeline message's one-way time and the three
# collectives; four ranks with --plan dp=2,tp=2 add the collectives over its tp and dp groups;
# a plan of the wrong size is refused; calibrate writes a file.
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
assert {c["group"] for c in d["collectives"]} == {"world"}
# The model's pipeline activation (4 x 64 x 64 floats) timed by ping-pong.
ml = d["p2p"][0]["message_latencies"]
assert [m["bytes"] for m in ml] == [4 * 64 * 64 * 4] and ml[0]["one_way_s"] > 0, ml
for c in d["collectives"]:
    factor = 2 * (2 - 1) / 2 if c["op"] == "all_reduce" else (2 - 1) / 2
    assert abs(c["busbw"] - c["algbw"] * factor) <= 1e-6 * c["algbw"], c
print("bench file complete")
PY
# With a plan: the collectives over each kind of its groups too, all groups of a kind at once.
timeout 120 mpirun $root_flag --oversubscribe -np 4 "$exec_bin" bench --budget-s 0.05 --memory-mib 2 \
  --p2p-mib 0.25 --p2p-messages 2 --collective-mib 0.25 --plan dp=2,tp=2 -o "$work/bench4.json"
python3 - "$work/bench4.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
groups = {(c["group"], c["ranks"]) for c in d["collectives"]}
assert groups == {("world", 4), ("tp", 2), ("dp", 2)}, groups
assert all(c["seconds"] > 0 for c in d["collectives"])
print("plan groups measured")
PY
# --json -: the bench file alone on standard output, nccl-tests' table on standard error.
timeout 120 mpirun $root_flag --oversubscribe -np 2 "$exec_bin" bench --budget-s 0.05 --memory-mib 2 \
  --p2p-mib 0.25 --p2p-messages 2 --collective-mib 0.25 --json - >"$work/stdout.json" 2>"$work/table.txt"
python3 - "$work/stdout.json" "$work/table.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
assert "busbw" in table and "algbw" in table and "(elements)" in table, table
for c in d["collectives"]:
    row = next(l.split() for l in table.splitlines() if l.startswith(c["op"] + " ") and f' {int(c["bytes"])} ' in l)
    assert abs(float(row[-1]) - c["busbw"] / 1e9) <= 0.0005 + 1e-3 * c["busbw"] / 1e9, (row, c)
print("bench table on stderr, JSON alone on stdout")
PY
# A plan of another size is refused by name, before anything is measured.
if timeout 60 mpirun $root_flag --oversubscribe -np 2 "$exec_bin" bench --plan dp=4 -o "$work/bad.json" \
    >"$work/bad.log" 2>&1; then
  echo "FAIL: --plan dp=4 on 2 ranks was accepted"; exit 1
fi
grep -q "needs 4 ranks" "$work/bad.log" || { cat "$work/bad.log"; exit 1; }
"$fabtrain" calibrate --bench "$work/bench.json" --bench "$work/bench4.json" -o "$work/cal.yaml" >/dev/null
grep -q "CPU_HOST" "$work/cal.yaml"
grep -q "l2sts" "$work/cal.yaml"
echo "calibration written"
