#!/usr/bin/env bash
# Overlap measured: on the emulated two-site link, the matrix's mode "overlap"
# (calibrate/data/validation_matrix.yaml: the 4-layer model the validation uses,
# tests/calibrate/gpt2-l4-c128, since GPT-2 small's CPU steps take minutes here, trained with
# dp=2 and dp=2,zero=2 in 1 MiB buckets, overlap=off against overlap=on, at one-way delays 0, 25
# and 50 ms). It runs scripts/validate-emulated.sh --mode overlap (its benches, runs, calibration
# and predictions: nothing duplicated here) and then `fabtrain validation overlap` tabulates from
# its work folder, per case: the measured step (median over steps after the first), the predicted
# step (fabtrain simulate calibrated from the benches alone, validate-emulated's bench-only
# column, so no measured step enters it), the error, and the communication: the step time
# overlap hid (off minus on), and from the run record the least waiting rank's exposed
# communication per step (blocking calls, starts and waits) against overlap=off's (all of it
# exposed). Last line:
#   overlap (PLAYER): mean absolute percentage error X% over N cases
# Needs root and network namespaces (exits 77 otherwise, as validate-emulated does); traffic
# stays in the project's namespaces on TEST-NET-1. Options are validate-emulated.sh's, passed on
# (--help lists them): --delays, --plans (each ending in ,overlap=off or ,overlap=on), --models,
# --reuse DIR, --bin DIR, and --player train (the mode's: the ranks train the model, computing on
# the CPU cores the traffic also needs) or replay (`fabtrain-exec replay`: each compute
# instruction sleeps the catalog's CPU time, as a GPU would leave the cores to the traffic; the
# same schedules, starts and waits, with the real communicator and message sizes).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case " $* " in
  *" --help "* | *" -h "* | *" --dry-run "*) exec "$repo/scripts/validate-emulated.sh" --mode overlap "$@" ;;
esac
log=$(mktemp /tmp/fabtrain-overlap.XXXXXX.log)
set +e
"$repo/scripts/validate-emulated.sh" --mode overlap "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" -eq 77 ] && exit 77
# What validate-emulated ran, from its first line:
#   validate-emulated: mode M, player P, models [..] plans [..] one-way delays [..] (ms), work W, programs B, ...
line=$(grep -m1 '^validate-emulated: mode ' "$log" || true)
setting() { sed -n "s/.*$1 \\([^,]*\\),.*/\\1/p" <<<"$line"; }
list() { sed -n "s/.*$1 \\[\\([^]]*\\)\\].*/\\1/p" <<<"$line"; }
work=$(setting work)
[ -n "$work" ] && [ -d "$work" ] || { echo "FAIL: no work directory in $log"; exit 1; }
"$(setting programs)/fabtrain" validation overlap --work "$work" --player "$(setting player)" \
  --models "$(list models)" --plans "$(list plans)" --delays "$(list 'one-way delays')"
