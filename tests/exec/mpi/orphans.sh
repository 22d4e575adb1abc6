#!/usr/bin/env bash
# After kill -9 of mpirun its ranks stop (the parent's death reaches them)
# instead of writing checkpoints on, and the checkpoint directory's lock goes with them.
# Usage: orphans.sh FABTRAIN_EXEC SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" train --model gpt2-nano --plan dp=2 \
  --data "$src/data/tiny_prose_train.txt" --batch 4 --seq 16 --steps 1000000 --threads 1 \
  --checkpoint-dir "$work/ck" --checkpoint-every 1 > "$work/log" 2>&1 &
launcher=$!
for _ in $(seq 100); do [ -f "$work/ck/latest" ] && break; sleep 0.2; done
[ -f "$work/ck/latest" ] || { echo "FAIL: no checkpoint written"; cat "$work/log"; kill -9 "$launcher"; exit 1; }
ranks=$(pgrep -P "$launcher" | tr '\n' ' ')
[ -n "$ranks" ] || { echo "FAIL: no ranks under mpirun $launcher"; exit 1; }
kill -9 "$launcher"
for _ in $(seq 10); do
  alive=0
  for r in $ranks; do  # a zombie (state Z) has ended; this container's init may not reap it
    state=$(ps -o stat= -p "$r" 2>/dev/null)
    [ -n "$state" ] && [[ "$state" != Z* ]] && alive=1
  done
  [ "$alive" = 0 ] && break
  sleep 0.1
done
if [ "$alive" = 1 ]; then
  echo "FAIL: ranks $ranks still run 1 s after mpirun was killed, writing checkpoints on"
  for r in $ranks; do kill -9 "$r"; done
  exit 1
fi
for _ in $(seq 10); do flock -n "$work/ck/lock" true && break; sleep 0.1; done  # threads still ending
flock -n "$work/ck/lock" true || { echo "FAIL: the checkpoint directory is still locked"; exit 1; }
echo "orphans stopped"
