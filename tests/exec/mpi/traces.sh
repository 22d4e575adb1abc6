#!/usr/bin/env bash
# The measured and the simulated trace of one plan load side by side: gpt2-nano under
# pp=2,mb=2 trained on 2 ranks (--trace) and simulated on utah-amst (--trace). Both are valid
# JSON with the same process and thread names and the same event names; every send has one flow
# to its receive; and the measured one, on clocks aligned at start, has no two slices of a rank
# overlapping and no receive ending before its send began.
# Usage: traces.sh FABTRAIN_EXEC FABTRAIN SOURCE_DIR
set -euo pipefail
exe=$1 fabtrain=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
plan=pp=2,mb=2
mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" train --model gpt2-nano --plan "$plan" \
  --data "$src/data/tiny_prose_train.txt" --batch 4 --seq 32 --steps 3 --threads 1 \
  --timeout-s 60 --trace "$work/measured.json" > "$work/train.log" 2>&1 ||
  { cat "$work/train.log"; exit 1; }
"$fabtrain" simulate --model gpt2-nano --slice utah-amst --plan "$plan" --batch 4 --seq 32 \
  --trace "$work/simulated.json" > "$work/simulate.log"
python3 - "$work/measured.json" "$work/simulated.json" <<'PY'
import json, sys
def load(path):
    events = json.load(open(path))["traceEvents"]
    names = {(e["pid"], e.get("tid"), e["name"]): e["args"].get("name") for e in events
             if e["ph"] == "M" and e["name"] in ("process_name", "thread_name")}
    spans = [e for e in events if e["ph"] == "X"]
    flows = {}
    for e in events:
        if e["ph"] in "sf": flows.setdefault(e["id"], []).append(e)
    return names, spans, flows
def check(ok, what):
    if not ok: sys.exit("FAIL: " + what)
m_names, m_spans, m_flows = load(sys.argv[1])
s_names, s_spans, s_flows = load(sys.argv[2])
check(m_names == s_names, f"process/thread names differ:\n{m_names}\n{s_names}")
check({e["name"] for e in m_spans} == {e["name"] for e in s_spans}, "event names differ")
check({e["cat"] for e in m_spans} == {e["cat"] for e in s_spans}, "categories differ")
for label, spans, flows in (("measured", m_spans, m_flows), ("simulated", s_spans, s_flows)):
    sends = [e for e in spans if e["cat"] == "send"]
    check(len(flows) == len(sends) > 0, f"{label}: {len(flows)} flows for {len(sends)} sends")
    check(all(sorted(e["ph"] for e in f) == ["f", "s"] for f in flows.values()),
          f"{label}: a flow without both ends")
# Measured: each rank plays one instruction at a time, on one time line across ranks.
for rank in {e["pid"] for e in m_spans}:
    mine = sorted((e for e in m_spans if e["pid"] == rank), key=lambda e: e["ts"])
    for a, b in zip(mine, mine[1:]):
        check(b["ts"] >= a["ts"] + a["dur"] - 1.0, f"rank {rank}: '{a['name']}' overlaps '{b['name']}'")
for f in m_flows.values():
    s = next(e for e in f if e["ph"] == "s")
    r = next(e for e in f if e["ph"] == "f")
    recv = min((e for e in m_spans if e["pid"] == r["pid"] and e["ts"] <= r["ts"] <= e["ts"] + e["dur"]),
               key=lambda e: e["dur"])
    # A started receive (req=N) is only posted there and may end before the send begins: the
    # data is in when its wait ends.
    done = recv
    if " req=" in recv["name"]:
        req = recv["name"].split(" req=")[1].split()[0]
        waits = [e for e in m_spans if e["pid"] == r["pid"] and e["ts"] >= recv["ts"] and
                 e["name"].startswith("wait") and f"req={req}" in e["name"].split()]
        check(waits, f"'{recv['name']}': no wait of its request")
        done = min(waits, key=lambda e: e["ts"])
    # Microseconds: the alignment errs by at most half its best ping's round trip, well under
    # 5 ms even on a loaded 2-core machine running 2 ranks.
    check(done["ts"] + done["dur"] >= s["ts"] - 5000.0,
          f"'{recv['name']}' completed ('{done['name']}') before its send began")
print(f"measured {len(m_spans)} spans, {len(m_flows)} flows; simulated {len(s_spans)} spans, "
      f"{len(s_flows)} flows; names and lanes identical")
PY
