#!/usr/bin/env bash
# fabtrain-exec preflight with two ranks on this machine: the same data on both passes with a
# table of both ranks, rank 1's round trip and transfer rate measured; a data file that differs
# between the ranks, or is missing, fails by name with a non-zero exit; a rank that stops answering
# (SIGSTOP) ends the check within its --timeout-s, named, non-zero.
# Usage: preflight.sh FABTRAIN_EXEC SOURCE_DIR
set -euo pipefail
exe=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="$src/data/tiny_prose_train.txt"
timeout 60 mpirun -np 2 --oversubscribe "$exe" preflight --data "$data" | tee "$work/ok.txt"
grep -q "preflight: all clear" "$work/ok.txt"
[ "$(grep -cE '^ +[01]  ' "$work/ok.txt")" -eq 2 ] || { echo "FAIL: not one row per rank"; exit 1; }
# Rank 1's row: a round trip and a transfer rate (MB/s, the last but one column), both above zero.
awk '$1 == 1 { exit !($(NF - 3) > 0 && $(NF - 1) > 0) }' "$work/ok.txt" ||
  { echo "FAIL: rank 1 has no measured round trip and rate"; exit 1; }
# Rank 1 reads another file (MPMD: one program line per rank): named, non-zero exit.
printf 'other' >"$work/other.txt"
if timeout 60 mpirun --oversubscribe -np 1 "$exe" preflight --data "$data" : \
  -np 1 "$exe" preflight --data "$work/other.txt" >"$work/diff.txt" 2>&1; then
  cat "$work/diff.txt"; echo "FAIL: differing data passed"; exit 1
fi
grep -q "FAIL rank 1 .*differs from rank 0's" "$work/diff.txt" || { cat "$work/diff.txt"; exit 1; }
if timeout 60 mpirun -np 2 --oversubscribe "$exe" preflight --data "$work/none.bin" \
  >"$work/missing.txt" 2>&1; then
  echo "FAIL: a missing data file passed"; exit 1
fi
grep -qi "none.bin.*no such file" "$work/missing.txt" || { cat "$work/missing.txt"; exit 1; }

# A rank stuck mid-check (stopped while it answers round trips that would take minutes): rank 0
# names it once --timeout-s has passed and the job ends non-zero. Rank 1 is told apart by its
# extra --device cpu.
many="--samples 100000000 --timeout-s 4"
mpirun --oversubscribe -np 1 "$exe" preflight $many : -np 1 "$exe" preflight $many --device cpu \
  >"$work/stuck.txt" 2>&1 &
launcher=$!
start=$(date +%s)
for _ in $(seq 50); do
  victim=$(pgrep -P "$launcher" -f -- "--device cpu" | head -1 || true)
  [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || { echo "FAIL: rank 1's process not found"; kill "$launcher"; exit 1; }
# Stopped inside MPI's start-up (seconds on a loaded 2-core machine) rank 0 would wait in MPI
# itself, before the check's clock runs; 3 s in, the round trips (minutes of them) have begun.
sleep 3
kill -STOP "$victim"
for _ in $(seq 60); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$launcher" 2>/dev/null; then
  echo "FAIL: preflight still runs 30 s after rank 1 stopped"; kill -KILL "$victim" "$launcher"; exit 1
fi
rc=0; wait "$launcher" || rc=$?
kill -KILL "$victim" 2>/dev/null || true
elapsed=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || { cat "$work/stuck.txt"; echo "FAIL: exit 0 with a stopped rank"; exit 1; }
grep -q "rank 1 did not answer within --timeout-s 4 while rank 0 measured its link with rank 1" \
  "$work/stuck.txt" || { cat "$work/stuck.txt"; echo "FAIL: the stopped rank is not named"; exit 1; }
echo "the stopped rank was named ${elapsed}s after the check began (limit 4 s)"
echo "preflight: ok"
