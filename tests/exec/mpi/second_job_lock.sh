#!/usr/bin/env bash
# A second 2-rank job under mpirun on the checkpoint folder of a running one ends with the
# folder lock's own message (naming the folder and the holding process), exit non-zero within
# 60 s; the first job trains on and its lock holds. Every rank of the second job ends cleanly
# (no MPI_Abort: neither its notice nor Open MPI's "ORTE_ERROR_LOG" line appears).
# Usage: second_job_lock.sh FABTRAIN_EXEC SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
work=$(mktemp -d)
first=""
cleanup() { [ -n "$first" ] && kill "$first" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
# 2 ranks of gpt2-nano checkpointing into $work/ck; each job adds its --steps.
job=(mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" train --model gpt2-nano --plan dp=2
  --data "$src/data/tiny_prose_train.txt" --batch 4 --seq 16 --threads 1
  --checkpoint-dir "$work/ck" --checkpoint-every 50)
"${job[@]}" --steps 1000000 >"$work/first.log" 2>&1 &
first=$!
for _ in $(seq 150); do grep -q "^step" "$work/first.log" && break; sleep 0.2; done
grep -q "^step" "$work/first.log" || { cat "$work/first.log"; fail "the first job did not start"; }

rc=0
timeout 60 "${job[@]}" --steps 10 >"$work/second.log" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
  tail -5 "$work/second.log"; fail "second job: exit $rc (124: still running after 60 s)"
fi
grep -q -- "--checkpoint-dir $work/ck: in use by another job (process [0-9]*)" "$work/second.log" ||
  { cat "$work/second.log"; fail "the second job did not print the lock's message"; }
if grep -q "ORTE_ERROR_LOG\|MPI_ABORT was invoked" "$work/second.log"; then
  cat "$work/second.log"; fail "the second job ended through MPI_Abort (ORTE_ERROR_LOG)"
fi
kill -0 "$first" 2>/dev/null || { tail -5 "$work/first.log"; fail "the first job ended"; }
flock -n "$work/ck/lock" true && fail "the first job's lock was released"
echo "the second job was refused by the folder lock: rc $rc"
