#!/usr/bin/env bash
# fabtrain-exec preflight with two ranks on this machine: the same data on both passes with a
# table of both ranks; a data file that differs between the ranks, or is missing, fails by name
# with a non-zero exit. Usage: preflight.sh FABTRAIN_EXEC SOURCE_DIR
set -euo pipefail
exe=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="$src/data/tiny_prose_train.txt"
timeout 60 mpirun -np 2 --oversubscribe "$exe" preflight --data "$data" | tee "$work/ok.txt"
grep -q "preflight: all clear" "$work/ok.txt"
[ "$(grep -cE '^ +[01]  ' "$work/ok.txt")" -eq 2 ] || { echo "FAIL: not one row per rank"; exit 1; }
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
echo "preflight: ok"
