#!/usr/bin/env bash
# Overlap measured: on the emulated two-site link, the 4-layer model the validation
# uses (tests/calibrate/gpt2-l4-c128; GPT-2 small's CPU steps take minutes here) trained with
# dp=2 and dp=2,zero=2, overlap=off against overlap=on, at one-way delays 0, 25 and 50 ms. It runs
# scripts/validate-emulated.sh with these plans (its benches, runs, calibration and predictions:
# nothing duplicated here) and then tabulates from its work directory, per case: the measured
# step (median over steps after the first), the predicted step (fabtrain simulate calibrated from
# the benches alone, validate-emulated's bench-only column, so no measured step enters it), the
# error, and the communication: the step time overlap hid (off minus on), and from the run
# record the least waiting rank's exposed communication per step (blocking calls, starts and
# waits) against overlap=off's (all of it exposed). Last line:
#   overlap (PLAYER): mean absolute percentage error X% over N cases
# Needs root and network namespaces (exits 77 otherwise, as validate-emulated does); traffic
# stays in the project's namespaces on TEST-NET-1. Environment: FABTRAIN_OVERLAP_MODEL (a
# built-in or config.json), FABTRAIN_OVERLAP_DELAYS (default "0 25 50"), FABTRAIN_OVERLAP_PLANS
# (default "dp=2 dp=2,zero=2"; each run with overlap=off and overlap=on), FABTRAIN_OVERLAP_BUCKET_MIB
# (default 1: the 4-layer model's gradients are 3.4 MB, one bucket at DDP's 25 MiB, started only
# after the whole backward, so nothing could hide; 1 MiB makes four), and
# validate-emulated's own (FABTRAIN_BIN_DIR, FABTRAIN_VALIDATE_STEPS, FABTRAIN_VALIDATE_REUSE).
# FABTRAIN_OVERLAP_PLAYER=train (default: the ranks train the model, computing on the CPU cores
# the traffic also needs) or replay (`fabtrain-exec replay`: each compute instruction sleeps the
# catalog's CPU time, as a GPU would leave the cores to the traffic; the same schedules, starts
# and waits, with the real communicator and message sizes).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
model=${FABTRAIN_OVERLAP_MODEL:-$repo/tests/calibrate/gpt2-l4-c128/config.json}
delays=${FABTRAIN_OVERLAP_DELAYS:-0 25 50}
bucket=${FABTRAIN_OVERLAP_BUCKET_MIB:-1}
plans=""
for p in ${FABTRAIN_OVERLAP_PLANS:-dp=2 dp=2,zero=2}; do
  plans+="$p,bucket_mib=$bucket,overlap=off $p,bucket_mib=$bucket,overlap=on "
done
player=${FABTRAIN_OVERLAP_PLAYER:-train}
log=$(mktemp /tmp/fabtrain-overlap.XXXXXX.log)
set +e
FABTRAIN_VALIDATE_PLAYER=$player FABTRAIN_VALIDATE_MODELS=$model FABTRAIN_VALIDATE_PLANS=$plans FABTRAIN_VALIDATE_DELAYS=$delays \
  "$repo/scripts/validate-emulated.sh" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 77 ] && exit 77
work=$(sed -n 's/^validate-emulated: .* work \([^,]*\),.*/\1/p' "$log" | head -1)
[ -n "$work" ] && [ -d "$work" ] || { echo "FAIL: no work directory in $log"; exit 1; }
python3 - "$work" "$model" "$delays" "$plans" "$player" <<'PY'
import collections, json, os, statistics, sys
work, model, delays, plans, player = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split(), sys.argv[5]
name = os.path.basename(os.path.dirname(model)) if model.endswith(".json") else model
def tag(p, d): return f"{name}-{p.replace(',', '_').replace('=', '_').replace(':', '_')}-{d}"
def measured(path):
    steps = [json.loads(l) for l in open(path) if '"type":"step"' in l.replace(" ", "")]
    steps = steps[1:] if len(steps) > 1 else steps
    exposed = []
    for s in steps:  # the least waiting rank's communication (the other also waits for compute)
        by_rank = collections.defaultdict(float)
        for i in s.get("instructions", []):
            if i["comm"]: by_rank[i["rank"]] += i["duration_s"]
        exposed.append(min(by_rank.values()) if by_rank else 0.0)
    return statistics.median(s["wall_s"] for s in steps), statistics.median(exposed)
rows, errors = [], []
print(f"\nplayer: {player} ({'compute slept, the catalog CPU time' if player == 'replay' else 'the model trained on the CPU'})")
print(f"{'delay':>6} {'plan':<28} {'overlap':>7} {'measured':>10} {'predicted':>10} {'error':>7} "
      f"{'exposed comm':>13} {'hidden':>9}")
for d in delays:
    for p in plans:
        base, mode = p.rsplit(",overlap=", 1)
        run = f"{work}/run-{tag(p, d)}.jsonl"
        if not os.path.exists(run):
            print(f"{d:>4} ms {base:<28} {mode:>7}  not measured"); continue
        meas, exposed = measured(run)
        pred = json.load(open(f"{work}/sim-cal-bench-{tag(p, d)}.json"))["step_time_s"]
        err = (pred - meas) / meas
        errors.append(abs(err))
        hidden = ""
        off = f"{work}/run-{tag(base + ',overlap=off', d)}.jsonl"
        if mode == "on" and os.path.exists(off):
            meas_off, exposed_off = measured(off)
            hidden = f"{1e3 * (meas_off - meas):+.1f} ms"
            exposed_txt = f"{1e3 * exposed:.1f}/{1e3 * exposed_off:.1f} ms"
        else:
            exposed_txt = f"{1e3 * exposed:.1f} ms"
        print(f"{d:>4} ms {base:<28} {mode:>7} {meas:>9.4f}s {pred:>9.4f}s {100 * err:>+6.1f}% "
              f"{exposed_txt:>13} {hidden:>9}")
print("(exposed comm: overlap=on's least waiting rank per step / overlap=off's; hidden: the "
      "measured step off minus on; predicted: bench-only calibration)")
if not errors: print("overlap: no case was measured"); sys.exit(1)
print(f"overlap ({player}): mean absolute percentage error {100 * sum(errors) / len(errors):.1f}% over {len(errors)} cases")
PY
